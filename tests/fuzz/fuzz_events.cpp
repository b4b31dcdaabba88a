// -e: event lists, groups, modifiers.
#include "fuzz_common.hpp"
#include "pmcprof/events/event_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = pmcprof_fuzz::text(data, size);
  pmcprof_fuzz::run([&] {
    for (const auto& group : pmcprof::parse_event_list(s))
      for (const auto& ev : group.events)
        if (ev.name.empty() || ev.modifiers.precise > 3) std::abort();
  });
  return 0;
}

// --func: up to 8 targets, one per line, then the duplicate check.
#include <vector>

#include "fuzz_common.hpp"
#include "pmcprof/cli/choices.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/util/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = pmcprof_fuzz::text(data, size);
  pmcprof_fuzz::run([&] {
    std::vector<pmcprof::FuncTarget> targets;
    for (const auto& line : pmcprof::split(s, '\n')) {
      if (targets.size() == 8) break;
      targets.push_back(pmcprof::parse_func_target(line));
      if (targets.back().name.empty()) std::abort();
    }
    pmcprof::check_distinct_targets(targets);
  });
  pmcprof_fuzz::run([&] { pmcprof::parse_backend_request(s); });
  return 0;
}

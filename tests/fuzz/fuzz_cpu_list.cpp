// -C: CPU lists. A list that parses prints back to a list that parses to the same CPUs.
#include "fuzz_common.hpp"
#include "pmcprof/platform/cpu_list.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = pmcprof_fuzz::text(data, size);
  pmcprof_fuzz::run([&] {
    const auto cpus = pmcprof::parse_cpu_list(s);
    if (pmcprof::parse_cpu_list(pmcprof::format_cpu_list(cpus)) != cpus) std::abort();
  });
  return 0;
}

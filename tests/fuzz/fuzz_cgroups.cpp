// --for-each-cgroup patterns (first line) matched against a path (the rest), and the path
// made relative to a mount; -G lists split at commas.
#include "fuzz_common.hpp"
#include "pmcprof/counters/cgroups.hpp"
#include "pmcprof/util/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = pmcprof_fuzz::text(data, size);
  const auto nl = s.find('\n');
  const std::string pattern = s.substr(0, nl);
  const std::string path = nl == std::string::npos ? "/" : s.substr(nl + 1);
  pmcprof_fuzz::run([&] { (void)pmcprof::CgroupPattern(pattern).search(path); });
  pmcprof_fuzz::run([&] {
    const std::string rel = pmcprof::cgroup_relative_path("/sys/fs/cgroup", path);
    if (rel.empty() != path.empty()) std::abort();
    (void)pmcprof::split(pattern, ',');
  });
  return 0;
}

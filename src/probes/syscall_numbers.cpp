#include "pmcprof/probes/syscall_numbers.hpp"

#include <algorithm>
#include <iterator>

namespace pmcprof {

namespace {

struct SyscallNumber {
  std::string_view name;
  long nr;
};

#include "syscall_numbers.inc"

}  // namespace

std::optional<long> syscall_number(std::string_view name) {
#if defined(__x86_64__) || defined(__aarch64__)
  const auto* it =
      std::lower_bound(std::begin(kSyscalls), std::end(kSyscalls), name,
                       [](const SyscallNumber& s, std::string_view n) { return s.name < n; });
  if (it == std::end(kSyscalls) || it->name != name) return std::nullopt;
  return it->nr;
#else
  (void)name;
  return std::nullopt;
#endif
}

}  // namespace pmcprof

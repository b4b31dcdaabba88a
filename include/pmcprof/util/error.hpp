#pragma once

#include <stdexcept>
#include <string>

namespace pmcprof {

// Exit codes (documented in man/pmcprof.1).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // runtime failure (kernel refused, I/O error)
inline constexpr int kExitUsage = 129;  // bad flags, bad event names, bad targets (as perf)
inline constexpr int kExitGroup = 255;  // a group that cannot be counted (as perf)
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;  // command not found, like a shell

// A fatal error: printed by the CLI as one line ("pmcprof: <what>") plus an optional
// "HINT: <hint>" line, and the process exits with exit_code(). Thrown anywhere in the
// pipeline; the two kinds below say whose fault it is.
class Error : public std::runtime_error {
 public:
  Error(const std::string& what, std::string hint, int exit_code)
      : std::runtime_error(what), hint_(std::move(hint)), exit_code_(exit_code) {}
  const std::string& hint() const { return hint_; }
  int exit_code() const { return exit_code_; }

 private:
  std::string hint_;
  int exit_code_;
};

// Caused by what the user asked for: bad flags, names, targets (exit 129 unless said otherwise,
// e.g. an attach the kernel refuses for a target the user named exits 1).
class UserError : public Error {
 public:
  explicit UserError(const std::string& what, std::string hint = {}, int exit_code = kExitUsage)
      : Error(what, std::move(hint), exit_code) {}
};

// A failure of the system, not of the user's input (an unexpected errno, a refused load).
class SystemError : public Error {
 public:
  explicit SystemError(const std::string& what, std::string hint = {})
      : Error(what, std::move(hint), kExitFailure) {}
};

// The kernel's internal ENOTSUPP, which BPF attach paths return to user space (e.g. a fentry
// trampoline for a function with too many arguments); libc has neither name nor text for it.
inline constexpr int kKernelEnotsupp = 524;

std::string errno_string(int err);

}  // namespace pmcprof

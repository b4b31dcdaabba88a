#pragma once

#include <stdexcept>
#include <string>

namespace pmcprof {

// Exit codes (documented in man/pmcprof.1).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // runtime failure (kernel refused, I/O error)
inline constexpr int kExitUsage = 2;    // bad flags, bad event names, bad targets
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;  // command not found, like a shell

// A fatal error caused by what the user asked for. Thrown anywhere in the pipeline, caught in
// main(), printed as one line ("pmcprof: <what>") plus an optional "HINT: <hint>" line.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& what, std::string hint = {}, int exit_code = kExitUsage)
      : std::runtime_error(what), hint_(std::move(hint)), exit_code_(exit_code) {}
  const std::string& hint() const { return hint_; }
  int exit_code() const { return exit_code_; }

 private:
  std::string hint_;
  int exit_code_;
};

// A failure of the system, not of the user's input (e.g. an unexpected errno).
class SystemError : public UserError {
 public:
  SystemError(const std::string& what, std::string hint = {})
      : UserError(what, std::move(hint), kExitFailure) {}
};

std::string errno_string(int err);

}  // namespace pmcprof

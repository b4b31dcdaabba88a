#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "pmcprof/util/fd.hpp"

namespace pmcprof {

// Blocks the signals the run loop takes through a signalfd (SIGINT, SIGTERM) for the
// lifetime of the object and restores the previous mask afterwards.
class SignalBlocker {
 public:
  SignalBlocker();
  ~SignalBlocker();
  SignalBlocker(const SignalBlocker&) = delete;
  SignalBlocker& operator=(const SignalBlocker&) = delete;
  const sigset_t& blocked() const { return blocked_; }
  const sigset_t& previous() const { return previous_; }

 private:
  sigset_t blocked_{};
  sigset_t previous_{};
};

// A command pmcprof runs and counts. Forked at prepare() and held before exec until start(),
// so counters can be attached to its pid first (perf stat's workload protocol).
// The destructor kills and reaps a child that is still running: nothing is left behind.
class Workload {
 public:
  // Forks; the child restores `child_sigmask` and waits for start(). Throws on fork failure.
  static Workload prepare(const std::vector<std::string>& argv, const sigset_t& child_sigmask);

  Workload(Workload&& other) noexcept;
  Workload& operator=(Workload&&) = delete;
  ~Workload();

  pid_t pid() const { return pid_; }
  // A pidfd that becomes readable when the child exits.
  int pidfd() const { return pidfd_.get(); }
  // Lets the child exec. Throws UserError (exit 127 / 126) when the exec fails.
  void start();
  // Reaps the child if it has exited; returns its shell-style status (code, or 128+signal).
  std::optional<int> try_reap();
  // Sends `sig`, then waits up to `grace_ms` before SIGKILL; returns the status.
  int terminate(int sig, int grace_ms);
  // Ends the workload when counting ends: reaps it if it exited, else stops it the way perf
  // stat does (SIGTERM, then SIGKILL after a grace period). Returns its shell-style status.
  int finish(bool exited);
  const std::string& command_line() const { return command_line_; }

 private:
  Workload() = default;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  Fd pidfd_;
  Fd go_pipe_;   // parent's write end: one byte releases the child
  Fd err_pipe_;  // parent's read end: the child's errno when exec fails, EOF on success
  std::string command_line_;
  std::string program_;
};

// Shell-style status from waitpid's status word: exit code, or 128 + signal number.
int shell_status(int wait_status);

}  // namespace pmcprof

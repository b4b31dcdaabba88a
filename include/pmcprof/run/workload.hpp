#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "pmcprof/util/fd.hpp"

namespace pmcprof {

// Called on the first line of main(): SIGINT and SIGTERM stay blocked for the life of the
// process, so one that arrives at any moment, even before the first counter is open, waits
// for a run loop's signalfd (which ends the run with its final report) instead of killing
// pmcprof without one. SIGPIPE and SIGTTOU are ignored: a write that fails is reported, and a
// report written from the background never stops pmcprof. The workload gets the original mask
// and dispositions back before it execs.
void take_stop_signals();
// SIGINT or SIGTERM when one is pending (arrived, not yet taken by a run loop), else 0.
int pending_stop_signal();
// For long set-ups (attaching many probes): when a stop signal is pending, throws an Error
// that ends pmcprof with one line ("interrupted by SIGINT while attaching: nothing was
// counted") and the status a shell gives a command killed by it (128 + signal).
void stop_if_interrupted(const char* during);

// Blocks the signals the run loop takes through a signalfd (SIGINT, SIGTERM) for the
// lifetime of the object and restores the previous mask afterwards.
class SignalBlocker {
 public:
  SignalBlocker();
  ~SignalBlocker();
  SignalBlocker(const SignalBlocker&) = delete;
  SignalBlocker& operator=(const SignalBlocker&) = delete;
  const sigset_t& blocked() const { return blocked_; }
  // The mask the workload execs with: the one pmcprof started with.
  const sigset_t& previous() const;

 private:
  sigset_t blocked_{};
  sigset_t previous_{};
};

// A command pmcprof runs and counts. Forked at prepare() and held before exec until start(),
// so counters can be attached to its pid first (perf stat's workload protocol).
// It runs in a process group of its own (unless pmcprof is the foreground job of a terminal,
// where the shell's job control already sends Ctrl-C and Ctrl-Z to the whole job), which is
// ended with pmcprof: finish() and the destructor signal the whole group (SIGTERM, or the
// signal that stopped pmcprof, then SIGKILL), a parent-death signal (SIGKILL, which cannot be
// ignored) ends the command if pmcprof dies, and a guard process ends the group if pmcprof
// dies without doing so (SIGKILL, a crash). Nothing is left behind.
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
  // Sends `sig` (to its process group), then waits up to `grace_ms` for the group to end
  // before SIGKILL; returns the command's status.
  int terminate(int sig, int grace_ms);
  // Ends the workload when counting ends: reaps it if it exited (leaving any background
  // process it started), else stops its group the way perf stat stops the command (`sig`:
  // SIGTERM, or the SIGINT/SIGTERM that stopped pmcprof; SIGKILL after a grace period).
  // Returns its shell-style status.
  int finish(bool exited, int sig = SIGTERM);
  const std::string& command_line() const { return command_line_; }
  // The child's resource usage (CPU times), once it was reaped.
  std::optional<struct rusage> rusage() const {
    return reaped_ ? std::optional(rusage_) : std::nullopt;
  }

 private:
  // waitpid with the child's rusage; returns waitpid's result.
  pid_t wait_child(int* status, int options);
  Workload() = default;
  void signal_group(int sig) const;
  bool group_gone() const;
  void release_guard();
  // The guard process of an own-group command (run_guard in workload.cpp).
  void start_guard();
  pid_t pid_ = -1;
  bool own_group_ = false;
  pid_t guard_pid_ = -1;
  Fd guard_pipe_;  // write end: one byte tells the guard the group is ended; EOF arms it
  bool reaped_ = false;
  int status_ = 0;
  struct rusage rusage_ {};
  Fd pidfd_;
  Fd go_pipe_;   // parent's write end: one byte releases the child
  Fd err_pipe_;  // parent's read end: the child's errno when exec fails, EOF on success
  std::string command_line_;
  std::string program_;
};

// Shell-style status from waitpid's status word: exit code, or 128 + signal number.
int shell_status(int wait_status);

}  // namespace pmcprof

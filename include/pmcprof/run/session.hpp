#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "pmcprof/report/func_report.hpp"
#include "pmcprof/report/report.hpp"
#include "pmcprof/run/run_loop.hpp"
#include "pmcprof/run/workload.hpp"

namespace pmcprof {

// What a run's totals look like while it runs (serve's /metrics page is built from this).
using LiveReport = std::variant<CountingReport, FunctionReport>;

// serve's hook: given a function returning the live totals once counting has started, and an
// empty one before counting stops (the function must not be called after that).
using LiveSink = std::function<void(std::function<LiveReport()>)>;

// How a run ended, for the session's final report.
struct RunEnd {
  StopReason why = StopReason::signal;
  std::uint64_t start_ns = 0;                    // CLOCK_MONOTONIC when counting started
  std::uint64_t end_ns = 0;                      // ... and stopped
  std::optional<int> exit_status;                // the workload's shell-style status, once reaped
  std::optional<std::uint64_t> user_ns, sys_ns;  // the workload's CPU time (rusage), once reaped
  bool interrupted() const { return why == StopReason::signal; }
};

// One job pmcprof runs: counting, per-cgroup counting (either backend), function mode.
// The opening is the concrete type's constructor (counters opened, targets resolved, BPF
// loaded; the workload, if any, already forked and held by the Run). Run::drive() then calls,
// in this order, as perf's bpf_counter_ops are called:
//   attach()      probes attached (function mode); may take long, must be interruptible
//   start()       counting starts, right before the workload is released
//   readers()     fds the run loop services while waiting (the per-call stream)
//   interval()    a -I tick: the stretch since the previous tick, handed to the renderer
//   live()        the totals so far (serve), only between start() and stop()
//   stop()        probes detached, the stream drained, counters disabled: in that order,
//                 so no call is half-recorded and nothing pmcprof does after is counted
//   finish(end)   the final report(s), after the workload is reaped
// The concrete type keeps its results (typed) for the command to render.
class Session {
 public:
  virtual ~Session() = default;
  virtual void attach() {}
  virtual void start() = 0;
  virtual std::vector<RunLoopOptions::Reader> readers() { return {}; }
  virtual void interval() = 0;
  virtual LiveReport live() = 0;
  virtual void stop() = 0;
  virtual void finish(const RunEnd& end) = 0;
};

// What ends a run and what it runs: the same for every session.
struct RunControl {
  std::vector<std::string> command;  // -- CMD ARGS: forked now, released at start
  std::optional<pid_t> pid;          // -p: the run ends when the process exits
  std::optional<pid_t> tid;          // -t: ... when the thread exits
  std::optional<std::uint64_t> interval_ms;
  std::optional<std::uint64_t> interval_count;
  std::optional<std::uint64_t> timeout_ms;
  std::vector<RunLoopOptions::Reader> readers;  // more fds to service (serve's listener)
  LiveSink on_live;                             // serve: the session's live() while counting
};

// Drives any Session: the workload (forked in the constructor, so counters can be opened on
// its pid), signals through a signalfd (SIGINT/SIGTERM end the run with a final report),
// the timeout, -I ticks, and the end of a -p/-t target.
class Run {
 public:
  Run(const RunControl& control, const SignalBlocker& signals);
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  Workload* workload() { return workload_ ? &*workload_ : nullptr; }
  RunEnd drive(Session& session);

 private:
  RunControl control_;
  const SignalBlocker& signals_;
  std::optional<Workload> workload_;
};

}  // namespace pmcprof

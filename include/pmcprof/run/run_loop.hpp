#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "pmcprof/run/workload.hpp"
#include "pmcprof/util/fd.hpp"

namespace pmcprof {

enum class StopReason { workload_exited, target_exited, timeout, interval_count, signal };

struct RunLoopOptions {
  std::optional<std::uint64_t> interval_ms;     // -I: call on_interval every interval
  std::optional<std::uint64_t> interval_count;  // --interval-count: stop after this many
  std::optional<std::uint64_t> timeout_ms;      // --timeout
  int workload_pidfd = -1;                      // -- CMD: stop when it exits
  int target_pidfd = -1;                        // -p PID: stop when it exits
  // Extra fds to service while waiting (e.g. the per-call stream's epoll fd).
  struct Reader {
    int fd = -1;
    std::function<void()> on_readable;
  };
  std::vector<Reader> readers;
};

// Waits for whatever ends a counting run: the workload or target exiting, the timeout,
// SIGINT/SIGTERM (taken through a signalfd, so the final report is always printed), and
// ticks the interval timer in between. One poll() loop, no signal handlers.
class RunLoop {
 public:
  RunLoop(const SignalBlocker& signals, const RunLoopOptions& opts);
  StopReason run(const std::function<void()>& on_interval);
  int stop_signal() const { return stop_signal_; }

 private:
  Fd signal_fd_;
  Fd interval_fd_;
  Fd timeout_fd_;
  RunLoopOptions opts_;
  int stop_signal_ = 0;
};

}  // namespace pmcprof

#include "pmcprof/run/run_loop.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "pmcprof/util/error.hpp"

namespace pmcprof {

namespace {

Fd make_timer(std::uint64_t ms, bool periodic) {
  int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (fd < 0) throw SystemError("timerfd_create: " + errno_string(errno));
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(ms / 1000);
  spec.it_value.tv_nsec = static_cast<long>((ms % 1000) * 1000000);
  if (periodic) spec.it_interval = spec.it_value;
  Fd timer(fd);
  if (timerfd_settime(fd, 0, &spec, nullptr) != 0)
    throw SystemError("timerfd_settime: " + errno_string(errno));
  return timer;
}

}  // namespace

RunLoop::RunLoop(const SignalBlocker& signals, const RunLoopOptions& opts) : opts_(opts) {
  int sfd = signalfd(-1, &signals.blocked(), SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) throw SystemError("signalfd: " + errno_string(errno));
  signal_fd_.reset(sfd);
  if (opts.interval_ms) interval_fd_ = make_timer(*opts.interval_ms, true);
  if (opts.timeout_ms) timeout_fd_ = make_timer(*opts.timeout_ms, false);
}

StopReason RunLoop::run(const std::function<void()>& on_interval) {
  enum Slot { kSignal, kWorkload, kTarget, kTimeout, kInterval, kReader };
  std::uint64_t ticks = 0;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<Slot> slots;
    auto add = [&](int fd, Slot s) {
      if (fd < 0) return;
      fds.push_back({fd, POLLIN, 0});
      slots.push_back(s);
    };
    add(signal_fd_.get(), kSignal);
    add(opts_.workload_pidfd, kWorkload);
    add(opts_.target_pidfd, kTarget);
    add(timeout_fd_.get(), kTimeout);
    add(interval_fd_.get(), kInterval);
    for (const auto& r : opts_.readers) add(r.fd, kReader);
    int n = poll(fds.data(), fds.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("poll: " + errno_string(errno));
    }
    // Readers first (drain the stream), then interval ticks, so a tick that coincides with
    // the end is still printed.
    for (std::size_t i = 0, r = 0; i < fds.size(); ++i) {
      if (slots[i] != kReader) continue;
      if (fds[i].revents) opts_.readers[r].on_readable();
      ++r;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (slots[i] != kInterval || !(fds[i].revents & POLLIN)) continue;
      std::uint64_t expirations;
      if (::read(fds[i].fd, &expirations, sizeof(expirations)) <= 0) continue;
      on_interval();
      if (opts_.interval_count && ++ticks >= *opts_.interval_count)
        return StopReason::interval_count;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      switch (slots[i]) {
        case kSignal: {
          signalfd_siginfo info{};
          if (::read(fds[i].fd, &info, sizeof(info)) == sizeof(info))
            stop_signal_ = static_cast<int>(info.ssi_signo);
          return StopReason::signal;
        }
        case kWorkload:
          return StopReason::workload_exited;
        case kTarget:
          return StopReason::target_exited;
        case kTimeout:
          return StopReason::timeout;
        case kInterval:
        case kReader:
          break;
      }
    }
  }
}

}  // namespace pmcprof

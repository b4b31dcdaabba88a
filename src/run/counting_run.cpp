#include "pmcprof/run/counting_run.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/counters/cpu_list.hpp"
#include "pmcprof/report/aggregate.hpp"
#include "pmcprof/run/run_loop.hpp"
#include "pmcprof/run/workload.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/system.hpp"

namespace pmcprof {

namespace {

std::uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// pidfd for -p/-t so the run ends when the target does. Threads need PIDFD_THREAD (6.9+).
Fd open_target_pidfd(pid_t pid, bool thread) {
  constexpr unsigned kPidfdThread = O_EXCL;
  long fd = syscall(SYS_pidfd_open, pid, thread ? kPidfdThread : 0u);
  if (fd < 0 && thread) fd = syscall(SYS_pidfd_open, pid, 0u);
  return Fd(fd < 0 ? -1 : static_cast<int>(fd));
}

CounterTarget make_target(const CountingPlan& plan, const Workload* workload) {
  if (plan.system_wide) return CounterTarget::system_wide(plan.cpus);
  if (workload) return CounterTarget::tasks({workload->pid()}, /*inherit=*/true, true);
  if (plan.pid) {
    auto tids = process_threads(*plan.pid);
    if (tids.empty())
      throw UserError("no process with PID " + std::to_string(*plan.pid),
                      "check the PID with ps; it may have exited");
    return CounterTarget::tasks(tids, /*inherit=*/true, false);
  }
  if (plan.tid) {
    if (!process_exists(*plan.tid))
      throw UserError("no thread with TID " + std::to_string(*plan.tid),
                      "check the TID with ps -L; it may have exited");
    return CounterTarget::tasks({*plan.tid}, /*inherit=*/false, false);
  }
  throw UserError("nothing to count", "give -a, -C, -p, -t or a command after --");
}

std::vector<EventSeries> series_of(const CounterSet& set,
                                   const std::vector<std::vector<RawCount>>& counts) {
  std::vector<EventSeries> out;
  const CounterTarget& t = set.target();
  for (std::size_t e = 0; e < set.event_count(); ++e) {
    EventSeries s;
    s.event = set.event(e).display_name();
    s.kind = {set.event(e).attr.type, set.event(e).attr.config};
    s.unit = set.event(e).unit;
    s.supported = set.supported(e);
    for (std::size_t i = 0; i < t.instance_count(); ++i) s.instance_ids.push_back(t.instance_id(i));
    s.counts = counts[e];
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::vector<RawCount>> subtract(const std::vector<std::vector<RawCount>>& now,
                                            const std::vector<std::vector<RawCount>>& before) {
  auto out = now;
  for (std::size_t e = 0; e < now.size(); ++e)
    for (std::size_t i = 0; i < now[e].size(); ++i) out[e][i] = delta(now[e][i], before[e][i]);
  return out;
}

}  // namespace

std::string describe_target(const CountingPlan& plan) {
  if (plan.system_wide)
    return plan.cpus_explicit ? "CPU(s) " + format_cpu_list(plan.cpus) : "system wide";
  if (!plan.command.empty()) {
    std::string s;
    for (const auto& a : plan.command) s += (s.empty() ? "" : " ") + a;
    return s;
  }
  if (plan.pid) return "process id " + std::to_string(*plan.pid);
  if (plan.tid) return "thread id " + std::to_string(*plan.tid);
  return "";
}

CountingOutcome run_counting(const CountingPlan& plan, ReportRenderer* intervals) {
  SignalBlocker signals;
  std::optional<Workload> workload;
  if (!plan.command.empty()) workload.emplace(Workload::prepare(plan.command, signals.previous()));

  CounterSet counters =
      CounterSet::open(plan.groups, make_target(plan, workload ? &*workload : nullptr));
  const bool attach_to_workload = workload && !plan.system_wide;
  Fd target_pidfd;
  if (plan.pid) target_pidfd = open_target_pidfd(*plan.pid, false);
  if (plan.tid) target_pidfd = open_target_pidfd(*plan.tid, true);

  CountingReport base;
  base.target = describe_target(plan);

  // With a workload attached per task, enable_on_exec starts the counters at exec;
  // everything else is enabled now, right before the workload is let go.
  if (!attach_to_workload) counters.enable();
  const std::uint64_t start = monotonic_ns();
  if (workload) workload->start();

  RunLoopOptions loop_opts;
  loop_opts.interval_ms = plan.interval_ms;
  loop_opts.timeout_ms = plan.timeout_ms;
  loop_opts.workload_pidfd = workload ? workload->pidfd() : -1;
  loop_opts.target_pidfd = target_pidfd.get();
  RunLoop loop(signals, loop_opts);

  auto previous = counters.read();
  std::uint64_t previous_ns = start;
  auto on_interval = [&] {
    auto now = counters.read();
    const std::uint64_t now_ns = monotonic_ns();
    CountingReport r = base;
    r.elapsed_ns = now_ns - previous_ns;
    r.interval_s = static_cast<double>(now_ns - start) / 1e9;
    r.timestamp_unix_ns = realtime_ns();
    r.counters = aggregate_rows(series_of(counters, subtract(now, previous)), plan.per_cpu);
    if (intervals) intervals->interval(r);
    previous = std::move(now);
    previous_ns = now_ns;
  };
  StopReason why = loop.run(on_interval);
  if (!attach_to_workload) counters.disable();
  const std::uint64_t end = monotonic_ns();

  CountingOutcome outcome;
  if (workload) {
    if (why == StopReason::workload_exited) {
      auto status = workload->try_reap();
      outcome.exit_code = status ? *status : workload->terminate(SIGKILL, 200);
    } else {
      // Interrupted or timed out: stop the workload the way perf stat does.
      outcome.exit_code = workload->terminate(SIGTERM, 1000);
    }
    outcome.report.exit_status = outcome.exit_code;
  } else if (why == StopReason::signal) {
    outcome.exit_code = 0;
  }
  auto totals = counters.read();
  CountingReport& r = outcome.report;
  r.target = base.target;
  r.elapsed_ns = end - start;
  r.timestamp_unix_ns = realtime_ns();
  r.interrupted = why == StopReason::signal;
  r.counters = aggregate_rows(series_of(counters, totals), plan.per_cpu);
  return outcome;
}

}  // namespace pmcprof

#include "pmcprof/run/counting_run.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/platform/cpu_list.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/probes/bpf_cgroup_counter.hpp"
#include "pmcprof/report/aggregate.hpp"
#include "pmcprof/run/run_loop.hpp"
#include "pmcprof/run/workload.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/progress.hpp"

namespace pmcprof {

namespace {

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
                                   const std::vector<std::vector<RawCount>>& counts, bool summed) {
  std::vector<EventSeries> out;
  const CounterTarget& t = set.target();
  for (std::size_t e = 0; e < set.event_count(); ++e) {
    EventSeries s;
    s.event = set.event(e).display_name();
    s.kind = {set.event(e).attr.type, set.event(e).attr.config};
    s.unit = set.event(e).unit;
    s.supported = set.supported(e);
    if (summed) {
      s.instance_ids.push_back(-1);
    } else {
      for (std::size_t i = 0; i < t.instance_count(); ++i)
        s.instance_ids.push_back(t.instance_id(i));
    }
    s.counts = counts[e];
    out.push_back(std::move(s));
  }
  return out;
}

// Cumulative counts of a run: [scope][event][instance]. A scope is the whole target, or one
// cgroup.
using Snapshot = std::vector<std::vector<std::vector<RawCount>>>;

Snapshot subtract(const Snapshot& now, const Snapshot& before) {
  Snapshot out = now;
  for (std::size_t g = 0; g < now.size(); ++g)
    for (std::size_t e = 0; e < now[g].size(); ++e)
      for (std::size_t i = 0; i < now[g][e].size(); ++i)
        out[g][e][i] = delta(now[g][e][i], before[g][e][i]);
  return out;
}

// The counters of one counting run, whatever the backend: one CounterSet for a task or the
// system, one per cgroup (fd backend), or one system-wide set read by BPF per cgroup.
class RunCounters {
 public:
  RunCounters(const CountingPlan& plan, const Workload* workload) : plan_(plan) {
    if (plan.cgroups.empty()) {
      sets_.push_back(CounterSet::open(plan.groups, make_target(plan, workload)));
      return;
    }
    std::size_t n_events = 0;
    for (const auto& g : plan.groups) n_events += g.events.size();
    backend_ = resolve_cgroup_backend(plan.cgroup_backend, plan.cgroups.size(),
                                      plan.cgroups.size() * plan.cpus.size() * n_events);
    if (backend_ == CgroupBackend::fd) {
      std::size_t events = 0;
      for (const auto& g : plan.groups) events += g.events.size();
      raise_nofile_limit(plan.cgroups.size() * plan.cpus.size() * events + 64);
      Progress progress("opening cgroup counters", plan.cgroups.size(), plan.quiet);
      for (const auto& cg : plan.cgroups) {
        Fd dir = cg.open_dir();  // the events keep the cgroup: the fd can go right after
        sets_.push_back(CounterSet::open(plan.groups, CounterTarget::cgroup(plan.cpus, dir.get())));
        progress.step(sets_.size());
      }
      return;
    }
    sets_.push_back(CounterSet::open(plan.groups, CounterTarget::system_wide(plan.cpus)));
  }

  bool per_cgroup() const { return !plan_.cgroups.empty(); }
  CgroupBackend backend() const { return backend_; }

  void enable() {
    for (auto& s : sets_) s.enable();
    if (per_cgroup() && backend_ == CgroupBackend::bpf) {
      bpf_.emplace(BpfCgroupCounter::start(sets_.front(), plan_.cgroups));
    }
  }
  void disable() {
    if (bpf_) last_bpf_ = bpf_->read();  // charge the last stretch before counters stop
    for (auto& s : sets_) s.disable();
  }

  Snapshot read() {
    Snapshot snap;
    if (bpf_) {
      // After disable() the counts are final: the read made there is the snapshot.
      auto per_cgroup = last_bpf_ ? *last_bpf_ : bpf_->read();
      for (auto& events : per_cgroup) {
        std::vector<std::vector<RawCount>> scope;
        for (auto& c : events) scope.push_back({c});
        snap.push_back(std::move(scope));
      }
      return snap;
    }
    for (const auto& s : sets_) snap.push_back(s.read());
    return snap;
  }
  std::vector<CounterRow> rows(const Snapshot& snap) const {
    std::vector<CounterRow> rows;
    for (std::size_t g = 0; g < snap.size(); ++g) {
      const CounterSet& set = sets_[sets_.size() == 1 ? 0 : g];
      const bool summed = bpf_.has_value();
      auto scope_rows = aggregate_rows(series_of(set, snap[g], summed), plan_.per_cpu);
      for (auto& row : scope_rows) {
        if (per_cgroup()) {
          row.cgroup = plan_.cgroups[g].path;
          row.cgroup_id = plan_.cgroups[g].id;
        }
        rows.push_back(std::move(row));
      }
    }
    return rows;
  }

  // Marks the rows of cgroups that no longer exist (removed while counting).
  void mark_removed(std::vector<CounterRow>& rows) const {
    for (auto& row : rows) {
      if (!row.cgroup_id) continue;
      for (const auto& cg : plan_.cgroups) {
        if (cg.id != *row.cgroup_id) continue;
        struct stat st {};
        row.cgroup_removed = ::stat(cg.abs_path.c_str(), &st) != 0 || st.st_ino != cg.id;
      }
    }
  }

 private:
  const CountingPlan& plan_;
  CgroupBackend backend_ = CgroupBackend::fd;
  std::vector<CounterSet> sets_;
  std::optional<BpfCgroupCounter> bpf_;
  std::optional<std::vector<std::vector<RawCount>>> last_bpf_;
};

}  // namespace

CgroupBackend parse_cgroup_backend(const std::string& text) {
  if (text == "auto") return CgroupBackend::automatic;
  if (text == "fd") return CgroupBackend::fd;
  if (text == "bpf") return CgroupBackend::bpf;
  throw UserError("unknown --cgroup-backend '" + text + "'", "use auto, fd or bpf");
}

const char* to_string(CgroupBackend b) {
  switch (b) {
    case CgroupBackend::automatic:
      return "auto";
    case CgroupBackend::fd:
      return "fd";
    case CgroupBackend::bpf:
      return "bpf";
  }
  return "?";
}

CgroupBackend resolve_cgroup_backend(CgroupBackend requested, std::size_t n_cgroups,
                                     std::size_t fd_backend_fds) {
  if (requested != CgroupBackend::automatic) return requested;
  return n_cgroups > kCgroupBpfThreshold || fd_backend_fds > kCgroupFdBudget ? CgroupBackend::bpf
                                                                             : CgroupBackend::fd;
}

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

  RunCounters counters(plan, workload ? &*workload : nullptr);
  const bool attach_to_workload = workload && !plan.system_wide;
  Fd target_pidfd;
  if (plan.pid) target_pidfd = open_pidfd(*plan.pid, false);
  if (plan.tid) target_pidfd = open_pidfd(*plan.tid, true);

  CountingReport base;
  base.target = describe_target(plan);
  if (counters.per_cgroup()) base.cgroup_backend = to_string(counters.backend());

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
  loop_opts.readers = plan.readers;
  RunLoop loop(signals, loop_opts);
  if (plan.verbose && !plan.quiet)
    std::cerr << "pmcprof: counting " << base.target << ": " << plan.groups.size()
              << " event group(s)"
              << (counters.per_cgroup() ? ", " + std::to_string(plan.cgroups.size()) +
                                              " cgroup(s), backend " + base.cgroup_backend
                                        : std::string())
              << "\n";

  // Counters are fresh: every interval is measured from zero, not from a first read (which
  // would miss what a workload did between its exec and that read).
  Snapshot previous = counters.read();
  for (auto& scope : previous)
    for (auto& event : scope)
      for (auto& c : event) c = RawCount{};
  std::uint64_t previous_ns = start;
  auto on_interval = [&] {
    Snapshot now = counters.read();
    const std::uint64_t now_ns = monotonic_ns();
    CountingReport r = base;
    r.elapsed_ns = now_ns - previous_ns;
    r.interval_s = static_cast<double>(now_ns - start) / 1e9;
    r.timestamp_unix_ns = realtime_ns();
    r.counters = counters.rows(subtract(now, previous));
    counters.mark_removed(r.counters);
    if (intervals) intervals->interval(r);
    previous = std::move(now);
    previous_ns = now_ns;
  };
  if (plan.on_live)
    plan.on_live([&] {
      CountingReport r = base;
      r.elapsed_ns = monotonic_ns() - start;
      r.timestamp_unix_ns = realtime_ns();
      r.counters = counters.rows(counters.read());
      return r;
    });
  StopReason why = loop.run(on_interval);
  if (plan.on_live) plan.on_live({});
  if (!attach_to_workload) counters.disable();
  const std::uint64_t end = monotonic_ns();

  CountingOutcome outcome;
  if (workload) {
    outcome.exit_code = workload->finish(why == StopReason::workload_exited);
    outcome.report.exit_status = outcome.exit_code;
  } else if (why == StopReason::signal) {
    outcome.exit_code = 0;
  }
  // The stretch since the last tick is an interval too, read like the total (after the
  // workload is reaped, when its counts are final): the intervals then add up to the total.
  if (plan.interval_ms) on_interval();
  Snapshot totals = counters.read();
  CountingReport& r = outcome.report;
  r.target = base.target;
  r.cgroup_backend = base.cgroup_backend;
  r.elapsed_ns = end - start;
  r.timestamp_unix_ns = realtime_ns();
  r.interrupted = why == StopReason::signal;
  r.counters = counters.rows(totals);
  counters.mark_removed(r.counters);
  return outcome;
}

}  // namespace pmcprof

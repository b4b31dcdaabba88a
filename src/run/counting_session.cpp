#include "pmcprof/run/counting_session.hpp"

#include <iostream>

#include "pmcprof/events/core_pmu_events.hpp"
#include "pmcprof/platform/cpu_topology.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/report/aggregate.hpp"
#include "pmcprof/run/cgroup_session.hpp"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

namespace {

// --per-thread system-wide: every thread of the system, each counted on its own.
CounterTarget every_thread(std::map<int, std::string>& names) {
  std::vector<pid_t> tids;
  for (auto& t : all_threads()) {
    tids.push_back(t.tid);
    names[t.tid] = std::move(t.comm);
  }
  return CounterTarget::tasks(tids, /*inherit=*/false, false);
}

// Counters follow -p/-t when given (a command then only bounds the time, as in perf), else the
// command, else every CPU. --per-thread counts threads one by one (no inheritance).
CounterTarget make_target(const CountingPlan& plan, const Workload* workload,
                          std::map<int, std::string>& thread_names) {
  const bool per_thread = plan.aggr == AggrMode::thread;
  if (plan.system_wide)
    return per_thread ? every_thread(thread_names) : CounterTarget::system_wide(plan.cpus);
  if (plan.pid) {
    auto tids = process_threads(*plan.pid);
    if (tids.empty())
      throw UserError("no process with PID " + std::to_string(*plan.pid),
                      "check the PID with ps; it may have exited");
    for (pid_t t : tids) thread_names[t] = thread_comm(t);
    return CounterTarget::tasks(tids, /*inherit=*/!per_thread, false);
  }
  if (plan.tid) {
    if (!process_exists(*plan.tid))
      throw UserError("no thread with TID " + std::to_string(*plan.tid),
                      "check the TID with ps -L; it may have exited");
    thread_names[*plan.tid] = thread_comm(*plan.tid);
    return CounterTarget::tasks({*plan.tid}, /*inherit=*/false, false);
  }
  if (workload) return CounterTarget::tasks({workload->pid()}, /*inherit=*/true, true);
  throw UserError("nothing to count", "give -a, -C, -p, -t or a command after --");
}

}  // namespace

namespace {

// A task's events split per core PMU: each instance's running time of all the siblings of
// event e together (see EventSeries::scale_running). Empty for anything else.
std::vector<std::uint64_t> siblings_running(const CounterSet& set, std::size_t e,
                                            const std::vector<std::vector<RawCount>>& counts) {
  const auto& split_from = set.event(e).split_from;
  if (set.target().system_wide_target() || !split_from) return {};
  std::vector<std::uint64_t> running(set.target().instance_count(), 0);
  for (std::size_t other = 0; other < set.event_count(); ++other) {
    if (set.event(other).split_from != split_from) continue;
    for (std::size_t i = 0; i < running.size() && i < counts[other].size(); ++i)
      running[i] += counts[other][i].running;
  }
  return running;
}

}  // namespace

std::vector<EventSeries> series_of(const CounterSet& set,
                                   const std::vector<std::vector<RawCount>>& counts, bool summed) {
  std::vector<EventSeries> out;
  const CounterTarget& t = set.target();
  for (std::size_t e = 0; e < set.event_count(); ++e) {
    const ResolvedEvent& ev = set.event(e);
    EventSeries s;
    s.event = ev.display_name();
    s.kind = {ev.attr.type, generic_config(ev.attr)};
    if (ev.core_pmus.size() == 1) s.pmu = ev.core_pmus.front().name;
    s.unit = ev.unit;
    s.scale = ev.scale;
    s.group = set.event_group(e);
    s.supported = set.supported(e);
    if (summed) {
      s.instance_ids.push_back(-1);
      s.counts = counts[e];
    } else {
      // Only where the event counts: the CPUs of its core PMU.
      const auto running = siblings_running(set, e, counts);
      for (std::size_t i = 0; i < t.instance_count(); ++i) {
        if (!set.counts_on(e, i)) continue;
        s.instance_ids.push_back(t.instance_id(i));
        s.counts.push_back(counts[e][i]);
        if (!running.empty()) s.scale_running.push_back(running[i]);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

Snapshot subtract(const Snapshot& now, const Snapshot& before) {
  Snapshot out = now;
  for (std::size_t g = 0; g < now.size(); ++g)
    for (std::size_t e = 0; e < now[g].size(); ++e)
      for (std::size_t i = 0; i < now[g][e].size(); ++i)
        out[g][e][i] = delta(now[g][e][i], before[g][e][i]);
  return out;
}

// ---- what every counting session shares ----

CountingSessionBase::CountingSessionBase(const CountingPlan& plan, ReportRenderer* intervals)
    : plan_(plan), intervals_(intervals) {
  base_.target = describe_target(plan);
  base_.aggr_mode = plan.aggr;
}

void CountingSessionBase::start() {
  if (plan_.verbose && !plan_.quiet)
    std::cerr << "pmcprof: counting " << base_.target << ": " << plan_.groups.size()
              << " event group(s)" << verbose_detail() << "\n";
  // The elapsed time encloses the counting, as perf's does: taken before the counters are
  // enabled and after they are disabled (the other way round, a loaded machine read more
  // than 2.0 CPUs utilized on 2 CPUs).
  start_ns_ = previous_ns_ = monotonic_ns();
  enable();
  // Counters are fresh: every interval is measured from zero, not from a first read (which
  // would miss what a workload did between its exec and that read).
  previous_ = read();
  for (auto& scope : previous_)
    for (auto& event : scope)
      for (auto& c : event) c = RawCount{};
}

CountingReport CountingSessionBase::report_of(const Snapshot& counts,
                                              std::uint64_t elapsed_ns) const {
  CountingReport r = base_;
  r.elapsed_ns = elapsed_ns;
  r.timestamp_unix_ns = realtime_ns();
  r.counters = rows(counts);
  add_extras(r, counts);
  r.metrics = compute_metrics(r, plan_.metrics);
  return r;
}

void CountingSessionBase::interval() {
  Snapshot now = read();
  const std::uint64_t now_ns = monotonic_ns();
  CountingReport r = report_of(subtract(now, previous_), now_ns - previous_ns_);
  r.interval_s = static_cast<double>(now_ns - start_ns_) / 1e9;
  mark_removed(r.counters);
  if (intervals_) intervals_->interval(r);
  previous_ = std::move(now);
  previous_ns_ = now_ns;
}

LiveReport CountingSessionBase::live() {
  return report_of(read(), monotonic_ns() - start_ns_);
}

void CountingSessionBase::stop() {
  disable();
  stopped_ns_ = monotonic_ns();
}

void CountingSessionBase::finish(const RunEnd& end) {
  // The stretch since the last tick is an interval too, read like the total (after the
  // workload is reaped, when its counts are final): the intervals then add up to the total.
  // (Not after --interval-count's last tick, which ended the run: it printed all it should.)
  if (plan_.interval_ms && end.why != StopReason::interval_count) interval();
  final_ = report_of(read(), (stopped_ns_ ? stopped_ns_ : end.end_ns) - start_ns_);
  final_.interrupted = end.interrupted();
  final_.exit_status = end.exit_status;
  // perf shows the command's own CPU times when it counted the command (not -a, -C, -p, -t).
  if (!plan_.system_wide && !plan_.pid && !plan_.tid) {
    final_.user_ns = end.user_ns;
    final_.sys_ns = end.sys_ns;
  }
  mark_removed(final_.counters);
}

// ---- counters on tasks or CPUs ----

CountingSession::CountingSession(const CountingPlan& plan, const Workload* workload,
                                 ReportRenderer* intervals)
    : CountingSessionBase(plan, intervals),
      set_(CounterSet::open(plan.groups, make_target(plan, workload, how_.thread_names))),
      enabled_at_exec_(workload && !plan.system_wide && !plan.pid && !plan.tid) {
  how_.mode = plan.aggr;
  how_.skip_zero_threads = plan.aggr == AggrMode::thread && plan.system_wide;
  if (plan.system_wide) how_.topology = read_cpu_topology(plan.cpus);
}

void CountingSession::enable() {
  if (!enabled_at_exec_) set_.enable();
}

void CountingSession::disable() {
  if (!enabled_at_exec_) set_.disable();
}

Snapshot CountingSession::read() {
  return {set_.read()};
}

std::vector<CounterRow> CountingSession::rows(const Snapshot& snap) const {
  return aggregate_rows(series_of(set_, snap.at(0), false), how_);
}

std::unique_ptr<CountingSessionBase> open_counting_session(const CountingPlan& plan,
                                                           const Workload* workload,
                                                           ReportRenderer* intervals) {
  if (plan.cgroups.empty()) return std::make_unique<CountingSession>(plan, workload, intervals);
  std::size_t n_events = 0;
  for (const auto& g : plan.groups) n_events += g.events.size();
  const CgroupBackend backend = resolve_cgroup_backend(
      plan.cgroup_backend, plan.cgroups.size(), plan.cgroups.size() * plan.cpus.size() * n_events);
  if (backend == CgroupBackend::bpf) return std::make_unique<CgroupBpfSession>(plan, intervals);
  return std::make_unique<CgroupFdSession>(plan, intervals);
}

}  // namespace pmcprof

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/counters/scaling.hpp"
#include "pmcprof/report/aggregate.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/report/report.hpp"
#include "pmcprof/run/counting_run.hpp"
#include "pmcprof/run/session.hpp"
#include "pmcprof/run/workload.hpp"

namespace pmcprof {

// Cumulative counts of a counting run: [scope][event][instance]. A scope is the whole target,
// or one cgroup.
using Snapshot = std::vector<std::vector<std::vector<RawCount>>>;

// Later minus earlier, per count (clamped at 0).
Snapshot subtract(const Snapshot& now, const Snapshot& before);

// One EventSeries per event of `set` from its counts [event][instance]; `summed` when the
// counts are already one per event (the BPF backend sums over CPUs).
std::vector<EventSeries> series_of(const CounterSet& set,
                                   const std::vector<std::vector<RawCount>>& counts, bool summed);

// What the counting sessions share: counts read as snapshots, -I intervals as differences of
// snapshots (measured from zero: counters are fresh when counting starts), the live totals for
// serve, and the final report. A concrete session says how its counters are enabled, read and
// turned into report rows:
//   CountingSession    counters on the run's tasks or CPUs (counting_session.cpp)
//   CgroupFdSession    one counter set per cgroup, PERF_FLAG_PID_CGROUP (cgroup_session.cpp)
//   CgroupBpfSession   per-CPU counters charged to cgroups at context switches (ditto)
class CountingSessionBase : public Session {
 public:
  void start() override;
  void interval() override;
  LiveReport live() override;
  void stop() override;
  void finish(const RunEnd& end) override;
  // The final report, complete once finish() ran.
  CountingReport& report() { return final_; }

 protected:
  CountingSessionBase(const CountingPlan& plan, ReportRenderer* intervals);
  virtual void enable() = 0;
  virtual void disable() = 0;
  virtual Snapshot read() = 0;
  virtual std::vector<CounterRow> rows(const Snapshot& snap) const = 0;
  // Marks rows whose cgroup was removed while counting (cgroup sessions).
  virtual void mark_removed(std::vector<CounterRow>& /*rows*/) const {}
  // What a report holds beside its rows (the BPF cgroup backend's uncharged stretches).
  virtual void add_extras(CountingReport& /*r*/, const Snapshot& /*snap*/) const {}
  // What -v adds after "N event group(s)".
  virtual std::string verbose_detail() const { return {}; }

  const CountingPlan& plan_;
  CountingReport base_;  // target and backend: what every report of the run starts from

 private:
  CountingReport report_of(const Snapshot& counts, std::uint64_t elapsed_ns) const;
  ReportRenderer* intervals_;
  std::uint64_t start_ns_ = 0;    // before the counters were enabled
  std::uint64_t stopped_ns_ = 0;  // after they were disabled
  std::uint64_t previous_ns_ = 0;
  Snapshot previous_;
  CountingReport final_;
};

// Counters on the run's tasks (the workload, -p, -t) or CPUs (-a, -C).
class CountingSession : public CountingSessionBase {
 public:
  CountingSession(const CountingPlan& plan, const Workload* workload, ReportRenderer* intervals);

 protected:
  void enable() override;
  void disable() override;
  Snapshot read() override;
  std::vector<CounterRow> rows(const Snapshot& snap) const override;

 private:
  Aggregation how_;  // before set_: the target fills its thread names
  CounterSet set_;
  // A workload counted per task starts its counters itself, at exec (enable_on_exec).
  bool enabled_at_exec_ = false;
};

// The session a plan asks for: per cgroup (either backend) with -G/--for-each-cgroup, else
// counters on tasks or CPUs. `workload` is the Run's, already forked and held.
std::unique_ptr<CountingSessionBase> open_counting_session(const CountingPlan& plan,
                                                           const Workload* workload,
                                                           ReportRenderer* intervals);

}  // namespace pmcprof

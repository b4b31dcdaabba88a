#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "pmcprof/counters/scaling.hpp"
#include "pmcprof/platform/cpu_topology.hpp"
#include "pmcprof/report/report.hpp"

namespace pmcprof {

// The counts of one event on each instance (CPU or thread) it was opened on: on a
// heterogeneous machine an event of a core PMU has only that PMU's CPUs.
struct EventSeries {
  std::string event;
  EventKind kind;
  std::string pmu;  // the core PMU it counts on, on a heterogeneous machine ("" otherwise)
  std::string unit;
  bool supported = false;
  std::size_t group = 0;          // the event group it was opened in
  double scale = 1;               // sysfs .scale: value = count x scale
  std::vector<int> instance_ids;  // CPU ids (per-CPU rows) or tids
  std::vector<RawCount> counts;   // one per instance
  // Per instance, when set: the running time to scale the count by instead of its own. A
  // task's event split per core PMU is enabled while the task runs on any CPU but runs only on
  // its PMU's: scaled by its own running time it would be extrapolated to the time the task
  // spent on the other kind of core. Its siblings' running times together are the time the
  // event ran on some PMU, which leaves only multiplexing to scale for.
  std::vector<std::uint64_t> scale_running;
};

// How instances become rows (perf stat's aggregation modes).
struct Aggregation {
  AggrMode mode = AggrMode::global;
  std::map<int, CpuPlace> topology;         // core, die, socket, node: where each CPU sits
  std::map<int, std::string> thread_names;  // thread: tid -> comm
  // --per-thread system-wide: threads that counted nothing are left out, as perf does.
  bool skip_zero_threads = false;
};

// Report rows. Each instance is scaled on its own before summing, so CPUs that multiplexed
// differently are extrapolated correctly; running_pct is Σrunning / Σenabled. Row order is
// perf's: events in order (global); each event across CPUs (-A); each aggregate (sorted by
// socket, die, core, node) with every event; each event across threads by count, largest first.
std::vector<CounterRow> aggregate_rows(const std::vector<EventSeries>& series,
                                       const Aggregation& how);
// The sum (per_instance false) or one row per CPU (true).
std::vector<CounterRow> aggregate_rows(const std::vector<EventSeries>& series, bool per_instance);

// One row from one or more instance counts, each scaled by its own running time or, when
// given, by the one of `scale_running` beside it (see EventSeries::scale_running).
CounterRow make_row(const EventSeries& s, const std::vector<RawCount>& counts,
                    const std::vector<std::uint64_t>& scale_running = {});

// -r N: the mean of N reports of the same shape, with the relative standard deviation of the
// mean (perf's "( +- x% )") on every counter and on the elapsed time.
CountingReport combine_runs(const std::vector<CountingReport>& runs);

// Relative stddev of the mean, in %: 100 * sqrt(var / n) / mean (0 when mean is 0).
double relative_stddev_of_mean_pct(const std::vector<double>& values);

}  // namespace pmcprof

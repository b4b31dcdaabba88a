#pragma once

#include <string>
#include <vector>

#include "pmcprof/counters/scaling.hpp"
#include "pmcprof/report/report.hpp"

namespace pmcprof {

// The counts of one event on each instance (CPU or thread) it was opened on.
struct EventSeries {
  std::string event;
  EventKind kind;
  std::string unit;
  bool supported = false;
  std::vector<int> instance_ids;  // CPU ids (per-CPU rows) or tids
  std::vector<RawCount> counts;   // one per instance
};

// Report rows: one per event (summed over instances), or one per event and CPU when
// per_instance is set. Each instance is scaled on its own before summing, so CPUs that
// multiplexed differently are extrapolated correctly; running_pct is Σrunning / Σenabled.
std::vector<CounterRow> aggregate_rows(const std::vector<EventSeries>& series, bool per_instance);

// One row from one or more instance counts.
CounterRow make_row(const EventSeries& s, const std::vector<RawCount>& counts);

// -r N: the mean of N reports of the same shape, with the relative standard deviation of the
// mean (perf's "( +- x% )") on every counter and on the elapsed time.
CountingReport combine_runs(const std::vector<CountingReport>& runs);

// Relative stddev of the mean, in %: 100 * sqrt(var / n) / mean (0 when mean is 0).
double relative_stddev_of_mean_pct(const std::vector<double>& values);

}  // namespace pmcprof

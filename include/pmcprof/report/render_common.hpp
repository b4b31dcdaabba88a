#pragma once

// What the counting-mode renderers (text, CSV, JSON) share.
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/report/report.hpp"

namespace pmcprof {

// "<not counted>" / "<not supported>" (never a number).
const char* status_text(CounterStatus s);

std::string rstrip(std::string s);
std::string trim_copy(const std::string& s);

// The -M metrics shown on `row`: those of its event group and scope, when `row` is the first
// row of that group in that scope.
std::vector<const MetricValue*> anchored_metrics(const CountingReport& r, const CounterRow& row);

// --metric-only: one column per metric. A shadow metric's column is keyed by the event it is
// printed beside; an -M metric's by its name.
struct MetricColumn {
  std::string title;   // perf's header: the unit ("insn per cycle", "branch-misses of all
                       // branches") or the -M metric's name
  std::string format;  // printf format of the value
  std::optional<EventKind> event;  // shadow metric of this event
  std::string pmu;                 // ... on this core PMU (heterogeneous machines: one column
                                   // per PMU, titled "cpu_core insn per cycle")
  std::string metric;              // else: the -M metric's name
};
std::vector<MetricColumn> metric_columns(const CountingReport& r);
// The first row of every scope (CPU, aggregate, cgroup), in report order: one metric-only line
// each.
std::vector<const CounterRow*> metric_scopes(const CountingReport& r);
std::optional<double> metric_column_value(const CountingReport& r, const MetricColumn& c,
                                          const CounterRow& scope);

// perf's interval-mode header between "#           time" and "counts": " CPU       ", ...
std::string interval_aggr_header(AggrMode mode);

}  // namespace pmcprof

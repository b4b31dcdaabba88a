#pragma once

#include <cstddef>
#include <vector>

#include "pmcprof/events/metric_table.hpp"
#include "pmcprof/report/report.hpp"

namespace pmcprof {

// -M: a metric and the event group its events were opened in (one group per metric).
struct MetricRequest {
  MetricChoice metric;
  std::size_t group = 0;
};

// The metrics' values in every scope of the report (the whole run, each CPU, aggregate or
// cgroup), from the rows of their own event group: the k-th row of the group in a scope is the
// metric's k-th event. A metric one of whose events was not counted has no value and says which
// ("cycles <not supported>"); one whose divisor is 0 says that.
std::vector<MetricValue> compute_metrics(const CountingReport& report,
                                         const std::vector<MetricRequest>& requests);

}  // namespace pmcprof

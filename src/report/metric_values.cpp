#include "pmcprof/report/metric_values.hpp"

#include <map>
#include <string>

#include "pmcprof/report/render_common.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

MetricValue value_in_scope(const CountingReport& r, const MetricRequest& req,
                           const CounterRow& scope) {
  MetricValue m;
  m.name = req.metric.def->name;
  m.unit = req.metric.def->unit;
  m.group = req.group;
  m.cpu = scope.cpu;
  m.aggr = scope.aggr;
  m.cgroup = scope.cgroup;
  m.cgroup_id = scope.cgroup_id;
  const auto events = req.metric.events();
  std::map<std::string, double> values{{"duration_time", static_cast<double>(r.elapsed_ns)}};
  std::vector<std::string> not_supported, not_counted;
  std::size_t k = 0;
  for (const auto& row : r.counters) {
    if (row.group != req.group || !same_scope(row, scope) || k >= events.size()) continue;
    if (k == 0) m.pmu = row.pmu;
    if (row.status == CounterStatus::ok)
      values[events[k]] = row.value;
    else
      (row.status == CounterStatus::not_supported ? not_supported : not_counted)
          .push_back(row.event);
    ++k;
  }
  if (!not_supported.empty() || !not_counted.empty()) {
    std::vector<std::string> parts;
    if (!not_supported.empty()) parts.push_back(join(not_supported, ", ") + " <not supported>");
    if (!not_counted.empty()) parts.push_back(join(not_counted, ", ") + " <not counted>");
    m.why_not = join(parts, "; ");
    return m;
  }
  m.value = evaluate_metric(req.metric, values, &m.why_not);
  return m;
}

}  // namespace

std::vector<MetricValue> compute_metrics(const CountingReport& report,
                                         const std::vector<MetricRequest>& requests) {
  std::vector<MetricValue> out;
  if (requests.empty()) return out;
  for (const CounterRow* scope : metric_scopes(report))
    for (const auto& req : requests) out.push_back(value_in_scope(report, req, *scope));
  return out;
}

}  // namespace pmcprof

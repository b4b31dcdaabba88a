#include "pmcprof/report/render_common.hpp"

#include "pmcprof/util/strings.hpp"

namespace pmcprof {

const char* status_text(CounterStatus s) {
  switch (s) {
    case CounterStatus::not_supported:
      return "<not supported>";
    case CounterStatus::not_counted:
      return "<not counted>";
    case CounterStatus::ok:
      break;
  }
  return "";
}

std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string trim_copy(const std::string& s) {
  return std::string(trim(s));
}

namespace {

bool metric_in_scope(const MetricValue& m, const CounterRow& row) {
  return m.cpu == row.cpu && m.aggr == row.aggr && m.cgroup_id == row.cgroup_id;
}

// perf leaves rates and CPUs utilized out of --metric-only.
bool metric_only_unit(const std::string& unit) {
  return unit.find("/sec") == std::string::npos && unit != "CPUs utilized";
}

}  // namespace

std::vector<const MetricValue*> anchored_metrics(const CountingReport& r, const CounterRow& row) {
  std::vector<const MetricValue*> out;
  if (r.metrics.empty()) return out;
  for (const auto& other : r.counters) {
    if (other.group != row.group || !same_scope(other, row)) continue;
    if (&other != &row) return out;  // an earlier row of the group holds them
    break;
  }
  for (const auto& m : r.metrics)
    if (m.group == row.group && metric_in_scope(m, row)) out.push_back(&m);
  return out;
}

std::vector<const CounterRow*> metric_scopes(const CountingReport& r) {
  std::vector<const CounterRow*> out;
  for (const auto& row : r.counters) {
    bool seen = false;
    for (const CounterRow* s : out) seen |= same_scope(*s, row);
    if (!seen) out.push_back(&row);
  }
  return out;
}

std::vector<MetricColumn> metric_columns(const CountingReport& r) {
  std::vector<MetricColumn> cols;
  auto scopes = metric_scopes(r);
  if (scopes.empty()) return cols;
  for (const auto& row : r.counters) {
    if (!same_scope(row, *scopes.front())) continue;
    auto m = derive_metric(r, row);
    if (!m || !metric_only_unit(m->unit)) continue;
    std::string title = starts_with(m->unit, "of all") ? row.event + " " + m->unit : m->unit;
    if (!row.pmu.empty() && !starts_with(title, row.pmu + "/")) title = row.pmu + " " + title;
    bool seen = false;  // the same derived metric from -e's events and from a -M group's
    for (const auto& c : cols) seen |= c.title == title;
    if (!seen) cols.push_back({title, metric_format(*m), row.kind, row.pmu, {}});
  }
  for (const auto& m : r.metrics) {
    bool seen = false;
    for (const auto& c : cols) seen |= c.metric == m.name && c.pmu == m.pmu;
    const std::string title = m.pmu.empty() ? m.name : m.pmu + " " + m.name;
    if (!seen) cols.push_back({title, "%8.2f", std::nullopt, m.pmu, m.name});
  }
  return cols;
}

std::optional<double> metric_column_value(const CountingReport& r, const MetricColumn& c,
                                          const CounterRow& scope) {
  if (c.event) {
    for (const auto& row : r.counters) {
      if (!(row.kind == *c.event) || row.pmu != c.pmu || !same_scope(row, scope)) continue;
      if (auto m = derive_metric(r, row)) return m->value;
    }
    return std::nullopt;
  }
  for (const auto& m : r.metrics)
    if (m.name == c.metric && m.pmu == c.pmu && metric_in_scope(m, scope)) return m.value;
  return std::nullopt;
}

}  // namespace pmcprof

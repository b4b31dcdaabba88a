// JSON renderer. Schema documented in docs/json.md: a single report is one pretty-printed
// object; with -I every interval is one compact line (NDJSON), then one "summary" line.
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "pmcprof/report/json_number.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/report/render_common.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

using ojson = nlohmann::ordered_json;

// Strings from outside (command lines, cgroup paths, event names) as valid UTF-8: a byte that
// is not UTF-8 becomes the text \xHH (JSON escapes control characters itself).
std::string text(const std::string& s) {
  return escape_bytes(s, false);
}

// Serialized without ever throwing on bytes: anything that escaped text() is replaced (U+FFFD).
std::string dump(const ojson& j, int indent = -1) {
  return j.dump(indent, ' ', false, ojson::error_handler_t::replace);
}

ojson aggregate_json(AggrMode mode, const AggrId& id) {
  ojson a;
  a["id"] = text(aggr_label(mode, id));
  if (mode == AggrMode::thread) {
    a["tid"] = id.tid;
    a["comm"] = text(id.comm);
    return a;
  }
  if (mode == AggrMode::node) {
    a["node"] = id.node;
  } else {
    a["socket"] = id.socket;
    if (mode != AggrMode::socket) a["die"] = id.die;
    if (mode == AggrMode::core) a["core"] = id.core;
  }
  a["cpus"] = id.cpus;
  return a;
}

ojson counter_json(const CountingReport& report, const CounterRow& row) {
  ojson c;
  c["event"] = text(row.event);
  // What the event is (perf_event_attr's type and config): derived metrics key on it, so a
  // saved report renders them again (pmcprof report).
  c["attr"] = {{"type", row.kind.type}, {"config", row.kind.config}};
  if (!row.pmu.empty()) c["pmu"] = row.pmu;
  c["group"] = row.group;
  if (row.cpu) c["cpu"] = *row.cpu;
  if (row.aggr) c["aggregate"] = aggregate_json(report.aggr_mode, *row.aggr);
  if (row.cgroup) {
    c["cgroup"] = text(*row.cgroup);
    c["cgroup_id"] = row.cgroup_id.value_or(0);
    c["cgroup_removed"] = row.cgroup_removed;
  }
  c["value"] = row.status == CounterStatus::ok ? json_number(row.value) : ojson(nullptr);
  c["unit"] = row.unit.empty() ? "count" : row.unit;
  c["status"] = to_string(row.status);
  c["raw_value"] = row.status == CounterStatus::ok ? ojson(row.raw_value) : ojson(nullptr);
  c["enabled_ns"] = row.enabled_ns;
  c["running_ns"] = row.running_ns;
  c["running_pct"] =
      row.status == CounterStatus::ok ? json_number(row.running_pct) : ojson(nullptr);
  if (row.stddev_pct) c["stddev_pct"] = *row.stddev_pct;
  if (auto m = derive_metric(report, row)) {
    c["metric"] = {{"value", m->value}, {"unit", m->percent ? "% " + m->unit : m->unit}};
  } else {
    c["metric"] = nullptr;
  }
  return c;
}

ojson metric_json(const CountingReport& report, const MetricValue& m) {
  ojson j;
  j["name"] = m.name;
  if (!m.pmu.empty()) j["pmu"] = m.pmu;
  j["group"] = m.group;
  if (m.cpu) j["cpu"] = *m.cpu;
  if (m.aggr) j["aggregate"] = aggregate_json(report.aggr_mode, *m.aggr);
  if (m.cgroup) {
    j["cgroup"] = text(*m.cgroup);
    j["cgroup_id"] = m.cgroup_id.value_or(0);
  }
  j["value"] = m.value ? ojson(*m.value) : ojson(nullptr);
  j["unit"] = m.unit;
  j["status"] = m.value ? "ok" : "not-computed";
  if (!m.value) j["reason"] = m.why_not;
  return j;
}

// --metric-only: every metric as a metrics entry (the shadow metrics under their column
// titles, as in text and CSV), and no counters.
std::vector<MetricValue> metric_only_values(const CountingReport& r) {
  std::vector<MetricValue> out;
  for (const CounterRow* scope : metric_scopes(r)) {
    for (const auto& col : metric_columns(r)) {
      if (!col.event) continue;
      MetricValue m;
      m.name = col.title;
      m.pmu = col.pmu;
      m.value = metric_column_value(r, col, *scope);
      if (!m.value) m.why_not = "its events were not counted";
      m.cpu = scope->cpu;
      m.aggr = scope->aggr;
      m.cgroup = scope->cgroup;
      m.cgroup_id = scope->cgroup_id;
      m.group = scope->group;
      out.push_back(std::move(m));
    }
  }
  for (const auto& m : r.metrics) out.push_back(m);
  return out;
}

ojson report_json(const CountingReport& report, const char* type, bool metric_only) {
  ojson j;
  j["schema"] = kJsonSchema;
  j["type"] = type;
  j["mode"] = "counting";
  j["target"] = text(report.target);
  if (report.interval_s) j["interval"] = *report.interval_s;
  j["timestamp_unix_ns"] = report.timestamp_unix_ns;
  j["elapsed_ns"] = report.elapsed_ns;
  j["runs"] = report.runs;
  if (report.elapsed_stddev_pct) j["elapsed_stddev_pct"] = *report.elapsed_stddev_pct;
  j["interrupted"] = report.interrupted;
  j["exit_status"] = report.exit_status ? ojson(*report.exit_status) : ojson(nullptr);
  if (report.cgroup_backend) j["cgroup_backend"] = to_string(*report.cgroup_backend);
  if (const auto& u = report.cgroup_uncharged) {
    ojson counters = ojson::array();
    for (const auto& row : u->counters) {
      ojson c = counter_json(report, row);
      c["metric"] = nullptr;  // no one scope's: shadow metrics would mix tasks
      counters.push_back(std::move(c));
    }
    j["cgroup_uncharged"] = {{"unreported_switches", u->unreported_switches},
                             {"read_errors", u->read_errors},
                             {"counters", std::move(counters)}};
  }
  if (report.aggr_mode != AggrMode::global) j["aggregate_by"] = to_string(report.aggr_mode);
  if (report.user_ns) j["user_ns"] = *report.user_ns;
  if (report.sys_ns) j["sys_ns"] = *report.sys_ns;
  ojson counters = ojson::array();
  if (!metric_only)
    for (const auto& row : report.counters) counters.push_back(counter_json(report, row));
  j["counters"] = std::move(counters);
  const auto metrics = metric_only ? metric_only_values(report) : report.metrics;
  if (metric_only || !metrics.empty()) {
    ojson ms = ojson::array();
    for (const auto& m : metrics) ms.push_back(metric_json(report, m));
    j["metrics"] = std::move(ms);
  }
  return j;
}

class JsonRenderer : public ReportRenderer {
 public:
  JsonRenderer(std::ostream& out, const RenderOptions& opts)
      : out_(out), streaming_(opts.intervals), metric_only_(opts.metric_only) {}
  void interval(const CountingReport& report) override {
    out_ << dump(report_json(report, "interval", metric_only_)) << '\n';
    out_.flush();
    streaming_ = true;
  }
  void final(const CountingReport& report) override {
    CountingReport whole = report;
    whole.interval_s.reset();
    if (streaming_)
      out_ << dump(report_json(whole, "summary", metric_only_)) << '\n';
    else
      out_ << dump(report_json(whole, "report", metric_only_), 2) << '\n';
    out_.flush();
  }

 private:
  std::ostream& out_;
  bool streaming_ = false;
  bool metric_only_ = false;
};

}  // namespace

std::unique_ptr<ReportRenderer> make_json_renderer(std::ostream& out, const RenderOptions& opts) {
  return std::make_unique<JsonRenderer>(out, opts);
}

std::string render_json(const CountingReport& report, const RenderOptions& opts) {
  std::ostringstream ss;
  RenderOptions o = opts;
  o.intervals = false;
  make_json_renderer(ss, o)->final(report);
  return ss.str();
}

}  // namespace pmcprof

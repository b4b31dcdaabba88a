// perf stat -x layout, no thousands separators:
//   [interval,|summary,][aggregate,]value,unit,event,[cgroup,cgroup_id,][stddev%,]
//   running_ns,running_pct,metric_value,metric_unit
// where aggregate is "CPUn" (-A), "S0-D0-C1,cpus" (--per-core), "S0-D0,cpus", "S0,cpus",
// "N0,cpus" or "comm-tid" (--per-thread). A row with more metrics than one (a shadow metric and
// -M metrics) continues on lines with the same fields, empty up to the metric.
// --metric-only: one header line of metric names, then one line of values per scope.
#include <cstdio>
#include <ostream>
#include <sstream>

#include "pmcprof/report/number_format.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/report/render_common.hpp"

namespace pmcprof {

namespace {

std::string csv_value(const CounterRow& row) {
  if (row.status != CounterStatus::ok) return status_text(row.status);
  return row.unit == "ns" ? format_fixed(row.value / 1e6, 2) : format_fixed(row.value, 0);
}

// perf's CSV metric value: the printf'ed number, digits and dot only.
std::string csv_number(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  std::string s = trim_copy(buf);
  std::size_t end = 0;
  while (end < s.size() && ((s[end] >= '0' && s[end] <= '9') || s[end] == '.' || s[end] == '-'))
    ++end;
  return s.substr(0, end);
}

class CsvRenderer : public ReportRenderer {
 public:
  CsvRenderer(std::ostream& out, const RenderOptions& opts) : out_(out), opts_(opts) {}
  void interval(const CountingReport& report) override {
    if (opts_.metric_only)
      print_metric_only(report, "");
    else
      print_rows(report, "");
    out_.flush();
  }
  void final(const CountingReport& report) override {
    CountingReport whole = report;
    whole.interval_s.reset();
    const std::string lead =
        opts_.intervals && opts_.csv_summary_prefix ? "summary" + opts_.csv_separator : "";
    if (opts_.metric_only)
      print_metric_only(whole, lead);
    else
      print_rows(whole, lead);
    out_.flush();
  }

 private:
  std::string prefix(const CountingReport& r, const CounterRow& row, const std::string& lead) {
    const std::string& sep = opts_.csv_separator;
    std::string p = lead;
    if (r.interval_s) p += format_fixed(*r.interval_s, 9) + sep;
    if (r.aggr_mode == AggrMode::cpu && row.cpu) p += "CPU" + std::to_string(*row.cpu) + sep;
    if (r.aggr_mode != AggrMode::cpu && row.aggr) {
      p += csv_field(aggr_label(r.aggr_mode, *row.aggr), sep) + sep;
      if (r.aggr_mode != AggrMode::thread) p += std::to_string(row.aggr->cpus) + sep;
    }
    return p;
  }

  std::vector<std::pair<std::string, std::string>> metrics_of(const CountingReport& r,
                                                              const CounterRow& row) {
    std::vector<std::pair<std::string, std::string>> out;
    if (auto m = derive_metric(r, row))
      out.emplace_back(csv_number(metric_format(*m), m->value), m->unit);
    for (const MetricValue* m : anchored_metrics(r, row))
      out.emplace_back(m->value ? csv_number("%8.2f", *m->value) : "", m->name);
    return out;
  }

  void print_rows(const CountingReport& r, const std::string& lead) {
    for (const auto& row : r.counters) print_row(r, row, lead, metrics_of(r, row));
    // The BPF cgroup backend's stretches charged to no cgroup, when there were any: as a
    // cgroup "(no cgroup)" with id 0, no metrics (they are no one scope's).
    if (!r.cgroup_uncharged) return;
    const UnchargedCounts& u = *r.cgroup_uncharged;
    if (!u.unreported_switches && !u.read_errors) return;
    for (CounterRow row : u.counters) {
      row.cgroup = "(no cgroup)";
      row.cgroup_id = 0;
      print_row(r, row, lead, {});
    }
  }

  void print_row(const CountingReport& r, const CounterRow& row, const std::string& lead,
                 std::vector<std::pair<std::string, std::string>> metrics) {
    const std::string& sep = opts_.csv_separator;
    const std::string p = prefix(r, row, lead);
    std::string fields = csv_value(row) + sep + (row.unit == "ns" ? "msec" : "") + sep +
                         csv_field(row.event, sep) + sep;
    if (row.cgroup)
      fields += csv_field(*row.cgroup, sep) + sep + std::to_string(row.cgroup_id.value_or(0)) + sep;
    if (r.runs > 1) fields += (row.stddev_pct ? format_fixed(*row.stddev_pct, 2) + "%" : "") + sep;
    const double pct = row.status == CounterStatus::ok
                           ? row.running_pct
                           : running_percent(row.running_ns, row.enabled_ns);
    fields += std::to_string(row.running_ns) + sep + format_fixed(pct, 2) + sep;
    if (metrics.empty()) metrics.emplace_back("", "");
    out_ << p << fields << metrics[0].first << sep << metrics[0].second << '\n';
    // Continuation lines keep the field count: empty fields up to the metric.
    const std::string blank = empty_fields(fields);
    for (std::size_t i = 1; i < metrics.size(); ++i)
      out_ << p << blank << metrics[i].first << sep << metrics[i].second << '\n';
  }

  // As many separators as `fields` has fields.
  std::string empty_fields(const std::string& fields) const {
    const std::string& sep = opts_.csv_separator;
    std::string out;
    for (std::size_t pos = fields.find(sep); pos != std::string::npos;
         pos = fields.find(sep, pos + sep.size()))
      out += sep;
    return out;
  }

  void print_metric_only(const CountingReport& r, const std::string& lead) {
    const std::string& sep = opts_.csv_separator;
    const auto cols = metric_columns(r);
    if (!header_done_) {
      std::string h = r.interval_s ? "time" + sep : "";
      if (r.aggr_mode == AggrMode::cpu) h += "cpu" + sep;
      if (r.aggr_mode == AggrMode::thread) h += "comm-pid" + sep;
      if (r.aggr_mode != AggrMode::cpu && r.aggr_mode != AggrMode::thread &&
          r.aggr_mode != AggrMode::global)
        h += std::string(to_string(r.aggr_mode)) + sep + "cpus" + sep;
      for (const auto& c : cols) h += c.title + sep;
      out_ << h << '\n';
      header_done_ = true;
    }
    for (const CounterRow* scope : metric_scopes(r)) {
      std::string line = prefix(r, *scope, lead);
      for (const auto& c : cols) {
        auto v = metric_column_value(r, c, *scope);
        line += (v ? csv_number(c.format.c_str(), *v) : "") + sep;
      }
      out_ << line << '\n';
    }
  }

  std::ostream& out_;
  RenderOptions opts_;
  bool header_done_ = false;
};

}  // namespace

std::unique_ptr<ReportRenderer> make_csv_renderer(std::ostream& out, const RenderOptions& opts) {
  return std::make_unique<CsvRenderer>(out, opts);
}

std::string render_csv(const CountingReport& report, const std::string& sep,
                       const RenderOptions& opts) {
  std::ostringstream ss;
  RenderOptions o = opts;
  o.format = OutputFormat::csv;
  o.csv_separator = sep;
  make_csv_renderer(ss, o)->final(report);
  return ss.str();
}

std::unique_ptr<ReportRenderer> make_renderer(const RenderOptions& opts, std::ostream& out) {
  switch (opts.format) {
    case OutputFormat::csv:
      return make_csv_renderer(out, opts);
    case OutputFormat::json:
      return make_json_renderer(out, opts);
    case OutputFormat::text:
      break;
  }
  return make_text_renderer(out, opts);
}

}  // namespace pmcprof

// perf stat's text layout (tools/perf/util/stat-display.c, perf 6.1): [interval] [aggregate]
// value (18 wide, thousands separators unless --no-big-num), unit (4), event (32), then
// " # metric" (35 wide) and "(running%)" when the counter was multiplexed. -M metrics go on
// the first row of their event group; --metric-only prints a table of metrics instead.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "pmcprof/report/number_format.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/report/render_common.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr std::size_t kValueWidth = 18;
constexpr std::size_t kUnitWidth = 4;
constexpr std::size_t kEventWidth = 32;
constexpr std::size_t kMetricWidth = 35;
constexpr std::size_t kMetricOnlyWidth = 20;

std::string printf_value(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string value_field(const CounterRow& row, bool big_num) {
  if (row.status != CounterStatus::ok) return pad_left(status_text(row.status), kValueWidth);
  const bool clock = row.unit == "ns";
  const double v = clock ? row.value / 1e6 : row.value;
  return pad_left(big_num ? format_grouped(v, clock ? 2 : 0) : format_fixed(v, clock ? 2 : 0),
                  kValueWidth);
}

// perf's aggregate column: "CPU0       ", "S0-D0-C0           1 ", "           comm-123      ".
std::string aggr_field(const CountingReport& r, const CounterRow& row) {
  char buf[96];
  const AggrId id = row.aggr.value_or(AggrId{});
  switch (r.aggr_mode) {
    case AggrMode::global:
      return {};
    case AggrMode::cpu:
      std::snprintf(buf, sizeof(buf), "CPU%-7d ", row.cpu.value_or(-1));
      break;
    case AggrMode::thread:
      std::snprintf(buf, sizeof(buf), "%16s-%-8d ", escape_bytes(id.comm).c_str(), id.tid);
      break;
    case AggrMode::core:
      std::snprintf(buf, sizeof(buf), "S%d-D%d-C%-8d %4d ", id.socket, id.die, id.core, id.cpus);
      break;
    case AggrMode::die:
      std::snprintf(buf, sizeof(buf), "S%d-D%-8d %4d ", id.socket, id.die, id.cpus);
      break;
    case AggrMode::socket:
      std::snprintf(buf, sizeof(buf), "S%-5d %4d ", id.socket, id.cpus);
      break;
    case AggrMode::node:
      std::snprintf(buf, sizeof(buf), "N%-5d %4d ", id.node, id.cpus);
      break;
  }
  return buf;
}

std::string interval_prefix(const CountingReport& r) {
  return r.interval_s ? printf_value("%16.9f ", *r.interval_s) : std::string();
}

std::string shadow_field(const CountingReport& report, const CounterRow& row) {
  auto m = derive_metric(report, row);
  if (!m) return {};
  return "# " + printf_value(metric_format(*m), m->value) + " " + m->unit;
}

std::string group_metric_field(const MetricValue& m) {
  if (!m.value) return "# " + m.name + " not computed: " + m.why_not;
  if (m.unit.empty()) return "# " + printf_value("%8.2f", *m.value) + " " + m.name;
  return "# " + printf_value("%8.2f", *m.value) + " " + m.unit + "  " + m.name;
}

std::string tail(const CounterRow& row, const std::string& metric) {
  std::string out;
  const bool multiplexed = row.status == CounterStatus::ok && row.running_pct < 100.0;
  const bool noise = row.stddev_pct.has_value();
  if (!metric.empty())
    out += " " + pad_right(metric, kMetricWidth - 1);
  else if (noise || multiplexed)
    out += std::string(kMetricWidth, ' ');
  if (noise) out += "  " + printf_value("( +-%6.2f%% )", *row.stddev_pct);
  if (multiplexed) out += printf_value("  (%.2f%%)", row.running_pct);
  return out;
}

// The row's value, unit and event columns, after the interval and aggregate fields.
std::string row_fields(const CountingReport& r, const CounterRow& row, bool big_num) {
  return interval_prefix(r) + aggr_field(r, row) + value_field(row, big_num) + " " +
         pad_right(row.unit == "ns" ? "msec" : "", kUnitWidth) + " " +
         pad_right(escape_bytes(row.event), kEventWidth);
}

void print_row(std::ostream& out, const CountingReport& r, const CounterRow& row, bool big_num) {
  const std::string lead = interval_prefix(r) + aggr_field(r, row);
  std::string line = row_fields(r, row, big_num);
  if (row.cgroup)
    line +=
        " " + pad_right(escape_bytes(*row.cgroup) + (row.cgroup_removed ? " (removed)" : ""), 24);
  std::vector<std::string> metrics;
  if (auto shadow = shadow_field(r, row); !shadow.empty()) metrics.push_back(shadow);
  for (const MetricValue* m : anchored_metrics(r, row)) metrics.push_back(group_metric_field(*m));
  line += tail(row, metrics.empty() ? std::string() : metrics.front());
  out << rstrip(line) << '\n';
  // More metrics on the same row: continuation lines under the metric column.
  const std::string blank(kValueWidth + 1 + kUnitWidth + 1 + kEventWidth, ' ');
  for (std::size_t i = 1; i < metrics.size(); ++i)
    out << rstrip(lead + blank + " " + metrics[i]) << '\n';
}

// The BPF cgroup backend's stretches charged to no cgroup, when there were any: their counts
// in the cgroup column's place, then why (no metrics: they are no one scope's).
void print_uncharged(std::ostream& out, const CountingReport& r, bool big_num) {
  if (!r.cgroup_uncharged) return;
  const UnchargedCounts& u = *r.cgroup_uncharged;
  if (!u.unreported_switches && !u.read_errors) return;
  for (const auto& row : u.counters)
    out << rstrip(row_fields(r, row, big_num) + " " + pad_right("(no cgroup)", 24)) << '\n';
  std::string why;
  if (u.unreported_switches)
    why = std::to_string(u.unreported_switches) +
          " stretch(es) after a context switch the kernel did not report";
  if (u.read_errors)
    why += std::string(why.empty() ? "" : ", ") + std::to_string(u.read_errors) +
           " failed counter read(s)";
  out << interval_prefix(r) << "# (no cgroup): charged to none: " << why << '\n';
}

void print_rows(std::ostream& out, const CountingReport& r, bool big_num) {
  for (const auto& row : r.counters) print_row(out, r, row, big_num);
  print_uncharged(out, r, big_num);
}

// ---- --metric-only: one column per metric, one line per scope ----

// `lead`: what stands before the columns (blank, or "#           time" in interval mode),
// padded to the width of the rows' interval and aggregate fields.
void print_metric_only_header(std::ostream& out, const CountingReport& r,
                              const std::vector<MetricColumn>& cols, const std::string& lead) {
  const std::size_t width =
      interval_prefix(r).size() + (r.counters.empty() ? 0 : aggr_field(r, r.counters[0]).size());
  std::string line = pad_right(lead, width);
  for (const auto& c : cols)
    line += pad_left(c.title, std::max(kMetricOnlyWidth, c.title.size() + 1)) + " ";
  out << rstrip(line) << '\n';
}

void print_metric_only_rows(std::ostream& out, const CountingReport& r,
                            const std::vector<MetricColumn>& cols) {
  for (const auto& scope : metric_scopes(r)) {
    std::string line = interval_prefix(r) + aggr_field(r, *scope);
    for (const auto& c : cols) {
      const auto v = metric_column_value(r, c, *scope);
      const std::string text = v ? printf_value(c.format.c_str(), *v) : "n/a";
      line += pad_left(trim_copy(text), std::max(kMetricOnlyWidth, c.title.size() + 1)) + " ";
    }
    out << rstrip(line) << '\n';
  }
  for (const auto& m : r.metrics)
    if (!m.value) out << "  " << m.name << " not computed: " << m.why_not << '\n';
}

std::string target_phrase(const std::string& target) {
  for (const char* kind : {"process id ", "thread id "}) {
    const std::string k = kind;
    if (target.rfind(k, 0) == 0) return k + "'" + target.substr(k.size()) + "'";
  }
  return "'" + escape_bytes(target) + "'";
}

void print_footer(std::ostream& out, const CountingReport& r) {
  const double secs = static_cast<double>(r.elapsed_ns) / 1e9;
  out << '\n';
  if (r.elapsed_stddev_pct) {
    const double sd = secs * *r.elapsed_stddev_pct / 100.0;
    const int precision =
        (sd > 1 ? 0 : static_cast<int>(std::lround(std::ceil(-std::log10(sd))))) + 2;
    char buf[128];
    std::snprintf(buf, sizeof(buf), " %17.*f +- %.*f seconds time elapsed  ( +-%6.2f%% )",
                  precision, secs, precision, sd, *r.elapsed_stddev_pct);
    out << buf;
  } else {
    out << printf_value(" %17.9f seconds time elapsed", secs);
    if (r.user_ns && r.sys_ns)
      out << "\n\n"
          << printf_value(" %17.9f seconds user\n", static_cast<double>(*r.user_ns) / 1e9)
          << printf_value(" %17.9f seconds sys\n", static_cast<double>(*r.sys_ns) / 1e9);
  }
  out << "\n\n";
}

class TextRenderer : public ReportRenderer {
 public:
  TextRenderer(std::ostream& out, const RenderOptions& opts) : out_(out), opts_(opts) {}
  void interval(const CountingReport& report) override {
    if (!header_done_) {
      if (opts_.metric_only) {
        print_metric_only_header(out_, report, metric_columns(report), "#           time");
      } else {
        out_ << "#           time" << interval_aggr_header(report.aggr_mode)
             << "             counts unit events\n";
      }
      header_done_ = true;
    }
    if (opts_.metric_only)
      print_metric_only_rows(out_, report, metric_columns(report));
    else
      print_rows(out_, report, opts_.big_num);
    out_.flush();
  }
  void final(const CountingReport& report) override {
    CountingReport whole = report;
    whole.interval_s.reset();
    out_ << "\n Performance counter stats for " << target_phrase(report.target);
    if (report.runs > 1) out_ << " (" << report.runs << " runs)";
    out_ << ":\n\n";
    if (opts_.metric_only) {
      const auto cols = metric_columns(whole);
      print_metric_only_header(out_, whole, cols, "");
      print_metric_only_rows(out_, whole, cols);
    } else {
      print_rows(out_, whole, opts_.big_num);
    }
    print_footer(out_, whole);
    out_.flush();
  }

 private:
  std::ostream& out_;
  RenderOptions opts_;
  bool header_done_ = false;
};

}  // namespace

// perf's interval header after "#           time", by aggregation.
std::string interval_aggr_header(AggrMode mode) {
  switch (mode) {
    case AggrMode::global:
      return "";
    case AggrMode::cpu:
      return " CPU       ";
    case AggrMode::core:
      return " core            cpus";
    case AggrMode::die:
      return " die          cpus";
    case AggrMode::socket:
      return " socket cpus";
    case AggrMode::node:
      return " node   cpus";
    case AggrMode::thread:
      return "             comm-pid     ";
  }
  return {};
}

std::unique_ptr<ReportRenderer> make_text_renderer(std::ostream& out, const RenderOptions& opts) {
  return std::make_unique<TextRenderer>(out, opts);
}

std::string render_text(const CountingReport& report, const RenderOptions& opts) {
  std::ostringstream ss;
  make_text_renderer(ss, opts)->final(report);
  return ss.str();
}

}  // namespace pmcprof

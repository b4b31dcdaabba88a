// perf stat's text layout: value (18 wide, thousands separators), unit (4), event (32),
// then "# metric" and "(running%)" when the counter was multiplexed.
#include <cstdio>
#include <ostream>
#include <sstream>

#include "pmcprof/report/number_format.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr std::size_t kValueWidth = 18;
constexpr std::size_t kUnitWidth = 4;
constexpr std::size_t kEventWidth = 32;

std::string value_field(const CounterRow& row) {
  switch (row.status) {
    case CounterStatus::not_supported:
      return pad_left("<not supported>", kValueWidth);
    case CounterStatus::not_counted:
      return pad_left("<not counted>", kValueWidth);
    case CounterStatus::ok:
      break;
  }
  if (row.unit == "ns") return pad_left(format_grouped(row.value / 1e6, 2), kValueWidth);
  return pad_left(format_grouped(row.value, 0), kValueWidth);
}

std::string unit_field(const CounterRow& row) {
  return pad_right(row.unit == "ns" ? "msec" : "", kUnitWidth);
}

std::string metric_field(const CountingReport& report, const CounterRow& row) {
  auto m = derive_metric(report, row);
  if (!m) return {};
  char buf[96];
  if (m->percent)
    std::snprintf(buf, sizeof(buf), "#  %7.2f%% %s", m->value, m->unit.c_str());
  else
    std::snprintf(buf, sizeof(buf), "# %8.3f %s", m->value, m->unit.c_str());
  return buf;
}

std::string noise_field(const CounterRow& row) {
  if (!row.stddev_pct) return {};
  char buf[32];
  std::snprintf(buf, sizeof(buf), "( +-%6.2f%% )", *row.stddev_pct);
  return buf;
}

std::string counter_line(const CountingReport& report, const CounterRow& row) {
  std::string line;
  if (report.interval_s) {
    char t[32];
    std::snprintf(t, sizeof(t), "%16.9f ", *report.interval_s);
    line += t;
  }
  if (row.cpu) line += pad_right("CPU" + std::to_string(*row.cpu), 8);
  line += value_field(row) + " " + unit_field(row) + " " +
          pad_right(escape_bytes(row.event), kEventWidth);
  if (row.cgroup)
    line +=
        " " + pad_right(escape_bytes(*row.cgroup) + (row.cgroup_removed ? " (removed)" : ""), 24);
  std::string metric = metric_field(report, row);
  std::string noise = noise_field(row);
  bool multiplexed = row.status == CounterStatus::ok && row.running_pct < 100.0;
  if (!metric.empty())
    line += " " + pad_right(metric, 30);
  else if (!noise.empty() || multiplexed)
    line += " " + std::string(30, ' ');
  if (!noise.empty()) line += "  " + noise;
  if (multiplexed) {
    char pct[24];
    std::snprintf(pct, sizeof(pct), "  (%.2f%%)", row.running_pct);
    line += pct;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

void print_rows(std::ostream& out, const CountingReport& report) {
  for (const auto& row : report.counters) out << counter_line(report, row) << '\n';
}

void print_final(std::ostream& out, const CountingReport& report) {
  out << "\n Performance counter stats for '" << escape_bytes(report.target) << "'";
  if (report.runs > 1) out << " (" << report.runs << " runs)";
  out << ":\n\n";
  CountingReport whole = report;
  whole.interval_s.reset();
  print_rows(out, whole);
  char buf[128];
  const double secs = static_cast<double>(report.elapsed_ns) / 1e9;
  if (report.elapsed_stddev_pct) {
    std::snprintf(buf, sizeof(buf), "\n %17.9f seconds time elapsed  ( +-%6.2f%% )\n\n", secs,
                  *report.elapsed_stddev_pct);
  } else {
    std::snprintf(buf, sizeof(buf), "\n %17.9f seconds time elapsed\n\n", secs);
  }
  out << buf;
}

class TextRenderer : public ReportRenderer {
 public:
  explicit TextRenderer(std::ostream& out) : out_(out) {}
  void interval(const CountingReport& report) override {
    if (!header_done_) {
      out_ << "#           time "
           << (report.counters.empty() || !report.counters[0].cpu ? "" : "CPU     ")
           << "            counts unit events\n";
      header_done_ = true;
    }
    print_rows(out_, report);
    out_.flush();
  }
  void final(const CountingReport& report) override {
    print_final(out_, report);
    out_.flush();
  }

 private:
  std::ostream& out_;
  bool header_done_ = false;
};

}  // namespace

std::unique_ptr<ReportRenderer> make_text_renderer(std::ostream& out) {
  return std::make_unique<TextRenderer>(out);
}

std::string render_text(const CountingReport& report) {
  std::ostringstream ss;
  print_final(ss, report);
  return ss.str();
}

}  // namespace pmcprof

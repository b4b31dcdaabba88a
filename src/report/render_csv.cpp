// perf stat -x layout, no thousands separators:
//   [interval,][CPUn,]value,unit,event,[stddev%,]running_ns,running_pct,metric_value,metric_unit
#include <ostream>
#include <sstream>

#include "pmcprof/report/number_format.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

std::string csv_value(const CounterRow& row) {
  switch (row.status) {
    case CounterStatus::not_supported:
      return "<not supported>";
    case CounterStatus::not_counted:
      return "<not counted>";
    case CounterStatus::ok:
      break;
  }
  return row.unit == "ns" ? format_fixed(row.value / 1e6, 2) : format_fixed(row.value, 0);
}

void print_rows(std::ostream& out, const CountingReport& report, const std::string& sep,
                bool summary = false) {
  for (const auto& row : report.counters) {
    if (report.interval_s)
      out << format_fixed(*report.interval_s, 9) << sep;
    else if (summary)
      out << "summary" << sep;
    if (row.cpu) out << "CPU" << *row.cpu << sep;
    out << csv_value(row) << sep << (row.unit == "ns" ? "msec" : "") << sep
        << csv_field(row.event, sep) << sep;
    if (row.cgroup) out << csv_field(*row.cgroup, sep) << sep << row.cgroup_id.value_or(0) << sep;
    if (report.runs > 1)
      out << (row.stddev_pct ? format_fixed(*row.stddev_pct, 2) + "%" : "") << sep;
    out << row.running_ns << sep << format_fixed(row.running_pct, 2) << sep;
    if (auto m = derive_metric(report, row))
      out << format_fixed(m->value, m->percent ? 2 : 3) << sep << (m->percent ? "% " : "")
          << m->unit;
    else
      out << sep;
    out << '\n';
  }
}

class CsvRenderer : public ReportRenderer {
 public:
  CsvRenderer(std::ostream& out, std::string sep, bool intervals)
      : out_(out), sep_(std::move(sep)), intervals_(intervals) {}
  void interval(const CountingReport& report) override {
    print_rows(out_, report, sep_);
    out_.flush();
  }
  void final(const CountingReport& report) override {
    CountingReport whole = report;
    whole.interval_s.reset();
    print_rows(out_, whole, sep_, intervals_);
    out_.flush();
  }

 private:
  std::ostream& out_;
  std::string sep_;
  bool intervals_;
};

}  // namespace

std::unique_ptr<ReportRenderer> make_csv_renderer(std::ostream& out, std::string sep,
                                                  bool intervals) {
  return std::make_unique<CsvRenderer>(out, std::move(sep), intervals);
}

std::string render_csv(const CountingReport& report, const std::string& sep) {
  std::ostringstream ss;
  make_csv_renderer(ss, sep)->final(report);
  return ss.str();
}

std::unique_ptr<ReportRenderer> make_renderer(const RenderOptions& opts, std::ostream& out) {
  switch (opts.format) {
    case OutputFormat::csv:
      return make_csv_renderer(out, opts.csv_separator, opts.intervals);
    case OutputFormat::json:
      return make_json_renderer(out, opts.intervals);
    case OutputFormat::text:
      break;
  }
  return make_text_renderer(out);
}

}  // namespace pmcprof

#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/report/report.hpp"

namespace pmcprof {

enum class OutputFormat { text, csv, json };

// --hist-linear=MIN,MAX,STEP: rows of STEP from MIN to MAX (bpftrace's lhist), in each drawn
// quantity's unit; with time units (ns, us, ms, s) a range of times, in ns.
struct HistLinear {
  double min = 0, max = 0, step = 0;
  bool time = false;
  std::string text;  // as given, for the drawing's title
};

// --hist[=QUANTITIES] (function mode, text and CSV; JSON always carries the buckets): per-call
// histograms after each function's rows, log2 as bcc's funclatency draws them, or linear.
struct HistOptions {
  bool draw = false;
  // wall, oncpu, event names, metric names; empty: wall time and every event (the times among
  // them for a time range).
  std::vector<std::string> quantities;
  std::optional<HistLinear> linear;
};

struct RenderOptions {
  OutputFormat format = OutputFormat::text;
  std::string csv_separator = ",";
  // -I: interval records follow (then, with --summary, the summary). JSON is then NDJSON
  // from the first line, and CSV summary rows start with "summary" where interval rows have
  // their time (unless --no-csv-summary).
  bool intervals = false;
  bool csv_summary_prefix = true;  // --no-csv-summary clears it
  bool big_num = true;             // thousands separators in text (-B; --no-big-num clears it)
  bool metric_only = false;        // --metric-only: a table of metrics, no counts
  HistOptions hist;                // --hist, --hist-linear
};

// One data model, three renderers. A renderer may be fed interval reports (-I) and then one
// final report; it keeps what it needs between calls (text prints its column header once).
class ReportRenderer {
 public:
  virtual ~ReportRenderer() = default;
  virtual void interval(const CountingReport& report) = 0;
  virtual void final(const CountingReport& report) = 0;
};

std::unique_ptr<ReportRenderer> make_renderer(const RenderOptions& opts, std::ostream& out);

// Whole-report helpers (golden tests).
std::string render_text(const CountingReport& report, const RenderOptions& opts = {});
std::string render_csv(const CountingReport& report, const std::string& sep = ",",
                       const RenderOptions& opts = {});
std::string render_json(const CountingReport& report, const RenderOptions& opts = {});

std::unique_ptr<ReportRenderer> make_text_renderer(std::ostream& out,
                                                   const RenderOptions& opts = {});
std::unique_ptr<ReportRenderer> make_csv_renderer(std::ostream& out, const RenderOptions& opts);
std::unique_ptr<ReportRenderer> make_json_renderer(std::ostream& out, const RenderOptions& opts);

}  // namespace pmcprof

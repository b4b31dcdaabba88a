#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "pmcprof/report/func_report.hpp"
#include "pmcprof/report/render.hpp"

namespace pmcprof {

// A per-call quantity of a function row that --hist draws.
struct HistQuantity {
  std::string name;      // as --hist names it: wall, oncpu, the event, the metric
  std::string title;     // as the table names it: "wall time", "on-CPU time", the event, ...
  std::string csv_name;  // as CSV rows name it: "wall-time", "on-cpu-time", the event, "metric:M"
  std::string unit;      // "ns", "" for a count, a metric's unit
  const Histogram* histogram = nullptr;
  double resolution = 1;    // the value of one histogram step (a metric's fixed point)
  bool time = false;        // in ns: what a time range (--hist-linear=0,2ms,100us) applies to
  bool by_default = false;  // drawn by a bare --hist: wall time and the events
};

// The quantities of `f` that `o` selects: those named, in the order named; by default wall time
// and every event (with a time range, the times among them). A name `f` lacks is skipped (the
// command line checks names against the run's events before it starts).
std::vector<HistQuantity> hist_quantities(const FuncRow& f, const HistOptions& o);

// The histograms drawn after a function's rows in the text report ("" without --hist, and for
// a quantity without a measured call): per quantity a blank line, a title, and the rows as
// bcc's funclatency prints them, log2 or linear (histogram_view.hpp).
std::string func_hist_text(const FuncRow& f, const HistOptions& o);

// --hist with -x: after the usual rows, one row per drawn row:
//   [PREFIX]FUNCTION,BACKEND,KEY,hist,QUANTITY,UNIT,LOWER,UPPER,COUNT
// with LOWER inclusive and UPPER exclusive (empty: no bound), in the quantity's unit.
void func_hist_csv(std::ostream& out, const FuncRow& f, const HistOptions& o,
                   const std::string& sep, const std::string& prefix);

}  // namespace pmcprof

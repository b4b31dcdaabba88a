// --hist: the per-call histograms of a function row, drawn in text and listed in CSV.
#include "pmcprof/report/func_hist.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "pmcprof/report/histogram_view.hpp"
#include "pmcprof/report/number_format.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

// Every quantity of the row, in the table's order: wall, on-CPU, the events, the metrics.
std::vector<HistQuantity> all_quantities(const FuncRow& f) {
  std::vector<HistQuantity> all;
  all.push_back({"wall", "wall time", "wall-time", "ns", &f.wall_histogram, 1, true, true});
  all.push_back({"oncpu", "on-CPU time", "on-cpu-time", "ns", &f.oncpu_histogram, 1, true, false});
  for (const auto& e : f.events)
    all.push_back({e.event, e.event, e.event, e.unit, &e.histogram, 1, e.unit == "ns", true});
  for (const auto& m : f.metrics)
    if (m.per_call)
      all.push_back(
          {m.name, m.name, "metric:" + m.name, m.unit, &m.histogram, m.per_unit, false, false});
  return all;
}

// The rows drawn for one quantity: log2, or the linear range.
LinearRows quantity_rows(const HistQuantity& q, const HistOptions& o) {
  if (!o.linear) return {log2_rows(*q.histogram), false};
  return linear_rows(*q.histogram, *o.linear, q.resolution);
}

std::string calls_text(std::uint64_t n) {
  return format_grouped(static_cast<double>(n), 0) + (n == 1 ? " call" : " calls");
}

// The range column's heading: bcc's "nsecs" for times, else the quantity's name.
std::string column_of(const HistQuantity& q) {
  return q.unit == "ns" ? "nsecs" : escape_bytes(q.title);
}

std::string csv_bound(std::uint64_t raw, double resolution) {
  if (resolution == 1) return std::to_string(raw);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(raw) * resolution);
  return buf;
}

}  // namespace

std::vector<HistQuantity> hist_quantities(const FuncRow& f, const HistOptions& o) {
  const bool time_range = o.linear && o.linear->time;
  std::vector<HistQuantity> all = all_quantities(f);
  std::vector<HistQuantity> out;
  if (o.quantities.empty()) {
    for (const auto& q : all)
      if (q.by_default && (!time_range || q.time)) out.push_back(q);
    return out;
  }
  for (const auto& name : o.quantities) {
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& q) { return q.name == name; });
    if (it != all.end() && (!time_range || it->time)) out.push_back(*it);
  }
  return out;
}

std::string func_hist_text(const FuncRow& f, const HistOptions& o) {
  if (!o.draw) return {};
  std::string out;
  for (const auto& q : hist_quantities(f, o)) {
    const LinearRows drawn = quantity_rows(q, o);
    if (drawn.rows.empty()) continue;
    out += "\n   " + escape_bytes(q.title) + " per call (" + calls_text(q.histogram->count()) + ")";
    if (o.linear) out += ", linear " + o.linear->text;
    out += ":\n";
    // A linear edge inside a 2% bucket moved to its nearest bound: the ranges printed are the
    // ones counted, never a guess at how a bucket's calls spread.
    if (drawn.moved) out += "   (edges moved to the nearest bounds of the 2% buckets)\n";
    out += draw_rows(drawn.rows, column_of(q), q.resolution, "   ");
  }
  return out;
}

void func_hist_csv(std::ostream& out, const FuncRow& f, const HistOptions& o,
                   const std::string& sep, const std::string& prefix) {
  if (!o.draw) return;
  for (const auto& q : hist_quantities(f, o)) {
    for (const auto& row : quantity_rows(q, o).rows)
      out << prefix << csv_field(f.function, sep) << sep << f.backend << sep
          << csv_field(f.by_value, sep) << sep << "hist" << sep << csv_field(q.csv_name, sep) << sep
          << csv_field(q.unit, sep) << sep << csv_bound(row.lower, q.resolution) << sep
          << (row.upper ? csv_bound(*row.upper, q.resolution) : "") << sep << row.count << "\n";
  }
}

}  // namespace pmcprof

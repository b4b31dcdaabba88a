#pragma once

// `pmcprof diff BASELINE NEW`: two saved runs compared quantity by quantity, as perf diff
// compares two perf.data files, and each change judged against the noise (the rule below).
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/report/read_json.hpp"
#include "pmcprof/report/render.hpp"

namespace pmcprof {

// When a change is beyond the noise ("flagged"):
// - function mode, per-call quantities with their histograms: the Mann-Whitney U test on the
//   two runs' per-call buckets gives p < alpha, AND the Hodges-Lehmann shift (the median of the
//   differences new - baseline over all pairs of calls) is at least threshold_pct % of the
//   baseline's median, in the direction of the test. The test alone would flag a 0.5 % shift
//   of a million calls (CPU frequency, cache state: two runs of one workload show that much);
//   the shift alone would flag two runs of ten calls each.
// - counting mode, the means of -r runs: Welch's t-test on the two means and their standard
//   errors (stat -r's "+-") gives p < alpha, AND the means differ by at least threshold_pct %.
// Without histograms (files from before they were saved) or without -r runs, a change is shown
// and not judged ("not tested", with the reason).
struct DiffRule {
  double alpha = 0.001;
  double threshold_pct = 5;
};

// One run's figures of a quantity.
struct DiffFigures {
  CounterStatus status = CounterStatus::ok;
  std::uint64_t calls = 0;  // function mode: the function's calls
  bool per_call = true;     // function mode: a mean (it was called); percentiles with it
  bool percentiles = true;
  double mean = 0, p50 = 0, p99 = 0;
  double total = 0;  // function mode: over the calls; counting mode: the value (mean of -r runs)
  int runs = 1;      // counting mode: -r runs the value is the mean of
  std::optional<double> stddev_pct;  // counting mode: -r's relative standard error of the mean
};

enum class DiffStatus { changed, within_noise, not_tested, added, removed };
const char* to_string(DiffStatus s);  // "changed", "within-noise", "not-tested", "added", "removed"

struct DiffRow {
  // Function mode: the function (region, probe) and its --by key; the quantity is "wall time",
  // "on-CPU time" or an event's name.
  std::string function, backend, kind, by_value;
  // Counting mode: the event, and its scope ("CPU1", "S0-D0-C1", a cgroup's path; "" for the
  // whole run); the run's elapsed time is the quantity "elapsed".
  std::string scope;
  std::string quantity;
  std::string unit;                        // "ns" or "" (a count), or a sysfs unit
  std::optional<DiffFigures> base, fresh;  // absent: the row is only in the other run
  DiffStatus status = DiffStatus::not_tested;
  std::string why_not_tested;
  // The test: "mann-whitney-u" (with the Hodges-Lehmann shift) or "welch-t".
  std::string test;
  std::optional<double> p_value;
  std::optional<double> shift;          // new - baseline (function mode: Hodges-Lehmann)
  std::optional<double> shift_pct;      // of the baseline (its median; counting mode: its value)
  std::optional<double> prob_greater;   // P(a new call > a baseline call), ties half
  std::uint64_t n_base = 0, n_new = 0;  // calls (or runs) the test compared
  int direction = 0;                    // +1 up, -1 down (by the shift)
};

struct DiffSide {
  std::string name;    // as shown: 'a.json', standard input
  std::string file;    // as given
  std::string target;  // what was measured
  std::uint64_t timestamp_unix_ns = 0;
  std::uint64_t elapsed_ns = 0;
  int runs = 1;
};

struct DiffReport {
  RunMode mode = RunMode::counting;
  DiffSide base, fresh;
  DiffRule rule;
  std::string by;  // function mode: the --by key of the new run ("" without)
  std::vector<DiffRow> rows;
  std::vector<std::string> notes;  // what could not be judged, and why
  std::size_t flagged() const;
};

// Compares two saved runs of one mode (their report or summary). Throws UserError when the
// modes differ or a stream has no summary.
DiffReport diff_runs(const SavedRun& base, const DiffSide& base_side, const SavedRun& fresh,
                     const DiffSide& new_side, const DiffRule& rule);

// A perf diff-like text table (flagged rows marked), CSV (-x SEP, one row per quantity, a
// header line first) or JSON (schema pmcprof/1, type "diff").
void render_diff(const DiffReport& diff, const RenderOptions& opts, std::ostream& out);

}  // namespace pmcprof

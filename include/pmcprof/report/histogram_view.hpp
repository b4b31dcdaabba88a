#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmcprof/report/render.hpp"
#include "pmcprof/stream/histogram.hpp"

namespace pmcprof {

// The sparse form of a per-call histogram in pmcprof's JSON (docs/json.md, "buckets"): its
// non-empty buckets, ascending, each [lower, upper, count] with the lower bound inclusive and
// the upper exclusive, in the distribution's own unit: a bound is the bucket's bound times
// `resolution` (1 for ns and counts; a metric's fixed-point step). The open-ended last bucket
// has upper null. Counts are whole numbers; bounds are integers when `resolution` is 1.
nlohmann::ordered_json histogram_buckets_json(const Histogram& h, double resolution = 1);

// Reads that form back, bucket for bucket (the inverse of histogram_buckets_json with the same
// `resolution`), for `pmcprof report` and `pmcprof diff`. Throws UserError naming the first
// entry that is not one of pmcprof's buckets (bounds that are not a bucket's, not ascending, a
// count that is not a whole number), so a file edited by hand or from another version is
// refused rather than misread.
Histogram histogram_from_buckets(const nlohmann::json& buckets, double resolution = 1);
Histogram histogram_from_buckets(const nlohmann::ordered_json& buckets, double resolution = 1);

// ---- coarser rows, as --hist draws them ----

// The calls of a histogram with lower <= value < upper (no upper: no bound), in its raw unit
// (ns, counts, a metric's fixed-point steps).
struct HistRow {
  std::uint64_t lower = 0;
  std::optional<std::uint64_t> upper;
  std::uint64_t count = 0;
  bool operator==(const HistRow&) const = default;
};

// The histogram summed between `edges` (ascending, each a bucket bound): [0, edges[0]) when
// edges[0] > 0, [edges[i], edges[i+1]), and [edges.back(), no bound). Every bucket lies whole
// in one row, so each count is exact: no bucket is split or guessed at.
std::vector<HistRow> fold_buckets(const Histogram& h, const std::vector<std::uint64_t>& edges);

// Powers of two, as bcc and bpftrace draw latencies: [0, 1), [1, 2), [2, 4), ... [2^40, 2^41),
// and [2^41, no bound) (the last bucket, from 0.99 x 2^42, is open). Powers of two are bucket
// bounds: each row is an exact sum. Without the empty rows before the first call and after
// the last.
std::vector<HistRow> log2_rows(const Histogram& h);

// The bucket bound nearest `raw` (a tie goes to the lower), at most 1% away above 128, exact
// below; never past the open last bucket's lower bound.
std::uint64_t nearest_bucket_bound(double raw);

// --hist-linear rows: edges MIN, MIN + STEP, ... up to MAX (in the quantity's unit, `resolution`
// per raw unit), each moved to the nearest bucket bound so that no bucket is split (`moved`
// says whether any did: a row's bounds are then those printed, not the ones asked for), edges
// that fall on the same bound merged; the calls below MIN and from MAX up in a row each.
// Without the empty rows before the first call and after the last.
struct LinearRows {
  std::vector<HistRow> rows;
  bool moved = false;
};
LinearRows linear_rows(const Histogram& h, const HistLinear& range, double resolution = 1);

// The rows as bcc's funclatency prints them (stars scaled to the largest row, 40 wide):
//        nsecs               : count     distribution
//          8192 -> 16383      : 95       |****************************************|
// `column` heads the range column ("nsecs", an event); whole numbers (resolution 1) print as
// "lo -> hi" with hi inclusive, others as "[lo, hi)" in the quantity's unit. Each line starts
// with `indent`.
std::string draw_rows(const std::vector<HistRow>& rows, const std::string& column,
                      double resolution, const std::string& indent);

// Pretty-printed JSON (dump with an indent) with every array of plain values (numbers, null,
// booleans) on one line: a bucket reads [1024, 1048, 7] instead of taking five lines.
std::string compact_scalar_arrays(std::string_view pretty);

}  // namespace pmcprof

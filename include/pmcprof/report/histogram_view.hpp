#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

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

// Pretty-printed JSON (dump with an indent) with every array of plain values (numbers, null,
// booleans) on one line: a bucket reads [1024, 1048, 7] instead of taking five lines.
std::string compact_scalar_arrays(std::string_view pretty);

}  // namespace pmcprof

#include "pmcprof/stream/histogram.hpp"

#include <cmath>

#include "pmcprof.h"

namespace pmcprof {

static_assert(Histogram::kBuckets == PMCPROF_HIST_BUCKETS);

std::uint32_t Histogram::bucket_of(std::uint64_t v) {
  return pmcprof_hist_bucket(v);
}

std::uint64_t Histogram::bucket_lower(std::uint32_t b) {
  constexpr std::uint32_t per = 1u << PMCPROF_HIST_SUB_BITS;
  if (b < per) return b;
  const std::uint32_t exp = (b >> PMCPROF_HIST_SUB_BITS) + PMCPROF_HIST_SUB_BITS - 1;
  const std::uint64_t sub = b & (per - 1);
  return (per + sub) << (exp - PMCPROF_HIST_SUB_BITS);
}

std::uint64_t Histogram::bucket_upper(std::uint32_t b) {
  if (b + 1 >= kBuckets) return bucket_lower(b) + (bucket_lower(b) >> PMCPROF_HIST_SUB_BITS);
  return bucket_lower(b + 1);
}

void Histogram::add_bucket(std::uint32_t b, std::uint64_t n) {
  if (b >= kBuckets) b = kBuckets - 1;
  counts_[b] += n;
  total_ += n;
}

void Histogram::merge(const Histogram& o) {
  for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
  total_ += o.total_;
}

void Histogram::subtract(const Histogram& o) {
  total_ = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    counts_[i] = counts_[i] > o.counts_[i] ? counts_[i] - o.counts_[i] : 0;
    total_ += counts_[i];
  }
}

double Histogram::percentile(double p) const {
  if (total_ == 0) return 0;
  if (p < 0) p = 0;
  if (p > 1) p = 1;
  // Rank of the wanted value (1-based, nearest-rank), then its place inside its bucket.
  const double rank = std::max(1.0, std::ceil(p * static_cast<double>(total_)));
  std::uint64_t seen = 0;
  for (std::uint32_t b = 0; b < kBuckets; ++b) {
    if (counts_[b] == 0) continue;
    if (static_cast<double>(seen + counts_[b]) >= rank) {
      const double lo = static_cast<double>(bucket_lower(b));
      const double hi = static_cast<double>(bucket_upper(b));
      if (hi - lo <= 1) return lo;
      const double frac =
          (rank - static_cast<double>(seen) - 0.5) / static_cast<double>(counts_[b]);
      return lo + frac * (hi - lo);
    }
    seen += counts_[b];
  }
  return static_cast<double>(bucket_lower(kBuckets - 1));
}

}  // namespace pmcprof

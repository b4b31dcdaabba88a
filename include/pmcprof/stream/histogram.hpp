#pragma once

#include <array>
#include <cstdint>

namespace pmcprof {

// The log-linear histogram the BPF side keeps (bpf/pmcprof.h: exact below 4, then 4 buckets
// per power of two). Stream and kernel aggregation fill the same buckets, so their
// percentiles agree exactly; a percentile is interpolated within its bucket (±12.5%).
class Histogram {
 public:
  static constexpr std::size_t kBuckets = 160;

  static std::uint32_t bucket_of(std::uint64_t v);
  // Smallest value that falls in bucket b, and the first value past it.
  static std::uint64_t bucket_lower(std::uint32_t b);
  static std::uint64_t bucket_upper(std::uint32_t b);

  void add(std::uint64_t v, std::uint64_t n = 1) {
    counts_[bucket_of(v)] += n;
    total_ += n;
  }
  void add_bucket(std::uint32_t b, std::uint64_t n);
  void merge(const Histogram& o);
  void subtract(const Histogram& o);  // interval deltas; clamps at 0

  std::uint64_t count() const { return total_; }
  std::uint64_t bucket_count(std::uint32_t b) const { return b < kBuckets ? counts_[b] : 0; }
  // p in [0, 1]; 0 when empty.
  double percentile(double p) const;

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t total_ = 0;
};

}  // namespace pmcprof

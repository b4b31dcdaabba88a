#pragma once

#include <cstdint>
#include <vector>

namespace pmcprof {

// The histogram the BPF side keeps (bpf/pmcprof.h): exact below 128, then 42 buckets per
// power of two, each at most 2% wide; the last bucket is open-ended from 4,346,506,903,552
// (0.99 x 2^42). Stream and kernel aggregation fill the same buckets, so
// their percentiles agree exactly. A percentile is its bucket's representative value (within
// 1% of every value in the bucket), clamped to the exact min and max kept beside it.
// Storage is sparse by octave: a histogram costs memory only where it has values.
class Histogram {
 public:
  static constexpr std::uint32_t kBuckets = 128 + 42 * (42 - 7);

  static std::uint32_t bucket_of(std::uint64_t v);
  // Smallest value that falls in bucket b, and the first value past it (the last bucket
  // holds everything from 2^42 up: its upper bound is 2^64 - 1).
  static std::uint64_t bucket_lower(std::uint32_t b);
  static std::uint64_t bucket_upper(std::uint32_t b);
  // The value that stands for bucket b: the harmonic mean of its first and last value,
  // whose relative distance to any value in the bucket is at most 1%.
  static double representative(std::uint32_t b);

  void add(std::uint64_t v, std::uint64_t n = 1) { add_bucket(bucket_of(v), n); }
  void add_bucket(std::uint32_t b, std::uint64_t n);
  void merge(const Histogram& o);
  void subtract(const Histogram& o);  // interval deltas; clamps at 0

  std::uint64_t count() const { return total_; }
  std::uint64_t bucket_count(std::uint32_t b) const;
  // The non-empty buckets, ascending: what a sparse form (JSON, folding into coarser rows)
  // needs without walking all kBuckets.
  struct Bucket {
    std::uint32_t index;
    std::uint64_t count;
  };
  std::vector<Bucket> buckets() const;
  // Values below v, exact when v is a bucket boundary (powers of two are).
  std::uint64_t count_below(std::uint64_t v) const;
  // Nearest-rank percentile, p in [0, 1], clamped to [min, max]; 0 when empty.
  double percentile(double p, double min, double max) const;
  // Lowest and highest non-empty bucket's bounds (for views without exact min/max).
  double lowest_value() const;
  double highest_value() const;

 private:
  static constexpr std::uint32_t kExact = 128;
  static constexpr std::uint32_t kPerBlock = 42;
  static constexpr std::uint32_t kBlocks = 1 + (kBuckets - kExact) / kPerBlock;
  static std::uint32_t block_of(std::uint32_t b) {
    return b < kExact ? 0 : 1 + (b - kExact) / kPerBlock;
  }
  static std::uint32_t index_in_block(std::uint32_t b) {
    return b < kExact ? b : (b - kExact) % kPerBlock;
  }
  static std::uint32_t block_size(std::uint32_t block) { return block == 0 ? kExact : kPerBlock; }
  static std::uint32_t first_bucket(std::uint32_t block) {
    return block == 0 ? 0 : kExact + (block - 1) * kPerBlock;
  }
  std::vector<std::vector<std::uint64_t>> blocks_;  // empty until a value lands in it
  std::uint64_t total_ = 0;
};

}  // namespace pmcprof

// The log-linear histogram behind per-call percentiles (stream and kernel aggregation fill
// the same buckets, so their percentiles agree): exact below 128, then 42 buckets per power of
// two, each at most 2% wide; a percentile is its bucket's representative value (within 1% of
// every value in the bucket), clamped to the exact min and max kept beside the histogram.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "pmcprof/stream/histogram.hpp"

using pmcprof::Histogram;

namespace {

constexpr double kNoMin = 0;
constexpr double kNoMax = std::numeric_limits<double>::max();
// The last bucket: the top bucket of the octave [2^41, 2^42), open-ended so that it also
// holds every value from 2^42 up (PMCPROF_HIST_MAX_LOG2).
constexpr std::uint32_t kLast = Histogram::kBuckets - 1;

// A percentile without the min/max clamp: the bucket's representative itself.
double unclamped(const Histogram& h, double p) {
  return h.percentile(p, kNoMin, kNoMax);
}

void expect_within(double got, double want, double rel, const std::string& what) {
  EXPECT_LE(std::fabs(got - want), rel * want) << what << ": got " << got << ", want " << want;
}

Histogram uniform(std::uint64_t from, std::uint64_t to) {
  Histogram h;
  for (std::uint64_t v = from; v <= to; ++v) h.add(v);
  return h;
}

void expect_same_buckets(const Histogram& a, const Histogram& b) {
  EXPECT_EQ(a.count(), b.count());
  for (std::uint32_t k = 0; k < Histogram::kBuckets; ++k)
    ASSERT_EQ(a.bucket_count(k), b.bucket_count(k)) << "bucket " << k;
}

void expect_same_percentiles(const Histogram& a, const Histogram& b) {
  expect_same_buckets(a, b);
  for (double p : {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0})
    EXPECT_EQ(unclamped(a, p), unclamped(b, p)) << "p=" << p;
}

// Deterministic 64-bit generator (splitmix64), so failures reproduce.
struct SplitMix {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) / 9007199254740992.0; }  // [0, 1)
};

// p as an exact fraction, so the true nearest rank is computed without rounding.
struct Quantile {
  std::uint64_t num, den;
  double p() const { return static_cast<double>(num) / static_cast<double>(den); }
};
constexpr Quantile kQuantiles[] = {{0, 1},  {1, 100},  {1, 10},   {1, 4},      {1, 2}, {3, 4},
                                   {9, 10}, {95, 100}, {99, 100}, {999, 1000}, {1, 1}};

// Every quantile of `values` (through add) against the true nearest-rank value of the sorted
// data: within 1% of it, and inside the exact [min, max].
void expect_quantiles(std::vector<std::uint64_t> values, const std::string& what) {
  ASSERT_FALSE(values.empty());
  Histogram h;
  for (auto v : values) h.add(v);
  std::sort(values.begin(), values.end());
  const double min = static_cast<double>(values.front());
  const double max = static_cast<double>(values.back());
  const std::uint64_t n = values.size();
  for (const Quantile& q : kQuantiles) {
    const std::uint64_t rank = std::max<std::uint64_t>(1, (q.num * n + q.den - 1) / q.den);
    const double truth = static_cast<double>(values[rank - 1]);
    const double got = h.percentile(q.p(), min, max);
    const std::string where = what + " p=" + std::to_string(q.p());
    EXPECT_LE(std::fabs(got - truth), 0.01 * truth)
        << where << ": got " << got << ", true " << truth << " (rank " << rank << " of " << n
        << ")";
    EXPECT_GE(got, min) << where;
    EXPECT_LE(got, max) << where;
  }
}

}  // namespace

// ---- the buckets ----

TEST(HistogramBuckets, ExactBelow128) {
  for (std::uint64_t v = 0; v < 128; ++v) {
    const std::uint32_t b = Histogram::bucket_of(v);
    EXPECT_EQ(b, v);
    EXPECT_EQ(Histogram::bucket_lower(b), v);
    EXPECT_EQ(Histogram::bucket_upper(b), v + 1);
    EXPECT_EQ(Histogram::representative(b), static_cast<double>(v));
  }
  EXPECT_EQ(Histogram::bucket_of(128), 128u);
}

TEST(HistogramBuckets, FortyTwoPerOctave) {
  EXPECT_EQ(Histogram::kBuckets, 128u + 42u * (42u - 7u));
  for (unsigned e = 7; e < 42; ++e) {
    const std::uint32_t first = Histogram::bucket_of(1ULL << e);
    EXPECT_EQ(first, 128u + 42u * (e - 7)) << "2^" << e;
    EXPECT_EQ(Histogram::bucket_of((2ULL << e) - 1), first + 41) << "2^" << e + 1 << " - 1";
  }
}

TEST(HistogramBuckets, EveryBucketAtMostTwoPercentWide) {
  // upper / lower <= 1.02 (upper is the first value past the bucket); the last bucket is
  // open-ended by design (everything from ~0.99 * 2^42 ns, 72 minutes).
  double widest = 0;
  for (std::uint32_t b = 0; b < kLast; ++b) {
    const double lo = static_cast<double>(Histogram::bucket_lower(b));
    const double hi = static_cast<double>(Histogram::bucket_upper(b));
    ASSERT_GT(hi, lo) << b;
    if (b < 128) continue;  // one value each
    ASSERT_LE(hi / lo, 1.02 + 1e-15) << "bucket " << b << " [" << lo << ", " << hi << ")";
    widest = std::max(widest, hi / lo);
  }
  EXPECT_GT(widest, 1.015);  // the table is not trivially finer than documented
}

TEST(HistogramBuckets, RepresentativeWithinOnePercentOfEveryValue) {
  for (std::uint32_t b = 0; b < kLast; ++b) {
    const std::uint64_t lo = Histogram::bucket_lower(b);
    const std::uint64_t last = Histogram::bucket_upper(b) - 1;
    const double rep = Histogram::representative(b);
    ASSERT_GE(rep, static_cast<double>(lo)) << b;
    ASSERT_LE(rep, static_cast<double>(last)) << b;
    // The bounds are the worst case (the error grows toward both ends); sample inside too.
    const std::uint64_t step = std::max<std::uint64_t>(1, (last - lo) / 16);
    for (std::uint64_t v = lo;; v += step) {
      if (v > last) v = last;
      const double dv = static_cast<double>(v);
      if (v > 0) {
        ASSERT_LE(std::fabs(rep - dv), 0.01 * dv)
            << "bucket " << b << " value " << v << " representative " << rep;
      } else {
        ASSERT_EQ(rep, 0.0);
      }
      if (v == last) break;
    }
  }
}

TEST(HistogramBuckets, BoundsRoundTrip) {
  for (std::uint32_t b = 0; b < Histogram::kBuckets; ++b) {
    ASSERT_EQ(Histogram::bucket_of(Histogram::bucket_lower(b)), b) << b;
    ASSERT_EQ(Histogram::bucket_of(Histogram::bucket_upper(b) - 1), b) << b;
  }
}

TEST(HistogramBuckets, TileTheLine) {
  EXPECT_EQ(Histogram::bucket_lower(0), 0u);
  for (std::uint32_t b = 0; b + 1 < Histogram::kBuckets; ++b) {
    ASSERT_EQ(Histogram::bucket_upper(b), Histogram::bucket_lower(b + 1)) << b;
    ASSERT_EQ(Histogram::bucket_of(Histogram::bucket_upper(b)), b + 1) << b;
  }
  // The last bucket starts inside the last octave kept (it is that octave's top bucket) and
  // runs to the end of the line.
  EXPECT_EQ(Histogram::bucket_of((1ULL << 42) - 1), kLast);
  EXPECT_EQ(Histogram::bucket_of(1ULL << 42), kLast);
  EXPECT_GT(Histogram::bucket_lower(kLast), 1ULL << 41);
  EXPECT_LT(Histogram::bucket_lower(kLast), 1ULL << 42);
  EXPECT_EQ(Histogram::bucket_upper(kLast), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(Histogram::bucket_of(std::numeric_limits<std::uint64_t>::max()), kLast);
  EXPECT_EQ(Histogram::bucket_of(1ULL << 50), kLast);
}

TEST(HistogramBuckets, PowersOfTwoAreBoundaries) {
  // Up to 2^41, the start of the last octave kept (2^42 falls inside the open last bucket).
  for (unsigned k = 0; k <= 41; ++k) {
    const std::uint64_t p = 1ULL << k;
    EXPECT_EQ(Histogram::bucket_lower(Histogram::bucket_of(p)), p) << "2^" << k;
    if (p > 1) {
      EXPECT_EQ(Histogram::bucket_upper(Histogram::bucket_of(p - 1)), p) << "2^" << k;
    }
  }
  // So counts below a power of two are exact.
  const Histogram h = uniform(1, 100000);
  for (unsigned k = 0; k <= 16; ++k)
    EXPECT_EQ(h.count_below(1ULL << k), (1ULL << k) - 1) << "2^" << k;
  EXPECT_EQ(h.count_below(1ULL << 17), 100000u);
}

// ---- percentiles of known data: within 1% of the true nearest-rank value, inside [min, max] ----

TEST(HistogramQuantiles, IdenticalValuesAreExact) {
  // Issue 9: 20 calls of 2,003 instructions reported p50 = 1,913.6 (interpolated in a 25%
  // bucket). The exact min and max now pin every percentile to the value itself.
  Histogram h;
  for (int i = 0; i < 20; ++i) h.add(2003);
  for (double p : {0.0, 0.5, 0.9, 0.99, 1.0}) EXPECT_EQ(h.percentile(p, 2003, 2003), 2003.0) << p;
  expect_quantiles(std::vector<std::uint64_t>(20, 2003), "20 x 2003");
}

TEST(HistogramQuantiles, SingleValueIsExact) {
  // Issue 9: a single 48.59 us call reported p50 = 45.06 us.
  Histogram h;
  h.add(48590);
  for (double p : {0.0, 0.5, 0.9, 0.99, 1.0})
    EXPECT_EQ(h.percentile(p, 48590, 48590), 48590.0) << p;
  // Without the clamp: the bucket's representative, within 1%, inside the bucket.
  const std::uint32_t b = Histogram::bucket_of(48590);
  const double v = unclamped(h, 0.5);
  EXPECT_EQ(v, Histogram::representative(b));
  EXPECT_GE(v, static_cast<double>(Histogram::bucket_lower(b)));
  EXPECT_LT(v, static_cast<double>(Histogram::bucket_upper(b)));
  expect_within(v, 48590, 0.01, "single value, unclamped");
}

TEST(HistogramQuantiles, UniformOneToHundredThousand) {
  std::vector<std::uint64_t> values;
  for (std::uint64_t v = 1; v <= 100000; ++v) values.push_back(v);
  expect_quantiles(values, "uniform 1..100000");
}

TEST(HistogramQuantiles, UniformOneToThousand) {
  // Was within 12.5% (4 buckets per octave, interpolated); now within 1%.
  const Histogram h = uniform(1, 1000);
  EXPECT_EQ(h.count(), 1000u);
  expect_within(h.percentile(0.50, 1, 1000), 500, 0.01, "p50");
  expect_within(h.percentile(0.90, 1, 1000), 900, 0.01, "p90");
  expect_within(h.percentile(0.99, 1, 1000), 990, 0.01, "p99");
  EXPECT_EQ(h.percentile(0.0, 1, 1000), 1.0);
  EXPECT_EQ(h.percentile(1.0, 1, 1000), 1000.0);  // clamped to the exact max
}

TEST(HistogramQuantiles, Bimodal) {
  // 70% fast calls around 1 us, 30% slow ones around 1 ms: p50 in the first mode, p90 and
  // p99 in the second, and the rank at the edge (p70) the fast mode's last value.
  std::vector<std::uint64_t> values;
  SplitMix rng{11};
  for (int i = 0; i < 7000; ++i) values.push_back(900 + rng.next() % 201);
  for (int i = 0; i < 3000; ++i) values.push_back(950000 + rng.next() % 100001);
  expect_quantiles(values, "bimodal");
  Histogram h;
  for (auto v : values) h.add(v);
  const double min = static_cast<double>(*std::min_element(values.begin(), values.end()));
  const double max = static_cast<double>(*std::max_element(values.begin(), values.end()));
  EXPECT_LE(h.percentile(0.7, min, max), 1100 * 1.01);
  EXPECT_GE(h.percentile(0.7001, min, max), 950000 * 0.99);
}

TEST(HistogramQuantiles, Exponential) {
  std::vector<std::uint64_t> values;
  SplitMix rng{5};
  for (int i = 0; i < 100000; ++i)
    values.push_back(static_cast<std::uint64_t>(-50000.0 * std::log1p(-rng.unit())));
  expect_quantiles(values, "exponential mean 50000");
}

TEST(HistogramQuantiles, LogUniformAcrossOctaves) {
  // 10 ns .. 10 s: every octave's table is exercised.
  std::vector<std::uint64_t> values;
  SplitMix rng{17};
  for (int i = 0; i < 50000; ++i)
    values.push_back(
        static_cast<std::uint64_t>(std::exp(std::log(10.0) + rng.unit() * std::log(1e9))));
  expect_quantiles(values, "log-uniform 10..1e10");
}

TEST(HistogramQuantiles, SmallValuesAreExact) {
  // Below 128 every value has its bucket: percentiles are the data's own values.
  std::vector<std::uint64_t> values = {3, 3, 7, 9, 12, 12, 12, 40, 99, 127};
  Histogram h;
  for (auto v : values) h.add(v);
  EXPECT_EQ(h.percentile(0.5, 3, 127), 12.0);
  EXPECT_EQ(h.percentile(0.1, 3, 127), 3.0);
  EXPECT_EQ(h.percentile(0.9, 3, 127), 99.0);
  EXPECT_EQ(unclamped(h, 0.3), 7.0);
}

TEST(HistogramQuantiles, ClampedToMinAndMax) {
  // Values at the low end of their bucket and at the high end of another: the representative
  // would fall outside the data; the exact min/max keep the percentile inside it.
  Histogram h;
  const std::uint32_t b1 = Histogram::bucket_of(100000);
  const std::uint64_t low = Histogram::bucket_lower(b1);
  const std::uint32_t b2 = Histogram::bucket_of(5000000);
  const std::uint64_t high = Histogram::bucket_upper(b2) - 1;
  h.add(low, 3);
  h.add(high, 3);
  ASSERT_GT(Histogram::representative(b1), static_cast<double>(low));
  ASSERT_LT(Histogram::representative(b2), static_cast<double>(high));
  const double min = static_cast<double>(low), max = static_cast<double>(high);
  EXPECT_GE(h.percentile(0.0, min, max), min);  // the bucket's representative: within 1%
  EXPECT_LE(h.percentile(0.0, min, max), min * 1.01);
  EXPECT_EQ(h.percentile(0.5, min, max), Histogram::representative(b1));  // inside
  EXPECT_EQ(h.percentile(0.99, min, max), Histogram::representative(b2));
  EXPECT_EQ(h.percentile(1.0, min, max), Histogram::representative(b2));
  // A tighter max (all values at the bucket's lower edge) clamps the top.
  Histogram same;
  same.add(low, 5);
  for (double p : {0.0, 0.5, 1.0}) EXPECT_EQ(same.percentile(p, min, min), min) << p;
}

// ---- percentiles: general behaviour ----

TEST(Histogram, EmptyPercentileIsZero) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(unclamped(h, 0.0), 0.0);
  EXPECT_EQ(unclamped(h, 0.5), 0.0);
  EXPECT_EQ(unclamped(h, 0.99), 0.0);
  EXPECT_EQ(unclamped(h, 1.0), 0.0);
  EXPECT_EQ(h.percentile(0.5, 10, 20), 0.0);  // documented: 0 when empty, whatever min/max
  EXPECT_EQ(h.lowest_value(), 0.0);
  EXPECT_EQ(h.highest_value(), 0.0);
}

TEST(Histogram, SingleSmallValueIsExact) {
  Histogram h;
  h.add(3);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(unclamped(h, 0.0), 3.0);
  EXPECT_EQ(unclamped(h, 0.5), 3.0);
  EXPECT_EQ(unclamped(h, 1.0), 3.0);
}

TEST(Histogram, SingleValueWithinItsBucket) {
  // Was: within its bucket and 12.5%. Now: the bucket's representative, within 1% of the
  // value without min/max, and exactly the value with them.
  Histogram h;
  h.add(1000);
  const std::uint32_t b = Histogram::bucket_of(1000);
  for (double p : {0.0, 0.5, 0.9, 0.99, 1.0}) {
    const double v = unclamped(h, p);
    EXPECT_GE(v, static_cast<double>(Histogram::bucket_lower(b))) << p;
    EXPECT_LT(v, static_cast<double>(Histogram::bucket_upper(b))) << p;
    expect_within(v, 1000, 0.01, "single value");
    EXPECT_EQ(h.percentile(p, 1000, 1000), 1000.0) << p;
  }
}

TEST(Histogram, SingleZero) {
  Histogram h;
  h.add(0);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(unclamped(h, 0.5), 0.0);
  EXPECT_EQ(h.percentile(0.5, 0, 0), 0.0);
}

TEST(Histogram, PercentileClampsP) {
  const Histogram h = uniform(1, 1000);
  EXPECT_EQ(h.percentile(-1.0, 1, 1000), h.percentile(0.0, 1, 1000));
  EXPECT_EQ(h.percentile(2.0, 1, 1000), h.percentile(1.0, 1, 1000));
}

TEST(Histogram, PercentilesMonotonic) {
  Histogram h;
  for (std::uint64_t v = 1; v < 5000000; v = v * 3 / 2 + 1) h.add(v, v % 7 + 1);
  double prev = 0;
  for (int i = 0; i <= 1000; ++i) {
    const double v = unclamped(h, i / 1000.0);
    ASSERT_GE(v, prev) << "p=" << i / 1000.0;
    prev = v;
  }
}

TEST(Histogram, LowestAndHighestValueBracketTheData) {
  Histogram h;
  h.add(1000);
  h.add(2000);
  h.add(3);
  EXPECT_EQ(h.lowest_value(), 3.0);
  EXPECT_EQ(h.highest_value(),
            static_cast<double>(Histogram::bucket_upper(Histogram::bucket_of(2000)) - 1));
  EXPECT_GE(h.highest_value(), 2000.0);
  EXPECT_LE(h.highest_value(), 2000.0 * 1.02);
  Histogram huge;
  huge.add(1ULL << 50);
  // The open-ended last bucket has no upper value: its lower bound stands for it.
  EXPECT_EQ(huge.highest_value(), static_cast<double>(Histogram::bucket_lower(kLast)));
  EXPECT_EQ(huge.lowest_value(), static_cast<double>(Histogram::bucket_lower(kLast)));
}

TEST(Histogram, AddWithCount) {
  Histogram a, b;
  a.add(777, 5);
  for (int i = 0; i < 5; ++i) b.add(777);
  expect_same_percentiles(a, b);
  EXPECT_EQ(a.count(), 5u);
  EXPECT_EQ(a.bucket_count(Histogram::bucket_of(777)), 5u);
}

TEST(Histogram, MergeEqualsAddingBoth) {
  Histogram lo = uniform(1, 100);
  const Histogram hi = uniform(101, 200);
  lo.merge(hi);
  const Histogram both = uniform(1, 200);
  EXPECT_EQ(lo.count(), 200u);
  expect_same_percentiles(lo, both);
  expect_within(lo.percentile(0.5, 1, 200), 100, 0.01, "merged p50");
}

TEST(Histogram, MergeAcrossSparseBlocks) {
  // Storage is sparse by octave: merging histograms whose values live in different octaves
  // (and the exact block) keeps every bucket.
  Histogram a, b, all;
  for (std::uint64_t v : {5ULL, 300ULL, 1ULL << 30}) a.add(v), all.add(v);
  for (std::uint64_t v : {7ULL, 70000ULL, (1ULL << 40) + 12345}) b.add(v), all.add(v);
  a.merge(b);
  expect_same_percentiles(a, all);
}

TEST(Histogram, MergeEmpty) {
  Histogram h = uniform(1, 100);
  const Histogram before = h;
  h.merge(Histogram{});
  expect_same_percentiles(h, before);
  Histogram e;
  e.merge(before);
  expect_same_percentiles(e, before);
}

TEST(Histogram, SubtractUndoesMerge) {
  const Histogram first = uniform(1, 100);
  Histogram all = uniform(1, 100);
  all.merge(uniform(5000, 6000));
  ASSERT_EQ(all.count(), 1101u);
  Histogram interval = all;
  interval.subtract(first);  // what arrived since `first` was taken
  EXPECT_EQ(interval.count(), 1001u);
  expect_same_percentiles(interval, uniform(5000, 6000));
  all.subtract(uniform(5000, 6000));
  expect_same_percentiles(all, first);
}

TEST(Histogram, SubtractClampsAtZero) {
  Histogram small = uniform(1, 10);
  small.subtract(uniform(1, 1000));
  EXPECT_EQ(small.count(), 0u);
  EXPECT_EQ(unclamped(small, 0.5), 0.0);

  // Partial overlap: only the buckets that had more survive; count follows the buckets.
  Histogram a;
  a.add(2, 3);
  a.add(1000, 2);
  Histogram b;
  b.add(2, 5);
  a.subtract(b);
  EXPECT_EQ(a.count(), 2u);
  EXPECT_EQ(a.bucket_count(Histogram::bucket_of(2)), 0u);
  expect_within(unclamped(a, 0.0), 1000, 0.01, "survivor");
}

TEST(Histogram, AddBucket) {
  Histogram h;
  h.add_bucket(Histogram::bucket_of(500), 10);
  EXPECT_EQ(h.count(), 10u);
  const double p = unclamped(h, 0.5);
  EXPECT_GE(p, static_cast<double>(Histogram::bucket_lower(Histogram::bucket_of(500))));
  EXPECT_LT(p, static_cast<double>(Histogram::bucket_upper(Histogram::bucket_of(500))));
  h.add_bucket(3, 0);  // nothing added
  EXPECT_EQ(h.count(), 10u);
  EXPECT_EQ(h.bucket_count(3), 0u);
}

TEST(Histogram, AddBucketOutOfRangeClampsToLast) {
  Histogram a, b;
  a.add_bucket(Histogram::kBuckets + 10, 3);
  b.add_bucket(kLast, 3);
  expect_same_percentiles(a, b);
  EXPECT_EQ(a.bucket_count(kLast), 3u);
  EXPECT_EQ(a.bucket_count(Histogram::kBuckets + 10), 0u);
  EXPECT_GE(unclamped(a, 0.5), static_cast<double>(Histogram::bucket_lower(kLast)));
}

TEST(Histogram, AddAndAddBucketAgree) {
  // The stream side calls add(v); the kernel side counts bucket_of(v) (pmcprof_hist_bucket)
  // and user space replays it with add_bucket. Same buckets, same percentiles.
  std::vector<std::uint64_t> values;
  std::uint64_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    values.push_back((x >> 20) % (1ULL << (i % 42)));
  }
  values.push_back(0);
  values.push_back(~0ULL);
  Histogram via_add, via_bucket;
  for (std::uint64_t v : values) {
    via_add.add(v);
    via_bucket.add_bucket(Histogram::bucket_of(v), 1);
  }
  expect_same_percentiles(via_add, via_bucket);
  EXPECT_EQ(via_add.count(), values.size());
}

TEST(Histogram, HugeValuesLandInLastBucket) {
  Histogram h;
  h.add(1ULL << 50);
  h.add(~0ULL);
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(Histogram::bucket_of(1ULL << 50), kLast);
  EXPECT_EQ(h.bucket_count(kLast), 2u);
  EXPECT_GE(unclamped(h, 1.0), static_cast<double>(Histogram::bucket_lower(kLast)));
  // The last bucket is open-ended (its representative is its lower bound): the 1% bound does
  // not hold there, but the exact min and max still keep every percentile inside the data.
  const double min = static_cast<double>(1ULL << 50), max = static_cast<double>(~0ULL);
  for (double p : {0.0, 0.5, 1.0}) {
    EXPECT_GE(h.percentile(p, min, max), min) << p;
    EXPECT_LE(h.percentile(p, min, max), max) << p;
  }
}

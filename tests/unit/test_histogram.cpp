// The log-linear histogram behind per-call percentiles (stream and kernel aggregation fill
// the same buckets, so their percentiles agree).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "pmcprof/stream/histogram.hpp"

using pmcprof::Histogram;

namespace {

void expect_within(double got, double want, double rel, const char* what) {
  EXPECT_LE(std::fabs(got - want), rel * want) << what << ": got " << got << ", want " << want;
}

Histogram uniform(std::uint64_t from, std::uint64_t to) {
  Histogram h;
  for (std::uint64_t v = from; v <= to; ++v) h.add(v);
  return h;
}

void expect_same_percentiles(const Histogram& a, const Histogram& b) {
  EXPECT_EQ(a.count(), b.count());
  for (double p : {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0})
    EXPECT_EQ(a.percentile(p), b.percentile(p)) << "p=" << p;
}

}  // namespace

TEST(Histogram, EmptyPercentileIsZero) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(0.0), 0.0);
  EXPECT_EQ(h.percentile(0.5), 0.0);
  EXPECT_EQ(h.percentile(0.99), 0.0);
  EXPECT_EQ(h.percentile(1.0), 0.0);
}

TEST(Histogram, SingleSmallValueIsExact) {
  Histogram h;
  h.add(3);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.percentile(0.0), 3.0);
  EXPECT_EQ(h.percentile(0.5), 3.0);
  EXPECT_EQ(h.percentile(1.0), 3.0);
}

TEST(Histogram, SingleValueWithinItsBucket) {
  Histogram h;
  h.add(1000);
  const std::uint32_t b = Histogram::bucket_of(1000);
  for (double p : {0.0, 0.5, 0.9, 0.99, 1.0}) {
    const double v = h.percentile(p);
    EXPECT_GE(v, static_cast<double>(Histogram::bucket_lower(b))) << p;
    EXPECT_LT(v, static_cast<double>(Histogram::bucket_upper(b))) << p;
    expect_within(v, 1000, 0.125, "single value");
  }
}

TEST(Histogram, SingleZero) {
  Histogram h;
  h.add(0);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.percentile(0.5), 0.0);
}

TEST(Histogram, UniformOneToThousand) {
  const Histogram h = uniform(1, 1000);
  EXPECT_EQ(h.count(), 1000u);
  expect_within(h.percentile(0.50), 500, 0.125, "p50");
  expect_within(h.percentile(0.90), 900, 0.125, "p90");
  expect_within(h.percentile(0.99), 990, 0.125, "p99");
  EXPECT_LE(h.percentile(0.50), h.percentile(0.90));
  EXPECT_LE(h.percentile(0.90), h.percentile(0.99));
  EXPECT_LE(h.percentile(0.99), h.percentile(1.0));
  EXPECT_GE(h.percentile(0.0), 1.0);
  EXPECT_LE(h.percentile(1.0), 1000 * 1.125);
}

TEST(Histogram, PercentileClampsP) {
  const Histogram h = uniform(1, 1000);
  EXPECT_EQ(h.percentile(-1.0), h.percentile(0.0));
  EXPECT_EQ(h.percentile(2.0), h.percentile(1.0));
}

TEST(Histogram, PercentilesMonotonic) {
  Histogram h;
  for (std::uint64_t v = 1; v < 5000000; v = v * 3 / 2 + 1) h.add(v, v % 7 + 1);
  double prev = 0;
  for (int i = 0; i <= 1000; ++i) {
    const double v = h.percentile(i / 1000.0);
    ASSERT_GE(v, prev) << "p=" << i / 1000.0;
    prev = v;
  }
}

TEST(Histogram, AddWithCount) {
  Histogram a, b;
  a.add(777, 5);
  for (int i = 0; i < 5; ++i) b.add(777);
  expect_same_percentiles(a, b);
  EXPECT_EQ(a.count(), 5u);
}

TEST(Histogram, MergeEqualsAddingBoth) {
  Histogram lo = uniform(1, 100);
  const Histogram hi = uniform(101, 200);
  lo.merge(hi);
  const Histogram both = uniform(1, 200);
  EXPECT_EQ(lo.count(), 200u);
  expect_same_percentiles(lo, both);
  expect_within(lo.percentile(0.5), 100, 0.125, "merged p50");
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
  EXPECT_EQ(small.percentile(0.5), 0.0);

  // Partial overlap: only the buckets that had more survive; count follows the buckets.
  Histogram a;
  a.add(2, 3);
  a.add(1000, 2);
  Histogram b;
  b.add(2, 5);
  a.subtract(b);
  EXPECT_EQ(a.count(), 2u);
  expect_within(a.percentile(0.0), 1000, 0.125, "survivor");
}

TEST(Histogram, AddBucket) {
  Histogram h;
  h.add_bucket(Histogram::bucket_of(500), 10);
  EXPECT_EQ(h.count(), 10u);
  const double p = h.percentile(0.5);
  EXPECT_GE(p, static_cast<double>(Histogram::bucket_lower(Histogram::bucket_of(500))));
  EXPECT_LT(p, static_cast<double>(Histogram::bucket_upper(Histogram::bucket_of(500))));
}

TEST(Histogram, AddBucketOutOfRangeClampsToLast) {
  Histogram a, b;
  a.add_bucket(Histogram::kBuckets + 10, 3);
  b.add_bucket(Histogram::kBuckets - 1, 3);
  expect_same_percentiles(a, b);
  EXPECT_GE(a.percentile(0.5),
            static_cast<double>(Histogram::bucket_lower(Histogram::kBuckets - 1)));
}

TEST(Histogram, AddAndAddBucketAgree) {
  // The stream side calls add(v); the kernel side counts bucket_of(v) (pmcprof_hist_bucket)
  // and user space replays it with add_bucket. Same buckets, same percentiles.
  std::vector<std::uint64_t> values;
  std::uint64_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    values.push_back((x >> 20) % (1ULL << (i % 44)));
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
  EXPECT_EQ(Histogram::bucket_of(1ULL << 50), Histogram::kBuckets - 1);
  EXPECT_GE(h.percentile(1.0),
            static_cast<double>(Histogram::bucket_lower(Histogram::kBuckets - 1)));
}

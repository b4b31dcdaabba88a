// Views of the per-call histogram: the JSON buckets every distribution carries (and the reader
// `pmcprof report` and `pmcprof diff` use to get the histogram back).
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "pmcprof/report/histogram_view.hpp"
#include "pmcprof/stream/histogram.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;
using nlohmann::json;

namespace {

constexpr std::uint32_t kLast = Histogram::kBuckets - 1;
constexpr double kMetricStep = 1.0 / (1 << 20);  // a ratio's fixed point (IPC, CPUs utilized)

void expect_same_buckets(const Histogram& a, const Histogram& b) {
  ASSERT_EQ(a.count(), b.count());
  for (std::uint32_t k = 0; k < Histogram::kBuckets; ++k)
    ASSERT_EQ(a.bucket_count(k), b.bucket_count(k)) << "bucket " << k;
}

// Values in the exact range, in the 2% buckets of many octaves, and in the open last bucket.
Histogram spread() {
  Histogram h;
  h.add(0, 3);
  h.add(1);
  h.add(127, 2);
  h.add(128);
  h.add(10000, 7);
  h.add(1000000, 5);
  h.add(1000001);  // the same bucket as 1,000,000
  h.add(std::uint64_t{1} << 40);
  h.add(std::uint64_t{1} << 50, 4);  // past 2^42: the open-ended last bucket
  return h;
}

// Serialized and parsed again, as a file written by -j and read by `pmcprof report` is.
json through_text(const nlohmann::ordered_json& j) {
  return json::parse(j.dump());
}

}  // namespace

TEST(HistogramBuckets, ListsNonEmptyBucketsAscendingWithTheirBounds) {
  Histogram h;
  h.add(5, 2);
  h.add(1000000, 3);
  const auto j = histogram_buckets_json(h);
  const std::uint32_t b = Histogram::bucket_of(1000000);
  const auto want =
      nlohmann::ordered_json::parse("[[5, 6, 2], [" + std::to_string(Histogram::bucket_lower(b)) +
                                    ", " + std::to_string(Histogram::bucket_upper(b)) + ", 3]]");
  EXPECT_EQ(j, want) << j.dump();
  // Bounds are integers (no "5.0"), and the bucket holds the value.
  EXPECT_TRUE(j[1][0].is_number_unsigned());
  EXPECT_LE(j[1][0].get<std::uint64_t>(), 1000000u);
  EXPECT_GT(j[1][1].get<std::uint64_t>(), 1000000u);
}

TEST(HistogramBuckets, EmptyHistogramIsAnEmptyArray) {
  EXPECT_EQ(histogram_buckets_json(Histogram{}).dump(), "[]");
}

TEST(HistogramBuckets, OpenLastBucketHasNullUpper) {
  Histogram h;
  h.add(std::uint64_t{1} << 50);
  const auto j = histogram_buckets_json(h);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0][0].get<std::uint64_t>(), Histogram::bucket_lower(kLast));
  EXPECT_TRUE(j[0][1].is_null());
  EXPECT_EQ(j[0][2], 1);
}

TEST(HistogramBuckets, MetricBoundsAreFixedPointTimesResolution) {
  Histogram h;
  h.add(std::uint64_t{1} << 20, 4);  // a ratio of exactly 1
  const auto j = histogram_buckets_json(h, kMetricStep);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_DOUBLE_EQ(j[0][0].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(
      j[0][1].get<double>(),
      static_cast<double>(Histogram::bucket_upper(Histogram::bucket_of(1u << 20))) * kMetricStep);
  EXPECT_EQ(j[0][2], 4);
}

TEST(HistogramBuckets, RoundTripIsBucketForBucket) {
  const Histogram h = spread();
  expect_same_buckets(histogram_from_buckets(through_text(histogram_buckets_json(h))), h);
  expect_same_buckets(histogram_from_buckets(histogram_buckets_json(h)), h);  // ordered_json
}

TEST(HistogramBuckets, RoundTripOfEveryBucket) {
  Histogram h;
  for (std::uint32_t b = 0; b < Histogram::kBuckets; ++b) h.add_bucket(b, b + 1);
  expect_same_buckets(histogram_from_buckets(through_text(histogram_buckets_json(h))), h);
}

TEST(HistogramBuckets, MetricRoundTrip) {
  const Histogram h = spread();
  for (double resolution : {kMetricStep, 100 * kMetricStep, 1000 * kMetricStep}) {
    const json j = through_text(histogram_buckets_json(h, resolution));
    expect_same_buckets(histogram_from_buckets(j, resolution), h);
  }
}

TEST(HistogramBuckets, RefusesWhatIsNotPmcprofsBuckets) {
  const auto refused = [](const char* text, const std::string& why) {
    try {
      (void)histogram_from_buckets(json::parse(text));
      ADD_FAILURE() << text << " was accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_FALSE(e.hint().empty());
    }
  };
  refused("{}", "is not an array");
  refused("[[1, 2]]", "is not [lower, upper, count]");
  refused("[[1, 2, 3, 4]]", "is not [lower, upper, count]");
  refused("[[\"1\", 2, 3]]", "has no lower bound");
  refused("[[-1, 0, 3]]", "has no lower bound");
  refused("[[128, 140, 1]]", "is not a bucket");   // 140 is not the bucket's upper bound
  refused("[[129, 131, 1]]", "is not a bucket");   // 129 is inside [128, 130)
  refused("[[128, null, 1]]", "is not a bucket");  // only the last bucket is open
  refused("[[5, 6, -1]]", "has no count");
  refused("[[5, 6, 1.5]]", "has no count");
  refused("[[7, 8, 1], [5, 6, 1]]", "is not above the entry before it");
  refused("[[5, 6, 1], [5, 6, 1]]", "is not above the entry before it");
  refused("[[1e30, null, 1]]", "past the histogram's range");
}

TEST(HistogramBuckets, ReadsTheOpenLastBucket) {
  const std::string text = "[[" + std::to_string(Histogram::bucket_lower(kLast)) + ", null, 9]]";
  const Histogram h = histogram_from_buckets(json::parse(text));
  EXPECT_EQ(h.bucket_count(kLast), 9u);
  EXPECT_EQ(h.count(), 9u);
}

TEST(HistogramSparse, BucketsAreTheNonEmptyOnesAscending) {
  const Histogram h = spread();
  const auto buckets = h.buckets();
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_GT(buckets[i].count, 0u);
    EXPECT_EQ(buckets[i].count, h.bucket_count(buckets[i].index));
    if (i) {
      EXPECT_GT(buckets[i].index, buckets[i - 1].index);
    }
    total += buckets[i].count;
  }
  EXPECT_EQ(total, h.count());
  EXPECT_EQ(buckets.size(), 8u);  // 1,000,000 and 1,000,001 share a bucket
  EXPECT_TRUE(Histogram{}.buckets().empty());
}

TEST(CompactScalarArrays, PutsArraysOfPlainValuesOnOneLine) {
  nlohmann::ordered_json j;
  j["buckets"] = histogram_buckets_json(spread());
  j["args"] = nlohmann::ordered_json::array({1, "a [tricky] \"string\"", nullptr});
  j["nested"] = nlohmann::ordered_json::array({nlohmann::ordered_json::array({1, 2}), 3});
  j["empty"] = nlohmann::ordered_json::array();
  const std::string pretty = j.dump(2);
  const std::string compact = compact_scalar_arrays(pretty);
  EXPECT_NE(compact.find("    [0, 1, 3],\n    [1, 2, 1],\n"), std::string::npos) << compact;
  EXPECT_NE(compact.find(", null, 4]\n  ],"), std::string::npos) << compact;  // the last bucket
  // Arrays holding strings or arrays keep their lines; inner plain arrays are compacted.
  EXPECT_NE(compact.find("\"args\": [\n    1,\n"), std::string::npos) << compact;
  EXPECT_NE(compact.find("\"nested\": [\n    [1, 2],\n    3\n  ]"), std::string::npos) << compact;
  EXPECT_NE(compact.find("\"empty\": []"), std::string::npos) << compact;
  // The same document.
  EXPECT_EQ(nlohmann::ordered_json::parse(compact), j);
}

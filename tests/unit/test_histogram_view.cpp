// Views of the per-call histogram: the JSON buckets every distribution carries (and the reader
// `pmcprof report` and `pmcprof diff` use to get the histogram back).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pmcprof/report/histogram_view.hpp"
#include "pmcprof/stream/histogram.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

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

// ---- rows: log2 and linear, each an exact sum of whole buckets ----

namespace {

// Deterministic values over many octaves (splitmix64), and their histogram.
std::vector<std::uint64_t> sample_values() {
  std::vector<std::uint64_t> v;
  std::uint64_t s = 42;
  for (int i = 0; i < 20000; ++i) {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    v.push_back(z >> (z % 64));  // every magnitude from 0 to 2^64
  }
  return v;
}

Histogram histogram_of(const std::vector<std::uint64_t>& values) {
  Histogram h;
  for (auto v : values) h.add(v);
  return h;
}

// The values in [lower, upper), counted one by one.
std::uint64_t brute_count(const std::vector<std::uint64_t>& values, const HistRow& row) {
  std::uint64_t n = 0;
  for (auto v : values) n += v >= row.lower && (!row.upper || v < *row.upper);
  return n;
}

bool is_bucket_bound(std::uint64_t v) {
  return Histogram::bucket_lower(Histogram::bucket_of(v)) == v;
}

}  // namespace

// Powers of two are bucket bounds, so no bucket straddles a log2 row: every bucket below the
// open last one lies in one octave.
TEST(HistogramRows, PowersOfTwoAreBucketBounds) {
  for (int k = 0; k <= 41; ++k) EXPECT_TRUE(is_bucket_bound(std::uint64_t{1} << k)) << k;
  for (std::uint32_t b = 1; b + 1 < Histogram::kBuckets; ++b) {
    const std::uint64_t lo = Histogram::bucket_lower(b), last = Histogram::bucket_upper(b) - 1;
    EXPECT_EQ(std::bit_width(lo), std::bit_width(last)) << "bucket " << b;
  }
}

TEST(HistogramRows, Log2RowsCountEveryValueExactly) {
  const auto values = sample_values();
  const auto rows = log2_rows(histogram_of(values));
  ASSERT_FALSE(rows.empty());
  std::uint64_t total = 0;
  for (const auto& r : rows) {
    EXPECT_EQ(r.count, brute_count(values, r)) << r.lower;
    total += r.count;
  }
  EXPECT_EQ(total, values.size());
  EXPECT_EQ(rows.front(), (HistRow{0, 1, brute_count(values, {0, 1, 0})}));
  // The last row holds the open bucket (values from 0.99 x 2^42): it has no upper bound.
  EXPECT_EQ(rows.back().lower, std::uint64_t{1} << 41);
  EXPECT_FALSE(rows.back().upper);
  for (std::size_t i = 1; i + 1 < rows.size(); ++i)
    EXPECT_EQ(*rows[i].upper, 2 * rows[i].lower) << i;
}

TEST(HistogramRows, Log2TrimsEmptyRowsAtBothEndsNotBetween) {
  Histogram h;
  h.add(10000, 5);    // [8192, 16384)
  h.add(1000000, 3);  // [524288, 1048576)
  const auto rows = log2_rows(h);
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows.front(), (HistRow{8192, 16384, 5}));
  EXPECT_EQ(rows.back(), (HistRow{524288, 1048576, 3}));
  for (std::size_t i = 1; i + 1 < rows.size(); ++i) EXPECT_EQ(rows[i].count, 0u);
  EXPECT_TRUE(log2_rows(Histogram{}).empty());
}

TEST(HistogramRows, NearestBucketBoundIsWithinOnePercent) {
  for (double raw : {0.0, 1.0, 99.5, 127.0, 128.0, 129.0, 1000.0, 99999.0, 1e6, 3.3e9, 1e12}) {
    const std::uint64_t b = nearest_bucket_bound(raw);
    EXPECT_TRUE(is_bucket_bound(b)) << raw;
    EXPECT_LE(std::fabs(static_cast<double>(b) - raw), 0.01 * raw + 0.5) << raw;
  }
  EXPECT_EQ(nearest_bucket_bound(100000), 99840u);  // in [99840, 101888): nearer its lower
  EXPECT_EQ(nearest_bucket_bound(1e30), Histogram::bucket_lower(kLast));
  EXPECT_EQ(nearest_bucket_bound(-5), 0u);
}

// Below 128 every value is a bucket: a linear range there is exact, edges where asked.
TEST(HistogramRows, LinearRowsBelow128AreExact) {
  std::vector<std::uint64_t> values;
  for (std::uint64_t v = 0; v < 200; ++v) values.push_back(v % 130);
  const Histogram h = histogram_of(values);
  const LinearRows lin = linear_rows(h, {20, 100, 10, false, "20,100,10"});
  EXPECT_FALSE(lin.moved);
  ASSERT_EQ(lin.rows.size(), 10u);  // below 20, eight of 10, from 100 up
  EXPECT_EQ(lin.rows.front(), (HistRow{0, 20, brute_count(values, {0, 20, 0})}));
  EXPECT_EQ(lin.rows[1], (HistRow{20, 30, 20}));  // 20..29 and 150..159 (% 130)
  EXPECT_EQ(lin.rows.back().lower, 100u);
  EXPECT_FALSE(lin.rows.back().upper);
  std::uint64_t total = 0;
  for (const auto& r : lin.rows) {
    EXPECT_EQ(r.count, brute_count(values, r));
    total += r.count;
  }
  EXPECT_EQ(total, values.size());
}

// Above 128, an edge inside a 2% bucket moves to the bucket's nearest bound: the rows' bounds
// are those counted, every count exact for the bounds printed.
TEST(HistogramRows, LinearEdgesMoveToBucketBoundsAndCountExactly) {
  const auto values = sample_values();
  const Histogram h = histogram_of(values);
  const LinearRows lin = linear_rows(h, {0, 2000000, 100000, true, "0,2ms,100us"});
  EXPECT_TRUE(lin.moved);
  std::uint64_t total = 0;
  for (const auto& r : lin.rows) {
    EXPECT_TRUE(is_bucket_bound(r.lower)) << r.lower;
    if (r.upper) {
      EXPECT_TRUE(is_bucket_bound(*r.upper)) << *r.upper;
      // Each edge within 1% of the one asked for.
      const double asked = std::round(static_cast<double>(*r.upper) / 100000) * 100000;
      EXPECT_LE(std::fabs(static_cast<double>(*r.upper) - asked), 0.01 * asked) << *r.upper;
    }
    EXPECT_EQ(r.count, brute_count(values, r)) << r.lower;
    total += r.count;
  }
  EXPECT_EQ(total, values.size());
  EXPECT_EQ(lin.rows[1], (HistRow{99840, 199680, brute_count(values, {99840, 199680, 0})}));
}

// A STEP finer than the buckets there: edges that fall on the same bound make one row.
TEST(HistogramRows, LinearEdgesOnOneBoundMerge) {
  Histogram h;
  h.add(1000000, 4);
  const LinearRows lin = linear_rows(h, {990000, 1010000, 10, false, "990000,1010000,10"});
  ASSERT_EQ(lin.rows.size(), 1u);
  EXPECT_EQ(lin.rows[0].count, 4u);
  EXPECT_TRUE(is_bucket_bound(lin.rows[0].lower));
  EXPECT_EQ(*lin.rows[0].upper - lin.rows[0].lower,
            Histogram::bucket_upper(Histogram::bucket_of(1000000)) -
                Histogram::bucket_lower(Histogram::bucket_of(1000000)));
}

// A metric's values are fixed point: the range is in the metric's unit.
TEST(HistogramRows, LinearRowsOfAMetric) {
  Histogram h;
  h.add(std::uint64_t{1} << 19, 2);  // 0.5
  h.add(std::uint64_t{3} << 19, 5);  // 1.5
  const LinearRows lin = linear_rows(h, {0, 2, 0.5, false, "0,2,0.5"}, kMetricStep);
  EXPECT_FALSE(lin.moved);  // 0.5 steps are bucket bounds
  ASSERT_EQ(lin.rows.size(), 3u);
  EXPECT_EQ(lin.rows[0], (HistRow{1u << 19, 1u << 20, 2}));
  EXPECT_EQ(lin.rows[1], (HistRow{1u << 20, 3u << 19, 0}));
  EXPECT_EQ(lin.rows[2], (HistRow{3u << 19, 1u << 21, 5}));
}

// ---- drawing: bcc's funclatency layout ----

TEST(HistogramDraw, Log2AsBccPrintsIt) {
  Histogram h;
  h.add(10000, 95);
  h.add(20000, 5);
  h.add(1000000, 100);
  const std::string want =
      "        nsecs               : count     distribution\n"
      "         8192 -> 16383      : 95       |**************************************  |\n"
      "        16384 -> 32767      : 5        |**                                      |\n"
      "        32768 -> 65535      : 0        |                                        |\n"
      "        65536 -> 131071     : 0        |                                        |\n"
      "       131072 -> 262143     : 0        |                                        |\n"
      "       262144 -> 524287     : 0        |                                        |\n"
      "       524288 -> 1048575    : 100      |****************************************|\n";
  EXPECT_EQ(draw_rows(log2_rows(h), "nsecs", 1, "   "), want);
}

TEST(HistogramDraw, WideNumbersAndOpenRows) {
  Histogram h;
  h.add(std::uint64_t{1} << 50, 1);  // the open last bucket
  h.add(std::uint64_t{1} << 40, 2);
  const std::string drawn = draw_rows(log2_rows(h), "instructions", 1, "");
  EXPECT_NE(drawn.find("\n1099511627776 -> 2199023255551 : 2        |****"), std::string::npos)
      << drawn;
  EXPECT_NE(drawn.find("\n2199023255552 -> ...           : 1        |****"), std::string::npos)
      << drawn;
  // The header's " : " above the rows'.
  const auto lines = split(drawn, '\n');
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0].find(" : "), lines[1].find(" : ")) << drawn;
  EXPECT_EQ(lines[0].find(" : "), lines[2].find(" : ")) << drawn;
  EXPECT_EQ(lines[0].find("instructions"), 5u) << drawn;
}

TEST(HistogramDraw, MetricRangesAreHalfOpen) {
  Histogram h;
  h.add(std::uint64_t{1} << 20, 3);  // 1.0
  const std::string drawn = draw_rows(log2_rows(h), "IPC", kMetricStep, "");
  EXPECT_EQ(drawn,
            "     IPC                 : count     distribution\n"
            "                  [1, 2) : 3        |****************************************|\n");
}

TEST(HistogramDraw, NothingToDraw) {
  EXPECT_EQ(draw_rows({}, "nsecs", 1, "   "), "");
}

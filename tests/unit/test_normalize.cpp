// The math bpf/pmcprof.h shares between the BPF programs and user space: multiplexing
// normalization (c * e / r without 128-bit arithmetic), log2, and the histogram bucket.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "../../bpf/pmcprof.h"
#include "pmcprof/stream/histogram.hpp"

using pmcprof::Histogram;

namespace {

long double reference(std::uint64_t c, std::uint64_t e, std::uint64_t r) {
  return static_cast<long double>(c) * static_cast<long double>(e) / static_cast<long double>(r);
}

double rel_error(std::uint64_t got, long double want) {
  if (want == 0) return got == 0 ? 0 : 1;
  return static_cast<double>(std::fabs((static_cast<long double>(got) - want) / want));
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
  // Uniform-ish in [lo, hi].
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + next() % (hi - lo + 1); }
};

}  // namespace

// ---- pmcprof_normalize / pmcprof_scale ----

TEST(Normalize, RunningZeroMeansNotCountedReturnsRaw) {
  EXPECT_EQ(pmcprof_normalize(12345, 1000, 0), 12345u);
  EXPECT_EQ(pmcprof_normalize(0, 0, 0), 0u);
  EXPECT_EQ(pmcprof_normalize(7, 1ULL << 40, 0), 7u);
}

TEST(Normalize, RunningAtLeastEnabledIsExact) {
  EXPECT_EQ(pmcprof_normalize(12345, 1000, 1000), 12345u);
  // running > enabled happens with rounding between the two clocks: never scale down.
  EXPECT_EQ(pmcprof_normalize(12345, 1000, 1001), 12345u);
  EXPECT_EQ(pmcprof_normalize(12345, 0, 5), 12345u);
  const std::uint64_t big = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(pmcprof_normalize(big, big, big), big);
}

TEST(Normalize, SmallValuesExact) {
  EXPECT_EQ(pmcprof_normalize(1000, 300, 100), 3000u);
  EXPECT_EQ(pmcprof_normalize(7, 3, 2), 10u);  // floor(21 / 2)
  EXPECT_EQ(pmcprof_normalize(0, 300, 100), 0u);
  // Exhaustive over a small cube: floor(c * e / r) exactly.
  for (std::uint64_t c = 0; c <= 300; ++c)
    for (std::uint64_t e = 2; e <= 64; ++e)
      for (std::uint64_t r = 1; r < e; ++r)
        ASSERT_EQ(pmcprof_normalize(c, e, r), c * e / r) << "c=" << c << " e=" << e << " r=" << r;
}

TEST(Normalize, ExactBelowTwoTo32) {
  // e < 2^32: no shifting, the quotient/remainder split is exact (floor of c*e/r).
  SplitMix rng{42};
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t e = rng.between(2, (1ULL << 32) - 1);
    const std::uint64_t r = rng.between(1, e - 1);
    const std::uint64_t c = rng.between(0, 1ULL << 32);
    const unsigned __int128 want =
        static_cast<unsigned __int128>(c) * static_cast<unsigned __int128>(e) / r;
    ASSERT_LE(want, static_cast<unsigned __int128>(std::numeric_limits<std::uint64_t>::max()));
    ASSERT_EQ(pmcprof_normalize(c, e, r), static_cast<std::uint64_t>(want))
        << "c=" << c << " e=" << e << " r=" << r;
  }
}

TEST(Normalize, HugeValuesMatchLongDouble) {
  const std::uint64_t c = 1000000000000ULL;  // 1e12
  const std::uint64_t e = 30000000000ULL;    // 3e10 ns > 2^32
  const std::uint64_t r = 10000000000ULL;    // 1e10
  const std::uint64_t got = pmcprof_normalize(c, e, r);
  EXPECT_LT(rel_error(got, reference(c, e, r)), 1e-9) << got;
  EXPECT_EQ(got, 3000000000000ULL);
}

TEST(Normalize, EnabledAtLeastTwoTo32) {
  // e >= 2^32 takes the path that shifts e and r down together.
  struct Case {
    std::uint64_t c, e, r;
  };
  for (const Case& k :
       {Case{1000, 1ULL << 32, 1ULL << 31}, Case{123456789, (1ULL << 32) + 1, (1ULL << 31) + 7},
        Case{5000000000ULL, 10000000000ULL, 2500000000ULL},
        Case{1ULL << 40, 1ULL << 40, 1ULL << 39}, Case{999999937, 60000000000ULL, 59999999999ULL},
        Case{1ULL << 40, (1ULL << 40) - 1, 1ULL << 36}}) {
    const std::uint64_t got = pmcprof_normalize(k.c, k.e, k.r);
    EXPECT_LT(rel_error(got, reference(k.c, k.e, k.r)), 1e-6)
        << "c=" << k.c << " e=" << k.e << " r=" << k.r << " got=" << got;
  }
  EXPECT_EQ(pmcprof_normalize(1000, 1ULL << 32, 1ULL << 31), 2000u);
  EXPECT_EQ(pmcprof_normalize(1ULL << 40, 1ULL << 40, 1ULL << 39), 1ULL << 41);
}

TEST(Normalize, NoOverflowUpToTwoTo40) {
  // c, e, r up to 2^40 (18 minutes of enabled time, a trillion events), e/r up to 2^20 so the
  // exact result (<= 2^60) fits: a wrapped 64-bit product would be off by orders of magnitude.
  SplitMix rng{7};
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t e = rng.between(2, 1ULL << 40);
    const std::uint64_t min_r = std::max<std::uint64_t>(1, e >> 20);
    if (min_r >= e) continue;
    const std::uint64_t r = rng.between(min_r, e - 1);
    const std::uint64_t c = rng.between(0, 1ULL << 40);
    const std::uint64_t got = pmcprof_normalize(c, e, r);
    // After shifting e below 2^32, r keeps >= 2^11 significant bits here.
    ASSERT_LT(rel_error(got, reference(c, e, r)), 1e-3)
        << "c=" << c << " e=" << e << " r=" << r << " got=" << got;
  }
  // The corners.
  const std::uint64_t t40 = 1ULL << 40;
  EXPECT_LT(rel_error(pmcprof_normalize(t40, t40, t40 >> 20), reference(t40, t40, t40 >> 20)),
            1e-9);
  EXPECT_LT(rel_error(pmcprof_normalize(t40, t40, t40 - 1), reference(t40, t40, t40 - 1)), 1e-6);
  EXPECT_LT(rel_error(pmcprof_normalize(t40 - 1, t40 - 3, (t40 >> 1) + 12345),
                      reference(t40 - 1, t40 - 3, (t40 >> 1) + 12345)),
            1e-6);
}

TEST(Normalize, TinyRunningAgainstHugeEnabledStillScales) {
  // A segment enabled 2^40 ns that ran 256 ns: 1000 counts scale to 1000 * 2^32. Shifting e
  // below 2^32 must not shift r down to 0 (which would silently return the raw count).
  const std::uint64_t c = 1000, e = 1ULL << 40, r = 256;
  const std::uint64_t got = pmcprof_normalize(c, e, r);
  EXPECT_LT(rel_error(got, reference(c, e, r)), 1e-2) << "got " << got << ", want " << c * (e / r);
}

TEST(Normalize, ScaleDirect) {
  EXPECT_EQ(pmcprof_scale(10, 4, 2), 20u);
  EXPECT_EQ(pmcprof_scale(3, 10, 3), 10u);
  EXPECT_EQ(pmcprof_scale(std::numeric_limits<std::uint32_t>::max(), 3, 1),
            3ULL * std::numeric_limits<std::uint32_t>::max());
}

// ---- pmcprof_log2 ----

TEST(Log2, PowersOfTwoAndNeighbours) {
  EXPECT_EQ(pmcprof_log2(0), 0u);
  EXPECT_EQ(pmcprof_log2(1), 0u);
  for (unsigned k = 1; k < 64; ++k) {
    const std::uint64_t p = 1ULL << k;
    EXPECT_EQ(pmcprof_log2(p), k) << "2^" << k;
    EXPECT_EQ(pmcprof_log2(p - 1), k - 1) << "2^" << k << "-1";
    EXPECT_EQ(pmcprof_log2(p + 1), k) << "2^" << k << "+1";
    EXPECT_EQ(pmcprof_log2(p | (p >> 1)), k) << "1.5 * 2^" << k;
  }
  EXPECT_EQ(pmcprof_log2(std::numeric_limits<std::uint64_t>::max()), 63u);
}

TEST(Log2, MatchesBitWidth) {
  SplitMix rng{3};
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t v = rng.next() >> (rng.next() % 64);
    if (v == 0) continue;
    EXPECT_EQ(pmcprof_log2(v), 63u - static_cast<unsigned>(__builtin_clzll(v))) << v;
  }
}

// ---- pmcprof_sqrt_up: the noise floor of k nested calls grows as ceil(sqrt(k)) ----

TEST(SqrtUp, SquaresAndNeighbours) {
  EXPECT_EQ(pmcprof_sqrt_up(0), 0u);
  EXPECT_EQ(pmcprof_sqrt_up(1), 1u);
  EXPECT_EQ(pmcprof_sqrt_up(2), 2u);
  EXPECT_EQ(pmcprof_sqrt_up(4), 2u);
  EXPECT_EQ(pmcprof_sqrt_up(5), 3u);
  for (std::uint64_t r = 2; r <= 65535; r += (r < 300 ? 1 : 97)) {
    const auto sq = static_cast<std::uint32_t>(r * r);
    EXPECT_EQ(pmcprof_sqrt_up(sq), r) << r << "^2";
    EXPECT_EQ(pmcprof_sqrt_up(sq - 1), r) << r << "^2-1";
    EXPECT_EQ(pmcprof_sqrt_up(sq + 1), r + 1) << r << "^2+1";
  }
  EXPECT_EQ(pmcprof_sqrt_up(65535u * 65535u), 65535u);
  EXPECT_EQ(pmcprof_sqrt_up(std::numeric_limits<std::uint32_t>::max()), 65536u);
}

TEST(SqrtUp, MatchesTheRealRootRoundedUp) {
  SplitMix rng{5};
  for (int i = 0; i < 10000; ++i) {
    const auto k = static_cast<std::uint32_t>(rng.next() >> (32 + rng.next() % 32));
    const auto r = static_cast<std::uint64_t>(pmcprof_sqrt_up(k));
    EXPECT_GE(r * r, k) << k;
    if (r > 0) {
      EXPECT_LT((r - 1) * (r - 1), k) << k;
    }
  }
}

// ---- pmcprof_hist_bucket vs Histogram::bucket_lower / bucket_upper ----
// (test_histogram.cpp checks the buckets' widths, representatives and percentiles.)

TEST(HistBucket, ExactBelow128) {
  // Was: exact below 4, then 4 buckets per octave. Now exact below 128, then 42 per octave.
  for (std::uint64_t v = 0; v < 128; ++v) EXPECT_EQ(pmcprof_hist_bucket(v), v);
  EXPECT_EQ(pmcprof_hist_bucket(128), 128u);  // [128, 130)
  EXPECT_EQ(pmcprof_hist_bucket(129), 128u);
  EXPECT_EQ(pmcprof_hist_bucket(130), 129u);
  EXPECT_EQ(pmcprof_hist_bucket(255), 128u + 41u);  // last bucket of the octave
  EXPECT_EQ(pmcprof_hist_bucket(256), 128u + 42u);
}

TEST(HistBucket, StepTableIsMonotonicAndCoversTheOctave) {
  // pmcprof_hist_step_bucket maps 128 steps to 42 buckets: from 0, never decreasing, never
  // skipping, ending at 41.
  EXPECT_EQ(pmcprof_hist_step_bucket[0], 0u);
  EXPECT_EQ(pmcprof_hist_step_bucket[PMCPROF_HIST_EXACT - 1], PMCPROF_HIST_PER_OCTAVE - 1u);
  for (unsigned s = 1; s < PMCPROF_HIST_EXACT; ++s) {
    const unsigned d = pmcprof_hist_step_bucket[s] - pmcprof_hist_step_bucket[s - 1];
    EXPECT_TRUE(d == 0 || d == 1) << "step " << s;
  }
}

TEST(HistBucket, MonotonicSweep) {
  std::uint32_t prev = pmcprof_hist_bucket(0);
  for (std::uint64_t v = 1; v <= (1u << 20); ++v) {
    const std::uint32_t b = pmcprof_hist_bucket(v);
    ASSERT_GE(b, prev) << v;
    ASSERT_LE(b, prev + 1) << v;  // no bucket skipped
    prev = b;
  }
  // Geometric sweep up to 2^64 - 1: never decreasing, always in range.
  std::uint64_t v = 1u << 20;
  prev = pmcprof_hist_bucket(v);
  while (true) {
    const std::uint64_t step = std::max<std::uint64_t>(1, v / 97);
    if (v > std::numeric_limits<std::uint64_t>::max() - step) break;
    v += step;
    const std::uint32_t b = pmcprof_hist_bucket(v);
    ASSERT_GE(b, prev) << v;
    ASSERT_LT(b, static_cast<std::uint32_t>(PMCPROF_HIST_BUCKETS)) << v;
    prev = b;
  }
  EXPECT_EQ(pmcprof_hist_bucket(std::numeric_limits<std::uint64_t>::max()),
            static_cast<std::uint32_t>(PMCPROF_HIST_BUCKETS - 1));
}

TEST(HistBucket, RelativeWidthAtMostTwoPercent) {
  // Was at most 25% (4 per octave); the table's buckets are at most 2% wide.
  for (std::uint32_t b = PMCPROF_HIST_EXACT; b + 1 < PMCPROF_HIST_BUCKETS; ++b) {
    const double lo = static_cast<double>(Histogram::bucket_lower(b));
    const double hi = static_cast<double>(Histogram::bucket_upper(b));
    EXPECT_GT(hi, lo) << b;
    EXPECT_LE((hi - lo) / lo, 0.02 + 1e-12) << b;
  }
}

TEST(HistBucket, BoundariesAgreeWithHistogram) {
  static_assert(Histogram::kBuckets == PMCPROF_HIST_BUCKETS);
  EXPECT_EQ(Histogram::bucket_lower(0), 0u);
  for (std::uint32_t b = 0; b < PMCPROF_HIST_BUCKETS; ++b) {
    const std::uint64_t lo = Histogram::bucket_lower(b);
    const std::uint64_t hi = Histogram::bucket_upper(b);
    ASSERT_LT(lo, hi) << b;
    EXPECT_EQ(pmcprof_hist_bucket(lo), b) << "lower(" << b << ")=" << lo;
    EXPECT_EQ(pmcprof_hist_bucket(hi - 1), b) << "upper(" << b << ")-1=" << hi - 1;
    EXPECT_EQ(Histogram::bucket_of(lo), b);
    if (b + 1 < PMCPROF_HIST_BUCKETS) {
      EXPECT_EQ(hi, Histogram::bucket_lower(b + 1)) << b;  // buckets tile the line
      EXPECT_EQ(pmcprof_hist_bucket(hi), b + 1) << "upper(" << b << ")=" << hi;
      // Every value in a small bucket; a spread of values in a large one.
      const std::uint64_t width = hi - lo;
      const std::uint64_t step = width <= 64 ? 1 : width / 61;
      for (std::uint64_t v = lo; v < hi; v += step)
        ASSERT_EQ(pmcprof_hist_bucket(v), b) << "v=" << v << " in [" << lo << ", " << hi << ")";
    }
  }
  // The last bucket is open-ended: everything at or past its lower bound lands there.
  const std::uint32_t last = PMCPROF_HIST_BUCKETS - 1;
  EXPECT_EQ(pmcprof_hist_bucket(Histogram::bucket_lower(last) * 4), last);
}

// pmcprof diff's statistics on synthetic histograms: the U test against values worked out by
// hand (and with the textbook tie correction), the Hodges-Lehmann shift against known shifts,
// and the cases the effect-size threshold is there for: a tiny shift over a million calls is
// significant but small; outliers and a reshuffle between two unmoved modes do not move it.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>

#include "pmcprof/report/statistics.hpp"

using namespace pmcprof;

namespace {

Histogram of(std::initializer_list<std::uint64_t> values) {
  Histogram h;
  for (auto v : values) h.add(v);
  return h;
}

// n calls spread evenly (in rank) over [lo, hi]: a smooth distribution of per-call times.
Histogram spread(std::uint64_t n, double lo, double hi, std::uint64_t copies = 1) {
  Histogram h;
  for (std::uint64_t i = 0; i < n; ++i)
    h.add(static_cast<std::uint64_t>(std::llround(lo + (hi - lo) * (static_cast<double>(i) + 0.5) /
                                                           static_cast<double>(n))),
          copies);
  return h;
}

}  // namespace

TEST(MannWhitneyU, AgreesWithTheTextbookFormula) {
  // Exact values (below 128 every value is its own bucket): U = 9, z = 1.7457, p = 0.08086.
  auto t = mann_whitney_u(of({1, 2, 3}), of({4, 5, 6}));
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->u, 9);
  EXPECT_DOUBLE_EQ(t->prob_greater, 1);
  EXPECT_NEAR(t->z, 1.7457431218879391, 1e-12);
  EXPECT_NEAR(t->p_value, 0.0808555983700523, 1e-12);
  // Ties in both: U = 16.5 (ties count half), the tie-corrected variance: p = 0.13496.
  t = mann_whitney_u(of({1, 1, 2, 5}), of({2, 3, 3, 7, 7}));
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->u, 16.5);
  EXPECT_NEAR(t->z, 1.4948186373673196, 1e-12);
  EXPECT_NEAR(t->p_value, 0.13496178094138137, 1e-12);
  // Mirrored: the sign turns, p does not.
  auto back = mann_whitney_u(of({2, 3, 3, 7, 7}), of({1, 1, 2, 5}));
  EXPECT_NEAR(back->z, -t->z, 1e-12);
  EXPECT_NEAR(back->p_value, t->p_value, 1e-12);
}

TEST(MannWhitneyU, ValuesInOneBucketAreTies) {
  // 1,000,000 and 1,000,500 are in one 2 % bucket: nothing to tell apart.
  Histogram a, b;
  a.add(1000000, 5000);
  b.add(1000500, 5000);
  auto t = mann_whitney_u(a, b);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->p_value, 1);
  EXPECT_DOUBLE_EQ(t->prob_greater, 0.5);
  EXPECT_FALSE(mann_whitney_u(a, Histogram{}));
}

TEST(MannWhitneyU, SameDistributionIsNotSignificant) {
  const Histogram a = spread(10000, 90000, 110000);
  auto t = mann_whitney_u(a, a);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->prob_greater, 0.5);
  EXPECT_GT(t->p_value, 0.99);
}

TEST(HodgesLehmann, FindsAShiftAcrossBuckets) {
  // 2x slower: every call 100 us -> 200 us, spread +-10 %.
  const Histogram base = spread(5000, 90000, 110000);
  const Histogram slow = spread(5000, 180000, 220000);
  const auto shift = hodges_lehmann_shift(base, slow);
  ASSERT_TRUE(shift);
  EXPECT_NEAR(*shift, 100000, 2000);  // within the 2 % buckets
  EXPECT_NEAR(*hodges_lehmann_shift(slow, base), -*shift, 1);
  EXPECT_EQ(*hodges_lehmann_shift(base, base), 0);
  auto t = mann_whitney_u(base, slow);
  EXPECT_LT(t->p_value, 1e-100);
  EXPECT_DOUBLE_EQ(t->prob_greater, 1);
}

TEST(HodgesLehmann, ExactValuesAndAnEvenSplit) {
  EXPECT_NEAR(*hodges_lehmann_shift(of({5, 5, 5}), of({8, 8, 8})), 3, 1e-6);
  // Differences 0 and 2, half each: the middle, 1.
  EXPECT_NEAR(*hodges_lehmann_shift(of({5}), of({5, 7})), 1, 1e-6);
  EXPECT_FALSE(hodges_lehmann_shift(Histogram{}, of({1})));
}

TEST(HodgesLehmann, MovesSmoothlyWithAShiftSmallerThanABucket) {
  const Histogram base = spread(20000, 95000, 105000);
  for (double pct : {0.5, 1.0, 1.5}) {
    const Histogram moved = spread(20000, 95000 * (1 + pct / 100), 105000 * (1 + pct / 100));
    const double shift = *hodges_lehmann_shift(base, moved);
    EXPECT_NEAR(100 * shift / 100000, pct, 0.35) << pct;
  }
}

// Why significance is not enough: a 0.5 % shift of a million calls, as two runs of one workload
// show from the CPU's clock alone, is beyond any doubt, and 0.5 %.
TEST(DiffRule, AMillionCallsMakeATinyShiftSignificantButItStaysTiny) {
  const Histogram base = spread(10000, 95000, 105000, 100);
  const Histogram moved = spread(10000, 95000 * 1.005, 105000 * 1.005, 100);
  ASSERT_EQ(base.count(), 1000000u);
  auto t = mann_whitney_u(base, moved);
  EXPECT_LT(t->p_value, 1e-6);
  EXPECT_NEAR(100 * *hodges_lehmann_shift(base, moved) / 100000, 0.5, 0.3);
}

TEST(DiffRule, OutliersDoNotMoveTheShift) {
  // The same calls, and 10 % of them preempted for 10 ms in the new run: the mean doubles, the
  // U test notices, the shift of the typical call stays within 1 % (the 10 % of pairs with an
  // outlier move the median of the differences to their 56th percentile: +0.57 us).
  Histogram base = spread(9000, 95000, 105000);
  base.merge(spread(1000, 95000, 105000));
  Histogram preempted = spread(9000, 95000, 105000);
  preempted.merge(spread(1000, 10000000, 11000000));
  auto t = mann_whitney_u(base, preempted);
  EXPECT_LT(t->p_value, 1e-6);
  EXPECT_LT(std::fabs(*hodges_lehmann_shift(base, preempted)), 1000);
}

TEST(DiffRule, ModesReshuffledDoNotMoveTheShift) {
  // A bimodal call (10 us or 1 ms) split 49/51 and then 51/49 over a million calls: the U test
  // sees it, the medians jump from one mode to the other, the shift of the pairs stays 0.
  Histogram a = spread(100, 9500, 10500, 4900);
  a.merge(spread(100, 950000, 1050000, 5100));
  Histogram b = spread(100, 9500, 10500, 5100);
  b.merge(spread(100, 950000, 1050000, 4900));
  EXPECT_LT(mann_whitney_u(a, b)->p_value, 1e-6);
  EXPECT_NEAR(*hodges_lehmann_shift(a, b), 0, 100);
}

TEST(StudentT, TwoSidedPValues) {
  // Against numerical integration of the t density.
  EXPECT_NEAR(student_t_p_value(2.0, 10), 0.07338803477072017, 1e-8);
  EXPECT_NEAR(student_t_p_value(-3.5, 4.2), 0.02299374083698102, 1e-8);
  EXPECT_NEAR(student_t_p_value(0.5, 30), 0.6207230048851042, 1e-8);
  EXPECT_DOUBLE_EQ(student_t_p_value(0, 5), 1);
  EXPECT_NEAR(normal_p_value(1.959963984540054), 0.05, 1e-12);
}

TEST(Welch, MeansOfRuns) {
  // t = 2 with equal spreads and 6 runs each: df 10, as the pooled test.
  const double se = std::sqrt(0.125);
  EXPECT_NEAR(*welch_p_value(100, se, 6, 101, se, 6), 0.07338803477072017, 1e-8);
  EXPECT_FALSE(welch_p_value(100, 1, 1, 200, 1, 5));
  EXPECT_EQ(*welch_p_value(76, 0, 5, 76, 0, 5), 1);
  EXPECT_EQ(*welch_p_value(76, 0, 5, 77, 0, 5), 0);
}

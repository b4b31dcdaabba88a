#pragma once

// The statistics of `pmcprof diff`: is a change between two runs beyond the noise? Per-call
// quantities are compared on their histograms (2 % buckets), counting-mode values on the mean
// and spread of -r runs. Pure functions: no I/O, no state.
#include <cstdint>
#include <optional>

#include "pmcprof/stream/histogram.hpp"

namespace pmcprof {

// The Mann-Whitney U test of two runs' per-call values, from their histograms: values in one
// bucket are ties (a bucket is at most 2 % wide, so values closer than that are not told
// apart), ranked as the mean of their ranks, with the tie-corrected variance and the normal
// approximation (continuity-corrected); two-sided.
struct RankTest {
  std::uint64_t n_base = 0, n_new = 0;
  double u = 0;             // U of the new run: pairs (base, new) with new > base, ties half
  double prob_greater = 0;  // u / (n_base n_new): P(new > base) + P(equal) / 2
  double z = 0;
  double p_value = 1;  // 1 when every value of both is in one bucket (nothing to tell apart)
};
// nullopt when either histogram is empty.
std::optional<RankTest> mann_whitney_u(const Histogram& base, const Histogram& fresh);

// The Hodges-Lehmann estimate of the shift from `base` to `fresh`: the median of the
// differences new - base over all pairs of calls, the shift that test is consistent with.
// Insensitive to a minority of outliers (up to 29 % of calls: preempted or sleeping calls in
// wall time) and to how the calls are split between modes that did not move. Each bucket's
// calls are taken as spread evenly across it (values below 128, kept exactly, as points), so
// the estimate moves smoothly with a shift smaller than a bucket. nullopt when either is
// empty.
std::optional<double> hodges_lehmann_shift(const Histogram& base, const Histogram& fresh);

// Two-sided p-value of a standard normal deviate z.
double normal_p_value(double z);

// Two-sided p-value of Student's t with `df` degrees of freedom (df > 0).
double student_t_p_value(double t, double df);

// Welch's t-test of two means, each given with the standard error of the mean and the number
// of runs it is the mean of (perf stat -r's "+- x%" is that standard error, relative). Two-sided;
// nullopt when either side has fewer than 2 runs. Standard errors of 0 on both sides: p 0 when
// the means differ, 1 when they are equal.
std::optional<double> welch_p_value(double mean_base, double se_base, int n_base, double mean_new,
                                    double se_new, int n_new);

}  // namespace pmcprof

#include "pmcprof/report/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pmcprof {

namespace {

// A non-empty bucket as a range of values: a point (the exact buckets below 128, and the
// open-ended last one, whose values are unknown beyond its lower bound) or an even spread
// over [lo, hi).
struct Span {
  double lo = 0, hi = 0;
  double n = 0;
  bool point = false;
};

std::vector<Span> spans_of(const Histogram& h) {
  std::vector<Span> out;
  for (std::uint32_t b = 0; b < Histogram::kBuckets; ++b) {
    const std::uint64_t n = h.bucket_count(b);
    if (n == 0) continue;
    Span s;
    s.lo = static_cast<double>(Histogram::bucket_lower(b));
    s.point = b < 128 || b + 1 == Histogram::kBuckets;
    s.hi = s.point ? s.lo : static_cast<double>(Histogram::bucket_upper(b));
    s.n = static_cast<double>(n);
    out.push_back(s);
  }
  return out;
}

// P(Y - X > d) for X spread over `x` and Y over `y`.
double prob_difference_above(const Span& x, const Span& y, double d) {
  if (x.point && y.point) return y.lo - x.lo > d ? 1 : 0;
  if (x.point) return std::clamp((y.hi - (x.lo + d)) / (y.hi - y.lo), 0.0, 1.0);
  if (y.point) return std::clamp(((y.lo - d) - x.lo) / (x.hi - x.lo), 0.0, 1.0);
  // Y - X is the sum of two even spreads: its distribution is a trapezoid from
  // y.lo - x.hi to y.hi - x.lo.
  const double w1 = y.hi - y.lo, w2 = x.hi - x.lo;
  const double m = std::min(w1, w2), big = std::max(w1, w2);
  const double s = d - (y.lo - x.hi);
  double below = 1;
  if (s <= 0)
    below = 0;
  else if (s <= m)
    below = s * s / (2 * w1 * w2);
  else if (s <= big)
    below = (s - m / 2) / big;
  else if (s < m + big)
    below = 1 - (m + big - s) * (m + big - s) / (2 * w1 * w2);
  return 1 - below;
}

// The share of pairs (x, y) with y - x > d. Spans are ascending and do not overlap, so for each
// x the y spans entirely above x + d are a suffix (summed once), and only the few that straddle
// it are integrated.
class PairwiseDifferences {
 public:
  PairwiseDifferences(std::vector<Span> x, std::vector<Span> y)
      : x_(std::move(x)), y_(std::move(y)) {
    suffix_.assign(y_.size() + 1, 0);
    for (std::size_t j = y_.size(); j-- > 0;) suffix_[j] = suffix_[j + 1] + y_[j].n;
    for (const auto& s : x_) nx_ += s.n;
  }

  double share_above(double d) const {
    long double pairs = 0;
    for (const Span& x : x_) {
      // First y span whose every value is above x.hi + d; before it, those that reach above
      // x.lo + d.
      const auto full = std::upper_bound(y_.begin(), y_.end(), x.hi + d,
                                         [](double v, const Span& s) { return v < s.lo; });
      const auto part = std::upper_bound(y_.begin(), full, x.lo + d,
                                         [](double v, const Span& s) { return v < s.hi; });
      long double above = suffix_[static_cast<std::size_t>(full - y_.begin())];
      for (auto it = part; it != full; ++it) above += it->n * prob_difference_above(x, *it, d);
      // A point y exactly at x.lo + d is not above it; upper_bound on hi already skipped it.
      pairs += x.n * above;
    }
    return static_cast<double>(pairs / (static_cast<long double>(nx_) * suffix_[0]));
  }
  double lowest() const { return y_.front().lo - x_.back().hi; }
  double highest() const { return y_.back().hi - x_.front().lo; }

 private:
  std::vector<Span> x_, y_;
  std::vector<long double> suffix_;
  double nx_ = 0;
};

// The boundary where `above(d)` (true for low d, false for high d) changes, by bisection.
template <typename Pred>
double boundary(double lo, double hi, Pred above) {
  for (int i = 0; i < 200 && hi - lo > 1e-9 * std::max(1.0, std::fabs(lo) + std::fabs(hi)); ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (above(mid))
      lo = mid;
    else
      hi = mid;
  }
  return lo + (hi - lo) / 2;
}

// The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    d = std::fabs(d) < kTiny ? 1 / kTiny : 1 / d;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    d = std::fabs(d) < kTiny ? 1 / kTiny : 1 / d;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-15) break;
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

}  // namespace

std::optional<RankTest> mann_whitney_u(const Histogram& base, const Histogram& fresh) {
  if (base.count() == 0 || fresh.count() == 0) return std::nullopt;
  RankTest t;
  t.n_base = base.count();
  t.n_new = fresh.count();
  const double n1 = static_cast<double>(t.n_base), n2 = static_cast<double>(t.n_new);
  const double n = n1 + n2;
  double below = 0;  // base calls in lower buckets
  long double u = 0, ties = 0;
  for (std::uint32_t b = 0; b < Histogram::kBuckets; ++b) {
    const double cx = static_cast<double>(base.bucket_count(b));
    const double cy = static_cast<double>(fresh.bucket_count(b));
    if (cx == 0 && cy == 0) continue;
    u += static_cast<long double>(cy) * (below + cx / 2);
    const long double tied = cx + cy;
    ties += tied * tied * tied - tied;
    below += cx;
  }
  t.u = static_cast<double>(u);
  t.prob_greater = t.u / (n1 * n2);
  const long double variance = static_cast<long double>(n1) * n2 / 12 *
                               ((n + 1) - ties / (static_cast<long double>(n) * (n - 1)));
  if (!(variance > 0)) return t;  // one bucket holds them all: z 0, p 1
  const double off = t.u - n1 * n2 / 2;
  const double corrected = std::max(0.0, std::fabs(off) - 0.5);
  t.z = std::copysign(corrected / std::sqrt(static_cast<double>(variance)), off);
  t.p_value = normal_p_value(t.z);
  return t;
}

std::optional<double> hodges_lehmann_shift(const Histogram& base, const Histogram& fresh) {
  if (base.count() == 0 || fresh.count() == 0) return std::nullopt;
  const PairwiseDifferences pairs(spans_of(base), spans_of(fresh));
  const double lo = pairs.lowest() - 1, hi = pairs.highest() + 1;
  // The median of the differences: where the share of pairs above d falls through one half.
  // Between two values the share can stay at exactly one half (two points of equal weight):
  // then the middle of that stretch, as a median of an even count is.
  const double low = boundary(lo, hi, [&](double d) { return pairs.share_above(d) > 0.5; });
  const double high = boundary(lo, hi, [&](double d) { return pairs.share_above(d) >= 0.5; });
  return (low + high) / 2;
}

double normal_p_value(double z) {
  return std::erfc(std::fabs(z) / std::sqrt(2.0));
}

double student_t_p_value(double t, double df) {
  if (!(df > 0)) return 1;
  if (std::isinf(t)) return 0;
  return incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

std::optional<double> welch_p_value(double mean_base, double se_base, int n_base, double mean_new,
                                    double se_new, int n_new) {
  if (n_base < 2 || n_new < 2) return std::nullopt;
  const double v1 = se_base * se_base, v2 = se_new * se_new;
  const double v = v1 + v2;
  if (!(v > 0)) return mean_base == mean_new ? 1.0 : 0.0;
  const double t = (mean_new - mean_base) / std::sqrt(v);
  // Welch-Satterthwaite degrees of freedom.
  const double df =
      v * v /
      (v1 * v1 / static_cast<double>(n_base - 1) + v2 * v2 / static_cast<double>(n_new - 1));
  return student_t_p_value(t, df);
}

}  // namespace pmcprof

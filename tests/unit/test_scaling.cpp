// perf's multiplexing scaling (counters/scaling.hpp) and the report rows built from it
// (report/aggregate.hpp).
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cmath>
#include <cstdint>

#include "pmcprof/counters/scaling.hpp"
#include "pmcprof/report/aggregate.hpp"

using namespace pmcprof;

namespace {

EventSeries series(const std::string& name, std::vector<int> ids, std::vector<RawCount> counts,
                   bool supported = true) {
  EventSeries s;
  s.event = name;
  s.kind = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES};
  s.supported = supported;
  s.instance_ids = std::move(ids);
  s.counts = std::move(counts);
  return s;
}

CountingReport run_report(std::uint64_t elapsed_ns, double value, CounterStatus status) {
  CountingReport r;
  r.target = "true";
  r.elapsed_ns = elapsed_ns;
  CounterRow row;
  row.event = "cycles";
  row.status = status;
  row.value = value;
  row.raw_value = static_cast<std::uint64_t>(value);
  row.enabled_ns = elapsed_ns;
  row.running_ns = elapsed_ns / 2;
  r.counters.push_back(row);
  return r;
}

}  // namespace

TEST(Scaling, NotRunningIsNotCounted) {
  ScaledCount s = scale({1000, 500, 0});
  EXPECT_FALSE(s.counted);
  EXPECT_EQ(s.value, 0);
  EXPECT_FALSE(s.multiplexed);
  EXPECT_EQ(scale_value(1000, 500, 0), 0);
}

TEST(Scaling, FullyRunningIsExact) {
  ScaledCount s = scale({123456789, 1000, 1000});
  EXPECT_TRUE(s.counted);
  EXPECT_EQ(s.value, 123456789.0);
  EXPECT_DOUBLE_EQ(s.running_pct, 100.0);
  EXPECT_FALSE(s.multiplexed);
}

TEST(Scaling, EnabledZeroButRunningCountsAsFull) {
  ScaledCount s = scale({7, 0, 5});
  EXPECT_TRUE(s.counted);
  EXPECT_EQ(s.value, 7.0);
  EXPECT_DOUBLE_EQ(s.running_pct, 100.0);
  EXPECT_FALSE(s.multiplexed);
}

TEST(Scaling, MultiplexedIsExtrapolated) {
  // Ran 5/8 of the time: 1000 * 800 / 500 = 1600, 62.5%.
  ScaledCount s = scale({1000, 800, 500});
  EXPECT_TRUE(s.counted);
  EXPECT_TRUE(s.multiplexed);
  EXPECT_DOUBLE_EQ(s.value, 1600.0);
  EXPECT_DOUBLE_EQ(s.running_pct, 62.5);
}

TEST(Scaling, HugeValuesDoNotOverflow) {
  const std::uint64_t value = (1ULL << 63) - 12345;
  const std::uint64_t enabled = 3000000000000000000ULL;
  const std::uint64_t running = 1000000000000000000ULL;
  const long double reference =
      static_cast<long double>(value) * static_cast<long double>(enabled) / running;
  const double got = scale_value(value, enabled, running);
  EXPECT_TRUE(std::isfinite(got));
  EXPECT_LT(std::fabs((static_cast<long double>(got) - reference) / reference), 1e-12L)
      << got << " vs " << static_cast<double>(reference);
  ScaledCount s = scale({value, enabled, running});
  EXPECT_DOUBLE_EQ(s.value, got);
  EXPECT_NEAR(s.running_pct, 100.0 / 3.0, 1e-9);
}

TEST(Scaling, MaxValueUnscaled) {
  const std::uint64_t max = ~0ULL;
  EXPECT_EQ(scale_value(max, max, max), static_cast<double>(max));
  // 2^64-1 * (2^64-1) / (2^64-2): slightly more than 2^64, finite.
  const double v = scale_value(max, max, max - 1);
  EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(v / 18446744073709551616.0, 1.0, 1e-12);
}

TEST(Scaling, DeltaSubtractsAndClampsAtZero) {
  RawCount d = delta({100, 50, 40}, {30, 20, 10});
  EXPECT_EQ(d.value, 70u);
  EXPECT_EQ(d.enabled, 30u);
  EXPECT_EQ(d.running, 30u);
  RawCount c = delta({10, 20, 30}, {11, 20, 31});
  EXPECT_EQ(c.value, 0u);
  EXPECT_EQ(c.enabled, 0u);
  EXPECT_EQ(c.running, 0u);
}

TEST(Scaling, RawCountAccumulates) {
  RawCount a{1, 2, 3};
  a += RawCount{10, 20, 30};
  EXPECT_EQ(a.value, 11u);
  EXPECT_EQ(a.enabled, 22u);
  EXPECT_EQ(a.running, 33u);
}

TEST(Aggregate, SumsPerInstanceScaledValues) {
  // CPU0 ran fully: 100. CPU1 ran half the time: 100 * 200 / 100 = 200. Sum 300, not
  // (200 * 400 / 300) = 266.67 as scaling the sums would give.
  auto s = series("cycles", {0, 1}, {{100, 200, 200}, {100, 200, 100}});
  CounterRow row = make_row(s, s.counts);
  EXPECT_EQ(row.status, CounterStatus::ok);
  EXPECT_DOUBLE_EQ(row.value, 300.0);
  EXPECT_EQ(row.raw_value, 200u);
  EXPECT_EQ(row.enabled_ns, 400u);
  EXPECT_EQ(row.running_ns, 300u);
  EXPECT_DOUBLE_EQ(row.running_pct, 75.0);
  EXPECT_FALSE(row.cpu.has_value());
  EXPECT_EQ(row.event, "cycles");
  EXPECT_EQ(row.kind, (EventKind{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES}));
}

TEST(Aggregate, NotRunningInstancesAreSkipped) {
  auto s = series("cycles", {0, 1}, {{100, 200, 200}, {0, 200, 0}});
  CounterRow row = make_row(s, s.counts);
  EXPECT_EQ(row.status, CounterStatus::ok);
  EXPECT_DOUBLE_EQ(row.value, 100.0);
  EXPECT_DOUBLE_EQ(row.running_pct, 50.0);
}

TEST(Aggregate, NotSupported) {
  auto s = series("cycles", {0}, {{0, 0, 0}}, /*supported=*/false);
  CounterRow row = make_row(s, s.counts);
  EXPECT_EQ(row.status, CounterStatus::not_supported);
  EXPECT_EQ(row.value, 0);
}

TEST(Aggregate, NotCountedWhenNoInstanceRan) {
  auto s = series("cycles", {0, 1}, {{0, 500, 0}, {0, 500, 0}});
  CounterRow row = make_row(s, s.counts);
  EXPECT_EQ(row.status, CounterStatus::not_counted);
  EXPECT_EQ(row.enabled_ns, 1000u);
  EXPECT_EQ(row.running_ns, 0u);
}

TEST(Aggregate, SummedRowsOnePerEvent) {
  std::vector<EventSeries> all = {series("a", {0, 1}, {{1, 1, 1}, {2, 1, 1}}),
                                  series("b", {0, 1}, {{3, 1, 1}, {4, 1, 1}})};
  auto rows = aggregate_rows(all, /*per_instance=*/false);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].event, "a");
  EXPECT_DOUBLE_EQ(rows[0].value, 3.0);
  EXPECT_EQ(rows[1].event, "b");
  EXPECT_DOUBLE_EQ(rows[1].value, 7.0);
  EXPECT_FALSE(rows[0].cpu.has_value());
}

TEST(Aggregate, PerInstanceRowsInPerfOrder) {
  // perf -A (perf 6.1): each event across the CPUs: a on CPU2, a on CPU5, then b.
  std::vector<EventSeries> all = {series("a", {2, 5}, {{1, 1, 1}, {2, 1, 1}}),
                                  series("b", {2, 5}, {{3, 1, 1}, {4, 1, 1}})};
  auto rows = aggregate_rows(all, /*per_instance=*/true);
  ASSERT_EQ(rows.size(), 4u);
  const std::vector<std::pair<std::string, int>> order = {{"a", 2}, {"a", 5}, {"b", 2}, {"b", 5}};
  const std::vector<double> values = {1, 2, 3, 4};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].event, order[i].first) << i;
    ASSERT_TRUE(rows[i].cpu.has_value()) << i;
    EXPECT_EQ(*rows[i].cpu, order[i].second) << i;
    EXPECT_DOUBLE_EQ(rows[i].value, values[i]) << i;
  }
}

TEST(Aggregate, RelativeStddevOfMean) {
  // {10, 12}: mean 11, sample variance ((-1)^2 + 1^2) / (2-1) = 2, variance of the mean
  // 2 / 2 = 1, stddev of the mean 1 -> 100 * 1 / 11 = 9.0909...%.
  EXPECT_NEAR(relative_stddev_of_mean_pct({10, 12}), 100.0 / 11.0, 1e-12);
  // {1, 2, 3, 4}: mean 2.5, sample variance (2.25+0.25+0.25+2.25)/3 = 5/3, of the mean
  // 5/12 -> 100 * sqrt(5/12) / 2.5 = 25.8199%.
  EXPECT_NEAR(relative_stddev_of_mean_pct({1, 2, 3, 4}), 100.0 * std::sqrt(5.0 / 12.0) / 2.5,
              1e-12);
  EXPECT_EQ(relative_stddev_of_mean_pct({5, 5, 5}), 0);
  EXPECT_EQ(relative_stddev_of_mean_pct({42}), 0);
  EXPECT_EQ(relative_stddev_of_mean_pct({}), 0);
  EXPECT_EQ(relative_stddev_of_mean_pct({-1, 1}), 0);  // mean 0
}

TEST(Aggregate, CombineRunsMeanAndStddev) {
  // Elapsed 1s, 2s, 3s and cycles 100, 200, 300: mean 2s / 200; sample variance 1 (in s^2,
  // and 100^2), of the mean 1/3 -> 100 * sqrt(1/3) / 2 = 28.8675%.
  std::vector<CountingReport> runs = {run_report(1000000000, 100, CounterStatus::ok),
                                      run_report(2000000000, 200, CounterStatus::ok),
                                      run_report(3000000000, 300, CounterStatus::ok)};
  CountingReport r = combine_runs(runs);
  const double expected_pct = 100.0 * std::sqrt(1.0 / 3.0) / 2.0;
  EXPECT_EQ(r.runs, 3);
  EXPECT_EQ(r.elapsed_ns, 2000000000u);
  ASSERT_TRUE(r.elapsed_stddev_pct.has_value());
  EXPECT_NEAR(*r.elapsed_stddev_pct, expected_pct, 1e-9);
  ASSERT_EQ(r.counters.size(), 1u);
  const CounterRow& row = r.counters[0];
  EXPECT_EQ(row.status, CounterStatus::ok);
  EXPECT_DOUBLE_EQ(row.value, 200.0);
  EXPECT_EQ(row.raw_value, 200u);
  EXPECT_EQ(row.enabled_ns, 2000000000u);
  EXPECT_EQ(row.running_ns, 1000000000u);
  EXPECT_DOUBLE_EQ(row.running_pct, 50.0);
  ASSERT_TRUE(row.stddev_pct.has_value());
  EXPECT_NEAR(*row.stddev_pct, expected_pct, 1e-9);
}

TEST(Aggregate, CombineRunsSkipsRunsThatDidNotCount) {
  std::vector<CountingReport> runs = {run_report(1000, 100, CounterStatus::ok),
                                      run_report(1000, 0, CounterStatus::not_counted),
                                      run_report(1000, 300, CounterStatus::ok)};
  CountingReport r = combine_runs(runs);
  EXPECT_EQ(r.counters[0].status, CounterStatus::ok);
  EXPECT_DOUBLE_EQ(r.counters[0].value, 200.0);
  EXPECT_EQ(*r.elapsed_stddev_pct, 0);
}

TEST(Aggregate, CombineRunsKeepsNotSupported) {
  std::vector<CountingReport> runs = {run_report(1000, 0, CounterStatus::not_supported),
                                      run_report(1000, 0, CounterStatus::not_supported)};
  CountingReport r = combine_runs(runs);
  EXPECT_EQ(r.runs, 2);
  EXPECT_EQ(r.counters[0].status, CounterStatus::not_supported);
  EXPECT_FALSE(r.counters[0].stddev_pct.has_value());
}

TEST(Aggregate, CombineNoRunsThrows) {
  EXPECT_ANY_THROW(combine_runs({}));
}

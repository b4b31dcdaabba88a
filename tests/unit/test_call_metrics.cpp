// Metrics per call in function mode: the fixed-point ratio and which calls have a value
// (bpf/pmcprof.h, shared by the kernel and the stream), FuncStats on known records (masks,
// zero divisors, disturbed calls, the 128-bit sum, merge and interval deltas), the stream equal
// to the kernel's aggregation simulated per CPU, the report's metric rows (ratio of totals vs
// the per-call distribution, not-computed reasons), the formula shapes that can be kept per
// call, and binding metrics to a run's events (-M and automatic).
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../../bpf/pmcprof.h"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/events/metric_binding.hpp"
#include "pmcprof/events/metric_table.hpp"
#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/report/func_report.hpp"
#include "pmcprof/report/prometheus.hpp"
#include "pmcprof/stream/func_stats.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;
using nlohmann::json;

namespace {

constexpr double kOne = 1u << PMCPROF_METRIC_FRAC_BITS;  // 1.0 in fixed point

CallRecord call(std::uint64_t wall, std::initializer_list<std::uint64_t> delta,
                std::uint8_t measured = 0xff, std::uint32_t flags = 0) {
  CallRecord r;
  r.wall_ns = wall;
  r.oncpu_ns = wall;
  r.flags = flags;
  r.n_events = static_cast<std::uint8_t>(delta.size());
  std::size_t i = 0;
  for (auto d : delta) r.delta[i++] = d;
  const auto present = static_cast<std::uint8_t>((1u << delta.size()) - 1);
  r.measured = measured & present;
  r.ran = present;
  if (r.measured != present) r.flags |= PMCPROF_REC_MULTIPLEXED;
  return r;
}

MetricChoice table_metric(const std::string& name) {
  for (const auto& d : metric_table())
    if (d.name == name) return {&d, &d.variants.front()};
  ADD_FAILURE() << "no metric " << name;
  return {};
}

// Events 0 = cycles, 1 = instructions, 2 = task-clock; metrics IPC (1/0) and CPUs utilized
// (2/wall).
const std::vector<CallMetricOperands> kIpcAndCpus = {{1, 0}, {2, kOperandWall}};

const std::vector<FuncEventInfo> kEvents = {
    {"cycles", {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES}, "", 0},
    {"instructions", {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS}, "", 1},
    {"task-clock", {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK}, "ns", 2},
};

std::vector<FuncMetricInfo> ipc_and_cpus_infos() {
  return {{table_metric("IPC"), false, {{"instructions", 1}, {"cycles", 0}}, 0, ""},
          {table_metric("CPUs_utilized"), true, {{"task-clock", 2}}, 1, ""}};
}

const FuncMetricRow* metric(const FuncRow& row, const std::string& name) {
  for (const auto& m : row.metrics)
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace

// ---- the fixed-point ratio ----

TEST(CallMetricMath, RatioIsFixedPointRoundedDown) {
  EXPECT_EQ(pmcprof_ratio_fixed(202, 202), 1u << 20);
  EXPECT_EQ(pmcprof_ratio_fixed(3, 2), 3u << 19);
  EXPECT_EQ(pmcprof_ratio_fixed(1, 3), (1u << 20) / 3);  // 349525: rounded down
  EXPECT_EQ(pmcprof_ratio_fixed(0, 7), 0u);
  EXPECT_EQ(pmcprof_ratio_fixed(1, 1u << 21), 0u);  // below the resolution
  EXPECT_EQ(pmcprof_ratio_fixed(1, 1u << 20), 1u);
}

TEST(CallMetricMath, LargeNumeratorsKeepTheirRatio) {
  // From 2^44 the numerator cannot be shifted whole: both lose low bits first.
  const std::uint64_t big = (std::uint64_t{1} << 60) + 12345;
  EXPECT_EQ(pmcprof_ratio_fixed(big, big), 1u << 20);
  const double r = static_cast<double>(pmcprof_ratio_fixed(3 * big, big)) / kOne;
  EXPECT_NEAR(r, 3.0, 3.0 * std::ldexp(1.0, -40));
  const std::uint64_t max = ~std::uint64_t{0};
  EXPECT_EQ(pmcprof_ratio_fixed(max, max), 1u << 20);
  // A huge ratio that does not fit saturates instead of wrapping.
  EXPECT_EQ(pmcprof_ratio_fixed(max, 1), ~std::uint64_t{0});
}

// ---- FuncStats: which calls have a value ----

TEST(CallMetricStats, EveryCallWithBothOperandsMeasured) {
  FuncStats s(3, kIpcAndCpus);
  s.add(call(1000, {100, 100, 1000}));  // IPC 1, CPUs 1
  s.add(call(1000, {100, 200, 500}));   // IPC 2, CPUs 0.5
  s.add(call(4000, {400, 100, 1000}));  // IPC 0.25, CPUs 0.25
  EXPECT_EQ(s.s.metric_calls[0], 3u);
  EXPECT_EQ(s.s.metric_unmeasured[0], 0u);
  EXPECT_EQ(s.s.metric_zero[0], 0u);
  EXPECT_DOUBLE_EQ(s.metric_sum(0) / kOne, 3.25);
  EXPECT_EQ(min_of(s.s.metric_min_inv[0]), (1u << 20) / 4);
  EXPECT_EQ(s.s.metric_max[0], 2u << 20);
  EXPECT_EQ(s.s.metric_num_sum[0], 400u);  // instructions
  EXPECT_EQ(s.s.metric_den_sum[0], 600u);  // cycles
  EXPECT_EQ(s.metric_hist[0].count(), 3u);
  // CPUs utilized: task-clock over the call's wall time.
  EXPECT_EQ(s.s.metric_calls[1], 3u);
  EXPECT_DOUBLE_EQ(s.metric_sum(1) / kOne, 1.75);
  EXPECT_EQ(s.s.metric_den_sum[1], 6000u);
}

TEST(CallMetricStats, UnmeasuredZeroDivisorAndDisturbedCallsAreApart) {
  FuncStats s(3, kIpcAndCpus);
  s.add(call(1000, {100, 150, 1000}));         // a value
  s.add(call(1000, {100, 150, 1000}, 0b101));  // instructions multiplexed out
  s.add(call(1000, {100, 150, 1000}, 0b110));  // cycles multiplexed out
  s.add(call(1000, {0, 150, 1000}));           // 0 cycles: no IPC
  s.add(call(0, {100, 150, 0}));               // 0 wall time: no CPUs utilized
  s.add(call(1000, {100, 150, 1000}, 0xff, PMCPROF_REC_NOT_COUNTED));  // disturbed
  EXPECT_EQ(s.calls(), 6u);
  EXPECT_EQ(s.counted_calls(), 5u);
  EXPECT_EQ(s.s.metric_calls[0], 2u);  // the first call and the one with 0 wall time
  EXPECT_EQ(s.s.metric_unmeasured[0], 2u);
  EXPECT_EQ(s.s.metric_zero[0], 1u);
  // Every counted call is accounted for exactly once; the disturbed one in none.
  for (std::size_t m = 0; m < 2; ++m)
    EXPECT_EQ(s.s.metric_calls[m] + s.s.metric_unmeasured[m] + s.s.metric_zero[m],
              s.counted_calls())
        << m;
  // The wall time operand is always measured: only the task-clock one can be missing (never).
  EXPECT_EQ(s.s.metric_calls[1], 4u);
  EXPECT_EQ(s.s.metric_zero[1], 1u);
  EXPECT_EQ(s.s.metric_unmeasured[1], 0u);
}

TEST(CallMetricStats, SumCarriesPast64Bits) {
  // Values near 2^63 (ratio 2^43): two of them overflow 64 bits; the carry keeps the sum.
  FuncStats s(2, {{1, 0}});
  const std::uint64_t num = std::uint64_t{1} << 43;
  s.add(call(10, {1, num}));
  s.add(call(10, {1, num}));
  s.add(call(10, {1, num}));
  EXPECT_EQ(s.s.metric_sum_hi[0], 1u);
  EXPECT_DOUBLE_EQ(s.metric_sum(0) / kOne, 3.0 * static_cast<double>(num));
  const FuncRow row =
      make_func_row("f", "uprobe", "", s, 0, {kEvents[0], kEvents[1]},
                    {{table_metric("IPC"), false, {{"instructions", 1}, {"cycles", 0}}, 0, ""}});
  EXPECT_DOUBLE_EQ(row.metrics.at(0).mean, static_cast<double>(num));
}

TEST(CallMetricStats, MergeAndIntervalDeltasKeepEveryField) {
  std::vector<CallRecord> first, second;
  for (std::uint64_t k = 1; k <= 40; ++k) {
    auto& into = k <= 25 ? first : second;
    into.push_back(call(1000 + k, {100 * k, 150 * k + k % 3, 900 + k}, k % 7 ? 0xff : 0b101));
    if (k % 9 == 0) into.push_back(call(50, {0, 10, 50}));
  }
  FuncStats a(3, kIpcAndCpus), b(3, kIpcAndCpus), all(3, kIpcAndCpus);
  for (const auto& r : first) a.add(r), all.add(r);
  for (const auto& r : second) b.add(r), all.add(r);
  FuncStats merged = a;
  merged.merge(b);
  EXPECT_EQ(std::memcmp(&merged.s, &all.s, sizeof(FuncScalars)), 0);
  for (std::size_t m = 0; m < 2; ++m)
    EXPECT_EQ(merged.metric_hist[m].count(), all.metric_hist[m].count());
  // all - a == b, for every metric sum and count (min/max become bucket bounds).
  FuncStats delta = all;
  delta.subtract(a);
  for (std::size_t m = 0; m < 2; ++m) {
    EXPECT_EQ(delta.s.metric_calls[m], b.s.metric_calls[m]) << m;
    EXPECT_EQ(delta.s.metric_unmeasured[m], b.s.metric_unmeasured[m]) << m;
    EXPECT_EQ(delta.s.metric_zero[m], b.s.metric_zero[m]) << m;
    EXPECT_EQ(delta.s.metric_sum[m], b.s.metric_sum[m]) << m;
    EXPECT_EQ(delta.s.metric_sum_hi[m], b.s.metric_sum_hi[m]) << m;
    EXPECT_EQ(delta.s.metric_num_sum[m], b.s.metric_num_sum[m]) << m;
    EXPECT_EQ(delta.s.metric_den_sum[m], b.s.metric_den_sum[m]) << m;
    EXPECT_EQ(delta.metric_hist[m].count(), b.metric_hist[m].count()) << m;
  }
}

TEST(CallMetricStats, BorrowAcrossTheLow64Bits) {
  FuncStats before(2, {{1, 0}}), after(2, {{1, 0}});
  before.s.metric_sum[0] = ~std::uint64_t{0} - 5;
  before.s.metric_sum_hi[0] = 0;
  after.s.metric_sum[0] = 10;  // 2^64 + 10 in all
  after.s.metric_sum_hi[0] = 1;
  after.subtract(before);
  EXPECT_EQ(after.s.metric_sum_hi[0], 0u);
  EXPECT_EQ(after.s.metric_sum[0], 16u);
}

// ---- the kernel's aggregation, simulated: aggregate() in bpf/func.bpf.c per CPU ----

TEST(CallMetricStats, StreamEqualsKernelOverTwoCpus) {
  pmcprof_agg cpu[2];
  std::memset(cpu, 0, sizeof(cpu));
  std::vector<std::vector<std::uint64_t>> hist(std::size_t{2} * 2,
                                               std::vector<std::uint64_t>(PMCPROF_HIST_BUCKETS));
  const pmcprof_metric defs[2] = {{1, 0}, {2, PMCPROF_OPERAND_WALL}};
  FuncStats stream(3, kIpcAndCpus);
  std::uint64_t x = 12345;
  for (int i = 0; i < 500; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t cyc = (x >> 33) % 100000;
    std::uint8_t measured = i % 5 == 3 ? 0b101 : 0xff;
    std::uint32_t flags = i % 31 == 0 ? PMCPROF_REC_NOT_COUNTED : 0;
    const CallRecord r =
        call(1 + (x >> 20) % 50000, {cyc, (x >> 40) % 300000, (x >> 24) % 40000}, measured, flags);
    stream.add(r);
    const std::size_t c = (x >> 11) % 2;
    pmcprof_record raw;
    std::memcpy(&raw, &r, sizeof(raw));
    pmcprof_agg_add(&cpu[c], &raw, 3);
    if (raw.flags & PMCPROF_REC_NOT_COUNTED) continue;
    for (std::uint32_t m = 0; m < 2; ++m) {
      __u64 v = 0;
      if (pmcprof_metric_add(&cpu[c], &raw, 3, m, defs[m].num, defs[m].den, &v))
        hist[c * 2 + m][pmcprof_hist_bucket(v)]++;
    }
  }
  auto total = std::make_shared<pmcprof_agg>();
  std::memset(total.get(), 0, sizeof(*total));
  pmcprof_agg_merge(total.get(), &cpu[0]);
  pmcprof_agg_merge(total.get(), &cpu[1]);
  KernelAggregate k;
  k.agg = total;
  for (std::size_t m = 0; m < 2; ++m) {
    std::vector<std::uint64_t> h(PMCPROF_HIST_BUCKETS);
    for (std::size_t b = 0; b < h.size(); ++b) h[b] = hist[m][b] + hist[2 + m][b];
    k.metric_hists.push_back(h);
  }
  FuncStats kernel(3, kIpcAndCpus);
  kernel.add_kernel(k);
  for (std::size_t m = 0; m < 2; ++m) {
    EXPECT_EQ(kernel.s.metric_calls[m], stream.s.metric_calls[m]);
    EXPECT_EQ(kernel.s.metric_unmeasured[m], stream.s.metric_unmeasured[m]);
    EXPECT_EQ(kernel.s.metric_zero[m], stream.s.metric_zero[m]);
    EXPECT_EQ(kernel.s.metric_sum[m], stream.s.metric_sum[m]);
    EXPECT_EQ(kernel.s.metric_sum_hi[m], stream.s.metric_sum_hi[m]);
    EXPECT_EQ(kernel.s.metric_min_inv[m], stream.s.metric_min_inv[m]);
    EXPECT_EQ(kernel.s.metric_max[m], stream.s.metric_max[m]);
    EXPECT_EQ(kernel.s.metric_num_sum[m], stream.s.metric_num_sum[m]);
    EXPECT_EQ(kernel.s.metric_den_sum[m], stream.s.metric_den_sum[m]);
    for (std::uint32_t b = 0; b < Histogram::kBuckets; ++b)
      ASSERT_EQ(kernel.metric_hist[m].bucket_count(b), stream.metric_hist[m].bucket_count(b));
  }
  EXPECT_GT(stream.s.metric_unmeasured[0], 0u);
  EXPECT_GT(stream.s.not_counted, 0u);
  // The same report from both.
  const auto infos = ipc_and_cpus_infos();
  const FuncRow a = make_func_row("f", "uprobe", "", stream, 0, kEvents, infos);
  const FuncRow b = make_func_row("f", "uprobe", "", kernel, 0, kEvents, infos);
  ASSERT_EQ(a.metrics.size(), 2u);
  for (std::size_t m = 0; m < 2; ++m) {
    EXPECT_EQ(a.metrics[m].p50, b.metrics[m].p50);
    EXPECT_EQ(a.metrics[m].p99, b.metrics[m].p99);
    EXPECT_EQ(a.metrics[m].mean, b.metrics[m].mean);
    EXPECT_EQ(a.metrics[m].of_totals, b.metrics[m].of_totals);
  }
}

// ---- the report's metric rows ----

TEST(CallMetricReport, IdenticalCallsGiveExactFigures) {
  // exact_fn in the arm64 guest: 202 instructions and 202 cycles in every call.
  FuncStats s(3, kIpcAndCpus);
  for (int i = 0; i < 1000; ++i) s.add(call(202, {202, 202, 202}));
  const FuncRow row = make_func_row("exact_fn", "uprobe", "", s, 0, kEvents, ipc_and_cpus_infos());
  const FuncMetricRow* ipc = metric(row, "IPC");
  ASSERT_TRUE(ipc);
  EXPECT_TRUE(ipc->per_call);
  EXPECT_EQ(ipc->calls, 1000u);
  EXPECT_EQ(ipc->of_totals, 1.0);
  for (double v : {ipc->mean, ipc->p50, ipc->p90, ipc->p99, ipc->min, ipc->max}) EXPECT_EQ(v, 1.0);
  EXPECT_EQ(ipc->divisor, "cycles");
  EXPECT_FALSE(ipc->requested);
  EXPECT_TRUE(metric(row, "CPUs_utilized")->requested);
}

TEST(CallMetricReport, RatioOfTotalsIsNotTheMeanOfRatios) {
  // A short call with IPC 3 and a long one with IPC 0.5: the ratio of totals (perf's figure)
  // weighs the long call, the per-call mean weighs both alike.
  FuncStats s(3, kIpcAndCpus);
  s.add(call(10, {100, 300, 10}));
  s.add(call(10, {10000, 5000, 10}));
  const FuncRow row = make_func_row("f", "uprobe", "", s, 0, kEvents, ipc_and_cpus_infos());
  const FuncMetricRow* ipc = metric(row, "IPC");
  ASSERT_TRUE(ipc && ipc->of_totals);
  EXPECT_DOUBLE_EQ(*ipc->of_totals, 5300.0 / 10100.0);
  EXPECT_DOUBLE_EQ(ipc->mean, (3.0 + 0.5) / 2);
  EXPECT_EQ(ipc->min, 0.5);
  EXPECT_EQ(ipc->max, 3.0);
  // Percentiles within 1% and inside [min, max].
  EXPECT_GE(ipc->p50, 0.5);
  EXPECT_LE(ipc->p99, 3.0);
  EXPECT_NEAR(ipc->p99, 3.0, 0.03);
}

TEST(CallMetricReport, RatioOfTotalsOverTheSameCallsAsThePerCallFigures) {
  // Calls where instructions was multiplexed out count in neither: the ratio of totals is
  // over the covered calls (exact), not the events' estimated totals.
  FuncStats s(3, kIpcAndCpus);
  s.add(call(10, {100, 200, 10}));
  s.add(call(10, {100, 9999, 10}, 0b101));
  const FuncRow row = make_func_row("f", "uprobe", "", s, 0, kEvents, ipc_and_cpus_infos());
  const FuncMetricRow* ipc = metric(row, "IPC");
  ASSERT_TRUE(ipc && ipc->of_totals);
  EXPECT_EQ(*ipc->of_totals, 2.0);
  EXPECT_FALSE(ipc->estimated);
  EXPECT_EQ(ipc->calls, 1u);
  EXPECT_EQ(ipc->unmeasured, 1u);
  EXPECT_TRUE(row.events[1].per_call.estimated);  // the event's own total is an estimate
}

TEST(CallMetricReport, WithoutCoveredCallsTheEventTotalsGiveTheRatio) {
  // cycles and instructions never measured the same call: no per-call value at all; the ratio
  // of totals then comes from the events' estimated totals, and says so.
  FuncStats s(3, kIpcAndCpus);
  s.add(call(10, {100, 0, 10}, 0b101));
  s.add(call(10, {0, 300, 10}, 0b110));
  const FuncRow row = make_func_row("f", "uprobe", "", s, 0, kEvents, ipc_and_cpus_infos());
  const FuncMetricRow* ipc = metric(row, "IPC");
  ASSERT_TRUE(ipc && ipc->of_totals);
  EXPECT_EQ(ipc->calls, 0u);
  EXPECT_EQ(ipc->unmeasured, 2u);
  EXPECT_TRUE(ipc->estimated);
  EXPECT_DOUBLE_EQ(*ipc->of_totals, 3.0);  // (300 x 2/1) / (100 x 2/1)
  const json j = json::parse(render_func_json([&] {
    FunctionReport r;
    r.functions.push_back(row);
    return r;
  }()));
  const json& pc = j["functions"][0]["metrics"]["IPC"]["per_call"];
  EXPECT_EQ(pc["calls"], 0);
  EXPECT_TRUE(pc["p50"].is_null());
  EXPECT_TRUE(pc["mean"].is_null());
  EXPECT_EQ(j["functions"][0]["metrics"]["IPC"]["estimated"], true);
}

TEST(CallMetricReport, NotComputedSaysWhyNeverZero) {
  FuncStats s(3, kIpcAndCpus);
  s.add(call(10, {100, 300, 10}));
  std::vector<FuncEventInfo> events = kEvents;
  events[0].bpf_index.reset();  // cycles: the kernel refused it
  auto infos = ipc_and_cpus_infos();
  infos[0].requested = true;
  const FuncRow row = make_func_row("f", "uprobe", "", s, 0, events, infos);
  const FuncMetricRow* ipc = metric(row, "IPC");
  ASSERT_TRUE(ipc);
  EXPECT_FALSE(ipc->of_totals);
  EXPECT_EQ(ipc->reason, "cycles <not supported>");
  FunctionReport r;
  r.functions.push_back(row);
  const json j = json::parse(render_func_json(r));
  const json& m = j["functions"][0]["metrics"]["IPC"];
  EXPECT_EQ(m["status"], "not-computed");
  EXPECT_TRUE(m["of_totals"].is_null());
  EXPECT_EQ(m["reason"], "cycles <not supported>");
  const std::string text = render_func_text(r);
  EXPECT_NE(text.find("<not computed>  cycles <not supported>"), std::string::npos) << text;
  // Derived automatically, the same metric is left out (perf prints nothing either).
  infos[0].requested = false;
  EXPECT_FALSE(metric(make_func_row("f", "uprobe", "", s, 0, events, infos), "IPC"));
}

TEST(CallMetricReport, NoCallsHasNoValue) {
  const FuncRow row =
      make_func_row("f", "uprobe", "", FuncStats(3, kIpcAndCpus), 0, kEvents, ipc_and_cpus_infos());
  const FuncMetricRow* ipc = metric(row, "IPC");
  ASSERT_TRUE(ipc);
  EXPECT_FALSE(ipc->of_totals);
  EXPECT_EQ(ipc->reason, "no calls");
  EXPECT_EQ(ipc->calls, 0u);
}

TEST(CallMetricReport, ZeroDivisorInEveryCall) {
  FuncStats s(3, kIpcAndCpus);
  s.add(call(10, {0, 300, 10}));
  s.add(call(10, {0, 100, 10}));
  const FuncRow row = make_func_row("f", "uprobe", "", s, 0, kEvents, ipc_and_cpus_infos());
  const FuncMetricRow* ipc = metric(row, "IPC");
  ASSERT_TRUE(ipc);
  EXPECT_EQ(ipc->zero_divisor, 2u);
  EXPECT_FALSE(ipc->of_totals);
  EXPECT_EQ(ipc->reason, "division by zero (cycles is 0)");
  FunctionReport r;
  r.functions.push_back(row);
  const std::string text = render_func_text(r);
  EXPECT_NE(text.find("<not computed>  division by zero (cycles is 0)"), std::string::npos) << text;
}

TEST(CallMetricReport, CompoundFormulaHasOnlyTheRatioOfTotals) {
  // backend_bound is 100 - 100 * (...) / slots: not a ratio of two quantities of a call.
  MetricDef def{
      "share_left", {"Test"}, "", "%", {MetricFormula::parse("100 - 100 * cycles / instructions")}};
  FuncMetricInfo info{{&def, &def.variants[0]},
                      true,
                      {{"cycles", 0}, {"instructions", 1}},
                      {},
                      "not a ratio of two events: only the ratio of totals"};
  FuncStats s(3, kIpcAndCpus);
  s.add(call(10, {100, 400, 10}));
  const FuncRow row = make_func_row("f", "uprobe", "", s, 0, kEvents, {info});
  ASSERT_EQ(row.metrics.size(), 1u);
  EXPECT_FALSE(row.metrics[0].per_call);
  EXPECT_DOUBLE_EQ(*row.metrics[0].of_totals, 75.0);
  FunctionReport r;
  r.functions.push_back(row);
  const json j = json::parse(render_func_json(r));
  EXPECT_TRUE(j["functions"][0]["metrics"]["share_left"]["per_call"].is_null());
  EXPECT_EQ(j["functions"][0]["metrics"]["share_left"]["per_call_reason"],
            "not a ratio of two events: only the ratio of totals");
}

TEST(CallMetricReport, ScaleOfTheFormulaAppliesPerCall) {
  // branch_miss_rate = 100 * branch-misses / branches: per call in %.
  const std::vector<FuncEventInfo> events = {
      {"branches", {PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS}, "", 0},
      {"branch-misses", {PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES}, "", 1}};
  FuncStats s(2, {{1, 0}});
  s.add(call(10, {200, 5}));   // 2.5 %
  s.add(call(10, {1000, 0}));  // 0 %
  const FuncRow row = make_func_row(
      "f", "uprobe", "", s, 0, events,
      {{table_metric("branch_miss_rate"), false, {{"branch-misses", 1}, {"branches", 0}}, 0, ""}});
  const FuncMetricRow& m = row.metrics.at(0);
  EXPECT_EQ(m.unit, "%");
  EXPECT_DOUBLE_EQ(*m.of_totals, 100.0 * 5 / 1200);
  // Per call, the ratio is rounded down to 2^-20 before the scale: 2.5 % is 2.49996 %.
  EXPECT_NEAR(m.max, 2.5, 100.0 / kOne);
  EXPECT_LE(m.max, 2.5);
  EXPECT_EQ(m.min, 0.0);
  EXPECT_NEAR(m.mean, 1.25, 100.0 / kOne);
}

TEST(CallMetricReport, FiguresHaveTheDigitsTheDataHas) {
  // Issue 23: CPUs utilized per call read p50 0.7089354814247868 and min 0.45067882537841797.
  // A percentile is a 2 % bucket's representative: 4 significant digits; min, max and mean
  // are fixed point (2^-20): 7 decimals.
  FuncStats s(3, kIpcAndCpus);
  for (std::uint64_t k = 0; k < 50; ++k) s.add(call(1000 + 37 * k, {202, 202 + 3 * k, 450 + k}));
  // CPUs utilized needs on-CPU below wall: task-clock (event 2) is the numerator.
  const FuncRow row = make_func_row("f", "uprobe", "", s, 0, kEvents, ipc_and_cpus_infos());
  for (const FuncMetricRow& m : row.metrics) {
    SCOPED_TRACE(m.name);
    for (double p : {m.p50, m.p90, m.p99}) {
      // The first and last rank read the exact min and max.
      const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(p))));
      if (p != m.min && p != m.max) {
        EXPECT_DOUBLE_EQ(p, std::round(p * scale) / scale) << p;
      }
      EXPECT_GE(p, m.min);
      EXPECT_LE(p, m.max);
    }
    for (double v : {m.min, m.max, m.mean}) EXPECT_DOUBLE_EQ(v, std::round(v * 1e7) / 1e7) << v;
  }
  // The JSON prints them as they are: no more digits.
  FunctionReport r;
  r.functions.push_back(row);
  const json j = json::parse(render_func_json(r));
  const std::string p50 = j["functions"][0]["metrics"]["CPUs_utilized"]["per_call"]["p50"].dump();
  EXPECT_LE(p50.size(), 6u) << p50;  // "0.4512"
}

// ---- renderers ----

TEST(CallMetricRender, CsvAndPrometheus) {
  FuncStats s(3, kIpcAndCpus);
  for (int i = 0; i < 10; ++i) s.add(call(202, {202, 202, 202}));
  s.add(call(202, {202, 202, 202}, 0b101));
  FunctionReport r;
  r.aggregation = "kernel";
  r.functions.push_back(
      make_func_row("exact_fn", "uprobe", "", s, 0, kEvents, ipc_and_cpus_infos()));
  const std::string csv = render_func_csv(r);
  EXPECT_NE(
      csv.find("exact_fn,uprobe,,11,0,0,metric:IPC,insn per cycle,1,1,1,1,1,1,1,10,0,kernel,0,,\n"),
      std::string::npos)
      << csv;
  for (const auto& line : split(std::string(trim(csv)), '\n'))
    EXPECT_EQ(split(line, ',').size(), 21u) << line;
  const std::string prom = render_prometheus(nullptr, &r, PrometheusStatus{});
  const std::string labels = "function=\"exact_fn\",metric=\"IPC\"";
  EXPECT_NE(prom.find("# TYPE pmcprof_function_metric_per_call_ratio summary"), std::string::npos);
  EXPECT_NE(
      prom.find("pmcprof_function_metric_per_call_ratio{" + labels + ",quantile=\"0.5\"} 1\n"),
      std::string::npos)
      << prom;
  EXPECT_NE(
      prom.find("pmcprof_function_metric_per_call_ratio{" + labels + ",quantile=\"0.99\"} 1\n"),
      std::string::npos);
  EXPECT_NE(prom.find("pmcprof_function_metric_per_call_ratio_count{" + labels + "} 10\n"),
            std::string::npos);
  EXPECT_NE(prom.find("pmcprof_function_metric_per_call_ratio_sum{" + labels + "} 10\n"),
            std::string::npos);
  EXPECT_NE(prom.find("pmcprof_function_metric_ratio{" + labels + "} 1\n"), std::string::npos);
  EXPECT_NE(prom.find("pmcprof_function_metric_skipped_calls_total{" + labels +
                      ",reason=\"unmeasured\"} 1\n"),
            std::string::npos)
      << prom;
}

TEST(CallMetricRender, NoSampleForAMetricWithoutValue) {
  FuncStats s(3, kIpcAndCpus);
  s.add(call(10, {0, 300, 10}));
  FunctionReport r;
  r.functions.push_back(make_func_row("f", "uprobe", "", s, 0, kEvents, ipc_and_cpus_infos()));
  const std::string prom = render_prometheus(nullptr, &r, PrometheusStatus{});
  EXPECT_EQ(prom.find("pmcprof_function_metric_ratio{function=\"f\",metric=\"IPC\""),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("metric=\"IPC\",quantile=\"0.5\"} NaN"), std::string::npos) << prom;
}

TEST(CallMetricRender, PrometheusNamesCarryOneBaseUnit) {
  // Issue 23: a unit="CPUs utilized" label beside unit="%" under one name. Now the name says
  // the base unit: a % or per-1k figure is a ratio (divided by 100 or 1000), GHz hertz.
  FuncStats s(3, kIpcAndCpus);
  for (int i = 0; i < 4; ++i) s.add(call(400, {200, 100, 300}));  // IPC 0.5, CPUs 0.75
  FunctionReport r;
  FuncRow row = make_func_row("f", "uprobe", "", s, 0, kEvents, ipc_and_cpus_infos());
  FuncMetricRow pct = row.metrics.at(0);
  pct.name = "branch_miss_rate";
  pct.unit = "%";
  pct.of_totals = 2.5;
  pct.per_call = false;
  row.metrics.push_back(pct);
  r.functions.push_back(row);
  const std::string prom = render_prometheus(nullptr, &r, PrometheusStatus{});
  EXPECT_EQ(prom.find("unit="), std::string::npos) << prom;
  EXPECT_EQ(prom.find("pmcprof_function_metric_of_totals"), std::string::npos) << prom;
  for (const std::string sample :
       {"pmcprof_function_metric_ratio{function=\"f\",metric=\"CPUs_utilized\"} 0.75\n",
        "pmcprof_function_metric_per_call_ratio{function=\"f\",metric=\"CPUs_utilized\","
        "quantile=\"0.5\"} 0.75\n",
        "pmcprof_function_metric_ratio{function=\"f\",metric=\"IPC\"} 0.5\n",
        "pmcprof_function_metric_ratio{function=\"f\",metric=\"branch_miss_rate\"} 0.025\n"})
    EXPECT_NE(prom.find(sample), std::string::npos) << sample << prom;
}

TEST(CallMetricRender, EveryTableUnitHasAPrometheusBaseUnit) {
  // prometheus_unit_of knows these; a metric with a new unit needs its base unit there.
  const std::map<std::string, std::pair<std::string, double>> known = {
      {"insn per cycle", {"ratio", 1}}, {"cycles per insn", {"ratio", 1}},
      {"CPUs utilized", {"ratio", 1}},  {"%", {"ratio", 0.01}},
      {"per 1k insn", {"ratio", 1e-3}}, {"GHz", {"hertz", 1e9}}};
  for (const auto& d : metric_table()) {
    auto it = known.find(d.unit);
    ASSERT_NE(it, known.end()) << d.name << ": unit '" << d.unit << "' has no base unit";
    const PrometheusUnit u = prometheus_unit_of(d.unit);
    EXPECT_EQ(u.suffix, it->second.first) << d.name;
    EXPECT_EQ(u.scale, it->second.second) << d.name;
  }
}

// ---- formula shapes ----

TEST(MetricFormulaRatio, TableShapes) {
  auto ratio = [](const std::string& name) { return table_metric(name).formula->ratio(); };
  auto ipc = ratio("IPC");
  ASSERT_TRUE(ipc);
  EXPECT_EQ(ipc->scale, 1.0);
  EXPECT_EQ(ipc->numerator, "instructions");
  EXPECT_EQ(ipc->denominator, "cycles");
  auto bmr = ratio("branch_miss_rate");
  ASSERT_TRUE(bmr);
  EXPECT_EQ(bmr->scale, 100.0);
  EXPECT_EQ(bmr->numerator, "branch-misses");
  auto mpki = ratio("cache_mpki");
  ASSERT_TRUE(mpki);
  EXPECT_EQ(mpki->scale, 1000.0);
  EXPECT_EQ(mpki->denominator, "instructions");
  auto cpus = ratio("CPUs_utilized");
  ASSERT_TRUE(cpus);
  EXPECT_EQ(cpus->denominator, "duration_time");
  // Top-down: bad speculation is a sum in every variant; the front end's share is a ratio
  // where the slots are one event (TOPDOWN:SLOTS, Arm's CPU_CYCLES), not 4 x cycles.
  for (const auto& f : table_metric("bad_speculation").def->variants)
    EXPECT_FALSE(f.ratio()) << f.text();
  for (const auto& f : table_metric("frontend_bound").def->variants)
    EXPECT_EQ(f.ratio().has_value(), f.text().find("(4 *") == std::string::npos) << f.text();
}

TEST(MetricFormulaRatio, OtherShapes) {
  EXPECT_EQ(MetricFormula::parse("a * 2 / b").ratio()->scale, 2.0);
  EXPECT_EQ(MetricFormula::parse("a * 2 / b").ratio()->numerator, "a");
  EXPECT_FALSE(MetricFormula::parse("a / b / c").ratio());
  EXPECT_FALSE(MetricFormula::parse("(a + b) / c").ratio());
  EXPECT_FALSE(MetricFormula::parse("a / (b + c)").ratio());
  EXPECT_FALSE(MetricFormula::parse("a / 2").ratio());
  EXPECT_FALSE(MetricFormula::parse("a / a").ratio());
  EXPECT_FALSE(MetricFormula::parse("100 - a / b").ratio());
  EXPECT_FALSE(MetricFormula::parse("a * b / c").ratio());
}

// ---- binding metrics to a run's events ----

namespace {

struct Binder {
  PfmLibrary pfm;
  EventResolver resolver{pfm};

  std::vector<MetricBinding> bind(const std::string& events, const std::vector<std::string>& m,
                                  std::vector<ResolvedGroup>& groups, bool group_added = true) {
    groups =
        events.empty() ? std::vector<ResolvedGroup>{} : resolver.resolve(parse_event_list(events));
    return bind_metrics(groups, select_metrics(m, resolver), resolver, group_added);
  }
};

const MetricBinding* bound(const std::vector<MetricBinding>& b, const std::string& name) {
  for (const auto& x : b)
    if (x.metric.def->name == name) return &x;
  return nullptr;
}

std::vector<std::string> names(const std::vector<ResolvedGroup>& groups) {
  std::vector<std::string> out;
  for (const auto& g : groups)
    for (const auto& e : g.events) out.push_back(e.display_name());
  return out;
}

}  // namespace

TEST(BindMetrics, AutomaticFromTheRunsEventsAtOnePrivilege) {
  Binder b;
  std::vector<ResolvedGroup> groups;
  auto m = b.bind("instructions:u,cycles:u", {}, groups);
  const MetricBinding* ipc = bound(m, "IPC");
  ASSERT_TRUE(ipc);
  EXPECT_FALSE(ipc->requested);
  EXPECT_EQ(ipc->inputs.at("instructions"), 0u);
  EXPECT_EQ(ipc->inputs.at("cycles"), 1u);
  EXPECT_EQ(names(groups), (std::vector<std::string>{"instructions:u", "cycles:u"}));
  EXPECT_FALSE(bound(m, "CPI")) << "CPI is -M only";
  // Different privileges: user instructions over all cycles is no IPC.
  EXPECT_FALSE(bound(b.bind("instructions:u,cycles", {}, groups), "IPC"));
  EXPECT_EQ(groups.size(), 2u);  // nothing added
}

TEST(BindMetrics, ThePrivilegeTheTableWritesIsPreferred) {
  // Both task-clock:u and task-clock counted: CPUs utilized reads the plain one (the call's
  // on-CPU time), wherever it is listed; alone, task-clock:u serves.
  Binder b;
  std::vector<ResolvedGroup> groups;
  auto m = b.bind("task-clock:u,task-clock", {}, groups);
  ASSERT_TRUE(bound(m, "CPUs_utilized"));
  EXPECT_EQ(bound(m, "CPUs_utilized")->inputs.at("task-clock"), 1u);
  m = b.bind("task-clock:u", {}, groups);
  ASSERT_TRUE(bound(m, "CPUs_utilized"));
  EXPECT_EQ(bound(m, "CPUs_utilized")->inputs.at("task-clock"), 0u);
  // And a :u pair listed after a plain one is still bound as a pair.
  m = b.bind("cycles,instructions:u,cycles:u", {}, groups);
  ASSERT_TRUE(bound(m, "IPC"));
  EXPECT_EQ(bound(m, "IPC")->inputs.at("instructions"), 1u);
  EXPECT_EQ(bound(m, "IPC")->inputs.at("cycles"), 2u);
}

TEST(BindMetrics, PerfDefaultSetDerivesItsShadowMetrics) {
  Binder b;
  std::vector<ResolvedGroup> groups;
  groups = b.resolver.resolve(default_events());
  auto m = bind_metrics(groups, {}, b.resolver);
  std::vector<std::string> got;
  for (const auto& x : m) got.push_back(x.metric.def->name);
  EXPECT_EQ(got, (std::vector<std::string>{"IPC", "CPUs_utilized", "GHz", "branch_miss_rate"}));
  EXPECT_EQ(bound(m, "CPUs_utilized")->inputs.size(), 1u);  // duration_time is the wall time
}

TEST(BindMetrics, RequestedReusesOrAddsOneGroup) {
  Binder b;
  std::vector<ResolvedGroup> groups;
  // Already there: reused, nothing added, not bound twice.
  auto m = b.bind("cycles,instructions", {"IPC"}, groups);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(m[0].requested);
  EXPECT_EQ(groups.size(), 2u);
  // Missing at one privilege: the metric's events added as one group after -e.
  m = b.bind("instructions:u", {"IPC"}, groups);
  ASSERT_TRUE(bound(m, "IPC"));
  EXPECT_EQ(names(groups), (std::vector<std::string>{"instructions:u", "instructions", "cycles"}));
  EXPECT_TRUE(groups.back().grouped);
  EXPECT_TRUE(groups.back().metric);
  EXPECT_EQ(bound(m, "IPC")->inputs.at("instructions"), 1u);
  EXPECT_EQ(bound(m, "IPC")->inputs.at("cycles"), 2u);
  // Partly there at the table's privilege: only the missing one is added.
  m = b.bind("task-clock,instructions", {"IPC"}, groups);
  EXPECT_EQ(names(groups), (std::vector<std::string>{"task-clock", "instructions", "cycles"}));
  EXPECT_EQ(bound(m, "IPC")->inputs.at("instructions"), 1u);
  // --metric-no-group: added one by one.
  m = b.bind("task-clock", {"IPC"}, groups, /*group_added=*/false);
  EXPECT_FALSE(groups.back().grouped);
  // -M without -e: only the metrics' events; a second metric reuses the first one's.
  m = b.bind("", {"IPC", "CPI", "CPUs_utilized"}, groups);
  EXPECT_EQ(names(groups), (std::vector<std::string>{"instructions", "cycles", "task-clock"}));
  EXPECT_EQ(bound(m, "CPI")->inputs.at("cycles"), 1u);
  ASSERT_EQ(m.size(), 4u);  // IPC, CPI, CPUs_utilized requested; GHz derived automatically
  EXPECT_FALSE(bound(m, "GHz")->requested);
}

// The function-mode report model (make_func_row, func_metric) and its three renderers,
// against golden files. Regenerate the goldens after an intended format change with
//   PMCPROF_UPDATE_GOLDEN=1 pmcprof_unit_tests --gtest_filter='FuncReport*'
// and review the diff.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "../../bpf/pmcprof.h"
#include "golden.hpp"
#include "pmcprof/report/func_hist.hpp"
#include "pmcprof/report/func_report.hpp"
#include "pmcprof/report/histogram_view.hpp"
#include "pmcprof/report/prometheus.hpp"
#include "pmcprof/stream/func_stats.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;
using nlohmann::json;

namespace {

constexpr EventKind kCycles{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES};
constexpr EventKind kInstructions{PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS};
constexpr EventKind kCacheMisses{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES};
constexpr EventKind kTaskClock{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK};

// One call; by default every event measured it (ran through it). `measured` clear and `ran`
// set: the event ran only through part of the call (multiplexed); both clear: it never ran.
CallRecord call(std::uint64_t wall, std::uint64_t oncpu, std::initializer_list<std::uint64_t> delta,
                std::uint32_t flags = 0, std::uint8_t measured = 0xff, std::uint8_t ran = 0xff) {
  CallRecord r;
  r.wall_ns = wall;
  r.oncpu_ns = oncpu;
  r.flags = flags;
  r.n_events = static_cast<std::uint8_t>(delta.size());
  std::size_t i = 0;
  for (auto d : delta) r.delta[i++] = d;
  const auto present = static_cast<std::uint8_t>((1u << delta.size()) - 1);
  r.measured = measured & present;
  r.ran = (ran | measured) & present;
  if (r.ran & ~r.measured & present) r.flags |= PMCPROF_REC_MULTIPLEXED;
  return r;
}

Distribution dist(double total, double mean, double p50, double p90, double p99, double min,
                  double max, std::uint64_t measured, bool estimated = false) {
  Distribution d;
  d.status = CounterStatus::ok;
  d.total = total;
  d.mean = mean;
  d.p50 = p50;
  d.p90 = p90;
  d.p99 = p99;
  d.min = min;
  d.max = max;
  d.measured = measured;
  d.estimated = estimated;
  return d;
}

Distribution status_only(CounterStatus s) {
  Distribution d;
  d.status = s;
  return d;
}

FuncEventRow event_row(const std::string& name, EventKind kind, Distribution d,
                       const std::string& unit = "") {
  FuncEventRow e;
  e.event = name;
  e.kind = kind;
  e.unit = unit;
  e.per_call = d;
  return e;
}

FuncMetricRow metric_row(const std::string& name, const std::string& unit,
                         const std::string& formula, bool requested,
                         std::vector<std::pair<std::string, std::string>> events) {
  FuncMetricRow m;
  m.name = name;
  m.unit = unit;
  m.formula = formula;
  m.requested = requested;
  m.events = std::move(events);
  return m;
}

// Per-call figures: mean, p50, p90, p99, min, max (none: no call had a value).
void per_call(FuncMetricRow& m, std::uint64_t calls, std::uint64_t unmeasured,
              std::uint64_t zero_divisor, const std::string& divisor, std::vector<double> figures) {
  m.per_call = true;
  m.per_unit = 1.0 / (1 << kMetricFracBits);  // a ratio's fixed point, without a factor
  m.calls = calls;
  m.unmeasured = unmeasured;
  m.zero_divisor = zero_divisor;
  m.divisor = divisor;
  if (figures.size() == 6) {
    m.mean = figures[0];
    m.p50 = figures[1];
    m.p90 = figures[2];
    m.p99 = figures[3];
    m.min = figures[4];
    m.max = figures[5];
  }
}

// A report as function_session.cpp would build it: a user function with a lossy stream, an
// event the kernel refused and one that was multiplexed (measured 9,000 of 12,340 counted
// calls: its total is an estimate), and a syscall whose every call was disturbed (no event and
// no on-CPU time, only wall time).
FunctionReport sample_report() {
  FunctionReport r;
  r.target = "./pingpong 1000";
  r.aggregation = "stream";
  r.elapsed_ns = 1234567890;
  r.timestamp_unix_ns = 1700000000123456789ULL;
  r.exit_status = 0;
  r.lost = 17;
  r.partial = true;

  FuncRow malloc_row;
  malloc_row.function = "libc:malloc";
  malloc_row.backend = "uprobe";
  malloc_row.calls = 12345;
  malloc_row.not_counted = 5;
  malloc_row.lost = 17;
  malloc_row.slept = 3;
  malloc_row.migrated = 1;
  malloc_row.multiplexed = 2;
  malloc_row.wall = dist(2469000, 200, 180, 350, 1201, 95, 15000, 12345);
  malloc_row.oncpu = dist(1851000, 150, 140, 260, 990, 80, 12000, 12340);
  malloc_row.events.push_back(
      event_row("cycles", kCycles, dist(4938000, 400.48, 380, 700, 2400, 212, 18000, 12340)));
  malloc_row.events.push_back(
      event_row("instructions", kInstructions,
                dist(9876000, 800.97, 790, 1100, 3101, 455, 40321, 9000, /*estimated=*/true)));
  malloc_row.events.push_back(
      event_row("cache-misses", kCacheMisses, status_only(CounterStatus::not_supported)));
  // Metrics: IPC derived automatically (per call over the 8,990 calls both events measured,
  // 3,340 multiplexed out, 10 with 0 cycles; of estimated totals), CPUs utilized per call, a
  // -M metric with small values, and a -M metric whose events the kernel refused.
  FuncMetricRow ipc = metric_row("IPC", "insn per cycle", "instructions / cycles", false,
                                 {{"instructions", "instructions"}, {"cycles", "cycles"}});
  ipc.of_totals = 2.0;
  ipc.estimated = true;
  per_call(ipc, 8990, 3340, 10, "cycles", {2.01, 2.05, 2.5, 3.1, 0.5, 4.75});
  malloc_row.metrics.push_back(ipc);
  FuncMetricRow cpus =
      metric_row("CPUs_utilized", "CPUs utilized", "task-clock / duration_time", false,
                 {{"task-clock", "task-clock"}, {"duration_time", "wall time"}});
  cpus.of_totals = 1851000.0 / 2469000.0;
  per_call(cpus, 12340, 0, 0, "wall time", {0.75, 0.78, 0.99, 1.0, 0.05, 1.0});
  malloc_row.metrics.push_back(cpus);
  FuncMetricRow mpki =
      metric_row("branch_mpki", "per 1k insn", "1000 * branch-misses / instructions", true,
                 {{"branch-misses", "branch-misses"}, {"instructions", "instructions"}});
  mpki.of_totals = 0.00123;
  per_call(mpki, 9000, 3340, 0, "instructions", {0.0012, 0, 0.0031, 0.0123, 0, 0.5});
  mpki.per_unit = 1000.0 / (1 << kMetricFracBits);
  malloc_row.metrics.push_back(mpki);
  FuncMetricRow cmr =
      metric_row("cache_miss_rate", "%", "100 * cache-misses / cache-references", true,
                 {{"cache-misses", "cache-misses"}, {"cache-references", "cache-references"}});
  cmr.reason = "cache-misses, cache-references <not supported>";
  cmr.per_call_reason = "its events were not opened";
  malloc_row.metrics.push_back(cmr);
  r.functions.push_back(malloc_row);

  FuncRow getppid;
  getppid.function = "syscall:getppid";
  getppid.backend = "tracepoint";
  getppid.calls = 4;
  getppid.not_counted = 4;
  getppid.wall =
      dist(4000000000, 1000000000, 950000000, 1100000000, 1200000000, 800000000, 1200000000, 4);
  // Its histogram: the four calls, from the 800 ms min to the 1.2 s max (JSON buckets).
  for (std::uint64_t ns : {800000000ull, 950000000ull, 1100000000ull, 1200000000ull})
    getppid.wall_histogram.add(ns);
  getppid.oncpu = status_only(CounterStatus::not_counted);
  getppid.events.push_back(event_row("cycles", kCycles, status_only(CounterStatus::not_counted)));
  getppid.events.push_back(
      event_row("instructions", kInstructions, status_only(CounterStatus::not_counted)));
  getppid.events.push_back(
      event_row("cache-misses", kCacheMisses, status_only(CounterStatus::not_supported)));
  FuncMetricRow gipc = metric_row("IPC", "insn per cycle", "instructions / cycles", false,
                                  {{"instructions", "instructions"}, {"cycles", "cycles"}});
  gipc.reason = "cycles, instructions <not counted>";
  per_call(gipc, 0, 0, 0, "cycles", {});
  getppid.metrics.push_back(gipc);
  r.functions.push_back(getppid);
  return r;
}

const std::vector<FuncEventInfo> kThreeEvents = {
    {"cycles", kCycles, "", 0},
    {"instructions", kInstructions, "", 1},
    {"cache-misses", kCacheMisses, "", std::nullopt},  // the kernel refused it
};

}  // namespace

// ---- make_func_row ----

TEST(FuncReportRow, UnsupportedEventIsNotSupportedNeverZero) {
  FuncStats s(2);
  s.add(call(100, 90, {1000, 2000}));
  const FuncRow row = make_func_row("f", "kprobe", "", s, 0, kThreeEvents);
  ASSERT_EQ(row.events.size(), 3u);
  EXPECT_EQ(row.events[2].event, "cache-misses");
  EXPECT_EQ(row.events[2].per_call.status, CounterStatus::not_supported);
  EXPECT_EQ(row.events[0].per_call.status, CounterStatus::ok);
  EXPECT_EQ(row.events[0].per_call.total, 1000.0);
  EXPECT_EQ(row.events[1].per_call.total, 2000.0);
  // In JSON the unsupported event is null, not 0.
  FunctionReport r;
  r.functions.push_back(row);
  const json j = json::parse(render_func_json(r));
  EXPECT_TRUE(j["functions"][0]["events"]["cache-misses"]["total"].is_null());
  EXPECT_TRUE(j["functions"][0]["events"]["cache-misses"]["min"].is_null());
  EXPECT_TRUE(j["functions"][0]["events"]["cache-misses"]["max"].is_null());
  EXPECT_EQ(j["functions"][0]["events"]["cache-misses"]["status"], "not-supported");
}

TEST(FuncReportRow, ZeroCountedCallsIsNotCounted) {
  FuncStats s(2);
  s.add(call(100, 90, {1000, 2000}, PMCPROF_REC_NOT_COUNTED));
  s.add(call(300, 200, {1000, 2000}, PMCPROF_REC_NOT_COUNTED));
  const FuncRow row = make_func_row("f", "kprobe", "", s, 0, kThreeEvents);
  EXPECT_EQ(row.calls, 2u);
  EXPECT_EQ(row.not_counted, 2u);
  EXPECT_EQ(row.events[0].per_call.status, CounterStatus::not_counted);
  EXPECT_EQ(row.events[1].per_call.status, CounterStatus::not_counted);
  EXPECT_EQ(row.events[2].per_call.status, CounterStatus::not_supported);
  // Wall time is measured for every call, counted or not.
  EXPECT_EQ(row.wall.status, CounterStatus::ok);
  EXPECT_EQ(row.wall.total, 400.0);
  EXPECT_EQ(row.wall.mean, 200.0);
  EXPECT_EQ(row.wall.min, 100.0);
  EXPECT_EQ(row.wall.max, 300.0);
  // Changed with the new model: a disturbed call's on-CPU time is not trusted either, so a
  // function whose every call was disturbed has no on-CPU time (was: summed like wall time).
  EXPECT_EQ(row.oncpu.status, CounterStatus::not_counted);
}

// A function never called is not an error: totals are a true 0 and there is no per-call
// figure (no_calls), unlike calls whose counters did not run (not counted).
TEST(FuncReportRow, NoCallsAtAll) {
  const FuncRow row = make_func_row("f", "fentry", "", FuncStats(2), 0, kThreeEvents);
  EXPECT_EQ(row.calls, 0u);
  EXPECT_EQ(row.wall.status, CounterStatus::ok);
  EXPECT_TRUE(row.wall.no_calls);
  EXPECT_EQ(row.wall.total, 0);
  EXPECT_EQ(row.events[0].per_call.status, CounterStatus::ok);
  EXPECT_TRUE(row.events[0].per_call.no_calls);
  EXPECT_EQ(row.events[2].per_call.status, CounterStatus::not_supported);
  FunctionReport r;
  r.functions.push_back(row);
  auto j = nlohmann::json::parse(render_func_json(r));
  const auto& ev = j["functions"][0]["events"][row.events[0].event];
  EXPECT_EQ(ev["total"], 0);
  EXPECT_TRUE(ev["mean"].is_null());
  EXPECT_TRUE(ev["p99"].is_null());
}

TEST(FuncReportRow, CallsWithoutRunningCountersAreNotCounted) {
  FuncStats s(2);
  s.add(call(100, 80, {1, 2}, PMCPROF_REC_NOT_COUNTED));
  const FuncRow row = make_func_row("f", "kprobe", "", s, 0, kThreeEvents);
  EXPECT_EQ(row.calls, 1u);
  EXPECT_EQ(row.events[0].per_call.status, CounterStatus::not_counted);
  EXPECT_EQ(row.wall.status, CounterStatus::ok);

  // Per event now: counters that never ran through an undisturbed call are not counted,
  // never 0, while the call's times are real.
  FuncStats idle(2);
  idle.add(call(100, 80, {0, 0}, 0, /*measured=*/0, /*ran=*/0));
  const FuncRow r2 = make_func_row("f", "kprobe", "", idle, 0, kThreeEvents);
  EXPECT_EQ(r2.not_counted, 0u);
  EXPECT_EQ(r2.events[0].per_call.status, CounterStatus::not_counted);
  EXPECT_EQ(r2.events[1].per_call.status, CounterStatus::not_counted);
  EXPECT_EQ(r2.oncpu.status, CounterStatus::ok);
  EXPECT_EQ(r2.oncpu.total, 80.0);
}

TEST(FuncReportRow, MeansAreOverCountedCalls) {
  FuncStats s(2);
  s.add(call(100, 80, {1000, 3000}));
  s.add(call(300, 120, {2000, 5000}, PMCPROF_REC_SLEPT));
  s.add(call(500, 400, {99999, 99999}, PMCPROF_REC_NOT_COUNTED));
  s.add(call(100, 100, {3000, 4000}, PMCPROF_REC_MIGRATED));
  const FuncRow row = make_func_row("libc:malloc", "uprobe", "4242", s, 9, kThreeEvents);
  EXPECT_EQ(row.function, "libc:malloc");
  EXPECT_EQ(row.backend, "uprobe");
  EXPECT_EQ(row.by_value, "4242");
  EXPECT_EQ(row.calls, 4u);
  EXPECT_EQ(row.not_counted, 1u);
  EXPECT_EQ(row.lost, 9u);
  EXPECT_EQ(row.slept, 1u);
  EXPECT_EQ(row.migrated, 1u);
  EXPECT_EQ(row.events[0].per_call.total, 6000.0);
  EXPECT_DOUBLE_EQ(row.events[0].per_call.mean, 2000.0);  // 6000 / 3 counted, not / 4 calls
  EXPECT_EQ(row.events[1].per_call.total, 12000.0);
  EXPECT_DOUBLE_EQ(row.events[1].per_call.mean, 4000.0);
  EXPECT_FALSE(row.events[0].per_call.estimated);  // every counted call measured
  EXPECT_EQ(row.events[0].per_call.measured, 3u);
  // Wall time: every call.
  EXPECT_EQ(row.wall.total, 1000.0);
  EXPECT_DOUBLE_EQ(row.wall.mean, 250.0);
  // On-CPU time: counted calls only (changed with the new model; was 700 over 4 calls).
  EXPECT_EQ(row.oncpu.total, 300.0);
  EXPECT_DOUBLE_EQ(row.oncpu.mean, 100.0);
  EXPECT_EQ(row.oncpu.max, 120.0);  // not the disturbed call's 400
  // Percentiles come from the histogram of counted calls: within 1% of the true nearest-rank
  // value and inside the exact [min, max] (was: interpolated, within 12.5%).
  EXPECT_EQ(row.events[0].per_call.min, 1000.0);
  EXPECT_EQ(row.events[0].per_call.max, 3000.0);
  EXPECT_NEAR(row.events[0].per_call.p50, 2000, 20);
  EXPECT_GE(row.events[0].per_call.p50, 1000);
  EXPECT_LE(row.events[0].per_call.p99, 3000);
  EXPECT_LE(row.events[0].per_call.p50, row.events[0].per_call.p90);
  EXPECT_LE(row.events[0].per_call.p90, row.events[0].per_call.p99);
}

TEST(FuncReportRow, BpfIndexPicksTheSlot) {
  FuncStats s(2);
  s.add(call(10, 10, {111, 222}));
  const std::vector<FuncEventInfo> swapped = {{"instructions", kInstructions, "", 1},
                                              {"cycles", kCycles, "", 0}};
  const FuncRow row = make_func_row("f", "kprobe", "", s, 0, swapped);
  EXPECT_EQ(row.events[0].event, "instructions");
  EXPECT_EQ(row.events[0].per_call.total, 222.0);
  EXPECT_EQ(row.events[1].per_call.total, 111.0);
}

// ---- func_metric ----

TEST(FuncReportMetric, IpcFromCyclesAndInstructions) {
  FuncStats s(2);
  s.add(call(10, 10, {1000, 2500}));
  s.add(call(10, 10, {1000, 1500}));
  const FuncRow row = make_func_row("f", "kprobe", "", s, 0, kThreeEvents);
  const auto m = func_metric(row);
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(m->value, 2.0);
  EXPECT_EQ(m->unit, "insn per cycle");
  EXPECT_FALSE(m->percent);
}

TEST(FuncReportMetric, NoIpcWithoutBothEvents) {
  FuncStats s(2);
  s.add(call(10, 10, {1000, 2500}));
  const std::vector<FuncEventInfo> cycles_only = {{"cycles", kCycles, "", 0},
                                                  {"task-clock", kTaskClock, "ns", 1}};
  EXPECT_FALSE(func_metric(make_func_row("f", "kprobe", "", s, 0, cycles_only)));
  const std::vector<FuncEventInfo> insn_unsupported = {{"cycles", kCycles, "", 0},
                                                       {"instructions", kInstructions, "", {}}};
  EXPECT_FALSE(func_metric(make_func_row("f", "kprobe", "", s, 0, insn_unsupported)));
}

TEST(FuncReportMetric, NoIpcWhenNotCountedOrZeroCycles) {
  FuncStats nc(2);
  nc.add(call(10, 10, {1000, 2500}, PMCPROF_REC_NOT_COUNTED));
  EXPECT_FALSE(func_metric(make_func_row("f", "kprobe", "", nc, 0, kThreeEvents)));
  FuncStats zero(2);
  zero.add(call(10, 10, {0, 2500}));
  EXPECT_FALSE(func_metric(make_func_row("f", "kprobe", "", zero, 0, kThreeEvents)));
}

// ---- renderers: golden files ----

TEST(FuncReportGolden, Text) {
  pmcprof::testing::expect_golden("func_report.txt", render_func_text(sample_report()));
}

TEST(FuncReportGolden, Csv) {
  pmcprof::testing::expect_golden("func_report.csv", render_func_csv(sample_report()));
}

TEST(FuncReportGolden, Json) {
  pmcprof::testing::expect_golden("func_report.json", render_func_json(sample_report()));
}

// ---- renderers: field-level checks ----

TEST(FuncReportText, ShowsRowsStatusesAndWarning) {
  const std::string text = render_func_text(sample_report());
  EXPECT_NE(text.find("Function counter stats for './pingpong 1000' (stream aggregation)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("libc:malloc  [uprobe]"), std::string::npos) << text;
  EXPECT_NE(text.find("syscall:getppid  [tracepoint]"), std::string::npos) << text;
  EXPECT_NE(text.find("<not supported>"), std::string::npos) << text;
  EXPECT_NE(text.find("<not counted>"), std::string::npos) << text;
  EXPECT_NE(text.find("12,345 calls"), std::string::npos) << text;
  EXPECT_NE(text.find("insn per cycle"), std::string::npos) << text;
  EXPECT_NE(text.find("WARNING: 17 records lost"), std::string::npos) << text;
  EXPECT_NE(text.find("1.234567890 seconds time elapsed"), std::string::npos) << text;
  // Per-call times scale to a readable unit.
  EXPECT_NE(text.find("1.00 s"), std::string::npos) << text;
  EXPECT_NE(text.find("200.00 ns"), std::string::npos) << text;
  // min and max columns; the multiplexed event says how many calls it measured.
  EXPECT_NE(text.find("min"), std::string::npos) << text;
  EXPECT_NE(text.find("max"), std::string::npos) << text;
  EXPECT_NE(text.find(" 18,000\n"), std::string::npos) << text;  // whole: no decimals
  EXPECT_NE(text.find("(estimated: 9,000 of 12,340 calls measured)"), std::string::npos) << text;
  EXPECT_EQ(text.find("(estimated", text.find("cycles")), text.find("(estimated: 9,000"))
      << "only the multiplexed event is marked: " << text;
}

TEST(FuncReportText, LargeCountsAreGroupedAlike) {
  // Every count on the calls line uses thousands separators, multiplexed included.
  FunctionReport r = sample_report();
  r.functions[0].slept = 23456;
  r.functions[0].multiplexed = 34567;
  const std::string text = render_func_text(r);
  EXPECT_NE(text.find("23,456 slept"), std::string::npos) << text;
  EXPECT_NE(text.find("34,567 multiplexed"), std::string::npos) << text;
}

TEST(FuncReportText, NoWarningWithoutLoss) {
  FunctionReport r = sample_report();
  r.lost = 0;
  r.partial = false;
  EXPECT_EQ(render_func_text(r).find("WARNING"), std::string::npos);
}

TEST(FuncReportFloor, ATotalBelowTheFloorIsMarkedInTextAndCsv) {
  // Issue 22 (11): more bias taken off than the calls measured leaves a total of 0; the mean
  // is below the floor and so is the total (the mean times the calls): both marked in text,
  // and CSV gives the floor and the calls under it instead of a bare 0.
  FunctionReport r = sample_report();
  Distribution& d = r.functions[0].oncpu;
  d.total = 0;
  d.mean = 0;
  d.noise_floor = 50;
  d.under_floor = 12000;
  const std::string text = render_func_text(r);
  EXPECT_NE(text.find("0.00 ns*        0.00 ns*"), std::string::npos) << text;
  const std::string csv = render_func_csv(r);
  EXPECT_NE(csv.find(",on-cpu-time,ns,0,0.00,140,260,990,80,12000,12340,0,stream,0,50,12000\n"),
            std::string::npos)
      << csv;
  // Prometheus: the calls under the floor, per quantity, where a floor exists (only there).
  const std::string prom = render_prometheus(nullptr, &r, PrometheusStatus{});
  EXPECT_NE(prom.find("pmcprof_function_under_noise_floor_calls_total{function=\"libc:malloc\","
                      "quantity=\"oncpu\"} 12000\n"),
            std::string::npos)
      << prom;
  EXPECT_EQ(prom.find("pmcprof_function_under_noise_floor_calls_total{function=\"libc:malloc\","
                      "quantity=\"wall\"}"),
            std::string::npos)
      << prom;
}

TEST(FuncReportCsv, EveryLineHasTheSameColumns) {
  const std::string csv = render_func_csv(sample_report());
  const auto lines = split(std::string(trim(csv)), '\n');
  // 2 functions x (3 events + wall + on-cpu), then their metrics (4 and 1).
  ASSERT_EQ(lines.size(), 15u) << csv;
  const std::size_t columns = split(lines[0], ',').size();
  // function, backend, by, calls, not counted, lost, event, unit, total, mean, p50, p90, p99,
  // then min, max, calls measured, estimated, aggregation, calls not measured, and (new) the
  // noise floor and the calls below it.
  EXPECT_EQ(columns, 21u) << lines[0];
  for (const auto& line : lines) EXPECT_EQ(split(line, ',').size(), columns) << line;
  EXPECT_EQ(lines[0].rfind("libc:malloc,uprobe,,12345,5,17,cycles,,4938000,", 0), 0u) << lines[0];
  EXPECT_NE(csv.find(",cache-misses,,<not supported>,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("syscall:getppid,tracepoint,,4,4,0,cycles,,<not counted>,"), std::string::npos)
      << csv;
  // The tail: min, max, measured calls, estimated, aggregation, calls not measured, noise
  // floor and calls under it (empty: no bias taken off this row).
  EXPECT_EQ(lines[0],
            "libc:malloc,uprobe,,12345,5,17,cycles,,4938000,400.48,380,700,"
            "2400,212,18000,12340,0,stream,0,,")
      << lines[0];
  EXPECT_EQ(split(lines[1], ',')[16], "1") << lines[1];  // instructions: estimated
  EXPECT_EQ(split(lines[1], ',')[15], "9000") << lines[1];
}

TEST(FuncReportCsv, CustomSeparator) {
  const std::string csv = render_func_csv(sample_report(), ";");
  EXPECT_EQ(csv.rfind("libc:malloc;uprobe;;12345;5;17;cycles;;4938000;", 0), 0u) << csv;
}

TEST(FuncReportJson, FunctionFields) {
  const json j = json::parse(render_func_json(sample_report()));
  EXPECT_EQ(j["mode"], "function");
  EXPECT_EQ(j["type"], "report");
  EXPECT_EQ(j["target"], "./pingpong 1000");
  EXPECT_EQ(j["aggregation"], "stream");
  EXPECT_FALSE(j.contains("by"));
  EXPECT_FALSE(j.contains("interval"));
  EXPECT_TRUE(j["elapsed_ns"].is_number_unsigned());
  EXPECT_EQ(j["elapsed_ns"], 1234567890u);
  EXPECT_EQ(j["timestamp_unix_ns"], 1700000000123456789ULL);
  EXPECT_EQ(j["exit_status"], 0);
  EXPECT_EQ(j["lost"], 17);
  EXPECT_EQ(j["partial"], true);

  ASSERT_TRUE(j["functions"].is_array());
  ASSERT_EQ(j["functions"].size(), 2u);
  const json& f = j["functions"][0];
  EXPECT_EQ(f["function"], "libc:malloc");
  EXPECT_EQ(f["backend"], "uprobe");
  for (const char* key : {"calls", "not_counted", "lost", "wall_ns", "oncpu_ns"})
    EXPECT_TRUE(f[key].is_number()) << key << " = " << f[key];
  EXPECT_EQ(f["calls"], 12345);
  EXPECT_EQ(f["not_counted"], 5);
  EXPECT_EQ(f["lost"], 17);
  EXPECT_EQ(f["wall_ns"], 2469000);
  EXPECT_EQ(f["oncpu_ns"], 1851000);
  for (const char* key :
       {"abandoned", "reentered", "state_failed", "not_aggregated", "read_errors"})
    EXPECT_EQ(f[key], 0) << key;  // present and 0: nothing was silently dropped
  EXPECT_FALSE(f.contains("backend_note"));
  EXPECT_EQ(j["untracked_processes"], 0);
  EXPECT_FALSE(j.contains("kernel_view"));

  const json& cycles = f["events"]["cycles"];
  for (const char* key : {"total", "mean", "p50", "p90", "p99"})
    EXPECT_TRUE(cycles[key].is_number()) << key << " = " << cycles[key];
  EXPECT_EQ(cycles["total"], 4938000);
  EXPECT_DOUBLE_EQ(cycles["mean"].get<double>(), 400.48);
  EXPECT_DOUBLE_EQ(cycles["p99"].get<double>(), 2400.0);
  EXPECT_EQ(cycles["min"], 212);
  EXPECT_EQ(cycles["max"], 18000);
  EXPECT_EQ(cycles["measured_calls"], 12340);
  EXPECT_EQ(cycles["estimated"], false);
  EXPECT_EQ(cycles["status"], "ok");
  EXPECT_EQ(cycles["unit"], "count");
  const json& insns = f["events"]["instructions"];
  EXPECT_EQ(insns["estimated"], true);
  EXPECT_EQ(insns["measured_calls"], 9000);
  EXPECT_EQ(insns["total"], 9876000);

  const json& unsupported = f["events"]["cache-misses"];
  EXPECT_EQ(unsupported["status"], "not-supported");
  EXPECT_TRUE(unsupported["total"].is_null());
  EXPECT_TRUE(unsupported["mean"].is_null());
  EXPECT_TRUE(unsupported["p99"].is_null());

  ASSERT_TRUE(f.contains("metric"));
  EXPECT_NEAR(f["metric"]["value"].get<double>(), 2.0, 1e-9);

  const json& g = j["functions"][1];
  EXPECT_EQ(g["events"]["cycles"]["status"], "not-counted");
  EXPECT_TRUE(g["events"]["cycles"]["total"].is_null());
  EXPECT_TRUE(g["events"]["cycles"]["min"].is_null());
  EXPECT_FALSE(g.contains("metric"));
  EXPECT_EQ(g["wall_ns"], 4000000000ULL);
  EXPECT_EQ(g["wall"]["min"], 800000000);
  EXPECT_EQ(g["oncpu"]["status"], "not-counted");
  EXPECT_TRUE(g["oncpu"]["total"].is_null());
}

TEST(FuncReportJson, NotCountedOnCpuTimeIsNullNeverZero) {
  // Every call disturbed: on-CPU time is not counted. Its top-level total must say so (null),
  // like oncpu.total, not claim 0 ns. (The golden func_report.json expects the same.)
  FuncStats s(2);
  s.add(call(100, 90, {1000, 2000}, PMCPROF_REC_NOT_COUNTED));
  FunctionReport r;
  r.functions.push_back(make_func_row("f", "kprobe", "", s, 0, kThreeEvents));
  const json j = json::parse(render_func_json(r));
  const json& f = j["functions"][0];
  EXPECT_EQ(f["oncpu"]["status"], "not-counted");
  EXPECT_TRUE(f["oncpu"]["total"].is_null());
  EXPECT_TRUE(f["oncpu_ns"].is_null()) << "oncpu_ns = " << f["oncpu_ns"];
  EXPECT_EQ(f["wall_ns"], 100);
}

TEST(FuncReportJson, NotPartialWithoutLoss) {
  FunctionReport r = sample_report();
  r.lost = 0;
  r.partial = false;
  const json j = json::parse(render_func_json(r));
  EXPECT_EQ(j["partial"], false);
  EXPECT_EQ(j["lost"], 0);
}

TEST(FuncReportJson, ByKeyNamesTheBreakdown) {
  FunctionReport r = sample_report();
  r.by = "pid";
  r.functions[0].by_value = "4242";
  r.functions[1].by_value = "4243";
  const json j = json::parse(render_func_json(r));
  EXPECT_EQ(j["by"], "pid");
  EXPECT_EQ(j["functions"][0]["pid"], "4242");
  EXPECT_EQ(j["functions"][1]["pid"], "4243");
}

TEST(FuncReportJson, IntervalRendererStreamsNdjson) {
  RenderOptions opts;
  opts.format = OutputFormat::json;
  std::ostringstream out;
  auto renderer = make_func_renderer(opts, out);
  FunctionReport r = sample_report();
  r.interval_s = 1.0;
  renderer->interval(r);
  renderer->final(r);
  const auto lines = split(std::string(trim(out.str())), '\n');
  ASSERT_EQ(lines.size(), 2u) << out.str();
  const json first = json::parse(lines[0]);
  const json last = json::parse(lines[1]);
  EXPECT_EQ(first["type"], "interval");
  EXPECT_EQ(first["interval"], 1.0);
  EXPECT_EQ(last["type"], "summary");
  EXPECT_FALSE(last.contains("interval"));
}

TEST(FuncReportJson, NdjsonSaysTheProbeBiasOnceThenInTheSummary) {
  // Issue 23: probe_bias was repeated in every interval record though it is calibrated once.
  RenderOptions opts;
  opts.format = OutputFormat::json;
  std::ostringstream out;
  auto renderer = make_func_renderer(opts, out);
  FunctionReport r = sample_report();
  ProbeBiasRow bias;
  bias.backend = "uprobe";
  bias.calibrated = true;
  bias.subtracted = true;
  bias.calls = 64;
  bias.wall_ns = bias.oncpu_ns = 442;
  r.probe_bias = {bias};
  for (double s : {1.0, 2.0, 3.0}) {
    r.interval_s = s;
    renderer->interval(r);
  }
  renderer->final(r);
  const auto lines = split(std::string(trim(out.str())), '\n');
  ASSERT_EQ(lines.size(), 4u) << out.str();
  std::vector<json> records;
  for (const auto& line : lines) records.push_back(json::parse(line));
  ASSERT_TRUE(records[0].contains("probe_bias"));
  EXPECT_EQ(records[0]["probe_bias"][0]["wall_ns"], 442);
  EXPECT_FALSE(records[1].contains("probe_bias")) << lines[1];
  EXPECT_FALSE(records[2].contains("probe_bias")) << lines[2];
  EXPECT_EQ(records[3]["type"], "summary");
  EXPECT_EQ(records[3]["probe_bias"], records[0]["probe_bias"]);
}

TEST(FuncReportCsv, IntervalThenSummaryKeepColumns) {
  // -I with -x: interval rows start with their time; the summary rows after them must keep
  // the same columns (the counting-mode CSV writes "summary" in that cell).
  RenderOptions opts;
  opts.format = OutputFormat::csv;
  opts.intervals = true;
  std::ostringstream out;
  auto renderer = make_func_renderer(opts, out);
  FunctionReport r = sample_report();
  r.interval_s = 1.0;
  renderer->interval(r);
  renderer->final(r);
  const auto lines = split(std::string(trim(out.str())), '\n');
  ASSERT_EQ(lines.size(), 30u) << out.str();
  EXPECT_EQ(lines[0].rfind("1.000000000,libc:malloc,", 0), 0u) << lines[0];
  const std::size_t columns = split(lines[0], ',').size();
  for (const auto& line : lines) EXPECT_EQ(split(line, ',').size(), columns) << line;
  EXPECT_EQ(lines[15].rfind("summary,libc:malloc,", 0), 0u) << lines[15];
}

// ---- multiplexing, per call: each event measures the calls it ran through ----

TEST(FuncReportMultiplexing, PartlyMeasuredEventIsEstimatedFromTheCallsItMeasured) {
  // Event 0 ran through all 6 calls (200 us each on CPU); event 1 through 4 of them and only
  // part of 2 (measured bit clear, ran bit set). Event 1's total is its exact sum plus the 2
  // calls it ran in part at its rate per on-CPU ns over the 4 it measured (56,000 over 800 us:
  // 14,000 each), not their enabled/running-scaled values (99,999 here): those multiply the
  // rotation's interrupt by the share of the call the event did not run. Marked estimated;
  // event 0 is exact.
  FuncStats s(2);
  s.add(call(200000, 200000, {1000, 10000}));
  s.add(call(200000, 200000, {1100, 12000}));
  s.add(call(200000, 200000, {1200, 14000}, 0, 0x1, 0x3));  // event 1 in part: not measured
  s.add(call(200000, 200000, {1300, 16000}));
  s.add(call(200000, 200000, {1400, 99999}, 0, 0x1, 0x3));
  s.add(call(200000, 200000, {1500, 18000}));
  const FuncRow row = make_func_row("f", "kprobe", "", s, 0, kThreeEvents);
  EXPECT_EQ(row.multiplexed, 2u);
  const Distribution& c = row.events[0].per_call;
  EXPECT_EQ(c.status, CounterStatus::ok);
  EXPECT_FALSE(c.estimated);
  EXPECT_EQ(c.measured, 6u);
  EXPECT_EQ(c.total, 7500.0);
  EXPECT_DOUBLE_EQ(c.mean, 1250.0);
  const Distribution& i = row.events[1].per_call;
  EXPECT_EQ(i.status, CounterStatus::ok);
  EXPECT_TRUE(i.estimated);
  EXPECT_EQ(i.measured, 4u);
  EXPECT_DOUBLE_EQ(i.total, 56000.0 + 2 * 14000);
  EXPECT_DOUBLE_EQ(i.mean, 84000.0 / 6);
  // Percentiles, min and max over the 4 measured calls only (99999 ran in part: out).
  EXPECT_TRUE(i.percentiles);
  EXPECT_EQ(i.min, 10000.0);
  EXPECT_EQ(i.max, 18000.0);
  EXPECT_LE(i.p99, 18000.0);
  EXPECT_NEAR(i.p50, 12000, 120);
  // IPC from the scaled totals.
  const FuncRow ipc =
      make_func_row("f", "kprobe", "", s, 0,
                    {{"cycles", kCycles, "", 0}, {"instructions", kInstructions, "", 1}});
  ASSERT_TRUE(func_metric(ipc));
  EXPECT_DOUBLE_EQ(func_metric(ipc)->value, 84000.0 / 7500.0);
}

TEST(FuncReportMultiplexing, EventThatOnlyRanInPartIsEstimatedWithoutPercentiles) {
  // Event 1 never ran through a whole call (each longer than a rotation) but ran in part
  // through 2 of 4: its total comes from the scaled deltas, scaled again to all calls; there
  // is no exact per-call value, so no percentiles, min or max.
  FuncStats s(2);
  s.add(call(200000, 200000, {10, 3000}, 0, 0x1, 0x3));
  s.add(call(200000, 200000, {10, 0}, 0, 0x1, 0x1));
  s.add(call(200000, 200000, {10, 5000}, 0, 0x1, 0x3));
  s.add(call(200000, 200000, {10, 0}, 0, 0x1, 0x1));
  const FuncRow row = make_func_row("f", "kprobe", "", s, 0, kThreeEvents);
  const Distribution& d = row.events[1].per_call;
  EXPECT_EQ(d.status, CounterStatus::ok);
  EXPECT_TRUE(d.estimated);
  EXPECT_FALSE(d.percentiles);
  EXPECT_EQ(d.measured, 0u);
  EXPECT_DOUBLE_EQ(d.total, 8000.0 * 4 / 2);
  EXPECT_DOUBLE_EQ(d.mean, 4000.0);
  EXPECT_FALSE(row.events[0].per_call.estimated);

  FunctionReport r;
  r.functions.push_back(row);
  const json j = json::parse(render_func_json(r));
  const json& e = j["functions"][0]["events"]["instructions"];
  EXPECT_EQ(e["status"], "ok");
  EXPECT_EQ(e["total"], 16000);
  EXPECT_DOUBLE_EQ(e["mean"].get<double>(), 4000.0);
  for (const char* key : {"p50", "p90", "p99", "min", "max"})
    EXPECT_TRUE(e[key].is_null()) << key << " = " << e[key];
  EXPECT_EQ(e["estimated"], true);
  EXPECT_EQ(e["measured_calls"], 0);
  const std::string text = render_func_text(r);
  EXPECT_NE(text.find("(estimated: 0 of 4 calls measured)"), std::string::npos) << text;
  const std::string csv = render_func_csv(r);
  EXPECT_NE(csv.find(",instructions,,16000,4000.00,,,,,,0,1,"), std::string::npos) << csv;
}

TEST(FuncReportMultiplexing, EventThatNeverRanIsNotCounted) {
  FuncStats s(2);
  for (int k = 0; k < 3; ++k) s.add(call(100, 90, {10, 0}, 0, 0x1, 0x1));
  const FuncRow row = make_func_row("f", "kprobe", "", s, 0, kThreeEvents);
  EXPECT_EQ(row.events[0].per_call.status, CounterStatus::ok);
  EXPECT_EQ(row.events[1].per_call.status, CounterStatus::not_counted);  // never 0
  FunctionReport r;
  r.functions.push_back(row);
  EXPECT_NE(render_func_text(r).find("<not counted>"), std::string::npos);
  const json j = json::parse(render_func_json(r));
  EXPECT_TRUE(j["functions"][0]["events"]["instructions"]["total"].is_null());
  EXPECT_EQ(j["functions"][0]["events"]["instructions"]["status"], "not-counted");
}

TEST(FuncReportMultiplexing, DisturbedCallsOnlyCountInWallTime) {
  // A not-counted (disturbed) call is left out of every event, whatever its measured bits
  // say, and out of on-CPU time; it is in wall time and in the call count.
  FuncStats s(2);
  s.add(call(100, 80, {1000, 2000}));
  s.add(call(300, 200, {3000, 4000}));
  s.add(call(9000, 8000, {777777, 888888}, PMCPROF_REC_NOT_COUNTED));
  const FuncRow row = make_func_row("f", "kprobe", "", s, 0, kThreeEvents);
  EXPECT_EQ(row.calls, 3u);
  EXPECT_EQ(row.not_counted, 1u);
  for (std::size_t e = 0; e < 2; ++e) {
    const Distribution& d = row.events[e].per_call;
    EXPECT_EQ(d.measured, 2u) << e;
    EXPECT_FALSE(d.estimated) << e;  // measured every counted call: exact
    EXPECT_LT(d.max, 5000.0) << e;
  }
  EXPECT_EQ(row.events[0].per_call.total, 4000.0);
  EXPECT_EQ(row.events[1].per_call.total, 6000.0);
  EXPECT_EQ(row.oncpu.total, 280.0);
  EXPECT_EQ(row.oncpu.max, 200.0);
  EXPECT_EQ(row.oncpu.measured, 2u);
  EXPECT_EQ(row.wall.total, 9400.0);
  EXPECT_EQ(row.wall.max, 9000.0);
  EXPECT_EQ(row.wall.measured, 3u);
  EXPECT_FALSE(row.wall.estimated);
}

// ---- make_distribution ----

TEST(MakeDistribution, NoCallsIsATrueZero) {
  const Distribution d = make_distribution({0, 0, 0, 0, 0, 0, 0}, Histogram{});
  EXPECT_EQ(d.status, CounterStatus::ok);
  EXPECT_TRUE(d.no_calls);
  EXPECT_EQ(d.total, 0.0);
}

TEST(MakeDistribution, CallsButNothingMeasuredIsNotCounted) {
  const Distribution d = make_distribution({5, 0, 0, 0, 0, 0, 0}, Histogram{});
  EXPECT_EQ(d.status, CounterStatus::not_counted);
  EXPECT_FALSE(d.no_calls);
}

TEST(MakeDistribution, ExactWhenEveryCallMeasured) {
  Histogram h;
  for (int k = 0; k < 20; ++k) h.add(2003);
  const Distribution d = make_distribution({20, 20, 40060, 2003, 2003, 0, 0}, h);
  EXPECT_EQ(d.status, CounterStatus::ok);
  EXPECT_FALSE(d.estimated);
  EXPECT_EQ(d.total, 40060.0);
  EXPECT_EQ(d.mean, 2003.0);
  // Issue 9's case: was p50 = 1,913.6; the exact min/max pin it.
  EXPECT_EQ(d.p50, 2003.0);
  EXPECT_EQ(d.p90, 2003.0);
  EXPECT_EQ(d.p99, 2003.0);
  EXPECT_EQ(d.min, 2003.0);
  EXPECT_EQ(d.max, 2003.0);
}

TEST(MakeDistribution, PartialCallsKeepTheirScaledValues) {
  // Issue 22 (1): the partly measured calls' scaled values were dropped whenever one call was
  // measured exactly, and the exact sum scaled by calls/measured: 10,000 for ~109,000.
  Histogram h;
  for (int k = 0; k < 90; ++k) h.add(100);
  const Distribution d = make_distribution({100, 90, 9000, 100, 100, 10, 100000}, h);
  EXPECT_TRUE(d.estimated);
  EXPECT_EQ(d.measured, 90u);
  EXPECT_DOUBLE_EQ(d.total, 109000.0);
  EXPECT_DOUBLE_EQ(d.mean, 1090.0);
  EXPECT_EQ(d.p50, 100.0);
}

TEST(MakeDistribution, UnrunCallsPerStratumOfOnCpuTime) {
  // Multiplexing leaves short calls out whatever their size, long ones less often the longer
  // they are. Short calls (under PMCPROF_SHORT_CALL_NS on CPU): 2 measured (100 each), 3 left
  // out: 100 each. Long: one measured (100,000 over 100,000 ns), one in part (scaled 50,000,
  // not used) and one left out, 200,000 ns on CPU between them: 1 per ns, 200,000. A per-call
  // scaling of the calls it ran in would read 150,200 x 8 / 4 = 300,400.
  const Distribution d = make_distribution(
      {8, 3, 100200, 100, 100000, 1, 50000, 2, 200, 100000, 3, 200000, 0}, Histogram{});
  EXPECT_TRUE(d.estimated);
  EXPECT_DOUBLE_EQ(d.total, 300500.0);
  // Every call tiny (the noise of on-CPU time would swamp a rate per ns): the calls left out
  // are the mean of those measured, exactly 202 here.
  const Distribution tiny = make_distribution({10, 7, 1414, 202, 202, 0, 0, 7, 1414, 0, 3, 0, 0},
                                              Histogram{});  // 7 x 202
  EXPECT_DOUBLE_EQ(tiny.mean, 202.0);
  // No long call measured: the long ones not measured (one in part, one left out) are the mean
  // of the scaled values of the calls it ran in part (1,000); without any stratum data,
  // likewise.
  const Distribution none =
      make_distribution({4, 2, 200, 100, 100, 1, 1000, 2, 200, 0, 0, 5000, 0}, Histogram{});
  EXPECT_DOUBLE_EQ(none.total, 200.0 + 2 * 1000.0);
  const Distribution m = make_distribution({8, 2, 400, 100, 300, 5, 99999}, Histogram{});
  EXPECT_DOUBLE_EQ(m.total, 400.0 + 6 * 99999.0 / 5);
  // Nothing measured, 2 short calls in part: the mean of their scaled values (all there is).
  const Distribution blind = make_distribution({4, 0, 0, 0, 0, 2, 300, 0, 0, 0, 4, 0}, Histogram{});
  EXPECT_DOUBLE_EQ(blind.total, 600.0);
}

TEST(MakeDistribution, SignedSumsOfCompensatedValues) {
  // Issue 22 (7): with the bias taken off, a call cheaper than the median probe reads below
  // 0; summed as it is (two's complement), not clamped per call: the total is not pushed up.
  Histogram h;
  for (int k = 0; k < 4; ++k) h.add(0);
  const std::uint64_t minus_10 = ~std::uint64_t{10} + 1;  // -10
  const Distribution d = make_distribution({4, 4, 40 + minus_10, 0, 30, 0, 0, 0, 0, 0, 0, 0, 3}, h);
  EXPECT_DOUBLE_EQ(d.total, 30.0);  // per call clamped at 0 it would be 40
  EXPECT_EQ(d.under_floor, 3u);
  // A total below 0 (more bias taken off than measured) is within the noise: 0, and flagged
  // by its calls under the floor, never a negative count.
  const Distribution z = make_distribution({4, 4, minus_10, 0, 30, 0, 0, 0, 0, 0, 0, 0, 4}, h);
  EXPECT_EQ(z.total, 0.0);
  EXPECT_EQ(z.under_floor, 4u);
}

TEST(MakeDistribution, PercentilesOfCountsAreWholeNumbers) {
  // Issue 22 (12): every call made 100, 150 or 200 page faults: no bucket decimals, and the
  // last rank's value is the exact max.
  Histogram h;
  for (int v : {100, 150, 200})
    for (int k = 0; k < 33; ++k) h.add(static_cast<std::uint64_t>(v));
  const Distribution d = make_distribution({99, 99, 14850, 100, 200, 0, 0}, h);  // 33 x 450
  EXPECT_EQ(d.p50, std::round(d.p50));
  EXPECT_NEAR(d.p50, 150.0, 1.5);
  EXPECT_EQ(d.p99, std::round(d.p99));
  EXPECT_NEAR(d.p99, 200.0, 2.0);
  Histogram two;
  two.add(150);
  two.add(200);
  const Distribution e = make_distribution({2, 2, 350, 150, 200, 0, 0}, two);
  EXPECT_EQ(e.p50, 150.0);  // the first rank: the min
  EXPECT_EQ(e.p90, 200.0);  // the last rank: the max
  EXPECT_EQ(e.p99, 200.0);
}

// ---- precision that matches the data (issue 23) ----

namespace {

// 99 calls making exactly 100, 150 or 200 page faults each, of 448,474 ns and up (2 % buckets
// there), and one of 281 ns on-CPU: the figures a percentile reads are whole numbers.
FunctionReport whole_number_report() {
  const std::vector<FuncEventInfo> events = {
      {"page-faults", {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS}, "", 0}};
  FuncStats st(1);
  for (std::uint64_t v : {100, 150, 200})
    for (std::uint64_t k = 0; k < 33; ++k) st.add(call(448474 + 997 * k, 281 + 13 * k, {v}));
  FunctionReport r;
  r.aggregation = "stream";
  r.functions.push_back(make_func_row("./faulty:touch", "uprobe", "", st, 0, events));
  return r;
}

}  // namespace

TEST(FuncReportPrecision, JsonPercentilesOfWholeNumbersAreIntegersInMinMax) {
  const json j = json::parse(render_func_json(whole_number_report()));
  const json& f = j["functions"][0];
  for (const json* d : {&f["wall"], &f["oncpu"], &f["events"]["page-faults"]}) {
    for (const char* k : {"p50", "p90", "p99", "min", "max"})
      EXPECT_TRUE((*d)[k].is_number_integer()) << k << ": " << d->dump();
    for (const char* k : {"p50", "p90", "p99"}) {
      EXPECT_GE((*d)[k].get<double>(), (*d)["min"].get<double>()) << d->dump();
      EXPECT_LE((*d)[k].get<double>(), (*d)["max"].get<double>()) << d->dump();
    }
  }
  EXPECT_EQ(f["events"]["page-faults"]["p99"], 200) << f.dump();
}

TEST(FuncReportPrecision, TextAndCsvPrintNoBucketDecimals) {
  const FunctionReport r = whole_number_report();
  // Text: the mean of whole numbers keeps its decimals, a percentile, min or max has none.
  const std::string text = render_func_text(r);
  bool seen = false;
  for (const auto& line : split(text, '\n')) {
    std::istringstream in(line);
    const std::vector<std::string> cells{std::istream_iterator<std::string>(in),
                                         std::istream_iterator<std::string>()};
    if (cells.empty() || cells[0] != "page-faults") continue;
    seen = true;
    ASSERT_EQ(cells.size(), 8u) << line;
    EXPECT_EQ(cells[2], "150.00") << line;  // the mean
    for (std::size_t i = 3; i < cells.size(); ++i)
      EXPECT_EQ(cells[i].find('.'), std::string::npos) << line;
    EXPECT_EQ(cells[7], "200") << line;
  }
  EXPECT_TRUE(seen) << text;
  // Whole ns below 1 us: "281 ns", not "281.00 ns" (the mean keeps its decimals).
  EXPECT_NE(text.find(" 281 ns"), std::string::npos) << text;
  EXPECT_EQ(text.find(" 281.00 ns"), std::string::npos) << text;
  // CSV: p50, p90, p99, min and max (columns 10 to 14) without decimals, in every row.
  for (const auto& line : split(std::string(trim(render_func_csv(r))), '\n')) {
    const auto cols = split(line, ',');
    ASSERT_EQ(cols.size(), 21u) << line;
    for (std::size_t i = 10; i <= 14; ++i) EXPECT_EQ(cols[i].find('.'), std::string::npos) << line;
  }
}

TEST(MakeDistribution, OnlyPartialRuns) {
  const Distribution d = make_distribution({10, 0, 0, 0, 0, 4, 2000}, Histogram{});
  EXPECT_EQ(d.status, CounterStatus::ok);
  EXPECT_TRUE(d.estimated);
  EXPECT_FALSE(d.percentiles);
  EXPECT_DOUBLE_EQ(d.total, 5000.0);
  EXPECT_DOUBLE_EQ(d.mean, 500.0);
}

// ---- --aggregate both: two views of the same calls in one document ----

namespace {

MetricChoice table_metric(const std::string& name) {
  for (const auto& d : metric_table())
    if (d.name == name) return {&d, &d.variants.front()};
  ADD_FAILURE() << "no metric " << name;
  return {};
}

// Records -> FuncStats -> make_func_row -> the renderers: a multiplexed event, a disturbed
// call, an event that only ran in part, one that never ran, the unmeasured-call counters and a
// fentry target that fell back to kprobes; the kernel's view of the same calls beside it.
FunctionReport both_report() {
  const std::vector<FuncEventInfo> events = {
      {"cycles", kCycles, "", 0},
      {"instructions", kInstructions, "", 1},
      {"task-clock", kTaskClock, "ns", 2},
      {"cache-misses", kCacheMisses, "", std::nullopt},
  };
  // IPC (instructions / cycles) and CPUs utilized (task-clock / wall time), per call.
  const std::vector<CallMetricOperands> per_call = {{1, 0}, {2, kOperandWall}};
  const std::vector<FuncMetricInfo> metrics = {
      {table_metric("IPC"), false, {{"instructions", 1}, {"cycles", 0}}, 0, ""},
      {table_metric("CPUs_utilized"), false, {{"task-clock", 2}}, 1, ""},
  };
  FuncStats malloc_stats(3, per_call);
  const std::uint64_t cyc[] = {2100, 2250, 1980, 2400, 2003, 2003, 2210, 9050, 2120, 2090};
  for (std::size_t k = 0; k < 10; ++k) {
    const std::uint64_t oncpu = 700 + 10 * k;
    const bool in_part = k % 4 == 1;  // instructions ran through part of 3 calls
    malloc_stats.add(call(oncpu + 40 * k, oncpu, {cyc[k], cyc[k] * 2 + k, oncpu},
                          k == 6 ? PMCPROF_REC_SLEPT : 0, in_part ? 0x5 : 0x7, 0x7));
  }
  malloc_stats.add(
      call(250000, 900, {4000, 8000, 900}, PMCPROF_REC_NOT_COUNTED | PMCPROF_REC_SLEPT));
  FuncRow malloc_row = make_func_row("libc:malloc", "uprobe", "", malloc_stats, 0, events, metrics);
  malloc_row.abandoned = 2;
  malloc_row.read_errors = 1;

  FuncStats tcp_stats(3, per_call);
  for (std::uint64_t k = 0; k < 4; ++k)
    tcp_stats.add(call(15000 + 1000 * k, 14000 + 500 * k, {30000 + k, 0, 14000 + 500 * k}, 0, 0x4,
                       k % 2 ? 0x5 : 0x4));
  FuncRow tcp_row = make_func_row("tcp_sendmsg", "kprobe", "", tcp_stats, 0, events, metrics);
  tcp_row.reentered = 1;
  tcp_row.state_failed = 3;
  tcp_row.backend_note = "fentry refused by the kernel (errno 524): using kprobe";

  FunctionReport kernel;
  kernel.target = "system wide";
  kernel.aggregation = "kernel";
  kernel.elapsed_ns = 2000000000;
  kernel.timestamp_unix_ns = 1700000000000000000ULL;
  kernel.functions = {malloc_row, tcp_row};
  kernel.functions[1].not_aggregated = 4;

  ProbeBiasRow uprobe;
  uprobe.backend = "uprobe";
  uprobe.probed = "an empty function in pmcprof";
  uprobe.calibrated = true;
  uprobe.subtracted = true;
  uprobe.calls = 64;
  uprobe.events = {{"cycles", "", 1520},
                   {"instructions", "", 412},
                   {"task-clock", "ns", 1500},
                   {"cache-misses", "", std::nullopt}};
  uprobe.wall_ns = 1810;
  uprobe.oncpu_ns = 1500;
  uprobe.nested = ProbeBiasRow::Nested{{{"cycles", "", 6100},
                                        {"instructions", "", 1700},
                                        {"task-clock", "ns", 5900},
                                        {"cache-misses", "", std::nullopt}},
                                       5900,
                                       5900,
                                       450,
                                       450,
                                       120,
                                       120};
  uprobe.nested_subtracted = true;
  ProbeBiasRow kprobe;
  kprobe.backend = "kprobe";
  kprobe.why_not = "bpf_fentry_test1 not found";
  kernel.probe_bias = {uprobe, kprobe};

  FunctionReport r = kernel;
  r.aggregation = "stream";
  r.untracked = 2;
  r.functions[1].not_aggregated = 0;
  r.kernel_view = std::make_shared<const FunctionReport>(kernel);
  return r;
}

}  // namespace

TEST(FuncReportBoth, JsonIsOneDocumentWithTheKernelView) {
  const std::string text = render_func_json(both_report());
  const json j = json::parse(text);  // throws on two concatenated documents
  EXPECT_EQ(j["aggregation"], "stream");
  EXPECT_EQ(j["untracked_processes"], 2);
  ASSERT_TRUE(j.contains("kernel_view"));
  const json& k = j["kernel_view"];
  EXPECT_EQ(k["aggregation"], "kernel");
  EXPECT_EQ(k["type"], "report");
  EXPECT_EQ(k["functions"][1]["not_aggregated"], 4);
  EXPECT_EQ(j["functions"][1]["not_aggregated"], 0);
  EXPECT_EQ(k["functions"][0]["calls"], j["functions"][0]["calls"]);
  const json& m = j["functions"][0];
  EXPECT_EQ(m["abandoned"], 2);
  EXPECT_EQ(m["read_errors"], 1);
  EXPECT_EQ(m["events"]["instructions"]["estimated"], true);
  EXPECT_EQ(m["events"]["instructions"]["measured_calls"], 7);
  EXPECT_EQ(m["events"]["cycles"]["estimated"], false);
  EXPECT_EQ(m["events"]["cycles"]["min"], 1980);
  EXPECT_EQ(m["events"]["cycles"]["max"], 9050);
  ASSERT_EQ(j["probe_bias"].size(), 2u);
  const json& ub = j["probe_bias"][0];
  EXPECT_EQ(ub["backend"], "uprobe");
  EXPECT_EQ(ub["calibrated"], true);
  EXPECT_EQ(ub["subtracted"], true);
  EXPECT_EQ(ub["calls"], 64);
  EXPECT_EQ(ub["events"]["instructions"], 412);
  EXPECT_TRUE(ub["events"]["cache-misses"].is_null());  // never 0
  // What probed calls inside add to a call's noise floor (the nested cost's spread and
  // tail), beside what each costs.
  EXPECT_EQ(ub["nested"]["oncpu_ns"], 5900);
  EXPECT_EQ(ub["nested"]["wall_floor_ns"], 450);
  EXPECT_EQ(ub["nested"]["oncpu_floor_ns"], 450);
  EXPECT_EQ(ub["nested"]["wall_tail_ns"], 120);
  EXPECT_EQ(ub["nested"]["oncpu_tail_ns"], 120);
  EXPECT_EQ(j["probe_bias"][1]["calibrated"], false);
  EXPECT_EQ(j["probe_bias"][1]["why_not"], "bpf_fentry_test1 not found");
  const json& t = j["functions"][1];
  EXPECT_EQ(t["reentered"], 1);
  EXPECT_EQ(t["state_failed"], 3);
  EXPECT_EQ(t["backend_note"], "fentry refused by the kernel (errno 524): using kprobe");
  EXPECT_EQ(t["events"]["cycles"]["estimated"], true);
  EXPECT_TRUE(t["events"]["cycles"]["p50"].is_null());
  EXPECT_EQ(t["events"]["instructions"]["status"], "not-counted");
  EXPECT_EQ(t["events"]["task-clock"]["estimated"], false);
}

TEST(FuncReportBoth, TextAndCsvShowBothViews) {
  const FunctionReport r = both_report();
  std::ostringstream text;
  RenderOptions opts;
  make_func_renderer(opts, text)->final(r);
  EXPECT_NE(text.str().find("(stream aggregation)"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("(kernel aggregation)"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("2 new processes could not be followed"), std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("4 calls not aggregated in the kernel"), std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("1 calls inside pmcprof's own probes"), std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("(fentry refused by the kernel (errno 524): using kprobe)"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("probe bias (uprobe, 64 calls of an empty function in pmcprof; "
                            "subtracted): the probe adds about 1.50 us on-CPU, 1.81 us wall, "
                            "1,520 cycles, 412 instructions, 1.50 us task-clock per call"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("probe bias (kprobe): not measured: bpf_fentry_test1 not found"),
            std::string::npos)
      << text.str();
  const std::string csv = render_func_csv(r);
  const auto lines = split(std::string(trim(csv)), '\n');
  // 2 views x 2 functions x (4 events + wall + on-CPU + 2 metrics)
  ASSERT_EQ(lines.size(), 2u * 2 * (4 + 2 + 2)) << csv;
  std::size_t stream = 0, kernel = 0;
  for (const auto& line : lines) {
    const auto cells = split(line, ',');
    ASSERT_EQ(cells.size(), 21u) << line;
    stream += cells[17] == "stream";
    kernel += cells[17] == "kernel";
    // Calls not measured, per function: malloc 2 abandoned; tcp_sendmsg 1 re-entered and 3
    // without state, and 4 not aggregated in the kernel's view.
    const bool is_malloc = cells[0] == "libc:malloc";
    EXPECT_EQ(cells[18], is_malloc ? "2" : cells[17] == "kernel" ? "8" : "4") << line;
  }
  EXPECT_EQ(stream, 16u);
  EXPECT_EQ(kernel, 16u);
}

TEST(FuncReportGolden, BothText) {
  // Through the renderer, as `stat` prints it (render_func_text renders one view only).
  std::ostringstream text;
  make_func_renderer(RenderOptions{}, text)->final(both_report());
  pmcprof::testing::expect_golden("func_report_both.txt", text.str());
}

TEST(FuncReportGolden, BothCsv) {
  pmcprof::testing::expect_golden("func_report_both.csv", render_func_csv(both_report()));
}

TEST(FuncReportGolden, BothJson) {
  pmcprof::testing::expect_golden("func_report_both.json", render_func_json(both_report()));
}

// ---- /metrics: a multiplexed event's histogram holds the calls it measured ----

TEST(FuncReportProbeCost, EveryFormatSaysWhatTheProbesCost) {
  // Issue 21: per function, the calibrated cost of a probe pair to its caller times the calls
  // that fired the probes (one too deep for a return probe: half), as CPU time.
  FuncStats s(2);
  s.add(call(100, 90, {10, 100}));
  FunctionReport r;
  r.target = "t";
  r.aggregation = "kernel";
  r.functions.push_back(make_func_row("f", "uprobe", "", s, 0, kThreeEvents));
  r.functions[0].probe_cost = FuncRow::ProbeCost{1500, 4.5};
  const std::string text = render_func_text(r);
  EXPECT_NE(text.find("probes cost about 6.75 us of CPU time in all, 1.50 us a call"),
            std::string::npos)
      << text;
  const std::string csv = render_func_csv(r);
  EXPECT_NE(csv.find("f,uprobe,,1,0,0,probe-cost,ns,6750,1500.00,,,,,,0,1,kernel,0,,\n"),
            std::string::npos)
      << csv;
  const json j = json::parse(render_func_json(r));
  EXPECT_EQ(j["functions"][0]["probe_cost"],
            json({{"total_ns", 6750}, {"per_call_ns", 1500}, {"calls", 4.5}}));
  PrometheusStatus status;
  status.up = true;
  status.mode = "function";
  const std::string prom = render_prometheus(nullptr, &r, status);
  EXPECT_NE(prom.find(R"(pmcprof_function_probe_cost_seconds_total{function="f"} 6.75e-06)"),
            std::string::npos)
      << prom;
  // Not calibrated: nothing said, never a 0.
  r.functions[0].probe_cost.reset();
  EXPECT_EQ(render_func_text(r).find("probes cost"), std::string::npos);
  EXPECT_FALSE(json::parse(render_func_json(r))["functions"][0].contains("probe_cost"));
}

TEST(FuncReportPrometheus, MeasuredCallsHistogramAndScaledTotal) {
  // Instructions measured 2 of 4 calls (100 and 300) and ran in part through the others
  // (5,000 and 7,000 scaled): the counter is the estimate over all calls (12,400), the
  // histogram holds the 2 measured calls with their own sum (400), and its buckets (every
  // other power of two) are exact.
  FuncStats s(2);
  s.add(call(100, 90, {10, 100}));
  s.add(call(200000, 200000, {10, 5000}, 0, 0x1, 0x3));  // long, in part: scaled
  s.add(call(100, 90, {10, 300}));
  s.add(call(200000, 200000, {10, 7000}, 0, 0x1, 0x3));
  FunctionReport r;
  r.target = "t";
  r.aggregation = "stream";
  r.functions.push_back(make_func_row("f", "kprobe", "", s, 0, kThreeEvents));
  PrometheusStatus status;
  status.up = true;
  status.mode = "function";
  const std::string text = render_prometheus(nullptr, &r, status);
  const std::string l = R"({function="f",event="instructions")";
  for (const std::string& sample :
       {"pmcprof_function_event_total" + l + "} 12400",
        "pmcprof_function_event_estimated" + l + "} 1",
        "pmcprof_function_event_measured_calls_total" + l + "} 2",
        "pmcprof_function_event_per_call_count" + l + "} 2",
        "pmcprof_function_event_per_call_sum" + l + "} 400",
        "pmcprof_function_event_per_call_bucket" + l + R"(,le="64"} 0)",
        "pmcprof_function_event_per_call_bucket" + l + R"(,le="256"} 1)",
        "pmcprof_function_event_per_call_bucket" + l + R"(,le="1024"} 2)",
        "pmcprof_function_event_per_call_bucket" + l + R"(,le="+Inf"} 2)",
        std::string(R"(pmcprof_function_event_estimated{function="f",event="cycles"} 0)"),
        std::string(R"(pmcprof_function_event_total{function="f",event="cycles"} 40)")})
    EXPECT_NE(text.find(sample + "\n"), std::string::npos) << sample << "\n" << text;
  // The unsupported event has no samples at all (never a 0).
  EXPECT_EQ(text.find("event=\"cache-misses\""), std::string::npos) << text;
}

TEST(FuncReportPrometheus, FewBucketsEachAnExactBoundary) {
  // Issue 23: 42 bucket lines per histogram (252 for two functions with one event). Now 15:
  // le at every other power of two (256 ns to 17.2 s, 1 to 2^26 events), each a boundary of
  // the 2 % histogram, so the cumulative counts are exact, and +Inf.
  FuncStats s(1);
  for (std::uint64_t k = 1; k <= 100; ++k) s.add(call(100 * k * k, 90 * k * k, {k * k * k}));
  FunctionReport r;
  r.aggregation = "stream";
  const std::vector<FuncEventInfo> events = {{"cycles", kCycles, "", 0}};
  r.functions.push_back(make_func_row("f", "uprobe", "", s, 0, events));
  r.functions.push_back(make_func_row("g", "uprobe", "", s, 0, events));
  const std::string text = render_prometheus(nullptr, &r, PrometheusStatus{});
  std::map<std::string, int> lines;  // per histogram and function
  std::size_t all = 0;
  for (const auto& line : split(text, '\n')) {
    const auto at = line.find("_bucket{");
    if (at == std::string::npos) continue;
    ++all;
    ++lines[line.substr(0, at) + line.substr(line.find("function="), 12)];
    const auto le = line.find("le=\"");
    const std::string bound = line.substr(le + 4, line.find('"', le + 4) - le - 4);
    if (bound == "+Inf") continue;
    const double v =
        std::stod(bound) * (line.find("_seconds_bucket") != std::string::npos ? 1e9 : 1);
    const double e = std::log2(v);
    EXPECT_NEAR(e, std::round(e), 1e-6) << line;  // a power of two: exact
    EXPECT_EQ(static_cast<long>(std::round(e)) % 2, 0) << line;
    // The cumulative count at a power of two is exactly the calls below it.
    const auto n = std::stoull(line.substr(line.rfind(' ') + 1));
    const Histogram& h = line.find("wall") != std::string::npos    ? s.wall
                         : line.find("oncpu") != std::string::npos ? s.oncpu
                                                                   : s.hist[0];
    EXPECT_EQ(n, h.count_below(static_cast<std::uint64_t>(std::llround(v)))) << line;
  }
  EXPECT_EQ(all, 2u * 3u * 15u) << text;
  for (const auto& [name, n] : lines) EXPECT_EQ(n, 15) << name;
}

TEST(FuncReportPrometheus, ProbeBiasHasOneUnitPerName) {
  // Issue 23: pmcprof_probe_bias_per_call held seconds and events under one name, chosen by a
  // label. Now times are pmcprof_probe_bias_seconds and counts pmcprof_probe_bias_events.
  FunctionReport r = sample_report();
  ProbeBiasRow b;
  b.backend = "uprobe";
  b.calibrated = true;
  b.subtracted = true;
  b.calls = 64;
  b.wall_ns = 700;
  b.oncpu_ns = 650;
  b.events = {{"task-clock", "ns", 650}, {"instructions", "", 412}, {"cycles", "", std::nullopt}};
  r.probe_bias = {b};
  const std::string text = render_prometheus(nullptr, &r, PrometheusStatus{});
  EXPECT_EQ(text.find("pmcprof_probe_bias_per_call"), std::string::npos) << text;
  const std::string l = R"(backend="uprobe",)";
  for (const std::string& sample :
       {std::string("# TYPE pmcprof_probe_bias_seconds gauge"),
        "pmcprof_probe_bias_seconds{" + l + R"(quantity="wall",subtracted="true"} 7e-07)",
        "pmcprof_probe_bias_seconds{" + l + R"(quantity="oncpu",subtracted="true"} 6.5e-07)",
        "pmcprof_probe_bias_seconds{" + l + R"(quantity="task-clock",subtracted="true"} 6.5e-07)",
        std::string("# TYPE pmcprof_probe_bias_events gauge"),
        "pmcprof_probe_bias_events{" + l + R"(event="instructions",subtracted="true"} 412)"})
    EXPECT_NE(text.find(sample + "\n"), std::string::npos) << sample << "\n" << text;
  EXPECT_EQ(text.find(R"(event="cycles",subtracted)"), std::string::npos) << text;  // no value
}

// Every distribution carries its histogram as sparse buckets (docs/json.md), and they read
// back bucket for bucket: wall over all calls, on-CPU and events over the counted (an event
// over the calls it measured), a metric over the calls with a value, in its own unit.
TEST(FuncReportJson, DistributionsCarryTheirBuckets) {
  FuncStats s(2, {{1, 0}});  // IPC: instructions (event 1) / cycles (event 0)
  for (int i = 0; i < 50; ++i) s.add(call(10000, 9000, {1000, 2000}));
  for (int i = 0; i < 50; ++i) s.add(call(1000000, 990000, {100000, 150000}));
  s.add(call(500, 400, {7, 9}, PMCPROF_REC_NOT_COUNTED));
  s.add(call(600, 500, {8, 9}, 0, /*measured=*/0x2));  // cycles multiplexed out
  const std::vector<FuncMetricInfo> metrics = {
      {table_metric("IPC"), false, {{"instructions", 1}, {"cycles", 0}}, 0, ""}};
  FunctionReport r;
  r.functions.push_back(make_func_row("f", "uprobe", "", s, 0, kThreeEvents, metrics));
  const FuncRow& row = r.functions[0];
  const json f = json::parse(render_func_json(r))["functions"][0];
  const auto check = [](const json& dist, const Histogram& h, std::uint64_t want_calls,
                        double resolution = 1) {
    const json& buckets = dist.at("buckets");
    std::uint64_t sum = 0;
    for (const auto& b : buckets) sum += b[2].get<std::uint64_t>();
    EXPECT_EQ(sum, want_calls) << dist.dump();
    const Histogram back = histogram_from_buckets(buckets, resolution);
    for (std::uint32_t k = 0; k < Histogram::kBuckets; ++k)
      ASSERT_EQ(back.bucket_count(k), h.bucket_count(k)) << "bucket " << k;
  };
  check(f["wall"], row.wall_histogram, 102);
  EXPECT_EQ(f["wall"]["measured_calls"], 102);
  check(f["oncpu"], row.oncpu_histogram, 101);
  check(f["events"]["cycles"], row.events[0].histogram, 100);
  EXPECT_EQ(f["events"]["cycles"]["measured_calls"], 100);
  check(f["events"]["instructions"], row.events[1].histogram, 101);
  EXPECT_EQ(f["events"]["cache-misses"]["buckets"], json::array());
  ASSERT_EQ(row.metrics.size(), 1u);
  const json& ipc = f["metrics"]["IPC"]["per_call"];
  check(ipc, row.metrics[0].histogram, 100, ipc["resolution"].get<double>());
  // Two modes, 2 and 1.5 instructions per cycle, in the metric's own unit.
  ASSERT_EQ(ipc["buckets"].size(), 2u);
  EXPECT_LE(ipc["buckets"][0][0].get<double>(), 1.5);
  EXPECT_GT(ipc["buckets"][0][1].get<double>(), 1.5);
  EXPECT_LE(ipc["buckets"][1][0].get<double>(), 2.0);
  EXPECT_GT(ipc["buckets"][1][1].get<double>(), 2.0);
}

// ---- --hist: per-call histograms after each function's rows ----

namespace {

HistOptions hist(std::vector<std::string> quantities = {},
                 std::optional<HistLinear> linear = std::nullopt) {
  return {true, std::move(quantities), std::move(linear)};
}

std::vector<std::string> names_of(const std::vector<HistQuantity>& qs) {
  std::vector<std::string> out;
  for (const auto& q : qs) out.push_back(q.name);
  return out;
}

}  // namespace

TEST(FuncReportGolden, HistText) {
  std::ostringstream text;
  RenderOptions opts;
  opts.hist = hist();
  make_func_renderer(opts, text)->final(both_report());
  pmcprof::testing::expect_golden("func_report_hist.txt", text.str());
}

TEST(FuncReportGolden, HistCsv) {
  pmcprof::testing::expect_golden(
      "func_report_hist.csv",
      render_func_csv(both_report(), ",", hist({"wall", "instructions", "IPC"})));
}

TEST(FuncReportHist, DefaultIsWallAndEveryEventTimesForATimeRange) {
  const FuncRow row = both_report().functions[0];
  EXPECT_EQ(
      names_of(hist_quantities(row, hist())),
      (std::vector<std::string>{"wall", "cycles", "instructions", "task-clock", "cache-misses"}));
  EXPECT_EQ(names_of(hist_quantities(row, hist({}, HistLinear{0, 2e6, 1e5, true, "0,2ms,100us"}))),
            (std::vector<std::string>{"wall", "task-clock"}));
  // Named: in the order named; on-CPU time and metrics only when named; unknown names skipped.
  EXPECT_EQ(names_of(hist_quantities(row, hist({"IPC", "oncpu", "nope", "cycles"}))),
            (std::vector<std::string>{"IPC", "oncpu", "cycles"}));
  EXPECT_TRUE(hist_quantities(row, HistOptions{}).size() > 0);  // selection, not drawing
  EXPECT_EQ(func_hist_text(row, HistOptions{}), "");
}

TEST(FuncReportHist, WithoutHistNothingIsDrawn) {
  std::ostringstream plain;
  make_func_renderer(RenderOptions{}, plain)->final(both_report());
  EXPECT_EQ(plain.str().find("distribution"), std::string::npos);
  EXPECT_EQ(render_func_csv(both_report()).find(",hist,"), std::string::npos);
}

// The text draws each quantity after the function's rows, with its title and the calls the
// histogram holds; the CSV rows of a quantity add up to those calls.
TEST(FuncReportHist, TextAndCsvAgreeWithTheHistogram) {
  FuncStats s(2);
  for (int i = 0; i < 50; ++i) s.add(call(10000, 9000, {1000, 2000}));
  for (int i = 0; i < 50; ++i) s.add(call(1000000, 990000, {100000, 150000}));
  s.add(call(600, 500, {8, 9}, 0, /*measured=*/0x2));  // cycles multiplexed out
  FunctionReport r;
  r.target = "t";
  r.aggregation = "stream";
  r.functions.push_back(make_func_row("f", "uprobe", "", s, 0, kThreeEvents));
  const std::string text = render_func_text(r, hist());
  EXPECT_NE(text.find("   wall time per call (101 calls):\n        nsecs               : count"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("   cycles per call (100 calls):\n        cycles              : count"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "         8192 -> 16383      : 50       |****************************************|"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("cache-misses per call"), std::string::npos) << text;  // nothing to draw
  // After the rows, before the probe bias lines.
  EXPECT_LT(text.find("on-CPU time"), text.find("wall time per call")) << text;
  const std::string csv = render_func_csv(r, ";", hist({"wall", "cycles"}));
  std::map<std::string, std::uint64_t> sums;
  for (const auto& line : split(csv, '\n')) {
    const auto cells = split(line, ';');
    if (cells.size() < 4 || cells[3] != "hist") continue;
    ASSERT_EQ(cells.size(), 9u) << line;
    EXPECT_EQ(cells[0], "f");
    EXPECT_EQ(cells[1], "uprobe");
    sums[cells[4]] += std::stoull(cells[8]);
    EXPECT_EQ(cells[5], cells[4] == "wall-time" ? "ns" : "") << line;
  }
  EXPECT_EQ(sums["wall-time"], 101u);
  EXPECT_EQ(sums["cycles"], 100u);
  EXPECT_EQ(sums.size(), 2u);
  EXPECT_NE(csv.find("f;uprobe;;hist;wall-time;ns;8192;16384;50\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("f;uprobe;;hist;wall-time;ns;512;1024;1\n"), std::string::npos) << csv;
}

TEST(FuncReportHist, LinearSaysWhenEdgesMoved) {
  FuncStats s(2);
  for (int i = 0; i < 10; ++i) s.add(call(150000, 140000, {1, 2}));
  FunctionReport r;
  r.functions.push_back(make_func_row("f", "uprobe", "", s, 0, kThreeEvents));
  const std::string moved =
      render_func_text(r, hist({"wall"}, HistLinear{0, 200000, 100000, true, "0,200us,100us"}));
  EXPECT_NE(moved.find("   wall time per call (10 calls), linear 0,200us,100us:\n"
                       "   (edges moved to the nearest bounds of the 2% buckets)\n"),
            std::string::npos)
      << moved;
  EXPECT_NE(moved.find("        99840 -> 199679     : 10"), std::string::npos) << moved;
  // Edges that are bucket bounds (powers of two here) move nowhere: no note.
  const std::string exact =
      render_func_text(r, hist({"wall"}, HistLinear{0, 262144, 131072, false, "0,262144,131072"}));
  EXPECT_EQ(exact.find("edges moved"), std::string::npos) << exact;
  EXPECT_NE(exact.find("       131072 -> 262143     : 10"), std::string::npos) << exact;
}

// -I: each interval's text draws the interval's own calls.
TEST(FuncReportHist, IntervalsDrawTheirOwnCalls) {
  std::ostringstream text;
  RenderOptions opts;
  opts.hist = hist({"wall"});
  opts.intervals = true;
  auto renderer = make_func_renderer(opts, text);
  FuncStats first(2), second(2);
  for (int i = 0; i < 3; ++i) first.add(call(10000, 9000, {1, 2}));
  for (int i = 0; i < 5; ++i) second.add(call(1000000, 900000, {1, 2}));
  FunctionReport r;
  r.interval_s = 1.0;
  r.functions.push_back(make_func_row("f", "uprobe", "", first, 0, kThreeEvents));
  renderer->interval(r);
  r.interval_s = 2.0;
  r.functions[0] = make_func_row("f", "uprobe", "", second, 0, kThreeEvents);
  renderer->interval(r);
  const std::string out = text.str();
  const auto second_tick = out.find("# 2.000 s");
  ASSERT_NE(second_tick, std::string::npos) << out;
  EXPECT_LT(out.find("wall time per call (3 calls)"), second_tick) << out;
  EXPECT_GT(out.find("wall time per call (5 calls)"), second_tick) << out;
  EXPECT_NE(out.find("524288 -> 1048575    : 5 "), std::string::npos) << out;
}

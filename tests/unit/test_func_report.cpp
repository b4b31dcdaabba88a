// The function-mode report model (make_func_row, func_metric) and its three renderers,
// against golden files. Regenerate the goldens after an intended format change with
//   PMCPROF_UPDATE_GOLDEN=1 pmcprof_unit_tests --gtest_filter='FuncReport*'
// and review the diff.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "../../bpf/pmcprof.h"
#include "golden.hpp"
#include "pmcprof/report/func_report.hpp"
#include "pmcprof/stream/func_stats.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;
using nlohmann::json;

namespace {

constexpr EventKind kCycles{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES};
constexpr EventKind kInstructions{PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS};
constexpr EventKind kCacheMisses{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES};
constexpr EventKind kTaskClock{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK};

CallRecord call(std::uint64_t wall, std::uint64_t oncpu, std::vector<std::uint64_t> delta,
                std::uint32_t flags = 0) {
  CallRecord r;
  r.wall_ns = wall;
  r.oncpu_ns = oncpu;
  r.flags = flags;
  r.delta = std::move(delta);
  return r;
}

Distribution dist(double total, double mean, double p50, double p90, double p99) {
  Distribution d;
  d.status = CounterStatus::ok;
  d.total = total;
  d.mean = mean;
  d.p50 = p50;
  d.p90 = p90;
  d.p99 = p99;
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

// A report as function_run.cpp would build it: a user function with a lossy stream and an
// event the kernel refused, and a syscall whose counters never ran.
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
  malloc_row.wall = dist(2469000, 200, 180, 350, 1200.5);
  malloc_row.oncpu = dist(1851750, 150, 140, 260, 990.25);
  malloc_row.events.push_back(event_row("cycles", kCycles, dist(4938000, 400.48, 380, 700, 2400)));
  malloc_row.events.push_back(
      event_row("instructions", kInstructions, dist(9876000, 800.97, 790, 1100, 3100.75)));
  malloc_row.events.push_back(
      event_row("cache-misses", kCacheMisses, status_only(CounterStatus::not_supported)));
  r.functions.push_back(malloc_row);

  FuncRow getppid;
  getppid.function = "syscall:getppid";
  getppid.backend = "tracepoint";
  getppid.calls = 4;
  getppid.not_counted = 4;
  getppid.wall = dist(4000000000, 1000000000, 950000000, 1100000000, 1200000000);
  getppid.oncpu = dist(48000, 12000, 11000, 15000, 15500);
  getppid.events.push_back(event_row("cycles", kCycles, status_only(CounterStatus::not_counted)));
  getppid.events.push_back(
      event_row("instructions", kInstructions, status_only(CounterStatus::not_counted)));
  getppid.events.push_back(
      event_row("cache-misses", kCacheMisses, status_only(CounterStatus::not_supported)));
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
  // Times are measured for every call, counted or not.
  EXPECT_EQ(row.wall.status, CounterStatus::ok);
  EXPECT_EQ(row.wall.total, 400.0);
  EXPECT_EQ(row.wall.mean, 200.0);
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
  // Wall and on-CPU time: every call.
  EXPECT_EQ(row.wall.total, 1000.0);
  EXPECT_DOUBLE_EQ(row.wall.mean, 250.0);
  EXPECT_EQ(row.oncpu.total, 700.0);
  EXPECT_DOUBLE_EQ(row.oncpu.mean, 175.0);
  // Percentiles come from the histogram of counted calls.
  EXPECT_GE(row.events[0].per_call.p50, 1000 * 0.875);
  EXPECT_LE(row.events[0].per_call.p99, 3000 * 1.125);
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

TEST(FuncReportCsv, EveryLineHasTheSameColumns) {
  const std::string csv = render_func_csv(sample_report());
  const auto lines = split(std::string(trim(csv)), '\n');
  // 2 functions x (3 events + wall + on-cpu).
  ASSERT_EQ(lines.size(), 10u) << csv;
  const std::size_t columns = split(lines[0], ',').size();
  EXPECT_EQ(columns, 13u) << lines[0];
  for (const auto& line : lines) EXPECT_EQ(split(line, ',').size(), columns) << line;
  EXPECT_EQ(lines[0].rfind("libc:malloc,uprobe,,12345,5,17,cycles,,4938000,", 0), 0u) << lines[0];
  EXPECT_NE(csv.find(",cache-misses,,<not supported>,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("syscall:getppid,tracepoint,,4,4,0,cycles,,<not counted>,"), std::string::npos)
      << csv;
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
  EXPECT_EQ(f["oncpu_ns"], 1851750);

  const json& cycles = f["events"]["cycles"];
  for (const char* key : {"total", "mean", "p50", "p90", "p99"})
    EXPECT_TRUE(cycles[key].is_number()) << key << " = " << cycles[key];
  EXPECT_EQ(cycles["total"], 4938000);
  EXPECT_DOUBLE_EQ(cycles["mean"].get<double>(), 400.48);
  EXPECT_DOUBLE_EQ(cycles["p99"].get<double>(), 2400.0);
  EXPECT_EQ(cycles["status"], "ok");
  EXPECT_EQ(cycles["unit"], "count");

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
  EXPECT_FALSE(g.contains("metric"));
  EXPECT_EQ(g["wall_ns"], 4000000000ULL);
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
  ASSERT_EQ(lines.size(), 20u) << out.str();
  EXPECT_EQ(lines[0].rfind("1.000000000,libc:malloc,", 0), 0u) << lines[0];
  const std::size_t columns = split(lines[0], ',').size();
  for (const auto& line : lines) EXPECT_EQ(split(line, ',').size(), columns) << line;
  EXPECT_EQ(lines[10].rfind("summary,libc:malloc,", 0), 0u) << lines[10];
}

// The three renderers against golden files, plus field-level JSON checks.
// Regenerate the goldens after an intended format change with
//   PMCPROF_UPDATE_GOLDEN=1 pmcprof_unit_tests --gtest_filter='Render*'
// and review the diff: they are meant to look like perf stat.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "golden.hpp"
#include "pmcprof/report/prometheus.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/report/report.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;
using nlohmann::json;

namespace {

constexpr EventKind kTaskClock{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK};
constexpr EventKind kPageFaults{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS};
constexpr EventKind kContextSwitches{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES};
constexpr EventKind kMigrations{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS};
constexpr EventKind kCycles{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES};
constexpr EventKind kInstructions{PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS};
constexpr EventKind kBranches{PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS};
constexpr EventKind kBranchMisses{PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES};
constexpr EventKind kCacheMisses{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES};
constexpr EventKind kLlcLoadMisses{PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_LL |
                                                           (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                                           (PERF_COUNT_HW_CACHE_RESULT_MISS << 16)};

// A counted row: value scaled from raw by enabled/running, as aggregate.cpp would.
CounterRow ok(const std::string& event, EventKind kind, std::uint64_t raw, std::uint64_t enabled,
              std::uint64_t running, const std::string& unit = "") {
  CounterRow r;
  r.event = event;
  r.kind = kind;
  r.unit = unit;
  r.status = CounterStatus::ok;
  r.raw_value = raw;
  r.enabled_ns = enabled;
  r.running_ns = running;
  r.value = static_cast<double>(raw) * static_cast<double>(enabled) / static_cast<double>(running);
  r.running_pct = 100.0 * static_cast<double>(running) / static_cast<double>(enabled);
  return r;
}

CounterRow not_ok(const std::string& event, EventKind kind, CounterStatus status,
                  std::uint64_t enabled = 0) {
  CounterRow r;
  r.event = event;
  r.kind = kind;
  r.status = status;
  r.enabled_ns = enabled;
  return r;
}

CounterRow on_cpu(CounterRow r, int cpu) {
  r.cpu = cpu;
  return r;
}

constexpr std::uint64_t kSecond = 1000000000;

// What every fixture below has: its target, its run's length, when it ended, its rows.
CountingReport report_of(const std::string& target, std::uint64_t elapsed_ns,
                         std::uint64_t timestamp_unix_ns, std::vector<CounterRow> counters) {
  CountingReport r;
  r.target = target;
  r.elapsed_ns = elapsed_ns;
  r.timestamp_unix_ns = timestamp_unix_ns;
  r.counters = std::move(counters);
  return r;
}

// perf stat -a: software events, an unsupported cycles, a branch-miss ratio.
CountingReport system_wide_report() {
  const std::uint64_t e = 1001234567;
  return report_of("system wide", e, 1700000000123456789ULL,
                   {
                       ok("task-clock", kTaskClock, 2002469134, 2 * e, 2 * e, "ns"),
                       ok("page-faults", kPageFaults, 1234, 2 * e, 2 * e),
                       ok("context-switches", kContextSwitches, 5678, 2 * e, 2 * e),
                       ok("cpu-migrations", kMigrations, 12, 2 * e, 2 * e),
                       not_ok("cycles", kCycles, CounterStatus::not_supported),
                       ok("branches", kBranches, 987654321, 2 * e, 2 * e),
                       ok("branch-misses", kBranchMisses, 12345678, 2 * e, 2 * e),
                   });
}

// perf stat -- CMD: IPC, a multiplexed counter and one that never ran.
CountingReport workload_report() {
  const std::uint64_t e = 523456789;
  CountingReport r = report_of(
      "./workload --spin 1", e, 1700000001000000000ULL,
      {
          ok("task-clock", kTaskClock, 501234567, e, e, "ns"),
          ok("cycles", kCycles, 1503703701, e, e),
          ok("instructions", kInstructions, 3007407402, e, e),
          ok("cache-misses", kCacheMisses, 125000, 800000000, 500000000),  // 62.5%
          not_ok("LLC-load-misses", kLlcLoadMisses, CounterStatus::not_counted, 800000000),
      });
  r.exit_status = 0;
  return r;
}

// perf stat -a -A (perf 6.1's order: each event across the CPUs).
CountingReport per_cpu_report() {
  const std::uint64_t e = 1000000000;
  CountingReport r = report_of("system wide", e, 1700000002000000000ULL,
                               {
                                   on_cpu(ok("task-clock", kTaskClock, 1000000000, e, e, "ns"), 0),
                                   on_cpu(ok("task-clock", kTaskClock, 250000000, e, e, "ns"), 1),
                                   on_cpu(ok("cycles", kCycles, 2000000000, e, e), 0),
                                   on_cpu(ok("cycles", kCycles, 300000000, e, e), 1),
                                   on_cpu(ok("instructions", kInstructions, 1000000000, e, e), 0),
                                   on_cpu(ok("instructions", kInstructions, 600000000, e, e), 1),
                               });
  r.aggr_mode = AggrMode::cpu;
  return r;
}

CounterRow in_cgroup(CounterRow r, const std::string& path, std::uint64_t id) {
  r.cgroup = path;
  r.cgroup_id = id;
  return r;
}

// perf stat -a -G (BPF backend) where the kernel did not report two context switches: the
// stretches after them are counted, charged to no cgroup.
CountingReport cgroup_bpf_report() {
  const std::uint64_t e = 1000000000;
  CountingReport r = report_of(
      "system wide", e, 1700000003000000000ULL,
      {
          in_cgroup(ok("task-clock", kTaskClock, 612345678, 612345678, 612345678, "ns"),
                    "/shop/web", 4242),
          in_cgroup(ok("context-switches", kContextSwitches, 351, 612345678, 612345678),
                    "/shop/web", 4242),
          in_cgroup(not_ok("task-clock", kTaskClock, CounterStatus::not_counted), "/shop/idle",
                    4243),
          in_cgroup(not_ok("context-switches", kContextSwitches, CounterStatus::not_counted),
                    "/shop/idle", 4243),
      });
  r.cgroup_backend = CgroupBackend::bpf;
  r.cgroup_uncharged =
      UnchargedCounts{2,
                      0,
                      {ok("task-clock", kTaskClock, 4480000, 4480000, 4480000, "ns"),
                       ok("context-switches", kContextSwitches, 6, 4480000, 4480000)}};
  return r;
}

// perf stat -I 1000: one interval of the run.
CountingReport interval_report(double at_s, std::uint64_t scale) {
  CountingReport r = report_of(
      "system wide", kSecond,
      1700000003000000000ULL + static_cast<std::uint64_t>(std::llround(at_s * 1e9)),
      {
          ok("task-clock", kTaskClock, 1990000000 + scale, 2 * kSecond, 2 * kSecond, "ns"),
          ok("context-switches", kContextSwitches, 300 * scale, 2 * kSecond, 2 * kSecond),
      });
  r.interval_s = at_s;
  return r;
}

CountingReport interval_total() {
  CountingReport r = interval_report(2.002, 3);
  r.interval_s.reset();
  r.elapsed_ns = 2002000000;
  r.counters = {
      ok("task-clock", kTaskClock, 3980000003, 4 * kSecond, 4 * kSecond, "ns"),
      ok("context-switches", kContextSwitches, 900, 4 * kSecond, 4 * kSecond),
  };
  return r;
}

// perf stat -r 5: means with the relative stddev of the mean.
CountingReport repeat_report() {
  const std::uint64_t e = 12345678;
  CountingReport r = report_of("true", e, 1700000004000000000ULL,
                               {
                                   ok("task-clock", kTaskClock, 1100000, e, e, "ns"),
                                   ok("page-faults", kPageFaults, 97, e, e),
                                   ok("cycles", kCycles, 1500000, e, e),
                                   ok("instructions", kInstructions, 1200000, e, e),
                                   not_ok("branches", kBranches, CounterStatus::not_supported),
                               });
  r.runs = 5;
  r.elapsed_stddev_pct = 3.14159;
  r.exit_status = 0;
  r.counters[0].stddev_pct = 1.5;
  r.counters[1].stddev_pct = 0.0;
  r.counters[2].stddev_pct = 12.25;
  r.counters[3].stddev_pct = 100.0;
  return r;
}

std::string interval_stream(OutputFormat format) {
  std::ostringstream out;
  RenderOptions opts;
  opts.format = format;
  opts.intervals = true;  // what stat -I asks for
  auto renderer = make_renderer(opts, out);
  renderer->interval(interval_report(1.001, 1));
  renderer->interval(interval_report(2.002, 2));
  renderer->final(interval_total());
  return out.str();
}

const json* find_counter(const json& report, const std::string& event,
                         std::optional<int> cpu = std::nullopt) {
  for (const auto& c : report.at("counters"))
    if (c.at("event") == event && (!cpu || c.value("cpu", -1) == *cpu)) return &c;
  return nullptr;
}

}  // namespace

TEST(RenderGolden, SystemWide) {
  const CountingReport r = system_wide_report();
  pmcprof::testing::expect_golden("system_wide.txt", render_text(r));
  pmcprof::testing::expect_golden("system_wide.csv", render_csv(r));
  pmcprof::testing::expect_golden("system_wide.json", render_json(r));
}

TEST(RenderGolden, Workload) {
  const CountingReport r = workload_report();
  pmcprof::testing::expect_golden("workload.txt", render_text(r));
  pmcprof::testing::expect_golden("workload.csv", render_csv(r));
  pmcprof::testing::expect_golden("workload.json", render_json(r));
}

TEST(RenderGolden, PerCpu) {
  const CountingReport r = per_cpu_report();
  pmcprof::testing::expect_golden("per_cpu.txt", render_text(r));
  pmcprof::testing::expect_golden("per_cpu.csv", render_csv(r));
  pmcprof::testing::expect_golden("per_cpu.json", render_json(r));
}

TEST(RenderGolden, Interval) {
  pmcprof::testing::expect_golden("interval.txt", interval_stream(OutputFormat::text));
  pmcprof::testing::expect_golden("interval.csv", interval_stream(OutputFormat::csv));
  pmcprof::testing::expect_golden("interval.json", interval_stream(OutputFormat::json));
}

TEST(RenderGolden, Repeat) {
  const CountingReport r = repeat_report();
  pmcprof::testing::expect_golden("repeat.txt", render_text(r));
  pmcprof::testing::expect_golden("repeat.csv", render_csv(r));
  pmcprof::testing::expect_golden("repeat.json", render_json(r));
}

TEST(RenderGolden, CgroupBpfUncharged) {
  const CountingReport r = cgroup_bpf_report();
  pmcprof::testing::expect_golden("cgroup_bpf.txt", render_text(r));
  pmcprof::testing::expect_golden("cgroup_bpf.csv", render_csv(r));
  pmcprof::testing::expect_golden("cgroup_bpf.json", render_json(r));
}

// Nothing set aside: no "(no cgroup)" lines in text, the zeros in JSON (the field is always
// there with the bpf backend, so dashboards can graph it).
TEST(RenderText, NoUnchargedLinesWhenNoneWasSetAside) {
  CountingReport r = cgroup_bpf_report();
  r.cgroup_uncharged =
      UnchargedCounts{0,
                      0,
                      {not_ok("task-clock", kTaskClock, CounterStatus::not_counted),
                       not_ok("context-switches", kContextSwitches, CounterStatus::not_counted)}};
  EXPECT_EQ(render_text(r).find("no cgroup"), std::string::npos);
  const json j = json::parse(render_json(r));
  EXPECT_EQ(j["cgroup_uncharged"]["unreported_switches"], 0);
  EXPECT_EQ(j["cgroup_uncharged"]["counters"].size(), 2u);
}

// serve: what the bpf backend set aside, as its own series (not a pseudo-cgroup that a sum over
// cgroups would take in).
TEST(RenderPrometheus, UnchargedStretchesAreTheirOwnSeries) {
  const CountingReport r = cgroup_bpf_report();
  const std::string prom = render_prometheus(&r, nullptr, {});
  EXPECT_NE(prom.find("\npmcprof_cgroup_unreported_switches_total 2\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("\npmcprof_cgroup_read_errors_total 0\n"), std::string::npos);
  EXPECT_NE(prom.find("\npmcprof_cgroup_uncharged_seconds_total{event=\"task-clock\"} 0.00448\n"),
            std::string::npos);
  EXPECT_NE(prom.find("\npmcprof_cgroup_uncharged_total{event=\"context-switches\"} 6\n"),
            std::string::npos);
  EXPECT_EQ(prom.find("cgroup=\"(no cgroup)\""), std::string::npos);
  const CountingReport fd = system_wide_report();
  EXPECT_EQ(render_prometheus(&fd, nullptr, {}).find("uncharged"), std::string::npos);
}

TEST(RenderGolden, CsvSeparator) {
  pmcprof::testing::expect_golden("workload_semicolon.csv", render_csv(workload_report(), ";"));
}

TEST(RenderText, NotSupportedIsNeverZero) {
  const std::string text = render_text(system_wide_report());
  EXPECT_NE(text.find("<not supported>      cycles"), std::string::npos) << text;
  EXPECT_NE(text.find("2,002.47 msec task-clock"), std::string::npos) << text;
  EXPECT_NE(text.find("987,654,321      branches"), std::string::npos) << text;
  EXPECT_NE(text.find("Performance counter stats for 'system wide':"), std::string::npos);
  EXPECT_NE(text.find("1.001234567 seconds time elapsed"), std::string::npos) << text;
}

TEST(RenderText, Metrics) {
  const std::string wl = render_text(workload_report());
  // perf's formats: "%7.2f " insn per cycle, "%7.2f%%" shares, "%8.3f" the rest.
  EXPECT_NE(wl.find("#    2.00  insn per cycle"), std::string::npos) << wl;
  EXPECT_NE(wl.find("(62.50%)"), std::string::npos) << wl;
  EXPECT_NE(wl.find("<not counted>      LLC-load-misses"), std::string::npos) << wl;
  const std::string sw = render_text(system_wide_report());
  EXPECT_NE(sw.find("1.25% of all branches"), std::string::npos) << sw;
  EXPECT_NE(sw.find("2.000 CPUs utilized"), std::string::npos) << sw;
}

TEST(RenderText, RepeatShowsNoise) {
  const std::string text = render_text(repeat_report());
  EXPECT_NE(text.find("'true' (5 runs):"), std::string::npos) << text;
  EXPECT_NE(text.find("( +- 12.25% )"), std::string::npos) << text;
  EXPECT_NE(text.find("seconds time elapsed  ( +-  3.14% )"), std::string::npos) << text;
}

TEST(RenderCsv, NoThousandsSeparatorsAndFixedFieldCount) {
  const std::string csv = render_csv(system_wide_report());
  for (const auto& line : split(csv, '\n')) {
    if (line.empty()) continue;
    EXPECT_EQ(split(line, ',').size(), 7u) << line;
  }
  EXPECT_NE(csv.find("987654321,,branches,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("2002.47,msec,task-clock,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("<not supported>,,cycles,"), std::string::npos) << csv;
}

// As perf -x: the metric value as digits only, its unit without the '%' (JSON's metric.unit
// keeps "% of all branches"); <not supported> rows run 0 ns of 0: 100.00%.
TEST(RenderCsv, PercentMetricUnit) {
  const std::string csv = render_csv(system_wide_report());
  EXPECT_NE(csv.find("\n12345678,,branch-misses,2002469134,100.00,1.25,of all branches\n"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\n<not supported>,,cycles,0,100.00,,\n"), std::string::npos) << csv;
}

TEST(RenderCsv, PerCpuAndIntervalPrefixes) {
  const std::string csv = render_csv(per_cpu_report());
  EXPECT_EQ(csv.rfind("CPU0,1000.00,msec,task-clock,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\nCPU1,250.00,msec,task-clock,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nCPU1,300000000,,cycles,"), std::string::npos) << csv;
  const std::string iv = interval_stream(OutputFormat::csv);
  EXPECT_EQ(iv.rfind("1.001000000,1990.00,msec,task-clock,", 0), 0u) << iv;
  EXPECT_NE(iv.find("\nsummary,3980.00,msec,task-clock,"), std::string::npos) << iv;
  EXPECT_NE(iv.find("\nsummary,900,,context-switches,"), std::string::npos) << iv;
}

// Without -I, a final report has no prefix field at all.
TEST(RenderCsv, NoSummaryPrefixWithoutIntervals) {
  std::ostringstream out;
  make_renderer(RenderOptions{OutputFormat::csv, ";"}, out)->final(workload_report());
  EXPECT_EQ(out.str(), render_csv(workload_report(), ";"));
  EXPECT_EQ(out.str().find("summary"), std::string::npos) << out.str();
}

TEST(RenderJson, CounterFields) {
  const json j = json::parse(render_json(workload_report()));
  EXPECT_EQ(j.at("schema"), "pmcprof/1");
  EXPECT_EQ(j.at("type"), "report");
  EXPECT_EQ(j.at("target"), "./workload --spin 1");
  EXPECT_EQ(j.at("elapsed_ns"), 523456789u);
  EXPECT_EQ(j.at("exit_status"), 0);
  EXPECT_FALSE(j.contains("interval"));

  const json* cycles = find_counter(j, "cycles");
  ASSERT_NE(cycles, nullptr);
  EXPECT_TRUE(cycles->at("value").is_number_integer());
  EXPECT_EQ(cycles->at("value"), 1503703701u);
  EXPECT_EQ(cycles->at("unit"), "count");
  EXPECT_EQ(cycles->at("status"), "ok");
  EXPECT_EQ(cycles->at("enabled_ns"), 523456789u);
  EXPECT_EQ(cycles->at("running_ns"), 523456789u);
  EXPECT_EQ(cycles->at("running_pct"), 100);
  EXPECT_FALSE(cycles->contains("cpu"));

  const json* clock = find_counter(j, "task-clock");
  ASSERT_NE(clock, nullptr);
  EXPECT_EQ(clock->at("unit"), "ns");
  EXPECT_EQ(clock->at("metric").at("unit"), "CPUs utilized");

  const json* ipc = find_counter(j, "instructions");
  ASSERT_NE(ipc, nullptr);
  EXPECT_EQ(ipc->at("metric").at("unit"), "insn per cycle");
  EXPECT_DOUBLE_EQ(ipc->at("metric").at("value").get<double>(), 2.0);

  const json* mux = find_counter(j, "cache-misses");
  ASSERT_NE(mux, nullptr);
  EXPECT_TRUE(mux->at("running_pct").is_number());
  EXPECT_DOUBLE_EQ(mux->at("running_pct").get<double>(), 62.5);
  EXPECT_EQ(mux->at("value"), 200000u);
  EXPECT_EQ(mux->at("raw_value"), 125000u);

  const json* nc = find_counter(j, "LLC-load-misses");
  ASSERT_NE(nc, nullptr);
  EXPECT_EQ(nc->at("status"), "not-counted");
  EXPECT_TRUE(nc->at("value").is_null());
  EXPECT_TRUE(nc->at("running_pct").is_null());
  EXPECT_TRUE(nc->at("metric").is_null());
  EXPECT_EQ(nc->at("enabled_ns"), 800000000u);
}

TEST(RenderJson, NotSupportedIsNull) {
  const json j = json::parse(render_json(system_wide_report()));
  const json* cycles = find_counter(j, "cycles");
  ASSERT_NE(cycles, nullptr);
  EXPECT_EQ(cycles->at("status"), "not-supported");
  EXPECT_TRUE(cycles->at("value").is_null());
  EXPECT_TRUE(cycles->at("raw_value").is_null());
  EXPECT_TRUE(j.at("exit_status").is_null());
  const json* clock = find_counter(j, "task-clock");
  ASSERT_NE(clock, nullptr);
  EXPECT_TRUE(clock->at("value").is_number());
  EXPECT_DOUBLE_EQ(clock->at("value").get<double>(), 2002469134.0);
}

// docs/json.md: "value" is "written as an integer when it is integral". System-wide cycles pass
// 2^53 (9.007e15) in hours on a large machine; they must not turn into 1e+16.
TEST(RenderJson, LargeIntegralValueIsInteger) {
  CountingReport r = workload_report();
  r.counters = {ok("cycles", kCycles, 10000000000000000ULL, kSecond, kSecond)};
  const json j = json::parse(render_json(r));
  const json& value = j.at("counters").at(0).at("value");
  EXPECT_TRUE(value.is_number_integer()) << value.dump();
  EXPECT_EQ(value.dump(), "10000000000000000");
}

TEST(RenderJson, CpuOnlyOnPerCpuRows) {
  const json j = json::parse(render_json(per_cpu_report()));
  ASSERT_EQ(j.at("counters").size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    const json& c = j.at("counters").at(i);
    ASSERT_TRUE(c.contains("cpu")) << c.dump();
    EXPECT_EQ(c.at("cpu"), i % 2) << c.dump();  // each event across the CPUs
  }
  const json* ipc1 = find_counter(j, "instructions", 1);
  ASSERT_NE(ipc1, nullptr);
  EXPECT_DOUBLE_EQ(ipc1->at("metric").at("value").get<double>(), 2.0);  // 600M / 300M on CPU1
}

TEST(RenderJson, RepeatFields) {
  const json j = json::parse(render_json(repeat_report()));
  EXPECT_EQ(j.at("runs"), 5);
  EXPECT_DOUBLE_EQ(j.at("elapsed_stddev_pct").get<double>(), 3.14159);
  EXPECT_DOUBLE_EQ(find_counter(j, "cycles")->at("stddev_pct").get<double>(), 12.25);
  EXPECT_FALSE(find_counter(j, "branches")->contains("stddev_pct"));
}

TEST(RenderJson, IntervalsAreNdjson) {
  const auto lines = split(interval_stream(OutputFormat::json), '\n');
  ASSERT_EQ(lines.size(), 4u);  // three lines and the final newline
  EXPECT_EQ(lines[3], "");
  const char* types[] = {"interval", "interval", "summary"};
  for (int i = 0; i < 3; ++i) {
    json j;
    ASSERT_NO_THROW(j = json::parse(lines[i])) << lines[i];
    EXPECT_EQ(j.at("type"), types[i]);
    EXPECT_EQ(j.at("schema"), "pmcprof/1");
    EXPECT_EQ(j.contains("interval"), i < 2) << lines[i];
  }
  EXPECT_DOUBLE_EQ(json::parse(lines[1]).at("interval").get<double>(), 2.002);
  EXPECT_EQ(find_counter(json::parse(lines[1]), "context-switches")->at("value"), 600);
  EXPECT_EQ(find_counter(json::parse(lines[2]), "context-switches")->at("value"), 900);
}

// -I stopped before the first interval: still one compact NDJSON "summary" line.
TEST(RenderJson, IntervalModeWithoutIntervalsIsStillNdjson) {
  std::ostringstream out;
  RenderOptions opts;
  opts.format = OutputFormat::json;
  opts.intervals = true;
  make_renderer(opts, out)->final(interval_total());
  const auto lines = split(out.str(), '\n');
  ASSERT_EQ(lines.size(), 2u) << out.str();
  EXPECT_EQ(json::parse(lines[0]).at("type"), "summary");
}

TEST(RenderText, PerCpuIntervalHeaderHasCpuColumn) {
  std::ostringstream out;
  auto renderer = make_text_renderer(out);
  CountingReport r = per_cpu_report();
  r.interval_s = 1.0;
  renderer->interval(r);
  const std::string text = out.str();
  // perf 6.1: "CPU%-7d " before the 18-wide count, the header aligned with it.
  EXPECT_EQ(text.rfind("#           time CPU                    counts unit events\n", 0), 0u)
      << text;
  EXPECT_NE(text.find("\n     1.000000000 CPU1                   250.00 msec task-clock"),
            std::string::npos)
      << text;
}

TEST(RenderText, IntervalHeaderOnce) {
  const std::string text = interval_stream(OutputFormat::text);
  const std::string header = "#           time             counts unit events";
  EXPECT_EQ(text.rfind(header, 0), 0u) << text;
  EXPECT_EQ(text.find(header, 1), std::string::npos) << text;
  EXPECT_NE(text.find("     1.001000000           1,990.00 msec task-clock"), std::string::npos)
      << text;
}

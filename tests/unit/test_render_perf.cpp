// perf stat's layouts for the aggregation modes, -M metrics and --metric-only (perf 6.1's
// stat-display.c widths), and the rows the aggregations make from per-CPU and per-thread counts.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/events/metric_table.hpp"
#include "pmcprof/report/aggregate.hpp"
#include "pmcprof/report/metric_values.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;
using nlohmann::json;

namespace {

constexpr EventKind kTaskClock{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK};
constexpr EventKind kFaults{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS};
constexpr EventKind kCycles{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES};
constexpr EventKind kInstructions{PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS};

EventSeries series(const std::string& name, EventKind kind, std::vector<int> ids,
                   const std::vector<std::uint64_t>& values, std::size_t group,
                   const std::string& unit = "") {
  EventSeries s;
  s.event = name;
  s.kind = kind;
  s.unit = unit;
  s.supported = true;
  s.group = group;
  s.instance_ids = std::move(ids);
  for (auto v : values) s.counts.push_back({v, 1000, 1000});
  return s;
}

// Four CPUs: two sockets of two cores, one node each.
Aggregation per(AggrMode mode) {
  Aggregation a;
  a.mode = mode;
  for (int cpu = 0; cpu < 4; ++cpu) a.topology[cpu] = {cpu / 2, 0, cpu % 2, cpu / 2};
  return a;
}

std::vector<EventSeries> two_events_four_cpus() {
  return {series("task-clock", kTaskClock, {0, 1, 2, 3}, {100, 200, 300, 400}, 0, "ns"),
          series("page-faults", kFaults, {0, 1, 2, 3}, {1, 2, 3, 4}, 1)};
}

CountingReport report_of(std::vector<CounterRow> rows, AggrMode mode) {
  CountingReport r;
  r.target = "system wide";
  r.elapsed_ns = 1000;
  r.timestamp_unix_ns = 1700000000000000000ULL;
  r.aggr_mode = mode;
  r.counters = std::move(rows);
  return r;
}

}  // namespace

TEST(PerfAggregation, PerSocketSumsItsCpusAndKeepsAggregatesTogether) {
  auto rows = aggregate_rows(two_events_four_cpus(), per(AggrMode::socket));
  ASSERT_EQ(rows.size(), 4u);
  // perf: every event of S0, then every event of S1.
  EXPECT_EQ(rows[0].event, "task-clock");
  EXPECT_EQ(rows[0].aggr->socket, 0);
  EXPECT_EQ(rows[0].aggr->cpus, 2);
  EXPECT_DOUBLE_EQ(rows[0].value, 300);
  EXPECT_EQ(rows[1].event, "page-faults");
  EXPECT_DOUBLE_EQ(rows[1].value, 3);
  EXPECT_EQ(rows[2].aggr->socket, 1);
  EXPECT_DOUBLE_EQ(rows[2].value, 700);
  EXPECT_EQ(aggr_label(AggrMode::socket, *rows[2].aggr), "S1");
}

TEST(PerfAggregation, PerCoreDieAndNodeLabels) {
  auto core = aggregate_rows(two_events_four_cpus(), per(AggrMode::core));
  ASSERT_EQ(core.size(), 8u);
  EXPECT_EQ(aggr_label(AggrMode::core, *core[0].aggr), "S0-D0-C0");
  EXPECT_EQ(aggr_label(AggrMode::core, *core[2].aggr), "S0-D0-C1");
  EXPECT_EQ(core[2].aggr->cpus, 1);
  auto die = aggregate_rows(two_events_four_cpus(), per(AggrMode::die));
  EXPECT_EQ(aggr_label(AggrMode::die, *die[2].aggr), "S1-D0");
  auto node = aggregate_rows(two_events_four_cpus(), per(AggrMode::node));
  ASSERT_EQ(node.size(), 4u);
  EXPECT_EQ(aggr_label(AggrMode::node, *node[0].aggr), "N0");
  EXPECT_DOUBLE_EQ(node[2].value, 700);
}

// --per-thread: each event's threads by count, largest first; system-wide, threads that
// counted nothing are left out (perf).
TEST(PerfAggregation, PerThreadSortedAndZeroLeftOutSystemWide) {
  Aggregation a;
  a.mode = AggrMode::thread;
  a.thread_names = {{10, "sh"}, {11, "burn"}, {12, "idle"}};
  std::vector<EventSeries> s = {
      series("task-clock", kTaskClock, {10, 11, 12}, {5, 50, 0}, 0, "ns")};
  auto rows = aggregate_rows(s, a);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].aggr->comm, "burn");
  EXPECT_EQ(rows[2].aggr->tid, 12);
  a.skip_zero_threads = true;
  rows = aggregate_rows(s, a);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(aggr_label(AggrMode::thread, *rows[1].aggr), "sh-10");
}

TEST(PerfAggregation, RunningPercentAsPerfPrintsIt) {
  EXPECT_DOUBLE_EQ(running_percent(0, 0), 100);  // <not supported>: 0 of 0
  EXPECT_DOUBLE_EQ(running_percent(0, 50), 0);   // enabled, never ran
  EXPECT_DOUBLE_EQ(running_percent(25, 100), 25);
  EXPECT_DOUBLE_EQ(running_percent(100, 100), 100);
}

TEST(PerfLayout, AggregatePrefixesInTextAndCsv) {
  auto r = report_of(aggregate_rows(two_events_four_cpus(), per(AggrMode::core)), AggrMode::core);
  const std::string text = render_text(r);
  // perf 6.1: "S%d-D%d-C%-8d %4d " before the 18-wide count.
  EXPECT_NE(text.find("\nS0-D0-C1           1                  2      page-faults"),
            std::string::npos)
      << text;
  const std::string csv = render_csv(r);
  EXPECT_EQ(csv.rfind("S0-D0-C0,1,0.00,msec,task-clock,", 0), 0u) << csv;
  for (const auto& line : split(csv, '\n')) {
    if (!line.empty()) {
      EXPECT_EQ(split(line, ',').size(), 9u) << line;  // perf's 8 commas
    }
  }
  Aggregation a;
  a.mode = AggrMode::thread;
  a.thread_names = {{42, "burn"}};
  auto t = report_of(aggregate_rows({series("page-faults", kFaults, {42}, {7}, 0)}, a),
                     AggrMode::thread);
  EXPECT_NE(render_text(t).find("\n            burn-42                        7      page-faults"),
            std::string::npos)
      << render_text(t);
  EXPECT_EQ(render_csv(t).rfind("burn-42,7,,page-faults,", 0), 0u) << render_csv(t);
  const json j = json::parse(render_json(t));
  EXPECT_EQ(j.at("aggregate_by"), "thread");
  EXPECT_EQ(j.at("counters")[0].at("aggregate").at("id"), "burn-42");
  EXPECT_EQ(j.at("counters")[0].at("aggregate").at("tid"), 42);
}

TEST(PerfLayout, NoBigNumUserSysAndTarget) {
  auto r =
      report_of({make_row(series("page-faults", kFaults, {0}, {1234567}, 0), {{1234567, 1, 1}})},
                AggrMode::global);
  r.target = "process id 42";
  r.user_ns = 1500000;
  r.sys_ns = 0;
  RenderOptions opts;
  opts.big_num = false;
  const std::string text = render_text(r, opts);
  EXPECT_NE(text.find(" Performance counter stats for process id '42':"), std::string::npos)
      << text;
  EXPECT_NE(text.find("           1234567      page-faults"), std::string::npos) << text;
  EXPECT_NE(text.find("\n\n       0.001500000 seconds user\n       0.000000000 seconds sys\n"),
            std::string::npos)
      << text;
  EXPECT_NE(render_text(r).find("1,234,567"), std::string::npos);
}

TEST(PerfLayout, CsvSummaryPrefixAndItsAbsence) {
  auto r = report_of({make_row(series("page-faults", kFaults, {0}, {3}, 0), {{3, 1, 1}})},
                     AggrMode::global);
  RenderOptions opts;
  opts.format = OutputFormat::csv;
  opts.intervals = true;
  std::ostringstream with, without;
  make_renderer(opts, with)->final(r);
  opts.csv_summary_prefix = false;
  make_renderer(opts, without)->final(r);
  EXPECT_EQ(with.str().rfind("summary,3,,page-faults,", 0), 0u) << with.str();
  EXPECT_EQ(without.str().rfind("3,,page-faults,", 0), 0u) << without.str();
}

namespace {

// IPC and CPUs_utilized over -A rows: IPC's events in group 1, CPUs_utilized's in group 2.
CountingReport metric_report() {
  std::vector<EventSeries> s = {series("instructions", kInstructions, {0, 1}, {300, 100}, 1),
                                series("cycles", kCycles, {0, 1}, {200, 0}, 1),
                                series("task-clock", kTaskClock, {0, 1}, {500, 250}, 2, "ns")};
  s[1].counts[1] = {0, 1000, 0};  // cycles never ran on CPU1: <not counted>
  auto r = report_of(aggregate_rows(s, per(AggrMode::cpu)), AggrMode::cpu);
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto ms = select_metrics({"IPC", "CPUs_utilized"}, resolver);
  r.metrics = compute_metrics(r, {{ms[0], 1}, {ms[1], 2}});
  return r;
}

}  // namespace

TEST(PerfLayout, MetricsBesideTheirFirstEvent) {
  const CountingReport r = metric_report();
  const std::string text = render_text(r);
  // CPU0's instructions line has perf's shadow "insn per cycle" and, below it, -M IPC.
  EXPECT_NE(text.find("#    1.50  insn per cycle\n"), std::string::npos) << text;
  EXPECT_NE(text.find("#     1.50 insn per cycle  IPC\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# IPC not computed: cycles <not counted>"), std::string::npos) << text;
  EXPECT_EQ(text.find("0.00 insn per cycle  IPC"), std::string::npos) << text;
  const std::string csv = render_csv(r);
  EXPECT_NE(csv.find("\nCPU0,,,,,,1.50,IPC\n"), std::string::npos) << csv;  // same field count
  EXPECT_NE(csv.find("\nCPU1,100,,instructions,1000,100.00,,IPC\n"), std::string::npos) << csv;
  const json j = json::parse(render_json(r));
  ASSERT_EQ(j.at("metrics").size(), 4u);
  EXPECT_EQ(j.at("metrics")[0].at("name"), "IPC");
  EXPECT_DOUBLE_EQ(j.at("metrics")[0].at("value").get<double>(), 1.5);
  EXPECT_EQ(j.at("metrics")[2].at("status"), "not-computed");
  EXPECT_TRUE(j.at("metrics")[2].at("value").is_null());
  EXPECT_EQ(j.at("metrics")[2].at("reason"), "cycles <not counted>");
}

TEST(PerfLayout, MetricOnlyTable) {
  const CountingReport r = metric_report();
  RenderOptions opts;
  opts.metric_only = true;
  const std::string text = render_text(r, opts);
  // Columns: perf's derived insn per cycle and GHz (CPUs utilized is left out, as perf), then
  // -M's; 20 wide, after the aggregate column.
  EXPECT_NE(text.find("\n                 insn per cycle                  GHz                  IPC"
                      "        CPUs_utilized\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nCPU0                       1.50                0.400                 1.50"
                      "                 0.50\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("n/a"), std::string::npos) << text;
  EXPECT_NE(text.find("IPC not computed: cycles <not counted>"), std::string::npos) << text;
  const std::string csv = render_csv(r, ",", opts);
  EXPECT_EQ(csv,
            "cpu,insn per cycle,GHz,IPC,CPUs_utilized,\nCPU0,1.50,0.400,1.50,0.50,\n"
            "CPU1,,,,0.25,\n");
  const json j = json::parse(render_json(r, opts));
  EXPECT_TRUE(j.at("counters").empty());
  EXPECT_EQ(j.at("metrics")[0].at("name"), "insn per cycle");
}

// --by's rows of a function (order_keys): keys sorted by their total, --top's folded row, the
// total row with the counts kept per function; and how text, CSV, JSON and the saved-run reader
// show them.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../../bpf/pmcprof.h"
#include "pmcprof/report/func_report.hpp"
#include "pmcprof/report/read_json.hpp"
#include "pmcprof/stream/func_stats.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;
using nlohmann::json;

namespace {

constexpr EventKind kTaskClock{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK};
const std::vector<FuncEventInfo> kTaskClockOnly = {{"task-clock", kTaskClock, "ns", 0}};
const std::vector<FuncEventInfo> kRefused = {{"cycles", kTaskClock, "", std::nullopt}};

// `n` calls of `ns` each (wall, on-CPU and task-clock alike).
void add_calls(FuncStats& s, int n, std::uint64_t ns) {
  for (int i = 0; i < n; ++i) {
    CallRecord r;
    r.wall_ns = r.oncpu_ns = ns;
    r.n_events = 1;
    r.delta[0] = ns;
    r.measured = r.ran = 1;
    s.add(r);
  }
}

struct Key {
  std::string name;
  int calls;
  std::uint64_t ns;
  bool other = false;
};

// A function's keys as function_session.cpp makes them, in map order (by name), with `events`.
struct Keys {
  std::vector<FuncRow> rows;
  std::vector<FuncStats> stats;
  std::vector<FuncEventInfo> events;

  explicit Keys(const std::vector<Key>& keys,
                const std::vector<FuncEventInfo>& infos = kTaskClockOnly)
      : events(infos) {
    for (const auto& k : keys) {
      FuncStats s(1);
      add_calls(s, k.calls, k.ns);
      rows.push_back(make(k.name, s));
      rows.back().other = k.other;
      stats.push_back(std::move(s));
    }
  }
  FuncRow make(const std::string& key, const FuncStats& s) const {
    return make_func_row("./w:burn", "uprobe", key, s, 0, events);
  }
  std::vector<FuncRow> order(std::optional<std::size_t> top = std::nullopt) const {
    return order_keys(rows, stats, FuncStats(1), top,
                      [this](const FuncStats& s) { return make("", s); });
  }
};

std::vector<std::string> names(const std::vector<FuncRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.by_value);
  return out;
}

// By task-clock: b 5,000, c 1,500, a 1,000 ns; by calls a, c, b; by name a, b, c.
const std::vector<Key> kThree = {{"a", 10, 100}, {"b", 1, 5000}, {"c", 3, 500}};

FunctionReport report_of(std::vector<FuncRow> rows, const std::string& by = "comm") {
  FunctionReport r;
  r.target = "./w";
  r.aggregation = "stream";
  r.by = by;
  r.elapsed_ns = 1000000;
  r.functions = std::move(rows);
  return r;
}

}  // namespace

TEST(FuncKeys, SortedByTheFirstEventsTotalLargestFirst) {
  const auto rows = Keys(kThree).order();
  EXPECT_EQ(names(rows), (std::vector<std::string>{"b", "c", "a", "(total)"}));
  EXPECT_EQ(rows.back().sorted_by, "task-clock");
}

TEST(FuncKeys, TiesByCallsThenByKey) {
  // x and y: 1,000 ns each, y in more calls; z and w: equal in both, by name.
  const auto rows = Keys({{"x", 1, 1000}, {"y", 4, 250}, {"z", 2, 100}, {"w", 2, 100}}).order();
  EXPECT_EQ(names(rows), (std::vector<std::string>{"y", "x", "w", "z", "(total)"}));
}

TEST(FuncKeys, ByWallTimeWhenTheFirstEventWasNotCounted) {
  const auto rows = Keys(kThree, kRefused).order();
  EXPECT_EQ(rows.back().sorted_by, "wall time");
  EXPECT_EQ(names(rows), (std::vector<std::string>{"b", "c", "a", "(total)"}));
}

TEST(FuncKeys, AKeyWithoutAValueGoesLastAndKeepsTheOrderByTheEvent) {
  // Every call of "d" disturbed: its task-clock was not counted (it has the largest wall time).
  Keys k(kThree);
  FuncStats s(1);
  CallRecord r;
  r.wall_ns = r.oncpu_ns = r.delta[0] = 90000;
  r.n_events = 1;
  r.measured = r.ran = 1;
  r.flags = PMCPROF_REC_NOT_COUNTED;
  s.add(r);
  k.rows.push_back(k.make("d", s));
  k.stats.push_back(s);
  ASSERT_EQ(k.rows.back().events[0].per_call.status, CounterStatus::not_counted);
  const auto rows = k.order();
  EXPECT_EQ(rows.back().sorted_by, "task-clock");
  EXPECT_EQ(names(rows), (std::vector<std::string>{"b", "c", "a", "d", "(total)"}));
}

TEST(FuncKeys, TotalRowSumsTheKeysAndMergesTheirHistograms) {
  const Keys k(kThree);
  const auto rows = k.order();
  const FuncRow& total = rows.back();
  ASSERT_TRUE(total.total);
  EXPECT_EQ(total.keys, 3u);
  EXPECT_EQ(total.calls, 14u);
  EXPECT_EQ(total.events[0].per_call.total, 1000 + 5000 + 1500);
  EXPECT_EQ(total.wall.total, 7500);
  // Its per-call figures are those of all the calls at once, not an average of the keys'.
  FuncStats all(1);
  add_calls(all, 10, 100);
  add_calls(all, 1, 5000);
  add_calls(all, 3, 500);
  const FuncRow whole = k.make("", all);
  const Distribution& d = total.events[0].per_call;
  const Distribution& w = whole.events[0].per_call;
  EXPECT_EQ(d.p50, w.p50);
  EXPECT_EQ(d.p90, w.p90);
  EXPECT_EQ(d.p99, w.p99);
  EXPECT_EQ(d.min, 100);
  EXPECT_EQ(d.max, 5000);
  EXPECT_DOUBLE_EQ(d.mean, 7500.0 / 14);
  EXPECT_TRUE(d.percentiles);
}

TEST(FuncKeys, TopKeepsTheLargestAndFoldsTheRestSoTotalsStillAddUp) {
  const auto rows = Keys(kThree).order(1);
  ASSERT_EQ(names(rows), (std::vector<std::string>{"b", "(other 2 keys)", "(total)"}));
  const FuncRow& folded = rows[1];
  EXPECT_EQ(folded.folded, 2u);
  EXPECT_EQ(folded.calls, 13u);
  EXPECT_EQ(folded.events[0].per_call.total, 2500);
  EXPECT_EQ(folded.events[0].per_call.min, 100);
  EXPECT_EQ(folded.events[0].per_call.max, 500);
  EXPECT_EQ(rows[0].calls + folded.calls, rows[2].calls);
  EXPECT_EQ(rows[0].events[0].per_call.total + folded.events[0].per_call.total,
            rows[2].events[0].per_call.total);
  EXPECT_EQ(rows[0].wall.total + folded.wall.total, rows[2].wall.total);
  EXPECT_EQ(rows[2].keys, 3u);  // the folded ones too
}

TEST(FuncKeys, TopOfAsManyKeysFoldsNothing) {
  EXPECT_EQ(names(Keys(kThree).order(3)), (std::vector<std::string>{"b", "c", "a", "(total)"}));
  const auto one = Keys(kThree).order(2);
  EXPECT_EQ(names(one), (std::vector<std::string>{"b", "c", "(other 1 key)", "(total)"}));
}

TEST(FuncKeys, MaxKeysOtherRowStaysAfterTheKeysAndCountsInTheTotal) {
  // The argN `other` row folds keys of unknown number: never sorted among them nor folded.
  const auto rows =
      Keys({{"1", 1, 100}, {"(other)", 50, 1000, true}, {"2", 2, 100}, {"3", 1, 50}}).order(1);
  ASSERT_EQ(names(rows), (std::vector<std::string>{"2", "(other 2 keys)", "(other)", "(total)"}));
  EXPECT_TRUE(rows[2].other);
  EXPECT_EQ(rows[3].calls, 54u);
  EXPECT_EQ(rows[3].keys, 3u);
}

TEST(FuncKeys, NeverCalledIsATotalOfNoKeys) {
  const auto rows = Keys({}).order(2);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].total);
  EXPECT_EQ(rows[0].keys, 0u);
  EXPECT_EQ(rows[0].calls, 0u);
  EXPECT_TRUE(rows[0].events[0].per_call.no_calls);
}

// ---- the renderers ----

namespace {

// kThree with --top 2, and the counts the kernel keeps per function on its total row, as
// function_session.cpp puts them.
FunctionReport keyed_report() {
  auto rows = Keys(kThree).order(2);
  FuncRow& total = rows.back();
  total.depth_overflow = 7;
  total.unmatched_exits = 5;
  total.abandoned = 3;
  FunctionReport r = report_of(std::move(rows));
  r.top = 2;
  return r;
}

}  // namespace

TEST(FuncKeysText, RowsInOrderAndPerFunctionCountsOnTheTotalRowOnly) {
  const std::string text = render_func_text(keyed_report());
  const auto b = text.find("comm b\n");
  const auto c = text.find("comm c\n");
  const auto folded = text.find("other (1 key past --top 2)");
  const auto total = text.find("total (3 keys, sorted by task-clock)");
  ASSERT_NE(b, std::string::npos) << text;
  ASSERT_NE(c, std::string::npos) << text;
  ASSERT_NE(folded, std::string::npos) << text;
  ASSERT_NE(total, std::string::npos) << text;
  EXPECT_LT(b, c);
  EXPECT_LT(c, folded);
  EXPECT_LT(folded, total);
  // "7 too deep, 5 unmatched returns, 3 never returned": once, under the total row's header.
  const auto deep = text.find("7 too deep, 5 unmatched returns, 3 never returned");
  ASSERT_NE(deep, std::string::npos) << text;
  EXPECT_GT(deep, total);
  EXPECT_EQ(text.find("too deep", total), deep + 2) << text;
  EXPECT_EQ(text.find("too deep", deep + 3), std::string::npos) << text;
  EXPECT_EQ(text.rfind("too deep", total), std::string::npos) << text;
  // The total row's calls: 14 of them.
  EXPECT_NE(text.find("14 calls", total), std::string::npos) << text;
}

TEST(FuncKeysCsv, TotalAndFoldedRowsAreMarkedInTheKeyColumn) {
  const std::string csv = render_func_csv(keyed_report());
  EXPECT_NE(csv.find("./w:burn,uprobe,(total),14,0,0,task-clock,ns,7500,"), std::string::npos)
      << csv;
  EXPECT_NE(csv.find("./w:burn,uprobe,(other 1 key),10,0,0,task-clock,ns,1000,"), std::string::npos)
      << csv;
  // The unmeasured column (third from last) is 15 on the total row's lines, 0 on the keys'.
  EXPECT_NE(csv.find("./w:burn,uprobe,(total),14,0,0,wall-time,ns,7500,"), std::string::npos);
  for (const auto& line : {std::string("(total)"), std::string(",b,")}) {
    const auto at = csv.find(line);
    ASSERT_NE(at, std::string::npos);
    const auto cells = split(csv.substr(at, csv.find('\n', at) - at), ',');
    ASSERT_GE(cells.size(), 3u);
    EXPECT_EQ(cells[cells.size() - 3], line == "(total)" ? "15" : "0");
  }
}

TEST(FuncKeysJson, KeysInFunctionsTotalsApartWithThePerFunctionCounts) {
  const json j = json::parse(render_func_json(keyed_report()));
  EXPECT_EQ(j["top"], 2);
  ASSERT_EQ(j["functions"].size(), 3u);
  EXPECT_EQ(j["functions"][0]["comm"], "b");
  EXPECT_EQ(j["functions"][1]["comm"], "c");
  EXPECT_EQ(j["functions"][2]["comm"], "");
  EXPECT_EQ(j["functions"][2]["folded"], 1);
  EXPECT_FALSE(j["functions"][0].contains("folded"));
  std::uint64_t calls = 0, task_clock = 0;
  for (const auto& f : j["functions"]) {
    calls += f["calls"].get<std::uint64_t>();
    task_clock += f["events"]["task-clock"]["total"].get<std::uint64_t>();
    EXPECT_EQ(f["depth_overflow"], 0);
    EXPECT_EQ(f["unmatched_exits"], 0);
    EXPECT_EQ(f["abandoned"], 0);
  }
  ASSERT_EQ(j["totals"].size(), 1u);
  const json& t = j["totals"][0];
  EXPECT_EQ(t["total"], true);
  EXPECT_EQ(t["keys"], 3);
  EXPECT_EQ(t["sorted_by"], "task-clock");
  EXPECT_FALSE(t.contains("comm"));
  EXPECT_EQ(t["calls"], calls);
  EXPECT_EQ(t["events"]["task-clock"]["total"], task_clock);
  EXPECT_EQ(t["depth_overflow"], 7);
  EXPECT_EQ(t["unmatched_exits"], 5);
  EXPECT_EQ(t["abandoned"], 3);
}

TEST(FuncKeysJson, NoTotalsWithoutBy) {
  FunctionReport r = report_of({Keys({{"", 2, 100}}).rows[0]}, "");
  const json j = json::parse(render_func_json(r));
  EXPECT_FALSE(j.contains("totals"));
  EXPECT_FALSE(j.contains("top"));
  EXPECT_EQ(render_func_text(r).find("total ("), std::string::npos);
}

TEST(FuncKeysJson, SavedRunReadsBackTheTotalAfterItsKeys) {
  const FunctionReport before = keyed_report();
  const std::string text = render_func_json(before);
  const SavedRun run = read_saved_run(text, "k.json");
  const FunctionReport& after = function_totals(run, "k.json");
  ASSERT_EQ(after.functions.size(), before.functions.size());
  for (std::size_t i = 0; i < before.functions.size(); ++i) {
    EXPECT_EQ(after.functions[i].by_value, before.functions[i].by_value) << i;
    EXPECT_EQ(after.functions[i].total, before.functions[i].total) << i;
    EXPECT_EQ(after.functions[i].folded, before.functions[i].folded) << i;
    EXPECT_EQ(after.functions[i].calls, before.functions[i].calls) << i;
  }
  EXPECT_EQ(after.top, before.top);
  EXPECT_EQ(after.functions.back().keys, 3u);
  EXPECT_EQ(after.functions.back().depth_overflow, 7u);
  // And renders as stat did.
  EXPECT_EQ(render_func_text(after), render_func_text(before));
}

TEST(FuncKeysJson, SavedRunWithoutTotalsStillReads) {
  // A file from before the total rows: keys only.
  json j = json::parse(render_func_json(keyed_report()));
  j.erase("totals");
  j.erase("top");
  for (auto& f : j["functions"]) f.erase("folded");
  const std::string text = j.dump();
  const SavedRun run = read_saved_run(text, "old.json");
  const FunctionReport& r = function_totals(run, "old.json");
  ASSERT_EQ(r.functions.size(), 3u);
  for (const auto& f : r.functions) EXPECT_FALSE(f.total);
}

// pmcprof diff on synthetic runs: rows matched by function and quantity, the rule applied
// (a 2x slower function flagged; one moved 0.5 % over many calls, significant, not flagged),
// rows only in one run, files without buckets and single runs said so, and the three formats.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pmcprof/report/diff.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

namespace {

// n calls evenly spread over [lo, hi] (in rank).
Histogram spread(std::uint64_t n, double lo, double hi) {
  Histogram h;
  for (std::uint64_t i = 0; i < n; ++i)
    h.add(static_cast<std::uint64_t>(
        std::llround(lo + (hi - lo) * (static_cast<double>(i) + 0.5) / static_cast<double>(n))));
  return h;
}

Distribution dist_of(const Histogram& h, double sum) {
  Distribution d;
  d.status = CounterStatus::ok;
  d.measured = h.count();
  d.total = sum;
  d.measured_sum = sum;
  d.mean = sum / static_cast<double>(h.count());
  d.min = h.lowest_value();
  d.max = h.highest_value();
  d.p50 = std::round(h.percentile(0.5, d.min, d.max));
  d.p99 = std::round(h.percentile(0.99, d.min, d.max));
  return d;
}

// A function whose calls took [lo, hi] ns each, on-CPU and in task-clock alike.
FuncRow function(const std::string& name, std::uint64_t n, double lo, double hi,
                 bool buckets = true) {
  const Histogram h = spread(n, lo, hi);
  const double sum = static_cast<double>(n) * (lo + hi) / 2;
  FuncRow f;
  f.function = name;
  f.backend = "uprobe";
  f.calls = n;
  f.wall = f.oncpu = dist_of(h, sum);
  FuncEventRow e;
  e.event = "task-clock";
  e.kind = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK};
  e.unit = "ns";
  e.per_call = f.wall;
  if (buckets) f.wall_histogram = f.oncpu_histogram = e.histogram = h;
  f.events.push_back(std::move(e));
  return f;
}

SavedRun function_run(std::vector<FuncRow> rows) {
  SavedRun run;
  run.mode = RunMode::function;
  FunctionReport r;
  r.target = "./work";
  r.aggregation = "kernel";
  r.elapsed_ns = 1000000000;
  r.functions = std::move(rows);
  run.function = std::move(r);
  return run;
}

DiffSide side(const std::string& name) {
  return {"'" + name + "'", name, {}, 0, 0, 1};
}

DiffReport diff(const SavedRun& a, const SavedRun& b, DiffRule rule = {}) {
  return diff_runs(a, side("a.json"), b, side("b.json"), rule);
}

const DiffRow& row(const DiffReport& d, const std::string& function, const std::string& quantity) {
  for (const auto& r : d.rows)
    if ((r.function == function || function.empty()) && r.quantity == quantity) return r;
  ADD_FAILURE() << "no row " << function << " " << quantity;
  static const DiffRow none;
  return none;
}

std::string render(const DiffReport& d, OutputFormat format) {
  RenderOptions opts;
  opts.format = format;
  std::ostringstream out;
  render_diff(d, opts, out);
  return out.str();
}

CountingReport counting(double task_clock_ms, double sd_pct, int runs) {
  CountingReport r;
  r.target = "./work";
  r.runs = runs;
  r.elapsed_ns = 500000000;
  if (runs > 1) r.elapsed_stddev_pct = 1.0;
  CounterRow c;
  c.event = "task-clock";
  c.kind = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK};
  c.unit = "ns";
  c.status = CounterStatus::ok;
  c.value = task_clock_ms * 1e6;
  if (runs > 1) c.stddev_pct = sd_pct;
  r.counters.push_back(c);
  return r;
}

SavedRun counting_run(CountingReport r) {
  SavedRun run;
  run.counting = std::move(r);
  return run;
}

}  // namespace

TEST(DiffFunctions, TwiceAsSlowIsFlaggedTheOtherIsNot) {
  const SavedRun a = function_run(
      {function("work_a", 5000, 95000, 105000), function("work_b", 50000, 95000, 105000)});
  // work_a 2x slower; work_b 0.5 % slower over 50,000 calls: the test is sure, the shift small.
  const SavedRun b = function_run(
      {function("work_a", 5000, 190000, 210000), function("work_b", 50000, 95475, 105525)});
  const DiffReport d = diff(a, b);
  for (const char* q : {"task-clock", "wall time", "on-CPU time"}) {
    const DiffRow& slow = row(d, "work_a", q);
    EXPECT_EQ(slow.status, DiffStatus::changed) << q;
    EXPECT_EQ(slow.direction, 1);
    EXPECT_NEAR(*slow.shift_pct, 100, 3) << q;
    EXPECT_LT(*slow.p_value, 1e-16);
    const DiffRow& same = row(d, "work_b", q);
    EXPECT_EQ(same.status, DiffStatus::within_noise) << q;
    EXPECT_LT(*same.p_value, 0.001) << "significant, and yet";
    EXPECT_LT(std::fabs(*same.shift_pct), 1) << q;
  }
  EXPECT_EQ(d.flagged(), 3u);
  // A threshold of 0 flags what is significant alone.
  DiffRule any;
  any.threshold_pct = 0;
  EXPECT_EQ(diff(a, b, any).flagged(), 6u);
}

TEST(DiffFunctions, SameRunTwiceFlagsNothing) {
  const SavedRun a = function_run({function("work_a", 2000, 95000, 105000)});
  const DiffReport d = diff(a, a);
  EXPECT_EQ(d.flagged(), 0u);
  EXPECT_EQ(*row(d, "work_a", "wall time").p_value, 1);
  EXPECT_EQ(*row(d, "work_a", "wall time").shift, 0);
}

TEST(DiffFunctions, RowsOnlyInOneRunAreAddedOrRemoved) {
  FuncRow extra = function("work_c", 10, 1000, 2000);
  FuncEventRow faults;
  faults.event = "page-faults";
  faults.per_call = extra.wall;
  extra.events.push_back(faults);
  const SavedRun a = function_run({function("work_a", 100, 1000, 2000)});
  const SavedRun b = function_run({function("work_a", 100, 1000, 2000), extra});
  const DiffReport d = diff(a, b);
  EXPECT_EQ(row(d, "work_c", "wall time").status, DiffStatus::added);
  EXPECT_FALSE(row(d, "work_c", "wall time").base);
  EXPECT_EQ(row(d, "work_c", "page-faults").status, DiffStatus::added);
  const DiffReport back = diff(b, a);
  EXPECT_EQ(row(back, "work_c", "task-clock").status, DiffStatus::removed);
  EXPECT_NE(render(back, OutputFormat::text).find("only in the baseline"), std::string::npos);
}

TEST(DiffFunctions, WithoutBucketsChangesAreShownNotTested) {
  const SavedRun a = function_run({function("work_a", 100, 1000, 2000, /*buckets=*/false)});
  const SavedRun b = function_run({function("work_a", 100, 2000, 4000)});
  const DiffReport d = diff(a, b);
  const DiffRow& r = row(d, "work_a", "wall time");
  EXPECT_EQ(r.status, DiffStatus::not_tested);
  EXPECT_EQ(r.why_not_tested, "no per-call buckets in 'a.json' (an older pmcprof's)");
  EXPECT_NEAR(r.fresh->mean / r.base->mean, 2, 1e-9);
  ASSERT_EQ(d.notes.size(), 1u);
  const std::string text = render(d, OutputFormat::text);
  EXPECT_NE(text.find("not tested: no per-call buckets in 'a.json'"), std::string::npos) << text;
  EXPECT_NE(text.find("+100.0%"), std::string::npos) << text;
}

TEST(DiffFunctions, NotSupportedAndUncalledAreNotTested) {
  FuncRow f = function("work_a", 100, 1000, 2000);
  f.events[0].per_call = Distribution{};
  f.events[0].per_call.status = CounterStatus::not_supported;
  const DiffReport d = diff(function_run({f}), function_run({function("work_a", 100, 1000, 2000)}));
  EXPECT_EQ(row(d, "work_a", "task-clock").why_not_tested, "<not supported> in 'a.json'");
  FuncRow idle = function("work_a", 0, 0, 0);
  idle.wall.no_calls = true;
  const DiffReport none = diff(function_run({idle}), function_run({function("work_a", 1, 5, 5)}));
  EXPECT_EQ(row(none, "work_a", "wall time").why_not_tested, "no calls in 'a.json'");
}

TEST(DiffCounting, MeansOfRunsByWelch) {
  const DiffReport d =
      diff(counting_run(counting(100, 0.5, 5)), counting_run(counting(150, 0.5, 5)));
  const DiffRow& tc = row(d, "", "task-clock");
  EXPECT_EQ(tc.status, DiffStatus::changed);
  EXPECT_NEAR(*tc.shift_pct, 50, 1e-9);
  EXPECT_EQ(tc.test, "welch-t");
  // 3 % apart with 0.2 % errors: significant, below the threshold.
  const DiffReport small =
      diff(counting_run(counting(100, 0.2, 5)), counting_run(counting(103, 0.2, 5)));
  EXPECT_EQ(row(small, "", "task-clock").status, DiffStatus::within_noise);
  EXPECT_LT(*row(small, "", "task-clock").p_value, 0.001);
  EXPECT_EQ(row(small, "", "elapsed").status, DiffStatus::within_noise);
  // One run: no spread to test against.
  const DiffReport one = diff(counting_run(counting(100, 0, 1)), counting_run(counting(150, 0, 1)));
  EXPECT_EQ(row(one, "", "task-clock").status, DiffStatus::not_tested);
  EXPECT_NE(row(one, "", "task-clock").why_not_tested.find("one run in 'a.json'"),
            std::string::npos);
}

TEST(DiffRefuses, TwoModes) {
  try {
    diff(counting_run(counting(1, 0, 1)), function_run({}));
    FAIL() << "diffed a counting and a function report";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "'a.json' is a counting report and 'b.json' a function report: diff compares "
                 "two runs of one mode");
  }
  SavedRun stream;
  stream.streamed = true;
  stream.counting_intervals.push_back(counting(1, 0, 1));
  EXPECT_THROW(diff(stream, counting_run(counting(1, 0, 1))), UserError);
}

TEST(DiffRender, TextMarksFlaggedRowsAndStatesTheRule) {
  const SavedRun a = function_run(
      {function("work_a", 1000, 95000, 105000), function("work_b", 1000, 95000, 105000)});
  const SavedRun b = function_run(
      {function("work_a", 1000, 190000, 210000), function("work_b", 1000, 95000, 105000)});
  const std::string text = render(diff(a, b), OutputFormat::text);
  EXPECT_NE(text.find("\n * wall time "), std::string::npos) << text;
  EXPECT_NE(text.find("\n   wall time "), std::string::npos) << text;
  EXPECT_NE(text.find("slower: shift +"), std::string::npos) << text;
  EXPECT_NE(text.find("within the noise (shift +0.0%, p = 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("gives p < 0.001, and the Hodges-Lehmann shift"), std::string::npos);
  EXPECT_NE(text.find("3 of 6 tested quantities changed beyond the noise."), std::string::npos);
}

TEST(DiffRender, CsvHasAHeaderAndOneRowPerQuantity) {
  const SavedRun a = function_run({function("work,a", 100, 1000, 2000)});
  const SavedRun b = function_run({function("work,a", 100, 2000, 4000)});
  const std::string csv = render(diff(a, b), OutputFormat::csv);
  std::istringstream in(csv);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u) << csv;
  EXPECT_EQ(lines[0].rfind("function,backend,kind,by,quantity,unit,status,calls_baseline", 0), 0u);
  EXPECT_EQ(lines[2].rfind("\"work,a\",uprobe,function,,wall time,ns,changed,100,100,0,", 0), 0u)
      << lines[2];
  // Every row as many fields as the header (the quoted name holds one comma).
  const auto fields = [](const std::string& l) { return std::count(l.begin(), l.end(), ','); };
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(fields(lines[i]) - 1, fields(lines[0]));
}

TEST(DiffRender, Json) {
  const SavedRun a = function_run({function("work_a", 100, 1000, 2000)});
  const SavedRun b = function_run({function("work_a", 100, 2000, 4000)});
  const auto j = nlohmann::json::parse(render(diff(a, b), OutputFormat::json));
  EXPECT_EQ(j["schema"], "pmcprof/1");
  EXPECT_EQ(j["type"], "diff");
  EXPECT_EQ(j["rule"]["test"], "mann-whitney-u");
  EXPECT_EQ(j["rule"]["alpha"], 0.001);
  EXPECT_EQ(j["changed"], 3);
  const auto& r = j["rows"][1];
  EXPECT_EQ(r["quantity"], "wall time");
  EXPECT_EQ(r["status"], "changed");
  EXPECT_EQ(r["direction"], "up");
  EXPECT_EQ(r["baseline"]["calls"], 100);
  EXPECT_NEAR(r["change_pct"]["mean"].get<double>(), 100, 1e-9);
  EXPECT_LT(r["test"]["p_value"].get<double>(), 1e-16);
  EXPECT_EQ(r["test"]["n_new"], 100);
}

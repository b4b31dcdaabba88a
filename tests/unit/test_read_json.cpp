// pmcprof's JSON read back (report/read_json): every golden report, read from its JSON and
// rendered again, is what its model rendered (model -> JSON -> model -> text/CSV/JSON equals
// model -> text/CSV/JSON), and bad input is refused in one line naming what is wrong.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "pmcprof/report/read_json.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

namespace {

std::string golden(const std::string& name) {
  std::ifstream in(std::string(PMCPROF_GOLDEN_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string render(const SavedRun& run, OutputFormat format, const std::string& sep = ",") {
  RenderOptions opts;
  opts.format = format;
  opts.csv_separator = sep;
  std::ostringstream out;
  render_saved_run(run, opts, out, "golden");
  return out.str();
}

// Line by line: a difference shows as the first line that differs, not two whole documents.
void expect_same(const std::string& actual, const std::string& expected) {
  std::istringstream a(actual), e(expected);
  std::string la, le;
  for (int n = 1; std::getline(e, le); ++n) {
    ASSERT_TRUE(std::getline(a, la)) << "missing line " << n << ": " << le;
    ASSERT_EQ(la, le) << "line " << n;
  }
  EXPECT_FALSE(std::getline(a, la)) << "extra line: " << la;
  EXPECT_EQ(actual, expected);
}

void expect_round_trip(const std::string& base, bool csv = true) {
  SCOPED_TRACE(base);
  const SavedRun run = read_saved_run(golden(base + ".json"), base + ".json");
  EXPECT_TRUE(run.unknown_kinds.empty());
  expect_same(render(run, OutputFormat::json), golden(base + ".json"));
  expect_same(render(run, OutputFormat::text), golden(base + ".txt"));
  if (csv) expect_same(render(run, OutputFormat::csv), golden(base + ".csv"));
}

// The one line a bad input is refused with (and that there is one, with no line break).
std::string refusal(const std::string& text, const std::string& source = "a.json") {
  try {
    read_saved_run(text, source);
  } catch (const UserError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(e.hint().find('\n'), std::string::npos) << e.hint();
    return what;
  }
  ADD_FAILURE() << "read: " << text.substr(0, 200);
  return {};
}

void strip_buckets(nlohmann::ordered_json& j) {
  if (j.is_object()) j.erase("buckets");
  if (j.is_structured())
    for (auto& v : j) strip_buckets(v);
}

constexpr const char* kCounting =
    R"({"schema":"pmcprof/1","type":"report","mode":"counting","target":"true",)"
    R"("elapsed_ns":1000,"counters":[]})";

}  // namespace

TEST(ReadJsonGolden, CountingReportsRenderAsTheirModels) {
  for (const char* base : {"system_wide", "workload", "per_cpu", "repeat", "cgroup_bpf"})
    expect_round_trip(base);
  const SavedRun run = read_saved_run(golden("workload.json"), "workload.json");
  EXPECT_EQ(render(run, OutputFormat::csv, ";"), golden("workload_semicolon.csv"));
}

TEST(ReadJsonGolden, IntervalStreamRendersAsItsModels) {
  const SavedRun run = read_saved_run(golden("interval.json"), "interval.json");
  EXPECT_TRUE(run.streamed);
  EXPECT_EQ(run.counting_intervals.size(), 2u);
  ASSERT_TRUE(run.counting);
  expect_round_trip("interval");
}

TEST(ReadJsonGolden, FunctionReportsRenderAsTheirModels) {
  expect_round_trip("func_report");
  expect_round_trip("func_report_both");
  const SavedRun both = read_saved_run(golden("func_report_both.json"), "both.json");
  ASSERT_TRUE(both.function && both.function->kernel_view);
  EXPECT_EQ(both.function->kernel_view->aggregation, "kernel");
}

// --hist from the saved buckets: what stat --hist drew for the same model (wall, events and a
// metric, whose buckets are fixed point times its resolution).
TEST(ReadJsonGolden, HistogramsDrawAsTheirModels) {
  const SavedRun run = read_saved_run(golden("func_report_both.json"), "both.json");
  EXPECT_TRUE(run.histograms);
  RenderOptions text;
  text.hist.draw = true;
  std::ostringstream out;
  render_saved_run(run, text, out, "both.json");
  expect_same(out.str(), golden("func_report_hist.txt"));
  RenderOptions csv;
  csv.format = OutputFormat::csv;
  csv.hist = {true, {"wall", "instructions", "IPC"}, std::nullopt};
  std::ostringstream rows;
  render_saved_run(run, csv, rows, "both.json");
  expect_same(rows.str(), golden("func_report_hist.csv"));
}

TEST(ReadJson, KindsFromAttrDeriveTheMetrics) {
  const SavedRun run = read_saved_run(golden("workload.json"), "workload.json");
  ASSERT_TRUE(run.counting);
  const CounterRow& insns = run.counting->counters.at(2);
  EXPECT_EQ(insns.event, "instructions");
  EXPECT_EQ(insns.kind, (EventKind{PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS}));
  auto ipc = derive_metric(*run.counting, insns);
  ASSERT_TRUE(ipc);
  EXPECT_EQ(ipc->unit, "insn per cycle");
}

TEST(ReadJson, OlderFilesWithoutAttrAskTheLookupAndSayWhatItDidNotKnow) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(golden("workload.json"));
  for (auto& c : j["counters"]) c.erase("attr");
  int asked = 0;
  const KindLookup lookup = [&asked](const std::string& event) -> std::optional<EventKind> {
    ++asked;
    if (event == "cycles") return EventKind{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES};
    if (event == "instructions") return EventKind{PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS};
    return std::nullopt;
  };
  const SavedRun run = read_saved_run(j.dump(), "old.json", lookup);
  EXPECT_EQ(asked, 5);
  EXPECT_EQ(run.unknown_kinds,
            (std::vector<std::string>{"task-clock", "cache-misses", "LLC-load-misses"}));
  ASSERT_TRUE(derive_metric(*run.counting, run.counting->counters.at(2)));
  const SavedRun blind = read_saved_run(j.dump(), "old.json");
  EXPECT_EQ(blind.unknown_kinds.size(), 5u);
}

TEST(ReadJson, BucketsRebuildTheHistogram) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(golden("func_report.json"));
  // As a file from before the buckets, but for one distribution.
  strip_buckets(j);
  auto& wall = j["functions"][0]["wall"];
  // 95 ns (exact below 128) twice, and a bucket at 1 ms.
  const std::uint32_t ms = Histogram::bucket_of(1000000);
  wall["buckets"] = {{95, 96, 2},
                     {Histogram::bucket_lower(ms), Histogram::bucket_upper(ms), 12343}};
  const SavedRun run = read_saved_run(j.dump(), "b.json");
  const Histogram& h = run.function->functions[0].wall_histogram;
  EXPECT_EQ(h.count(), 12345u);
  EXPECT_EQ(h.bucket_count(Histogram::bucket_of(95)), 2u);
  EXPECT_EQ(h.bucket_count(ms), 12343u);
  // The other distributions have no buckets: an older file, said so.
  EXPECT_FALSE(run.histograms);
  EXPECT_TRUE(read_saved_run(golden("func_report.json"), "f.json").histograms);
  // Bounds that are no bucket's are refused with their path.
  wall["buckets"] = {{95, 97, 2}};
  EXPECT_NE(refusal(j.dump()).find("functions[0].wall.buckets: "), std::string::npos);
}

TEST(ReadJson, StreamWithoutSummaryHasNoTotals) {
  const std::string line =
      R"({"schema":"pmcprof/1","type":"interval","mode":"counting","target":"t","interval":1.0,)"
      R"("elapsed_ns":1000,"counters":[]})";
  const SavedRun run = read_saved_run(line + "\n" + line + "\n", "i.json");
  EXPECT_TRUE(run.streamed);
  EXPECT_EQ(run.counting_intervals.size(), 2u);
  EXPECT_THROW(counting_totals(run, "i.json"), UserError);
}

TEST(ReadJson, CompactSingleReportIsOneReport) {
  const SavedRun run = read_saved_run(kCounting, "c.json");
  EXPECT_FALSE(run.streamed);
  ASSERT_TRUE(run.counting);
  EXPECT_EQ(run.counting->target, "true");
}

TEST(ReadJsonRefuses, WhatIsNotAReportInOneLine) {
  EXPECT_EQ(refusal(""), "a.json is empty");
  EXPECT_EQ(refusal("  \n\n"), "a.json is empty");
  EXPECT_NE(
      refusal("{\"schema\": \"pmcprof/1\",\n  \"type\": rep").find("a.json is not JSON (line 2"),
      std::string::npos);
  EXPECT_NE(refusal("[1, 2]").find("its JSON is an array, not an object"), std::string::npos);
  // nlohmann refuses a number beyond a double with an exception of another kind, and no place.
  EXPECT_EQ(refusal("{\"schema\": \"pmcprof/1\",\n  \"elapsed_ns\": 1e999}"),
            "a.json holds a number too large for a double (line 2, column 17: 1e999)");
  EXPECT_EQ(refusal("{\"type\": \"report\"}\n{\"x\": -1e00000000123456800}\n"),
            "a.json holds a number too large for a double (line 2, column 7: "
            "-1e00000000123456800)");
  EXPECT_NE(refusal(R"({"counter-value" : "1.00", "unit" : "msec", "event" : "task-clock"})")
                .find("looks like perf stat -j output"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "attached_probes", "data": {"probes": 1}})")
                .find("looks like bpftrace -f json output"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"schema":"pmcprof/1","type":"list","pmus":[]})")
                .find("is the output of 'pmcprof list -j', not a report"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"schema":"pmcprof/1","type":"diff","mode":"function"})")
                .find("is the output of 'pmcprof diff -j', not a report"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"schema":"pmcprof/2","type":"report"})").find("newer than this pmcprof"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"schema":"other/1","type":"report"})").find("not pmcprof's"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"schema":"pmcprof/1","type":"report","mode":"sampling"})")
                .find("mode: unknown mode 'sampling'"),
            std::string::npos);
  EXPECT_EQ(refusal(std::string(kCounting) + "\n" + kCounting),
            "a.json line 1 is a whole report, in a file of 2 JSON values: one run per file");
  const std::string pretty = nlohmann::json::parse(kCounting).dump(2);
  EXPECT_EQ(refusal(pretty + "\n" + pretty),
            "a.json holds more than one JSON document (the second starts at line 9)");
}

TEST(ReadJsonRefuses, FieldsOfTheWrongTypeByTheirPath) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(golden("func_report.json"));
  j["functions"][1]["events"]["cycles"]["mean"] = "fast";
  j["functions"][1]["events"]["cycles"]["status"] = "ok";
  EXPECT_EQ(refusal(j.dump()),
            "a.json: functions[1].events.cycles.mean: expected a number, found a string");
  j = nlohmann::ordered_json::parse(golden("workload.json"));
  j["counters"][0]["enabled_ns"] = -5;
  EXPECT_EQ(refusal(j.dump()),
            "a.json: counters[0].enabled_ns: expected a whole number >= 0, found -5");
  j = nlohmann::ordered_json::parse(golden("workload.json"));
  j.erase("counters");
  EXPECT_EQ(refusal(j.dump()), "a.json: counters: missing");
}

TEST(ReadJsonRefuses, StreamsOfTwoRunsOrModes) {
  const std::string counting =
      R"({"schema":"pmcprof/1","type":"interval","mode":"counting","target":"t","interval":1.0,)"
      R"("elapsed_ns":1,"counters":[]})";
  const std::string function =
      R"({"schema":"pmcprof/1","type":"interval","mode":"function","target":"t","interval":1.0,)"
      R"("elapsed_ns":1,"functions":[]})";
  EXPECT_NE(refusal(counting + "\n" + function).find("a.json line 2 is a function-mode record"),
            std::string::npos);
  const std::string summary = R"({"schema":"pmcprof/1","type":"summary","mode":"counting",)"
                              R"("target":"t","elapsed_ns":1,"counters":[]})";
  EXPECT_NE(refusal(counting + "\n" + summary + "\n" + counting).find("a record after the run's"),
            std::string::npos);
}

TEST(ReadJsonRefuses, AKernelViewInsideAKernelView) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(golden("func_report_both.json"));
  j["kernel_view"]["kernel_view"] = j["kernel_view"];
  EXPECT_NE(refusal(j.dump()).find("kernel_view: a kernel_view inside a kernel_view"),
            std::string::npos);
}

TEST(ReadJsonRefuses, MetricOnlyReportsInTextAndCsv) {
  const std::string text =
      R"({"schema":"pmcprof/1","type":"report","mode":"counting","target":"t","elapsed_ns":1,)"
      R"("counters":[],"metrics":[{"name":"IPC","group":0,"value":1.5,"unit":"insn per cycle",)"
      R"("status":"ok"}]})";
  const SavedRun run = read_saved_run(text, "m.json");
  std::ostringstream out;
  EXPECT_THROW(render_saved_run(run, RenderOptions{}, out, "m.json"), UserError);
  RenderOptions json;
  json.format = OutputFormat::json;
  render_saved_run(run, json, out, "m.json");
  EXPECT_EQ(nlohmann::json::parse(out.str())["metrics"][0]["value"], 1.5);
}

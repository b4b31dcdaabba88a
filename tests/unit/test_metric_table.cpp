// The -M metric table: formulas (parse, evaluate: the pure function function mode calls per
// call), the variant each PMU resolves (libpfm4 model tables forced with LIBPFM_FORCE_PMU),
// -M name selection, and metric values computed from report rows.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "force_pmu.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/events/metric_table.hpp"
#include "pmcprof/report/metric_values.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;
using pmcprof::testing::with_forced_pmu;

namespace {

double eval(const std::string& formula, const std::map<std::string, double>& values) {
  std::string why;
  auto v = MetricFormula::parse(formula).evaluate(values, &why);
  EXPECT_TRUE(v.has_value()) << formula << ": " << why;
  return v.value_or(NAN);
}

std::string why_not(const std::string& formula, const std::map<std::string, double>& values) {
  std::string why;
  EXPECT_FALSE(MetricFormula::parse(formula).evaluate(values, &why).has_value()) << formula;
  return why;
}

const MetricChoice* find(const std::vector<MetricChoice>& ms, const std::string& name) {
  for (const auto& m : ms)
    if (m.def->name == name) return &m;
  return nullptr;
}

}  // namespace

TEST(MetricFormula, ArithmeticAndPrecedence) {
  EXPECT_DOUBLE_EQ(eval("instructions / cycles", {{"instructions", 300}, {"cycles", 200}}), 1.5);
  EXPECT_DOUBLE_EQ(eval("100 - 100 * (a + b) / (4 * c)", {{"a", 10}, {"b", 30}, {"c", 20}}), 50);
  EXPECT_DOUBLE_EQ(eval("a - b - c", {{"a", 10}, {"b", 3}, {"c", 2}}), 5);  // left to right
  EXPECT_DOUBLE_EQ(eval("a / b * c", {{"a", 8}, {"b", 4}, {"c", 3}}), 6);
  EXPECT_DOUBLE_EQ(eval("-a + 2.5", {{"a", 1}}), 1.5);
}

// Event names keep their '-', ':', '.' and '::': a minus needs spaces to be one.
TEST(MetricFormula, EventNamesAsWrittenForE) {
  auto f = MetricFormula::parse(
      "100 * L1-dcache-load-misses / L1-dcache-loads + skl::INST_RETIRED:ANY_P - TOPDOWN:SLOTS");
  EXPECT_EQ(f.inputs(), (std::vector<std::string>{"L1-dcache-load-misses", "L1-dcache-loads",
                                                  "skl::INST_RETIRED:ANY_P", "TOPDOWN:SLOTS"}));
  auto g = MetricFormula::parse("a / b + a");
  EXPECT_EQ(g.inputs(), (std::vector<std::string>{"a", "b"}));  // each once, first-seen order
}

TEST(MetricFormula, NoValueSaysWhy) {
  EXPECT_EQ(why_not("instructions / cycles", {{"instructions", 1}}), "cycles not counted");
  EXPECT_EQ(why_not("instructions / cycles", {{"instructions", 1}, {"cycles", 0}}),
            "division by zero (cycles is 0)");
  EXPECT_EQ(why_not("a / (b - b)", {{"a", 1}, {"b", 2}}), "division by zero (0)");
}

TEST(MetricFormula, MalformedIsRejected) {
  for (const char* bad : {"", "a +", "(a", "a b", "a / * b", "a )", "#"})
    EXPECT_THROW(MetricFormula::parse(bad), std::invalid_argument) << bad;
}

TEST(MetricTable, EveryMetricIsWellFormed) {
  std::set<std::string> names;
  for (const auto& d : metric_table()) {
    EXPECT_TRUE(names.insert(d.name).second) << "duplicate metric " << d.name;
    EXPECT_FALSE(d.groups.empty()) << d.name;
    EXPECT_FALSE(d.description.empty()) << d.name;
    ASSERT_FALSE(d.variants.empty()) << d.name;
    for (const auto& v : d.variants) EXPECT_FALSE(v.inputs().empty()) << d.name;
  }
  for (const char* must :
       {"IPC", "CPI", "branch_miss_rate", "cache_miss_rate", "GHz", "CPUs_utilized",
        "frontend_cycles_idle", "backend_cycles_idle", "frontend_bound", "backend_bound"})
    EXPECT_TRUE(names.count(must)) << must;
}

// The pure evaluator function mode uses: values by event name in, the metric out.
TEST(MetricTable, EvaluateMetricOnAnyValues) {
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto ms = select_metrics({"IPC", "branch_miss_rate", "CPUs_utilized"}, resolver);
  ASSERT_EQ(ms.size(), 3u);
  std::string why;
  EXPECT_DOUBLE_EQ(*evaluate_metric(ms[0], {{"instructions", 3000}, {"cycles", 1500}}, &why), 2);
  EXPECT_DOUBLE_EQ(*evaluate_metric(ms[1], {{"branch-misses", 5}, {"branches", 200}}, &why), 2.5);
  EXPECT_DOUBLE_EQ(*evaluate_metric(ms[2], {{"task-clock", 3e9}, {"duration_time", 2e9}}, &why),
                   1.5);
  EXPECT_FALSE(evaluate_metric(ms[0], {{"instructions", 3000}}, &why).has_value());
  EXPECT_EQ(why, "cycles not counted");
  EXPECT_EQ(ms[0].events(), (std::vector<std::string>{"instructions", "cycles"}));
  EXPECT_EQ(ms[2].events(), (std::vector<std::string>{"task-clock"}));  // duration_time is not one
}

TEST(MetricTable, SelectionByNameAndGroup) {
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto ms = select_metrics({"ipc", "Summary", "IPC"}, resolver);  // case-insensitive, once each
  std::vector<std::string> names;
  for (const auto& m : ms) names.push_back(m.def->name);
  EXPECT_EQ(names, (std::vector<std::string>{"IPC", "CPUs_utilized", "GHz"}));
  try {
    select_metrics({"IPX"}, resolver);
    FAIL() << "IPX accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown metric or metric group 'IPX'"),
              std::string::npos);
    EXPECT_NE(e.hint().find("IPC"), std::string::npos) << e.hint();
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
  EXPECT_THROW(select_metrics({""}, resolver), UserError);
}

// Up to Skylake the slots are 4 per cycle and retired ones RETIRE_SLOTS.
TEST(MetricTableForcedPmu, SkylakeTopdownUsesFourSlotsPerCycle) {
  with_forced_pmu("skl", [] {
    PfmLibrary pfm;
    EventResolver resolver(pfm);
    auto ms = select_metrics({"TopdownL1"}, resolver);
    ASSERT_EQ(ms.size(), 4u);
    const MetricChoice* fe = find(ms, "frontend_bound");
    const MetricChoice* ret = find(ms, "retiring");
    const MetricChoice* be = find(ms, "backend_bound");
    ASSERT_TRUE(fe && ret && be);
    EXPECT_EQ(fe->formula->text(),
              "100 * IDQ_UOPS_NOT_DELIVERED:CORE / (4 * CPU_CLK_UNHALTED:THREAD_P)");
    EXPECT_EQ(ret->events(),
              (std::vector<std::string>{"UOPS_RETIRED:RETIRE_SLOTS", "CPU_CLK_UNHALTED:THREAD_P"}));
    // 1000 cycles = 4000 slots: 400 empty (10 %), 2000 retired (50 %), 2400 issued with 50
    // recovery cycles (200 slots): bad speculation (2400 - 2000 + 200) / 4000 = 15 %, the rest
    // (25 %) back-end bound. The four shares add up to 100.
    const std::map<std::string, double> v = {{"IDQ_UOPS_NOT_DELIVERED:CORE", 400},
                                             {"CPU_CLK_UNHALTED:THREAD_P", 1000},
                                             {"UOPS_RETIRED:RETIRE_SLOTS", 2000},
                                             {"UOPS_ISSUED:ANY", 2400},
                                             {"INT_MISC:RECOVERY_CYCLES", 50}};
    std::string why;
    double sum = 0;
    for (const auto& [name, want] : std::map<std::string, double>{{"frontend_bound", 10},
                                                                  {"retiring", 50},
                                                                  {"bad_speculation", 15},
                                                                  {"backend_bound", 25}}) {
      auto got = evaluate_metric(*find(ms, name), v, &why);
      ASSERT_TRUE(got) << name << ": " << why;
      EXPECT_NEAR(*got, want, 1e-9) << name;
      sum += *got;
    }
    EXPECT_NEAR(sum, 100, 1e-9);
  });
}

// From Icelake on, TOPDOWN:SLOTS counts the slots (the width is slots / cycles).
TEST(MetricTableForcedPmu, IcelakeTopdownUsesTheSlotsEvent) {
  with_forced_pmu("icx", [] {
    PfmLibrary pfm;
    EventResolver resolver(pfm);
    auto ms = select_metrics({"TopdownL1"}, resolver);
    ASSERT_EQ(ms.size(), 4u);
    EXPECT_EQ(find(ms, "retiring")->formula->text(), "100 * UOPS_RETIRED:SLOTS / TOPDOWN:SLOTS");
    const std::map<std::string, double> v = {{"TOPDOWN:SLOTS", 5000},
                                             {"CPU_CLK_UNHALTED:THREAD_P", 1000},
                                             {"UOPS_ISSUED:ANY", 3000},
                                             {"UOPS_RETIRED:SLOTS", 2500},
                                             {"INT_MISC:RECOVERY_CYCLES", 100}};
    std::string why;
    // (3000 - 2500 + 5 x 100) / 5000
    EXPECT_NEAR(*evaluate_metric(*find(ms, "bad_speculation"), v, &why), 20, 1e-9) << why;
  });
}

// A model without the events: the group is not offered, and asking for it says which events
// are missing (one line), rather than printing a 0.
TEST(MetricTableForcedPmu, NoTopdownWhereTheModelHasNoEvents) {
  with_forced_pmu("amd64_fam17h_zen2", [] {
    PfmLibrary pfm;
    EventResolver resolver(pfm);
    // (A forced PMU is the only one libpfm4 has then: not even its generic perf PMU.)
    auto available = available_metrics(resolver);
    EXPECT_EQ(find(available, "frontend_bound"), nullptr);
    try {
      select_metrics({"TopdownL1"}, resolver);
      FAIL() << "TopdownL1 accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot be counted here"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("IDQ_UOPS_NOT_DELIVERED:CORE"), std::string::npos);
    }
    auto groups = metric_groups(available);
    EXPECT_EQ(std::count(groups.begin(), groups.end(), "TopdownL1"), 0);
  });
}

namespace {

CounterRow row(const std::string& event, double value, std::size_t group,
               CounterStatus status = CounterStatus::ok, std::optional<int> cpu = std::nullopt) {
  CounterRow r;
  r.event = event;
  r.value = value;
  r.group = group;
  r.status = status;
  r.cpu = cpu;
  return r;
}

}  // namespace

// compute_metrics: the k-th row of the metric's group in a scope is its k-th event.
TEST(MetricValues, PerScopeFromTheirOwnGroup) {
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto ms = select_metrics({"IPC", "CPUs_utilized"}, resolver);
  CountingReport r;
  r.elapsed_ns = 1000000000;
  r.aggr_mode = AggrMode::cpu;
  r.counters = {row("cycles", 999, 0, CounterStatus::ok, 0),  // the user's -e cycles: not used
                row("instructions", 300, 1, CounterStatus::ok, 0),
                row("instructions", 100, 1, CounterStatus::ok, 1),
                row("cycles", 200, 1, CounterStatus::ok, 0),
                row("cycles", 0, 1, CounterStatus::ok, 1),
                row("task-clock", 5e8, 2, CounterStatus::ok, 0),
                row("task-clock", 0, 2, CounterStatus::not_counted, 1)};
  auto values = compute_metrics(r, {{ms[0], 1}, {ms[1], 2}});
  ASSERT_EQ(values.size(), 4u);  // 2 metrics x 2 CPUs
  EXPECT_EQ(values[0].name, "IPC");
  EXPECT_EQ(values[0].cpu, 0);
  EXPECT_DOUBLE_EQ(*values[0].value, 1.5);
  EXPECT_EQ(values[0].group, 1u);
  EXPECT_DOUBLE_EQ(*values[1].value, 0.5);  // CPUs_utilized on CPU0
  EXPECT_EQ(values[2].cpu, 1);
  EXPECT_FALSE(values[2].value.has_value());
  EXPECT_EQ(values[2].why_not, "division by zero (cycles is 0)");
  EXPECT_FALSE(values[3].value.has_value());
  EXPECT_EQ(values[3].why_not, "task-clock <not counted>");
}

TEST(MetricValues, UncountedEventsAreNamedNeverZero) {
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto ms = select_metrics({"IPC"}, resolver);
  CountingReport r;
  r.counters = {row("instructions", 0, 0, CounterStatus::not_supported),
                row("cycles", 0, 0, CounterStatus::not_supported)};
  auto values = compute_metrics(r, {{ms[0], 0}});
  ASSERT_EQ(values.size(), 1u);
  EXPECT_FALSE(values[0].value.has_value());
  EXPECT_EQ(values[0].why_not, "instructions, cycles <not supported>");
}

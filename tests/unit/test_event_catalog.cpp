// `pmcprof list`'s logic on made-up inputs: which sections a filter keeps (keywords, globs,
// substrings), which sections the doctor checks mark not countable, the kernel PMUs' and
// tracepoints' sections read from fake sysfs and tracefs trees, and the hint for a filter that
// matches nothing. No root, no libpfm4.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fake_tree.hpp"
#include "pmcprof/events/event_catalog.hpp"

using namespace pmcprof;
using pmcprof::testing::Tree;

namespace {

CatalogPmu section(const std::string& pmu, EventSection s, std::vector<std::string> names,
                   bool needs_core_pmu = false) {
  CatalogPmu p;
  p.name = pmu;
  p.description = pmu + " events";
  p.section = s;
  p.present = true;
  p.needs_core_pmu = needs_core_pmu;
  for (auto& n : names) p.events.push_back({std::move(n), "", {}});
  return p;
}

// A machine's worth: generic hardware, software and cache events, a model PMU with unit masks,
// msr's sysfs event and a few tracepoints.
std::vector<CatalogPmu> fake_catalog() {
  std::vector<CatalogPmu> pmus;
  pmus.push_back(section("perf", EventSection::hardware, {"cycles", "instructions"}, true));
  pmus.back().events[0].description = "PERF_COUNT_HW_CPU_CYCLES";
  pmus.push_back(section("perf", EventSection::software, {"task-clock", "page-faults"}));
  pmus.back().events[0].description = "PERF_COUNT_SW_TASK_CLOCK";
  pmus.push_back(section("perf", EventSection::hardware_cache, {"l1-dcache-load-misses"}, true));
  pmus.push_back(section("skl", EventSection::model, {"skl::INST_RETIRED"}, true));
  pmus.back().events[0].umasks = {{"ANY_P", "any"}, {"PREC_DIST", "precise"}};
  pmus.push_back(section("msr", EventSection::kernel_pmu, {"msr/tsc/"}));
  pmus.push_back(section("tracepoint", EventSection::tracepoint,
                         {"sched:sched_switch", "sched:sched_wakeup", "sched_ext:sched_ext_dump",
                          "syscalls:sys_enter_getppid", "timer:hrtimer_start"}));
  return pmus;
}

std::vector<std::string> names(const std::vector<CatalogPmu>& pmus) {
  std::vector<std::string> out;
  for (const auto& p : pmus)
    for (const auto& e : p.events) out.push_back(e.name);
  return out;
}

std::vector<EventSection> sections(const std::vector<CatalogPmu>& pmus) {
  std::vector<EventSection> out;
  for (const auto& p : pmus) out.push_back(p.section);
  return out;
}

using Names = std::vector<std::string>;

}  // namespace

TEST(ListFilter, SubstringFindsATracepointByItsName) {
  auto got = filter_catalog(fake_catalog(), "sched_switch");
  EXPECT_EQ(names(got), Names{"sched:sched_switch"});
  EXPECT_EQ(sections(got), std::vector<EventSection>{EventSection::tracepoint});
}

TEST(ListFilter, GlobMatchesWholeNamesOfOneCategory) {
  // 'sched:*' is sched's, not sched_ext's: the glob matches the whole name.
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "sched:*")),
            (Names{"sched:sched_switch", "sched:sched_wakeup"}));
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "SCHED:*WAKE*")), Names{"sched:sched_wakeup"});
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "msr/*")), Names{"msr/tsc/"});
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "*clock")), Names{"task-clock"});
  // A unit mask too, as NAME:UMASK.
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "skl::INST_RETIRED:PREC*")),
            Names{"skl::INST_RETIRED"});
  EXPECT_TRUE(filter_catalog(fake_catalog(), "sched:nothing*").empty());
}

TEST(ListFilter, KeywordsSelectASectionWhole) {
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "tracepoint")).size(), 5u);
  EXPECT_EQ(sections(filter_catalog(fake_catalog(), "tracepoint")),
            std::vector<EventSection>{EventSection::tracepoint});
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "hw")), (Names{"cycles", "instructions"}));
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "Hardware")), (Names{"cycles", "instructions"}));
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "sw")), (Names{"task-clock", "page-faults"}));
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "cache")), Names{"l1-dcache-load-misses"});
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "pmu")), Names{"msr/tsc/"});
}

TEST(ListFilter, KeywordKeepsAnEmptySectionThatSaysWhy) {
  auto pmus = fake_catalog();
  pmus.back() = unreadable_tracepoints("cannot read tracefs at /sys/kernel/tracing");
  auto got = filter_catalog(pmus, "tracepoint");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].events.empty());
  EXPECT_EQ(got[0].not_countable, "cannot read tracefs at /sys/kernel/tracing");
}

TEST(ListFilter, SubstringOfNameDescriptionOrPmu) {
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "HW_CPU")), Names{"cycles"});  // description
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "msr")), Names{"msr/tsc/"});   // the PMU
  EXPECT_EQ(names(filter_catalog(fake_catalog(), "any_p")), Names{"skl::INST_RETIRED"});
  // "trace" is in no name: the tracepoint section's PMU name does not pull in every tracepoint.
  EXPECT_TRUE(filter_catalog(fake_catalog(), "trace").empty());
  EXPECT_EQ(filter_catalog(fake_catalog(), "").size(), fake_catalog().size());
}

TEST(ListCountable, NoHardwarePmuMarksWhatNeedsIt) {
  auto pmus = fake_catalog();
  mark_countable(pmus, {"no PMU (no cpu PMU in /sys/bus/event_source/devices, e.g. a VM)", ""});
  for (const auto& p : pmus) {
    const bool needs = p.section == EventSection::hardware ||
                       p.section == EventSection::hardware_cache ||
                       p.section == EventSection::model;
    EXPECT_EQ(p.countable(), !needs) << p.name << " " << section_title(p.section);
    if (needs) {
      EXPECT_EQ(p.not_countable.rfind("no PMU", 0), 0u) << p.not_countable;
    }
  }
}

TEST(ListCountable, AllCountableWhenEveryCheckPasses) {
  auto pmus = fake_catalog();
  mark_countable(pmus, {"", ""});
  for (const auto& p : pmus) EXPECT_TRUE(p.countable()) << p.name;
}

TEST(ListCountable, SoftwareCheckMarksSoftwareOnly) {
  auto pmus = fake_catalog();
  mark_countable(pmus, {"", "task-clock refused (EACCES)"});
  for (const auto& p : pmus)
    EXPECT_EQ(p.countable(), p.section != EventSection::software) << p.name;
}

TEST(ListCountable, AbsentAndAlreadyExplainedSectionsKeepTheirState) {
  std::vector<CatalogPmu> pmus{section("icl", EventSection::model, {"icl::X"}, true),
                               unreadable_tracepoints("no tracefs")};
  pmus[0].present = false;
  mark_countable(pmus, {"no PMU", "no software"});
  EXPECT_FALSE(pmus[0].countable());
  EXPECT_EQ(pmus[0].not_countable, "");  // not present says it
  EXPECT_EQ(pmus[1].not_countable, "no tracefs");
}

TEST(ListCountable, ChecksNeededOnlyForWhatIsListed) {
  auto pmus = fake_catalog();
  EXPECT_TRUE(needs_hardware_check(pmus));
  EXPECT_TRUE(needs_software_check(pmus));
  auto tracepoints = filter_catalog(pmus, "sched:*");
  EXPECT_FALSE(needs_hardware_check(tracepoints));
  EXPECT_FALSE(needs_software_check(tracepoints));
}

TEST(ListSections, Titles) {
  EXPECT_EQ(section_title(EventSection::hardware), "Hardware event");
  EXPECT_EQ(section_title(EventSection::software), "Software event");
  EXPECT_EQ(section_title(EventSection::hardware_cache), "Hardware cache event");
  EXPECT_EQ(section_title(EventSection::kernel_pmu), "Kernel PMU event");
  EXPECT_EQ(section_title(EventSection::tracepoint), "Tracepoint event");
}

TEST(ListSections, TracepointsFromTracefs) {
  Tree tracefs;
  tracefs.file("events/sched/sched_switch/id", "316\n");
  tracefs.file("events/sched/sched_wakeup/id", "318\n");
  tracefs.file("events/sched/enable", "0\n");                  // a file, not a tracepoint
  tracefs.file("events/sched/no_id/format", "name: no_id\n");  // no id: stat cannot open it
  tracefs.file("events/syscalls/sys_enter_getppid/id", "101\n");
  tracefs.file("events/Upper/x/id", "7\n");  // a category stat does not read as a tracepoint
  const CatalogPmu tp = tracepoint_catalog(tracefs.path());
  EXPECT_EQ(tp.section, EventSection::tracepoint);
  EXPECT_TRUE(tp.present);
  EXPECT_FALSE(tp.needs_core_pmu);
  EXPECT_EQ(names({tp}),
            (Names{"sched:sched_switch", "sched:sched_wakeup", "syscalls:sys_enter_getppid"}));
}

TEST(ListSections, KernelPmuEventsStatEncodes) {
  Tree sysfs;
  sysfs.file("msr/type", "9\n");
  sysfs.file("msr/format/event", "config:0-63\n");
  sysfs.file("msr/events/tsc", "event=0x00\n");
  sysfs.file("msr/events/aperf", "event=0x01\n");
  sysfs.file("msr/events/broken", "nosuchterm=1\n");  // stat refuses it: not listed
  sysfs.file("power/type", "21\n");
  sysfs.file("power/format/event", "config:0-7\n");
  sysfs.file("power/events/energy-pkg", "event=0x02\n");
  sysfs.file("power/events/energy-pkg.unit", "Joules\n");
  sysfs.file("power/events/energy-pkg.scale", "2.3283064365386962890625e-10\n");
  sysfs.file("cpu/type", "4\n");
  sysfs.file("cpu/format/event", "config:0-7\n");
  sysfs.file("cpu/events/cycles-t", "event=0x3c\n");
  sysfs.file("software/type", "1\n");  // no events/: not listed
  CorePmu cpu;
  cpu.name = "cpu";
  cpu.type = 4;
  const auto pmus = kernel_pmu_catalog(sysfs.path(), {cpu});
  ASSERT_EQ(pmus.size(), 3u);
  EXPECT_EQ(pmus[0].name, "cpu");
  EXPECT_TRUE(pmus[0].needs_core_pmu);
  EXPECT_EQ(pmus[1].name, "msr");
  EXPECT_FALSE(pmus[1].needs_core_pmu);
  EXPECT_EQ(names({pmus[1]}), (Names{"msr/aperf/", "msr/tsc/"}));
  EXPECT_EQ(pmus[1].events[1].description, "event=0x00");
  EXPECT_EQ(names({pmus[2]}), Names{"power/energy-pkg/"});
  EXPECT_EQ(pmus[2].events[0].description, "event=0x02 (Joules)");
  for (const auto& p : pmus) EXPECT_EQ(p.section, EventSection::kernel_pmu);
}

TEST(ListHint, DidYouMeanFromListedNames) {
  const auto pmus = fake_catalog();
  EXPECT_EQ(no_match_hint("sched_swtch", pmus, false).rfind("did you mean 'sched_switch'", 0), 0u)
      << no_match_hint("sched_swtch", pmus, false);
  EXPECT_NE(no_match_hint("shed:*", pmus, false).find("'sched:*'"), std::string::npos)
      << no_match_hint("shed:*", pmus, false);
  EXPECT_NE(no_match_hint("tracepont", pmus, false).find("'tracepoint'"), std::string::npos);
  EXPECT_NE(no_match_hint("task-clok", pmus, false).find("'task-clock'"), std::string::npos);
}

TEST(ListHint, AllOnlyWhenItWouldShowIt) {
  const auto pmus = fake_catalog();
  const std::string with = no_match_hint("INST_RETIRED_X", pmus, true);
  EXPECT_NE(with.find("pmcprof list --all 'INST_RETIRED_X'"), std::string::npos) << with;
  const std::string without = no_match_hint("qqqqqqqqqqqq", pmus, false);
  EXPECT_EQ(without.find("--all"), std::string::npos) << without;
  EXPECT_NE(without.find("glob ('sched:*')"), std::string::npos) << without;
}

TEST(ListHint, UnreadableTracefsExplainsMissingTracepoints) {
  auto pmus = fake_catalog();
  pmus.back() = unreadable_tracepoints("cannot read tracefs at /sys/kernel/tracing: EACCES");
  EXPECT_EQ(
      no_match_hint("sched:*", pmus, false),
      "tracepoints cannot be listed here: cannot read tracefs at /sys/kernel/tracing: EACCES");
  // Not for a model name (PMU::EVENT) nor for a plain word.
  EXPECT_EQ(no_match_hint("skl::NOPE", pmus, false).find("tracefs"), std::string::npos);
  EXPECT_EQ(no_match_hint("qqqqqqqqqqqq", pmus, false).find("tracefs"), std::string::npos);
}

TEST(ListHint, AKeywordIsNoSuggestionForItself) {
  auto pmus = fake_catalog();
  pmus.erase(
      std::remove_if(pmus.begin(), pmus.end(),
                     [](const CatalogPmu& p) { return p.section == EventSection::kernel_pmu; }),
      pmus.end());
  ASSERT_TRUE(filter_catalog(pmus, "pmu").empty());
  EXPECT_EQ(no_match_hint("pmu", pmus, false).find("'pmu'"), std::string::npos)
      << no_match_hint("pmu", pmus, false);
}

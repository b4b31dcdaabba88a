// libpfm4 resolution: perf-style and model-specific names to perf_event_attr. Needs libpfm4's
// tables only, no PMU access. Tests that force a PMU run in a process of their own
// (force_pmu.hpp), so they also pass when the whole binary runs in one process.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "force_pmu.hpp"
#include "pmcprof/events/event_catalog.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

namespace {

using pmcprof::testing::with_forced_pmu;

class Resolver : public ::testing::Test {
 protected:
  ResolvedEvent resolve(const std::string& text) { return resolver_.resolve(parse_event(text)); }
  void expect_kind(const std::string& text, std::uint32_t type, std::uint64_t config) {
    ResolvedEvent ev = resolve(text);
    EXPECT_EQ(ev.attr.type, type) << text;
    EXPECT_EQ(ev.attr.config, config) << text;
    EXPECT_EQ(ev.attr.size, sizeof(perf_event_attr)) << text;
    EXPECT_EQ(ev.display_name(), text);
  }

  PfmLibrary pfm_;
  EventResolver resolver_{pfm_};
};

bool has_event(const CatalogPmu& pmu, std::initializer_list<const char*> names) {
  return std::any_of(pmu.events.begin(), pmu.events.end(), [&](const CatalogEvent& e) {
    return std::find(names.begin(), names.end(), e.name) != names.end();
  });
}

const CatalogPmu* find_pmu(const std::vector<CatalogPmu>& pmus, const std::string& name) {
  for (const auto& p : pmus)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

TEST_F(Resolver, GenericHardwareEvents) {
  expect_kind("cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  expect_kind("instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  expect_kind("cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES);
  expect_kind("branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
  expect_kind("branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES);
  EXPECT_FALSE(resolve("cycles").is_software());
  EXPECT_FALSE(resolve("cycles").is_clock());
  EXPECT_EQ(resolve("cycles").unit, "");
  EXPECT_EQ(resolve("cycles").pmu, "perf");
}

TEST_F(Resolver, HardwareCacheEvent) {
  const std::uint64_t ll_read_miss = PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                     (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
  expect_kind("LLC-load-misses", PERF_TYPE_HW_CACHE, ll_read_miss);
  expect_kind("PERF_COUNT_HW_CACHE_LL:READ:MISS", PERF_TYPE_HW_CACHE, ll_read_miss);
}

TEST_F(Resolver, ClocksAreSoftwareInNanoseconds) {
  for (auto [name, config] : {std::pair{"task-clock", PERF_COUNT_SW_TASK_CLOCK},
                              std::pair{"cpu-clock", PERF_COUNT_SW_CPU_CLOCK}}) {
    ResolvedEvent ev = resolve(name);
    EXPECT_EQ(ev.attr.type, PERF_TYPE_SOFTWARE) << name;
    EXPECT_EQ(ev.attr.config, config) << name;
    EXPECT_TRUE(ev.is_software()) << name;
    EXPECT_TRUE(ev.is_clock()) << name;
    EXPECT_EQ(ev.unit, "ns") << name;
  }
}

TEST_F(Resolver, SoftwareCounts) {
  expect_kind("page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
  expect_kind("context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES);
  expect_kind("cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES);
  expect_kind("cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS);
  ResolvedEvent pf = resolve("page-faults");
  EXPECT_TRUE(pf.is_software());
  EXPECT_FALSE(pf.is_clock());
  EXPECT_EQ(pf.unit, "");
}

TEST_F(Resolver, RawEvent) {
  expect_kind("r1234", PERF_TYPE_RAW, 0x1234);
  expect_kind("r1a2b", PERF_TYPE_RAW, 0x1a2b);
}

TEST_F(Resolver, NoModifiersCountUserAndKernel) {
  ResolvedEvent ev = resolve("cycles");
  EXPECT_EQ(ev.attr.exclude_user, 0u);
  EXPECT_EQ(ev.attr.exclude_kernel, 0u);
  EXPECT_EQ(ev.attr.precise_ip, 0u);
  EXPECT_EQ(ev.attr.pinned, 0u);
}

TEST_F(Resolver, UserOnly) {
  ResolvedEvent ev = resolve("cycles:u");
  EXPECT_EQ(ev.attr.exclude_kernel, 1u);
  EXPECT_EQ(ev.attr.exclude_user, 0u);
  EXPECT_EQ(ev.attr.config, PERF_COUNT_HW_CPU_CYCLES);
}

TEST_F(Resolver, KernelOnly) {
  ResolvedEvent ev = resolve("cycles:k");
  EXPECT_EQ(ev.attr.exclude_kernel, 0u);
  EXPECT_EQ(ev.attr.exclude_user, 1u);
}

TEST_F(Resolver, PreciseAndPinned) {
  EXPECT_EQ(resolve("cycles:p").attr.precise_ip, 1u);
  EXPECT_EQ(resolve("cycles:ppp").attr.precise_ip, 3u);
  ResolvedEvent ev = resolve("cycles:uD");
  EXPECT_EQ(ev.attr.pinned, 1u);
  EXPECT_EQ(ev.attr.exclude_kernel, 1u);
}

TEST(ApplyModifiers, SetsAttrFlags) {
  EventModifiers m;
  m.kernel = true;
  m.guest_only = true;
  m.host_only = true;
  m.pinned = true;
  m.exclude_idle = true;
  m.precise = 2;
  perf_event_attr attr{};
  apply_modifiers(m, attr);
  EXPECT_EQ(attr.exclude_user, 1u);
  EXPECT_EQ(attr.exclude_kernel, 0u);
  EXPECT_EQ(attr.exclude_hv, 1u);
  EXPECT_EQ(attr.exclude_host, 1u);
  EXPECT_EQ(attr.exclude_guest, 1u);
  EXPECT_EQ(attr.pinned, 1u);
  EXPECT_EQ(attr.exclude_idle, 1u);
  EXPECT_EQ(attr.precise_ip, 2u);
}

TEST_F(Resolver, GroupsKeepShapeAndOrder) {
  auto groups = resolver_.resolve(parse_event_list("task-clock,{cycles,instructions}:u"));
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_FALSE(groups[0].grouped);
  ASSERT_TRUE(groups[1].grouped);
  ASSERT_EQ(groups[1].events.size(), 2u);
  EXPECT_EQ(groups[1].events[1].attr.config, PERF_COUNT_HW_INSTRUCTIONS);
  EXPECT_EQ(groups[1].events[1].attr.exclude_kernel, 1u);
  EXPECT_EQ(groups[1].events[1].display_name(), "instructions:u");
}

TEST_F(Resolver, UnknownEventSuggestsCloseName) {
  try {
    resolve("cyclez");
    FAIL() << "cyclez resolved";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown event 'cyclez'");
    EXPECT_NE(e.hint().find("cycles"), std::string::npos) << e.hint();
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
}

TEST_F(Resolver, KnownNamesAreLowerCasePerfNames) {
  auto names = resolver_.known_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cycles"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "task-clock"), names.end());
}

TEST(ResolverForcedPmu, ModelSpecificName) {
  with_forced_pmu("skl", [] {
    PfmLibrary pfm;
    EventResolver resolver(pfm);
    ResolvedEvent ev = resolver.resolve(parse_event("INST_RETIRED:ANY_P"));
    EXPECT_EQ(ev.attr.type, static_cast<std::uint32_t>(PERF_TYPE_RAW));
    EXPECT_EQ(ev.attr.config, 0xc0u);
    EXPECT_EQ(ev.attr.exclude_kernel, 0u);
    EXPECT_EQ(ev.attr.exclude_user, 0u);
    EXPECT_EQ(ev.pmu, "skl");
    EXPECT_EQ(ev.canonical.rfind("skl::INST_RETIRED:ANY_P", 0), 0u) << ev.canonical;
  });
}

TEST(ResolverForcedPmu, ModelSpecificNameWithModifier) {
  with_forced_pmu("skl", [] {
    PfmLibrary pfm;
    EventResolver resolver(pfm);
    ResolvedEvent ev = resolver.resolve(parse_event("skl::INST_RETIRED:ANY_P:u"));
    EXPECT_EQ(ev.attr.type, static_cast<std::uint32_t>(PERF_TYPE_RAW));
    EXPECT_EQ(ev.attr.config, 0xc0u);
    EXPECT_EQ(ev.attr.exclude_kernel, 1u);
    EXPECT_EQ(ev.attr.exclude_user, 0u);
    EXPECT_EQ(ev.display_name(), "skl::INST_RETIRED:ANY_P:u");
  });
}

TEST(EventCatalog, PerfPmuIsPresent) {
  PfmLibrary pfm;
  auto pmus = event_catalog(pfm, /*present_only=*/true);
  const CatalogPmu* perf = find_pmu(pmus, "perf");
  ASSERT_NE(perf, nullptr);
  EXPECT_TRUE(perf->present);
  // Listed as -e takes them: the generic PMU's names lower-case and bare.
  EXPECT_TRUE(has_event(*perf, {"cycles", "perf_count_hw_cpu_cycles"}));
  for (const auto& p : pmus) EXPECT_TRUE(p.present) << p.name;
}

// The generic perf PMU's table mixes kinds; each event lands in perf list's section for the
// perf_event_attr type it encodes to, and only the software one counts without a PMU.
TEST(EventCatalog, GenericEventsInTheirSections) {
  PfmLibrary pfm;
  auto pmus = event_catalog(pfm, /*present_only=*/true);
  auto section_of = [&](const char* event) -> const CatalogPmu* {
    for (const auto& p : pmus)
      if (p.name == "perf" && has_event(p, {event})) return &p;
    return nullptr;
  };
  for (const char* e : {"cycles", "instructions", "branch-misses", "task-clock", "page-faults",
                        "l1-dcache-load-misses", "llc-loads"})
    ASSERT_NE(section_of(e), nullptr) << e;
  EXPECT_EQ(section_of("cycles")->section, EventSection::hardware);
  EXPECT_EQ(section_of("branch-misses")->section, EventSection::hardware);
  EXPECT_EQ(section_of("task-clock")->section, EventSection::software);
  EXPECT_EQ(section_of("page-faults")->section, EventSection::software);
  EXPECT_EQ(section_of("l1-dcache-load-misses")->section, EventSection::hardware_cache);
  EXPECT_TRUE(section_of("cycles")->needs_core_pmu);
  EXPECT_TRUE(section_of("llc-loads")->needs_core_pmu);
  EXPECT_FALSE(section_of("task-clock")->needs_core_pmu);
  const CatalogPmu* raw = find_pmu(pmus, "perf_raw");
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->section, EventSection::raw);
  EXPECT_TRUE(raw->needs_core_pmu);
  // perf list's order.
  EXPECT_TRUE(std::is_sorted(pmus.begin(), pmus.end(),
                             [](const auto& a, const auto& b) { return a.section < b.section; }));
}

TEST(EventCatalog, AllPmusIncludeAbsentOnes) {
  PfmLibrary pfm;
  auto present = event_catalog(pfm, true);
  auto all = event_catalog(pfm, false);
  EXPECT_GT(all.size(), present.size());
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const CatalogPmu& p) { return !p.present; }));
}

TEST(EventCatalog, FilterKeepsClockEvents) {
  PfmLibrary pfm;
  auto pmus = filter_catalog(event_catalog(pfm, true), "clock");
  const CatalogPmu* perf = find_pmu(pmus, "perf");
  ASSERT_NE(perf, nullptr);
  EXPECT_EQ(perf->section, EventSection::software);
  EXPECT_TRUE(has_event(*perf, {"task-clock"}));
  for (const auto& p : pmus)
    EXPECT_FALSE(has_event(p, {"cycles", "perf_count_hw_cpu_cycles", "instructions"})) << p.name;
  for (const auto& p : pmus)
    for (const auto& e : p.events) {
      std::string hay = e.name + " " + e.description;
      for (const auto& u : e.umasks) hay += " " + e.name + ":" + u.name;
      std::string lower;
      for (char c : hay) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      EXPECT_NE(lower.find("clock"), std::string::npos) << p.name << "::" << e.name;
    }
}

TEST(EventCatalog, FilterWithoutMatchIsEmpty) {
  PfmLibrary pfm;
  EXPECT_TRUE(filter_catalog(event_catalog(pfm, true), "no-such-event-xyzzy").empty());
  auto all = event_catalog(pfm, true);
  EXPECT_EQ(filter_catalog(all, "").size(), all.size());
}

TEST(EventCatalog, ForcedPmuIsPresent) {
  with_forced_pmu("skl", [] {
    PfmLibrary pfm;
    auto pmus = event_catalog(pfm, true);
    const CatalogPmu* skl = find_pmu(pmus, "skl");
    ASSERT_NE(skl, nullptr);
    EXPECT_TRUE(skl->present);
    EXPECT_EQ(skl->section, EventSection::model);
    EXPECT_TRUE(skl->needs_core_pmu);
    EXPECT_TRUE(has_event(*skl, {"skl::INST_RETIRED"}));
  });
}

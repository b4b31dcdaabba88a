// Heterogeneous core PMUs on fake sysfs trees (as perf's own tests build one,
// tools/perf/tests/pmu.c): an Intel hybrid layout (cpu_core on CPUs 0-7, cpu_atom on 8-15),
// an Arm big.LITTLE one (armv8_pmuv3_0 on 0-3, armv8_pmuv3_1 on 4-7), and homogeneous ones,
// which nothing here may change. Discovery, the events (attrs with the extended type, the
// CPUs each counts on), groups, and what the report makes of them.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_tree.hpp"
#include "pmcprof/cli/stat_options.hpp"
#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/events/core_pmu_events.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/events/metric_table.hpp"
#include "pmcprof/platform/core_pmus.hpp"
#include "pmcprof/report/aggregate.hpp"
#include "pmcprof/report/metric_values.hpp"
#include "pmcprof/report/prometheus.hpp"
#include "pmcprof/report/read_json.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/run/counting_run.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;
using pmcprof::testing::Tree;

namespace {

constexpr std::uint64_t kCoreType = 4;   // cpu_core is PERF_TYPE_RAW on Intel hybrid
constexpr std::uint64_t kAtomType = 10;  // cpu_atom's type is dynamic

// The PMUs every Linux has, and that are never core PMUs.
void software_pmus(Tree& t) {
  t.file("software/type", "1\n");
  t.file("tracepoint/type", "2\n");
  t.file("breakpoint/type", "5\n");
  t.file("kprobe/type", "6\n");
  t.file("kprobe/format/retprobe", "config:0\n");
  t.file("uprobe/type", "7\n");
}

// An x86 core PMU as Linux describes it (arch/x86/events): formats, named events, caps.
void x86_core_pmu(Tree& t, const std::string& pmu, std::uint64_t type, const std::string& cpus) {
  t.file(pmu + "/type", std::to_string(type) + "\n");
  if (!cpus.empty()) t.file(pmu + "/cpus", cpus + "\n");
  t.file(pmu + "/caps/max_precise", "3\n");
  for (const auto& [term, bits] :
       std::vector<std::pair<std::string, std::string>>{{"event", "config:0-7"},
                                                        {"umask", "config:8-15"},
                                                        {"edge", "config:18"},
                                                        {"pc", "config:19"},
                                                        {"inv", "config:23"},
                                                        {"cmask", "config:24-31"},
                                                        {"ldlat", "config1:0-15"},
                                                        {"offcore_rsp", "config1:0-63"}})
    t.file(pmu + "/format/" + term, bits + "\n");
  for (const auto& [event, terms] : std::vector<std::pair<std::string, std::string>>{
           {"cpu-cycles", "event=0x3c"},
           {"instructions", "event=0xc0"},
           {"branch-instructions", "event=0xc4"},
           {"branch-misses", "event=0xc5"},
           {"cache-references", "event=0x2e,umask=0x4f"},
           {"cache-misses", "event=0x2e,umask=0x41"},
           {"bus-cycles", "event=0x3c,umask=0x01"},
           {"ref-cycles", "event=0x00,umask=0x03"}})
    t.file(pmu + "/events/" + event, terms + "\n");
}

// Alder Lake: two core PMUs with `cpus`, uncore and other PMUs with a `cpumask` or neither.
void intel_hybrid(Tree& t) {
  software_pmus(t);
  x86_core_pmu(t, "cpu_core", kCoreType, "0-7");
  t.file("cpu_core/caps/pmu_name", "alderlake_hybrid\n");
  t.file("cpu_core/events/slots", "event=0x00,umask=0x4\n");
  t.file("cpu_core/events/topdown-retiring", "event=0x00,umask=0x80\n");
  x86_core_pmu(t, "cpu_atom", kAtomType, "8-15");
  t.file("cpu_atom/caps/pmu_name", "alderlake_hybrid\n");
  t.file("cpu_atom/events/topdown-retiring", "event=0xc2,umask=0x02\n");
  t.file("uncore_imc_free_running_0/type", "15\n");
  t.file("uncore_imc_free_running_0/cpumask", "0\n");
  t.file("uncore_imc_free_running_0/format/event", "config:0-7\n");
  t.file("uncore_imc_free_running_0/events/data_read", "event=0xff,umask=0x20\n");
  t.file("cstate_core/type", "13\n");
  t.file("cstate_core/cpumask", "0,2,4,6,8-15\n");
  t.file("power/type", "12\n");
  t.file("power/cpumask", "0\n");
  t.file("power/events/energy-pkg", "event=0x02\n");
  t.file("msr/type", "11\n");
  t.file("msr/events/tsc", "event=0x00\n");
  t.file("intel_pt/type", "9\n");
  t.file("intel_pt/caps/psb_cyc", "1\n");
}

// One Skylake: the "cpu" PMU (no `cpus` file: every CPU), uncore boxes with a cpumask.
void intel_homogeneous(Tree& t) {
  software_pmus(t);
  x86_core_pmu(t, "cpu", kCoreType, "");
  t.file("cpu/caps/pmu_name", "skylake\n");
  t.file("uncore_imc_0/type", "14\n");
  t.file("uncore_imc_0/cpumask", "0\n");
  t.file("msr/type", "11\n");
}

// An Arm PMUv3 core PMU as drivers/perf/arm_pmuv3.c describes it.
void arm_core_pmu(Tree& t, const std::string& pmu, std::uint64_t type, const std::string& cpus) {
  t.file(pmu + "/type", std::to_string(type) + "\n");
  t.file(pmu + "/cpus", cpus + "\n");
  t.file(pmu + "/format/event", "config:0-15\n");
  t.file(pmu + "/format/long", "config1:0\n");
  t.file(pmu + "/caps/slots", "0x00000008\n");
  t.file(pmu + "/events/cpu_cycles", "event=0x0011\n");
  t.file(pmu + "/events/inst_retired", "event=0x0008\n");
  t.file(pmu + "/events/l1d_cache", "event=0x0004\n");
}

// big.LITTLE with ACPI's names (armv8_pmuv3_N), and a DynamIQ cluster PMU and SPE beside.
void arm_big_little(Tree& t) {
  software_pmus(t);
  arm_core_pmu(t, "armv8_pmuv3_0", 8, "0-3");
  arm_core_pmu(t, "armv8_pmuv3_1", 9, "4-7");
  t.file("arm_dsu_0/type", "10\n");
  t.file("arm_dsu_0/cpumask", "0\n");
  t.file("arm_dsu_0/associated_cpus", "0-7\n");
  t.file("arm_dsu_0/format/event", "config:0-31\n");
  t.file("arm_dsu_0/events/cycles", "event=0x11\n");
  t.file("arm_spe_0/type", "11\n");
  t.file("arm_spe_0/cpumask", "0-7\n");
}

// The resolver of a fake tree (an empty tracefs: no tracepoint resolves, none is mounted).
struct FakeMachine {
  Tree sysfs;
  Tree tracefs;
  PfmLibrary pfm;
  std::unique_ptr<EventResolver> resolver;

  explicit FakeMachine(void (*layout)(Tree&)) {
    layout(sysfs);
    resolver = std::make_unique<EventResolver>(pfm, EventSources{sysfs.path(), tracefs.path()});
  }
  std::vector<ResolvedGroup> resolve(const std::string& events) const {
    return resolver->resolve(parse_event_list(events));
  }
  CorePmuSplit split(const std::string& events, const std::vector<int>& cpus = {}) const {
    return split_per_core_pmu(resolve(events), cpus);
  }
};

std::vector<std::string> names_of(const std::vector<ResolvedGroup>& groups) {
  std::vector<std::string> out;
  for (const auto& g : groups)
    for (const auto& e : g.events) out.push_back(e.display_name());
  return out;
}

std::vector<std::string> pmu_names(const std::vector<CorePmu>& pmus) {
  std::vector<std::string> out;
  for (const auto& p : pmus) out.push_back(p.name);
  return out;
}

// The CPUs of 0..15 an event counts on.
std::vector<int> cpus_of(const ResolvedEvent& ev) {
  std::vector<int> out;
  for (int cpu = 0; cpu < 16; ++cpu)
    if (counts_on_cpu(ev, cpu)) out.push_back(cpu);
  return out;
}

std::vector<int> range(int first, int last) {
  std::vector<int> out;
  for (int cpu = first; cpu <= last; ++cpu) out.push_back(cpu);
  return out;
}

std::uint64_t extended(std::uint64_t type, std::uint64_t config) {
  return type << PERF_PMU_TYPE_SHIFT | config;
}

constexpr std::uint64_t kLlcLoadMisses = PERF_COUNT_HW_CACHE_LL | PERF_COUNT_HW_CACHE_OP_READ << 8 |
                                         PERF_COUNT_HW_CACHE_RESULT_MISS << 16;

void expect_user_error(const std::function<void()>& f, std::initializer_list<std::string> what,
                       std::initializer_list<std::string> hint) {
  try {
    f();
    ADD_FAILURE() << "accepted";
  } catch (const UserError& e) {
    for (const auto& n : what)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    for (const auto& n : hint) EXPECT_NE(e.hint().find(n), std::string::npos) << e.hint();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

}  // namespace

// ---- discovery ----

TEST(CorePmuDiscovery, IntelHybridHasCoreAndAtomNotItsUncore) {
  Tree t;
  intel_hybrid(t);
  const auto pmus = discover_core_pmus(t.path());
  // perf's order (by name): cpu_atom's rows come before cpu_core's.
  ASSERT_EQ(pmu_names(pmus), (std::vector<std::string>{"cpu_atom", "cpu_core"}));
  EXPECT_EQ(pmus[0].type, kAtomType);
  EXPECT_EQ(pmus[0].cpus, range(8, 15));
  EXPECT_EQ(pmus[1].type, kCoreType);
  EXPECT_EQ(pmus[1].cpus, range(0, 7));
  EXPECT_EQ(pmus[1].model, "alderlake_hybrid");
  EXPECT_TRUE(heterogeneous(pmus));
  EXPECT_TRUE(pmus[1].covers(7));
  EXPECT_FALSE(pmus[1].covers(8));
  EXPECT_EQ(describe_core_pmu(pmus[0]), "cpu_atom (CPUs 8-15)");
}

TEST(CorePmuDiscovery, ArmBigLittleInNumericOrderWithoutDsuOrSpe) {
  Tree t;
  arm_big_little(t);
  arm_core_pmu(t, "armv8_pmuv3_10", 20, "8");  // a third kind: 10 sorts after 1 and 2
  arm_core_pmu(t, "armv8_pmuv3_2", 19, "9");
  const auto pmus = discover_core_pmus(t.path());
  EXPECT_EQ(pmu_names(pmus), (std::vector<std::string>{"armv8_pmuv3_0", "armv8_pmuv3_1",
                                                       "armv8_pmuv3_2", "armv8_pmuv3_10"}));
  EXPECT_EQ(pmus[0].cpus, range(0, 3));
  EXPECT_EQ(pmus[1].cpus, range(4, 7));
  EXPECT_EQ(pmus[1].type, 9u);
}

// Each CPU's MIDR_EL1 as arm64 Linux gives it (cpuN/regs/identification/midr_el1).
void arm_cpus(Tree& t, int from, int to, const std::string& midr) {
  for (int cpu = from; cpu <= to; ++cpu)
    t.file("cpu" + std::to_string(cpu) + "/regs/identification/midr_el1", midr + "\n");
}

TEST(CorePmuDiscovery, ArmPmusAreNamedByTheirCoresMidr) {
  Tree pmus, cpus;
  arm_big_little(pmus);
  arm_cpus(cpus, 0, 3, "0x00000000410fd050");  // Cortex-A55 r0p0
  arm_cpus(cpus, 4, 7, "0x00000000414fd0b0");  // Cortex-A76 r4p0
  auto found = discover_core_pmus(pmus.path());
  ASSERT_EQ(pmu_names(found), (std::vector<std::string>{"armv8_pmuv3_0", "armv8_pmuv3_1"}));
  EXPECT_EQ(found[0].model, "");  // discovery reads no MIDR: every run discovers the PMUs
  EXPECT_EQ(core_pmu_model(found[0], cpus.path()), "Cortex-A55");
  EXPECT_EQ(core_pmu_model(found[1], cpus.path()), "Cortex-A76");
  // One PMU over two kinds of core (a firmware that describes one PMU for all): both named.
  Tree one, mixed;
  arm_core_pmu(one, "armv8_pmuv3_0", 8, "0-5");
  arm_cpus(mixed, 0, 3, "0x00000000410fd034");  // Cortex-A53 r0p4
  arm_cpus(mixed, 4, 5, "0x00000000410fd083");  // Cortex-A72 r0p3
  found = discover_core_pmus(one.path());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(core_pmu_model(found[0], mixed.path()), "Cortex-A53/Cortex-A72");
  // No readable MIDR (an older kernel, or junk): no name rather than a wrong one.
  Tree bare, junk;
  junk.file("cpu0/regs/identification/midr_el1", "not a number\n");
  EXPECT_EQ(core_pmu_model(found[0], bare.path()), "");
  EXPECT_EQ(core_pmu_model(found[0], junk.path()), "");
  // caps/pmu_name, where the kernel gives one (x86), wins.
  Tree x86;
  intel_homogeneous(x86);
  EXPECT_EQ(core_pmu_model(discover_core_pmus(x86.path())[0], mixed.path()), "skylake");
}

TEST(CorePmuDiscovery, ArmCoreNamesFromMidr) {
  EXPECT_EQ(arm_core_name(0x411fd070), "Cortex-A57");  // qemu's -cpu cortex-a57 (r1p0)
  EXPECT_EQ(arm_core_name(0x413fd0c1), "Neoverse-N1");
  EXPECT_EQ(arm_core_name(0x610f0220), "Icestorm-M1");
  EXPECT_EQ(arm_core_name(0x00000000c00fac30), "Ampere-1");
  // Variant and revision (bits 23:20, 3:0) do not change the core.
  EXPECT_EQ(arm_core_name(0x410fd070), arm_core_name(0x413fd07f));
  EXPECT_EQ(arm_core_name(0x410fd990), "implementer 0x41 part 0xd99");
  EXPECT_EQ(arm_core_name(0x510f8000), "Falkor-V1/Kryo");  // one part number, two cores
}

TEST(CorePmuDiscovery, HomogeneousMachinesHaveOneOrNone) {
  Tree x86;
  intel_homogeneous(x86);
  const auto pmus = discover_core_pmus(x86.path());
  ASSERT_EQ(pmu_names(pmus), std::vector<std::string>{"cpu"});
  EXPECT_TRUE(pmus[0].cpus.empty());  // no cpus file: every CPU
  EXPECT_TRUE(pmus[0].covers(123));
  EXPECT_EQ(pmus[0].model, "skylake");
  EXPECT_FALSE(heterogeneous(pmus));
  Tree arm;
  arm_core_pmu(arm, "armv8_pmuv3_0", 8, "0-3");
  EXPECT_EQ(pmu_names(discover_core_pmus(arm.path())), std::vector<std::string>{"armv8_pmuv3_0"});
  // A VM without a PMU (this machine): software PMUs only.
  Tree vm;
  software_pmus(vm);
  EXPECT_TRUE(discover_core_pmus(vm.path()).empty());
  EXPECT_TRUE(discover_core_pmus(vm.path() + "/none").empty());
}

TEST(CorePmuDiscovery, UnreadablePmusAreLeftOut) {
  Tree t;
  intel_hybrid(t);
  t.file("cpu_lowpower/type", "12\n");
  t.file("cpu_lowpower/cpus", "sixteen\n");  // not a CPU list
  t.file("cpu_weird/cpus", "16-17\n");       // no type
  EXPECT_EQ(pmu_names(discover_core_pmus(t.path())),
            (std::vector<std::string>{"cpu_atom", "cpu_core"}));
}

// ---- events on Intel hybrid ----

TEST(HybridEvents, UnprefixedHardwareAndCacheEventsCountOnEveryCorePmu) {
  FakeMachine m(intel_hybrid);
  auto groups = m.resolve("cycles,LLC-load-misses,task-clock");
  ASSERT_EQ(groups.size(), 3u);
  const ResolvedEvent& cycles = groups[0].events[0];
  EXPECT_EQ(pmu_names(cycles.core_pmus), (std::vector<std::string>{"cpu_atom", "cpu_core"}));
  EXPECT_EQ(cycles.attr.type, PERF_TYPE_HARDWARE);
  EXPECT_EQ(cycles.attr.config, PERF_COUNT_HW_CPU_CYCLES);  // as written: no PMU yet
  EXPECT_EQ(cycles.display_name(), "cycles");
  EXPECT_EQ(groups[1].events[0].core_pmus.size(), 2u);
  EXPECT_TRUE(groups[2].events[0].core_pmus.empty());  // software: no core PMU's

  // Counting mode: one event per PMU, the PMU's type in config[63:32], on its own CPUs.
  auto split = split_per_core_pmu(groups, {});
  EXPECT_EQ(
      names_of(split.groups),
      (std::vector<std::string>{"cpu_atom/cycles/", "cpu_core/cycles/", "cpu_atom/LLC-load-misses/",
                                "cpu_core/LLC-load-misses/", "task-clock"}));
  EXPECT_EQ(split.origin, (std::vector<std::size_t>{0, 0, 1, 1, 2}));
  const auto& atom = split.groups[0].events[0];
  const auto& core = split.groups[1].events[0];
  EXPECT_EQ(atom.attr.type, PERF_TYPE_HARDWARE);
  EXPECT_EQ(atom.attr.config, extended(kAtomType, PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(core.attr.config, extended(kCoreType, PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(cpus_of(atom), range(8, 15));
  EXPECT_EQ(cpus_of(core), range(0, 7));
  EXPECT_EQ(atom.split_from, core.split_from);  // siblings
  const auto& llc_atom = split.groups[2].events[0];
  EXPECT_EQ(llc_atom.attr.type, PERF_TYPE_HW_CACHE);
  EXPECT_EQ(llc_atom.attr.config, extended(kAtomType, kLlcLoadMisses));
  EXPECT_EQ(generic_config(llc_atom.attr), kLlcLoadMisses);
  EXPECT_EQ(cpus_of(split.groups[4].events[0]), range(0, 15));
}

TEST(HybridEvents, ModifiersGoAfterThePmuAsPerfWritesThem) {
  FakeMachine m(intel_hybrid);
  auto split = m.split("cycles:u,instructions/name=insn/");
  EXPECT_EQ(names_of(split.groups),
            (std::vector<std::string>{"cpu_atom/cycles/u", "cpu_core/cycles/u", "cpu_atom/insn/",
                                      "cpu_core/insn/"}));
  const auto& attr = split.groups[0].events[0].attr;
  EXPECT_EQ(attr.exclude_kernel, 1u);
  EXPECT_EQ(attr.exclude_user, 0u);
  EXPECT_EQ(attr.config, extended(kAtomType, PERF_COUNT_HW_CPU_CYCLES));
}

TEST(HybridEvents, AnEventOfOnePmuCountsOnItsCpusOnly) {
  FakeMachine m(intel_hybrid);
  auto groups = m.resolve(
      "cpu_atom/cycles/,cpu_core/LLC-load-misses/k,cpu_core/cpu-cycles/,cpu_atom/event=0x3c/,"
      "r3c");
  ASSERT_EQ(groups.size(), 5u);
  // perf's legacy names on a core PMU: the hardware event with the PMU's extended type.
  const auto& cycles = groups[0].events[0];
  EXPECT_EQ(cycles.attr.type, PERF_TYPE_HARDWARE);
  EXPECT_EQ(cycles.attr.config, extended(kAtomType, PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(pmu_names(cycles.core_pmus), std::vector<std::string>{"cpu_atom"});
  EXPECT_EQ(cycles.display_name(), "cpu_atom/cycles/");
  const auto& llc = groups[1].events[0];
  EXPECT_EQ(llc.attr.type, PERF_TYPE_HW_CACHE);
  EXPECT_EQ(llc.attr.config, extended(kCoreType, kLlcLoadMisses));
  EXPECT_EQ(llc.attr.exclude_user, 1u);
  EXPECT_EQ(cpus_of(llc), range(0, 7));
  // The PMU's own sysfs events and terms: its type, bound to it.
  EXPECT_EQ(groups[2].events[0].attr.type, kCoreType);
  EXPECT_EQ(groups[2].events[0].attr.config, 0x3cu);
  EXPECT_EQ(cpus_of(groups[2].events[0]), range(0, 7));
  EXPECT_EQ(groups[3].events[0].attr.type, kAtomType);
  EXPECT_EQ(cpus_of(groups[3].events[0]), range(8, 15));
  // A raw code is PERF_TYPE_RAW, which is cpu_core's type here: the kernel counts it there.
  EXPECT_EQ(groups[4].events[0].attr.type, PERF_TYPE_RAW);
  EXPECT_EQ(pmu_names(groups[4].events[0].core_pmus), std::vector<std::string>{"cpu_core"});
  // Nothing of them is split or renamed.
  auto split = split_per_core_pmu(groups, {});
  EXPECT_EQ(names_of(split.groups),
            (std::vector<std::string>{"cpu_atom/cycles/", "cpu_core/LLC-load-misses/k",
                                      "cpu_core/cpu-cycles/", "cpu_atom/event=0x3c/", "r3c"}));
  // A name that is neither the PMU's event nor a legacy one: sysfs says what there is.
  expect_user_error([&] { m.resolve("cpu_atom/cyclez/"); }, {"cpu_atom", "cyclez"}, {"cpu-cycles"});
}

TEST(HybridEvents, LibpfmPerPmuNamesMapToTheirPmu) {
  Tree t;
  intel_hybrid(t);
  const auto pmus = discover_core_pmus(t.path());
  EXPECT_EQ(core_pmu_of_libpfm_pmu("adl_glc"), "cpu_core");
  EXPECT_EQ(core_pmu_of_libpfm_pmu("adl_grt"), "cpu_atom");
  EXPECT_EQ(core_pmu_of_libpfm_pmu("arm_ac53"), "armv8_cortex_a53");
  EXPECT_EQ(core_pmu_of_libpfm_pmu("skl"), "");
  // libpfm4 encodes a Gracemont event with the type it finds in sysfs; where it finds none it
  // leaves PERF_TYPE_RAW, which would be cpu_core's: the event gets cpu_atom's type.
  ResolvedEvent grt;
  grt.pmu = "adl_grt";
  grt.canonical = "adl_grt::INST_RETIRED:ANY";
  grt.attr.type = PERF_TYPE_RAW;
  grt.attr.config = 0xc0;
  bind_core_pmus(grt, pmus);
  EXPECT_EQ(grt.attr.type, kAtomType);
  EXPECT_EQ(grt.attr.config, 0xc0u);
  EXPECT_EQ(cpus_of(grt), range(8, 15));
  EXPECT_EQ(grt.display_name(), grt.spec.text);  // its name already says which core
  ResolvedEvent glc = grt;
  glc.pmu = "adl_glc";
  glc.attr.type = PERF_TYPE_RAW;
  glc.core_pmus.clear();
  bind_core_pmus(glc, pmus);
  EXPECT_EQ(glc.attr.type, kCoreType);
  EXPECT_EQ(cpus_of(glc), range(0, 7));
  // Arm device-tree names: arm_ac53 is armv8_cortex_a53, with the type libpfm4 found.
  Tree arm;
  arm_core_pmu(arm, "armv8_cortex_a53", 8, "0-3");
  arm_core_pmu(arm, "armv8_cortex_a72", 9, "4-5");
  ResolvedEvent a72;
  a72.pmu = "arm_ac72";
  a72.attr.type = 9;
  a72.attr.config = 0x11;
  bind_core_pmus(a72, discover_core_pmus(arm.path()));
  EXPECT_EQ(pmu_names(a72.core_pmus), std::vector<std::string>{"armv8_cortex_a72"});
  EXPECT_EQ(a72.attr.type, 9u);
}

// ---- groups ----

TEST(HybridGroups, AGroupBecomesOneGroupPerPmu) {
  FakeMachine m(intel_hybrid);
  auto split = m.split("{cycles,instructions}:u,page-faults");
  ASSERT_EQ(split.groups.size(), 3u);
  EXPECT_EQ(split.origin, (std::vector<std::size_t>{0, 0, 1}));
  for (std::size_t g = 0; g < 2; ++g) {
    EXPECT_TRUE(split.groups[g].grouped);
    const std::uint64_t type = g == 0 ? kAtomType : kCoreType;
    EXPECT_EQ(split.groups[g].events[0].attr.config, extended(type, PERF_COUNT_HW_CPU_CYCLES));
    EXPECT_EQ(split.groups[g].events[1].attr.config, extended(type, PERF_COUNT_HW_INSTRUCTIONS));
  }
  EXPECT_EQ(
      names_of(split.groups),
      (std::vector<std::string>{"cpu_atom/cycles/u", "cpu_atom/instructions/u", "cpu_core/cycles/u",
                                "cpu_core/instructions/u", "page-faults"}));
}

TEST(HybridGroups, AGroupMixingTwoPmusIsRefused) {
  FakeMachine m(intel_hybrid);
  expect_user_error(
      [&] { m.resolve("{cpu_core/cycles/,cpu_atom/instructions/}"); },
      {"{cpu_core/cycles/,cpu_atom/instructions/}", "cpu_core", "cpu_atom", "one PMU"},
      {"{cpu_core/cycles/,cpu_core/instructions/},{cpu_atom/cycles/,"
       "cpu_atom/instructions/}"});
  expect_user_error([&] { m.resolve("{cpu_core/cpu-cycles/,cpu_atom/event=0xc0/}:u"); },
                    {"cpu_core", "cpu_atom"}, {"{cpu_core/cpu-cycles/:u,cpu_core/event=0xc0/:u}"});
  // Each on its own is fine, and so are two groups.
  EXPECT_EQ(m.resolve("cpu_core/cycles/,cpu_atom/instructions/").size(), 2u);
  EXPECT_EQ(m.resolve("{cpu_core/cycles/,cpu_core/instructions/},{cpu_atom/cycles/}").size(), 2u);
}

TEST(HybridGroups, UnprefixedMembersFollowTheGroupsPmu) {
  FakeMachine m(intel_hybrid);
  auto split = m.split("{cpu_atom/instructions/,cycles}");
  ASSERT_EQ(split.groups.size(), 1u);
  const auto& cycles = split.groups[0].events[1];
  EXPECT_EQ(cycles.display_name(), "cpu_atom/cycles/");
  EXPECT_EQ(cycles.attr.config, extended(kAtomType, PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(cpus_of(cycles), range(8, 15));
}

TEST(HybridGroups, SoftwareMembersAreCountedWithEachPmusGroup) {
  FakeMachine m(intel_hybrid);
  auto split = m.split("{cycles,task-clock}");
  ASSERT_EQ(split.groups.size(), 2u);
  EXPECT_EQ(names_of(split.groups),
            (std::vector<std::string>{"cpu_atom/cycles/", "cpu_atom/task-clock/",
                                      "cpu_core/cycles/", "cpu_core/task-clock/"}));
  const auto& clock = split.groups[1].events[1];
  EXPECT_EQ(clock.attr.type, PERF_TYPE_SOFTWARE);  // not given a PMU type
  EXPECT_EQ(clock.attr.config, PERF_COUNT_SW_TASK_CLOCK);
  EXPECT_EQ(cpus_of(clock), range(0, 7));
}

TEST(HybridCpus, DashCKeepsThePmusOfItsCpus) {
  FakeMachine m(intel_hybrid);
  EXPECT_EQ(names_of(m.split("cycles", {0, 1}).groups),
            std::vector<std::string>{"cpu_core/cycles/"});
  EXPECT_EQ(names_of(m.split("cycles", {12}).groups), std::vector<std::string>{"cpu_atom/cycles/"});
  EXPECT_EQ(m.split("{cycles,instructions}", {3, 9}).groups.size(), 2u);
  expect_user_error(
      [&] {
        m.split("cpu_atom/cycles/", {0, 1});
      },
      {"cpu_atom/cycles/", "CPUs 8-15", "0-1"}, {"-C"});
}

TEST(HybridFunctionMode, EachCpuReadsItsOwnPmusCounter) {
  FakeMachine m(intel_hybrid);
  auto groups = m.resolve("{cycles,instructions},task-clock");
  EXPECT_NO_THROW(require_every_core_pmu(groups));
  // Not split: one event, whose counter on each CPU is that CPU's PMU's.
  const auto& cycles = groups[0].events[0];
  EXPECT_EQ(attr_on_cpu(cycles, 3).config, extended(kCoreType, PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(attr_on_cpu(cycles, 12).config, extended(kAtomType, PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(attr_on_cpu(groups[0].events[1], 12).config,
            extended(kAtomType, PERF_COUNT_HW_INSTRUCTIONS));
  EXPECT_EQ(cpus_of(cycles), range(0, 15));
  EXPECT_EQ(attr_on_cpu(groups[1].events[0], 12).config, PERF_COUNT_SW_TASK_CLOCK);
  EXPECT_EQ(cycles.display_name(), "cycles");
  // One PMU's event would leave the calls on the other CPUs unread: refused, saying how.
  expect_user_error([&] { require_every_core_pmu(m.resolve("task-clock,cpu_atom/cycles/u")); },
                    {"cpu_atom/cycles/u", "cpu_atom (CPUs 8-15)"}, {"cycles:u", "--by cpu"});
}

// ---- Arm big.LITTLE ----

TEST(BigLittleEvents, CyclesOnEachClusterWithItsType) {
  FakeMachine m(arm_big_little);
  auto split = m.split("cycles,armv8_pmuv3_1/inst_retired/,instructions");
  EXPECT_EQ(names_of(split.groups),
            (std::vector<std::string>{"armv8_pmuv3_0/cycles/", "armv8_pmuv3_1/cycles/",
                                      "armv8_pmuv3_1/inst_retired/", "armv8_pmuv3_0/instructions/",
                                      "armv8_pmuv3_1/instructions/"}));
  EXPECT_EQ(split.groups[0].events[0].attr.config, extended(8, PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(split.groups[1].events[0].attr.config, extended(9, PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(cpus_of(split.groups[0].events[0]), range(0, 3));
  EXPECT_EQ(cpus_of(split.groups[1].events[0]), range(4, 7));
  const auto& inst = split.groups[2].events[0];
  EXPECT_EQ(inst.attr.type, 9u);
  EXPECT_EQ(inst.attr.config, 0x8u);
  EXPECT_EQ(cpus_of(inst), range(4, 7));
  // The cluster PMU (cpumask) is no core PMU: its events count as they always did.
  auto dsu = m.resolve("arm_dsu_0/cycles/");
  EXPECT_TRUE(dsu[0].events[0].core_pmus.empty());
  EXPECT_EQ(dsu[0].events[0].attr.type, 10u);
  expect_user_error([&] { m.resolve("{armv8_pmuv3_0/cycles/,armv8_pmuv3_1/inst_retired/}"); },
                    {"armv8_pmuv3_0", "armv8_pmuv3_1"},
                    {"{armv8_pmuv3_0/cycles/,armv8_pmuv3_0/inst_retired/},"
                     "{armv8_pmuv3_1/cycles/,armv8_pmuv3_1/inst_retired/}"});
}

// ---- one core PMU: nothing changes ----

TEST(HomogeneousEvents, NothingIsBoundSplitOrRenamed) {
  for (auto layout :
       {intel_homogeneous, +[](Tree& t) { arm_core_pmu(t, "armv8_pmuv3_0", 8, "0-3"); }}) {
    FakeMachine m(layout);
    auto groups = m.resolve("cycles,{instructions,LLC-load-misses}:u,task-clock");
    for (const auto& g : groups)
      for (const auto& e : g.events) EXPECT_TRUE(e.core_pmus.empty()) << e.display_name();
    EXPECT_EQ(groups[0].events[0].attr.config, PERF_COUNT_HW_CPU_CYCLES);
    auto split = split_per_core_pmu(groups, {0, 1});
    EXPECT_EQ(
        names_of(split.groups),
        (std::vector<std::string>{"cycles", "instructions:u", "LLC-load-misses:u", "task-clock"}));
    EXPECT_EQ(split.origin, (std::vector<std::size_t>{0, 1, 2}));
    EXPECT_NO_THROW(require_every_core_pmu(groups));
  }
  // cpu/cycles/ on the only core PMU: the plain hardware event (no extended type needed).
  FakeMachine x86(intel_homogeneous);
  const auto cycles = x86.resolve("cpu/cycles/")[0].events[0];
  EXPECT_EQ(cycles.attr.type, PERF_TYPE_HARDWARE);
  EXPECT_EQ(cycles.attr.config, PERF_COUNT_HW_CPU_CYCLES);
  EXPECT_EQ(cycles.display_name(), "cpu/cycles/");
  EXPECT_TRUE(cycles.core_pmus.empty());
  EXPECT_EQ(x86.resolve("cpu/cpu-cycles/")[0].events[0].attr.config, 0x3cu);
}

// ---- reports ----

namespace {

constexpr EventKind kCycles{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES};
constexpr EventKind kInstructions{PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS};

// An event counted on `cpus`, each CPU counting `per_cpu` over 1 s, all of it.
EventSeries per_cpu_series(const std::string& name, EventKind kind, const std::string& pmu,
                           const std::vector<int>& cpus, std::uint64_t per_cpu, std::size_t group) {
  EventSeries s;
  s.event = name;
  s.kind = kind;
  s.pmu = pmu;
  s.supported = true;
  s.group = group;
  s.instance_ids = cpus;
  for (std::size_t i = 0; i < cpus.size(); ++i)
    s.counts.push_back({per_cpu, 1000000000, 1000000000});
  return s;
}

// -a on the hybrid machine: {cycles,instructions} split, cpu_atom's group 0, cpu_core's 1.
std::vector<EventSeries> hybrid_series() {
  return {
      per_cpu_series("cpu_atom/cycles/", kCycles, "cpu_atom", range(8, 15), 1000, 0),
      per_cpu_series("cpu_atom/instructions/", kInstructions, "cpu_atom", range(8, 15), 500, 0),
      per_cpu_series("cpu_core/cycles/", kCycles, "cpu_core", range(0, 7), 2000, 1),
      per_cpu_series("cpu_core/instructions/", kInstructions, "cpu_core", range(0, 7), 6000, 1)};
}

CountingReport report_of(std::vector<CounterRow> rows, AggrMode mode) {
  CountingReport r;
  r.target = "system wide";
  r.elapsed_ns = 1000000000;
  r.aggr_mode = mode;
  r.counters = std::move(rows);
  return r;
}

}  // namespace

TEST(HybridReport, OneRowPerPmuAndIpcWithinEach) {
  const auto r = report_of(aggregate_rows(hybrid_series(), false), AggrMode::global);
  ASSERT_EQ(r.counters.size(), 4u);
  EXPECT_EQ(r.counters[0].event, "cpu_atom/cycles/");
  EXPECT_EQ(r.counters[0].pmu, "cpu_atom");
  EXPECT_DOUBLE_EQ(r.counters[0].value, 8000);
  EXPECT_DOUBLE_EQ(r.counters[2].value, 16000);
  // IPC: cpu_atom's instructions over cpu_atom's cycles (0.5), cpu_core's over cpu_core's (3);
  // across PMUs it would read 0.25 and 6.
  auto atom_ipc = derive_metric(r, r.counters[1]);
  auto core_ipc = derive_metric(r, r.counters[3]);
  ASSERT_TRUE(atom_ipc && core_ipc);
  EXPECT_EQ(atom_ipc->unit, "insn per cycle");
  EXPECT_DOUBLE_EQ(atom_ipc->value, 0.5);
  EXPECT_DOUBLE_EQ(core_ipc->value, 3.0);
  // JSON carries the PMU of each row; the text carries it in the name, as perf prints it.
  auto doc = nlohmann::json::parse(render_json(r));
  EXPECT_EQ(doc["counters"][0]["pmu"], "cpu_atom");
  EXPECT_EQ(doc["counters"][3]["pmu"], "cpu_core");
  EXPECT_DOUBLE_EQ(doc["counters"][3]["metric"]["value"].get<double>(), 3.0);
  const std::string out = render_text(r);
  EXPECT_NE(out.find("cpu_core/instructions/"), std::string::npos) << out;
  EXPECT_NE(out.find("3.00  insn per cycle"), std::string::npos) << out;
  EXPECT_NE(out.find("0.50  insn per cycle"), std::string::npos) << out;
  // pmcprof report FILE: read back, each row keeps its PMU, and IPC stays within each.
  const SavedRun saved = read_saved_run(render_json(r), "hybrid.json");
  ASSERT_TRUE(saved.counting);
  EXPECT_EQ(saved.counting->counters[3].pmu, "cpu_core");
  auto reread_ipc = derive_metric(*saved.counting, saved.counting->counters[3]);
  ASSERT_TRUE(reread_ipc);
  EXPECT_DOUBLE_EQ(reread_ipc->value, 3.0);
  // Prometheus: the PMU as a label of its own.
  const std::string prom = render_prometheus(&r, nullptr, {});
  EXPECT_NE(prom.find("pmcprof_event_total{event=\"cpu_core/cycles/\",pmu=\"cpu_core\"} 16000"),
            std::string::npos)
      << prom;
  // --metric-only: a column per PMU.
  RenderOptions metric_only;
  metric_only.metric_only = true;
  const std::string mo = render_text(r, metric_only);
  EXPECT_NE(mo.find("cpu_atom insn per cycle"), std::string::npos) << mo;
  EXPECT_NE(mo.find("cpu_core insn per cycle"), std::string::npos) << mo;
}

TEST(HybridReport, PerCpuRowsOnlyWhereEachPmuCounts) {
  const auto rows = aggregate_rows(hybrid_series(), true);
  ASSERT_EQ(rows.size(), 32u);  // 8 CPUs x 2 events per PMU, no row of a PMU on the other's CPUs
  for (const auto& row : rows) {
    ASSERT_TRUE(row.cpu);
    EXPECT_EQ(row.pmu == "cpu_core", *row.cpu < 8) << row.event << " on CPU " << *row.cpu;
  }
  const auto r = report_of(rows, AggrMode::cpu);
  for (const auto& row : r.counters) {
    if (row.kind == kInstructions) {
      auto ipc = derive_metric(r, row);
      ASSERT_TRUE(ipc);
      EXPECT_DOUBLE_EQ(ipc->value, row.pmu == "cpu_core" ? 3.0 : 0.5) << "CPU " << *row.cpu;
    }
  }
}

TEST(HybridReport, PerCoreAndPerSocketSumEachPmusCpus) {
  // Two P-cores with two threads each (CPUs 0-3), four E-cores (CPUs 8-11), one socket.
  Aggregation how;
  how.mode = AggrMode::core;
  for (int cpu = 0; cpu < 4; ++cpu) how.topology[cpu] = {0, 0, cpu / 2, 0};
  for (int cpu = 8; cpu < 12; ++cpu) how.topology[cpu] = {0, 0, 8 + cpu, 0};
  std::vector<EventSeries> series = {
      per_cpu_series("cpu_atom/cycles/", kCycles, "cpu_atom", range(8, 11), 1000, 0),
      per_cpu_series("cpu_core/cycles/", kCycles, "cpu_core", range(0, 3), 2000, 1),
      per_cpu_series("task-clock", {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK}, "",
                     {0, 1, 2, 3, 8, 9, 10, 11}, 1000000000, 2)};
  const auto rows = aggregate_rows(series, how);
  // Cores 0 and 1: cpu_core's cycles and task-clock; the E-cores: cpu_atom's and task-clock.
  ASSERT_EQ(rows.size(), 12u);
  EXPECT_EQ(aggr_label(AggrMode::core, *rows[0].aggr), "S0-D0-C0");
  EXPECT_EQ(rows[0].event, "cpu_core/cycles/");
  EXPECT_DOUBLE_EQ(rows[0].value, 4000);
  EXPECT_EQ(rows[0].aggr->cpus, 2);
  EXPECT_EQ(rows[1].event, "task-clock");
  EXPECT_EQ(rows[4].event, "cpu_atom/cycles/");
  EXPECT_DOUBLE_EQ(rows[4].value, 1000);
  EXPECT_EQ(rows[4].aggr->cpus, 1);
  how.mode = AggrMode::socket;
  const auto socket = aggregate_rows(series, how);
  ASSERT_EQ(socket.size(), 3u);
  EXPECT_DOUBLE_EQ(socket[0].value, 4000);  // cpu_atom: 4 CPUs
  EXPECT_DOUBLE_EQ(socket[1].value, 8000);  // cpu_core: 4 CPUs
  EXPECT_EQ(socket[0].aggr->cpus, 8);       // the socket's CPUs counted
  EXPECT_EQ(socket[0].aggr, socket[2].aggr);
}

TEST(HybridReport, MetricsPerPmuGroup) {
  const MetricDef* ipc = nullptr;
  for (const auto& d : metric_table())
    if (d.name == "IPC") ipc = &d;
  ASSERT_NE(ipc, nullptr);
  // -M IPC: its group split in two (group 0 cpu_atom's, 1 cpu_core's), one request each.
  MetricChoice choice{ipc, &ipc->variants.front()};
  ASSERT_EQ(choice.events().front(), "instructions");
  // The table writes instructions first: the group's k-th row is the k-th event.
  std::vector<EventSeries> series = hybrid_series();
  std::swap(series[0], series[1]);
  std::swap(series[2], series[3]);
  auto r = report_of(aggregate_rows(series, false), AggrMode::global);
  r.metrics = compute_metrics(r, {{choice, 0}, {choice, 1}});
  ASSERT_EQ(r.metrics.size(), 2u);
  EXPECT_EQ(r.metrics[0].pmu, "cpu_atom");
  EXPECT_DOUBLE_EQ(*r.metrics[0].value, 0.5);
  EXPECT_EQ(r.metrics[1].pmu, "cpu_core");
  EXPECT_DOUBLE_EQ(*r.metrics[1].value, 3.0);
  auto doc = nlohmann::json::parse(render_json(r));
  EXPECT_EQ(doc["metrics"][1]["pmu"], "cpu_core");
  EXPECT_EQ(read_saved_run(render_json(r), "ipc.json").counting->metrics[1].pmu, "cpu_core");
}

TEST(HybridReport, ATasksShareOfEachPmuIsNotExtrapolated) {
  // perf stat -- CMD on hybrid: both events enabled for the task's 1 s on CPU, cpu_core's
  // running 0.75 s (the task on P-cores), cpu_atom's 0.25 s. The counts are what ran; scaled by
  // their own running time they would be 4/3 and 4 times what the task executed.
  auto task = [](const std::string& name, const std::string& pmu, std::uint64_t value,
                 std::uint64_t running) {
    EventSeries s;
    s.event = name;
    s.kind = kCycles;
    s.pmu = pmu;
    s.supported = true;
    s.instance_ids = {4242};
    s.counts = {{value, 1000000000, running}};
    s.scale_running = {1000000000};  // both siblings together
    return s;
  };
  auto rows = aggregate_rows({task("cpu_atom/cycles/", "cpu_atom", 100, 250000000),
                              task("cpu_core/cycles/", "cpu_core", 300, 750000000)},
                             false);
  EXPECT_DOUBLE_EQ(rows[0].value, 100);
  EXPECT_DOUBLE_EQ(rows[1].value, 300);
  EXPECT_DOUBLE_EQ(rows[0].running_pct, 25);  // perf's share: where the task ran
  EXPECT_DOUBLE_EQ(rows[1].running_pct, 75);
  // Multiplexed as well (the siblings ran 0.5 s of the 1 s together): scaled by that only.
  auto mux = task("cpu_core/cycles/", "cpu_core", 300, 375000000);
  mux.scale_running = {500000000};
  EXPECT_DOUBLE_EQ(aggregate_rows({mux}, false)[0].value, 600);
}

TEST(HybridCounters, ATaskIsCountedOnlyWithEventsSplitPerPmu) {
  // With cpu -1 the kernel would count an unsplit cycles on one PMU only (cpu_core): refused
  // before anything is opened.
  FakeMachine m(intel_hybrid);
  EXPECT_THROW(
      CounterSet::open(m.resolve("cycles"), CounterTarget::tasks({::getpid()}, false, false)),
      SystemError);
}

TEST(HybridPlan, CountingPlansSplitGroupsAndTheirMetrics) {
  // pmcprof stat -e task-clock -M IPC -- CMD on the hybrid machine: the IPC group (1) becomes two
  // groups (one per PMU), and IPC one request for each, computed from its own PMU's events.
  FakeMachine m(intel_hybrid);
  const MetricDef* ipc = nullptr;
  for (const auto& d : metric_table())
    if (d.name == "IPC") ipc = &d;
  ASSERT_NE(ipc, nullptr);
  StatOptions opts;
  opts.command = {"true"};
  const MetricChoice choice{ipc, &ipc->variants.front()};
  CountingPlan plan =
      make_counting_plan(opts, m.resolve("task-clock,{instructions,cycles}:W"), {{choice, 1}});
  EXPECT_EQ(names_of(plan.groups),
            (std::vector<std::string>{"task-clock", "cpu_atom/instructions/", "cpu_atom/cycles/",
                                      "cpu_core/instructions/", "cpu_core/cycles/"}));
  ASSERT_EQ(plan.metrics.size(), 2u);
  EXPECT_EQ(plan.metrics[0].group, 1u);
  EXPECT_EQ(plan.metrics[1].group, 2u);
  EXPECT_TRUE(plan.groups[2].weak);
}

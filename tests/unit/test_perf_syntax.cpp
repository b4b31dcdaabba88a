// perf stat's event syntax beyond names: pmu/term=value/ (encoded from a fake sysfs tree),
// sys:name tracepoints (a fake tracefs), the W P S e modifiers, perf's default and -d event
// lists; and the CPU topology read for --per-core/-die/-socket/-node.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fake_tree.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/events/event_spec.hpp"
#include "pmcprof/events/sysfs_pmu.hpp"
#include "pmcprof/platform/cpu_topology.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;
namespace fs = std::filesystem;

namespace {

using pmcprof::testing::Tree;

// A cpu PMU (type 4) with perf's x86 formats, an msr PMU (type 10) with named events, and a
// power PMU with a scaled event.
void fake_pmus(Tree& t) {
  t.file("cpu/type", "4\n");
  t.file("cpu/format/event", "config:0-7\n");
  t.file("cpu/format/umask", "config:8-15\n");
  t.file("cpu/format/cmask", "config:24-31\n");
  t.file("cpu/format/ldlat", "config1:0-15\n");
  t.file("cpu/format/split", "config:32-33,40-41\n");
  t.file("cpu/events/cycles-ct", "event=0x3c,in_tx=1\n");
  t.file("cpu/format/in_tx", "config:32\n");
  t.file("msr/type", "10\n");
  t.file("msr/format/event", "config:0-63\n");
  t.file("msr/events/tsc", "event=0x00\n");
  t.file("msr/events/smi", "event=0x04\n");
  t.file("power/type", "22\n");
  t.file("power/format/event", "config:0-7\n");
  t.file("power/events/energy-pkg", "event=0x02\n");
  t.file("power/events/energy-pkg.scale", "2.3283064365386962890625e-10\n");
  t.file("power/events/energy-pkg.unit", "Joules\n");
}

void expect_user_error(const std::function<void()>& f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "accepted";
  } catch (const UserError& e) {
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    EXPECT_FALSE(e.hint().empty()) << e.what();
  }
}

}  // namespace

TEST(PerfSyntax, SlashedEventsAndTheirTerms) {
  auto ev = parse_event("cpu/event=0x3c,umask=0/u");
  EXPECT_TRUE(ev.slashed);
  EXPECT_EQ(ev.name, "cpu");
  EXPECT_EQ(ev.terms, (std::vector<EventTerm>{{"event", "0x3c"}, {"umask", "0"}}));
  EXPECT_TRUE(ev.modifiers.user);
  EXPECT_EQ(ev.text, "cpu/event=0x3c,umask=0/u");
  auto tsc = parse_event("msr/tsc/:k");
  EXPECT_EQ(tsc.terms, (std::vector<EventTerm>{{"tsc", std::nullopt}}));
  EXPECT_TRUE(tsc.modifiers.kernel);
  EXPECT_TRUE(parse_event("msr/tsc/").modifiers.empty());
  EXPECT_EQ(parse_event("instructions/name=insn/").terms,
            (std::vector<EventTerm>{{"name", "insn"}}));
  // Commas inside the slashes do not split the -e list, also in a group.
  auto groups = parse_event_list("cpu/event=0x3c,umask=0/,{msr/tsc/,cycles}:W,page-faults");
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].events[0].text, "cpu/event=0x3c,umask=0/");
  EXPECT_TRUE(groups[1].grouped);
  EXPECT_TRUE(groups[1].weak);
  EXPECT_EQ(groups[1].events[0].text, "msr/tsc/");  // W is the group's, not the members'
  EXPECT_EQ(groups[1].events[1].text, "cycles");
  expect_user_error([] { parse_event("cpu/event=/"); }, {"malformed term"});
  expect_user_error([] { parse_event("/tsc/"); }, {"expected pmu/terms/"});
}

TEST(PerfSyntax, PerfModifiersPSeW) {
  auto ev = parse_event("cycles:PSe");
  EXPECT_TRUE(ev.modifiers.precise_max);
  EXPECT_TRUE(ev.modifiers.sample_read);
  EXPECT_TRUE(ev.modifiers.exclusive);
  perf_event_attr attr{};
  apply_modifiers(ev.modifiers, attr);
  EXPECT_EQ(attr.precise_ip, 3u);  // the counter set lowers it until the kernel takes it
  EXPECT_EQ(attr.exclusive, 1u);
  auto g = parse_event_list("{cycles,instructions}:uW");
  EXPECT_TRUE(g[0].weak);
  EXPECT_EQ(g[0].events[0].text, "cycles:u");
  EXPECT_FALSE(parse_event_list("{cycles,instructions}:u")[0].weak);
}

TEST(PerfSyntax, DefaultAndDetailedEventsAsPerf) {
  auto names = [](const std::vector<EventGroupSpec>& gs) {
    std::vector<std::string> out;
    for (const auto& g : gs)
      for (const auto& e : g.events) out.push_back(e.text);
    return out;
  };
  EXPECT_EQ(names(default_events()).front(), "task-clock");
  EXPECT_EQ(names(default_events(true)).front(), "cpu-clock");  // -a: perf starts with cpu-clock
  auto with_stalls = names(default_events(false, true, true));
  EXPECT_EQ(with_stalls[5], "stalled-cycles-frontend");
  EXPECT_EQ(with_stalls[6], "stalled-cycles-backend");
  EXPECT_EQ(with_stalls.size(), 10u);
  EXPECT_TRUE(detailed_events(0).empty());
  EXPECT_EQ(names(detailed_events(1)),
            (std::vector<std::string>{"L1-dcache-loads", "L1-dcache-load-misses", "LLC-loads",
                                      "LLC-load-misses"}));
  EXPECT_EQ(detailed_events(2).size(), 10u);
  EXPECT_EQ(names(detailed_events(3)).back(), "L1-dcache-prefetch-misses");
  EXPECT_EQ(detailed_events(3).size(), 12u);
  // They are perf's generic cache events.
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto misses = resolver.resolve(parse_event("L1-dcache-load-misses"));
  EXPECT_EQ(misses.attr.type, PERF_TYPE_HW_CACHE);
  EXPECT_EQ(misses.attr.config, PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                    (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
}

TEST(SysfsPmu, TermsSetTheBitsTheirFormatsName) {
  Tree t;
  fake_pmus(t);
  auto enc = encode_sysfs_event("cpu", {{"event", "0x3c"}, {"umask", "1"}, {"cmask", "2"}},
                                "cpu/...", t.path());
  EXPECT_EQ(enc.attr.type, 4u);
  EXPECT_EQ(enc.attr.config, 0x3cu | (1u << 8) | (2u << 24));
  // A split format: the value's low bits fill the first range, the next bits the second.
  auto split = encode_sysfs_event("cpu", {{"split", "0xf"}}, "cpu/split=0xf/", t.path());
  EXPECT_EQ(split.attr.config, (3ull << 32) | (3ull << 40));
  auto ld = encode_sysfs_event("cpu", {{"event", "0xcd"}, {"ldlat", "3"}, {"config2", "7"}}, "t",
                               t.path());
  EXPECT_EQ(ld.attr.config1, 3u);
  EXPECT_EQ(ld.attr.config2, 7u);
  auto ct = encode_sysfs_event("cpu", {{"cycles-ct", std::nullopt}}, "cpu/cycles-ct/", t.path());
  EXPECT_EQ(ct.attr.config, 0x3cull | (1ull << 32));
  auto raw = encode_sysfs_event("cpu", {{"config", "0x1234"}, {"name", "mine"}}, "t", t.path());
  EXPECT_EQ(raw.attr.config, 0x1234u);
  EXPECT_EQ(raw.name, "mine");
}

TEST(SysfsPmu, NamedEventsWithScaleAndUnit) {
  Tree t;
  fake_pmus(t);
  auto tsc = encode_sysfs_event("msr", {{"tsc", std::nullopt}}, "msr/tsc/", t.path());
  EXPECT_EQ(tsc.attr.type, 10u);
  EXPECT_EQ(tsc.attr.config, 0u);
  EXPECT_EQ(encode_sysfs_event("msr", {{"smi", std::nullopt}}, "msr/smi/", t.path()).attr.config,
            4u);
  auto energy = encode_sysfs_event("power", {{"energy-pkg", std::nullopt}}, "p", t.path());
  EXPECT_EQ(energy.attr.config, 2u);
  EXPECT_EQ(energy.unit, "Joules");
  EXPECT_DOUBLE_EQ(energy.scale, 2.3283064365386962890625e-10);
  EXPECT_EQ(sysfs_pmu_events("power", t.path()), (std::vector<std::string>{"energy-pkg"}));
  EXPECT_EQ(sysfs_pmus(t.path()), (std::vector<std::string>{"cpu", "msr", "power"}));
}

TEST(SysfsPmu, WhatDoesNotExistIsNamedWithWhatDoes) {
  Tree t;
  fake_pmus(t);
  expect_user_error([&] { encode_sysfs_event("gpu", {}, "gpu/x/", t.path()); },
                    {"unknown PMU 'gpu'"});
  expect_user_error(
      [&] {
        encode_sysfs_event("msr", {{"aperf", std::nullopt}}, "msr/aperf/", t.path());
      },
      {"PMU 'msr' has no event 'aperf'"});
  expect_user_error(
      [&] {
        encode_sysfs_event("cpu", {{"colour", "1"}}, "cpu/colour=1/", t.path());
      },
      {"PMU 'cpu' has no term 'colour'"});
  EXPECT_EQ(parse_term_value("0x3C", "t"), 0x3cu);
  EXPECT_EQ(parse_term_value("60", "t"), 60u);
  for (const char* bad : {"", "-1", "0x", "12z", "0x1g"})
    expect_user_error([&] { parse_term_value(bad, "t"); }, {"invalid term value"});
}

// What the user wrote is quoted in every error line (escaped, shortened): a PMU, term or value
// that is not UTF-8 cannot break the line or the terminal.
TEST(SysfsPmu, ErrorsQuoteTheInput) {
  Tree t;
  fake_pmus(t);
  expect_user_error([&] { encode_sysfs_event("g\xffpu", {}, "g\xffpu/x/", t.path()); },
                    {"unknown PMU 'g\\xFFpu' in event 'g\\xFFpu/x/'"});
  expect_user_error(
      [&] {
        encode_sysfs_event("msr", {{"a\xffperf", std::nullopt}}, "msr/a\xffperf/", t.path());
      },
      {"PMU 'msr' has no event 'a\\xFFperf' (in 'msr/a\\xFFperf/')"});
  expect_user_error(
      [&] {
        encode_sysfs_event("cpu", {{"col\xffour", "1"}}, "cpu/col\xffour=1/", t.path());
      },
      {"PMU 'cpu' has no term 'col\\xFFour'"});
  expect_user_error([&] { parse_term_value("1\xff", "cpu/event=1\xff/"); },
                    {"invalid term value '1\\xFF' in event 'cpu/event=1\\xFF/'"});
  const std::string long_pmu(500, 'p');
  try {
    encode_sysfs_event(long_pmu, {}, long_pmu + "/x/", t.path());
    ADD_FAILURE() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("(500 characters)"), std::string::npos) << e.what();
    EXPECT_LT(std::string(e.what()).size(), 300u);
  }
}

TEST(SysfsPmu, ResolverUsesSysfsAndTracefs) {
  Tree sysfs, tracefs;
  fake_pmus(sysfs);
  tracefs.file("events/sched/sched_switch/id", "316\n");
  tracefs.file("events/kmem/kmalloc/id", "512\n");
  PfmLibrary pfm;
  EventResolver resolver(pfm, {sysfs.path(), tracefs.path()});
  auto tsc = resolver.resolve(parse_event("msr/tsc/:u"));
  EXPECT_EQ(tsc.attr.type, 10u);
  EXPECT_EQ(tsc.attr.exclude_kernel, 1u);
  EXPECT_EQ(tsc.display_name(), "msr/tsc/:u");
  auto sw = resolver.resolve(parse_event("sched:sched_switch"));
  EXPECT_EQ(sw.attr.type, PERF_TYPE_TRACEPOINT);
  EXPECT_EQ(sw.attr.config, 316u);
  EXPECT_EQ(resolver.resolve(parse_event("kmem:kmalloc")).attr.config, 512u);
  // A named event with terms: only name= applies.
  auto insn = resolver.resolve(parse_event("instructions/name=insn/"));
  EXPECT_EQ(insn.attr.type, PERF_TYPE_HARDWARE);
  EXPECT_EQ(insn.display_name(), "insn");
  expect_user_error([&] { resolver.resolve(parse_event("instructions/period=100/")); },
                    {"only name= applies"});
  // No tracepoint cycles:x: the modifier error the parser kept.
  expect_user_error([&] { resolver.resolve(parse_event("cycles:x")); },
                    {"unknown modifier 'x'", "u k h G H D I p P S e W"});
}

TEST(CpuTopology, ReadFromSysfs) {
  Tree t;
  for (int cpu : {0, 1, 2, 3}) {
    const std::string d = "cpu" + std::to_string(cpu);
    t.file(d + "/topology/physical_package_id", std::to_string(cpu / 2) + "\n");
    t.file(d + "/topology/core_id", std::to_string(cpu % 2) + "\n");
    if (cpu != 3) t.file(d + "/topology/die_id", "0\n");  // missing: 0, as before Linux 5.2
    t.file(d + "/node" + std::to_string(cpu / 2) + "/x", "");
  }
  auto topo = read_cpu_topology({0, 1, 2, 3}, t.path());
  ASSERT_EQ(topo.size(), 4u);
  EXPECT_EQ(topo[2].socket, 1);
  EXPECT_EQ(topo[3].core, 1);
  EXPECT_EQ(topo[3].die, 0);
  EXPECT_EQ(topo[1].node, 0);
  EXPECT_EQ(topo[2].node, 1);
}

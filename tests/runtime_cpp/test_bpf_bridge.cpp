// Runtime (root): the counter PERF_EVENT_ARRAY that function mode reads from BPF.
// Loads the pmcprof skeleton, puts per-CPU task-clock fds into `counters`, and checks that
// bpf_perf_event_read_value in a program pinned to each CPU reads the same counter that
// user space reads with read(2) — bracketed by two user-space reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/probes/counter_bridge.hpp"
#include "pmcprof/run/counting_session.hpp"

using namespace pmcprof;

namespace {

class BpfBridge : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to load BPF and open system-wide counters";
  }
};

std::vector<ResolvedGroup> task_clock_and_page_faults() {
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  return resolver.resolve(parse_event_list("task-clock,page-faults"));
}

}  // namespace

TEST_F(BpfBridge, ReadsEveryCpuCounterFromBpf) {
  auto groups = task_clock_and_page_faults();
  CounterSet counters = CounterSet::open(groups, CounterTarget::system_wide(online_cpus()));
  ASSERT_TRUE(counters.supported(0));
  counters.enable();
  CounterBridge bridge = CounterBridge::load(counters);
  ASSERT_EQ(bridge.event_count(), 2u);

  const auto& target = counters.target();
  for (std::size_t i = 0; i < target.instance_count(); ++i) {
    const int cpu = target.instance_id(i);
    const RawCount before = counters.read()[0][i];
    const BpfCounterSnapshot snap = bridge.read_on_cpu(cpu);
    const RawCount after = counters.read()[0][i];
    EXPECT_EQ(snap.cpu, cpu);
    ASSERT_EQ(snap.error.size(), 2u);
    EXPECT_EQ(snap.error[0], 0) << "bpf_perf_event_read_value failed on CPU " << cpu;
    EXPECT_EQ(snap.error[1], 0);
    // task-clock on a CPU advances in ns; the BPF read lies between the two user reads.
    EXPECT_GE(snap.counts[0].value, before.value) << "CPU " << cpu;
    EXPECT_LE(snap.counts[0].value, after.value) << "CPU " << cpu;
    EXPECT_GT(snap.counts[0].enabled, 0u);
    EXPECT_GE(snap.counts[0].enabled, snap.counts[0].running);
  }
}

TEST_F(BpfBridge, UnsupportedEventsGetNoBpfSlot) {
  // cycles cannot be opened without a hardware PMU: BPF must read only task-clock, so a
  // refused event can never be read as 0 in function mode.
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto groups = resolver.resolve(parse_event_list("cycles,task-clock"));
  CounterSet counters = CounterSet::open(groups, CounterTarget::system_wide(online_cpus()));
  if (counters.supported(0)) GTEST_SKIP() << "this machine has a hardware PMU: cycles opened";
  counters.enable();
  CounterBridge bridge = CounterBridge::load(counters);
  ASSERT_EQ(bridge.event_count(), 1u);
  const BpfCounterSnapshot snap = bridge.read_on_cpu(counters.target().instance_id(0));
  EXPECT_EQ(snap.error[0], 0);
  EXPECT_GT(snap.counts[0].enabled, 0u);
}

TEST_F(BpfBridge, EmptySlotReportsAnError) {
  // Counters on CPU 0 only: a read on another CPU finds an empty slot and must fail, which
  // function mode turns into "not counted", never into 0.
  auto cpus = online_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  auto groups = task_clock_and_page_faults();
  CounterSet counters = CounterSet::open(groups, CounterTarget::system_wide({cpus[0]}));
  counters.enable();
  CounterBridge bridge = CounterBridge::load(counters);
  EXPECT_EQ(bridge.read_on_cpu(cpus[0]).error[0], 0);
  EXPECT_NE(bridge.read_on_cpu(cpus[1]).error[0], 0);
}

TEST_F(BpfBridge, CorePmuEventsSitOnlyOnTheirCpus) {
  // A heterogeneous machine's events, on software counters: two fake core PMUs, one on the
  // first CPU, one on the others. An event of both (function mode's cycles) is opened on every
  // CPU, so a call reads a counter wherever it runs; an event of one is opened on its PMU's
  // CPUs only, has no rows elsewhere, and its BPF slot there is empty: a read fails (never 0).
  auto cpus = online_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  const CorePmu first{"fake_first", PERF_TYPE_SOFTWARE, {cpus[0]}, ""};
  const CorePmu others{"fake_others", PERF_TYPE_SOFTWARE, {cpus.begin() + 1, cpus.end()}, ""};
  auto groups = task_clock_and_page_faults();
  groups[0].events[0].core_pmus = {first, others};
  groups[1].events[0].core_pmus = {others};
  CounterSet counters = CounterSet::open(groups, CounterTarget::system_wide(cpus));
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    EXPECT_TRUE(counters.counts_on(0, i));
    EXPECT_GE(counters.fd(0, i), 0);
    EXPECT_EQ(counters.counts_on(1, i), i > 0);
    EXPECT_EQ(counters.fd(1, i) >= 0, i > 0) << "CPU " << cpus[i];
  }
  counters.enable();
  CounterBridge bridge = CounterBridge::load(counters);
  const BpfCounterSnapshot on_first = bridge.read_on_cpu(cpus[0]);
  EXPECT_EQ(on_first.error[0], 0);
  EXPECT_NE(on_first.error[1], 0);
  const BpfCounterSnapshot on_second = bridge.read_on_cpu(cpus[1]);
  EXPECT_EQ(on_second.error[0], 0);
  EXPECT_EQ(on_second.error[1], 0);
  // The report's series: page-faults only on the CPUs of its PMU.
  const auto series = series_of(counters, counters.read(), false);
  EXPECT_EQ(series[0].instance_ids, cpus);
  EXPECT_EQ(series[1].instance_ids, std::vector<int>(cpus.begin() + 1, cpus.end()));
  EXPECT_EQ(series[1].pmu, "fake_others");
  EXPECT_EQ(series[0].pmu, "");  // of several PMUs: a row of none
}

// Runtime (root): the counter PERF_EVENT_ARRAY that function mode reads from BPF.
// Loads the pmcprof skeleton, puts per-CPU task-clock fds into `counters`, and checks that
// bpf_perf_event_read_value in a program pinned to each CPU reads the same counter that
// user space reads with read(2) — bracketed by two user-space reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/probes/counter_bridge.hpp"

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

// Runtime (root): the BPF cgroup backend's program (bpf/cgroup_count.bpf.c) sets aside a
// stretch whose task is not the one the CPU last switched to (a switch the kernel did not
// report), and charges the others. The unreported switch is made by hand: every CPU is told
// it last switched to a task that does not exist; the flush on this test's own CPU (run in its
// context, preemption off) then finds this thread running instead.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include "pmcprof/counters/cgroups.hpp"
#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/probes/bpf_cgroup_counter.hpp"
#include "pmcprof/run/counting_session.hpp"

using namespace pmcprof;

namespace {

// This thread's context switches so far (voluntary and not).
long thread_switches() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nvcsw + ru.ru_nivcsw;
}

void spin_ms(int ms) {
  const auto end = monotonic_ns() + static_cast<std::uint64_t>(ms) * 1000000;
  while (monotonic_ns() < end) {
  }
}

}  // namespace

TEST(BpfCgroupCounter, SetsAsideAStretchAfterAnUnreportedSwitch) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load BPF and open system-wide counters";
  // Pinned to the first online CPU, so the flush there runs in this thread.
  const int cpu = online_cpus().at(0);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto groups = resolver.resolve(parse_event_list("task-clock"));
  CounterSet counters = CounterSet::open(groups, CounterTarget::system_wide({cpu}));
  counters.enable();
  const std::vector<Cgroup> cgroups = open_cgroups({"/"}, cgroup2_mount_point());
  BpfCgroupCounter bpf = BpfCgroupCounter::start(counters, cgroups);

  spin_ms(5);  // a stretch of this thread's, charged whole: it is the one switched to
  // Real-time for the window, so that no task of the loaded machine preempts it (a switch would
  // tell the CPU its last task again, and leave nothing to set aside).
  sched_param rt{};
  rt.sched_priority = 1;
  ASSERT_EQ(sched_setscheduler(0, SCHED_FIFO, &rt), 0);
  const BpfCgroupCounts first = bpf.read();
  const long switches = thread_switches();
  bpf.pretend_switched_to(0x7ffffffe);  // no such task
  spin_ms(5);
  const BpfCgroupCounts second = bpf.read();
  const long switched = thread_switches() - switches;
  sched_param normal{};
  ASSERT_EQ(sched_setscheduler(0, SCHED_OTHER, &normal), 0);
  if (switched != 0)
    GTEST_SKIP() << "this thread was switched out meanwhile, so the kernel reset the CPU's "
                    "last task: nothing to set aside";
  EXPECT_EQ(second.unreported_switches, first.unreported_switches + 1);
  EXPECT_EQ(second.read_errors, 0u);
  // The 5 ms spun after the pretend switch went aside, not to the root cgroup.
  const std::uint64_t aside = second.uncharged[0].value - first.uncharged[0].value;
  const std::uint64_t charged = second.per_cgroup[0][0].value - first.per_cgroup[0][0].value;
  EXPECT_GE(aside, 5000000u);
  EXPECT_LT(charged, 1000000u) << "the stretch was charged to a cgroup as well";
}

// -C: a CPU without counters is not read at its switches (its empty slot is no read error) and
// its switches are not checked: its last task stays the pretended one however often it
// switches, while the counted CPU's moves on at its first switch (which the pretence makes an
// unreported one). The per-CPU record is asserted rather than the unreported count, which also
// counts real unreported switches: this VM makes a few a second (its init's threads leave a CPU
// with no sched_switch for them, seen by bpftrace too).
TEST(BpfCgroupCounter, CpusNotCountedAreNeitherReadNorChecked) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load BPF and open system-wide counters";
  const std::vector<int> cpus = online_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  const int counted = cpus[0];
  const int uncounted = cpus[1];
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto groups = resolver.resolve(parse_event_list("task-clock"));
  CounterSet counters = CounterSet::open(groups, CounterTarget::system_wide({counted}));
  counters.enable();
  BpfCgroupCounter bpf =
      BpfCgroupCounter::start(counters, open_cgroups({"/"}, cgroup2_mount_point()));
  constexpr std::uint32_t nobody = 0x7ffffffe;  // no such task
  bpf.pretend_switched_to(nobody);
  // Context switches on each CPU: this thread sleeps there 20 times.
  for (const int cpu : {uncounted, counted}) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
    const long switches = thread_switches();
    for (int i = 0; i < 20; ++i) usleep(1000);
    ASSERT_GE(thread_switches() - switches, 20);
  }
  const BpfCgroupCounts counts = bpf.read();
  const auto last = bpf.last_switched_to();
  ASSERT_GT(last.size(), static_cast<std::size_t>(uncounted));
  EXPECT_EQ(last[uncounted], nobody) << "the uncounted CPU's switches were checked";
  EXPECT_NE(last[counted], nobody) << "the counted CPU's switches were not checked";
  EXPECT_GE(counts.unreported_switches, 1u) << "the counted CPU's first switch was not caught";
  EXPECT_EQ(counts.read_errors, 0u) << "the uncounted CPU's empty slot was read";
}

#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pmcprof/counters/cgroups.hpp"
#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/counters/scaling.hpp"
#include "pmcprof/probes/bpf_object.hpp"

struct cgroup_count_bpf;

namespace pmcprof {

// The BPF backend of per-cgroup counting: one counter per CPU and event (a system-wide
// CounterSet) read at every context switch, deltas charged to the running task's cgroup and
// its watched ancestors. File descriptors stay CPUs x events however many cgroups.
// Throws UserError when the BPF backend cannot charge one of these cgroups faithfully.
void check_bpf_cgroup_limits(const std::vector<Cgroup>& cgroups);

// What one read of the BPF backend returns: cumulative counts, summed over CPUs.
struct BpfCgroupCounts {
  std::vector<std::vector<RawCount>> per_cgroup;  // [cgroup][counter-set event]
  // Stretches charged to no cgroup, per counter-set event: those after a context switch the
  // kernel did not report (they may hold several tasks' time), and those whose read failed.
  std::vector<RawCount> uncharged;
  std::uint64_t unreported_switches = 0;
  std::uint64_t read_errors = 0;
};

class BpfCgroupCounter {
 public:
  // Loads and attaches; counters must be system-wide and enabled. Throws UserError when a
  // cgroup is deeper, or has more watched ancestors, than the BPF walk follows.
  static BpfCgroupCounter start(const CounterSet& counters, const std::vector<Cgroup>& cgroups);

  // Charges what ran since the last switch on every CPU, then returns the cumulative counts
  // (unsupported events read as zero).
  BpfCgroupCounts read();

  // For tests: records PID as the task every CPU last switched to, as if the kernel had
  // switched to it unreported; the next stretch on a CPU where another task runs is set aside.
  void pretend_switched_to(std::uint32_t pid);
  // For tests: the PID each possible CPU last switched to, by CPU number (nullopt: none seen).
  std::vector<std::optional<std::uint32_t>> last_switched_to() const;

 private:
  static void destroy(cgroup_count_bpf* skel);
  BpfCgroupCounter(BpfEventMap events, std::size_t n_cgroups, std::size_t n_counter_events,
                   std::vector<int> cpus)
      : events_(std::move(events)),
        n_cgroups_(n_cgroups),
        n_counter_events_(n_counter_events),
        cpus_(std::move(cpus)) {}
  void flush();
  std::vector<RawCount> read_slots(std::size_t cgroup_slot) const;  // [counter-set event]
  BpfEventMap events_;
  Skeleton<cgroup_count_bpf, destroy> skel_;
  BpfLink link_;
  std::size_t n_cgroups_;
  std::size_t n_counter_events_;
  std::vector<int> cpus_;
};

}  // namespace pmcprof

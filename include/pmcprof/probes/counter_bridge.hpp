#pragma once

#include <memory>
#include <vector>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/counters/scaling.hpp"

struct pmcprof_bpf;

namespace pmcprof {

// Owns a loaded pmcprof BPF skeleton (pmcprof.bpf.c); destroying it detaches and unloads.
struct PmcprofBpfDeleter {
  void operator()(pmcprof_bpf* skel) const;
};
using PmcprofBpf = std::unique_ptr<pmcprof_bpf, PmcprofBpfDeleter>;

// One in-kernel read of every event on one CPU, as a BPF program sees it.
struct BpfCounterSnapshot {
  int cpu = -1;
  std::vector<long> error;  // bpf_perf_event_read_value's return per event (0 = ok)
  std::vector<RawCount> counts;
};

// The bridge from counters (stage 2) to probes (stage 3): puts the per-CPU counter fds of a
// system-wide CounterSet into the BPF `counters` PERF_EVENT_ARRAY (slot = event * n_cpus +
// cpu), sized with bpf_map__set_max_entries and configured through rodata before load.
class CounterBridge {
 public:
  static CounterBridge load(const CounterSet& counters);

  std::size_t event_count() const { return n_events_; }
  int cpu_slots() const { return n_cpus_; }
  // Runs the read_counters program pinned to `cpu` (BPF_PROG_TEST_RUN): the same
  // bpf_perf_event_read_value call function mode makes at every entry and exit.
  BpfCounterSnapshot read_on_cpu(int cpu) const;

 private:
  PmcprofBpf skel_;
  std::size_t n_events_ = 0;
  int n_cpus_ = 0;
};

}  // namespace pmcprof

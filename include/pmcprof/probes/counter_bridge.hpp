#pragma once

#include <vector>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/counters/scaling.hpp"
#include "pmcprof/probes/bpf_object.hpp"

struct counter_read_bpf;

namespace pmcprof {

// One in-kernel read of every event on one CPU, as a BPF program sees it.
struct BpfCounterSnapshot {
  int cpu = -1;
  std::vector<long> error;  // bpf_perf_event_read_value's return per event (0 = ok)
  std::vector<RawCount> counts;
};

// The bridge from counters (stage 2) to probes (stage 3), checked on its own: runs the
// read_counters program pinned to a CPU (BPF_PROG_TEST_RUN) — the same
// bpf_perf_event_read_value call function mode makes at every entry and exit.
class CounterBridge {
 public:
  static CounterBridge load(const CounterSet& counters);
  std::size_t event_count() const { return events_.size(); }
  BpfCounterSnapshot read_on_cpu(int cpu) const;

 private:
  static void destroy(counter_read_bpf* skel);
  explicit CounterBridge(BpfEventMap events) : events_(std::move(events)) {}
  BpfEventMap events_;
  Skeleton<counter_read_bpf, destroy> skel_;
};

}  // namespace pmcprof

#include "pmcprof/probes/counter_bridge.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

// clang-format off
#include "pmcprof.h"
#include "counter_read.skel.h"  // after pmcprof.h: it names its types
// clang-format on
#include "pmcprof/util/error.hpp"

namespace pmcprof {

void CounterBridge::destroy(counter_read_bpf* skel) {
  counter_read_bpf__destroy(skel);
}

CounterBridge CounterBridge::load(const CounterSet& counters) {
  CounterBridge bridge(BpfEventMap::of(counters));
  LibbpfQuiet quiet;
  bridge.skel_.reset(counter_read_bpf__open());
  if (!bridge.skel_)
    throw SystemError("cannot open the counter_read BPF object: " + errno_string(errno));
  auto* skel = bridge.skel_.get();
  skel->rodata->n_events = static_cast<__u32>(bridge.events_.size());
  skel->rodata->n_cpus = static_cast<__u32>(bridge.events_.n_cpus());
  size_map(skel->maps.counters, bridge.events_.slots());
  check_bpf_load(counter_read_bpf__load(skel), "counter_read");
  bridge.events_.fill(bpf_map__fd(skel->maps.counters), counters);
  return bridge;
}

BpfCounterSnapshot CounterBridge::read_on_cpu(int cpu) const {
  LIBBPF_OPTS(bpf_test_run_opts, opts, .flags = BPF_F_TEST_RUN_ON_CPU,
              .cpu = static_cast<__u32>(cpu));
  const int prog_fd = bpf_program__fd(skel_->progs.read_counters);
  if (bpf_prog_test_run_opts(prog_fd, &opts) != 0)
    throw SystemError("running the BPF counter read on CPU " + std::to_string(cpu) +
                      " failed: " + errno_string(errno));
  const pmcprof_snapshot& snap = skel_->bss->snapshot;
  BpfCounterSnapshot out;
  out.cpu = static_cast<int>(snap.cpu);
  for (std::size_t e = 0; e < events_.size(); ++e) {
    out.error.push_back(static_cast<long>(snap.err[e]));
    out.counts.push_back({snap.counter[e], snap.enabled[e], snap.running[e]});
  }
  return out;
}

}  // namespace pmcprof

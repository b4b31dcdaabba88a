#include "pmcprof/probes/counter_bridge.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "pmcprof.h"
#include "pmcprof.skel.h"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

CounterBridge CounterBridge::load(const CounterSet& counters) {
  BpfConfig config;
  config.counter_selftest = true;
  return CounterBridge(PmcprofObject::load(counters, config));
}

BpfCounterSnapshot CounterBridge::read_on_cpu(int cpu) const {
  LIBBPF_OPTS(bpf_test_run_opts, opts, .flags = BPF_F_TEST_RUN_ON_CPU,
              .cpu = static_cast<__u32>(cpu));
  const int prog_fd = bpf_program__fd(object_.skel()->progs.read_counters);
  if (bpf_prog_test_run_opts(prog_fd, &opts) != 0)
    throw SystemError("running the BPF counter read on CPU " + std::to_string(cpu) +
                      " failed: " + errno_string(errno));
  const pmcprof_snapshot& snap = object_.skel()->bss->snapshot;
  BpfCounterSnapshot out;
  out.cpu = static_cast<int>(snap.cpu);
  for (std::size_t e = 0; e < object_.bpf_event_count(); ++e) {
    out.error.push_back(static_cast<long>(snap.err[e]));
    out.counts.push_back({snap.counter[e], snap.enabled[e], snap.running[e]});
  }
  return out;
}

}  // namespace pmcprof

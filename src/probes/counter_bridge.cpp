#include "pmcprof/probes/counter_bridge.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "pmcprof.h"
#include "pmcprof.skel.h"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/system.hpp"

namespace pmcprof {

void PmcprofBpfDeleter::operator()(pmcprof_bpf* skel) const {
  pmcprof_bpf__destroy(skel);
}

CounterBridge CounterBridge::load(const CounterSet& counters) {
  const CounterTarget& target = counters.target();
  if (!target.system_wide_target())
    throw SystemError("the BPF counter array needs per-CPU counters (system-wide)");
  if (counters.event_count() > PMCPROF_MAX_EVENTS)
    throw UserError("at most " + std::to_string(PMCPROF_MAX_EVENTS) +
                        " events can be read from BPF in one run, got " +
                        std::to_string(counters.event_count()),
                    "split the events over several runs");
  CounterBridge bridge;
  bridge.n_events_ = counters.event_count();
  bridge.n_cpus_ = possible_cpu_count();

  bridge.skel_.reset(pmcprof_bpf__open());
  if (!bridge.skel_)
    throw SystemError("cannot open the pmcprof BPF object: " + errno_string(errno));
  auto* skel = bridge.skel_.get();
  skel->rodata->n_events = static_cast<__u32>(bridge.n_events_);
  skel->rodata->n_cpus = static_cast<__u32>(bridge.n_cpus_);
  const __u32 slots =
      static_cast<__u32>(std::max<std::size_t>(1, bridge.n_events_) * bridge.n_cpus_);
  bpf_map__set_max_entries(skel->maps.counters, slots);
  bpf_map__set_max_entries(skel->maps.records, static_cast<__u32>(bridge.n_cpus_));
  if (int err = pmcprof_bpf__load(skel); err)
    throw SystemError("cannot load the pmcprof BPF programs: " + errno_string(-err),
                      "'pmcprof doctor' shows what this kernel allows");

  const int map_fd = bpf_map__fd(skel->maps.counters);
  for (std::size_t e = 0; e < bridge.n_events_; ++e) {
    for (std::size_t i = 0; i < target.instance_count(); ++i) {
      const int fd = counters.fd(e, i);
      if (fd < 0) continue;
      const __u32 slot = static_cast<__u32>(e * bridge.n_cpus_ + target.instance_id(i));
      const __u32 value = static_cast<__u32>(fd);
      if (bpf_map_update_elem(map_fd, &slot, &value, BPF_ANY) != 0)
        throw SystemError("cannot put counter fd into the BPF counter array: " +
                          errno_string(errno));
    }
  }
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
  for (std::size_t e = 0; e < n_events_; ++e) {
    out.error.push_back(static_cast<long>(snap.err[e]));
    out.counts.push_back({snap.counter[e], snap.enabled[e], snap.running[e]});
  }
  return out;
}

}  // namespace pmcprof

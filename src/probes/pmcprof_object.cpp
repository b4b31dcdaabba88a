#include "pmcprof/probes/pmcprof_object.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "pmcprof.h"
#include "pmcprof.skel.h"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

void PmcprofBpfDeleter::operator()(pmcprof_bpf* skel) const {
  pmcprof_bpf__destroy(skel);
}
PmcprofObject PmcprofObject::load(const CounterSet& counters, const BpfConfig& config) {
  const CounterTarget& target = counters.target();
  if (!target.system_wide_target())
    throw SystemError("the BPF counter array needs per-CPU counters (system-wide)");
  PmcprofObject obj;
  for (std::size_t e = 0; e < counters.event_count(); ++e)
    if (counters.supported(e)) obj.bpf_events_.push_back(e);
  if (obj.bpf_events_.size() > PMCPROF_MAX_EVENTS)
    throw UserError("at most " + std::to_string(PMCPROF_MAX_EVENTS) +
                        " events can be read from BPF in one run, got " +
                        std::to_string(obj.bpf_events_.size()),
                    "split the events over several runs");
  obj.n_cpus_ = possible_cpu_count();

  obj.skel_.reset(pmcprof_bpf__open());
  if (!obj.skel_) throw SystemError("cannot open the pmcprof BPF object: " + errno_string(errno));
  auto* skel = obj.skel_.get();
  skel->rodata->n_events = static_cast<__u32>(obj.bpf_events_.size());
  skel->rodata->n_cpus = static_cast<__u32>(obj.n_cpus_);
  skel->rodata->agg_mode = config.agg_mode;
  skel->rodata->follow_tgids = config.follow_tgids;
  skel->rodata->sched_hook = config.sched_hook;
  skel->rodata->agg_by_cgroup = config.agg_by_cgroup;
  skel->rodata->need_cgroup_id = config.need_cgroup_id;
  skel->rodata->need_comm = config.need_comm;
  // Software events are never multiplexed: their running time always equals
  // their enabled time, so reading them without the times loses nothing.
  __u32 exact = 0;
  for (std::size_t b = 0; b < obj.bpf_events_.size(); ++b) {
    const auto& attr = counters.event(obj.bpf_events_[b]).attr;
    if (attr.type == PERF_TYPE_SOFTWARE) exact |= 1u << b;
  }
  skel->rodata->exact_events = exact;
  skel->rodata->fentry_func_id = config.fentry_func_id;
  skel->rodata->n_cgroups = static_cast<__u32>(config.count_cgroup_ids.size());
  skel->rodata->n_filter_cgroups = static_cast<__u32>(config.filter_cgroups.size());
  if (config.filter_cgroups.size() > 8)
    throw UserError("at most 8 cgroups can filter function mode (-G), got " +
                    std::to_string(config.filter_cgroups.size()));
  for (std::size_t i = 0; i < config.filter_cgroups.size(); ++i) {
    skel->rodata->filter_cgroup_ids[i] = config.filter_cgroups[i].first;
    skel->rodata->filter_cgroup_levels[i] = config.filter_cgroups[i].second;
  }
  const __u32 slots =
      static_cast<__u32>(std::max<std::size_t>(1, obj.bpf_events_.size()) * obj.n_cpus_);
  bpf_map__set_max_entries(skel->maps.counters, slots);
  bpf_map__set_max_entries(skel->maps.records, static_cast<__u32>(obj.n_cpus_));
  const std::size_t n_cg = std::max<std::size_t>(1, config.count_cgroup_ids.size());
  bpf_map__set_max_entries(
      skel->maps.cgroup_counts,
      static_cast<__u32>(n_cg * std::max<std::size_t>(1, obj.bpf_events_.size())));
  bpf_map__set_max_entries(skel->maps.cgroup_index, static_cast<__u32>(n_cg));

  // fentry/fexit need their target at load time, and this kernel may refuse them: load them
  // only for the fentry backend.
  const bool fentry = config.fentry_target.has_value();
  const bool cgroups = !config.count_cgroup_ids.empty();
  bpf_program__set_autoload(skel->progs.read_counters, config.counter_selftest);
  bpf_program__set_autoload(skel->progs.cgroup_switch, cgroups);
  bpf_program__set_autoload(skel->progs.cgroup_flush, cgroups);
  bpf_program__set_autoload(skel->progs.func_entry, config.probe_programs);
  bpf_program__set_autoload(skel->progs.func_exit, config.probe_programs);
  bpf_program__set_autoload(skel->progs.syscall_entry, config.syscall_programs);
  bpf_program__set_autoload(skel->progs.syscall_exit, config.syscall_programs);
  bpf_program__set_autoload(skel->progs.on_switch, config.function_mode && config.sched_hook);
  bpf_program__set_autoload(skel->progs.on_fork, config.function_mode && config.follow_tgids);
  bpf_program__set_autoload(skel->progs.on_task_exit, config.function_mode);
  bpf_program__set_autoload(skel->progs.func_fentry, fentry);
  bpf_program__set_autoload(skel->progs.func_fexit, fentry);
  if (fentry) {
    bpf_program__set_attach_target(skel->progs.func_fentry, 0, config.fentry_target->c_str());
    bpf_program__set_attach_target(skel->progs.func_fexit, 0, config.fentry_target->c_str());
  }
  LibbpfQuiet::clear_verdict();
  if (int err = pmcprof_bpf__load(skel); err) {
    std::string why = errno_string(-err);
    if (const auto verdict = LibbpfQuiet::last_verdict(); !verdict.empty())
      why += " (the verifier says: " + verdict + ")";
    throw SystemError("cannot load the pmcprof BPF programs: " + why,
                      "run with -v for libbpf's full log; 'pmcprof doctor' shows what this "
                      "kernel allows");
  }

  const int map_fd = bpf_map__fd(skel->maps.counters);
  for (std::size_t b = 0; b < obj.bpf_events_.size(); ++b) {
    for (std::size_t i = 0; i < target.instance_count(); ++i) {
      const int fd = counters.fd(obj.bpf_events_[b], i);
      if (fd < 0) continue;
      const __u32 slot = static_cast<__u32>(b * obj.n_cpus_ + target.instance_id(i));
      const __u32 value = static_cast<__u32>(fd);
      if (bpf_map_update_elem(map_fd, &slot, &value, BPF_ANY) != 0)
        throw SystemError("cannot put a counter fd into the BPF counter array: " +
                          errno_string(errno));
    }
  }
  for (std::size_t i = 0; i < config.count_cgroup_ids.size(); ++i) {
    const __u64 id = config.count_cgroup_ids[i];
    const __u32 idx = static_cast<__u32>(i);
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.cgroup_index), &id, &idx, BPF_ANY) != 0)
      throw SystemError("cannot add cgroup id " + std::to_string(id) +
                        " to the BPF cgroup index: " + errno_string(errno));
  }
  return obj;
}

}  // namespace pmcprof

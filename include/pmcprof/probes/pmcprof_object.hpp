#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/platform/libbpf_support.hpp"

struct pmcprof_bpf;

namespace pmcprof {

// Owns a loaded pmcprof BPF skeleton (bpf/pmcprof.bpf.c); destroying it unloads everything.
struct PmcprofBpfDeleter {
  void operator()(pmcprof_bpf* skel) const;
};
using PmcprofBpf = std::unique_ptr<pmcprof_bpf, PmcprofBpfDeleter>;

// How the BPF side is configured (rodata) and sized (max_entries) before load, and which
// programs it needs: the verifier takes tens of ms per program, so only those are loaded.
struct BpfConfig {
  bool counter_selftest = false;  // read_counters (CounterBridge)
  bool probe_programs = false;    // func_entry / func_exit: kprobes and uprobes
  bool syscall_programs = false;  // syscall_entry / syscall_exit: syscall tracepoints
  bool function_mode = false;     // on_switch, on_fork, on_task_exit
  std::uint32_t agg_mode = 0;     // PMCPROF_AGG_* bits
  bool follow_tgids = false;      // count only tracked processes and their descendants
  bool sched_hook = true;         // suspend/resume in-flight calls at sched_switch
  bool agg_by_cgroup = false;
  // What each record must carry; each costs a helper call per call when on.
  bool need_cgroup_id = true;
  bool need_comm = true;
  std::optional<std::string> fentry_target;  // load fentry/fexit for this kernel function
  std::uint32_t fentry_func_id = 0;
  // Per-cgroup counting (BPF backend): cgroup ids, index = position.
  std::vector<std::uint64_t> count_cgroup_ids;
  // Function mode -G filter: (cgroup id, level below the v2 root) of each cgroup whose
  // tasks' calls count (theirs and their descendants').
  std::vector<std::pair<std::uint64_t, std::uint32_t>> filter_cgroups;
};

// The loaded BPF object with the counter fds of every (supported) event in its `counters`
// PERF_EVENT_ARRAY at slot = event * n_cpus + cpu. Only events the kernel accepted get a
// BPF index (bpf_event_index), so BPF never reads an empty slot for an unsupported event.
class PmcprofObject {
 public:
  static PmcprofObject load(const CounterSet& counters, const BpfConfig& config);

  pmcprof_bpf* skel() const { return skel_.get(); }
  std::size_t bpf_event_count() const { return bpf_events_.size(); }
  // Index in the CounterSet of the BPF event i.
  std::size_t counter_event(std::size_t bpf_index) const { return bpf_events_[bpf_index]; }
  int cpu_slots() const { return n_cpus_; }

 private:
  PmcprofBpf skel_;
  std::vector<std::size_t> bpf_events_;
  int n_cpus_ = 0;
};

}  // namespace pmcprof

#include "pmcprof/probes/bpf_cgroup_counter.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

// clang-format off
#include "pmcprof.h"
#include "cgroup_count.skel.h"  // after pmcprof.h: it names its types
// clang-format on
#include "pmcprof/platform/libbpf_support.hpp"
#include "pmcprof/probes/percpu_map.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

struct CgroupCount {  // struct cgroup_count in bpf/cgroup_count.bpf.c
  std::uint64_t counter, enabled, running;
};

}  // namespace

void check_bpf_cgroup_limits(const std::vector<Cgroup>& cgroups) {
  for (const auto& cg : cgroups) {
    if (cg.level >= PMCPROF_MAX_CGROUP_DEPTH)
      throw UserError("cgroup " + cg.path + " is " + std::to_string(cg.level) +
                          " levels deep; the BPF backend follows at most " +
                          std::to_string(PMCPROF_MAX_CGROUP_DEPTH - 1),
                      "use --cgroup-backend fd");
  }
}

void BpfCgroupCounter::destroy(cgroup_count_bpf* skel) {
  cgroup_count_bpf__destroy(skel);
}

BpfCgroupCounter BpfCgroupCounter::start(const CounterSet& counters,
                                         const std::vector<Cgroup>& cgroups) {
  check_bpf_cgroup_limits(cgroups);
  std::vector<int> cpus;
  for (std::size_t i = 0; i < counters.target().instance_count(); ++i)
    cpus.push_back(counters.target().instance_id(i));
  BpfCgroupCounter c(BpfEventMap::of(counters), cgroups.size(), counters.event_count(),
                     std::move(cpus));
  LibbpfQuiet quiet;
  c.skel_.reset(cgroup_count_bpf__open());
  if (!c.skel_)
    throw SystemError("cannot open the cgroup_count BPF object: " + errno_string(errno));
  auto* skel = c.skel_.get();
  const std::size_t n_events = c.events_.size();
  skel->rodata->n_events = static_cast<__u32>(n_events);
  skel->rodata->n_cpus = static_cast<__u32>(c.events_.n_cpus());
  skel->rodata->ancestor_helper = kernel_has_tracing_ancestor_cgroup_id();
  skel->rodata->uncharged = static_cast<__u32>(cgroups.size());
  size_map(skel->maps.counters, c.events_.slots());
  // One slot per cgroup and event, then the uncharged stretches' per event.
  size_map(skel->maps.cgroup_counts, (cgroups.size() + 1) * std::max<std::size_t>(1, n_events));
  size_map(skel->maps.cgroup_index, std::max<std::size_t>(1, cgroups.size()));
  check_bpf_load(cgroup_count_bpf__load(skel), "cgroup_count");
  c.events_.fill(bpf_map__fd(skel->maps.counters), counters);
  for (std::size_t i = 0; i < cgroups.size(); ++i) {
    const __u64 id = cgroups[i].id;
    const __u32 idx = static_cast<__u32>(i);
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.cgroup_index), &id, &idx, BPF_ANY) != 0)
      throw SystemError("cannot add cgroup " + cgroups[i].path +
                        " to the BPF cgroup index: " + errno_string(errno));
  }
  c.flush();  // prime every CPU's last reading before charging anything
  c.link_ = check_link(bpf_program__attach(skel->progs.cgroup_switch),
                       "the cgroup counting hook (sched_switch)",
                       "use --cgroup-backend fd; 'pmcprof doctor' shows what this kernel allows");
  return c;
}

void BpfCgroupCounter::flush() {
  const int prog_fd = bpf_program__fd(skel_->progs.cgroup_flush);
  for (int cpu : cpus_) {
    LIBBPF_OPTS(bpf_test_run_opts, opts, .flags = BPF_F_TEST_RUN_ON_CPU,
                .cpu = static_cast<__u32>(cpu));
    // A CPU whose flush fails would hand back stale counts as current: refuse to read.
    if (bpf_prog_test_run_opts(prog_fd, &opts) != 0)
      throw SystemError("flushing the BPF cgroup counts on CPU " + std::to_string(cpu) +
                        " failed: " + errno_string(errno));
  }
}

std::vector<RawCount> BpfCgroupCounter::read_slots(std::size_t cgroup_slot) const {
  std::vector<RawCount> out(n_counter_events_);
  const int fd = bpf_map__fd(skel_->maps.cgroup_counts);
  const std::size_t n_bpf = events_.size();
  for (std::size_t b = 0; b < n_bpf; ++b) {
    const __u32 slot = static_cast<__u32>(cgroup_slot * n_bpf + b);
    RawCount& sum = out[events_.counter_event(b)];
    for_each_cpu_value<CgroupCount>(fd, &slot, [&](const CgroupCount& v) {
      sum += RawCount{v.counter, v.enabled, v.running};
    });
  }
  return out;
}

void BpfCgroupCounter::pretend_switched_to(std::uint32_t pid) {
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) throw SystemError("cannot count the possible CPUs: " + errno_string(-ncpus));
  std::vector<__u64> on(static_cast<std::size_t>(ncpus), __u64{pid} + 1);
  const __u32 key = 0;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.cgroup_on_cpu), &key, on.data(), BPF_ANY) != 0)
    throw SystemError("cannot set the cgroup counter's last task: " + errno_string(errno));
}

std::vector<std::optional<std::uint32_t>> BpfCgroupCounter::last_switched_to() const {
  std::vector<std::optional<std::uint32_t>> out;
  const __u32 key = 0;
  for_each_cpu_value<__u64>(bpf_map__fd(skel_->maps.cgroup_on_cpu), &key, [&](__u64 on) {
    out.push_back(on == 0 ? std::nullopt : std::optional{static_cast<std::uint32_t>(on - 1)});
  });
  if (out.empty())
    throw SystemError("cannot read the cgroup counter's last tasks: " + errno_string(errno));
  return out;
}

BpfCgroupCounts BpfCgroupCounter::read() {
  flush();
  BpfCgroupCounts out;
  for (std::size_t cg = 0; cg < n_cgroups_; ++cg) out.per_cgroup.push_back(read_slots(cg));
  out.uncharged = read_slots(n_cgroups_);  // the slot after the last cgroup's
  out.unreported_switches = __atomic_load_n(&skel_->bss->unreported_switches, __ATOMIC_RELAXED);
  out.read_errors = __atomic_load_n(&skel_->bss->read_errors, __ATOMIC_RELAXED);
  return out;
}

}  // namespace pmcprof

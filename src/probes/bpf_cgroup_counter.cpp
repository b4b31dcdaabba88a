#include "pmcprof/probes/bpf_cgroup_counter.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "pmcprof.h"
#include "pmcprof.skel.h"
#include "pmcprof/probes/percpu_map.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

struct CgroupCount {  // struct cgroup_count in bpf/pmcprof.bpf.c
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

BpfCgroupCounter BpfCgroupCounter::start(const CounterSet& counters,
                                         const std::vector<Cgroup>& cgroups) {
  check_bpf_cgroup_limits(cgroups);
  std::vector<std::uint64_t> ids;
  for (const auto& cg : cgroups) ids.push_back(cg.id);
  BpfConfig config;
  config.count_cgroup_ids = ids;
  PmcprofObject obj = PmcprofObject::load(counters, config);
  std::vector<int> cpus;
  for (std::size_t i = 0; i < counters.target().instance_count(); ++i)
    cpus.push_back(counters.target().instance_id(i));
  BpfCgroupCounter c(std::move(obj), ids.size(), counters.event_count(), std::move(cpus));
  c.flush();  // prime every CPU's last reading before charging anything
  bpf_link* link = bpf_program__attach(c.object_.skel()->progs.cgroup_switch);
  if (!link)
    throw UserError("cannot attach the cgroup counting hook (sched_switch): " + errno_string(errno),
                    "use --cgroup-backend fd; 'pmcprof doctor' shows what this kernel allows",
                    kExitFailure);
  c.link_.reset(link);
  return c;
}

void BpfCgroupCounter::flush() {
  const int prog_fd = bpf_program__fd(object_.skel()->progs.cgroup_flush);
  for (int cpu : cpus_) {
    LIBBPF_OPTS(bpf_test_run_opts, opts, .flags = BPF_F_TEST_RUN_ON_CPU,
                .cpu = static_cast<__u32>(cpu));
    // A CPU whose flush fails would hand back stale counts as current: refuse to read.
    if (bpf_prog_test_run_opts(prog_fd, &opts) != 0)
      throw SystemError("flushing the BPF cgroup counts on CPU " + std::to_string(cpu) +
                        " failed: " + errno_string(errno));
  }
}

std::vector<std::vector<RawCount>> BpfCgroupCounter::read() {
  flush();
  std::vector<std::vector<RawCount>> out(n_cgroups_, std::vector<RawCount>(n_counter_events_));
  const int fd = bpf_map__fd(object_.skel()->maps.cgroup_counts);
  const std::size_t n_bpf = object_.bpf_event_count();
  for (std::size_t cg = 0; cg < n_cgroups_; ++cg) {
    for (std::size_t b = 0; b < n_bpf; ++b) {
      const __u32 slot = static_cast<__u32>(cg * n_bpf + b);
      RawCount& sum = out[cg][object_.counter_event(b)];
      for_each_cpu_value<CgroupCount>(fd, &slot, [&](const CgroupCount& v) {
        sum += RawCount{v.counter, v.enabled, v.running};
      });
    }
  }
  return out;
}

}  // namespace pmcprof

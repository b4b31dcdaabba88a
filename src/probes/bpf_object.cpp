#include "pmcprof/probes/bpf_object.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "pmcprof.h"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

BpfEventMap BpfEventMap::of(const CounterSet& counters) {
  if (!counters.target().system_wide_target())
    throw SystemError("the BPF counter array needs per-CPU counters (system-wide)");
  BpfEventMap m;
  for (std::size_t e = 0; e < counters.event_count(); ++e)
    if (counters.supported(e)) m.events_.push_back(e);
  if (m.events_.size() > PMCPROF_MAX_EVENTS)
    throw UserError("at most " + std::to_string(PMCPROF_MAX_EVENTS) +
                        " events can be read from BPF in one run, got " +
                        std::to_string(m.events_.size()),
                    "split the events over several runs");
  m.n_cpus_ = possible_cpu_count();
  return m;
}

std::size_t BpfEventMap::slots() const {
  return std::max<std::size_t>(1, events_.size()) * static_cast<std::size_t>(n_cpus_);
}

void BpfEventMap::fill(int map_fd, const CounterSet& counters) const {
  const CounterTarget& target = counters.target();
  for (std::size_t b = 0; b < events_.size(); ++b) {
    for (std::size_t i = 0; i < target.instance_count(); ++i) {
      const int fd = counters.fd(events_[b], i);
      if (fd < 0) continue;
      const __u32 slot = static_cast<__u32>(b * static_cast<std::size_t>(n_cpus_) +
                                            static_cast<std::size_t>(target.instance_id(i)));
      const __u32 value = static_cast<__u32>(fd);
      if (bpf_map_update_elem(map_fd, &slot, &value, BPF_ANY) != 0)
        throw SystemError("cannot put a counter fd into the BPF counter array: " +
                          errno_string(errno));
    }
  }
}

void check_bpf_load(int err, const std::string& object) {
  if (err == 0) return;
  std::string why = errno_string(-err);
  if (const auto verdict = LibbpfQuiet::last_verdict(); !verdict.empty())
    why += " (the verifier says: " + verdict + ")";
  throw SystemError("cannot load the " + object + " BPF programs: " + why,
                    "run with -v for libbpf's full log; 'pmcprof doctor' shows what this "
                    "kernel allows");
}

BpfLink check_link(bpf_link* link, const std::string& what, const std::string& hint) {
  if (!link) {
    const int err = errno;
    throw UserError("cannot attach " + what + ": " + errno_string(err),
                    hint.empty() ? "'pmcprof doctor' shows what this kernel allows" : hint,
                    kExitFailure);
  }
  return BpfLink(link);
}

void size_map(bpf_map* map, std::size_t entries) {
  if (int err = bpf_map__set_max_entries(map, static_cast<__u32>(entries)); err != 0)
    throw SystemError(std::string("cannot size BPF map ") + bpf_map__name(map) + ": " +
                      errno_string(-err));
}

}  // namespace pmcprof

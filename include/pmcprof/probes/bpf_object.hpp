#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/platform/libbpf_support.hpp"

struct bpf_map;
struct bpf_link;

namespace pmcprof {

// Owns a generated BPF skeleton (bpftool gen skeleton): destroying it unloads the object.
// One BPF object per job: func (function mode), cgroup_count (per-cgroup BPF backend),
// counter_read (the counter bridge self-test), each with only the maps its run needs.
template <typename Skel, void (*Destroy)(Skel*)>
struct SkeletonDeleter {
  void operator()(Skel* s) const { Destroy(s); }
};
template <typename Skel, void (*Destroy)(Skel*)>
using Skeleton = std::unique_ptr<Skel, SkeletonDeleter<Skel, Destroy>>;

// Which events of a CounterSet a BPF object reads (the ones the kernel accepted), and where
// their per-CPU fds go in its counter PERF_EVENT_ARRAY: slot = bpf event * n_cpus + cpu
// (bpf_perf_event_read_value reads only counters of the CPU it runs on).
class BpfEventMap {
 public:
  // Throws UserError when more than PMCPROF_MAX_EVENTS events would be read; the counters
  // must be per CPU (system-wide).
  static BpfEventMap of(const CounterSet& counters);

  std::size_t size() const { return events_.size(); }
  std::size_t counter_event(std::size_t bpf_index) const { return events_[bpf_index]; }
  int n_cpus() const { return n_cpus_; }
  std::size_t slots() const;  // at least 1: a map cannot be empty
  // Puts every counter fd into the PERF_EVENT_ARRAY `map_fd`. Throws SystemError.
  void fill(int map_fd, const CounterSet& counters) const;

 private:
  std::vector<std::size_t> events_;
  int n_cpus_ = 0;
};

// Throws SystemError for a failed skeleton load: the errno and the verifier's verdict.
void check_bpf_load(int err, const std::string& object);

// Throws UserError (exit 1) for a failed attach (`link` null): what, errno, hint.
BpfLink check_link(bpf_link* link, const std::string& what, const std::string& hint = {});

// Sets max_entries of a map before load; throws SystemError on failure.
void size_map(bpf_map* map, std::size_t entries);

}  // namespace pmcprof

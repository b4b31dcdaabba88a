#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "pmcprof/counters/scaling.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/fd.hpp"

namespace pmcprof {

// Where counters are opened: one per CPU (system-wide), or one per thread.
struct CounterTarget {
  enum class Kind { cpus, threads };
  Kind kind = Kind::cpus;
  std::vector<int> cpus;        // Kind::cpus: the CPUs to count on
  std::vector<pid_t> threads;   // Kind::threads: the tids to count (cpu = -1)
  bool inherit = false;         // also count children created after the counter
  bool enable_on_exec = false;  // start counting when the target calls exec (workloads)
  int cgroup_fd = -1;           // Kind::cpus: count only tasks of this cgroup v2 (and below)

  static CounterTarget system_wide(std::vector<int> cpus);
  static CounterTarget cgroup(std::vector<int> cpus, int cgroup_fd);
  static CounterTarget tasks(std::vector<pid_t> tids, bool inherit, bool enable_on_exec);
  bool system_wide_target() const { return kind == Kind::cpus; }
  std::size_t instance_count() const { return kind == Kind::cpus ? cpus.size() : threads.size(); }
  int instance_id(std::size_t i) const { return kind == Kind::cpus ? cpus[i] : threads[i]; }
};

// The counters of one run: every event of every group, opened on every instance (CPU or
// thread). A group's first event is its leader, and a group is read in one read() with
// PERF_FORMAT_GROUP. Events the kernel refuses are kept, marked unsupported, so the report can
// say <not supported> while the others count; as in perf, a group whose leader the kernel
// refuses cannot be counted (GroupError), and a weak group ({...}:W) one of whose members
// does not fit on the PMU with the others is opened as separate events instead.
// On a heterogeneous machine a per-CPU event of core PMUs is opened only on their CPUs (a
// group where its leader is), with the attr of the PMU of each CPU (attr_on_cpu); a task's
// events must be of one core PMU each (split_per_core_pmu).
class CounterSet {
 public:
  static CounterSet open(const std::vector<ResolvedGroup>& groups, const CounterTarget& target);

  CounterSet(CounterSet&&) = default;
  CounterSet& operator=(CounterSet&&) = default;

  std::size_t event_count() const { return events_.size(); }
  // The index of the event's group in the groups it was opened from.
  std::size_t event_group(std::size_t i) const { return events_[i].group; }
  // Weak groups that did not fit and were opened as separate events (their first events).
  const std::vector<std::string>& weak_fallbacks() const { return weak_fallbacks_; }
  const ResolvedEvent& event(std::size_t i) const { return events_[i].event; }
  bool supported(std::size_t i) const { return events_[i].supported; }
  // Why the kernel refused an unsupported event (strerror of its errno).
  const std::string& failure(std::size_t i) const { return events_[i].failure; }
  const CounterTarget& target() const { return target_; }
  std::size_t open_fd_count() const;
  // The counter fd of event i on instance j, -1 if not open. Used to fill BPF maps.
  int fd(std::size_t event, std::size_t instance) const;
  // Whether event i counts on instance j at all: false on the CPUs of other core PMUs than its
  // own (its counts there are no measurement, not even a 0).
  bool counts_on(std::size_t event, std::size_t instance) const {
    return events_[event].placed[instance];
  }

  void enable();
  void disable();

  // Cumulative counts, [event][instance]. Unsupported events read as all zero.
  std::vector<std::vector<RawCount>> read() const;

 private:
  struct Event {
    ResolvedEvent event;
    std::size_t group = 0;
    bool supported = false;
    std::string failure;
    std::vector<Fd> fds;             // per instance
    std::vector<std::uint64_t> ids;  // PERF_EVENT_IOC_ID per instance
    std::vector<bool> placed;        // per instance: counts there (its core PMU's CPUs)
  };
  struct Group {
    std::vector<std::size_t> members;      // indexes into events_
    std::vector<int> leader_per_instance;  // event index of the leader, -1 if none opened
  };

  CounterSet() = default;
  // How a group may fall back to separate events.
  struct Fallback {
    bool weak = false;     // a member does not fit beside the others
    bool refused = false;  // the kernel refuses the leader (metric groups)
  };
  // Opens group g on every instance; a group that falls back is split into singles.
  void open_group(std::size_t g, Fallback fallback);
  // Opens one group on one instance. Returns false when the group falls back: a member of a
  // weak group did not fit (EINVAL/EBADF/ENOSPC beside a leader that opened), or the leader
  // was refused and `fallback.refused`. The caller then splits the group.
  bool open_group_on(std::size_t g, std::size_t instance, Fallback fallback);
  // perf_event_open with pmcprof's fallbacks (user-only without privilege, lower precise
  // levels for :P). Returns the fd or -errno.
  int open_event(Event& e, std::size_t instance, int group_fd, bool leader);
  void record_failure(Event& e, int err, bool leader, std::size_t group_size);
  void read_group(const Group& g, std::size_t instance,
                  std::vector<std::vector<RawCount>>& out) const;

  CounterTarget target_;
  std::vector<Event> events_;
  std::vector<Group> groups_;
  std::vector<std::string> weak_fallbacks_;
};

// A group the kernel cannot count at all: its leader was refused (exit 255, as perf).
class GroupError : public Error {
 public:
  GroupError(const std::string& what, std::string hint)
      : Error(what, std::move(hint), kExitGroup) {}
};

// perf_event_attr flags every pmcprof counter carries, given its role in a group.
void prepare_counter_attr(perf_event_attr& attr, bool leader, const CounterTarget& target);

}  // namespace pmcprof

#include "pmcprof/counters/counter_set.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

#include "pmcprof/counters/cgroups.hpp"
#include "pmcprof/events/core_pmu_events.hpp"
#include "pmcprof/platform/perf_event.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

namespace {

// The file that enables controllers below the cgroup v2 root.
std::string root_subtree_control() {
  try {
    return cgroup2_mount_point() + "/cgroup.subtree_control";
  } catch (const Error&) {
    return "/sys/fs/cgroup/cgroup.subtree_control";
  }
}

constexpr std::uint64_t kReadFormat = PERF_FORMAT_TOTAL_TIME_ENABLED |
                                      PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID |
                                      PERF_FORMAT_GROUP;

// Layout of a PERF_FORMAT_GROUP read with both times and ids.
struct GroupReadHeader {
  std::uint64_t nr;
  std::uint64_t time_enabled;
  std::uint64_t time_running;
};
struct GroupReadValue {
  std::uint64_t value;
  std::uint64_t id;
};

}  // namespace

CounterTarget CounterTarget::system_wide(std::vector<int> cpus) {
  CounterTarget t;
  t.kind = Kind::cpus;
  t.cpus = std::move(cpus);
  return t;
}

CounterTarget CounterTarget::cgroup(std::vector<int> cpus, int cgroup_fd) {
  CounterTarget t = system_wide(std::move(cpus));
  t.cgroup_fd = cgroup_fd;
  return t;
}

CounterTarget CounterTarget::tasks(std::vector<pid_t> tids, bool inherit, bool enable_on_exec) {
  CounterTarget t;
  t.kind = Kind::threads;
  t.threads = std::move(tids);
  t.inherit = inherit;
  t.enable_on_exec = enable_on_exec;
  return t;
}

void prepare_counter_attr(perf_event_attr& attr, bool leader, const CounterTarget& target) {
  attr.size = sizeof(attr);
  attr.read_format = kReadFormat;
  // Leaders start disabled and are enabled together (or at exec); members follow their leader.
  attr.disabled = leader ? 1 : 0;
  attr.inherit = target.inherit ? 1 : 0;
  attr.enable_on_exec = (leader && target.enable_on_exec) ? 1 : 0;
  attr.sample_period = 0;
  attr.sample_type = 0;
}

CounterSet CounterSet::open(const std::vector<ResolvedGroup>& groups, const CounterTarget& target) {
  CounterSet set;
  set.target_ = target;
  const std::size_t instances = target.instance_count();
  std::vector<Fallback> fallbacks;  // per perf group (groups_)
  for (std::size_t g = 0; g < groups.size(); ++g) {
    // Events listed without braces are perf groups of one, even when they share a group
    // index (a metric's events with --metric-no-group).
    const bool together = groups[g].grouped || groups[g].events.size() == 1;
    Group group;
    for (const auto& ev : groups[g].events) {
      // With cpu -1 the kernel opens an event on one PMU: an event of several core PMUs is
      // split per PMU before it counts a task (a programming error otherwise).
      if (!target.system_wide_target() && ev.core_pmus.size() > 1)
        throw SystemError("internal: " + ev.display_name() +
                          " spans several core PMUs and must be split per PMU to count a task");
      group.members.push_back(set.events_.size());
      Event e;
      e.event = ev;
      e.group = g;
      e.fds.resize(instances);
      e.ids.resize(instances);
      e.placed.assign(instances, true);
      set.events_.push_back(std::move(e));
      if (!together) {
        group.leader_per_instance.assign(instances, -1);
        set.groups_.push_back(std::move(group));
        fallbacks.push_back({});
        group = Group{};
      }
    }
    if (together) {
      group.leader_per_instance.assign(instances, -1);
      set.groups_.push_back(std::move(group));
      fallbacks.push_back({groups[g].weak || groups[g].metric, groups[g].metric});
    }
  }
  // Ask for enough fds up front; EMFILE half-way through would leave a partial set.
  const std::uint64_t needed = set.events_.size() * instances + 64;
  raise_nofile_limit(needed);
  // groups_ grows when a weak group is split: open the groups made above.
  const std::size_t n_groups = set.groups_.size();
  for (std::size_t g = 0; g < n_groups; ++g) set.open_group(g, fallbacks[g]);
  return set;
}

void CounterSet::open_group(std::size_t g, Fallback fallback) {
  const std::size_t instances = target_.instance_count();
  for (std::size_t i = 0; i < instances; ++i) {
    if (open_group_on(g, i, fallback)) continue;
    // A weak group that does not fit: close what it opened and count its events one by one.
    weak_fallbacks_.push_back(events_[groups_[g].members.front()].event.display_name());
    std::vector<std::size_t> members = groups_[g].members;
    for (std::size_t idx : members) {
      for (auto& fd : events_[idx].fds) fd.reset();
      events_[idx].supported = false;
      events_[idx].failure.clear();
    }
    groups_[g].members = {members.front()};
    groups_[g].leader_per_instance.assign(instances, -1);
    for (std::size_t k = 0; k < members.size(); ++k) {
      std::size_t single = g;
      if (k > 0) {
        single = groups_.size();
        groups_.push_back({{members[k]}, std::vector<int>(instances, -1)});
      }
      for (std::size_t j = 0; j < instances; ++j) open_group_on(single, j, {});
    }
    return;
  }
}

int CounterSet::open_event(Event& e, std::size_t instance, int group_fd, bool leader) {
  const bool per_cpu = target_.kind == CounterTarget::Kind::cpus;
  const int cpu = per_cpu ? target_.cpus[instance] : -1;
  // A cgroup target passes the cgroup's directory fd as "pid" (PERF_FLAG_PID_CGROUP).
  const bool cgroup = per_cpu && target_.cgroup_fd >= 0;
  const pid_t pid = cgroup ? target_.cgroup_fd : per_cpu ? -1 : target_.threads[instance];
  const unsigned long flags = cgroup ? PERF_FLAG_PID_CGROUP : 0;
  perf_event_attr attr = attr_on_cpu(e.event, cpu);
  prepare_counter_attr(attr, leader, target_);
  int fd = sys_perf_event_open(attr, pid, cpu, group_fd, flags);
  // A hardware event with a core PMU's type in config[63:32] needs a kernel whose PMU takes
  // the extended type (Arm: 6.6); before, ENOENT. On a CPU, the plain event goes to the PMU
  // that covers that CPU, which is the one meant (it is opened on its CPUs only).
  if (fd == -ENOENT && per_cpu && (attr.config >> PERF_PMU_TYPE_SHIFT) != 0 &&
      (attr.type == PERF_TYPE_HARDWARE || attr.type == PERF_TYPE_HW_CACHE)) {
    attr.config = generic_config(attr);
    fd = sys_perf_event_open(attr, pid, cpu, group_fd, flags);
  }
  // :P asks for the highest precise level the PMU takes: step down until one opens.
  while (fd < 0 && e.event.spec.modifiers.precise_max && attr.precise_ip > 0 &&
         classify_open_errno(-fd) == OpenFailure::not_supported) {
    --attr.precise_ip;
    fd = sys_perf_event_open(attr, pid, cpu, group_fd, flags);
    if (fd >= 0) e.event.attr.precise_ip = attr.precise_ip;
  }
  if (fd == -EACCES && !per_cpu && !e.event.spec.modifiers.restricts_privilege()) {
    // Like perf stat: without CAP_PERFMON and with perf_event_paranoid >= 2, a task may
    // still count its own user space. Count that and say so in the name (":u").
    attr.exclude_kernel = attr.exclude_hv = 1;
    fd = sys_perf_event_open(attr, pid, cpu, group_fd, flags);
    if (fd >= 0) {
      e.event.attr.exclude_kernel = e.event.attr.exclude_hv = 1;
      e.event.spec.text += e.event.spec.modifiers.empty() ? ":u" : "u";
      e.event.spec.modifiers.text += "u";  // cpu_core/cycles/u for an event split per PMU
    }
  }
  return fd;
}

void CounterSet::record_failure(Event& e, int err, bool leader, std::size_t group_size) {
  const bool per_cpu = target_.kind == CounterTarget::Kind::cpus;
  const std::string& name = e.event.display_name();
  const std::size_t fds_needed = events_.size() * target_.instance_count() + 64;
  // A software event always exists: ENOENT for one in a cgroup is the cgroup's, which has no
  // perf_event state (css). Linux 5.10 gives a cgroup none while no controller was ever
  // enabled at the root (seen in the 5.10 guest; systemd enables some at boot, a bare init
  // does not). Every event would read <not supported> for a reason no event has.
  if (err == ENOENT && target_.cgroup_fd >= 0 && e.event.attr.type == PERF_TYPE_SOFTWARE)
    throw UserError(
        "the kernel keeps no perf_event state for this cgroup (ENOENT opening '" + name + "')",
        "--cgroup-backend bpf needs none; or enable a controller at the cgroup root once, as "
        "systemd does at boot: echo +pids > " +
            root_subtree_control(),
        kExitFailure);
  switch (classify_open_errno(err)) {
    case OpenFailure::not_supported:
    case OpenFailure::busy:
    case OpenFailure::other:
      if (leader && group_size > 1)
        throw GroupError("cannot count the group led by '" + name + "': the kernel refuses " +
                             name + " (" + errno_string(err) + ")",
                         "count the events without braces (each then says whether it counts), "
                         "or put a countable event first");
      if (e.failure.empty()) e.failure = errno_string(err);
      return;
    case OpenFailure::permission:
      throw UserError(explain_permission_denied(name, per_cpu, err),
                      "run as root, or grant CAP_PERFMON: setcap cap_perfmon,cap_bpf+ep pmcprof",
                      kExitFailure);
    case OpenFailure::too_many_files:
      throw UserError("out of file descriptors opening '" + name + "': this run needs " +
                          std::to_string(fds_needed) + " (events x " +
                          (per_cpu ? "CPUs" : "threads") + " + 64)",
                      "raise the limit: ulimit -n " + std::to_string(fds_needed), kExitFailure);
    case OpenFailure::no_such_process:
      // One of many threads (-p, --per-thread) exited between listing and opening: it has
      // nothing left to count. A single target that is gone cannot be counted at all.
      if (target_.kind == CounterTarget::Kind::threads && target_.threads.size() > 1) return;
      throw UserError("a counted thread exited before counting started", {}, kExitFailure);
  }
}

bool CounterSet::open_group_on(std::size_t g, std::size_t instance, Fallback fallback) {
  Group& group = groups_[g];
  // A group counts where its leader's core PMU does (its members are of the same PMU, or of
  // none: software events); elsewhere it is not opened at all.
  const int cpu = target_.kind == CounterTarget::Kind::cpus ? target_.cpus[instance] : -1;
  const bool here = counts_on_cpu(events_[group.members.front()].event, cpu);
  for (std::size_t idx : group.members) events_[idx].placed[instance] = here;
  if (!here) return true;
  for (std::size_t idx : group.members) {
    Event& e = events_[idx];
    const int leader = group.leader_per_instance[instance];
    const bool is_leader = idx == group.members.front();
    // A member whose leader was refused has nothing to join (single events only: a refused
    // leader of a real group throws).
    const int group_fd = is_leader || leader < 0 ? -1 : events_[leader].fds[instance].get();
    const int fd = open_event(e, instance, group_fd, group_fd < 0);
    if (fd >= 0) {
      e.fds[instance].reset(fd);
      e.supported = true;
      if (ioctl(fd, PERF_EVENT_IOC_ID, &e.ids[instance]) != 0) e.ids[instance] = 0;
      if (leader < 0) group.leader_per_instance[instance] = static_cast<int>(idx);
      continue;
    }
    const int err = -fd;
    if (fallback.weak && !is_leader && leader >= 0 &&
        (err == EINVAL || err == EBADF || err == ENOSPC))
      return false;
    if (fallback.refused && is_leader && group.members.size() > 1 &&
        classify_open_errno(err) == OpenFailure::not_supported)
      return false;
    record_failure(e, err, is_leader, group.members.size());
  }
  return true;
}

std::size_t CounterSet::open_fd_count() const {
  std::size_t n = 0;
  for (const auto& e : events_)
    for (const auto& fd : e.fds) n += fd.valid();
  return n;
}

int CounterSet::fd(std::size_t event, std::size_t instance) const {
  return events_[event].fds[instance].get();
}

void CounterSet::enable() {
  for (const auto& g : groups_)
    for (std::size_t i = 0; i < g.leader_per_instance.size(); ++i)
      if (int l = g.leader_per_instance[i]; l >= 0)
        ioctl(events_[l].fds[i].get(), PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
}

void CounterSet::disable() {
  for (const auto& g : groups_)
    for (std::size_t i = 0; i < g.leader_per_instance.size(); ++i)
      if (int l = g.leader_per_instance[i]; l >= 0)
        ioctl(events_[l].fds[i].get(), PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
}

void CounterSet::read_group(const Group& g, std::size_t instance,
                            std::vector<std::vector<RawCount>>& out) const {
  const int leader = g.leader_per_instance[instance];
  if (leader < 0) return;
  std::vector<std::uint64_t> buf(3 + 2 * g.members.size());
  ssize_t n =
      ::read(events_[leader].fds[instance].get(), buf.data(), buf.size() * sizeof(std::uint64_t));
  if (n < static_cast<ssize_t>(sizeof(GroupReadHeader))) return;
  const auto* hdr = reinterpret_cast<const GroupReadHeader*>(buf.data());
  const auto* vals = reinterpret_cast<const GroupReadValue*>(buf.data() + 3);
  for (std::uint64_t k = 0; k < hdr->nr && k < g.members.size(); ++k) {
    for (std::size_t idx : g.members) {
      if (!events_[idx].fds[instance].valid() || events_[idx].ids[instance] != vals[k].id) continue;
      out[idx][instance] = {vals[k].value, hdr->time_enabled, hdr->time_running};
    }
  }
}

std::vector<std::vector<RawCount>> CounterSet::read() const {
  std::vector<std::vector<RawCount>> out(events_.size(),
                                         std::vector<RawCount>(target_.instance_count()));
  for (const auto& g : groups_)
    for (std::size_t i = 0; i < target_.instance_count(); ++i) read_group(g, i, out);
  return out;
}

}  // namespace pmcprof

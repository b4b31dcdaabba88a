#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pmcprof/counters/cgroups.hpp"
#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/probes/bpf_cgroup_counter.hpp"
#include "pmcprof/run/counting_session.hpp"

namespace pmcprof {

// Per-cgroup counting, fd backend: one system-wide counter set per cgroup, each counter
// opened with PERF_FLAG_PID_CGROUP (the kernel counts the cgroup's tasks and its descendants').
class CgroupFdSession : public CountingSessionBase {
 public:
  CgroupFdSession(const CountingPlan& plan, ReportRenderer* intervals);

 protected:
  void enable() override;
  void disable() override;
  Snapshot read() override;
  std::vector<CounterRow> rows(const Snapshot& snap) const override;
  void mark_removed(std::vector<CounterRow>& rows) const override;
  std::string verbose_detail() const override;

 private:
  std::vector<CounterSet> sets_;  // one per plan_.cgroups entry
};

// Per-cgroup counting, BPF backend: one system-wide counter set, read in BPF at every context
// switch and charged to the running task's cgroup and its counted ancestors.
class CgroupBpfSession : public CountingSessionBase {
 public:
  CgroupBpfSession(const CountingPlan& plan, ReportRenderer* intervals);

 protected:
  void enable() override;
  void disable() override;
  Snapshot read() override;
  std::vector<CounterRow> rows(const Snapshot& snap) const override;
  void add_extras(CountingReport& r, const Snapshot& snap) const override;
  void mark_removed(std::vector<CounterRow>& rows) const override;
  std::string verbose_detail() const override;

 private:
  CounterSet set_;
  std::optional<BpfCgroupCounter> bpf_;
  // The read made when counting stopped: final, so later reads return it.
  std::optional<BpfCgroupCounts> last_;
};

// Rows of a per-cgroup snapshot: scope g is plan.cgroups[g].
std::vector<CounterRow> cgroup_rows(const std::vector<Cgroup>& cgroups, const Snapshot& snap,
                                    const std::vector<const CounterSet*>& sets, bool summed);
// Marks the rows of cgroups that no longer exist (removed while counting).
void mark_removed_cgroups(const std::vector<Cgroup>& cgroups, std::vector<CounterRow>& rows);

}  // namespace pmcprof

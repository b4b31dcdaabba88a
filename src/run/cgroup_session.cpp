#include "pmcprof/run/cgroup_session.hpp"

#include <sys/stat.h>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/report/aggregate.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/progress.hpp"

namespace pmcprof {

namespace {

std::size_t event_count(const CountingPlan& plan) {
  std::size_t n = 0;
  for (const auto& g : plan.groups) n += g.events.size();
  return n;
}

std::string detail(const CountingPlan& plan, CgroupBackend backend) {
  return ", " + std::to_string(plan.cgroups.size()) + " cgroup(s), backend " + to_string(backend);
}

}  // namespace

std::vector<CounterRow> cgroup_rows(const std::vector<Cgroup>& cgroups, const Snapshot& snap,
                                    const std::vector<const CounterSet*>& sets, bool summed) {
  std::vector<CounterRow> rows;
  for (std::size_t g = 0; g < cgroups.size(); ++g) {
    const CounterSet& set = *sets[sets.size() == 1 ? 0 : g];
    for (auto& row : aggregate_rows(series_of(set, snap[g], summed), false)) {
      row.cgroup = cgroups[g].path;
      row.cgroup_id = cgroups[g].id;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

void mark_removed_cgroups(const std::vector<Cgroup>& cgroups, std::vector<CounterRow>& rows) {
  for (auto& row : rows) {
    if (!row.cgroup_id) continue;
    for (const auto& cg : cgroups) {
      if (cg.id != *row.cgroup_id) continue;
      struct stat st {};
      row.cgroup_removed = ::stat(cg.abs_path.c_str(), &st) != 0 || st.st_ino != cg.id;
    }
  }
}

// ---- fd backend ----

CgroupFdSession::CgroupFdSession(const CountingPlan& plan, ReportRenderer* intervals)
    : CountingSessionBase(plan, intervals) {
  base_.cgroup_backend = CgroupBackend::fd;
  raise_nofile_limit(plan.cgroups.size() * plan.cpus.size() * event_count(plan) + 64);
  Progress progress("opening cgroup counters", plan.cgroups.size(), plan.quiet);
  for (const auto& cg : plan.cgroups) {
    Fd dir = cg.open_dir();  // the events keep the cgroup: the fd can go right after
    try {
      sets_.push_back(CounterSet::open(plan.groups, CounterTarget::cgroup(plan.cpus, dir.get())));
    } catch (const UserError& e) {
      throw UserError("cgroup " + cg.path + ": " + e.what(), e.hint(), e.exit_code());
    }
    progress.step(sets_.size());
  }
}

void CgroupFdSession::enable() {
  for (auto& s : sets_) s.enable();
}

void CgroupFdSession::disable() {
  for (auto& s : sets_) s.disable();
}

Snapshot CgroupFdSession::read() {
  Snapshot snap;
  for (const auto& s : sets_) snap.push_back(s.read());
  return snap;
}

std::vector<CounterRow> CgroupFdSession::rows(const Snapshot& snap) const {
  std::vector<const CounterSet*> sets;
  for (const auto& s : sets_) sets.push_back(&s);
  return cgroup_rows(plan_.cgroups, snap, sets, false);
}

void CgroupFdSession::mark_removed(std::vector<CounterRow>& rows) const {
  mark_removed_cgroups(plan_.cgroups, rows);
}

std::string CgroupFdSession::verbose_detail() const {
  return detail(plan_, CgroupBackend::fd);
}

// ---- BPF backend ----

CgroupBpfSession::CgroupBpfSession(const CountingPlan& plan, ReportRenderer* intervals)
    : CountingSessionBase(plan, intervals),
      set_(CounterSet::open(plan.groups, CounterTarget::system_wide(plan.cpus))) {
  base_.cgroup_backend = CgroupBackend::bpf;
}

void CgroupBpfSession::enable() {
  set_.enable();
  bpf_.emplace(BpfCgroupCounter::start(set_, plan_.cgroups));
}

void CgroupBpfSession::disable() {
  if (bpf_) last_ = bpf_->read();  // charge the last stretch before counters stop
  set_.disable();
}

// The snapshot's scopes: one per cgroup, then the uncharged stretches' counts per event, then
// two counts (unreported switches, read errors) as one-value events: so intervals and
// totals come from the same snapshot arithmetic as the cgroups'.
Snapshot CgroupBpfSession::read() {
  // After disable() the counts are final: the read made there is the snapshot.
  const BpfCgroupCounts counts = last_ ? *last_ : bpf_->read();
  Snapshot snap;
  auto scope_of = [](const std::vector<RawCount>& events) {
    std::vector<std::vector<RawCount>> scope;
    for (const auto& c : events) scope.push_back({c});
    return scope;
  };
  for (const auto& events : counts.per_cgroup) snap.push_back(scope_of(events));
  snap.push_back(scope_of(counts.uncharged));
  snap.push_back(
      scope_of({RawCount{counts.unreported_switches, 0, 0}, RawCount{counts.read_errors, 0, 0}}));
  return snap;
}

std::vector<CounterRow> CgroupBpfSession::rows(const Snapshot& snap) const {
  return cgroup_rows(plan_.cgroups, snap, {&set_}, true);
}

void CgroupBpfSession::add_extras(CountingReport& r, const Snapshot& snap) const {
  const std::size_t n = plan_.cgroups.size();
  UnchargedCounts u;
  u.counters = aggregate_rows(series_of(set_, snap.at(n), true), false);
  // Nothing set aside is a measured 0, not a counter that did not run.
  for (auto& row : u.counters) {
    if (row.status != CounterStatus::not_counted) continue;
    row.status = CounterStatus::ok;
    row.running_pct = 100;
  }
  u.unreported_switches = snap.at(n + 1).at(0).at(0).value;
  u.read_errors = snap.at(n + 1).at(1).at(0).value;
  r.cgroup_uncharged = std::move(u);
}

void CgroupBpfSession::mark_removed(std::vector<CounterRow>& rows) const {
  mark_removed_cgroups(plan_.cgroups, rows);
}

std::string CgroupBpfSession::verbose_detail() const {
  return detail(plan_, CgroupBackend::bpf);
}

}  // namespace pmcprof

#include "pmcprof/stream/func_stats.hpp"

#include "pmcprof.h"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

void FuncStats::add(const CallRecord& r) {
  ++calls;
  slept += r.slept();
  migrated += r.migrated();
  multiplexed += r.multiplexed();
  wall_sum += r.wall_ns;
  oncpu_sum += r.oncpu_ns;
  wall.add(r.wall_ns);
  oncpu.add(r.oncpu_ns);
  if (r.not_counted()) {
    ++not_counted;
    return;
  }
  for (std::size_t i = 0; i < sum.size() && i < r.delta.size(); ++i) {
    sum[i] += r.delta[i];
    hist[i].add(r.delta[i]);
  }
}

void FuncStats::add_kernel(const pmcprof_agg& a) {
  calls += a.calls;
  not_counted += a.not_counted;
  slept += a.slept;
  migrated += a.migrated;
  multiplexed += a.multiplexed;
  wall_sum += a.wall_sum;
  oncpu_sum += a.oncpu_sum;
  for (std::uint32_t b = 0; b < PMCPROF_HIST_BUCKETS; ++b) {
    if (a.wall_hist[b]) wall.add_bucket(b, a.wall_hist[b]);
    if (a.oncpu_hist[b]) oncpu.add_bucket(b, a.oncpu_hist[b]);
  }
  for (std::size_t i = 0; i < sum.size() && i < PMCPROF_MAX_EVENTS; ++i) {
    sum[i] += a.sum[i];
    for (std::uint32_t b = 0; b < PMCPROF_HIST_BUCKETS; ++b)
      if (a.hist[i][b]) hist[i].add_bucket(b, a.hist[i][b]);
  }
}

void FuncStats::merge(const FuncStats& o) {
  calls += o.calls;
  not_counted += o.not_counted;
  slept += o.slept;
  migrated += o.migrated;
  multiplexed += o.multiplexed;
  wall_sum += o.wall_sum;
  oncpu_sum += o.oncpu_sum;
  wall.merge(o.wall);
  oncpu.merge(o.oncpu);
  for (std::size_t i = 0; i < sum.size() && i < o.sum.size(); ++i) {
    sum[i] += o.sum[i];
    hist[i].merge(o.hist[i]);
  }
}

void FuncStats::subtract(const FuncStats& o) {
  auto sub = [](std::uint64_t& a, std::uint64_t b) { a = a > b ? a - b : 0; };
  sub(calls, o.calls);
  sub(not_counted, o.not_counted);
  sub(slept, o.slept);
  sub(migrated, o.migrated);
  sub(multiplexed, o.multiplexed);
  sub(wall_sum, o.wall_sum);
  sub(oncpu_sum, o.oncpu_sum);
  wall.subtract(o.wall);
  oncpu.subtract(o.oncpu);
  for (std::size_t i = 0; i < sum.size() && i < o.sum.size(); ++i) {
    sub(sum[i], o.sum[i]);
    hist[i].subtract(o.hist[i]);
  }
}

Breakdown parse_breakdown(const std::string& text) {
  if (text == "pid") return Breakdown::pid;
  if (text == "comm") return Breakdown::comm;
  if (text == "cpu") return Breakdown::cpu;
  if (text == "cgroup") return Breakdown::cgroup;
  throw UserError("unknown --by '" + text + "'", "use --by pid, comm, cpu or cgroup");
}

const char* to_string(Breakdown b) {
  switch (b) {
    case Breakdown::none:
      return "none";
    case Breakdown::pid:
      return "pid";
    case Breakdown::comm:
      return "comm";
    case Breakdown::cpu:
      return "cpu";
    case Breakdown::cgroup:
      return "cgroup";
  }
  return "?";
}

std::string StreamAggregator::key_of(const CallRecord& r) const {
  switch (by_) {
    case Breakdown::none:
      return {};
    case Breakdown::pid:
      return std::to_string(r.pid);
    case Breakdown::comm:
      return r.comm;
    case Breakdown::cpu:
      return std::to_string(r.cpu);
    case Breakdown::cgroup:
      return std::to_string(r.cgroup_id);
  }
  return {};
}

void StreamAggregator::add(const CallRecord& r) {
  ++records_;
  FuncKey key{r.func_id, key_of(r)};
  auto it = stats_.find(key);
  if (it == stats_.end()) it = stats_.emplace(key, FuncStats(n_events_)).first;
  it->second.add(r);
}

}  // namespace pmcprof

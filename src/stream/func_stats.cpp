#include "pmcprof/stream/func_stats.hpp"

#include <algorithm>
#include <cstddef>

#include "pmcprof.h"
#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

static_assert(sizeof(FuncScalars) == sizeof(pmcprof_agg));
static_assert(offsetof(FuncScalars, measured) == offsetof(pmcprof_agg, measured));
static_assert(offsetof(FuncScalars, scaled_sum) == offsetof(pmcprof_agg, scaled_sum));
static_assert(offsetof(FuncScalars, short_measured) == offsetof(pmcprof_agg, short_measured));
static_assert(offsetof(FuncScalars, unmeasured_oncpu) == offsetof(pmcprof_agg, unmeasured_oncpu));
static_assert(offsetof(FuncScalars, oncpu_under_floor) == offsetof(pmcprof_agg, oncpu_under_floor));
static_assert(offsetof(FuncScalars, metric_calls) == offsetof(pmcprof_agg, metric_calls));
static_assert(offsetof(FuncScalars, metric_sum_hi) == offsetof(pmcprof_agg, metric_sum_hi));
static_assert(offsetof(FuncScalars, metric_max) == offsetof(pmcprof_agg, metric_max));
static_assert(offsetof(FuncScalars, metric_den_sum) == offsetof(pmcprof_agg, metric_den_sum));
static_assert(offsetof(FuncScalars, hidden_switch) == offsetof(pmcprof_agg, hidden_switch));

namespace {

pmcprof_agg* raw(FuncScalars& s) {
  return reinterpret_cast<pmcprof_agg*>(&s);
}

}  // namespace

void FuncStats::add(const CallRecord& r) {
  // The kernel's definition of what a call contributes (bpf/pmcprof.h), then the same
  // histogram rule as its aggregate(): on-CPU time and events only for counted calls, an
  // event only where it measured the call.
  pmcprof_agg_add(raw(s), reinterpret_cast<const pmcprof_record*>(&r),
                  static_cast<__u32>(std::min<std::size_t>(n_events(), r.n_events)));
  wall.add(pmcprof_nonneg(r.wall_ns));
  if (r.not_counted()) return;
  oncpu.add(pmcprof_nonneg(r.oncpu_ns));
  for (std::size_t i = 0; i < n_events() && i < r.n_events; ++i)
    if (r.measured & (1u << i)) hist[i].add(pmcprof_nonneg(r.delta[i]));
  // Per-call metrics: the kernel's definition too (pmcprof_metric_add).
  const auto n = static_cast<__u32>(std::min<std::size_t>(n_events(), r.n_events));
  for (std::size_t m = 0; m < n_metrics() && m < kMaxCallMetrics; ++m) {
    __u64 v = 0;
    if (pmcprof_metric_add(raw(s), reinterpret_cast<const pmcprof_record*>(&r), n,
                           static_cast<__u32>(m), metrics[m].num, metrics[m].den, &v))
      metric_hist[m].add(v);
  }
}

double FuncStats::metric_sum(std::size_t m) const {
  return static_cast<double>(s.metric_sum_hi[m]) * 18446744073709551616.0 +
         static_cast<double>(s.metric_sum[m]);
}

void FuncStats::add_kernel(const KernelAggregate& k) {
  pmcprof_agg_merge(raw(s), k.agg.get());
  auto add_hist = [](Histogram& into, const std::vector<std::uint64_t>& buckets) {
    for (std::uint32_t b = 0; b < buckets.size(); ++b) into.add_bucket(b, buckets[b]);
  };
  if (k.hists.size() > PMCPROF_HIST_ONCPU) {
    add_hist(wall, k.hists[PMCPROF_HIST_WALL]);
    add_hist(oncpu, k.hists[PMCPROF_HIST_ONCPU]);
  }
  for (std::size_t i = 0; i < n_events() && PMCPROF_HIST_EVENT0 + i < k.hists.size(); ++i)
    add_hist(hist[i], k.hists[PMCPROF_HIST_EVENT0 + i]);
  for (std::size_t m = 0; m < n_metrics() && m < k.metric_hists.size(); ++m)
    add_hist(metric_hist[m], k.metric_hists[m]);
}

void FuncStats::merge(const FuncStats& o) {
  pmcprof_agg_merge(raw(s), reinterpret_cast<const pmcprof_agg*>(&o.s));
  wall.merge(o.wall);
  oncpu.merge(o.oncpu);
  for (std::size_t i = 0; i < n_events() && i < o.n_events(); ++i) hist[i].merge(o.hist[i]);
  for (std::size_t m = 0; m < n_metrics() && m < o.n_metrics(); ++m)
    metric_hist[m].merge(o.metric_hist[m]);
}

void FuncStats::subtract(const FuncStats& o) {
  auto sub = [](std::uint64_t& a, std::uint64_t b) { a = a > b ? a - b : 0; };
  // Sums of compensated (signed) values: modulo 2^64, as they were added; 0 when `o` is the
  // later snapshot (a reset, a reordered read), as every count is then.
  const bool reversed = o.s.calls > s.calls;
  auto sub_signed = [reversed](std::uint64_t& a, std::uint64_t b) { a = reversed ? 0 : a - b; };
  sub(s.calls, o.s.calls);
  sub(s.not_counted, o.s.not_counted);
  sub(s.hidden_switch, o.s.hidden_switch);
  sub(s.slept, o.s.slept);
  sub(s.migrated, o.s.migrated);
  sub(s.multiplexed, o.s.multiplexed);
  sub(s.read_errors, o.s.read_errors);
  sub_signed(s.wall_sum, o.s.wall_sum);
  sub_signed(s.oncpu_sum, o.s.oncpu_sum);
  sub(s.wall_under_floor, o.s.wall_under_floor);
  sub(s.oncpu_under_floor, o.s.oncpu_under_floor);
  wall.subtract(o.wall);
  oncpu.subtract(o.oncpu);
  // An interval's min and max are bounded by its lowest and highest bucket, and by the run's
  // exact min and max so far (this, before the subtraction): never above the run's max.
  auto bounds = [](const Histogram& h, std::uint64_t& min_inv, std::uint64_t& max) {
    const std::uint64_t run_min = min_of(min_inv), run_max = max;
    if (h.count() == 0) {
      min_inv = max = 0;
      return;
    }
    min_inv = ~std::max(static_cast<std::uint64_t>(h.lowest_value()), run_min);
    max = std::min(static_cast<std::uint64_t>(h.highest_value()), run_max);
  };
  bounds(wall, s.wall_min_inv, s.wall_max);
  bounds(oncpu, s.oncpu_min_inv, s.oncpu_max);
  for (std::size_t i = 0; i < n_events() && i < o.n_events(); ++i) {
    sub(s.measured[i], o.s.measured[i]);
    sub_signed(s.sum[i], o.s.sum[i]);
    sub(s.partial[i], o.s.partial[i]);
    sub_signed(s.scaled_sum[i], o.s.scaled_sum[i]);
    sub(s.short_measured[i], o.s.short_measured[i]);
    sub_signed(s.short_sum[i], o.s.short_sum[i]);
    sub(s.long_measured_oncpu[i], o.s.long_measured_oncpu[i]);
    sub(s.short_unmeasured[i], o.s.short_unmeasured[i]);
    sub(s.unmeasured_oncpu[i], o.s.unmeasured_oncpu[i]);
    sub(s.under_floor[i], o.s.under_floor[i]);
    hist[i].subtract(o.hist[i]);
    bounds(hist[i], s.min_inv[i], s.max[i]);
  }
  for (std::size_t m = 0; m < n_metrics() && m < o.n_metrics() && m < kMaxCallMetrics; ++m) {
    sub(s.metric_calls[m], o.s.metric_calls[m]);
    sub(s.metric_unmeasured[m], o.s.metric_unmeasured[m]);
    sub(s.metric_zero[m], o.s.metric_zero[m]);
    // The 128-bit sum: an earlier total is never larger than a later one.
    const std::uint64_t borrow = s.metric_sum[m] < o.s.metric_sum[m] ? 1 : 0;
    s.metric_sum[m] -= o.s.metric_sum[m];
    sub(s.metric_sum_hi[m], o.s.metric_sum_hi[m] + borrow);
    sub(s.metric_num_sum[m], o.s.metric_num_sum[m]);
    sub(s.metric_den_sum[m], o.s.metric_den_sum[m]);
    metric_hist[m].subtract(o.metric_hist[m]);
    bounds(metric_hist[m], s.metric_min_inv[m], s.metric_max[m]);
  }
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
    case Breakdown::args:
      return "args";
  }
  return "?";
}

FuncKey StreamAggregator::key_of(const CallRecord& r) const {
  switch (by_) {
    case Breakdown::none:
      return {r.func_id, 0, {}};
    case Breakdown::pid:
      return {r.func_id, r.pid, {}};
    case Breakdown::comm:
      return {r.func_id, 0, std::string(r.command())};
    case Breakdown::cpu:
      return {r.func_id, r.cpu, {}};
    case Breakdown::cgroup:
      return {r.func_id, r.cgroup_id, {}};
    case Breakdown::args:
      return {r.func_id, 0, std::string(r.key.data(), r.key.size())};
  }
  return {r.func_id, 0, {}};
}

void StreamAggregator::add(const CallRecord& r) {
  ++records_;
  if (by_ == Breakdown::none && r.func_id < by_id_.size() && by_id_[r.func_id]) {
    by_id_[r.func_id]->add(r);
    return;
  }
  FuncKey key = key_of(r);
  auto it = stats_.find(key);
  if (it == stats_.end()) {
    if (by_ == Breakdown::args && max_keys_ && keys_[r.func_id] >= max_keys_) {
      key = FuncKey{r.func_id, 0, {}, true};
      it = stats_.find(key);
    } else if (by_ == Breakdown::args) {
      ++keys_[r.func_id];
    }
    if (it == stats_.end())
      it = stats_.emplace(std::move(key), FuncStats(n_events_, metrics_)).first;
  }
  if (by_ == Breakdown::none && r.func_id < (1u << 16)) {  // ids are the run's --func count
    if (by_id_.size() <= r.func_id) by_id_.resize(r.func_id + 1, nullptr);
    by_id_[r.func_id] = &it->second;
  }
  it->second.add(r);
}

}  // namespace pmcprof

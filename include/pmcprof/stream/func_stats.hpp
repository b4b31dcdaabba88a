#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/stream/call_record.hpp"
#include "pmcprof/stream/histogram.hpp"

namespace pmcprof {

struct KernelAggregate;

// The sums of a function's calls: the layout of struct pmcprof_agg (bpf/pmcprof.h, checked
// at compile time), filled by the same C function in the kernel and in user space.
struct FuncScalars {
  std::uint64_t calls = 0;
  std::uint64_t not_counted = 0;  // disturbed calls: no event and no on-CPU time
  std::uint64_t slept = 0;
  std::uint64_t migrated = 0;
  std::uint64_t multiplexed = 0;  // calls some event did not run through
  std::uint64_t read_errors = 0;
  std::uint64_t wall_sum = 0;
  std::uint64_t oncpu_sum = 0;
  std::uint64_t wall_min_inv = 0;  // ~min: zero means "none yet"
  std::uint64_t wall_max = 0;
  std::uint64_t oncpu_min_inv = 0;
  std::uint64_t oncpu_max = 0;
  std::array<std::uint64_t, kMaxBpfEvents> measured{};  // calls the event measured exactly
  std::array<std::uint64_t, kMaxBpfEvents> sum{};       // over those calls
  std::array<std::uint64_t, kMaxBpfEvents> min_inv{};
  std::array<std::uint64_t, kMaxBpfEvents> max{};
  std::array<std::uint64_t, kMaxBpfEvents> partial{};     // calls it ran in, in part
  std::array<std::uint64_t, kMaxBpfEvents> scaled_sum{};  // their scaled deltas
  // Calls not measured exactly, per stratum of on-CPU time (bpf/pmcprof.h, pmcprof_agg):
  std::array<std::uint64_t, kMaxBpfEvents> short_measured{};       // measured short calls
  std::array<std::uint64_t, kMaxBpfEvents> short_sum{};            // ... their sum
  std::array<std::uint64_t, kMaxBpfEvents> long_measured_oncpu{};  // on-CPU ns, measured long
  std::array<std::uint64_t, kMaxBpfEvents> short_unmeasured{};     // short calls not measured
  std::array<std::uint64_t, kMaxBpfEvents> unmeasured_oncpu{};     // on-CPU ns, long, not measured
  std::array<std::uint64_t, kMaxBpfEvents> under_floor{};          // measured calls below the floor
  std::uint64_t wall_under_floor = 0;
  std::uint64_t oncpu_under_floor = 0;
  // Per-call metrics, over the counted calls (fixed point, kMetricFracBits fraction bits):
  std::array<std::uint64_t, kMaxCallMetrics> metric_calls{};       // with a value
  std::array<std::uint64_t, kMaxCallMetrics> metric_unmeasured{};  // an operand did not measure
  std::array<std::uint64_t, kMaxCallMetrics> metric_zero{};        // the divisor was 0
  std::array<std::uint64_t, kMaxCallMetrics> metric_sum{};         // low 64 bits of the sum
  std::array<std::uint64_t, kMaxCallMetrics> metric_sum_hi{};      // high 64 bits
  std::array<std::uint64_t, kMaxCallMetrics> metric_min_inv{};
  std::array<std::uint64_t, kMaxCallMetrics> metric_max{};
  std::array<std::uint64_t, kMaxCallMetrics> metric_num_sum{};  // operands over the calls
  std::array<std::uint64_t, kMaxCallMetrics> metric_den_sum{};  // with a value
  std::uint64_t hidden_switch = 0;  // not counted: a switch the kernel did not report
};

// Everything known about the calls of one function (or one function and one --by key):
// sums, exact min/max and histograms. Filled from the stream record by record, or from the
// kernel's aggregation maps; both have this shape so they are reported by the same code.
struct FuncStats {
  FuncScalars s;
  Histogram wall;
  Histogram oncpu;
  std::vector<Histogram> hist;  // per BPF event, over the calls it measured
  // Per-call metrics: their operands and the histograms of their fixed-point values.
  std::vector<CallMetricOperands> metrics;
  std::vector<Histogram> metric_hist;

  explicit FuncStats(std::size_t n_events = 0, std::vector<CallMetricOperands> call_metrics = {})
      : hist(n_events), metrics(std::move(call_metrics)), metric_hist(metrics.size()) {}
  std::size_t n_events() const { return hist.size(); }
  std::size_t n_metrics() const { return metrics.size(); }
  // Metric m's sum of fixed-point values, as a double (the 128-bit sum).
  double metric_sum(std::size_t m) const;
  void add(const CallRecord& r);
  void add_kernel(const KernelAggregate& k);
  void merge(const FuncStats& o);
  // Interval deltas. Sums and histograms subtract; min and max cannot, so they become the
  // bounds of the interval's lowest and highest bucket.
  void subtract(const FuncStats& o);

  std::uint64_t calls() const { return s.calls; }
  std::uint64_t counted_calls() const { return s.calls - s.not_counted; }
};

// Exact min / max from an inverted-min / max pair (none: 0).
inline std::uint64_t min_of(std::uint64_t min_inv) {
  return min_inv ? ~min_inv : 0;
}

// What a --by breakdown splits on (args: the start point's arguments, --by argN).
enum class Breakdown { none, pid, comm, cpu, cgroup, args };
const char* to_string(Breakdown b);

// The key of one result row: a function and, with --by, the value it was split on (a number
// for pid, cpu and cgroup; text for comm; the key's bytes for args, or `other`: the calls of
// the keys past the function's max_keys).
struct FuncKey {
  std::uint32_t func_id = 0;
  std::uint64_t number = 0;
  std::string text;
  bool other = false;
  auto operator<=>(const FuncKey&) const = default;
};

// Stream-side aggregation: records in, FuncStats per key out. With --by argN a function keeps
// at most max_keys keys, as the kernel does: the calls of later keys go to its `other` key.
class StreamAggregator {
 public:
  StreamAggregator(std::size_t n_events, Breakdown by, std::size_t max_keys = 0,
                   std::vector<CallMetricOperands> metrics = {})
      : n_events_(n_events), by_(by), max_keys_(max_keys), metrics_(std::move(metrics)) {}
  void add(const CallRecord& r);
  const std::map<FuncKey, FuncStats>& stats() const { return stats_; }
  std::uint64_t records() const { return records_; }
  void clear() {
    stats_.clear();
    keys_.clear();
    by_id_.clear();
  }

 private:
  FuncKey key_of(const CallRecord& r) const;
  std::size_t n_events_;
  Breakdown by_;
  std::size_t max_keys_;
  std::map<std::uint32_t, std::size_t> keys_;  // per function: keys it has
  std::vector<CallMetricOperands> metrics_;
  std::map<FuncKey, FuncStats> stats_;
  // Without --by a row per function: its stats by function id (map nodes do not move), so a
  // record costs an index, not a key built and looked up.
  std::vector<FuncStats*> by_id_;
  std::uint64_t records_ = 0;
};

}  // namespace pmcprof

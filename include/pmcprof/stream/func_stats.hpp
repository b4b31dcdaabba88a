#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pmcprof/stream/call_record.hpp"
#include "pmcprof/stream/histogram.hpp"

struct pmcprof_agg;

namespace pmcprof {

// Everything known about the calls of one function (or one function and one --by key):
// counts, sums and histograms. Filled from the stream record by record, or from the kernel's
// per-CPU aggregation map; both have this shape so they are reported by the same code.
struct FuncStats {
  std::uint64_t calls = 0;
  std::uint64_t not_counted = 0;  // calls whose counters did not run: excluded from sums
  std::uint64_t slept = 0;
  std::uint64_t migrated = 0;
  std::uint64_t multiplexed = 0;
  std::uint64_t wall_sum = 0;
  std::uint64_t oncpu_sum = 0;
  Histogram wall;
  Histogram oncpu;
  std::vector<std::uint64_t> sum;  // per BPF event, over counted calls
  std::vector<Histogram> hist;

  explicit FuncStats(std::size_t n_events = 0) : sum(n_events), hist(n_events) {}
  void add(const CallRecord& r);
  void add_kernel(const pmcprof_agg& a);  // one CPU's value of the aggregates map
  void merge(const FuncStats& o);
  void subtract(const FuncStats& o);  // interval deltas
  std::uint64_t counted_calls() const { return calls - not_counted; }
};

// What a --by breakdown splits on.
enum class Breakdown { none, pid, comm, cpu, cgroup };
Breakdown parse_breakdown(const std::string& text);
const char* to_string(Breakdown b);

// The key of one result row: a function and, with --by, the value it was split on.
using FuncKey = std::pair<std::uint32_t, std::string>;

// Stream-side aggregation: records in, FuncStats per key out.
class StreamAggregator {
 public:
  StreamAggregator(std::size_t n_events, Breakdown by) : n_events_(n_events), by_(by) {}
  void add(const CallRecord& r);
  const std::map<FuncKey, FuncStats>& stats() const { return stats_; }
  std::uint64_t records() const { return records_; }

 private:
  std::string key_of(const CallRecord& r) const;
  std::size_t n_events_;
  Breakdown by_;
  std::map<FuncKey, FuncStats> stats_;
  std::uint64_t records_ = 0;
};

}  // namespace pmcprof

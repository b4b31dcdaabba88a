#include <linux/perf_event.h>

#include "pmcprof/report/report.hpp"

namespace pmcprof {

namespace {

constexpr EventKind kCycles{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES};
constexpr EventKind kInstructions{PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS};
constexpr EventKind kCacheRefs{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES};
constexpr EventKind kCacheMisses{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES};
constexpr EventKind kBranches{PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS};
constexpr EventKind kBranchMisses{PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES};
constexpr EventKind kTaskClock{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK};
constexpr EventKind kCpuClock{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK};
// LLC-loads / LLC-load-misses: cache id LL, op READ, result ACCESS / MISS.
constexpr EventKind kLlcLoads{PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_LL |
                                                      (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                                      (PERF_COUNT_HW_CACHE_RESULT_ACCESS << 16)};
constexpr EventKind kLlcLoadMisses{PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_LL |
                                                           (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                                           (PERF_COUNT_HW_CACHE_RESULT_MISS << 16)};

// The row of `kind` that belongs with `near`: same CPU (-A) and same cgroup.
const CounterRow* find(const CountingReport& r, EventKind kind, const CounterRow& near) {
  for (const auto& row : r.counters)
    if (row.kind == kind && row.cpu == near.cpu && row.cgroup_id == near.cgroup_id &&
        row.status == CounterStatus::ok)
      return &row;
  return nullptr;
}

std::optional<Metric> ratio(const CounterRow& num, const CounterRow* den, const char* unit,
                            bool percent) {
  if (!den || den->value <= 0) return std::nullopt;
  double v = num.value / den->value;
  return Metric{percent ? 100.0 * v : v, unit, percent};
}

}  // namespace

std::optional<Metric> derive_metric(const CountingReport& r, const CounterRow& row) {
  if (row.status != CounterStatus::ok) return std::nullopt;
  if (row.kind == kTaskClock || row.kind == kCpuClock) {
    if (r.elapsed_ns == 0) return std::nullopt;
    return Metric{row.value / static_cast<double>(r.elapsed_ns), "CPUs utilized", false};
  }
  if (row.kind == kInstructions) return ratio(row, find(r, kCycles, row), "insn per cycle", false);
  if (row.kind == kBranchMisses)
    return ratio(row, find(r, kBranches, row), "of all branches", true);
  if (row.kind == kCacheMisses)
    return ratio(row, find(r, kCacheRefs, row), "of all cache refs", true);
  if (row.kind == kLlcLoadMisses)
    return ratio(row, find(r, kLlcLoads, row), "of all LL-cache accesses", true);

  // Everything else: a rate per second of on-CPU time, as perf prints beside task-clock.
  const CounterRow* clock = find(r, kTaskClock, row);
  if (!clock) clock = find(r, kCpuClock, row);
  if (!clock || clock->value <= 0) return std::nullopt;
  const double per_sec = row.value / (clock->value / 1e9);
  if (row.kind == kCycles) return Metric{per_sec / 1e9, "GHz", false};
  if (per_sec >= 1e9) return Metric{per_sec / 1e9, "G/sec", false};
  if (per_sec >= 1e6) return Metric{per_sec / 1e6, "M/sec", false};
  if (per_sec >= 1e3) return Metric{per_sec / 1e3, "K/sec", false};
  return Metric{per_sec, "/sec", false};
}

}  // namespace pmcprof

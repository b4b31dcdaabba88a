// perf stat's shadow stats: the metric printed beside a counter from other counters of the
// same scope (tools/perf/util/stat-shadow.c), with perf's formats.
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
constexpr EventKind kStalledFront{PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND};
constexpr EventKind kStalledBack{PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND};
constexpr EventKind kTaskClock{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK};
constexpr EventKind kCpuClock{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK};

constexpr EventKind cache_event(std::uint64_t cache, std::uint64_t result) {
  return {PERF_TYPE_HW_CACHE, cache | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (result << 16)};
}

// A miss event, the access event it is a share of, and perf's words for the share.
struct MissRatio {
  EventKind miss, access;
  const char* unit;
};
constexpr MissRatio kMissRatios[] = {
    {kBranchMisses, kBranches, "of all branches"},
    {cache_event(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_RESULT_MISS),
     cache_event(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_RESULT_ACCESS),
     "of all L1-dcache accesses"},
    {cache_event(PERF_COUNT_HW_CACHE_L1I, PERF_COUNT_HW_CACHE_RESULT_MISS),
     cache_event(PERF_COUNT_HW_CACHE_L1I, PERF_COUNT_HW_CACHE_RESULT_ACCESS),
     "of all L1-icache accesses"},
    {cache_event(PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_RESULT_MISS),
     cache_event(PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_RESULT_ACCESS),
     "of all dTLB cache accesses"},
    {cache_event(PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_RESULT_MISS),
     cache_event(PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_RESULT_ACCESS),
     "of all iTLB cache accesses"},
    {cache_event(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_RESULT_MISS),
     cache_event(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_RESULT_ACCESS),
     "of all LL-cache accesses"},
};

// Whether `row` may stand beside `near` in a metric: of the same core PMU, or either of none.
bool same_pmu(const CounterRow& row, const CounterRow& near) {
  return row.pmu == near.pmu || row.pmu.empty() || near.pmu.empty();
}

// The counted row of `kind` in the scope of `near` (same CPU, aggregate and cgroup, same core
// PMU): its own PMU's row first, so cpu_core's cycles take cpu_core's task-clock copy.
const CounterRow* find(const CountingReport& r, EventKind kind, const CounterRow& near) {
  const CounterRow* other = nullptr;
  for (const auto& row : r.counters) {
    if (!(row.kind == kind) || !same_scope(row, near) || row.status != CounterStatus::ok ||
        !same_pmu(row, near))
      continue;
    if (row.pmu == near.pmu) return &row;
    if (!other) other = &row;
  }
  return other;
}

std::optional<Metric> share(const CounterRow& part, const CounterRow* whole, const char* unit) {
  if (!whole || whole->value <= 0) return std::nullopt;
  return Metric{100.0 * part.value / whole->value, unit, true};
}

// Events per second of on-CPU time, as perf prints beside task-clock.
std::optional<Metric> rate(const CountingReport& r, const CounterRow& row) {
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

}  // namespace

std::optional<Metric> derive_metric(const CountingReport& r, const CounterRow& row) {
  if (row.status != CounterStatus::ok) return std::nullopt;
  if (row.kind == kTaskClock || row.kind == kCpuClock) {
    if (r.elapsed_ns == 0) return std::nullopt;
    return Metric{row.value / static_cast<double>(r.elapsed_ns), "CPUs utilized", false};
  }
  if (row.kind == kInstructions) {
    const CounterRow* cycles = find(r, kCycles, row);
    if (!cycles || cycles->value <= 0) return std::nullopt;
    return Metric{row.value / cycles->value, "insn per cycle", false};
  }
  if (row.kind == kCacheMisses) return share(row, find(r, kCacheRefs, row), "of all cache refs");
  if (row.kind == kStalledFront) return share(row, find(r, kCycles, row), "frontend cycles idle");
  if (row.kind == kStalledBack) return share(row, find(r, kCycles, row), "backend cycles idle");
  for (const auto& m : kMissRatios)
    if (row.kind == m.miss) return share(row, find(r, m.access, row), m.unit);
  return rate(r, row);
}

// perf's printf format for a shadow metric's value (stat-shadow.c).
const char* metric_format(const Metric& m) {
  if (m.unit == "insn per cycle") return "%7.2f ";
  if (m.unit == "of all cache refs") return "%8.3f %%";
  if (m.percent) return "%7.2f%%";
  return "%8.3f";
}

}  // namespace pmcprof

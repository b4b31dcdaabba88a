#include "pmcprof/report/func_report.hpp"

#include <linux/perf_event.h>

namespace pmcprof {

Distribution make_distribution(std::uint64_t total, std::uint64_t counted, std::uint64_t calls,
                               const Histogram& h) {
  Distribution d;
  if (calls == 0) {
    d.status = CounterStatus::ok;
    d.no_calls = true;
    return d;
  }
  if (counted == 0) return d;
  d.status = CounterStatus::ok;
  d.total = static_cast<double>(total);
  d.mean = d.total / static_cast<double>(counted);
  d.p50 = h.percentile(0.50);
  d.p90 = h.percentile(0.90);
  d.p99 = h.percentile(0.99);
  return d;
}

namespace {

const FuncEventRow* find_event(const FuncRow& row, EventKind kind) {
  for (const auto& e : row.events)
    if (e.kind == kind && e.per_call.status == CounterStatus::ok) return &e;
  return nullptr;
}

}  // namespace

FuncRow make_func_row(const std::string& function, const std::string& backend,
                      const std::string& by_value, const FuncStats& s, std::uint64_t lost,
                      const std::vector<FuncEventInfo>& events) {
  FuncRow row;
  row.function = function;
  row.backend = backend;
  row.by_value = by_value;
  row.calls = s.calls;
  row.not_counted = s.not_counted;
  row.lost = lost;
  row.slept = s.slept;
  row.migrated = s.migrated;
  row.multiplexed = s.multiplexed;
  row.wall = make_distribution(s.wall_sum, s.calls, s.calls, s.wall);
  row.oncpu = make_distribution(s.oncpu_sum, s.calls, s.calls, s.oncpu);
  row.wall_histogram = s.wall;
  row.oncpu_histogram = s.oncpu;
  for (const auto& info : events) {
    FuncEventRow e;
    e.event = info.event;
    e.kind = info.kind;
    e.unit = info.unit;
    if (!info.bpf_index) {
      e.per_call.status = CounterStatus::not_supported;
    } else if (*info.bpf_index < s.sum.size()) {
      e.per_call = make_distribution(s.sum[*info.bpf_index], s.counted_calls(), s.calls,
                                     s.hist[*info.bpf_index]);
      e.histogram = s.hist[*info.bpf_index];
    }
    row.events.push_back(std::move(e));
  }
  return row;
}

std::optional<Metric> func_metric(const FuncRow& row) {
  const auto* cycles = find_event(row, {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES});
  const auto* insns = find_event(row, {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS});
  if (cycles && insns && cycles->per_call.total > 0)
    return Metric{insns->per_call.total / cycles->per_call.total, "insn per cycle", false};
  return std::nullopt;
}

}  // namespace pmcprof

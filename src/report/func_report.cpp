#include "pmcprof/report/func_report.hpp"

#include <linux/perf_event.h>

namespace pmcprof {

Distribution make_distribution(const MeasuredSums& m, const Histogram& h) {
  Distribution d;
  if (m.calls == 0) {
    d.status = CounterStatus::ok;
    d.no_calls = true;
    return d;
  }
  if (m.measured == 0 && m.partial == 0) return d;
  d.status = CounterStatus::ok;
  d.measured = m.measured;
  const double calls = static_cast<double>(m.calls);
  if (m.measured > 0) {
    d.total = static_cast<double>(m.sum);
    if (m.measured < m.calls) d.total = d.total * calls / static_cast<double>(m.measured);
  } else {
    d.total = static_cast<double>(m.scaled_sum) * calls / static_cast<double>(m.partial);
  }
  d.estimated = m.measured < m.calls;
  d.mean = d.total / calls;
  d.percentiles = m.measured > 0;
  if (d.percentiles) {
    d.min = static_cast<double>(m.min);
    d.max = static_cast<double>(m.max);
    d.p50 = h.percentile(0.50, d.min, d.max);
    d.p90 = h.percentile(0.90, d.min, d.max);
    d.p99 = h.percentile(0.99, d.min, d.max);
  }
  return d;
}

namespace {

const FuncEventRow* find_event(const FuncRow& row, EventKind kind) {
  for (const auto& e : row.events)
    if (e.kind == kind && e.per_call.status == CounterStatus::ok) return &e;
  return nullptr;
}

}  // namespace

std::string KeyValue::display() const {
  switch (type) {
    case Type::signed_int:
      return std::to_string(static_cast<std::int64_t>(bits));
    case Type::unsigned_int:
      return std::to_string(bits);
    case Type::string:
      break;
  }
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

FuncRow make_func_row(const std::string& function, const std::string& backend,
                      const std::string& by_value, const FuncStats& st, std::uint64_t lost,
                      const std::vector<FuncEventInfo>& events) {
  const FuncScalars& s = st.s;
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
  row.read_errors = s.read_errors;
  const std::uint64_t counted = st.counted_calls();
  row.wall = make_distribution(
      {s.calls, s.calls, s.wall_sum, min_of(s.wall_min_inv), s.wall_max, 0, 0}, st.wall);
  row.oncpu = make_distribution(
      {counted, counted, s.oncpu_sum, min_of(s.oncpu_min_inv), s.oncpu_max, 0, 0}, st.oncpu);
  // A function called only in disturbed calls: nothing measured, though it was called.
  if (s.calls > 0 && counted == 0) row.oncpu = Distribution{};
  row.wall_histogram = st.wall;
  row.oncpu_histogram = st.oncpu;
  for (const auto& info : events) {
    FuncEventRow e;
    e.event = info.event;
    e.kind = info.kind;
    e.unit = info.unit;
    if (!info.bpf_index) {
      e.per_call.status = CounterStatus::not_supported;
    } else if (const std::size_t i = *info.bpf_index; i < st.n_events()) {
      e.per_call = make_distribution({counted, s.measured[i], s.sum[i], min_of(s.min_inv[i]),
                                      s.max[i], s.partial[i], s.scaled_sum[i]},
                                     st.hist[i]);
      if (s.calls > 0 && counted == 0) e.per_call = Distribution{};
      e.histogram = st.hist[i];
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

#include "pmcprof/report/func_report.hpp"

#include <linux/perf_event.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

double signed_sum(std::uint64_t v) {
  return static_cast<double>(static_cast<std::int64_t>(v));
}

// The calls a quantity did not measure exactly (multiplexed out for all or part of them), per
// stratum of on-CPU time (see MeasuredSums). A stratum that measured none: the mean of the
// enabled/running-scaled values of the calls it ran in part (`scaled_mean`).
double unmeasured_estimate(const MeasuredSums& m, double scaled_mean) {
  const std::uint64_t unmeasured = m.calls - m.measured;
  const std::uint64_t short_n = std::min(m.short_unmeasured, unmeasured);
  const std::uint64_t long_n = unmeasured - short_n;
  // Short calls: the mean of the short calls measured.
  double est =
      static_cast<double>(short_n) *
      (m.short_measured > 0 ? signed_sum(m.short_sum) / static_cast<double>(m.short_measured)
                            : scaled_mean);
  // Long calls: the rate per on-CPU ns of the long calls measured.
  if (long_n > 0 && m.long_measured_oncpu > 0)
    est += (signed_sum(m.sum) - signed_sum(m.short_sum)) * static_cast<double>(m.unmeasured_oncpu) /
           static_cast<double>(m.long_measured_oncpu);
  else if (long_n > 0)
    est += static_cast<double>(long_n) * scaled_mean;
  return est;
}

// A histogram bucket is 2 % wide and its representative within 1 % of every value in it: 4
// significant digits say all it knows of a percentile of a ratio.
constexpr int kPercentileDigits = 4;

double round_significant(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, digits - 1 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

// `v` to the decimals that hold a step of `step` (2^-20 of a ratio: 7 decimals), no more.
double round_to_step(double v, double step) {
  if (step <= 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, std::ceil(-std::log10(step)));
  return std::round(v * scale) / scale;
}

// Percentile p of whole counts (events, ns) with exact min and max: the nearest rank's value
// is the min at the first rank and the max at the last (known exactly beside the histogram),
// else its bucket's representative (within 1 %), rounded (`whole`): a count has no decimals.
double exact_percentile(const Histogram& h, double p, double min, double max, bool whole = true) {
  const auto n = static_cast<double>(h.count());
  const double rank = std::max(1.0, std::ceil(p * n));
  if (rank >= n) return max;
  if (rank <= 1) return min;
  const double v = h.percentile(p, min, max);
  return whole ? std::round(v) : v;
}

}  // namespace

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
  d.under_floor = m.under_floor;
  d.measured_sum = std::max(0.0, static_cast<double>(static_cast<std::int64_t>(m.sum)));
  const double calls = static_cast<double>(m.calls);
  // The calls it measured, as measured (signed sums: the bias is taken off each call once);
  // the others estimated per stratum.
  d.total = signed_sum(m.sum);
  if (m.measured < m.calls)
    d.total += unmeasured_estimate(
        m, m.partial > 0 ? signed_sum(m.scaled_sum) / static_cast<double>(m.partial)
                         : signed_sum(m.sum) / static_cast<double>(m.measured));
  // Below 0 only when more bias was taken off than the calls measured: a total within the
  // noise, reported as 0 and flagged by the calls under the floor (never a negative count).
  if (d.total < 0) d.total = 0;
  d.estimated = m.measured < m.calls;
  d.mean = d.total / calls;
  d.percentiles = m.measured > 0;
  if (d.percentiles) {
    d.min = static_cast<double>(m.min);
    d.max = static_cast<double>(m.max);
    d.p50 = exact_percentile(h, 0.50, d.min, d.max);
    d.p90 = exact_percentile(h, 0.90, d.min, d.max);
    d.p99 = exact_percentile(h, 0.99, d.min, d.max);
  }
  return d;
}

namespace {

const FuncEventRow* find_event(const FuncRow& row, EventKind kind) {
  for (const auto& e : row.events)
    if (e.kind == kind && e.per_call.status == CounterStatus::ok) return &e;
  return nullptr;
}

// The formula over the totals of the row's events (and its wall time for duration_time).
// Returns false when an event of the metric was not counted (`reason` says which).
bool metric_of_totals(FuncMetricRow& m, const FuncMetricInfo& info, const FuncRow& row) {
  if (row.calls == 0) {
    m.reason = "no calls";
    return true;  // nothing is missing: per call, 0 calls
  }
  std::map<std::string, double> values{{"duration_time", row.wall.total}};
  std::vector<std::string> not_supported, not_counted;
  for (const auto& input : info.metric.formula->inputs()) {
    auto it = info.inputs.find(input);
    if (it == info.inputs.end()) continue;  // duration_time
    const FuncEventRow& e = row.events.at(it->second);
    if (e.per_call.status == CounterStatus::ok) {
      values[input] = e.per_call.total;
      m.estimated |= e.per_call.estimated;
    } else {
      (e.per_call.status == CounterStatus::not_supported ? not_supported : not_counted)
          .push_back(e.event);
    }
  }
  if (!not_supported.empty() || !not_counted.empty()) {
    std::vector<std::string> parts;
    if (!not_supported.empty()) parts.push_back(join(not_supported, ", ") + " <not supported>");
    if (!not_counted.empty()) parts.push_back(join(not_counted, ", ") + " <not counted>");
    m.reason = join(parts, "; ");
    m.estimated = false;
    return false;
  }
  m.of_totals = evaluate_metric(info.metric, values, &m.reason);
  if (!m.of_totals) m.estimated = false;
  return true;
}

// The distribution of the per-call values kept in `slot`.
// With `totals`, the ratio of totals becomes the one over the calls with a value.
void metric_per_call(FuncMetricRow& m, const FuncMetricInfo& info, const FuncStats& st,
                     bool totals) {
  if (!info.slot || *info.slot >= st.n_metrics()) {
    m.per_call_reason = info.no_slot_reason;
    return;
  }
  const std::size_t k = *info.slot;
  const FuncScalars& s = st.s;
  const auto ratio = info.metric.formula->ratio();
  m.per_call = true;
  for (const auto& [input, event] : m.events)
    if (ratio && input == ratio->denominator) m.divisor = event;
  m.per_unit =
      (ratio ? ratio->scale : 1) / static_cast<double>(std::uint64_t{1} << kMetricFracBits);
  m.calls = s.metric_calls[k];
  m.unmeasured = s.metric_unmeasured[k];
  m.zero_divisor = s.metric_zero[k];
  m.histogram = st.metric_hist[k];
  if (m.calls == 0) return;
  // The ratio of totals over the same calls: sum of numerators over sum of denominators.
  if (totals && s.metric_den_sum[k] > 0) {
    m.of_totals = (ratio ? ratio->scale : 1) * static_cast<double>(s.metric_num_sum[k]) /
                  static_cast<double>(s.metric_den_sum[k]);
    m.estimated = false;
    m.reason.clear();
  }
  const double lo = static_cast<double>(min_of(s.metric_min_inv[k]));
  const double hi = static_cast<double>(s.metric_max[k]);
  // Each figure with the digits it has: min, max and mean to the fixed point's step; a
  // percentile the min at the first rank, the max at the last, else its bucket's
  // representative (within 1 %) to 4 significant digits, in [min, max].
  m.mean = round_to_step(st.metric_sum(k) / static_cast<double>(m.calls) * m.per_unit, m.per_unit);
  m.min = round_to_step(lo * m.per_unit, m.per_unit);
  m.max = round_to_step(hi * m.per_unit, m.per_unit);
  auto percentile = [&](double p) {
    const double v = exact_percentile(m.histogram, p, lo, hi, false) * m.per_unit;
    if (v <= m.min || v >= m.max) return std::clamp(v, m.min, m.max);
    return std::clamp(round_significant(v, kPercentileDigits), m.min, m.max);
  };
  m.p50 = percentile(0.50);
  m.p90 = percentile(0.90);
  m.p99 = percentile(0.99);
}

}  // namespace

std::string KeyValue::display() const {
  switch (type) {
    case Type::signed_int:
      return std::to_string(static_cast<std::int64_t>(bits));
    case Type::unsigned_int:
      return std::to_string(bits);
    case Type::unreadable: {
      char buf[48];
      std::snprintf(buf, sizeof buf, "<unreadable at 0x%llx>",
                    static_cast<unsigned long long>(bits));
      return buf;
    }
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

std::optional<FuncMetricRow> make_metric_row(const FuncMetricInfo& info, const FuncRow& row,
                                             const FuncStats& st) {
  if (!info.metric.def || !info.metric.formula) return std::nullopt;
  FuncMetricRow m;
  m.name = info.metric.def->name;
  m.unit = info.metric.def->unit;
  m.formula = info.metric.formula->text();
  m.requested = info.requested;
  for (const auto& input : info.metric.formula->inputs()) {
    if (input == "duration_time") {
      m.events.emplace_back(input, "wall time");
      continue;
    }
    auto it = info.inputs.find(input);
    if (it == info.inputs.end() || it->second >= row.events.size()) return std::nullopt;
    const FuncEventRow& e = row.events[it->second];
    // perf prints no derived metric for events that cannot be counted here; -M explains why.
    if (!info.requested && e.per_call.status == CounterStatus::not_supported) return std::nullopt;
    m.events.emplace_back(input, e.event);
  }
  const bool counted = metric_of_totals(m, info, row);
  metric_per_call(m, info, st, counted);
  return m;
}

FuncRow make_func_row(const std::string& function, const std::string& backend,
                      const std::string& by_value, const FuncStats& st, std::uint64_t lost,
                      const std::vector<FuncEventInfo>& events,
                      const std::vector<FuncMetricInfo>& metrics) {
  const FuncScalars& s = st.s;
  FuncRow row;
  row.function = function;
  row.backend = backend;
  row.by_value = by_value;
  row.calls = s.calls;
  row.not_counted = s.not_counted;
  row.hidden_switches = s.hidden_switch;
  row.lost = lost;
  row.slept = s.slept;
  row.migrated = s.migrated;
  row.multiplexed = s.multiplexed;
  row.read_errors = s.read_errors;
  const std::uint64_t counted = st.counted_calls();
  row.wall = make_distribution({s.calls, s.calls, s.wall_sum, min_of(s.wall_min_inv), s.wall_max, 0,
                                0, 0, 0, 0, 0, 0, s.wall_under_floor},
                               st.wall);
  row.oncpu = make_distribution({counted, counted, s.oncpu_sum, min_of(s.oncpu_min_inv),
                                 s.oncpu_max, 0, 0, 0, 0, 0, 0, 0, s.oncpu_under_floor},
                                st.oncpu);
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
      e.per_call = make_distribution(
          {counted, s.measured[i], s.sum[i], min_of(s.min_inv[i]), s.max[i], s.partial[i],
           s.scaled_sum[i], s.short_measured[i], s.short_sum[i], s.long_measured_oncpu[i],
           s.short_unmeasured[i], s.unmeasured_oncpu[i], s.under_floor[i]},
          st.hist[i]);
      if (s.calls > 0 && counted == 0) e.per_call = Distribution{};
      e.histogram = st.hist[i];
    }
    row.events.push_back(std::move(e));
  }
  for (const auto& info : metrics)
    if (auto m = make_metric_row(info, row, st)) row.metrics.push_back(std::move(*m));
  return row;
}

std::string sort_quantity(const FuncRow* first_key) {
  if (first_key && first_key->kind == "probe") return "calls";
  // Whether the kernel opened the event, not whether each key got a value: a key whose every
  // call was disturbed must not turn a whole function's order to wall time from run to run.
  if (!first_key || first_key->events.empty() ||
      first_key->events.front().per_call.status == CounterStatus::not_supported)
    return "wall time";
  return first_key->events.front().event;
}

namespace {

double sort_value(const FuncRow& row, const std::string& quantity) {
  if (quantity == "calls") return static_cast<double>(row.calls);
  if (quantity == "wall time") return row.wall.total;
  // A key without a value (its calls all disturbed, the event not counted) after every key.
  const Distribution& d = row.events.front().per_call;
  return d.status == CounterStatus::ok ? shown_total(d) : -1;
}

// The merged stats of `stats[i]` for the i in `which`, starting from `none` (no calls).
FuncStats merged(const std::vector<FuncStats>& stats, const std::vector<std::size_t>& which,
                 const FuncStats& none) {
  FuncStats out = none;
  for (auto i : which) out.merge(stats[i]);
  return out;
}

}  // namespace

std::vector<FuncRow> order_keys(std::vector<FuncRow> rows, const std::vector<FuncStats>& stats,
                                const FuncStats& none, std::optional<std::size_t> top,
                                const FuncRowMaker& make) {
  // Keys, and the argN `other` row (the calls of keys past --max-keys: not one key, and of no
  // known number of keys), which stays after them.
  std::vector<std::size_t> keys, other;
  for (std::size_t i = 0; i < rows.size(); ++i) (rows[i].other ? other : keys).push_back(i);
  const std::string quantity = sort_quantity(keys.empty() ? nullptr : &rows[keys.front()]);
  // Largest first; ties by calls, then by key, so that the order is the same every run.
  std::stable_sort(keys.begin(), keys.end(), [&](std::size_t a, std::size_t b) {
    const double va = sort_value(rows[a], quantity), vb = sort_value(rows[b], quantity);
    if (va != vb) return va > vb;
    if (rows[a].calls != rows[b].calls) return rows[a].calls > rows[b].calls;
    return rows[a].by_value < rows[b].by_value;
  });
  const std::size_t shown = top ? std::min(*top, keys.size()) : keys.size();
  std::vector<FuncRow> out;
  for (std::size_t k = 0; k < shown; ++k) out.push_back(std::move(rows[keys[k]]));
  // The keys past the N largest in one row, so that the rows shown still add up to the total.
  if (shown < keys.size()) {
    const std::vector<std::size_t> rest(keys.begin() + static_cast<std::ptrdiff_t>(shown),
                                        keys.end());
    FuncRow folded = make(merged(stats, rest, none));
    folded.folded = rest.size();
    folded.by_value =
        "(other " + std::to_string(rest.size()) + (rest.size() == 1 ? " key)" : " keys)");
    out.push_back(std::move(folded));
  }
  for (auto i : other) out.push_back(std::move(rows[i]));
  std::vector<std::size_t> all = keys;
  all.insert(all.end(), other.begin(), other.end());
  FuncRow total = make(merged(stats, all, none));
  total.total = true;
  total.by_value = "(total)";
  total.keys = keys.size();
  total.sorted_by = quantity;
  out.push_back(std::move(total));
  return out;
}

double shown_total(const Distribution& d) {
  return d.estimated ? std::round(d.total) : d.total;
}

std::optional<Metric> func_metric(const FuncRow& row) {
  const auto* cycles = find_event(row, {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES});
  const auto* insns = find_event(row, {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS});
  if (cycles && insns && shown_total(cycles->per_call) > 0)
    return Metric{shown_total(insns->per_call) / shown_total(cycles->per_call), "insn per cycle",
                  false};
  return std::nullopt;
}

}  // namespace pmcprof

#include "pmcprof/report/aggregate.hpp"

#include <cmath>

#include "pmcprof/util/error.hpp"

namespace pmcprof {

CounterRow make_row(const EventSeries& s, const std::vector<RawCount>& counts) {
  CounterRow row;
  row.event = s.event;
  row.kind = s.kind;
  row.unit = s.unit;
  if (!s.supported) {
    row.status = CounterStatus::not_supported;
    return row;
  }
  bool counted = false;
  for (const auto& c : counts) {
    ScaledCount sc = scale(c);
    row.raw_value += c.value;
    row.enabled_ns += c.enabled;
    row.running_ns += c.running;
    if (sc.counted) {
      counted = true;
      row.value += sc.value;
    }
  }
  row.status = counted ? CounterStatus::ok : CounterStatus::not_counted;
  if (counted)
    row.running_pct =
        row.enabled_ns == 0 || row.running_ns >= row.enabled_ns
            ? 100.0
            : 100.0 * static_cast<double>(row.running_ns) / static_cast<double>(row.enabled_ns);
  return row;
}

std::vector<CounterRow> aggregate_rows(const std::vector<EventSeries>& series, bool per_instance) {
  std::vector<CounterRow> rows;
  if (!per_instance) {
    for (const auto& s : series) rows.push_back(make_row(s, s.counts));
    return rows;
  }
  // perf -A order: all events of CPU0, then CPU1, ...
  std::size_t instances = series.empty() ? 0 : series.front().instance_ids.size();
  for (std::size_t i = 0; i < instances; ++i) {
    for (const auto& s : series) {
      if (i >= s.instance_ids.size() || i >= s.counts.size()) continue;
      CounterRow row = make_row(s, {s.counts[i]});
      row.cpu = s.instance_ids[i];
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

double relative_stddev_of_mean_pct(const std::vector<double>& values) {
  const double n = static_cast<double>(values.size());
  if (values.size() < 2) return 0;
  double mean = 0;
  for (double v : values) mean += v;
  mean /= n;
  if (mean == 0) return 0;
  double var = 0;
  for (double v : values) var += (v - mean) * (v - mean);
  var /= (n - 1);
  return 100.0 * std::sqrt(var / n) / std::fabs(mean);
}

CountingReport combine_runs(const std::vector<CountingReport>& runs) {
  if (runs.empty()) throw SystemError("no runs to combine");
  CountingReport out = runs.back();
  out.runs = static_cast<int>(runs.size());
  std::vector<double> elapsed;
  for (const auto& r : runs) elapsed.push_back(static_cast<double>(r.elapsed_ns));
  double mean_elapsed = 0;
  for (double e : elapsed) mean_elapsed += e;
  out.elapsed_ns = static_cast<std::uint64_t>(mean_elapsed / elapsed.size());
  out.elapsed_stddev_pct = relative_stddev_of_mean_pct(elapsed);
  for (std::size_t i = 0; i < out.counters.size(); ++i) {
    CounterRow& row = out.counters[i];
    std::vector<double> values;
    double raw = 0, enabled = 0, running = 0;
    for (const auto& r : runs) {
      const CounterRow& x = r.counters.at(i);
      if (x.status != CounterStatus::ok) continue;
      values.push_back(x.value);
      raw += static_cast<double>(x.raw_value);
      enabled += static_cast<double>(x.enabled_ns);
      running += static_cast<double>(x.running_ns);
    }
    if (values.empty()) continue;  // keeps the last run's not-counted/not-supported status
    const double n = static_cast<double>(values.size());
    double sum = 0;
    for (double v : values) sum += v;
    row.status = CounterStatus::ok;
    row.value = sum / n;
    row.raw_value = static_cast<std::uint64_t>(raw / n);
    row.enabled_ns = static_cast<std::uint64_t>(enabled / n);
    row.running_ns = static_cast<std::uint64_t>(running / n);
    row.running_pct = enabled <= 0 || running >= enabled ? 100.0 : 100.0 * running / enabled;
    row.stddev_pct = relative_stddev_of_mean_pct(values);
  }
  return out;
}

}  // namespace pmcprof

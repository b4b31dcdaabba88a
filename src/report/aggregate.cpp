#include "pmcprof/report/aggregate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "pmcprof/util/error.hpp"

namespace pmcprof {

CounterRow make_row(const EventSeries& s, const std::vector<RawCount>& counts) {
  CounterRow row;
  row.event = s.event;
  row.kind = s.kind;
  row.unit = s.unit;
  row.group = s.group;
  if (!s.supported) {
    row.status = CounterStatus::not_supported;
    row.running_pct = running_percent(0, 0);
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
      row.value += sc.value * s.scale;
    }
  }
  row.status = counted ? CounterStatus::ok : CounterStatus::not_counted;
  row.running_pct = running_percent(row.running_ns, row.enabled_ns);
  return row;
}

namespace {

// -A: each event across CPUs (perf's order).
std::vector<CounterRow> per_cpu_rows(const std::vector<EventSeries>& series) {
  std::vector<CounterRow> rows;
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.instance_ids.size() && i < s.counts.size(); ++i) {
      CounterRow row = make_row(s, {s.counts[i]});
      row.cpu = s.instance_ids[i];
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

AggrId aggregate_of(AggrMode mode, const CpuPlace& p) {
  AggrId id;
  id.socket = p.socket;
  if (mode == AggrMode::core || mode == AggrMode::die) id.die = p.die;
  if (mode == AggrMode::core) id.core = p.core;
  if (mode == AggrMode::node) {
    id.socket = 0;
    id.node = p.node;
  }
  return id;
}

// --per-core/-die/-socket/-node: each aggregate (sorted), every event in it.
std::vector<CounterRow> per_place_rows(const std::vector<EventSeries>& series,
                                       const Aggregation& how) {
  auto key = [](const AggrId& a) { return std::tuple(a.node, a.socket, a.die, a.core); };
  std::map<std::tuple<int, int, int, int>, std::pair<AggrId, std::vector<std::size_t>>> places;
  const auto& ids = series.empty() ? std::vector<int>{} : series.front().instance_ids;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto it = how.topology.find(ids[i]);
    AggrId id = aggregate_of(how.mode, it == how.topology.end() ? CpuPlace{} : it->second);
    auto& place = places[key(id)];
    place.first = id;
    place.second.push_back(i);
  }
  std::vector<CounterRow> rows;
  for (auto& [k, place] : places) {
    place.first.cpus = static_cast<int>(place.second.size());
    for (const auto& s : series) {
      std::vector<RawCount> counts;
      for (std::size_t i : place.second)
        if (i < s.counts.size()) counts.push_back(s.counts[i]);
      CounterRow row = make_row(s, counts);
      row.aggr = place.first;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

// --per-thread: each event across threads, largest count first.
std::vector<CounterRow> per_thread_rows(const std::vector<EventSeries>& series,
                                        const Aggregation& how) {
  std::vector<CounterRow> rows;
  for (const auto& s : series) {
    std::vector<CounterRow> threads;
    for (std::size_t i = 0; i < s.instance_ids.size() && i < s.counts.size(); ++i) {
      CounterRow row = make_row(s, {s.counts[i]});
      if (how.skip_zero_threads && (row.status != CounterStatus::ok || row.value == 0)) continue;
      AggrId id;
      id.tid = s.instance_ids[i];
      auto name = how.thread_names.find(id.tid);
      id.comm = name == how.thread_names.end() ? "?" : name->second;
      row.aggr = id;
      threads.push_back(std::move(row));
    }
    std::stable_sort(threads.begin(), threads.end(),
                     [](const CounterRow& a, const CounterRow& b) { return a.value > b.value; });
    for (auto& r : threads) rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace

std::vector<CounterRow> aggregate_rows(const std::vector<EventSeries>& series,
                                       const Aggregation& how) {
  switch (how.mode) {
    case AggrMode::global:
      break;
    case AggrMode::cpu:
      return per_cpu_rows(series);
    case AggrMode::core:
    case AggrMode::die:
    case AggrMode::socket:
    case AggrMode::node:
      return per_place_rows(series, how);
    case AggrMode::thread:
      return per_thread_rows(series, how);
  }
  std::vector<CounterRow> rows;
  for (const auto& s : series) rows.push_back(make_row(s, s.counts));
  return rows;
}

std::vector<CounterRow> aggregate_rows(const std::vector<EventSeries>& series, bool per_instance) {
  Aggregation how;
  how.mode = per_instance ? AggrMode::cpu : AggrMode::global;
  return aggregate_rows(series, how);
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
  // A command's CPU times are one run's (perf shows them only for one run).
  out.user_ns.reset();
  out.sys_ns.reset();
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
    row.running_pct =
        running_percent(static_cast<std::uint64_t>(running), static_cast<std::uint64_t>(enabled));
    row.stddev_pct = relative_stddev_of_mean_pct(values);
  }
  return out;
}

}  // namespace pmcprof

#include "pmcprof/report/aggregate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "pmcprof/util/error.hpp"

namespace pmcprof {

CounterRow make_row(const EventSeries& s, const std::vector<RawCount>& counts,
                    const std::vector<std::uint64_t>& scale_running) {
  CounterRow row;
  row.event = s.event;
  row.kind = s.kind;
  row.pmu = s.pmu;
  row.unit = s.unit;
  row.group = s.group;
  if (!s.supported) {
    row.status = CounterStatus::not_supported;
    row.running_pct = running_percent(0, 0);
    return row;
  }
  bool counted = false;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const RawCount& c = counts[i];
    ScaledCount sc = scale(c);
    // A split event's siblings ran while this one could not (see EventSeries::scale_running).
    if (sc.counted && i < scale_running.size() && scale_running[i] >= c.running)
      sc.value = scale_value(c.value, c.enabled, scale_running[i]);
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

// The scale_running of instance i of `s`, as make_row takes it: none, or that one.
std::vector<std::uint64_t> scale_running_of(const EventSeries& s, std::size_t i) {
  if (i >= s.scale_running.size()) return {};
  return {s.scale_running[i]};
}

// -A: each event across CPUs (perf's order).
std::vector<CounterRow> per_cpu_rows(const std::vector<EventSeries>& series) {
  std::vector<CounterRow> rows;
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.instance_ids.size() && i < s.counts.size(); ++i) {
      CounterRow row = make_row(s, {s.counts[i]}, scale_running_of(s, i));
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

// --per-core/-die/-socket/-node: each aggregate (sorted), every event in it. An aggregate's
// "cpus" are all its CPUs counted; an event of a core PMU sums the CPUs of its PMU in it and
// has no row in an aggregate without any (a core of the other kind).
std::vector<CounterRow> per_place_rows(const std::vector<EventSeries>& series,
                                       const Aggregation& how) {
  using Key = std::tuple<int, int, int, int>;
  auto key = [](const AggrId& a) { return std::tuple(a.node, a.socket, a.die, a.core); };
  auto place_of = [&](int cpu) {
    auto it = how.topology.find(cpu);
    return aggregate_of(how.mode, it == how.topology.end() ? CpuPlace{} : it->second);
  };
  std::map<Key, std::pair<AggrId, std::set<int>>> places;
  for (const auto& s : series) {
    for (int cpu : s.instance_ids) {
      AggrId id = place_of(cpu);
      auto& place = places[key(id)];
      place.first = id;
      place.second.insert(cpu);
    }
  }
  std::vector<CounterRow> rows;
  for (auto& [k, place] : places) {
    place.first.cpus = static_cast<int>(place.second.size());
    for (const auto& s : series) {
      std::vector<RawCount> counts;
      std::vector<std::uint64_t> running;
      for (std::size_t i = 0; i < s.instance_ids.size() && i < s.counts.size(); ++i) {
        if (key(place_of(s.instance_ids[i])) != k) continue;
        counts.push_back(s.counts[i]);
        if (i < s.scale_running.size()) running.push_back(s.scale_running[i]);
      }
      if (counts.empty() && !s.instance_ids.empty()) continue;
      CounterRow row = make_row(s, counts, running);
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
      CounterRow row = make_row(s, {s.counts[i]}, scale_running_of(s, i));
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
  for (const auto& s : series) rows.push_back(make_row(s, s.counts, s.scale_running));
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

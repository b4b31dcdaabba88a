#include "pmcprof/report/prometheus.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "pmcprof/stream/histogram.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

std::string fmt(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  else
    std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

// The exported histograms' bucket bounds: every other power of two (x4 a bucket), each a
// boundary of the 2 % histogram, so every cumulative count is exact. 14 bounds and +Inf, 15
// lines a histogram (it was 42: every power of two up to 2^40), what a fleet can afford per
// function, key and quantity; histogram_quantile interpolates within a x4 bucket, while the
// JSON keeps the 2 % buckets.
struct BucketLayout {
  int first_exponent, last_exponent;  // le = 2^first ... 2^last, x4 a step
};
constexpr int kBucketStep = 2;
constexpr BucketLayout kTimeBuckets{8, 34};   // 256 ns ... 17.2 s
constexpr BucketLayout kCountBuckets{0, 26};  // 1 ... 67,108,864 events a call

std::string label_text(const Labels& labels) {
  if (labels.empty()) return {};
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ",";
    out += labels[i].first + "=\"" + prometheus_escape(labels[i].second) + "\"";
  }
  return out + "}";
}

// Collects samples per metric so each metric's HELP/TYPE is written once, samples after it.
class Exposition {
 public:
  void add(const std::string& name, const char* type, const char* help, const Labels& labels,
           double value) {
    auto& m = metrics_[name];
    if (m.type.empty()) {
      m.type = type;
      m.help = help;
      order_.push_back(name);
    }
    m.samples.push_back(name + label_text(labels) + " " + fmt(value));
  }
  // A histogram's _bucket/_sum/_count lines, with the bucket bounds of `layout` (scaled by
  // `unit`, e.g. 1e-9 for ns -> seconds).
  void histogram(const std::string& name, const char* help, const Labels& labels,
                 const Histogram& h, double sum, double unit, const BucketLayout& layout) {
    auto& m = metrics_[name];
    if (m.type.empty()) {
      m.type = "histogram";
      m.help = help;
      order_.push_back(name);
    }
    // Cumulative counts at le = 2^k: powers of two are bucket boundaries, so these are exact.
    for (int k = layout.first_exponent; k <= layout.last_exponent; k += kBucketStep) {
      const std::uint64_t bound = std::uint64_t{1} << k;
      const std::uint64_t cumulative = h.count_below(bound);
      Labels l = labels;
      l.emplace_back("le", fmt(static_cast<double>(bound) * unit));
      m.samples.push_back(name + "_bucket" + label_text(l) + " " +
                          fmt(static_cast<double>(cumulative)));
    }
    Labels inf = labels;
    inf.emplace_back("le", "+Inf");
    m.samples.push_back(name + "_bucket" + label_text(inf) + " " +
                        fmt(static_cast<double>(h.count())));
    m.samples.push_back(name + "_sum" + label_text(labels) + " " + fmt(sum * unit));
    m.samples.push_back(name + "_count" + label_text(labels) + " " +
                        fmt(static_cast<double>(h.count())));
  }
  // A summary's quantile lines, _sum and _count.
  void summary(const std::string& name, const char* help, const Labels& labels,
               const std::vector<std::pair<const char*, double>>& quantiles, double sum,
               std::uint64_t count) {
    auto& m = metrics_[name];
    if (m.type.empty()) {
      m.type = "summary";
      m.help = help;
      order_.push_back(name);
    }
    for (const auto& [q, v] : quantiles) {
      Labels l = labels;
      l.emplace_back("quantile", q);
      m.samples.push_back(name + label_text(l) + " " + fmt(v));
    }
    m.samples.push_back(name + "_sum" + label_text(labels) + " " + fmt(sum));
    m.samples.push_back(name + "_count" + label_text(labels) + " " +
                        fmt(static_cast<double>(count)));
  }
  std::string text() const {
    std::ostringstream out;
    for (const auto& name : order_) {
      const auto& m = metrics_.at(name);
      out << "# HELP " << name << " " << m.help << "\n# TYPE " << name << " " << m.type << "\n";
      for (const auto& s : m.samples) out << s << "\n";
    }
    return out.str();
  }

 private:
  struct Metric {
    std::string type, help;
    std::vector<std::string> samples;
  };
  std::map<std::string, Metric> metrics_;
  std::vector<std::string> order_;
};

void counting_metrics(Exposition& x, const CountingReport& r) {
  for (const auto& row : r.counters) {
    Labels labels{{"event", row.event}};
    if (!row.pmu.empty()) labels.emplace_back("pmu", row.pmu);
    if (row.cpu) labels.emplace_back("cpu", std::to_string(*row.cpu));
    if (row.cgroup) labels.emplace_back("cgroup", *row.cgroup);
    x.add("pmcprof_event_supported", "gauge",
          "1 when the kernel accepted the event, 0 when it is not supported here.", labels,
          row.status == CounterStatus::not_supported ? 0 : 1);
    if (row.status == CounterStatus::not_supported) continue;
    const double value = row.status == CounterStatus::ok ? row.value : 0;
    if (row.unit == "ns")
      x.add("pmcprof_event_seconds_total", "counter",
            "Clock events (task-clock, cpu-clock), scaled for multiplexing, in seconds.", labels,
            value / 1e9);
    else
      x.add("pmcprof_event_total", "counter", "Event counts, scaled for multiplexing.", labels,
            value);
    x.add("pmcprof_event_enabled_seconds_total", "counter",
          "Time the event was enabled, summed over CPUs.", labels,
          static_cast<double>(row.enabled_ns) / 1e9);
    x.add("pmcprof_event_running_seconds_total", "counter",
          "Time the event was on the PMU, summed over CPUs (less than enabled: multiplexed).",
          labels, static_cast<double>(row.running_ns) / 1e9);
  }
  if (const auto& u = r.cgroup_uncharged) {
    x.add("pmcprof_cgroup_unreported_switches_total", "counter",
          "Per-cgroup counting, bpf backend: stretches charged to no cgroup because the task "
          "switched out was not the one the CPU last switched to (a switch the kernel did not "
          "report).",
          {}, static_cast<double>(u->unreported_switches));
    x.add("pmcprof_cgroup_read_errors_total", "counter",
          "Per-cgroup counting, bpf backend: failed counter reads (their stretches are charged "
          "to no cgroup).",
          {}, static_cast<double>(u->read_errors));
    for (const auto& row : u->counters) {
      if (row.status != CounterStatus::ok) continue;
      if (row.unit == "ns")
        x.add("pmcprof_cgroup_uncharged_seconds_total", "counter",
              "Per-cgroup counting, bpf backend: what the stretches charged to no cgroup counted "
              "of a clock event, in seconds.",
              {{"event", row.event}}, row.value / 1e9);
      else
        x.add("pmcprof_cgroup_uncharged_total", "counter",
              "Per-cgroup counting, bpf backend: what the stretches charged to no cgroup counted "
              "of an event.",
              {{"event", row.event}}, row.value);
    }
  }
}

// What one probe pair adds to a call, one unit per name: times (wall, on-CPU, clock events)
// in seconds, other events in events.
void probe_bias_metrics(Exposition& x, const FunctionReport& r) {
  for (const auto& b : r.probe_bias) {
    if (!b.calibrated) continue;
    const std::string subtracted = b.subtracted ? "true" : "false";
    auto seconds = [&](const std::string& quantity, double ns) {
      x.add("pmcprof_probe_bias_seconds", "gauge",
            "Time one probe pair adds to each call (quantity: wall, oncpu or a clock event), "
            "measured on a function that does nothing.",
            {{"backend", b.backend}, {"quantity", quantity}, {"subtracted", subtracted}}, ns / 1e9);
    };
    seconds("wall", b.wall_ns);
    seconds("oncpu", b.oncpu_ns);
    for (const auto& e : b.events) {
      if (!e.per_call) continue;
      if (e.unit == "ns") {
        seconds(e.event, *e.per_call);
        continue;
      }
      x.add("pmcprof_probe_bias_events", "gauge",
            "Events one probe pair adds to each call, measured on a function that does nothing.",
            {{"backend", b.backend}, {"event", e.event}, {"subtracted", subtracted}}, *e.per_call);
    }
  }
}

// A function's metric (IPC, CPUs utilized, a miss rate): the ratio of totals, the per-call
// summary and the calls without a value, under names that carry its base unit.
void metric_metrics(Exposition& x, const FuncMetricRow& m, const Labels& fl) {
  Labels ml = fl;
  ml.emplace_back("metric", m.name);
  const PrometheusUnit unit = prometheus_unit_of(m.unit);
  const std::string of_totals = "pmcprof_function_metric_" + unit.suffix;
  const std::string per_call = "pmcprof_function_metric_per_call_" + unit.suffix;
  // Without a value (events not counted, no calls, a divisor of 0): no sample, never 0.
  if (m.of_totals)
    x.add(of_totals, "gauge",
          "A metric's formula over the event totals of the calls (what perf stat prints), in "
          "base units (a % or per-1k figure as a ratio, GHz as hertz).",
          ml, *m.of_totals * unit.scale);
  if (!m.per_call) return;
  const double nan = std::nan("");
  const bool values = m.calls > 0;
  auto q = [&](double v) { return values ? v * unit.scale : nan; };
  x.summary(per_call,
            "A metric per call, in base units: quantiles of its per-call values (within 1%), "
            "their sum and the calls with a value.",
            ml, {{"0.5", q(m.p50)}, {"0.9", q(m.p90)}, {"0.99", q(m.p99)}},
            values ? m.mean * static_cast<double>(m.calls) * unit.scale : 0, m.calls);
  for (const auto& [reason, n] : {std::pair<const char*, std::uint64_t>{"unmeasured", m.unmeasured},
                                  {"zero_divisor", m.zero_divisor}}) {
    Labels rl = ml;
    rl.emplace_back("reason", reason);
    x.add("pmcprof_function_metric_skipped_calls_total", "counter",
          "Counted calls without a metric value: an event of it did not run through the call "
          "(unmeasured: multiplexed), or its divisor was 0.",
          rl, static_cast<double>(n));
  }
}

void function_metrics(Exposition& x, const FunctionReport& r) {
  x.add("pmcprof_lost_records_total", "counter",
        "Per-call records the stream lost (totals are then lower bounds).", {},
        static_cast<double>(r.lost));
  probe_bias_metrics(x, r);
  for (const auto& f : r.functions) {
    if (f.total) continue;  // the sum of the key series: Prometheus sums them itself
    Labels fl{{"function", f.function}};
    if (f.other) {
      fl.emplace_back("other", "true");  // --by argN: the keys past --max-keys
    } else if (!f.args.empty()) {
      const auto names = split(r.by, ',');
      for (std::size_t i = 0; i < f.args.size(); ++i) {
        std::string name = i < names.size() ? names[i] : "arg" + std::to_string(i);
        name = name.substr(0, name.find(':'));  // arg0:str -> arg0
        const auto& a = f.args[i];
        fl.emplace_back(name, a.type == KeyValue::Type::string ? a.text : a.display());
      }
    } else if (!f.by_value.empty() && !r.by.empty()) {
      fl.emplace_back(r.by, f.by_value);
    }
    Labels info = fl;
    info.emplace_back("backend", f.backend);
    info.emplace_back("kind", f.kind);
    x.add("pmcprof_probe_info", "gauge", "The backend each probed function is attached with.", info,
          1);
    x.add("pmcprof_function_calls_total", "counter", "Completed calls.", fl,
          static_cast<double>(f.calls));
    x.add("pmcprof_function_not_counted_calls_total", "counter",
          "Calls whose counters did not run (kept in calls, not in event sums).", fl,
          static_cast<double>(f.not_counted));
    x.add("pmcprof_function_hidden_switch_calls_total", "counter",
          "Of the not counted calls, those with a context switch the kernel did not report.", fl,
          static_cast<double>(f.hidden_switches));
    x.add("pmcprof_function_lost_records_total", "counter",
          "Records of this function the stream dropped.", fl, static_cast<double>(f.lost));
    if (f.probe_cost)
      x.add("pmcprof_function_probe_cost_seconds_total", "counter",
            "CPU time the function's probes cost the program: the calibrated cost of a probe "
            "pair to its caller times the calls (an estimate).",
            fl, f.probe_cost->total_ns() / 1e9);
    const std::pair<const char*, std::uint64_t> unmeasured[] = {
        {"too_deep", f.depth_overflow},      {"unmatched_return", f.unmatched_exits},
        {"abandoned", f.abandoned},          {"reentered", f.reentered},
        {"no_thread_state", f.state_failed}, {"not_aggregated", f.not_aggregated}};
    for (const auto& [reason, n] : unmeasured) {
      Labels rl = fl;
      rl.emplace_back("reason", reason);
      x.add("pmcprof_function_unmeasured_calls_total", "counter",
            "Calls seen but not measured or not summed, by reason.", rl, static_cast<double>(n));
    }
    // Where a bias was taken off: the calls whose value is below the noise floor, per quantity
    // (a value, or a total, below it is no measurement of the function).
    auto under_floor = [&](const std::string& quantity, const Distribution& d) {
      if (!d.noise_floor || d.status != CounterStatus::ok) return;
      Labels ql = fl;
      ql.emplace_back("quantity", quantity);
      x.add("pmcprof_function_under_noise_floor_calls_total", "counter",
            "Calls whose value, the probe bias taken off, is below its noise floor.", ql,
            static_cast<double>(d.under_floor));
    };
    under_floor("wall", f.wall);
    under_floor("oncpu", f.oncpu);
    for (const auto& e : f.events) under_floor(e.event, e.per_call);
    x.histogram("pmcprof_function_wall_seconds", "Wall time per call.", fl, f.wall_histogram,
                f.wall.total, 1e-9, kTimeBuckets);
    x.histogram("pmcprof_function_oncpu_seconds", "On-CPU time per call.", fl, f.oncpu_histogram,
                f.oncpu.total, 1e-9, kTimeBuckets);
    for (const auto& e : f.events) {
      // <not supported> and <not counted> have no number: never exported as 0.
      if (e.per_call.status != CounterStatus::ok) continue;
      Labels el = fl;
      el.emplace_back("event", e.event);
      x.add("pmcprof_function_event_measured_calls_total", "counter",
            "Calls the event ran through (measured exactly); fewer than calls when multiplexed.",
            el, static_cast<double>(e.per_call.measured));
      x.add("pmcprof_function_event_estimated", "gauge",
            "1 when the event's total is scaled from the calls it measured to all calls.", el,
            e.per_call.estimated ? 1 : 0);
      // The histogram holds the measured calls: its _sum is theirs, not the scaled total.
      const double measured_sum = e.per_call.percentiles ? e.per_call.measured_sum : 0;
      if (e.unit == "ns") {
        x.add("pmcprof_function_event_seconds_total", "counter",
              "Clock events summed over counted calls, in seconds.", el, e.per_call.total / 1e9);
        x.histogram("pmcprof_function_event_seconds_per_call", "Clock event per call.", el,
                    e.histogram, measured_sum, 1e-9, kTimeBuckets);
      } else {
        x.add("pmcprof_function_event_total", "counter", "Events summed over counted calls.", el,
              e.per_call.total);
        x.histogram("pmcprof_function_event_per_call", "Events per call.", el, e.histogram,
                    measured_sum, 1, kCountBuckets);
      }
    }
    for (const auto& m : f.metrics) metric_metrics(x, m, fl);
  }
}

}  // namespace

PrometheusUnit prometheus_unit_of(const std::string& metric_unit) {
  if (metric_unit == "%") return {"ratio", 0.01};
  if (metric_unit == "per 1k insn") return {"ratio", 1e-3};
  if (metric_unit == "GHz") return {"hertz", 1e9};
  // insn per cycle, cycles per insn, CPUs utilized: ratios as they are.
  return {"ratio", 1};
}

std::string prometheus_escape(const std::string& raw) {
  // Label values must be valid UTF-8 (one bad byte and Prometheus rejects the whole page):
  // bytes that are not, and control characters, become the text \xHH first.
  const std::string value = escape_bytes(raw);
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string render_prometheus(const CountingReport* counting, const FunctionReport* functions,
                              const PrometheusStatus& status) {
  Exposition x;
  if (status.serving)
    x.add("pmcprof_up", "gauge", "1 while pmcprof is counting, 0 while it starts.", {},
          status.up ? 1 : 0);
  x.add("pmcprof_build_info", "gauge", "pmcprof's version and mode.",
        {{"version", PMCPROF_VERSION}, {"mode", status.mode}}, 1);
  if (status.serving)
    x.add("pmcprof_scrapes_total", "counter", "Scrapes served, this one included.", {},
          static_cast<double>(status.scrapes));
  if (counting) {
    x.add("pmcprof_elapsed_seconds", "gauge", "Time counted so far.", {},
          static_cast<double>(counting->elapsed_ns) / 1e9);
    counting_metrics(x, *counting);
  }
  if (functions) {
    x.add("pmcprof_elapsed_seconds", "gauge", "Time counted so far.", {},
          static_cast<double>(functions->elapsed_ns) / 1e9);
    function_metrics(x, *functions);
  }
  return x.text();
}

}  // namespace pmcprof

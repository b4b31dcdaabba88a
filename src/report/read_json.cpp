// pmcprof's JSON read back into the report models: the inverse of render_json.cpp and
// render_func.cpp's JSON. Fields are read by what they mean, not by position; a field the
// renderers always write but a hand-edited file lacks takes the model's default, while a field
// of the wrong type is refused with its path, so a file is either read or named as broken.
#include "pmcprof/report/read_json.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>

#include "pmcprof/events/metric_table.hpp"
#include "pmcprof/report/histogram_view.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

using ojson = nlohmann::ordered_json;

constexpr const char* kReadHint = "pmcprof report and diff read what 'pmcprof stat -j' wrote";

// Where a value is, for error lines: the source (and its line in a stream), then a path.
class Ctx {
 public:
  Ctx(std::string where, SavedRun& run, const KindLookup& kind_of)
      : where_(std::move(where)), run_(run), kind_of_(kind_of) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw UserError(where_ + ": " + shortened(path, 120) + ": " + what, kReadHint);
  }
  const std::string& where() const { return where_; }
  SavedRun& run() const { return run_; }
  EventKind kind(const ojson& owner, const std::string& path, const std::string& event) const;

 private:
  std::string where_;
  SavedRun& run_;
  const KindLookup& kind_of_;
};

std::string member(const std::string& path, const std::string& key) {
  const bool plain =
      !key.empty() &&
      key.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789") == std::string::npos;
  const std::string k = plain ? key : "[\"" + key + "\"]";
  return path.empty() ? k : plain ? path + "." + k : path + k;
}

std::string index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string a_type(const ojson& j) {
  const std::string t = j.type_name();
  return (t == "object" || t == "array") ? "an " + t : "a " + t;
}

const ojson* find(const ojson& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

const ojson& need(const Ctx& c, const ojson& o, const std::string& path, const char* key) {
  const ojson* v = find(o, key);
  if (!v) c.fail(member(path, key), "missing");
  return *v;
}

std::uint64_t as_u64(const Ctx& c, const ojson& v, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 0 && d < 18446744073709551616.0 && std::floor(d) == d)
      return static_cast<std::uint64_t>(d);
  }
  if (v.is_number()) c.fail(path, "expected a whole number >= 0, found " + v.dump());
  c.fail(path, "expected a whole number >= 0, found " + a_type(v));
}

double as_double(const Ctx& c, const ojson& v, const std::string& path) {
  if (!v.is_number()) c.fail(path, "expected a number, found " + a_type(v));
  return v.get<double>();  // finite: parse_json refused 1e999
}

std::string as_string(const Ctx& c, const ojson& v, const std::string& path) {
  if (!v.is_string()) c.fail(path, "expected a string, found " + a_type(v));
  return v.get<std::string>();
}

std::string str(const Ctx& c, const ojson& o, const std::string& path, const char* key) {
  return as_string(c, need(c, o, path, key), member(path, key));
}
std::string str_or(const Ctx& c, const ojson& o, const std::string& path, const char* key,
                   const std::string& def = {}) {
  const ojson* v = find(o, key);
  return v ? as_string(c, *v, member(path, key)) : def;
}
std::uint64_t u64_or(const Ctx& c, const ojson& o, const std::string& path, const char* key,
                     std::uint64_t def = 0) {
  const ojson* v = find(o, key);
  return v ? as_u64(c, *v, member(path, key)) : def;
}
// Absent and null alike: no value.
std::optional<double> opt_num(const Ctx& c, const ojson& o, const std::string& path,
                              const char* key) {
  const ojson* v = find(o, key);
  if (!v || v->is_null()) return std::nullopt;
  return as_double(c, *v, member(path, key));
}
std::optional<std::uint64_t> opt_u64(const Ctx& c, const ojson& o, const std::string& path,
                                     const char* key) {
  const ojson* v = find(o, key);
  if (!v || v->is_null()) return std::nullopt;
  return as_u64(c, *v, member(path, key));
}
bool boolean_or(const Ctx& c, const ojson& o, const std::string& path, const char* key,
                bool def = false) {
  const ojson* v = find(o, key);
  if (!v) return def;
  if (!v->is_boolean()) c.fail(member(path, key), "expected true or false, found " + a_type(*v));
  return v->get<bool>();
}
int int_in(const Ctx& c, const ojson& v, const std::string& path, long long lo, long long hi) {
  if (!v.is_number_integer() || v.get<long long>() < lo ||
      (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) ||
      v.get<long long>() > hi)
    c.fail(path, "expected a whole number from " + std::to_string(lo) + " to " +
                     std::to_string(hi) + ", found " + (v.is_number() ? v.dump() : a_type(v)));
  return static_cast<int>(v.get<long long>());
}
std::optional<int> opt_int(const Ctx& c, const ojson& o, const std::string& path, const char* key,
                           long long lo, long long hi) {
  const ojson* v = find(o, key);
  if (!v || v->is_null()) return std::nullopt;
  return int_in(c, *v, member(path, key), lo, hi);
}
const ojson& object_at(const Ctx& c, const ojson& v, const std::string& path) {
  if (!v.is_object()) c.fail(path, "expected an object, found " + a_type(v));
  return v;
}
const ojson& array_at(const Ctx& c, const ojson& v, const std::string& path) {
  if (!v.is_array()) c.fail(path, "expected an array, found " + a_type(v));
  return v;
}

// "count" is how JSON spells the model's unit-less counts.
std::string unit_of(const Ctx& c, const ojson& o, const std::string& path) {
  const std::string u = str_or(c, o, path, "unit", "count");
  return u == "count" ? "" : u;
}

CounterStatus status_of(const Ctx& c, const ojson& o, const std::string& path) {
  const std::string s = str(c, o, path, "status");
  if (s == "ok") return CounterStatus::ok;
  if (s == "not-counted") return CounterStatus::not_counted;
  if (s == "not-supported") return CounterStatus::not_supported;
  c.fail(member(path, "status"),
         "unknown status " + quote(s) + " (ok, not-counted or not-supported)");
}

EventKind Ctx::kind(const ojson& owner, const std::string& path, const std::string& event) const {
  if (const ojson* attr = find(owner, "attr")) {
    const std::string p = member(path, "attr");
    object_at(*this, *attr, p);
    const std::uint64_t type = as_u64(*this, need(*this, *attr, p, "type"), member(p, "type"));
    if (type > UINT32_MAX) fail(member(p, "type"), "out of range");
    return {static_cast<std::uint32_t>(type),
            as_u64(*this, need(*this, *attr, p, "config"), member(p, "config"))};
  }
  if (kind_of_)
    if (auto k = kind_of_(event)) return *k;
  auto& unknown = run_.unknown_kinds;
  if (std::find(unknown.begin(), unknown.end(), event) == unknown.end()) unknown.push_back(event);
  return {};
}

// ---- counting mode ----

AggrMode aggr_mode_of(const Ctx& c, const std::string& text, const std::string& path) {
  for (AggrMode m : {AggrMode::cpu, AggrMode::thread, AggrMode::core, AggrMode::die,
                     AggrMode::socket, AggrMode::node, AggrMode::global})
    if (text == to_string(m)) return m;
  c.fail(path, "unknown aggregation " + quote(text));
}

AggrId aggr_id_of(const Ctx& c, const ojson& a, const std::string& path) {
  object_at(c, a, path);
  AggrId id;
  constexpr long long kMax = 1 << 30;
  id.socket = opt_int(c, a, path, "socket", 0, kMax).value_or(0);
  id.die = opt_int(c, a, path, "die", 0, kMax).value_or(0);
  id.core = opt_int(c, a, path, "core", 0, kMax).value_or(0);
  id.node = opt_int(c, a, path, "node", 0, kMax).value_or(0);
  id.cpus = opt_int(c, a, path, "cpus", 0, kMax).value_or(0);
  id.tid = opt_int(c, a, path, "tid", 0, kMax).value_or(0);
  id.comm = str_or(c, a, path, "comm");
  return id;
}

// The scope fields counters and metrics share: cpu, aggregate, cgroup.
template <typename Row>
void read_scope(const Ctx& c, const ojson& o, const std::string& path, Row& row) {
  row.cpu = opt_int(c, o, path, "cpu", 0, 1 << 30);
  if (const ojson* a = find(o, "aggregate"))
    row.aggr = aggr_id_of(c, *a, member(path, "aggregate"));
  if (find(o, "cgroup")) {
    row.cgroup = str(c, o, path, "cgroup");
    row.cgroup_id = u64_or(c, o, path, "cgroup_id");
  }
}

CounterRow read_counter(const Ctx& c, const ojson& o, const std::string& path) {
  object_at(c, o, path);
  CounterRow row;
  row.event = str(c, o, path, "event");
  row.kind = c.kind(o, path, row.event);
  row.pmu = str_or(c, o, path, "pmu");  // its core PMU: metrics pair rows of one
  row.group = u64_or(c, o, path, "group");
  read_scope(c, o, path, row);
  row.cgroup_removed = boolean_or(c, o, path, "cgroup_removed");
  row.unit = unit_of(c, o, path);
  row.status = status_of(c, o, path);
  row.enabled_ns = u64_or(c, o, path, "enabled_ns");
  row.running_ns = u64_or(c, o, path, "running_ns");
  if (row.status == CounterStatus::ok) {
    row.value = opt_num(c, o, path, "value").value_or(0);
    row.raw_value = opt_u64(c, o, path, "raw_value").value_or(0);
  }
  row.running_pct =
      opt_num(c, o, path, "running_pct").value_or(running_percent(row.running_ns, row.enabled_ns));
  if (auto sd = opt_num(c, o, path, "stddev_pct")) row.stddev_pct = *sd;
  return row;
}

MetricValue read_metric_value(const Ctx& c, const ojson& o, const std::string& path) {
  object_at(c, o, path);
  MetricValue m;
  m.name = str(c, o, path, "name");
  m.unit = str_or(c, o, path, "unit");
  m.pmu = str_or(c, o, path, "pmu");
  m.group = u64_or(c, o, path, "group");
  read_scope(c, o, path, m);
  m.value = opt_num(c, o, path, "value");
  if (!m.value) m.why_not = str_or(c, o, path, "reason");
  return m;
}

CountingReport read_counting(const Ctx& c, const ojson& j) {
  CountingReport r;
  r.target = str(c, j, "", "target");
  r.interval_s = opt_num(c, j, "", "interval");
  r.timestamp_unix_ns = u64_or(c, j, "", "timestamp_unix_ns");
  r.elapsed_ns = as_u64(c, need(c, j, "", "elapsed_ns"), "elapsed_ns");
  r.runs = opt_int(c, j, "", "runs", 1, 1 << 30).value_or(1);
  r.elapsed_stddev_pct = opt_num(c, j, "", "elapsed_stddev_pct");
  r.interrupted = boolean_or(c, j, "", "interrupted");
  r.exit_status = opt_int(c, j, "", "exit_status", 0, 255);
  r.user_ns = opt_u64(c, j, "", "user_ns");
  r.sys_ns = opt_u64(c, j, "", "sys_ns");
  if (find(j, "cgroup_backend")) {
    const std::string b = str(c, j, "", "cgroup_backend");
    if (b != "fd" && b != "bpf") c.fail("cgroup_backend", "unknown backend " + quote(b));
    r.cgroup_backend = b == "fd" ? CgroupBackend::fd : CgroupBackend::bpf;
  }
  if (const ojson* u = find(j, "cgroup_uncharged")) {
    const std::string path = "cgroup_uncharged";
    object_at(c, *u, path);
    UnchargedCounts uc;
    for (auto [key, field] : {std::pair{"unreported_switches", &uc.unreported_switches},
                              std::pair{"read_errors", &uc.read_errors}})
      *field = as_u64(c, need(c, *u, path, key), member(path, key));
    const std::string cpath = member(path, "counters");
    const ojson& counters = array_at(c, need(c, *u, path, "counters"), cpath);
    for (std::size_t i = 0; i < counters.size(); ++i)
      uc.counters.push_back(read_counter(c, counters[i], index(cpath, i)));
    r.cgroup_uncharged = std::move(uc);
  }
  if (find(j, "aggregate_by"))
    r.aggr_mode = aggr_mode_of(c, str(c, j, "", "aggregate_by"), "aggregate_by");
  const ojson& counters = array_at(c, need(c, j, "", "counters"), "counters");
  for (std::size_t i = 0; i < counters.size(); ++i)
    r.counters.push_back(read_counter(c, counters[i], index("counters", i)));
  if (const ojson* metrics = find(j, "metrics")) {
    array_at(c, *metrics, "metrics");
    for (std::size_t i = 0; i < metrics->size(); ++i)
      r.metrics.push_back(read_metric_value(c, (*metrics)[i], index("metrics", i)));
  }
  return r;
}

// ---- function mode ----

// A distribution's sparse buckets (docs/json.md), in its unit: a metric's are its fixed-point
// bounds times `resolution`. nullopt when the file has none (written before they were).
std::optional<Histogram> read_buckets(const Ctx& c, const ojson& o, const std::string& path,
                                      double resolution = 1) {
  const ojson* b = find(o, "buckets");
  if (!b) return std::nullopt;
  try {
    return histogram_from_buckets(*b, resolution);
  } catch (const UserError& e) {
    c.fail(member(path, "buckets"), e.what());
  }
}

Distribution read_distribution(const Ctx& c, const ojson& o, const std::string& path,
                               Histogram* histogram) {
  object_at(c, o, path);
  Distribution d;
  d.status = status_of(c, o, path);
  d.measured = u64_or(c, o, path, "measured_calls");
  d.estimated = boolean_or(c, o, path, "estimated");
  d.noise_floor = opt_num(c, o, path, "noise_floor");
  d.under_floor = u64_or(c, o, path, "calls_under_noise_floor");
  if (d.status == CounterStatus::ok) {
    d.total = opt_num(c, o, path, "total").value_or(0);
    const auto mean = opt_num(c, o, path, "mean");
    d.no_calls = !mean;  // ok without a mean: never called (total 0)
    d.mean = mean.value_or(0);
    const auto p50 = opt_num(c, o, path, "p50");
    d.percentiles = p50.has_value() && !d.no_calls;
    d.p50 = p50.value_or(0);
    d.p90 = opt_num(c, o, path, "p90").value_or(0);
    d.p99 = opt_num(c, o, path, "p99").value_or(0);
    d.min = opt_num(c, o, path, "min").value_or(0);
    d.max = opt_num(c, o, path, "max").value_or(0);
    // The measured calls' own sum: written when the total is estimated, the total otherwise.
    d.measured_sum = opt_num(c, o, path, "measured_sum").value_or(d.estimated ? 0 : d.total);
  }
  if (histogram) {
    if (auto h = read_buckets(c, o, path))
      *histogram = std::move(*h);
    else if (d.status == CounterStatus::ok && d.measured > 0)
      c.run().histograms = false;
  }
  return d;
}

// What the per-call figures of a metric divide by, and the unit of its fixed-point histogram,
// both from its formula (the JSON keeps the formula and which event each input was).
void metric_ratio_facts(FuncMetricRow& m) {
  std::optional<MetricFormula::Ratio> ratio;
  try {
    ratio = MetricFormula::parse(m.formula).ratio();
  } catch (const std::logic_error&) {  // invalid_argument, or out_of_range for a number
    return;                            // an edited formula: no divisor to name
  }
  m.per_unit =
      (ratio ? ratio->scale : 1) / static_cast<double>(std::uint64_t{1} << kMetricFracBits);
  if (!ratio) return;
  for (const auto& [input, event] : m.events)
    if (input == ratio->denominator) m.divisor = event;
}

FuncMetricRow read_func_metric(const Ctx& c, const std::string& name, const ojson& o,
                               const std::string& path) {
  object_at(c, o, path);
  FuncMetricRow m;
  m.name = name;
  m.unit = str_or(c, o, path, "unit");
  m.formula = str_or(c, o, path, "formula");
  if (const ojson* events = find(o, "events")) {
    const std::string ep = member(path, "events");
    object_at(c, *events, ep);
    for (const auto& [input, event] : events->items())
      m.events.emplace_back(input, as_string(c, event, member(ep, input)));
  }
  m.requested = boolean_or(c, o, path, "requested");
  m.of_totals = opt_num(c, o, path, "of_totals");
  m.reason = str_or(c, o, path, "reason");
  m.estimated = boolean_or(c, o, path, "estimated");
  metric_ratio_facts(m);
  const ojson* pc = find(o, "per_call");
  if (!pc || pc->is_null()) {
    m.per_call_reason = str_or(c, o, path, "per_call_reason");
    return m;
  }
  const std::string pp = member(path, "per_call");
  object_at(c, *pc, pp);
  m.per_call = true;
  m.calls = u64_or(c, *pc, pp, "calls");
  m.unmeasured = u64_or(c, *pc, pp, "unmeasured");
  m.zero_divisor = u64_or(c, *pc, pp, "zero_divisor");
  m.mean = opt_num(c, *pc, pp, "mean").value_or(0);
  m.p50 = opt_num(c, *pc, pp, "p50").value_or(0);
  m.p90 = opt_num(c, *pc, pp, "p90").value_or(0);
  m.p99 = opt_num(c, *pc, pp, "p99").value_or(0);
  m.min = opt_num(c, *pc, pp, "min").value_or(0);
  m.max = opt_num(c, *pc, pp, "max").value_or(0);
  // The step its buckets are written in: the file's, else the formula's.
  const double resolution = opt_num(c, *pc, pp, "resolution").value_or(m.per_unit);
  if (resolution > 0) {
    m.per_unit = resolution;
    if (auto h = read_buckets(c, *pc, pp, resolution)) m.histogram = std::move(*h);
  }
  return m;
}

KeyValue read_key_value(const Ctx& c, const ojson& v, const std::string& path) {
  KeyValue k;
  if (v.is_string()) {
    k.text = v.get<std::string>();
  } else if (v.is_number_unsigned()) {
    k.type = KeyValue::Type::unsigned_int;
    k.bits = v.get<std::uint64_t>();
  } else if (v.is_number_integer()) {
    k.type = KeyValue::Type::signed_int;
    k.bits = static_cast<std::uint64_t>(v.get<std::int64_t>());
  } else if (v.is_object() && find(v, "unreadable_at")) {
    k.type = KeyValue::Type::unreadable;
    k.bits = u64_or(c, v, path, "unreadable_at");
  } else {
    c.fail(path,
           "expected a string, a whole number or {\"unreadable_at\": ADDRESS}, found " + a_type(v));
  }
  return k;
}

// The --by key of a row: its arguments (--by argN) or the value under the key's own name.
void read_key(const Ctx& c, const ojson& o, const std::string& path, const std::string& by,
              FuncRow& f) {
  if (by.empty()) return;
  // --top: the keys past the N largest, in one row.
  if (const auto folded = u64_or(c, o, path, "folded")) {
    f.folded = folded;
    f.by_value = "(other " + std::to_string(folded) + (folded == 1 ? " key)" : " keys)");
    return;
  }
  if (starts_with(by, "arg")) {
    f.other = boolean_or(c, o, path, "other");
    const ojson* args = find(o, "args");
    if (f.other || !args || args->is_null()) {
      f.by_value = f.other ? "(other)" : "";
      return;
    }
    const std::string ap = member(path, "args");
    array_at(c, *args, ap);
    std::vector<std::string> shown;
    for (std::size_t i = 0; i < args->size(); ++i) {
      f.args.push_back(read_key_value(c, (*args)[i], index(ap, i)));
      shown.push_back(f.args.back().display());
    }
    f.by_value = join(shown, ", ");
    return;
  }
  f.by_value = str_or(c, o, path, by.c_str());
  f.cgroup_id = opt_u64(c, o, path, "cgroup_id");
}

FuncRow read_function(const Ctx& c, const ojson& o, const std::string& path,
                      const std::string& by) {
  object_at(c, o, path);
  FuncRow f;
  f.function = str(c, o, path, "function");
  f.backend = str_or(c, o, path, "backend");
  f.kind = str_or(c, o, path, "kind", "function");
  read_key(c, o, path, by, f);
  f.open = opt_u64(c, o, path, "open");
  f.calls = u64_or(c, o, path, "calls");
  f.not_counted = u64_or(c, o, path, "not_counted");
  f.hidden_switches = u64_or(c, o, path, "not_counted_hidden_switch");
  f.lost = u64_or(c, o, path, "lost");
  f.slept = u64_or(c, o, path, "slept");
  f.migrated = u64_or(c, o, path, "migrated");
  f.multiplexed = u64_or(c, o, path, "multiplexed");
  f.depth_overflow = u64_or(c, o, path, "depth_overflow");
  f.unmatched_exits = u64_or(c, o, path, "unmatched_exits");
  f.abandoned = u64_or(c, o, path, "abandoned");
  f.reentered = u64_or(c, o, path, "reentered");
  f.state_failed = u64_or(c, o, path, "state_failed");
  f.not_aggregated = u64_or(c, o, path, "not_aggregated");
  f.read_errors = u64_or(c, o, path, "read_errors");
  f.backend_note = str_or(c, o, path, "backend_note");
  if (const ojson* cost = find(o, "probe_cost")) {
    const std::string cp = member(path, "probe_cost");
    object_at(c, *cost, cp);
    f.probe_cost = FuncRow::ProbeCost{opt_num(c, *cost, cp, "per_call_ns").value_or(0),
                                      opt_num(c, *cost, cp, "calls").value_or(0)};
  }
  f.wall = read_distribution(c, need(c, o, path, "wall"), member(path, "wall"), &f.wall_histogram);
  f.oncpu =
      read_distribution(c, need(c, o, path, "oncpu"), member(path, "oncpu"), &f.oncpu_histogram);
  const std::string ep = member(path, "events");
  for (const auto& [name, ev] : object_at(c, need(c, o, path, "events"), ep).items()) {
    const std::string p = member(ep, name);
    FuncEventRow e;
    e.event = name;
    e.per_call = read_distribution(c, ev, p, &e.histogram);
    e.kind = c.kind(ev, p, name);
    e.unit = unit_of(c, ev, p);
    f.events.push_back(std::move(e));
  }
  if (const ojson* metrics = find(o, "metrics")) {
    const std::string mp = member(path, "metrics");
    for (const auto& [name, m] : object_at(c, *metrics, mp).items())
      f.metrics.push_back(read_func_metric(c, name, m, member(mp, name)));
  }
  return f;
}

// A bias's events are keyed by name only: their unit is the run's (from the functions' events).
std::string event_unit(const FunctionReport& r, const std::string& event) {
  for (const auto& f : r.functions)
    for (const auto& e : f.events)
      if (e.event == event) return e.unit;
  return {};
}

std::vector<ProbeBiasRow::Event> read_bias_events(const Ctx& c, const ojson& o,
                                                  const std::string& path,
                                                  const FunctionReport& r) {
  std::vector<ProbeBiasRow::Event> out;
  const ojson* events = find(o, "events");
  if (!events) return out;
  const std::string ep = member(path, "events");
  for (const auto& [name, v] : object_at(c, *events, ep).items())
    out.push_back(
        {name, event_unit(r, name),
         v.is_null() ? std::nullopt : std::optional<double>(as_double(c, v, member(ep, name)))});
  return out;
}

ProbeBiasRow read_bias(const Ctx& c, const ojson& o, const std::string& path,
                       const FunctionReport& r) {
  object_at(c, o, path);
  ProbeBiasRow b;
  b.backend = str_or(c, o, path, "backend");
  b.kind = str_or(c, o, path, "kind", "function");
  b.first_instruction = str_or(c, o, path, "first_instruction");
  b.calibrated = boolean_or(c, o, path, "calibrated");
  b.why_not = str_or(c, o, path, "why_not");
  b.probed = str_or(c, o, path, "probed");
  b.subtracted = boolean_or(c, o, path, "subtracted");
  b.calls = u64_or(c, o, path, "calls");
  b.wall_ns = opt_num(c, o, path, "wall_ns").value_or(0);
  b.oncpu_ns = opt_num(c, o, path, "oncpu_ns").value_or(0);
  b.events = read_bias_events(c, o, path, r);
  if (const ojson* nested = find(o, "nested")) {
    const std::string np = member(path, "nested");
    object_at(c, *nested, np);
    b.nested = ProbeBiasRow::Nested{read_bias_events(c, *nested, np, r),
                                    opt_num(c, *nested, np, "wall_ns").value_or(0),
                                    opt_num(c, *nested, np, "oncpu_ns").value_or(0),
                                    opt_num(c, *nested, np, "wall_floor_ns"),
                                    opt_num(c, *nested, np, "oncpu_floor_ns"),
                                    opt_num(c, *nested, np, "wall_tail_ns"),
                                    opt_num(c, *nested, np, "oncpu_tail_ns")};
    b.nested_subtracted = boolean_or(c, *nested, np, "subtracted");
  }
  return b;
}

// --by: each function's total row (files from before it have none), placed after the
// function's keys as the report made it.
void read_totals(const Ctx& c, const ojson& j, const std::string& path, FunctionReport& r) {
  const ojson* totals = find(j, "totals");
  if (!totals) return;
  const std::string tp = member(path, "totals");
  array_at(c, *totals, tp);
  for (std::size_t i = 0; i < totals->size(); ++i) {
    const std::string p = index(tp, i);
    FuncRow t = read_function(c, (*totals)[i], p, "");
    t.total = true;
    t.by_value = "(total)";
    t.keys = u64_or(c, (*totals)[i], p, "keys");
    t.sorted_by = str_or(c, (*totals)[i], p, "sorted_by");
    auto last = std::find_if(r.functions.rbegin(), r.functions.rend(), [&](const FuncRow& f) {
      return f.function == t.function && f.kind == t.kind;
    });
    r.functions.insert(last == r.functions.rend() ? r.functions.end() : last.base(), std::move(t));
  }
}

FunctionReport read_function_report(const Ctx& c, const ojson& j, const std::string& path) {
  FunctionReport r;
  r.target = str(c, j, path, "target");
  r.aggregation = str_or(c, j, path, "aggregation", "stream");
  r.by = str_or(c, j, path, "by");
  r.max_keys = u64_or(c, j, path, "max_keys");
  if (const ojson* top = find(j, "top")) r.top = as_u64(c, *top, member(path, "top"));
  r.interval_s = opt_num(c, j, path, "interval");
  r.timestamp_unix_ns = u64_or(c, j, path, "timestamp_unix_ns");
  r.elapsed_ns = as_u64(c, need(c, j, path, "elapsed_ns"), member(path, "elapsed_ns"));
  r.interrupted = boolean_or(c, j, path, "interrupted");
  r.exit_status = opt_int(c, j, path, "exit_status", 0, 255);
  r.lost = u64_or(c, j, path, "lost");
  r.partial = boolean_or(c, j, path, "partial", r.lost > 0);
  r.untracked = u64_or(c, j, path, "untracked_processes");
  const std::string fp = member(path, "functions");
  const ojson& functions = array_at(c, need(c, j, path, "functions"), fp);
  for (std::size_t i = 0; i < functions.size(); ++i)
    r.functions.push_back(read_function(c, functions[i], index(fp, i), r.by));
  read_totals(c, j, path, r);
  if (const ojson* biases = find(j, "probe_bias")) {
    const std::string bp = member(path, "probe_bias");
    array_at(c, *biases, bp);
    for (std::size_t i = 0; i < biases->size(); ++i)
      r.probe_bias.push_back(read_bias(c, (*biases)[i], index(bp, i), r));
  }
  if (const ojson* kv = find(j, "kernel_view")) {
    const std::string kp = member(path, "kernel_view");
    object_at(c, *kv, kp);
    if (find(*kv, "kernel_view")) c.fail(kp, "a kernel_view inside a kernel_view");
    r.kernel_view = std::make_shared<const FunctionReport>(read_function_report(c, *kv, kp));
  }
  return r;
}

// ---- documents and streams ----

// A JSON value that is not a pmcprof record, said as what it seems to be.
[[noreturn]] void not_pmcprof(const Ctx& c, const ojson& j) {
  std::string looks;
  if (j.is_object() && (find(j, "counter-value") || find(j, "metric-value")))
    looks = " (it looks like perf stat -j output)";
  else if (j.is_object() && find(j, "type") && find(j, "data"))
    looks = " (it looks like bpftrace -f json output)";
  const std::string what =
      j.is_object() ? "has no \"schema\" field" : "is " + a_type(j) + ", not an object";
  throw UserError(c.where() + " is not a pmcprof report: its JSON " + what + looks,
                  std::string(kReadHint) + " (its first field is \"schema\": \"pmcprof/1\")");
}

struct Record {
  std::string type;  // report, interval, summary
  RunMode mode = RunMode::counting;
};

Record check_record(const Ctx& c, const ojson& j) {
  if (!j.is_object() || !find(j, "schema")) not_pmcprof(c, j);
  const std::string schema = str(c, j, "", "schema");
  if (schema != kJsonSchema) {
    unsigned long long version = 0;
    if (starts_with(schema, "pmcprof/") && parse_u64(schema.substr(8), version) && version > 1)
      throw UserError(c.where() + " has schema " + quote(schema) +
                          ", newer than this pmcprof reads (" + kJsonSchema + ")",
                      "read it with the pmcprof that wrote it, or a newer one");
    throw UserError(
        c.where() + " has schema " + quote(schema) + ", not pmcprof's (" + kJsonSchema + ")",
        kReadHint);
  }
  Record r;
  r.type = str(c, j, "", "type");
  if (r.type == "list" || r.type == "doctor" || r.type == "diff")
    throw UserError(c.where() + " is the output of 'pmcprof " + r.type + " -j', not a report",
                    kReadHint);
  if (r.type != "report" && r.type != "interval" && r.type != "summary")
    c.fail("type", "unknown record type " + quote(r.type) + " (report, interval or summary)");
  const std::string mode = str(c, j, "", "mode");
  if (mode == "counting")
    r.mode = RunMode::counting;
  else if (mode == "function")
    r.mode = RunMode::function;
  else
    c.fail("mode", "unknown mode " + quote(mode) + " (counting or function)");
  return r;
}

std::pair<std::size_t, std::size_t> line_and_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n')
      ++line, column = 1;
    else
      ++column;
  }
  return {line, column};
}

// nlohmann's message without its "[json.exception...] parse error at ...:" preamble.
std::string parse_message(const ojson::parse_error& e) {
  std::string what = e.what();
  const auto at = what.find("syntax error");
  if (at != std::string::npos) what = what.substr(at);
  return shortened(what, 160);
}

[[noreturn]] void not_json(const std::string& where, std::string_view text,
                           const ojson::parse_error& e, std::size_t first_line = 1) {
  // The byte after the error (e.byte is 1-based): where a reader would look.
  auto [line, column] = line_and_column(text, e.byte > 0 ? e.byte - 1 : 0);
  line += first_line - 1;
  const std::string what = parse_message(e);
  if (what.find("expected end of input") != std::string::npos)
    throw UserError(where + " holds more than one JSON document (the second starts at line " +
                        std::to_string(line) + ")",
                    "give one report per file");
  throw UserError(where + " is not JSON (line " + std::to_string(line) + ", column " +
                      std::to_string(column) + ": " + what + ")",
                  kReadHint);
}

// nlohmann refuses a number beyond double's range (1e999) with out_of_range 406 and no
// position; the number is quoted in its message, so the first place it occurs is where it is.
[[noreturn]] void number_overflow(const std::string& where, std::string_view text,
                                  const ojson::out_of_range& e, std::size_t first_line = 1) {
  const std::string what = e.what();
  const auto open = what.find('\'');
  const auto close = what.rfind('\'');
  const std::string number =
      open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
  const std::size_t at = number.empty() ? std::string_view::npos : text.find(number);
  std::string place;
  if (at != std::string_view::npos) {
    auto [line, column] = line_and_column(text, at);
    place = "line " + std::to_string(line + first_line - 1) + ", column " + std::to_string(column) +
            ": ";
  }
  throw UserError(where + " holds a number too large for a double (" + place +
                      shortened(number.empty() ? what : number, 60) + ")",
                  kReadHint);
}

// Any bytes parse as JSON or are refused in one line: a syntax error, or a number out of range.
ojson parse_json(std::string_view text, const std::string& where, std::size_t first_line = 1) {
  try {
    return ojson::parse(text);
  } catch (const ojson::parse_error& e) {
    not_json(where, text, e, first_line);
  } catch (const ojson::out_of_range& e) {
    number_overflow(where, text, e, first_line);
  }
}

struct Value {
  ojson json;
  std::size_t line = 0;  // of an NDJSON record; 0 for a whole document
};

// One document, or one record a line (NDJSON) when the first line is a whole object by itself.
std::vector<Value> parse_values(std::string_view text, const std::string& source) {
  std::vector<Value> out;
  std::vector<std::pair<std::string_view, std::size_t>> lines;
  std::size_t start = 0, number = 1;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = trim(text.substr(start, end - start));
    if (!line.empty()) lines.emplace_back(line, number);
    start = end + 1;
    ++number;
  }
  if (lines.empty()) throw UserError(source + " is empty", kReadHint);
  const bool ndjson =
      lines.size() > 1 && lines.front().first.front() == '{' && ojson::accept(lines.front().first);
  if (!ndjson) {
    out.push_back({parse_json(text, source), 0});
    return out;
  }
  for (const auto& [line, n] : lines) out.push_back({parse_json(line, source, n), n});
  return out;
}

std::string where_of(const std::string& source, const Value& v) {
  return v.line ? source + " line " + std::to_string(v.line) : source;
}

void add_record(SavedRun& run, const Record& rec, const Ctx& c, const ojson& j) {
  const bool totals = rec.type != "interval";
  if (rec.mode == RunMode::counting) {
    CountingReport r = read_counting(c, j);
    if (totals)
      run.counting = std::move(r);
    else
      run.counting_intervals.push_back(std::move(r));
  } else {
    FunctionReport r = read_function_report(c, j, "");
    if (totals)
      run.function = std::move(r);
    else
      run.function_intervals.push_back(std::move(r));
  }
}

}  // namespace

const char* to_string(RunMode m) {
  return m == RunMode::counting ? "counting" : "function";
}

SavedRun read_saved_run(std::string_view text, const std::string& source,
                        const KindLookup& kind_of) {
  SavedRun run;
  const std::vector<Value> values = parse_values(text, source);
  run.streamed = values.size() > 1;
  std::optional<std::string> totals_at;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Ctx c(where_of(source, values[i]), run, kind_of);
    const Record rec = check_record(c, values[i].json);
    if (i == 0) {
      run.mode = rec.mode;
      run.streamed |= rec.type != "report";
    } else if (rec.mode != run.mode) {
      throw UserError(c.where() + " is a " + to_string(rec.mode) + "-mode record, line " +
                          std::to_string(values[0].line) + " a " + to_string(run.mode) +
                          "-mode one: one run per file",
                      "give one report per file");
    }
    if (totals_at)
      throw UserError(c.where() + ": a record after the run's " + *totals_at,
                      "give one report per file");
    if (rec.type == "report" && values.size() > 1)
      throw UserError(c.where() + " is a whole report, in a file of " +
                          std::to_string(values.size()) + " JSON values: one run per file",
                      "give one report per file");
    if (rec.type != "interval") totals_at = rec.type + " (" + c.where() + ")";
    add_record(run, rec, c, values[i].json);
  }
  return run;
}

const CountingReport& counting_totals(const SavedRun& run, const std::string& source) {
  if (!run.counting)
    throw UserError(source + " holds interval records without the run's summary",
                    "record the run with 'pmcprof stat -j -I MS --summary'");
  return *run.counting;
}

const FunctionReport& function_totals(const SavedRun& run, const std::string& source) {
  if (!run.function)
    throw UserError(source + " holds interval records without the run's summary",
                    "pmcprof writes the summary when the run ends; the file was cut short");
  return *run.function;
}

void render_saved_run(const SavedRun& run, RenderOptions opts, std::ostream& out,
                      const std::string& source) {
  opts.intervals = run.streamed;
  if (run.mode == RunMode::function) {
    auto renderer = make_func_renderer(opts, out);
    for (const auto& r : run.function_intervals) renderer->interval(r);
    if (run.function) renderer->final(*run.function);
    return;
  }
  auto metric_only = [](const CountingReport& r) {
    return r.counters.empty() && !r.metrics.empty();
  };
  bool any = run.counting && metric_only(*run.counting);
  for (const auto& r : run.counting_intervals) any |= metric_only(r);
  opts.metric_only = any;
  if (any && opts.format != OutputFormat::json)
    throw UserError(source +
                        " was written with --metric-only: it holds metrics without the "
                        "counts that text and CSV are rendered from",
                    "render it as JSON (-j), or record the run without --metric-only");
  auto renderer = make_renderer(opts, out);
  for (const auto& r : run.counting_intervals) renderer->interval(r);
  if (run.counting) renderer->final(*run.counting);
}

}  // namespace pmcprof

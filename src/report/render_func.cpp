// Function-mode renderers: one model (FunctionReport), text / CSV / JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "pmcprof/report/func_hist.hpp"
#include "pmcprof/report/func_report.hpp"
#include "pmcprof/report/histogram_view.hpp"
#include "pmcprof/report/json_number.hpp"
#include "pmcprof/report/number_format.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

using ojson = nlohmann::ordered_json;

// Strings from outside (function names, thread names, cgroup paths, the command line): in
// text and CSV every byte that is not UTF-8 and every control character becomes \xHH; in
// JSON only the bytes that are not UTF-8 (JSON escapes control characters itself).
std::string esc(const std::string& s) {
  return escape_bytes(s);
}
std::string text(const std::string& s) {
  return escape_bytes(s, false);
}
std::string dump(const ojson& j, int indent = -1) {
  return j.dump(indent, ' ', false, ojson::error_handler_t::replace);
}

// "1 key", "3 keys"
std::string plural(std::uint64_t n, const std::string& what) {
  return format_grouped(static_cast<double>(n), 0) + " " + what + (n == 1 ? "" : "s");
}

std::string dist_cells(const Distribution& d, const std::string& unit, std::uint64_t calls) {
  if (d.status == CounterStatus::not_supported) return pad_left("<not supported>", 16);
  if (d.status == CounterStatus::not_counted) return pad_left("<not counted>", 16);
  if (d.no_calls) return pad_left(format_amount(0, unit, true), 16) + pad_left("-", 16);
  // A per-call figure below the noise floor (the spread of the probe bias taken off) is not a
  // measurement of the function: marked with '*' and explained after the row.
  auto flagged = [&d](double v, const std::string& text) {
    return d.below_floor(v) ? text + "*" : text;
  };
  // The total is the mean times the calls: below the floor with it.
  std::string cells = pad_left(flagged(d.mean, format_amount(d.total, unit, true)), 16) +
                      pad_left(flagged(d.mean, format_amount(d.mean, unit, false)), 16);
  bool any_flag = d.below_floor(d.mean);
  for (double v : {d.p50, d.p90, d.p99, d.min, d.max}) {
    cells += pad_left(d.percentiles ? flagged(v, format_point(v, unit)) : "-", 14);
    any_flag |= d.percentiles && d.below_floor(v);
  }
  // perf marks a scaled count with its running share; per call, the share of calls measured.
  if (d.estimated)
    cells += "  (estimated: " + format_grouped(static_cast<double>(d.measured), 0) + " of " +
             format_grouped(static_cast<double>(calls), 0) + " calls measured)";
  // A call's floor is the row's and, for k probed calls nested in it, ceil(sqrt(k)) times
  // their spread and k times their tail.
  if (d.noise_floor && (any_flag || d.under_floor > 0))
    cells += "  (*: below the noise floor, " + format_amount(*d.noise_floor, unit, false) +
             " and more with probed calls inside: " +
             format_grouped(static_cast<double>(d.under_floor), 0) + " of " +
             format_grouped(static_cast<double>(d.measured), 0) + " calls)";
  return cells;
}

// A metric's value in text: two decimals (grouped), and two significant digits below 0.1
// ("0.012", "0.0031").
std::string metric_number(double v) {
  int decimals = 2;
  if (v != 0 && std::fabs(v) < 0.1)
    decimals = std::min(9, 1 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return format_grouped(v, decimals);
}

// What the per-call columns of a metric cover: "1,000 of 1,000 calls", and why calls are
// missing ("600 of 1,000 calls; 400 multiplexed out").
std::string metric_coverage(const FuncMetricRow& m, std::uint64_t counted) {
  if (!m.per_call) return "per call: " + m.per_call_reason;
  std::string out = format_grouped(static_cast<double>(m.calls), 0) + " of " +
                    format_grouped(static_cast<double>(counted), 0) +
                    (counted == 1 ? " call" : " calls");
  std::vector<std::string> why;
  if (m.unmeasured)
    why.push_back(format_grouped(static_cast<double>(m.unmeasured), 0) +
                  " not measured (multiplexed)");
  if (m.zero_divisor)
    why.push_back(format_grouped(static_cast<double>(m.zero_divisor), 0) + " with " +
                  text(m.divisor) + " 0");
  if (!why.empty()) out += "; " + join(why, ", ");
  return out;
}

std::string metric_cells(const FuncMetricRow& m, std::uint64_t counted) {
  if (!m.of_totals && m.reason != "no calls")
    return pad_left("<not computed>", 16) + "  " + text(m.reason);
  std::string cells = pad_left(m.of_totals ? metric_number(*m.of_totals) : "-", 16);
  const bool values = m.per_call && m.calls > 0;
  cells += pad_left(values ? metric_number(m.mean) : "-", 16);
  for (double v : {m.p50, m.p90, m.p99, m.min, m.max})
    cells += pad_left(values ? metric_number(v) : "-", 14);
  cells += "  " + m.unit;
  if (m.estimated) cells += ", of estimated totals";
  return cells + " (" + metric_coverage(m, counted) + ")";
}

void text_rows(std::ostream& out, const FunctionReport& r, const HistOptions& hist) {
  for (const auto& f : r.functions) {
    out << " " << esc(f.function) << "  [" << f.backend
        << (f.kind == "function" ? "" : " " + f.kind) << "]";
    if (f.total)
      out << "  total (" << plural(f.keys, "key") << (f.sorted_by.empty() ? "" : ", sorted by ")
          << esc(f.sorted_by) << ")";
    else if (f.folded)
      out << "  other (" << plural(f.folded, "key") << " past --top " << r.top.value_or(0) << ")";
    else if (f.other)
      out << "  other keys (past the first " << r.max_keys << ")";
    else if (!f.args.empty())
      out << "  " << esc(f.by_value);
    else if (!f.by_value.empty())
      out << "  " << r.by << " " << esc(f.by_value);
    out << "\n";
    if (f.kind == "probe") {
      // A single probe's hit is a call of zero length: its count is what there is to say.
      out << "   " << format_grouped(static_cast<double>(f.calls), 0)
          << (f.calls == 1 ? " hit" : " hits");
      if (f.lost) out << ", " << format_grouped(static_cast<double>(f.lost), 0) << " lost";
      out << "\n\n";
      continue;
    }
    out << "   " << format_grouped(static_cast<double>(f.calls), 0)
        << (f.calls == 1 ? " call, " : " calls, ")
        << format_grouped(static_cast<double>(f.not_counted), 0) << " not counted"
        << (f.hidden_switches ? " (" + format_grouped(static_cast<double>(f.hidden_switches), 0) +
                                    " at a switch the kernel did not report)"
                              : std::string())
        // With --by a function's lost records are its total row's: no key has them.
        << (r.by.empty() || f.total
                ? ", " + format_grouped(static_cast<double>(f.lost), 0) + " lost"
                : std::string())
        << ", " << format_grouped(static_cast<double>(f.slept), 0) << " slept, "
        << format_grouped(static_cast<double>(f.migrated), 0) << " migrated";
    if (f.multiplexed)
      out << ", " << format_grouped(static_cast<double>(f.multiplexed), 0) << " multiplexed";
    if (f.kind == "region" && (f.depth_overflow || f.unmatched_exits || f.abandoned))
      out << ", " << format_grouped(static_cast<double>(f.depth_overflow), 0) << " too deep, "
          << format_grouped(static_cast<double>(f.unmatched_exits), 0) << " ends without a start"
          << (f.abandoned ? ", " + format_grouped(static_cast<double>(f.abandoned), 0) +
                                " starts left behind (the thread exec'd or its stack unwound)"
                          : std::string())
          << " (not measured)";
    else if (f.depth_overflow || f.unmatched_exits || f.abandoned)
      out << ", " << format_grouped(static_cast<double>(f.depth_overflow), 0) << " too deep, "
          << format_grouped(static_cast<double>(f.unmatched_exits), 0) << " unmatched returns, "
          << format_grouped(static_cast<double>(f.abandoned), 0)
          << " never returned (not measured)";
    out << "\n";
    // Calls seen but not measured or not summed: never silent.
    const std::pair<std::uint64_t, const char*> unmeasured[] = {
        {f.reentered, "inside pmcprof's own probes"},
        {f.state_failed, "without per-thread state"},
        {f.not_aggregated, "not aggregated in the kernel (busy or full)"},
        {f.read_errors, "with a failed counter read"}};
    for (const auto& [n, what] : unmeasured)
      if (n) out << "   " << format_grouped(static_cast<double>(n), 0) << " calls " << what << "\n";
    if (f.open && *f.open)
      out << "   " << format_grouped(static_cast<double>(*f.open), 0)
          << (*f.open == 1 ? " start" : " starts") << " never ended (not measured)\n";
    if (!f.backend_note.empty()) out << "   (" << f.backend_note << ")\n";
    if (f.probe_cost && f.probe_cost->calls > 0)
      out << "   probes cost about " << format_duration(f.probe_cost->total_ns())
          << " of CPU time in all, " << format_duration(f.probe_cost->per_call_ns)
          << " a call (the calibrated cost of a probe pair to its caller)\n";
    // The label column fits the longest event name (model events such as
    // arm_ac57::INST_RETIRED:u are longer than the 20 columns that suit the rest).
    std::size_t label = 20;
    for (const auto& e : f.events) label = std::max(label, esc(e.event).size() + 2);
    out << "   " << pad_right("", label) << pad_left("total", 16) << pad_left("mean/call", 16)
        << pad_left("p50", 14) << pad_left("p90", 14) << pad_left("p99", 14) << pad_left("min", 14)
        << pad_left("max", 14) << "\n";
    const std::uint64_t counted = f.calls - f.not_counted;
    for (const auto& e : f.events)
      out << "   " << pad_right(esc(e.event), label) << dist_cells(e.per_call, e.unit, counted)
          << "\n";
    out << "   " << pad_right("wall time", label) << dist_cells(f.wall, "ns", f.calls) << "\n";
    out << "   " << pad_right("on-CPU time", label) << dist_cells(f.oncpu, "ns", counted) << "\n";
    if (!f.metrics.empty()) {
      // The ratio of totals is what perf prints; the per-call columns are over the calls.
      out << "   " << pad_right("metric", label) << pad_left("of totals", 16)
          << pad_left("mean/call", 16) << pad_left("p50", 14) << pad_left("p90", 14)
          << pad_left("p99", 14) << pad_left("min", 14) << pad_left("max", 14) << "\n";
      for (const auto& m : f.metrics)
        out << "   " << pad_right(esc(m.name), label) << metric_cells(m, counted) << "\n";
    }
    out << func_hist_text(f, hist) << "\n";
  }
}

// " probe bias (uprobe, 64 calls of an empty function in pmcprof; subtracted): the probe adds
//  about 1.52 us and 412 instructions per call"
std::string bias_line(const ProbeBiasRow& b) {
  std::string line = " probe bias (" + b.backend + (b.kind == "region" ? " region" : "");
  if (!b.first_instruction.empty()) line += ", first instruction " + b.first_instruction;
  if (!b.calibrated) return line + "): not measured: " + b.why_not;
  line += ", " + format_grouped(static_cast<double>(b.calls), 0) + " calls of " + b.probed +
          (b.subtracted ? "; subtracted" : "; not subtracted") + "): the probe adds about " +
          format_duration(b.oncpu_ns, true) + " on-CPU, " + format_duration(b.wall_ns, true) +
          " wall";
  auto amounts = [](const std::vector<ProbeBiasRow::Event>& events) {
    std::string text;
    for (const auto& e : events)
      // Whole numbers: the bias is a median of calls' counts, the nested cost a whole count.
      if (e.per_call) text += ", " + format_point(*e.per_call, e.unit) + " " + e.event;
    return text;
  };
  line += amounts(b.events) + " per call";
  if (b.nested)
    line += "; a probed call nested in another adds it about " +
            format_duration(b.nested->oncpu_ns, true) + " on-CPU, " +
            format_duration(b.nested->wall_ns, true) + " wall" + amounts(b.nested->events) +
            (b.nested_subtracted ? " (subtracted)" : " (not subtracted)");
  return line;
}

void text_final(std::ostream& out, const FunctionReport& r, const HistOptions& hist) {
  out << "\n Function counter stats for '" << esc(r.target) << "' (" << r.aggregation
      << " aggregation):\n\n";
  text_rows(out, r, hist);
  for (const auto& b : r.probe_bias) out << bias_line(b) << "\n";
  if (r.untracked)
    out << " WARNING: " << format_grouped(static_cast<double>(r.untracked), 0)
        << " new processes could not be followed: their calls are missing\n";
  if (r.partial)
    out << " WARNING: " << format_grouped(static_cast<double>(r.lost), 0)
        << " records lost: totals are lower bounds (raise --buffer-pages, or --aggregate kernel)\n";
  char buf[96];
  std::snprintf(buf, sizeof(buf), "\n %17.9f seconds time elapsed\n\n",
                static_cast<double>(r.elapsed_ns) / 1e9);
  out << buf;
}

ojson dist_json(const Distribution& d) {
  ojson j;
  const bool ok = d.status == CounterStatus::ok;
  j["status"] = to_string(d.status);
  // An estimated total (scaled to all calls) is a count all the same: rounded.
  j["total"] = ok ? json_number(shown_total(d)) : ojson(nullptr);
  // No calls: the total is 0, per-call figures do not exist.
  const bool per_call = ok && !d.no_calls;
  j["mean"] = per_call ? ojson(d.mean) : ojson(nullptr);
  // Percentiles are whole numbers (make_distribution): integers, as min and max.
  const bool exact = per_call && d.percentiles;
  j["p50"] = exact ? json_number(d.p50) : ojson(nullptr);
  j["p90"] = exact ? json_number(d.p90) : ojson(nullptr);
  j["p99"] = exact ? json_number(d.p99) : ojson(nullptr);
  j["min"] = exact ? json_number(d.min) : ojson(nullptr);
  j["max"] = exact ? json_number(d.max) : ojson(nullptr);
  j["measured_calls"] = d.measured;
  j["estimated"] = d.estimated;
  // Estimated: the total is scaled; the measured calls' own sum is what their buckets hold.
  if (ok && d.estimated) j["measured_sum"] = json_number(d.measured_sum);
  // With the probe bias taken off: its spread, and the measured calls below it.
  if (d.noise_floor) {
    j["noise_floor"] = json_number(*d.noise_floor);
    j["calls_under_noise_floor"] = d.under_floor;
  }
  return j;
}

ojson metric_json(const FuncMetricRow& m) {
  ojson j;
  j["unit"] = m.unit;
  j["formula"] = m.formula;
  ojson events = ojson::object();
  for (const auto& [input, event] : m.events) events[input] = text(event);
  j["events"] = std::move(events);
  j["requested"] = m.requested;
  const bool computed = m.of_totals.has_value();
  j["status"] = computed ? "ok" : "not-computed";
  if (!computed) j["reason"] = m.reason;
  j["of_totals"] = computed ? ojson(*m.of_totals) : ojson(nullptr);
  j["estimated"] = m.estimated;
  if (!m.per_call) {
    j["per_call"] = nullptr;
    j["per_call_reason"] = m.per_call_reason;
    return j;
  }
  ojson pc;
  pc["calls"] = m.calls;
  pc["unmeasured"] = m.unmeasured;
  pc["zero_divisor"] = m.zero_divisor;
  const bool values = m.calls > 0;
  for (const auto& [k, v] : {std::pair<const char*, double>{"mean", m.mean},
                             {"p50", m.p50},
                             {"p90", m.p90},
                             {"p99", m.p99},
                             {"min", m.min},
                             {"max", m.max}})
    pc[k] = values ? ojson(v) : ojson(nullptr);
  // Bucket bounds are the fixed-point bounds times the resolution (the value of one step).
  pc["resolution"] = m.per_unit;
  pc["buckets"] = histogram_buckets_json(m.histogram, m.per_unit);
  j["per_call"] = std::move(pc);
  return j;
}

// One function's row: a key's (or, --top, the folded keys'), or with --by its total row
// (in "totals", without a key: every key's sums and the counts kept per function).
ojson function_json(const FunctionReport& r, const FuncRow& f) {
  const bool by_args = starts_with(r.by, "arg");
  ojson fj;
  fj["function"] = text(f.function);
  fj["backend"] = f.backend;
  fj["kind"] = f.kind;
  if (f.total) {
    fj["total"] = true;
    fj["keys"] = f.keys;
    fj["sorted_by"] = text(f.sorted_by);
  } else if (by_args) {
    ojson args = ojson::array();
    for (const auto& a : f.args) {
      if (a.type == KeyValue::Type::string)
        args.push_back(text(a.text));
      else if (a.type == KeyValue::Type::unreadable)
        args.push_back({{"unreadable_at", a.bits}});
      else if (a.type == KeyValue::Type::signed_int)
        args.push_back(static_cast<std::int64_t>(a.bits));
      else
        args.push_back(a.bits);
    }
    fj["args"] = f.other || f.folded ? ojson(nullptr) : std::move(args);
    fj["other"] = f.other;
  } else if (!r.by.empty()) {
    fj[r.by] = f.folded ? std::string() : text(f.by_value);
  }
  if (f.folded) fj["folded"] = f.folded;
  if (f.cgroup_id) fj["cgroup_id"] = *f.cgroup_id;
  fj["calls"] = f.calls;
  fj["not_counted"] = f.not_counted;
  fj["not_counted_hidden_switch"] = f.hidden_switches;
  fj["lost"] = f.lost;
  fj["slept"] = f.slept;
  fj["migrated"] = f.migrated;
  fj["multiplexed"] = f.multiplexed;
  fj["depth_overflow"] = f.depth_overflow;
  fj["unmatched_exits"] = f.unmatched_exits;
  fj["abandoned"] = f.abandoned;
  fj["reentered"] = f.reentered;
  fj["state_failed"] = f.state_failed;
  fj["not_aggregated"] = f.not_aggregated;
  fj["read_errors"] = f.read_errors;
  if (f.open) fj["open"] = *f.open;
  if (!f.backend_note.empty()) fj["backend_note"] = f.backend_note;
  if (f.probe_cost)
    fj["probe_cost"] = {{"total_ns", json_number(std::round(f.probe_cost->total_ns()))},
                        {"per_call_ns", json_number(f.probe_cost->per_call_ns)},
                        {"calls", json_number(f.probe_cost->calls)}};
  fj["wall_ns"] = json_number(f.wall.total);
  // All calls disturbed: on-CPU time was not measured, which is not 0.
  fj["oncpu_ns"] =
      f.oncpu.status == CounterStatus::ok ? json_number(f.oncpu.total) : ojson(nullptr);
  fj["wall"] = dist_json(f.wall);
  fj["wall"]["buckets"] = histogram_buckets_json(f.wall_histogram);
  fj["oncpu"] = dist_json(f.oncpu);
  fj["oncpu"]["buckets"] = histogram_buckets_json(f.oncpu_histogram);
  ojson events = ojson::object();
  for (const auto& e : f.events) {
    ojson ej = dist_json(e.per_call);
    ej["unit"] = e.unit.empty() ? "count" : e.unit;
    ej["buckets"] = histogram_buckets_json(e.histogram);
    ej["attr"] = {{"type", e.kind.type}, {"config", e.kind.config}};
    events[text(e.event)] = std::move(ej);
  }
  fj["events"] = std::move(events);
  if (auto m = func_metric(f)) fj["metric"] = {{"value", m->value}, {"unit", m->unit}};
  ojson metrics = ojson::object();
  for (const auto& m : f.metrics) metrics[m.name] = metric_json(m);
  fj["metrics"] = std::move(metrics);
  return fj;
}

ojson report_json(const FunctionReport& r, const char* type) {
  ojson j;
  j["schema"] = kJsonSchema;
  j["type"] = type;
  j["mode"] = "function";
  j["target"] = text(r.target);
  j["aggregation"] = r.aggregation;
  if (!r.by.empty()) j["by"] = r.by;
  const bool by_args = starts_with(r.by, "arg");
  if (by_args) j["max_keys"] = r.max_keys;
  if (r.top) j["top"] = *r.top;
  if (r.interval_s) j["interval"] = *r.interval_s;
  j["timestamp_unix_ns"] = r.timestamp_unix_ns;
  j["elapsed_ns"] = r.elapsed_ns;
  j["interrupted"] = r.interrupted;
  j["exit_status"] = r.exit_status ? ojson(*r.exit_status) : ojson(nullptr);
  j["lost"] = r.lost;
  j["partial"] = r.partial;
  j["untracked_processes"] = r.untracked;
  ojson biases = ojson::array();
  for (const auto& b : r.probe_bias) {
    ojson bj;
    bj["backend"] = b.backend;
    bj["kind"] = b.kind;
    if (!b.first_instruction.empty()) bj["first_instruction"] = b.first_instruction;
    bj["calibrated"] = b.calibrated;
    if (!b.calibrated) {
      bj["why_not"] = b.why_not;
    } else {
      bj["probed"] = b.probed;
      bj["subtracted"] = b.subtracted;
      bj["calls"] = b.calls;
      bj["wall_ns"] = json_number(b.wall_ns);
      bj["oncpu_ns"] = json_number(b.oncpu_ns);
      ojson ev = ojson::object();
      for (const auto& e : b.events)
        ev[e.event] = e.per_call ? json_number(*e.per_call) : ojson(nullptr);
      bj["events"] = std::move(ev);
      if (b.nested) {
        ojson nj, nev = ojson::object();
        nj["subtracted"] = b.nested_subtracted;
        nj["wall_ns"] = json_number(b.nested->wall_ns);
        nj["oncpu_ns"] = json_number(b.nested->oncpu_ns);
        if (b.nested->wall_floor_ns) nj["wall_floor_ns"] = json_number(*b.nested->wall_floor_ns);
        if (b.nested->oncpu_floor_ns) nj["oncpu_floor_ns"] = json_number(*b.nested->oncpu_floor_ns);
        if (b.nested->wall_tail_ns) nj["wall_tail_ns"] = json_number(*b.nested->wall_tail_ns);
        if (b.nested->oncpu_tail_ns) nj["oncpu_tail_ns"] = json_number(*b.nested->oncpu_tail_ns);
        for (const auto& e : b.nested->events)
          nev[e.event] = e.per_call ? json_number(*e.per_call) : ojson(nullptr);
        nj["events"] = std::move(nev);
        bj["nested"] = std::move(nj);
      }
    }
    biases.push_back(std::move(bj));
  }
  j["probe_bias"] = std::move(biases);
  ojson funcs = ojson::array(), totals = ojson::array();
  for (const auto& f : r.functions) (f.total ? totals : funcs).push_back(function_json(r, f));
  j["functions"] = std::move(funcs);
  // --by: a total per function, apart from the keys, so that summing `functions` still gives
  // each function's calls once.
  if (!r.by.empty()) j["totals"] = std::move(totals);
  // --aggregate both: the kernel's sums of the same calls, inside the same document.
  if (r.kernel_view) j["kernel_view"] = report_json(*r.kernel_view, type);
  return j;
}

// A metric's value in CSV: up to 9 significant digits, no grouping.
std::string csv_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// The function's calls seen but not measured or summed (too deep, unmatched, abandoned,
// re-entered, without state, not aggregated): CSV's `unmeasured` column.
std::uint64_t unmeasured_calls(const FuncRow& f) {
  return f.depth_overflow + f.unmatched_exits + f.abandoned + f.reentered + f.state_failed +
         f.not_aggregated;
}

void csv_rows(std::ostream& out, const FunctionReport& r, const std::string& sep,
              const HistOptions& hist, bool summary = false) {
  auto cell = [&](const Distribution& d, const std::string& name, const std::string& unit,
                  const FuncRow& f) {
    if (r.interval_s)
      out << format_fixed(*r.interval_s, 9) << sep;
    else if (summary)
      out << "summary" << sep;
    out << csv_field(f.function, sep) << sep << f.backend << sep << csv_field(f.by_value, sep)
        << sep << f.calls << sep << f.not_counted << sep << f.lost << sep << csv_field(name, sep)
        << sep << (unit.empty() ? "" : unit) << sep;
    // Columns after p99: min, max, calls measured, estimated (0/1), aggregation, the calls not
    // measured (unmeasured_calls), and where a bias was taken off, the noise floor and the
    // calls below it (a total or mean below it is no measurement).
    const bool floor = d.noise_floor && d.status == CounterStatus::ok;
    const std::string tail = sep + std::to_string(d.measured) + sep + (d.estimated ? "1" : "0") +
                             sep + r.aggregation + sep + std::to_string(unmeasured_calls(f)) + sep +
                             (floor ? format_fixed(*d.noise_floor, 0) : "") + sep +
                             (floor ? std::to_string(d.under_floor) : "") + "\n";
    if (d.status != CounterStatus::ok) {
      out << (d.status == CounterStatus::not_supported ? "<not supported>" : "<not counted>") << sep
          << sep << sep << sep << sep << sep << tail;
      return;
    }
    if (d.no_calls) {
      out << "0" << sep << sep << sep << sep << sep << sep << tail;
      return;
    }
    // Percentiles, min and max are whole numbers (make_distribution); the mean has decimals.
    out << format_fixed(d.total, 0) << sep << format_fixed(d.mean, 2);
    for (double v : {d.p50, d.p90, d.p99, d.min, d.max})
      out << sep << (d.percentiles ? format_fixed(v, 0) : "");
    out << tail;
  };
  // A metric's row: "metric:NAME", its unit; the ratio of totals in the total column, the
  // per-call mean, percentiles, min and max after it, and the calls with a value as measured.
  auto metric_row = [&](const FuncMetricRow& m, const FuncRow& f) {
    if (r.interval_s)
      out << format_fixed(*r.interval_s, 9) << sep;
    else if (summary)
      out << "summary" << sep;
    out << csv_field(f.function, sep) << sep << f.backend << sep << csv_field(f.by_value, sep)
        << sep << f.calls << sep << f.not_counted << sep << f.lost << sep
        << csv_field("metric:" + m.name, sep) << sep << csv_field(m.unit, sep) << sep;
    out << (m.of_totals ? csv_number(*m.of_totals)
                        : std::string(m.reason == "no calls" ? "" : "<not computed>"));
    const bool values = m.per_call && m.calls > 0;
    for (double v : {m.mean, m.p50, m.p90, m.p99, m.min, m.max})
      out << sep << (values ? csv_number(v) : "");
    out << sep << m.calls << sep << (m.estimated ? "1" : "0") << sep << r.aggregation << sep
        << unmeasured_calls(f) << sep << sep << "\n";  // no noise floor: a metric is no difference
  };
  for (const auto& f : r.functions) {
    for (const auto& e : f.events) cell(e.per_call, e.event, e.unit, f);
    cell(f.wall, "wall-time", "ns", f);
    cell(f.oncpu, "on-cpu-time", "ns", f);
    if (f.probe_cost) {  // an estimate: the calibrated cost per call times the calls
      Distribution d;
      d.status = CounterStatus::ok;
      d.total = f.probe_cost->total_ns();
      d.mean = f.probe_cost->per_call_ns;
      d.percentiles = false;
      d.estimated = true;
      cell(d, "probe-cost", "ns", f);
    }
    for (const auto& m : f.metrics) metric_row(m, f);
  }
  // --hist: the drawn rows after the usual ones, led by the same interval or summary field.
  const std::string prefix = r.interval_s ? format_fixed(*r.interval_s, 9) + sep
                             : summary    ? "summary" + sep
                                          : "";
  for (const auto& f : r.functions) func_hist_csv(out, f, hist, sep, prefix);
}

class TextFuncRenderer : public FuncReportRenderer {
 public:
  TextFuncRenderer(std::ostream& out, HistOptions hist) : out_(out), hist_(std::move(hist)) {}
  void interval(const FunctionReport& r) override {
    char buf[48];
    std::snprintf(buf, sizeof(buf), "# %.3f s\n", r.interval_s.value_or(0));
    out_ << buf;
    text_rows(out_, r, hist_);
    out_.flush();
  }
  void final(const FunctionReport& r) override {
    text_final(out_, r, hist_);
    if (r.kernel_view) text_final(out_, *r.kernel_view, hist_);
    out_.flush();
  }

 private:
  std::ostream& out_;
  HistOptions hist_;
};

class CsvFuncRenderer : public FuncReportRenderer {
 public:
  CsvFuncRenderer(std::ostream& out, std::string sep, bool intervals, HistOptions hist)
      : out_(out), sep_(std::move(sep)), intervals_(intervals), hist_(std::move(hist)) {}
  void interval(const FunctionReport& r) override { csv_rows(out_, r, sep_, hist_), out_.flush(); }
  void final(const FunctionReport& r) override {
    FunctionReport whole = r;
    whole.interval_s.reset();
    csv_rows(out_, whole, sep_, hist_, intervals_);
    if (r.kernel_view) csv_rows(out_, *r.kernel_view, sep_, hist_, intervals_);
    out_.flush();
  }

 private:
  std::ostream& out_;
  std::string sep_;
  bool intervals_;
  HistOptions hist_;
};

class JsonFuncRenderer : public FuncReportRenderer {
 public:
  JsonFuncRenderer(std::ostream& out, bool ndjson) : out_(out), streaming_(ndjson) {}
  void interval(const FunctionReport& r) override {
    ojson j = report_json(r, "interval");
    // The probe bias is calibrated once, before the run: the first interval says it, later
    // ones do not repeat it (the summary, the whole run's report, has it again).
    if (bias_sent_) j.erase("probe_bias");
    bias_sent_ = true;
    out_ << dump(j) << '\n';
    out_.flush();
    streaming_ = true;
  }
  void final(const FunctionReport& r) override {
    FunctionReport whole = r;
    whole.interval_s.reset();
    out_ << (streaming_ ? dump(report_json(whole, "summary"))
                        : compact_scalar_arrays(dump(report_json(whole, "report"), 2)))
         << '\n';
    out_.flush();
  }

 private:
  std::ostream& out_;
  bool streaming_ = false;
  bool bias_sent_ = false;
};

}  // namespace

std::unique_ptr<FuncReportRenderer> make_func_renderer(const RenderOptions& opts,
                                                       std::ostream& out) {
  switch (opts.format) {
    case OutputFormat::csv:
      return std::make_unique<CsvFuncRenderer>(out, opts.csv_separator, opts.intervals, opts.hist);
    case OutputFormat::json:
      return std::make_unique<JsonFuncRenderer>(out, opts.intervals);
    case OutputFormat::text:
      break;
  }
  return std::make_unique<TextFuncRenderer>(out, opts.hist);
}

std::string render_func_text(const FunctionReport& r, const HistOptions& hist) {
  std::ostringstream ss;
  TextFuncRenderer(ss, hist).final(r);
  return ss.str();
}

std::string render_func_csv(const FunctionReport& r, const std::string& sep,
                            const HistOptions& hist) {
  std::ostringstream ss;
  CsvFuncRenderer(ss, sep, false, hist).final(r);
  return ss.str();
}

std::string render_func_json(const FunctionReport& r) {
  std::ostringstream ss;
  JsonFuncRenderer(ss, false).final(r);
  return ss.str();
}

}  // namespace pmcprof

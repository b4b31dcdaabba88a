// pmcprof diff's three renderers: text (a block per function, perf diff's baseline and new
// side by side, flagged rows marked '*'), CSV with a header line, JSON (type "diff").
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <ostream>

#include "pmcprof/report/diff.hpp"
#include "pmcprof/report/json_number.hpp"
#include "pmcprof/report/number_format.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

using ojson = nlohmann::ordered_json;

// The change from `base` to `fresh` in % of `base`; from 0 only to 0 (0 %).
std::optional<double> change_pct(double base, double fresh) {
  if (base == 0) return fresh == 0 ? std::optional<double>(0) : std::nullopt;
  return 100 * (fresh - base) / std::fabs(base);
}

std::string printf1(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string pct_text(std::optional<double> pct) {
  return pct ? printf1("%+.1f%%", *pct) : "n/a";
}

// Always "p = X", so that a verdict reads the same whatever its figures ("p = 0": below the
// smallest double).
std::string p_text(double p) {
  return "p = " + printf1("%.2g", p);
}

bool is_time(const DiffRow& r) {
  return r.unit == "ns";
}

// What the verdict column says: the direction and why a change is or is not flagged.
std::string verdict(const DiffRow& r) {
  switch (r.status) {
    case DiffStatus::added:
      return "only in the new run";
    case DiffStatus::removed:
      return "only in the baseline";
    case DiffStatus::not_tested:
      return "not tested: " + r.why_not_tested;
    case DiffStatus::changed:
    case DiffStatus::within_noise:
      break;
  }
  const std::string measure = r.test == "welch-t" ? "change " : "shift ";
  const std::string figures =
      measure + (r.shift_pct ? pct_text(r.shift_pct) : printf1("%+g", r.shift.value_or(0))) + ", " +
      p_text(r.p_value.value_or(1));
  if (r.status == DiffStatus::changed) {
    const bool up = r.direction > 0;
    const char* word = is_time(r) ? (up ? "slower" : "faster") : (up ? "more" : "fewer");
    return std::string(word) + ": " + figures;
  }
  return "within the noise (" + figures + ")";
}

std::string date_of(std::uint64_t unix_ns) {
  const std::time_t t = static_cast<std::time_t>(unix_ns / 1000000000ull);
  std::tm tm{};
  if (!localtime_r(&t, &tm)) return {};
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

void text_header(std::ostream& out, const DiffReport& d) {
  out << "\n pmcprof diff: baseline " << escape_bytes(d.base.name) << ", new "
      << escape_bytes(d.fresh.name) << "\n";
  for (const auto& [label, side] : {std::pair{"baseline", &d.base}, std::pair{"new", &d.fresh}}) {
    out << "   " << pad_right(std::string(label) + ":", 10) << "'" << escape_bytes(side->target)
        << "'";
    if (side->runs > 1) out << " (" << side->runs << " runs)";
    if (side->timestamp_unix_ns) out << ", " << date_of(side->timestamp_unix_ns);
    out << ", " << printf1("%.3f", static_cast<double>(side->elapsed_ns) / 1e9) << " s\n";
  }
  out << "\n";
}

// ---- function mode ----

std::string function_title(const DiffReport& d, const DiffRow& r) {
  std::string title = " " + escape_bytes(r.function) + "  [" + r.backend +
                      (r.kind == "function" ? "" : " " + r.kind) + "]";
  if (r.by_value.empty()) return title;
  const bool args = starts_with(d.by, "arg");
  return title + "  " + (args ? "" : d.by + " ") + escape_bytes(r.by_value);
}

// calls, mean, p50, p99, total of one run (or its status).
std::string figure_cells(const DiffFigures& x, const std::string& unit) {
  std::string cells = pad_left(format_grouped(static_cast<double>(x.calls), 0), 10);
  if (x.status != CounterStatus::ok)
    return cells +
           pad_left(x.status == CounterStatus::not_supported ? "<not supported>" : "<not counted>",
                    16);
  cells += pad_left(x.per_call ? format_amount(x.mean, unit, false) : "-", 16);
  cells += pad_left(x.percentiles ? format_point(x.p50, unit) : "-", 14);
  cells += pad_left(x.percentiles ? format_point(x.p99, unit) : "-", 14);
  return cells + pad_left(format_amount(x.total, unit, true), 16);
}

std::string change_cells(const DiffFigures& b, const DiffFigures& n) {
  std::string cells = pad_left(
      pct_text(change_pct(static_cast<double>(b.calls), static_cast<double>(n.calls))), 10);
  if (b.status != CounterStatus::ok || n.status != CounterStatus::ok) return cells;
  const bool per_call = b.per_call && n.per_call;
  const bool points = b.percentiles && n.percentiles;
  cells += pad_left(per_call ? pct_text(change_pct(b.mean, n.mean)) : "-", 16);
  cells += pad_left(points ? pct_text(change_pct(b.p50, n.p50)) : "-", 14);
  cells += pad_left(points ? pct_text(change_pct(b.p99, n.p99)) : "-", 14);
  return cells + pad_left(pct_text(change_pct(b.total, n.total)), 16);
}

void text_function_block(std::ostream& out, const DiffRow& r, std::size_t label) {
  const std::string mark = r.status == DiffStatus::changed ? " * " : "   ";
  const std::string indent(3 + label, ' ');
  std::string first = mark + pad_right(escape_bytes(r.quantity), label);
  const std::string tail = "   " + verdict(r);
  if (r.base && r.fresh) {
    out << first << pad_right("baseline", 9) << figure_cells(*r.base, r.unit) << "\n";
    out << indent << pad_right("new", 9) << figure_cells(*r.fresh, r.unit) << "\n";
    out << indent << pad_right("change", 9) << change_cells(*r.base, *r.fresh) << tail << "\n";
    return;
  }
  const bool base = r.base.has_value();
  out << first << pad_right(base ? "baseline" : "new", 9)
      << figure_cells(base ? *r.base : *r.fresh, r.unit) << tail << "\n";
}

void text_functions(std::ostream& out, const DiffReport& d) {
  std::size_t label = 20;
  for (const auto& r : d.rows) label = std::max(label, escape_bytes(r.quantity).size() + 2);
  std::string current;
  for (const auto& r : d.rows) {
    const std::string title = function_title(d, r);
    if (title != current) {
      if (!current.empty()) out << "\n";
      out << title << "\n"
          << "   " << pad_right("", label + 9) << pad_left("calls", 10) << pad_left("mean", 16)
          << pad_left("p50", 14) << pad_left("p99", 14) << pad_left("total", 16) << "\n";
      current = title;
    }
    text_function_block(out, r, label);
  }
}

// ---- counting mode ----

std::string count_value(const DiffFigures& x, const std::string& unit) {
  if (x.status != CounterStatus::ok)
    return x.status == CounterStatus::not_supported ? "<not supported>" : "<not counted>";
  if (unit == "ns") return format_grouped(x.total / 1e6, 2) + " msec";
  return format_grouped(x.total, 0) + (unit.empty() ? "" : " " + unit);
}

void text_counting(std::ostream& out, const DiffReport& d) {
  out << "   " << pad_left("baseline", 22) << pad_left("new", 22) << pad_left("change", 10)
      << "  event\n";
  for (const auto& r : d.rows) {
    const std::string mark = r.status == DiffStatus::changed ? " * " : "   ";
    const std::string b = r.base ? count_value(*r.base, r.unit) : "-";
    const std::string n = r.fresh ? count_value(*r.fresh, r.unit) : "-";
    const bool both_ok = r.base && r.fresh && r.base->status == CounterStatus::ok &&
                         r.fresh->status == CounterStatus::ok;
    std::string change = both_ok ? pct_text(change_pct(r.base->total, r.fresh->total)) : "";
    std::string event =
        (r.scope.empty() ? "" : escape_bytes(r.scope) + " ") + escape_bytes(r.quantity);
    std::string spread;
    if (r.base && r.fresh && r.base->stddev_pct && r.fresh->stddev_pct)
      spread = "  ( +-" + printf1("%.2f", *r.base->stddev_pct) + "% / +-" +
               printf1("%.2f", *r.fresh->stddev_pct) + "% )";
    out << mark << pad_left(b, 22) << pad_left(n, 22) << pad_left(change, 10) << "  "
        << pad_right(event, 30) << spread << "   " << verdict(r) << "\n";
  }
}

void text_footer(std::ostream& out, const DiffReport& d) {
  const std::string alpha = printf1("%g", d.rule.alpha);
  const std::string threshold = printf1("%g", d.rule.threshold_pct);
  out << "\n";
  if (d.mode == RunMode::function)
    out << " * beyond the noise: a Mann-Whitney U test on the two runs' per-call buckets (calls\n"
           "   in one 2 % bucket tied) gives p < "
        << alpha
        << ", and the Hodges-Lehmann shift (the median of\n"
           "   new - baseline over all pairs of calls) is at least "
        << threshold
        << " % of the baseline's median;\n"
           "   any other change is within the noise.\n";
  else
    out << " * beyond the noise: Welch's t-test on the means of the -r runs gives p < " << alpha
        << ",\n   and they differ by at least " << threshold
        << " %; any other change is within the noise.\n";
  std::size_t compared = 0;
  for (const auto& r : d.rows)
    compared += r.status == DiffStatus::changed || r.status == DiffStatus::within_noise;
  out << "   " << d.flagged() << " of " << compared
      << " tested quantities changed beyond the noise";
  std::size_t untested = 0;
  for (const auto& r : d.rows) untested += r.status == DiffStatus::not_tested;
  if (untested) out << "; " << untested << " not tested";
  out << ".\n\n";
}

// ---- CSV ----

std::string csv_num(std::optional<double> v) {
  return v ? printf1("%.10g", *v) : std::string();
}

void csv_diff(std::ostream& out, const DiffReport& d, const std::string& sep) {
  auto line = [&out, &sep](const std::vector<std::string>& cells) {
    out << join(cells, sep) << "\n";
  };
  auto field = [&sep](const std::string& s) { return csv_field(s, sep); };
  if (d.mode == RunMode::function) {
    line({"function",
          "backend",
          "kind",
          "by",
          "quantity",
          "unit",
          "status",
          "calls_baseline",
          "calls_new",
          "calls_change_pct",
          "mean_baseline",
          "mean_new",
          "mean_change_pct",
          "p50_baseline",
          "p50_new",
          "p50_change_pct",
          "p99_baseline",
          "p99_new",
          "p99_change_pct",
          "total_baseline",
          "total_new",
          "total_change_pct",
          "shift",
          "shift_pct",
          "p_value",
          "flagged"});
  } else {
    line({"event", "scope", "unit", "status", "value_baseline", "value_new", "change_pct",
          "stddev_pct_baseline", "stddev_pct_new", "runs_baseline", "runs_new", "shift",
          "shift_pct", "p_value", "flagged"});
  }
  for (const auto& r : d.rows) {
    const auto ok = [](const std::optional<DiffFigures>& x) {
      return x && x->status == CounterStatus::ok;
    };
    auto of = [&](const std::optional<DiffFigures>& x, double DiffFigures::*m, bool valid) {
      return valid ? std::optional<double>(*x.*m) : std::nullopt;
    };
    auto pct = [&](std::optional<double> b, std::optional<double> n) {
      return b && n ? change_pct(*b, *n) : std::nullopt;
    };
    std::vector<std::string> cells;
    const std::string unit = r.unit.empty() ? "count" : r.unit;
    if (d.mode == RunMode::function) {
      cells = {field(r.function),  r.backend, r.kind, field(r.by_value), field(r.quantity), unit,
               to_string(r.status)};
      const auto cb =
          r.base ? std::optional<double>(static_cast<double>(r.base->calls)) : std::nullopt;
      const auto cn =
          r.fresh ? std::optional<double>(static_cast<double>(r.fresh->calls)) : std::nullopt;
      for (auto v : {cb, cn, pct(cb, cn)}) cells.push_back(csv_num(v));
      const bool pb = ok(r.base) && r.base->per_call, pn = ok(r.fresh) && r.fresh->per_call;
      const bool qb = pb && r.base->percentiles, qn = pn && r.fresh->percentiles;
      for (auto [m, vb, vn] :
           {std::tuple{&DiffFigures::mean, pb, pn}, std::tuple{&DiffFigures::p50, qb, qn},
            std::tuple{&DiffFigures::p99, qb, qn},
            std::tuple{&DiffFigures::total, ok(r.base), ok(r.fresh)}}) {
        const auto b = of(r.base, m, vb), n = of(r.fresh, m, vn);
        for (auto v : {b, n, pct(b, n)}) cells.push_back(csv_num(v));
      }
    } else {
      cells = {field(r.quantity), field(r.scope), unit, to_string(r.status)};
      const auto b = of(r.base, &DiffFigures::total, ok(r.base));
      const auto n = of(r.fresh, &DiffFigures::total, ok(r.fresh));
      for (auto v : {b, n, pct(b, n)}) cells.push_back(csv_num(v));
      cells.push_back(csv_num(r.base ? r.base->stddev_pct : std::nullopt));
      cells.push_back(csv_num(r.fresh ? r.fresh->stddev_pct : std::nullopt));
      cells.push_back(r.base ? std::to_string(r.base->runs) : "");
      cells.push_back(r.fresh ? std::to_string(r.fresh->runs) : "");
    }
    for (auto v : {r.shift, r.shift_pct, r.p_value}) cells.push_back(csv_num(v));
    cells.push_back(r.status == DiffStatus::changed ? "1" : "0");
    line(cells);
  }
}

// ---- JSON ----

ojson num_or_null(std::optional<double> v) {
  return v && std::isfinite(*v) ? json_number(*v) : ojson(nullptr);
}

ojson side_json(const DiffSide& s) {
  return {{"file", escape_bytes(s.file, false)},
          {"target", escape_bytes(s.target, false)},
          {"timestamp_unix_ns", s.timestamp_unix_ns},
          {"elapsed_ns", s.elapsed_ns},
          {"runs", s.runs}};
}

ojson figures_json(const DiffReport& d, const std::optional<DiffFigures>& x) {
  if (!x) return nullptr;
  ojson j;
  j["status"] = to_string(x->status);
  const bool ok = x->status == CounterStatus::ok;
  if (d.mode == RunMode::function) {
    j["calls"] = x->calls;
    j["mean"] = ok && x->per_call ? json_number(x->mean) : ojson(nullptr);
    j["p50"] = ok && x->percentiles ? json_number(x->p50) : ojson(nullptr);
    j["p99"] = ok && x->percentiles ? json_number(x->p99) : ojson(nullptr);
    j["total"] = ok ? json_number(x->total) : ojson(nullptr);
  } else {
    j["value"] = ok ? json_number(x->total) : ojson(nullptr);
    j["runs"] = x->runs;
    j["stddev_pct"] = num_or_null(x->stddev_pct);
  }
  return j;
}

ojson change_json(const DiffReport& d, const DiffRow& r) {
  ojson j = ojson::object();
  if (!r.base || !r.fresh) return nullptr;
  const DiffFigures &b = *r.base, &n = *r.fresh;
  const bool ok = b.status == CounterStatus::ok && n.status == CounterStatus::ok;
  if (d.mode == RunMode::counting) {
    j["value"] = ok ? num_or_null(change_pct(b.total, n.total)) : ojson(nullptr);
    return j;
  }
  j["calls"] = num_or_null(change_pct(static_cast<double>(b.calls), static_cast<double>(n.calls)));
  const bool per_call = ok && b.per_call && n.per_call;
  const bool points = per_call && b.percentiles && n.percentiles;
  j["mean"] = per_call ? num_or_null(change_pct(b.mean, n.mean)) : ojson(nullptr);
  j["p50"] = points ? num_or_null(change_pct(b.p50, n.p50)) : ojson(nullptr);
  j["p99"] = points ? num_or_null(change_pct(b.p99, n.p99)) : ojson(nullptr);
  j["total"] = ok ? num_or_null(change_pct(b.total, n.total)) : ojson(nullptr);
  return j;
}

ojson row_json(const DiffReport& d, const DiffRow& r) {
  ojson j;
  if (d.mode == RunMode::function) {
    j["function"] = escape_bytes(r.function, false);
    j["backend"] = r.backend;
    j["kind"] = r.kind;
    if (!d.by.empty()) j["by"] = escape_bytes(r.by_value, false);
  } else {
    j["event"] = escape_bytes(r.quantity, false);
    if (!r.scope.empty()) j["scope"] = escape_bytes(r.scope, false);
  }
  j["quantity"] = escape_bytes(r.quantity, false);
  j["unit"] = r.unit.empty() ? "count" : r.unit;
  j["status"] = to_string(r.status);
  j["direction"] = r.direction > 0 ? ojson("up") : r.direction < 0 ? ojson("down") : ojson(nullptr);
  j["baseline"] = figures_json(d, r.base);
  j["new"] = figures_json(d, r.fresh);
  j["change_pct"] = change_json(d, r);
  if (r.test.empty()) {
    j["test"] = nullptr;
  } else {
    j["test"] = {{"name", r.test},
                 {"p_value", num_or_null(r.p_value)},
                 {"shift", num_or_null(r.shift)},
                 {"shift_pct", num_or_null(r.shift_pct)},
                 {"n_baseline", r.n_base},
                 {"n_new", r.n_new}};
    if (r.prob_greater) j["test"]["prob_new_greater"] = *r.prob_greater;
  }
  if (!r.why_not_tested.empty()) j["why_not_tested"] = r.why_not_tested;
  return j;
}

void json_diff(std::ostream& out, const DiffReport& d) {
  ojson j;
  j["schema"] = kJsonSchema;
  j["type"] = "diff";
  j["mode"] = to_string(d.mode);
  j["baseline"] = side_json(d.base);
  j["new"] = side_json(d.fresh);
  if (d.mode == RunMode::function && !d.by.empty()) j["by"] = d.by;
  j["rule"] = {{"test", d.mode == RunMode::function ? "mann-whitney-u" : "welch-t"},
               {"shift", d.mode == RunMode::function ? "hodges-lehmann" : "difference-of-means"},
               {"alpha", d.rule.alpha},
               {"threshold_pct", d.rule.threshold_pct}};
  ojson rows = ojson::array();
  for (const auto& r : d.rows) rows.push_back(row_json(d, r));
  j["rows"] = std::move(rows);
  j["changed"] = d.flagged();
  j["notes"] = d.notes;
  out << j.dump(2, ' ', false, ojson::error_handler_t::replace) << "\n";
}

}  // namespace

void render_diff(const DiffReport& d, const RenderOptions& opts, std::ostream& out) {
  switch (opts.format) {
    case OutputFormat::json:
      json_diff(out, d);
      return;
    case OutputFormat::csv:
      csv_diff(out, d, opts.csv_separator);
      return;
    case OutputFormat::text:
      break;
  }
  text_header(out, d);
  if (d.mode == RunMode::function)
    text_functions(out, d);
  else
    text_counting(out, d);
  text_footer(out, d);
}

}  // namespace pmcprof

// pmcprof diff: rows of two runs matched by what they measure, and each change judged by the
// rule of DiffRule (diff.hpp).
#include "pmcprof/report/diff.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "pmcprof/report/statistics.hpp"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

namespace {

// ---- function mode ----

struct Quantity {
  std::string name;  // "wall time", "on-CPU time", an event
  std::string unit;
  const Distribution* dist = nullptr;
  const Histogram* hist = nullptr;
};

// In the order text shows them: the events, then wall and on-CPU time.
std::vector<Quantity> quantities_of(const FuncRow& f) {
  std::vector<Quantity> out;
  for (const auto& e : f.events) out.push_back({e.event, e.unit, &e.per_call, &e.histogram});
  out.push_back({"wall time", "ns", &f.wall, &f.wall_histogram});
  out.push_back({"on-CPU time", "ns", &f.oncpu, &f.oncpu_histogram});
  return out;
}

DiffFigures figures_of(const FuncRow& f, const Quantity& q) {
  const Distribution& d = *q.dist;
  DiffFigures x;
  x.status = d.status;
  x.calls = f.calls;
  x.per_call = d.status == CounterStatus::ok && !d.no_calls;
  x.percentiles = x.per_call && d.percentiles;
  x.mean = d.mean;
  x.p50 = d.p50;
  x.p99 = d.p99;
  x.total = shown_total(d);
  return x;
}

std::string status_words(CounterStatus s) {
  return s == CounterStatus::not_supported ? "<not supported>" : "<not counted>";
}

// Why a quantity present in both runs cannot be tested, or "" when it can.
std::string untestable(const Quantity& b, const Quantity& n, const DiffSide& bs,
                       const DiffSide& ns) {
  for (const auto& [q, side] : {std::pair{&b, &bs}, std::pair{&n, &ns}}) {
    const Distribution& d = *q->dist;
    if (d.status != CounterStatus::ok) return status_words(d.status) + " in " + side->name;
    if (d.no_calls) return "no calls in " + side->name;
    if (q->hist->count() == 0)
      return d.measured > 0 ? "no per-call buckets in " + side->name + " (an older pmcprof's)"
                            : "no call measured exactly in " + side->name;
  }
  return {};
}

// The U test and the Hodges-Lehmann shift on the two histograms, and the verdict.
void judge_calls(DiffRow& row, const Quantity& b, const Quantity& n, const DiffRule& rule) {
  const auto test = mann_whitney_u(*b.hist, *n.hist);
  const auto shift = hodges_lehmann_shift(*b.hist, *n.hist);
  if (!test || !shift) return;
  row.test = "mann-whitney-u";
  row.p_value = test->p_value;
  row.prob_greater = test->prob_greater;
  row.n_base = test->n_base;
  row.n_new = test->n_new;
  row.shift = *shift;
  row.direction = *shift > 0 ? 1 : *shift < 0 ? -1 : 0;
  // Relative to the baseline's median (a shift from a median of 0 is as large as can be).
  if (b.dist->p50 > 0) row.shift_pct = 100 * *shift / b.dist->p50;
  const bool large =
      row.direction != 0 && (!row.shift_pct || std::fabs(*row.shift_pct) >= rule.threshold_pct);
  // The shift says how far, the test that it is not chance: both, and the same way.
  const bool agree = (test->z > 0 && row.direction > 0) || (test->z < 0 && row.direction < 0);
  row.status =
      test->p_value < rule.alpha && large && agree ? DiffStatus::changed : DiffStatus::within_noise;
}

std::string function_key(const FuncRow& f) {
  return f.kind + '\n' + f.function + '\n' + f.by_value + '\n' + (f.other ? "other" : "") +
         (f.total ? "total" : "");
}

// --top's folded row holds whichever keys were not the largest in its run: two runs' folded
// rows are sums of different keys, nothing to compare.
bool comparable(const FuncRow& f) {
  return f.folded == 0;
}

DiffRow function_row(const FuncRow& f) {
  DiffRow row;
  row.function = f.function;
  row.backend = f.backend;
  row.kind = f.kind;
  row.by_value = f.by_value;
  return row;
}

void diff_function(DiffReport& out, const FuncRow* b, const FuncRow* n) {
  const std::vector<Quantity> bq = b ? quantities_of(*b) : std::vector<Quantity>{};
  const std::vector<Quantity> nq = n ? quantities_of(*n) : std::vector<Quantity>{};
  auto find = [](const std::vector<Quantity>& qs, const std::string& name) -> const Quantity* {
    for (const auto& q : qs)
      if (q.name == name) return &q;
    return nullptr;
  };
  // Baseline's quantities in its order, then those only the new run has, before its times.
  std::vector<std::string> names;
  for (const auto& q : bq) names.push_back(q.name);
  for (const auto& q : nq)
    if (!find(bq, q.name))
      names.insert(std::find(names.begin(), names.end(), "wall time") == names.end()
                       ? names.end()
                       : std::find(names.begin(), names.end(), "wall time"),
                   q.name);
  for (const auto& name : names) {
    const Quantity* qb = find(bq, name);
    const Quantity* qn = find(nq, name);
    DiffRow row = function_row(n ? *n : *b);
    row.quantity = name;
    row.unit = (qn ? qn : qb)->unit;
    if (qb) row.base = figures_of(*b, *qb);
    if (qn) row.fresh = figures_of(*n, *qn);
    if (!qb || !qn) {
      row.status = qb ? DiffStatus::removed : DiffStatus::added;
    } else if (auto why = untestable(*qb, *qn, out.base, out.fresh); !why.empty()) {
      row.why_not_tested = why;
    } else {
      judge_calls(row, *qb, *qn, out.rule);
    }
    out.rows.push_back(std::move(row));
  }
}

void diff_functions(DiffReport& out, const FunctionReport& b, const FunctionReport& n) {
  std::map<std::string, const FuncRow*> in_new;
  for (const auto& f : n.functions)
    if (comparable(f)) in_new.emplace(function_key(f), &f);
  std::map<std::string, bool> seen;
  for (const auto& f : b.functions) {
    if (!comparable(f)) continue;
    const auto key = function_key(f);
    auto it = in_new.find(key);
    diff_function(out, &f, it == in_new.end() ? nullptr : it->second);
    seen[key] = true;
  }
  for (const auto& f : n.functions)
    if (comparable(f) && !seen.count(function_key(f))) diff_function(out, nullptr, &f);
}

// ---- counting mode ----

std::string scope_of(const CountingReport& r, const CounterRow& row) {
  std::vector<std::string> parts;
  if (row.cpu) parts.push_back("CPU" + std::to_string(*row.cpu));
  if (row.aggr) parts.push_back(aggr_label(r.aggr_mode, *row.aggr));
  if (row.cgroup) parts.push_back(*row.cgroup);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

DiffFigures figures_of(const CountingReport& r, const CounterRow& row) {
  DiffFigures x;
  x.status = row.status;
  x.total = row.value;
  x.runs = r.runs;
  x.stddev_pct = row.stddev_pct;
  return x;
}

DiffFigures elapsed_figures(const CountingReport& r) {
  DiffFigures x;
  x.total = static_cast<double>(r.elapsed_ns);
  x.runs = r.runs;
  x.stddev_pct = r.elapsed_stddev_pct;
  return x;
}

// Welch's t-test on the means of -r runs, and the verdict.
void judge_means(DiffRow& row, const DiffFigures& b, const DiffFigures& n, const DiffSide& bs,
                 const DiffSide& ns, const DiffRule& rule) {
  for (const auto& [x, side] : {std::pair{&b, &bs}, std::pair{&n, &ns}}) {
    if (x->status != CounterStatus::ok) {
      row.why_not_tested = status_words(x->status) + " in " + side->name;
      return;
    }
    if (x->runs < 2 || !x->stddev_pct) {
      row.why_not_tested = "one run in " + side->name + ": no spread to test against (-r N)";
      return;
    }
  }
  const auto p = welch_p_value(b.total, b.total * *b.stddev_pct / 100, b.runs, n.total,
                               n.total * *n.stddev_pct / 100, n.runs);
  if (!p) return;
  row.test = "welch-t";
  row.p_value = *p;
  row.n_base = static_cast<std::uint64_t>(b.runs);
  row.n_new = static_cast<std::uint64_t>(n.runs);
  row.shift = n.total - b.total;
  row.direction = *row.shift > 0 ? 1 : *row.shift < 0 ? -1 : 0;
  if (b.total != 0) row.shift_pct = 100 * *row.shift / std::fabs(b.total);
  const bool large =
      row.direction != 0 && (!row.shift_pct || std::fabs(*row.shift_pct) >= rule.threshold_pct);
  row.status = *p < rule.alpha && large ? DiffStatus::changed : DiffStatus::within_noise;
}

void diff_counting(DiffReport& out, const CountingReport& b, const CountingReport& n) {
  auto key = [](const CountingReport& r, const CounterRow& row) {
    return row.event + '\n' + scope_of(r, row);
  };
  std::map<std::string, const CounterRow*> in_new;
  for (const auto& row : n.counters) in_new.emplace(key(n, row), &row);
  std::map<std::string, bool> seen;
  auto add = [](const CountingReport& r, const CounterRow& row) {
    DiffRow d;
    d.quantity = row.event;
    d.scope = scope_of(r, row);
    d.unit = row.unit;
    return d;
  };
  for (const auto& row : b.counters) {
    DiffRow d = add(b, row);
    d.base = figures_of(b, row);
    auto it = in_new.find(key(b, row));
    if (it == in_new.end()) {
      d.status = DiffStatus::removed;
    } else {
      d.fresh = figures_of(n, *it->second);
      judge_means(d, *d.base, *d.fresh, out.base, out.fresh, out.rule);
    }
    seen[key(b, row)] = true;
    out.rows.push_back(std::move(d));
  }
  for (const auto& row : n.counters) {
    if (seen.count(key(n, row))) continue;
    DiffRow d = add(n, row);
    d.fresh = figures_of(n, row);
    d.status = DiffStatus::added;
    out.rows.push_back(std::move(d));
  }
  DiffRow elapsed;
  elapsed.quantity = "elapsed";
  elapsed.unit = "ns";
  elapsed.base = elapsed_figures(b);
  elapsed.fresh = elapsed_figures(n);
  judge_means(elapsed, *elapsed.base, *elapsed.fresh, out.base, out.fresh, out.rule);
  out.rows.push_back(std::move(elapsed));
}

DiffSide described(DiffSide side, const std::string& target, std::uint64_t timestamp,
                   std::uint64_t elapsed, int runs) {
  side.target = target;
  side.timestamp_unix_ns = timestamp;
  side.elapsed_ns = elapsed;
  side.runs = runs;
  return side;
}

// What could not be judged, once per reason.
std::vector<std::string> notes_of(const std::vector<DiffRow>& rows) {
  std::vector<std::string> notes;
  for (const auto& r : rows) {
    if (r.why_not_tested.empty()) continue;
    if (std::find(notes.begin(), notes.end(), r.why_not_tested) == notes.end())
      notes.push_back(r.why_not_tested);
  }
  return notes;
}

}  // namespace

const char* to_string(DiffStatus s) {
  switch (s) {
    case DiffStatus::changed:
      return "changed";
    case DiffStatus::within_noise:
      return "within-noise";
    case DiffStatus::not_tested:
      return "not-tested";
    case DiffStatus::added:
      return "added";
    case DiffStatus::removed:
      return "removed";
  }
  return "unknown";
}

std::size_t DiffReport::flagged() const {
  return static_cast<std::size_t>(std::count_if(
      rows.begin(), rows.end(), [](const DiffRow& r) { return r.status == DiffStatus::changed; }));
}

DiffReport diff_runs(const SavedRun& base, const DiffSide& base_side, const SavedRun& fresh,
                     const DiffSide& new_side, const DiffRule& rule) {
  if (base.mode != fresh.mode)
    throw UserError(base_side.name + " is a " + to_string(base.mode) + " report and " +
                        new_side.name + " a " + to_string(fresh.mode) +
                        " report: diff compares two runs of one mode",
                    "give two reports of 'pmcprof stat -j' counting alike, or two of --func");
  DiffReport out;
  out.mode = base.mode;
  out.rule = rule;
  if (base.mode == RunMode::counting) {
    const CountingReport& b = counting_totals(base, base_side.name);
    const CountingReport& n = counting_totals(fresh, new_side.name);
    out.base = described(base_side, b.target, b.timestamp_unix_ns, b.elapsed_ns, b.runs);
    out.fresh = described(new_side, n.target, n.timestamp_unix_ns, n.elapsed_ns, n.runs);
    diff_counting(out, b, n);
  } else {
    const FunctionReport& b = function_totals(base, base_side.name);
    const FunctionReport& n = function_totals(fresh, new_side.name);
    out.by = n.by;
    out.base = described(base_side, b.target, b.timestamp_unix_ns, b.elapsed_ns, 1);
    out.fresh = described(new_side, n.target, n.timestamp_unix_ns, n.elapsed_ns, 1);
    diff_functions(out, b, n);
  }
  out.notes = notes_of(out.rows);
  return out;
}

}  // namespace pmcprof

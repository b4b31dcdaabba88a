#include "pmcprof/events/metric_table.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <stdexcept>

#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

// ---- formulas: a small recursive-descent parser into a tree ----

struct MetricFormula::Node {
  char op = 0;  // 0: leaf; '+', '-', '*', '/': binary; 'n': negation
  double number = 0;
  std::string event;  // leaf: an event name, else a number
  std::shared_ptr<const Node> left, right;
};

namespace {

using NodePtr = std::shared_ptr<const MetricFormula::Node>;

bool event_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' ||
         c == '-';
}

class Parser {
 public:
  Parser(std::string_view text, std::vector<std::string>& inputs) : s_(text), inputs_(inputs) {}

  NodePtr parse() {
    NodePtr n = sum();
    skip();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    return n;
  }

 private:
  NodePtr sum() {
    NodePtr n = product();
    for (skip(); pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-'); skip()) {
      const char op = s_[pos_++];
      n = binary(op, n, product());
    }
    return n;
  }
  NodePtr product() {
    NodePtr n = factor();
    for (skip(); pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '/'); skip()) {
      const char op = s_[pos_++];
      n = binary(op, n, factor());
    }
    return n;
  }
  NodePtr factor() {
    skip();
    if (pos_ >= s_.size()) fail("formula ends early");
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      NodePtr n = sum();
      skip();
      if (pos_ >= s_.size() || s_[pos_] != ')') fail("missing ')'");
      ++pos_;
      return n;
    }
    if (c == '-') {
      ++pos_;
      auto n = std::make_shared<MetricFormula::Node>();
      n->op = 'n';
      n->left = factor();
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return number();
    if (event_char(c)) return event();
    fail("unexpected '" + std::string(1, c) + "'");
    return nullptr;
  }
  NodePtr number() {
    std::size_t used = 0;
    const double v = std::stod(std::string(s_.substr(pos_)), &used);
    pos_ += used;
    auto n = std::make_shared<MetricFormula::Node>();
    n->number = v;
    return n;
  }
  NodePtr event() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && event_char(s_[pos_])) ++pos_;
    auto n = std::make_shared<MetricFormula::Node>();
    n->event = std::string(s_.substr(start, pos_ - start));
    if (std::find(inputs_.begin(), inputs_.end(), n->event) == inputs_.end())
      inputs_.push_back(n->event);
    return n;
  }
  static NodePtr binary(char op, NodePtr l, NodePtr r) {
    auto n = std::make_shared<MetricFormula::Node>();
    n->op = op;
    n->left = std::move(l);
    n->right = std::move(r);
    return n;
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("metric formula '" + std::string(s_) + "': " + what);
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::vector<std::string>& inputs_;
};

std::optional<double> eval(const MetricFormula::Node& n, const std::map<std::string, double>& v,
                           std::string* why_not) {
  if (n.op == 0) {
    if (n.event.empty()) return n.number;
    auto it = v.find(n.event);
    if (it == v.end()) {
      if (why_not) *why_not = n.event + " not counted";
      return std::nullopt;
    }
    return it->second;
  }
  auto l = eval(*n.left, v, why_not);
  if (!l) return std::nullopt;
  if (n.op == 'n') return -*l;
  auto r = eval(*n.right, v, why_not);
  if (!r) return std::nullopt;
  switch (n.op) {
    case '+':
      return *l + *r;
    case '-':
      return *l - *r;
    case '*':
      return *l * *r;
    default:
      break;
  }
  if (*r == 0) {
    if (why_not)
      *why_not =
          "division by zero (" + (n.right->event.empty() ? "0" : n.right->event + " is 0") + ")";
    return std::nullopt;
  }
  return *l / *r;
}

MetricDef def(std::string name, std::vector<std::string> groups, std::string unit,
              std::string description, const std::vector<std::string>& formulas) {
  MetricDef d{std::move(name), std::move(groups), std::move(description), std::move(unit), {}};
  for (const auto& f : formulas) d.variants.push_back(MetricFormula::parse(f));
  return d;
}

// The classic level-1 top-down formulas: of all issue slots, the share the front end left
// empty, the share spent on uops that never retired, the share that retired, and the rest.
// TOPDOWN:SLOTS counts the slots from Icelake on (tried first); up to Skylake they are 4 per
// cycle and retired ones UOPS_RETIRED:RETIRE_SLOTS.
constexpr const char* kSlotsSkl = "(4 * CPU_CLK_UNHALTED:THREAD_P)";
constexpr const char* kSlotsIcl = "TOPDOWN:SLOTS";

std::string width_x_recovery(const std::string& slots) {
  return slots == kSlotsSkl
             ? "4 * INT_MISC:RECOVERY_CYCLES"
             : "TOPDOWN:SLOTS / CPU_CLK_UNHALTED:THREAD_P * INT_MISC:RECOVERY_CYCLES";
}

std::vector<MetricDef> build_table() {
  std::vector<MetricDef> t;
  t.push_back(def("IPC", {"Summary", "Pipeline"}, "insn per cycle",
                  "Instructions retired per cycle", {"instructions / cycles"}));
  t.push_back(def("CPI", {"Pipeline"}, "cycles per insn", "Cycles per instruction retired",
                  {"cycles / instructions"}));
  t.push_back(def("CPUs_utilized", {"Summary"}, "CPUs utilized",
                  "On-CPU time over wall time: how many CPUs were busy on average",
                  {"task-clock / duration_time"}));
  t.push_back(def("GHz", {"Summary"}, "GHz", "Cycles per nanosecond of on-CPU time",
                  {"cycles / task-clock"}));
  t.push_back(def("branch_miss_rate", {"Branches"}, "%", "Mispredicted branches of all branches",
                  {"100 * branch-misses / branches"}));
  t.push_back(def("branch_mpki", {"Branches"}, "per 1k insn",
                  "Mispredicted branches per thousand instructions",
                  {"1000 * branch-misses / instructions"}));
  t.push_back(def("cache_miss_rate", {"Cache"}, "%", "Cache misses of all cache references",
                  {"100 * cache-misses / cache-references"}));
  t.push_back(def("cache_mpki", {"Cache"}, "per 1k insn", "Cache misses per thousand instructions",
                  {"1000 * cache-misses / instructions"}));
  t.push_back(def("L1D_miss_rate", {"Cache"}, "%", "L1 data cache load misses of all loads",
                  {"100 * L1-dcache-load-misses / L1-dcache-loads"}));
  t.push_back(def("L1I_miss_rate", {"Cache"}, "%",
                  "L1 instruction cache misses of all instruction fetches",
                  {"100 * L1-icache-load-misses / L1-icache-loads"}));
  t.push_back(def("LLC_miss_rate", {"Cache"}, "%", "Last-level cache load misses of all loads",
                  {"100 * LLC-load-misses / LLC-loads"}));
  t.push_back(def("dTLB_miss_rate", {"TLB"}, "%", "Data TLB load misses of all loads",
                  {"100 * dTLB-load-misses / dTLB-loads"}));
  t.push_back(def("iTLB_miss_rate", {"TLB"}, "%", "Instruction TLB misses of all fetches",
                  {"100 * iTLB-load-misses / iTLB-loads"}));
  t.push_back(def("frontend_cycles_idle", {"Stalls"}, "%",
                  "Cycles the front end delivered nothing (stalled-cycles-frontend)",
                  {"100 * stalled-cycles-frontend / cycles"}));
  t.push_back(def("backend_cycles_idle", {"Stalls"}, "%",
                  "Cycles the back end made no progress (stalled-cycles-backend)",
                  {"100 * stalled-cycles-backend / cycles"}));
  std::vector<std::string> fe, bad, ret, be;
  for (const std::string slots : {kSlotsIcl, kSlotsSkl}) {
    const std::string retired =
        slots == kSlotsSkl ? "UOPS_RETIRED:RETIRE_SLOTS" : "UOPS_RETIRED:SLOTS";
    fe.push_back("100 * IDQ_UOPS_NOT_DELIVERED:CORE / " + slots);
    bad.push_back("100 * (UOPS_ISSUED:ANY - " + retired + " + " + width_x_recovery(slots) + ") / " +
                  slots);
    ret.push_back("100 * " + retired + " / " + slots);
    be.push_back("100 - 100 * (IDQ_UOPS_NOT_DELIVERED:CORE + UOPS_ISSUED:ANY + " +
                 width_x_recovery(slots) + ") / " + slots);
  }
  // Arm's common events (PMUv3 with STALL_FRONTEND/STALL_BACKEND, e.g. Neoverse).
  fe.push_back("100 * STALL_FRONTEND / CPU_CYCLES");
  be.push_back("100 * STALL_BACKEND / CPU_CYCLES");
  t.push_back(def("frontend_bound", {"TopdownL1"}, "%",
                  "Issue slots the front end left empty (top-down level 1)", fe));
  t.push_back(def("bad_speculation", {"TopdownL1"}, "%",
                  "Issue slots spent on uops that never retired (top-down level 1)", bad));
  t.push_back(def("retiring", {"TopdownL1"}, "%",
                  "Issue slots whose uops retired (top-down level 1)", ret));
  t.push_back(def("backend_bound", {"TopdownL1"}, "%",
                  "Issue slots the back end could not take (top-down level 1)", be));
  return t;
}

bool resolves(const MetricFormula& f, const EventResolver& resolver) {
  for (const auto& e : f.inputs())
    if (e != "duration_time" && !resolver.resolvable(e)) return false;
  return true;
}

MetricChoice choose(const MetricDef& d, const EventResolver& resolver) {
  MetricChoice c{&d, nullptr};
  for (const auto& f : d.variants)
    if (resolves(f, resolver)) {
      c.formula = &f;
      break;
    }
  return c;
}

bool in_group(const MetricDef& d, const std::string& lower_name) {
  for (const auto& g : d.groups)
    if (to_lower(g) == lower_name) return true;
  return false;
}

void add_unique(std::vector<MetricChoice>& out, MetricChoice c) {
  for (const auto& o : out)
    if (o.def == c.def) return;
  out.push_back(c);
}

// The metric named `name` (not resolving here) explained in one line.
[[noreturn]] void throw_unavailable(const MetricDef& d, const EventResolver& resolver) {
  std::vector<std::string> missing;
  for (const auto& e : d.variants.front().inputs())
    if (e != "duration_time" && !resolver.resolvable(e)) missing.push_back(e);
  throw UserError("metric '" + d.name + "' cannot be counted here: this machine's PMUs have no " +
                      join(missing, ", "),
                  "'pmcprof list --metrics' shows the metrics this machine can count");
}

}  // namespace

MetricFormula MetricFormula::parse(std::string_view text) {
  MetricFormula f;
  f.text_ = std::string(text);
  f.root_ = Parser(text, f.inputs_).parse();
  return f;
}

std::optional<MetricFormula::Ratio> MetricFormula::ratio() const {
  const Node& n = *root_;
  auto leaf_event = [](const NodePtr& p) { return p && p->op == 0 && !p->event.empty(); };
  auto leaf_number = [](const NodePtr& p) { return p && p->op == 0 && p->event.empty(); };
  if (n.op != '/' || !leaf_event(n.right)) return std::nullopt;
  Ratio r;
  r.denominator = n.right->event;
  if (leaf_event(n.left)) {
    r.numerator = n.left->event;
  } else if (n.left && n.left->op == '*' && leaf_number(n.left->left) &&
             leaf_event(n.left->right)) {
    r.scale = n.left->left->number;
    r.numerator = n.left->right->event;
  } else if (n.left && n.left->op == '*' && leaf_event(n.left->left) &&
             leaf_number(n.left->right)) {
    r.scale = n.left->right->number;
    r.numerator = n.left->left->event;
  } else {
    return std::nullopt;
  }
  if (r.numerator == r.denominator) return std::nullopt;
  return r;
}

std::optional<double> MetricFormula::evaluate(const std::map<std::string, double>& values,
                                              std::string* why_not) const {
  return eval(*root_, values, why_not);
}

std::vector<std::string> MetricChoice::events() const {
  std::vector<std::string> out;
  if (!formula) return out;
  for (const auto& e : formula->inputs())
    if (e != "duration_time") out.push_back(e);
  return out;
}

const std::vector<MetricDef>& metric_table() {
  static const std::vector<MetricDef> table = build_table();
  return table;
}

std::vector<MetricChoice> available_metrics(const EventResolver& resolver) {
  std::vector<MetricChoice> out;
  for (const auto& d : metric_table())
    if (auto c = choose(d, resolver); c.formula) out.push_back(c);
  return out;
}

std::vector<std::string> metric_groups(const std::vector<MetricChoice>& metrics) {
  std::set<std::string> groups;
  for (const auto& m : metrics)
    for (const auto& g : m.def->groups) groups.insert(g);
  return {groups.begin(), groups.end()};
}

std::vector<MetricChoice> select_metrics(const std::vector<std::string>& names,
                                         const EventResolver& resolver) {
  std::vector<MetricChoice> out;
  for (const auto& raw : names) {
    const std::string name = to_lower(trim(raw));
    if (name.empty()) throw UserError("empty metric name in -M", "e.g. -M IPC,branch_miss_rate");
    bool found = false;
    for (const auto& d : metric_table()) {
      if (to_lower(d.name) != name) continue;
      found = true;
      MetricChoice c = choose(d, resolver);
      if (!c.formula) throw_unavailable(d, resolver);
      add_unique(out, c);
    }
    if (found) continue;
    const MetricDef* member = nullptr;
    for (const auto& d : metric_table()) {
      if (!in_group(d, name)) continue;
      member = &d;
      MetricChoice c = choose(d, resolver);
      if (c.formula) {
        add_unique(out, c);
        found = true;
      }
    }
    if (found) continue;
    if (member) throw_unavailable(*member, resolver);
    std::vector<std::string> known;
    for (const auto& m : available_metrics(resolver)) known.push_back(m.def->name);
    for (const auto& g : metric_groups(available_metrics(resolver))) known.push_back(g);
    auto close = closest_matches(std::string(trim(raw)), known);
    throw UserError("unknown metric or metric group " + quote(trim(raw)),
                    close.empty() ? "'pmcprof list --metrics' shows them"
                                  : "did you mean " + join(close, ", ") +
                                        "? ('pmcprof list --metrics' shows them all)");
  }
  return out;
}

std::optional<double> evaluate_metric(const MetricChoice& metric,
                                      const std::map<std::string, double>& values,
                                      std::string* why_not) {
  if (!metric.formula) {
    if (why_not) *why_not = "no formula for this machine's PMUs";
    return std::nullopt;
  }
  return metric.formula->evaluate(values, why_not);
}

}  // namespace pmcprof

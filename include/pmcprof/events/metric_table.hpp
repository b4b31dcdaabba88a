#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pmcprof {

class EventResolver;

// A metric formula: numbers, event names, + - * / and parentheses, e.g.
// "100 * branch-misses / branches". Event names are written as for -e and may contain '-', so
// a binary minus needs spaces around it ("a - b"). duration_time is the wall time counted, in
// nanoseconds (like task-clock), so task-clock / duration_time is CPUs utilized.
class MetricFormula {
 public:
  // Throws std::invalid_argument on a malformed formula (the table's are tested).
  static MetricFormula parse(std::string_view text);

  // The event names it reads, in order of first appearance (duration_time included).
  const std::vector<std::string>& inputs() const { return inputs_; }
  const std::string& text() const { return text_; }

  // The formula as `[scale *] numerator / denominator` of two inputs, when it is one
  // ("instructions / cycles", "100 * branch-misses / branches"): the form a metric can take
  // per call of a function. nullopt for any other shape (sums, differences, constants).
  struct Ratio {
    double scale = 1;
    std::string numerator, denominator;
  };
  std::optional<Ratio> ratio() const;

  // The value from measured values by event name; nullopt with `why_not` set when an input is
  // missing or a divisor is 0. Pure: no state, no I/O.
  std::optional<double> evaluate(const std::map<std::string, double>& values,
                                 std::string* why_not) const;

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  std::vector<std::string> inputs_;
  std::string text_;
};

// One metric of the table, like perf's -M metrics.
struct MetricDef {
  std::string name;                 // "IPC"
  std::vector<std::string> groups;  // "Summary", "Branches", "TopdownL1", ...
  std::string description;
  std::string unit;  // shown after the value: "insn per cycle", "%"; "" shows the name only
  // Alternatives for different PMUs, most specific first: the first whose events all resolve
  // on this machine is the metric's formula here.
  std::vector<MetricFormula> variants;
};

// What a metric is here: its definition and the variant this machine's PMUs resolve.
struct MetricChoice {
  const MetricDef* def = nullptr;
  const MetricFormula* formula = nullptr;  // nullptr: no variant resolves here
  // Its events in -e order (inputs() without duration_time, which is not an event).
  std::vector<std::string> events() const;
};

// Every metric pmcprof knows (all variants), in table order.
const std::vector<MetricDef>& metric_table();

// The metrics whose events all resolve here (through libpfm4, sysfs or tracefs), with the
// variant chosen. Resolving is not counting: a kernel without a hardware PMU still resolves
// "cycles" (and then reports it <not supported>).
std::vector<MetricChoice> available_metrics(const EventResolver& resolver);

// The group names of `metrics`, sorted, each once.
std::vector<std::string> metric_groups(const std::vector<MetricChoice>& metrics);

// -M NAMES: a comma list of metric and metric-group names (case-insensitive), expanded in
// order, each metric once. Throws UserError for a name that is neither (with close names as
// the hint), or for a metric no variant of which resolves here (saying which events are
// missing).
std::vector<MetricChoice> select_metrics(const std::vector<std::string>& names,
                                         const EventResolver& resolver);

// Evaluates a metric on measured values by event name: the pure function function mode uses
// per call. Returns nullopt with `why_not` when it cannot be computed.
std::optional<double> evaluate_metric(const MetricChoice& metric,
                                      const std::map<std::string, double>& values,
                                      std::string* why_not);

}  // namespace pmcprof

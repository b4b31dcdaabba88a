// `pmcprof list --metrics` / `--metricgroups`: the -M table, and what this machine can count.
#include "pmcprof/cli/list_metrics.hpp"

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/events/metric_table.hpp"
#include "pmcprof/report/number_format.hpp"
#include "pmcprof/report/report.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

struct MetricRow {
  MetricChoice choice;
  std::string not_countable;  // why the kernel cannot count it here, "" when it can
};

// Opens the metric's events once on this process to see whether the kernel counts them
// (resolving is not counting: "cycles" resolves on a machine without a hardware PMU).
std::string probe(const MetricChoice& m, const EventResolver& resolver) {
  std::vector<EventGroupSpec> specs;
  for (const auto& e : m.events()) specs.push_back({{parse_event(e)}, false, false});
  try {
    auto set =
        CounterSet::open(resolver.resolve(specs), CounterTarget::tasks({getpid()}, false, false));
    std::vector<std::string> refused;
    for (std::size_t i = 0; i < set.event_count(); ++i)
      if (!set.supported(i)) refused.push_back(set.event(i).display_name());
    return refused.empty() ? "" : join(refused, ", ") + " <not supported>";
  } catch (const Error& e) {
    return e.what();
  }
}

std::vector<MetricRow> rows(const EventResolver& resolver) {
  std::vector<MetricRow> out;
  for (const auto& m : available_metrics(resolver)) out.push_back({m, probe(m, resolver)});
  return out;
}

void print_text(const std::vector<MetricRow>& metrics, std::ostream& out) {
  out << "Metrics (pmcprof stat -M NAME or GROUP; formulas over the events they count):\n";
  for (const auto& group : metric_groups([&] {
         std::vector<MetricChoice> c;
         for (const auto& r : metrics) c.push_back(r.choice);
         return c;
       }())) {
    out << "\n" << group << ":\n";
    for (const auto& r : metrics) {
      const auto& g = r.choice.def->groups;
      if (std::find(g.begin(), g.end(), group) == g.end()) continue;
      out << "  " << pad_right(r.choice.def->name, 22) << " " << r.choice.def->description
          << (r.choice.def->unit.empty() ? "" : " [" + r.choice.def->unit + "]") << "\n"
          << "  " << std::string(22, ' ') << " = " << r.choice.formula->text() << "\n";
      if (!r.not_countable.empty())
        out << "  " << std::string(22, ' ') << " not countable here: " << r.not_countable << "\n";
    }
  }
}

void print_json(const std::vector<MetricRow>& metrics, std::ostream& out) {
  nlohmann::ordered_json j;
  j["schema"] = kJsonSchema;
  j["type"] = "list";
  auto arr = nlohmann::ordered_json::array();
  for (const auto& r : metrics) {
    nlohmann::ordered_json m;
    m["name"] = r.choice.def->name;
    m["groups"] = r.choice.def->groups;
    m["description"] = r.choice.def->description;
    m["unit"] = r.choice.def->unit;
    m["formula"] = r.choice.formula->text();
    m["events"] = r.choice.events();
    m["countable"] = r.not_countable.empty();
    if (!r.not_countable.empty()) m["reason"] = r.not_countable;
    arr.push_back(std::move(m));
  }
  j["metrics"] = std::move(arr);
  out << j.dump(2) << "\n";
}

}  // namespace

int list_metrics(const ListOptions& opts, const EventResolver& resolver, std::ostream& out) {
  if (opts.metric_groups) {
    std::vector<MetricChoice> available = available_metrics(resolver);
    for (const auto& g : metric_groups(available)) out << g << "\n";
    return kExitOk;
  }
  if (opts.names_only) {
    for (const auto& m : available_metrics(resolver)) out << m.def->name << "\n";
    return kExitOk;
  }
  auto metrics = rows(resolver);
  if (opts.json)
    print_json(metrics, out);
  else
    print_text(metrics, out);
  return kExitOk;
}

}  // namespace pmcprof

#include "pmcprof/events/metric_binding.hpp"

#include <algorithm>
#include <optional>
#include <tuple>

namespace pmcprof {

namespace {

// What an event counts, whatever its spelling or modifiers.
using Kind = std::tuple<std::uint32_t, std::uint64_t, std::uint64_t, std::uint64_t>;
// Which privilege levels it counts.
using Privilege = std::tuple<bool, bool, bool>;

Kind kind_of(const perf_event_attr& a) {
  return {a.type, a.config, a.config1, a.config2};
}
Privilege privilege_of(const perf_event_attr& a) {
  return {a.exclude_user != 0, a.exclude_kernel != 0, a.exclude_hv != 0};
}

struct RunEvent {
  Kind kind;
  Privilege privilege;
};

std::vector<RunEvent> run_events(const std::vector<ResolvedGroup>& groups) {
  std::vector<RunEvent> out;
  for (const auto& g : groups)
    for (const auto& e : g.events) out.push_back({kind_of(e.attr), privilege_of(e.attr)});
  return out;
}

// The run's first event of `kind` counting at `privilege`.
std::optional<std::size_t> find(const std::vector<RunEvent>& events, const Kind& kind,
                                const Privilege& privilege) {
  for (std::size_t i = 0; i < events.size(); ++i)
    if (events[i].kind == kind && events[i].privilege == privilege) return i;
  return std::nullopt;
}

// The inputs of `metric` resolved (the events its formula names, as written there).
std::vector<ResolvedEvent> resolve_inputs(const MetricChoice& metric,
                                          const EventResolver& resolver) {
  std::vector<ResolvedEvent> out;
  for (const auto& name : metric.events()) out.push_back(resolver.resolve(parse_event(name)));
  return out;
}

// All inputs bound to run events of one privilege: the first such set, trying the privilege the
// table writes the events with (none) first, then that of each run event that encodes the
// first input, in the run's order.
std::optional<std::map<std::string, std::size_t>> bind_existing(
    const MetricChoice& metric, const std::vector<ResolvedEvent>& inputs,
    const std::vector<RunEvent>& events) {
  if (inputs.empty()) return std::nullopt;
  const auto names = metric.events();
  const Kind first = kind_of(inputs.front().attr);
  std::vector<Privilege> tries{privilege_of(inputs.front().attr)};
  for (const auto& candidate : events)
    if (candidate.kind == first) tries.push_back(candidate.privilege);
  for (const auto& privilege : tries) {
    std::map<std::string, std::size_t> bound;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      auto at = find(events, kind_of(inputs[k].attr), privilege);
      if (!at) break;
      bound[names[k]] = *at;
    }
    if (bound.size() == inputs.size()) return bound;
  }
  return std::nullopt;
}

}  // namespace

bool derived_automatically(const MetricDef& def) {
  static const char* const kShadow[] = {"IPC",
                                        "GHz",
                                        "CPUs_utilized",
                                        "branch_miss_rate",
                                        "cache_miss_rate",
                                        "L1D_miss_rate",
                                        "L1I_miss_rate",
                                        "LLC_miss_rate",
                                        "dTLB_miss_rate",
                                        "iTLB_miss_rate",
                                        "frontend_cycles_idle",
                                        "backend_cycles_idle"};
  return std::any_of(std::begin(kShadow), std::end(kShadow),
                     [&](const char* n) { return def.name == n; });
}

std::vector<MetricBinding> bind_metrics(std::vector<ResolvedGroup>& groups,
                                        const std::vector<MetricChoice>& requested,
                                        const EventResolver& resolver, bool group_added) {
  std::vector<MetricBinding> out;
  auto bound_already = [&](const MetricDef* def) {
    return std::any_of(out.begin(), out.end(),
                       [&](const MetricBinding& b) { return b.metric.def == def; });
  };
  for (const auto& metric : requested) {
    if (!metric.formula || bound_already(metric.def)) continue;
    const auto inputs = resolve_inputs(metric, resolver);
    auto events = run_events(groups);
    MetricBinding b{metric, true, {}};
    if (auto bound = bind_existing(metric, inputs, events)) {
      b.inputs = std::move(*bound);
      out.push_back(std::move(b));
      continue;
    }
    // Events missing at the privilege the table writes them with (none): added as one group.
    const auto names = metric.events();
    ResolvedGroup added;
    std::size_t next = events.size();
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (auto at = find(events, kind_of(inputs[k].attr), privilege_of(inputs[k].attr))) {
        b.inputs[names[k]] = *at;
        continue;
      }
      b.inputs[names[k]] = next++;
      added.events.push_back(inputs[k]);
    }
    added.grouped = group_added && added.events.size() > 1;
    added.weak = added.metric = added.grouped;
    if (!added.events.empty()) groups.push_back(std::move(added));
    out.push_back(std::move(b));
  }
  const auto events = run_events(groups);
  for (const auto& def : metric_table()) {
    if (!derived_automatically(def) || bound_already(&def)) continue;
    // The first variant whose inputs the run has (available_metrics would pick the first one
    // that resolves, which may not be the one the run counts).
    for (const auto& formula : def.variants) {
      MetricChoice choice{&def, &formula};
      std::vector<ResolvedEvent> inputs;
      try {
        inputs = resolve_inputs(choice, resolver);
      } catch (const std::exception&) {
        continue;  // not an event here
      }
      if (auto bound = bind_existing(choice, inputs, events)) {
        out.push_back({choice, false, std::move(*bound)});
        break;
      }
    }
  }
  return out;
}

}  // namespace pmcprof

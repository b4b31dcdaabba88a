#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/events/metric_table.hpp"

namespace pmcprof {

// A metric bound to the events of a function-mode run: every event its formula reads is one of
// the run's events (not a copy of it), so the metric is computed from the same calls' values.
struct MetricBinding {
  MetricChoice metric;
  bool requested = false;  // -M; otherwise derived automatically (perf's shadow metrics)
  // Formula input (an event name as the table writes it) -> the run's event: its index in the
  // flattened groups (the order the counters are opened in). duration_time is no event and is
  // not here: per call, it is the call's wall time.
  std::map<std::string, std::size_t> inputs;
};

// Whether function mode derives `def` by itself when the run has its events, as perf prints
// its shadow metrics beside the counters: IPC, GHz, CPUs utilized and the miss shares (not
// CPI, MPKI or the top-down metrics, which only -M asks for).
bool derived_automatically(const MetricDef& def);

// Binds the metrics of a function-mode run to its events.
//  - An event of the run stands for a formula input when it encodes the same event (type and
//    config: "instructions:u" for "instructions"), and all the inputs of one metric come from
//    events with the same privilege modifiers (all :u, or none); events without modifiers,
//    as the table writes them, are preferred when the run has both.
//  - A -M metric (`requested`) that does not find all its events adds the missing ones, written
//    as the table writes them, as one group (`group_added`, unless --metric-no-group) after
//    the run's events, so they run on the PMU together: measured in the same calls.
//  - The automatic metrics (derived_automatically, resolvable here) are bound only when every
//    event they read is in the run already; they add nothing, and none is bound twice.
// Throws UserError when an event a -M metric needs cannot be resolved.
std::vector<MetricBinding> bind_metrics(std::vector<ResolvedGroup>& groups,
                                        const std::vector<MetricChoice>& requested,
                                        const EventResolver& resolver, bool group_added = true);

}  // namespace pmcprof

#pragma once

#include <iosfwd>

#include "pmcprof/cli/commands.hpp"
#include "pmcprof/events/event_resolver.hpp"

namespace pmcprof {

// `pmcprof list --metrics` (text, JSON, --names) and `--metricgroups`.
int list_metrics(const ListOptions& opts, const EventResolver& resolver, std::ostream& out);

}  // namespace pmcprof

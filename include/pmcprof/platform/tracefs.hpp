#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmcprof/platform/mountinfo.hpp"

namespace pmcprof {

// Where tracefs is reachable among `mounts`: a tracefs mount (preferring /sys/kernel/tracing),
// else the "tracing" directory of a mounted debugfs (the kernel automounts tracefs there on
// first access). nullopt when neither is mounted. Pure.
std::optional<std::string> find_tracefs(const std::vector<MountEntry>& mounts);

// The tracefs directory of this machine, mounting tracefs at /sys/kernel/tracing when it is not
// mounted anywhere yet (root can). The mount is left in place: it is what `mount -t tracefs`
// would do, and tracepoint modes need it for the rest of the run anyway.
// Throws UserError when tracefs is neither mounted nor mountable.
std::string ensure_tracefs_mounted();

// The numeric id of tracepoint CATEGORY:NAME (tracefs/events/CATEGORY/NAME/id), the perf
// PERF_TYPE_TRACEPOINT config. nullopt when the tracepoint does not exist.
std::optional<std::uint64_t> read_tracepoint_id(const std::string& tracefs,
                                                std::string_view category, std::string_view name);

// The tracepoint categories of tracefs (its events/ directories: "sched", "syscalls", ...),
// or the tracepoints of one category ("sched_switch", ...), sorted. Empty when unreadable.
std::vector<std::string> tracepoint_categories(const std::string& tracefs);
std::vector<std::string> tracepoint_names(const std::string& tracefs, std::string_view category);

}  // namespace pmcprof

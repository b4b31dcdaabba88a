#pragma once

#include <linux/perf_event.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmcprof/events/event_spec.hpp"
#include "pmcprof/platform/core_pmus.hpp"

namespace pmcprof {

// One event resolved by libpfm4 into what perf_event_open needs.
struct ResolvedEvent {
  EventSpec spec;          // what the user wrote
  perf_event_attr attr{};  // type, config*, exclude_* and modifiers; counters add the rest
  std::string pmu;         // libpfm4 PMU that encoded it: "perf", "perf_raw", "skl", ...
  std::string canonical;   // libpfm4's fully qualified form (pmu::EVENT:attr=...)
  std::string unit;        // the kernel's unit: "ns" for cpu-clock/task-clock, sysfs .unit, ""
  double scale = 1;        // sysfs .scale: reported value = count x scale
  std::string name;        // pmu/name=X/: the name shown instead of what was written
  // A heterogeneous machine's core PMUs the event counts on, each only on its own CPUs (see
  // core_pmu_events.hpp). Empty on a machine with one core PMU, and for events of no core PMU
  // (software, tracepoints, uncore): the kernel then chooses, as it always did. One: the
  // event belongs to that PMU (cpu_atom/cycles/, adl_grt::..., a raw code of its type).
  // Several: written without a PMU (cycles), it counts on every core PMU; counting mode
  // splits it into one event per PMU, function mode reads on each CPU its PMU's counter.
  std::vector<CorePmu> core_pmus;
  // An event written without a PMU that counting mode counts on one core PMU (split per
  // PMU, or narrowed to the PMU of its group): the index, in the groups as resolved, of the
  // event it came from, which its siblings on the other PMUs share. Shown as PMU/event/.
  std::optional<std::size_t> split_from;

  // What reports call it: perf's PMU/event/modifiers for an event split per core PMU
  // ("cpu_atom/cycles/u"), the name= term's name, else what the user wrote.
  std::string display_name() const;
  bool is_software() const { return attr.type == PERF_TYPE_SOFTWARE; }
  bool is_clock() const;  // cpu-clock or task-clock: value in ns
  // Counts retired instructions or core cycles: the generic events, the model events named so
  // (INST_RETIRED, CPU_CYCLES, CPU_CLK_UNHALTED, ...), and raw codes of the architecture's
  // own counters (arm64 PMUv3 0x08/0x11; x86 0xc0/0x3c).
  bool counts_instructions_or_cycles() const;
};

struct ResolvedGroup {
  std::vector<ResolvedEvent> events;
  bool grouped = false;
  bool weak = false;    // {...}:W
  bool metric = false;  // an -M metric's events (see EventGroupSpec::metric)
};

// Where events other than libpfm4's come from: sysfs PMUs (pmu/terms/) and tracepoints
// (sys:name). Tests point these at fake trees.
struct EventSources {
  std::string sysfs_pmus = "/sys/bus/event_source/devices";
  std::string tracefs;  // empty: the machine's (mounted when needed)
};

// Owns libpfm4's global state (pfm_initialize / pfm_terminate). One per process at a time;
// LIBPFM_FORCE_PMU is read when it is constructed.
class PfmLibrary {
 public:
  PfmLibrary();
  ~PfmLibrary();
  PfmLibrary(const PfmLibrary&) = delete;
  PfmLibrary& operator=(const PfmLibrary&) = delete;
};

class EventResolver {
 public:
  // Finds the machine's core PMUs below sources.sysfs_pmus.
  explicit EventResolver(const PfmLibrary& pfm, EventSources sources = {});

  // pmu/terms/ through sysfs, sys:name through tracefs, everything else through libpfm4.
  // Throws UserError naming the event (with close names as a hint) when it cannot be resolved.
  // On a heterogeneous machine each event is bound to its core PMUs (bind_core_pmus), and
  // PMU/event/ takes perf's legacy names (cycles, instructions, LLC-load-misses) on a core
  // PMU: cpu_atom/cycles/ is cycles with cpu_atom's type in config[63:32]. A group's events
  // are checked to be of one core PMU (bind_group_core_pmus).
  ResolvedEvent resolve(const EventSpec& spec) const;
  std::vector<ResolvedGroup> resolve(const std::vector<EventGroupSpec>& groups) const;

  // The core PMUs found (see discover_core_pmus).
  const std::vector<CorePmu>& core_pmus() const { return core_pmus_; }

  // Names worth suggesting: perf-style generic names and PMU::EVENT of present PMUs.
  std::vector<std::string> known_names() const;
  // Whether libpfm4 (or sysfs, or tracefs) resolves `name` here, without throwing.
  bool resolvable(const std::string& name) const;

 private:
  ResolvedEvent resolve_libpfm(const EventSpec& spec) const;
  std::optional<ResolvedEvent> resolve_tracepoint(const EventSpec& spec) const;
  ResolvedEvent resolve_slashed(const EventSpec& spec) const;
  std::optional<ResolvedEvent> resolve_core_legacy(const EventSpec& spec) const;
  const PfmLibrary& pfm_;
  EventSources sources_;
  std::vector<CorePmu> core_pmus_;
};

// Whether `name` is written as a tracepoint, CATEGORY:NAME with a lower-case category (as
// tracepoint categories are; libpfm4's PMU::EVENT:UMASK are not). Only such names are looked
// up in tracefs.
bool looks_like_tracepoint(std::string_view name);

// Applies perf-style modifiers to an encoded attr (exclude_*, precise_ip, pinned).
void apply_modifiers(const EventModifiers& mods, perf_event_attr& attr);

}  // namespace pmcprof

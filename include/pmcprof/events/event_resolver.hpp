#pragma once

#include <linux/perf_event.h>

#include <optional>
#include <string>
#include <vector>

#include "pmcprof/events/event_spec.hpp"

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

  const std::string& display_name() const { return name.empty() ? spec.text : name; }
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
  explicit EventResolver(const PfmLibrary& pfm, EventSources sources = {})
      : pfm_(pfm), sources_(std::move(sources)) {}

  // pmu/terms/ through sysfs, sys:name through tracefs, everything else through libpfm4.
  // Throws UserError naming the event (with close names as a hint) when it cannot be resolved.
  ResolvedEvent resolve(const EventSpec& spec) const;
  std::vector<ResolvedGroup> resolve(const std::vector<EventGroupSpec>& groups) const;

  // Names worth suggesting: perf-style generic names and PMU::EVENT of present PMUs.
  std::vector<std::string> known_names() const;
  // Whether libpfm4 (or sysfs, or tracefs) resolves `name` here, without throwing.
  bool resolvable(const std::string& name) const;

 private:
  ResolvedEvent resolve_libpfm(const EventSpec& spec) const;
  std::optional<ResolvedEvent> resolve_tracepoint(const EventSpec& spec) const;
  ResolvedEvent resolve_slashed(const EventSpec& spec) const;
  const PfmLibrary& pfm_;
  EventSources sources_;
};

// Applies perf-style modifiers to an encoded attr (exclude_*, precise_ip, pinned).
void apply_modifiers(const EventModifiers& mods, perf_event_attr& attr);

}  // namespace pmcprof

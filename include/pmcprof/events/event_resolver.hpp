#pragma once

#include <linux/perf_event.h>

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
  std::string unit;        // the kernel's unit: "ns" for cpu-clock/task-clock, else ""

  const std::string& display_name() const { return spec.text; }
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
  explicit EventResolver(const PfmLibrary& pfm) : pfm_(pfm) {}

  // Throws UserError naming the event (with close names as a hint) when libpfm4 cannot.
  ResolvedEvent resolve(const EventSpec& spec) const;
  std::vector<ResolvedGroup> resolve(const std::vector<EventGroupSpec>& groups) const;

  // Names worth suggesting: perf-style generic names and PMU::EVENT of present PMUs.
  std::vector<std::string> known_names() const;

 private:
  const PfmLibrary& pfm_;
};

// Applies perf-style modifiers to an encoded attr (exclude_*, precise_ip, pinned).
void apply_modifiers(const EventModifiers& mods, perf_event_attr& attr);

}  // namespace pmcprof

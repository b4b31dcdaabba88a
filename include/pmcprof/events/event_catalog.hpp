#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pmcprof/platform/core_pmus.hpp"

namespace pmcprof {

class PfmLibrary;

// The sections of `pmcprof list`, in the order it prints them: perf list's, plus libpfm4's
// model-specific tables, which perf has no section for.
enum class EventSection {
  hardware,        // the generic perf PMU's PERF_TYPE_HARDWARE events (cycles, instructions)
  software,        // its PERF_TYPE_SOFTWARE events (task-clock, page-faults)
  hardware_cache,  // its PERF_TYPE_HW_CACHE events (L1-dcache-load-misses)
  model,           // a model-specific libpfm4 PMU (skl::INST_RETIRED)
  raw,             // libpfm4's perf_raw PMU: rNNNN
  kernel_pmu,      // a sysfs PMU's named events (msr/tsc/)
  tracepoint,      // tracefs (sched:sched_switch)
};

// perf list's words: "Hardware event", "Software event", "Hardware cache event", "Model
// event", "Raw hardware event", "Kernel PMU event", "Tracepoint event".
std::string_view section_title(EventSection section);

struct CatalogAttribute {
  std::string name;
  std::string description;
};

struct CatalogEvent {
  // As -e takes it: "cycles" (the generic perf PMU's, lower-case and bare, like perf),
  // "skl::INST_RETIRED", "r0000", "msr/tsc/", "sched:sched_switch".
  std::string name;
  std::string description;
  std::vector<CatalogAttribute> umasks;  // unit masks (PMU::EVENT:UMASK)
};

// One section's events of one PMU (the generic perf PMU has three sections).
struct CatalogPmu {
  // libpfm4's name ("perf", "skl", ...: the PMU of PMU::EVENT and a LIBPFM_FORCE_PMU value),
  // the sysfs PMU's ("msr"), or "tracepoint".
  std::string name;
  std::string description;
  EventSection section = EventSection::model;
  bool present = false;  // detected on this machine (or forced with LIBPFM_FORCE_PMU)
  // Its events count on the CPUs' own PMU: hardware, cache, raw and core model events, and a
  // core PMU's sysfs events (cpu/cycles-t/). Countable only where the hardware PMU opens.
  bool needs_core_pmu = false;
  // Present, but this machine cannot count its events: why, in the words of the doctor check
  // that decides it. Empty when it can (see mark_countable).
  std::string not_countable;
  std::vector<CatalogEvent> events;

  bool countable() const { return present && not_countable.empty(); }
};

// What libpfm4 knows. present_only limits the list to PMUs detected on this machine.
std::vector<CatalogPmu> event_catalog(const PfmLibrary& pfm, bool present_only);

// The named events of the kernel's PMUs below `sysfs_root` (each PMU's events/ directory) that
// stat's PMU/EVENT/ syntax encodes, one section per PMU. A PMU among `core_pmus` needs the
// hardware PMU. PMUs without such events are left out.
std::vector<CatalogPmu> kernel_pmu_catalog(const std::string& sysfs_root,
                                           const std::vector<CorePmu>& core_pmus);

// The tracepoints below `tracefs`/events that stat resolves (CATEGORY:NAME with an id), sorted.
CatalogPmu tracepoint_catalog(const std::string& tracefs);
// The tracepoint section when tracefs cannot be read: no events, `why` as the reason.
CatalogPmu unreadable_tracepoints(std::string why);

// The outcome of doctor's checks a section's countability depends on: "" when the check
// passed, else its brief ("no PMU (no cpu PMU in /sys/bus/event_source/devices, e.g. a VM)").
struct CountingChecks {
  std::string hardware_pmu;     // probe_hardware_pmu: cycles opens, as stat opens it
  std::string software_events;  // probe_software_events: task-clock opens and counts
};

// Marks the present sections the checks rule out: those that need the core PMU when the
// hardware check failed, the software ones when the software check did.
void mark_countable(std::vector<CatalogPmu>& pmus, const CountingChecks& checks);

// Which checks `pmus` depends on (mark_countable reads only those), to run no other probe.
bool needs_hardware_check(const std::vector<CatalogPmu>& pmus);
bool needs_software_check(const std::vector<CatalogPmu>& pmus);

// Keeps what `filter` selects, as perf list does:
//  - a section keyword (hw, hardware, sw, software, cache, hwcache, pmu, tracepoint): that
//    section, whole;
//  - a glob (with *, ? or [): the events whose name (or NAME:UMASK) it matches whole,
//    case-insensitive ('sched:*', 'skl::INST_*');
//  - else a substring, case-insensitive, of an event's name, NAME:UMASK or description, or
//    of a PMU's name (then all its events; not for the tracepoint section, whose "PMU" is
//    the keyword).
// Sections left without events are dropped unless their PMU name matches.
std::vector<CatalogPmu> filter_catalog(std::vector<CatalogPmu> pmus, const std::string& filter);

// The HINT when `filter` matches nothing in `listed` (every section list shows here,
// unfiltered): close names to try; else `--all` when `matches_absent_pmus` (it would show
// events of PMUs this machine lacks); else why tracepoints are missing, when the filter names
// one and tracefs is unreadable; else how a filter is written.
std::string no_match_hint(const std::string& filter, const std::vector<CatalogPmu>& listed,
                          bool matches_absent_pmus);

}  // namespace pmcprof

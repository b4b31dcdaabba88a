#pragma once

// Events on a heterogeneous machine (several core PMUs: Intel hybrid's cpu_core and cpu_atom,
// Arm big.LITTLE's armv8_pmuv3_0 and _1), as perf handles them:
//  - an event written without a PMU that is a hardware or cache event (cycles, instructions,
//    LLC-load-misses) counts on every core PMU: on each, PERF_TYPE_HARDWARE/HW_CACHE with the
//    PMU's type in config[63:32] (the kernel's extended type, PERF_PMU_TYPE_SHIFT), opened
//    only on that PMU's CPUs;
//  - an event of one PMU (cpu_atom/cycles/, cpu_core/event=0x3c/, libpfm4's adl_grt::... or
//    arm_ac53::..., a raw code of a PMU's type) counts only on that PMU's CPUs;
//  - a group counts on one PMU: {cycles,instructions} becomes one group per PMU, a group
//    naming two PMUs is refused.
// On a machine with one core PMU nothing here changes an event.

#include <linux/perf_event.h>

#include <cstddef>
#include <string>
#include <vector>

#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/platform/core_pmus.hpp"

namespace pmcprof {

// The core PMU (its sysfs name) a libpfm4 per-PMU table encodes for: adl_glc -> cpu_core,
// adl_grt -> cpu_atom, arm_acNN -> armv8_cortex_aNN (the names libpfm4 looks the perf type up
// by). Empty for other libpfm4 PMUs.
std::string core_pmu_of_libpfm_pmu(const std::string& libpfm_pmu);

// `attr` as PMU `pmu` counts it: a hardware or cache event gets the PMU's type in
// config[63:32]; any other event is already the PMU's own and is returned as it is.
perf_event_attr attr_on_core_pmu(const perf_event_attr& attr, const CorePmu& pmu);

// A hardware or cache event's config without the extended type: what the event is, whatever
// PMU counts it (derived metrics key on it).
std::uint64_t generic_config(const perf_event_attr& attr);

// Binds `ev` to the core PMUs of a heterogeneous machine (`pmus`; nothing when there is one
// PMU or none): a libpfm4 per-PMU event to its PMU (with that PMU's type when libpfm4 could not
// look it up), a hardware/cache event to the PMU of its extended type or, without one, to
// every PMU; any other event to the core PMU whose type it has (a raw code is cpu_core's on
// Intel hybrid, where cpu_core is PERF_TYPE_RAW). Other events stay unbound.
void bind_core_pmus(ResolvedEvent& ev, const std::vector<CorePmu>& pmus);

// Checks that a group ({a,b}) counts on one core PMU: events written without a PMU follow the
// one PMU the group names ({cpu_atom/instructions/,cycles} counts cpu_atom's cycles). Throws
// UserError, with a hint, for a group naming two core PMUs.
void bind_group_core_pmus(ResolvedGroup& group, std::size_t first_index);

// Whether event `ev` is counted on `cpu` (every CPU for an event of no core PMU).
bool counts_on_cpu(const ResolvedEvent& ev, int cpu);
// The attr to open `ev` with on `cpu` (-1: a task on any CPU): for an event of several core
// PMUs, that of the PMU of the CPU.
perf_event_attr attr_on_cpu(const ResolvedEvent& ev, int cpu);

// Counting mode: every event of several core PMUs split into one per PMU, named perf's way
// (cpu_core/cycles/), each group holding one into one group per PMU (its software members
// copied into each, counted while that PMU's group counts). PMUs with none of `cpus` (the
// CPUs counted; empty: a task, counted on any CPU) are left out, as perf leaves them out
// with -C. Throws UserError when an event of one PMU has none of `cpus`.
struct CorePmuSplit {
  std::vector<ResolvedGroup> groups;
  std::vector<std::size_t> origin;  // per group: the index of the group it came from
};
CorePmuSplit split_per_core_pmu(const std::vector<ResolvedGroup>& groups,
                                const std::vector<int>& cpus);

// Function mode reads, for a call, the counters of the CPU it runs on: an event of one core
// PMU would leave the calls on other CPUs without a reading. Throws UserError naming it.
void require_every_core_pmu(const std::vector<ResolvedGroup>& groups);

}  // namespace pmcprof

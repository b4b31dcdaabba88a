#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pmcprof {

// A core PMU: the one that counts a CPU's own events (cycles, instructions, its caches), as
// opposed to uncore PMUs (memory controllers, interconnects) and software ones. A machine with
// more than one is heterogeneous: Intel hybrid parts have cpu_core and cpu_atom (and
// cpu_lowpower), Arm big.LITTLE one armv8_pmuv3_N or armv8_cortex_aNN per kind of core, each
// listing its CPUs in a `cpus` file.
struct CorePmu {
  std::string name;        // the sysfs name: "cpu", "cpu_core", "armv8_pmuv3_0", ...
  std::uint32_t type = 0;  // perf_event_attr.type (its sysfs `type`)
  std::vector<int> cpus;   // its `cpus` file; empty: every CPU (x86's "cpu" has no such file)
  std::string model;       // caps/pmu_name when present ("skylake", "alderlake_hybrid")

  bool covers(int cpu) const;
  bool operator==(const CorePmu&) const = default;
};

// The core PMUs below `root` (/sys/bus/event_source/devices on a live system), as perf finds
// them (tools/perf/util/pmu.c, is_pmu_core): "cpu", s390's "cpum_cf", and every PMU with a
// `cpus` file. Uncore PMUs are not: they have a `cpumask` (the CPU that reads them), never a
// `cpus`. A PMU whose `type` or `cpus` cannot be read is left out. Sorted by name, numbers in
// names by value (armv8_pmuv3_2 before armv8_pmuv3_10), which is perf's order: cpu_atom's
// rows come before cpu_core's, as in perf stat.
std::vector<CorePmu> discover_core_pmus(const std::string& root = "/sys/bus/event_source/devices");

// What a core PMU is named by where doctor lists it: its `model` (caps/pmu_name), else on Arm
// the kinds of core its CPUs' MIDR_EL1 identify, read below `cpu_root`
// (cpuN/regs/identification/midr_el1): "Cortex-A57", or "Cortex-A53/Cortex-A72" for a PMU over
// two kinds; "" when neither is known. Read only when asked (one file per CPU), not by every
// run's discovery.
std::string core_pmu_model(const CorePmu& pmu,
                           const std::string& cpu_root = "/sys/devices/system/cpu");

// The core an Arm CPU's MIDR_EL1 identifies, by its implementer (bits 31:24) and part number
// (15:4) as Linux's arch/arm64/include/asm/cputype.h lists them: "Cortex-A57" for 0x411fd070;
// "implementer 0x41 part 0xd99" for a core not in the table.
std::string arm_core_name(std::uint64_t midr);

// Whether the CPUs have more than one kind of core PMU.
inline bool heterogeneous(const std::vector<CorePmu>& pmus) {
  return pmus.size() > 1;
}

// "cpu_core (CPUs 0-7)"; just the name for a PMU of every CPU.
std::string describe_core_pmu(const CorePmu& pmu);

}  // namespace pmcprof

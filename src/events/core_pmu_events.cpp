#include "pmcprof/events/core_pmu_events.hpp"

#include <algorithm>

#include "pmcprof/platform/cpu_list.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

bool hardware_or_cache(const perf_event_attr& attr) {
  return attr.type == PERF_TYPE_HARDWARE || attr.type == PERF_TYPE_HW_CACHE;
}

const CorePmu* find_by_name(const std::vector<CorePmu>& pmus, const std::string& name) {
  for (const auto& p : pmus)
    if (p.name == name) return &p;
  return nullptr;
}

const CorePmu* find_by_type(const std::vector<CorePmu>& pmus, std::uint64_t type) {
  for (const auto& p : pmus)
    if (p.type == type) return &p;
  return nullptr;
}

// Whether `pmu` counts on any of `cpus` (empty: a task, on whatever CPU it runs).
bool covers_any(const CorePmu& pmu, const std::vector<int>& cpus) {
  return cpus.empty() ||
         std::any_of(cpus.begin(), cpus.end(), [&](int cpu) { return pmu.covers(cpu); });
}

std::string group_text(const ResolvedGroup& group) {
  std::vector<std::string> names;
  for (const auto& e : group.events) names.push_back(e.spec.text);
  return "{" + join(names, ",") + "}";
}

// Whether `e` is written PMU/terms/ on its own core PMU (cpu_atom/cycles/).
bool written_on_its_pmu(const ResolvedEvent& e) {
  return e.spec.slashed && e.core_pmus.size() == 1 && e.spec.name == e.core_pmus.front().name;
}

// How `e` is written on core PMU `pmu`: cpu_atom/cycles/u for cpu_core/cycles/u or cycles:u.
std::string spelled_on(const ResolvedEvent& e, const std::string& pmu) {
  if (written_on_its_pmu(e)) return pmu + e.spec.text.substr(e.spec.name.size());
  if (hardware_or_cache(e.attr)) return pmu + "/" + e.spec.name + "/" + e.spec.modifiers.text;
  return e.spec.text;
}

// How `e` is written without a PMU: cycles:u for cpu_atom/cycles/u.
std::string spelled_generic(const ResolvedEvent& e) {
  if (!written_on_its_pmu(e) || e.spec.terms.empty()) return e.spec.text;
  const std::string& mods = e.spec.modifiers.text;
  return e.spec.terms.front().key + (mods.empty() ? "" : ":" + mods);
}

// "{cpu_atom/cycles/,cpu_atom/instructions/}": the group's events as one PMU's.
std::string group_on(const ResolvedGroup& group, const std::string& pmu) {
  std::vector<std::string> names;
  for (const auto& e : group.events) names.push_back(spelled_on(e, pmu));
  return "{" + join(names, ",") + "}";
}

[[noreturn]] void refuse_mixed_group(const ResolvedGroup& group, const std::string& a,
                                     const std::string& b) {
  throw UserError("the group " + group_text(group) + " mixes the core PMUs " + a + " and " + b +
                      ": a group counts on one PMU at a time",
                  "one group per PMU, e.g. " + group_on(group, a) + "," + group_on(group, b) +
                      "; events written without a PMU are opened as one group per core PMU, "
                      "as perf does");
}

}  // namespace

std::string core_pmu_of_libpfm_pmu(const std::string& libpfm_pmu) {
  if (libpfm_pmu == "adl_glc") return "cpu_core";
  if (libpfm_pmu == "adl_grt") return "cpu_atom";
  // arm_ac53 -> armv8_cortex_a53: the names Linux gives Cortex PMUs on device-tree systems.
  if (starts_with(libpfm_pmu, "arm_ac") && libpfm_pmu.size() > 6)
    return "armv8_cortex_a" + libpfm_pmu.substr(6);
  return {};
}

perf_event_attr attr_on_core_pmu(const perf_event_attr& attr, const CorePmu& pmu) {
  perf_event_attr out = attr;
  if (hardware_or_cache(attr))
    out.config =
        generic_config(attr) | (static_cast<std::uint64_t>(pmu.type) << PERF_PMU_TYPE_SHIFT);
  return out;
}

std::uint64_t generic_config(const perf_event_attr& attr) {
  return hardware_or_cache(attr) ? attr.config & PERF_HW_EVENT_MASK : attr.config;
}

void bind_core_pmus(ResolvedEvent& ev, const std::vector<CorePmu>& pmus) {
  if (!heterogeneous(pmus)) return;
  if (const CorePmu* own = find_by_name(pmus, core_pmu_of_libpfm_pmu(ev.pmu))) {
    // libpfm4 puts the perf type it finds in sysfs; without it, PERF_TYPE_RAW, which the
    // kernel gives one core PMU only (cpu_core on Intel hybrid).
    if (ev.attr.type == PERF_TYPE_RAW) ev.attr.type = own->type;
    ev.core_pmus = {*own};
    return;
  }
  if (hardware_or_cache(ev.attr)) {
    const std::uint64_t extended = ev.attr.config >> PERF_PMU_TYPE_SHIFT;
    if (extended == 0) {
      ev.core_pmus = pmus;
    } else if (const CorePmu* own = find_by_type(pmus, extended)) {
      ev.core_pmus = {*own};
    }
    return;
  }
  if (const CorePmu* own = find_by_type(pmus, ev.attr.type)) ev.core_pmus = {*own};
}

void bind_group_core_pmus(ResolvedGroup& group, std::size_t first_index) {
  std::optional<CorePmu> only;
  for (const auto& e : group.events) {
    if (e.core_pmus.size() != 1) continue;
    if (!only)
      only = e.core_pmus.front();
    else if (only->name != e.core_pmus.front().name)
      refuse_mixed_group(group, only->name, e.core_pmus.front().name);
  }
  if (!only) return;
  for (std::size_t k = 0; k < group.events.size(); ++k) {
    ResolvedEvent& e = group.events[k];
    if (e.core_pmus.size() <= 1) continue;
    e.core_pmus = {*only};
    e.attr = attr_on_core_pmu(e.attr, *only);
    e.split_from = first_index + k;
  }
}

bool counts_on_cpu(const ResolvedEvent& ev, int cpu) {
  if (ev.core_pmus.empty() || cpu < 0) return true;
  return std::any_of(ev.core_pmus.begin(), ev.core_pmus.end(),
                     [&](const CorePmu& p) { return p.covers(cpu); });
}

perf_event_attr attr_on_cpu(const ResolvedEvent& ev, int cpu) {
  if (ev.core_pmus.size() <= 1 || cpu < 0) return ev.attr;
  for (const auto& p : ev.core_pmus)
    if (p.covers(cpu)) return attr_on_core_pmu(ev.attr, p);
  return ev.attr;
}

CorePmuSplit split_per_core_pmu(const std::vector<ResolvedGroup>& groups,
                                const std::vector<int>& cpus) {
  CorePmuSplit out;
  std::size_t first = 0;  // flat index of the group's first event
  for (std::size_t g = 0; g < groups.size(); first += groups[g].events.size(), ++g) {
    const ResolvedGroup& group = groups[g];
    const auto multi = std::find_if(group.events.begin(), group.events.end(),
                                    [](const ResolvedEvent& e) { return e.core_pmus.size() > 1; });
    if (multi == group.events.end()) {
      for (const auto& e : group.events)
        if (e.core_pmus.size() == 1 && !covers_any(e.core_pmus.front(), cpus))
          throw UserError(e.display_name() + " counts on " +
                              describe_core_pmu(e.core_pmus.front()) +
                              ", none of which is counted (CPU(s) " + format_cpu_list(cpus) + ")",
                          "add a CPU of " + e.core_pmus.front().name +
                              " to -C, or write the event without the PMU");
      out.groups.push_back(group);
      out.origin.push_back(g);
      continue;
    }
    const std::size_t before = out.groups.size();
    for (const auto& pmu : multi->core_pmus) {
      if (!covers_any(pmu, cpus)) continue;
      ResolvedGroup copy = group;
      for (std::size_t k = 0; k < copy.events.size(); ++k) {
        ResolvedEvent& e = copy.events[k];
        e.core_pmus = {pmu};
        e.attr = attr_on_core_pmu(e.attr, pmu);
        e.split_from = first + k;
      }
      out.groups.push_back(std::move(copy));
      out.origin.push_back(g);
    }
    if (out.groups.size() == before)
      throw UserError("no core PMU counts on CPU(s) " + format_cpu_list(cpus) + " (" +
                          multi->display_name() + ")",
                      "pmcprof doctor lists the core PMUs and their CPUs");
  }
  return out;
}

void require_every_core_pmu(const std::vector<ResolvedGroup>& groups) {
  for (const auto& g : groups) {
    for (const auto& e : g.events) {
      if (e.core_pmus.size() != 1) continue;
      const std::string hint =
          hardware_or_cache(e.attr)
              ? "write it without the PMU (" + spelled_generic(e) +
                    "): each CPU then reads its own core PMU's counter; --by cpu splits the "
                    "calls by CPU"
              : "count a model event of one kind of core without --func";
      throw UserError("--func reads a call's counters on the CPU it runs on, and " +
                          e.display_name() + " counts only on " +
                          describe_core_pmu(e.core_pmus.front()),
                      hint);
    }
  }
}

}  // namespace pmcprof

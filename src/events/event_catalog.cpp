#include "pmcprof/events/event_catalog.hpp"

#include <fnmatch.h>

// linux/perf_event.h first: libpfm4's own copy of the perf ABI then stands aside.
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/events/event_spec.hpp"
#include "pmcprof/events/sysfs_pmu.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/platform/tracefs.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr const char* kTracepointPmu = "tracepoint";  // the sysfs PMU tracepoints count on

// ---- libpfm4 ----

std::vector<CatalogAttribute> umasks_of(const pfm_event_info_t& info) {
  std::vector<CatalogAttribute> out;
  for (int a = 0; a < info.nattrs; ++a) {
    pfm_event_attr_info_t ainfo{};
    ainfo.size = sizeof(ainfo);
    if (pfm_get_event_attr_info(info.idx, a, PFM_OS_NONE, &ainfo) != PFM_SUCCESS) continue;
    if (ainfo.type != PFM_ATTR_UMASK) continue;
    out.push_back({ainfo.name ? ainfo.name : "", ainfo.desc ? ainfo.desc : ""});
  }
  return out;
}

// The section of one of the generic perf PMU's events, by the perf_event_attr type libpfm4
// encodes it to (its table mixes hardware, software and cache events).
EventSection generic_section(const std::string& event) {
  perf_event_attr attr{};
  pfm_perf_encode_arg_t arg{};
  arg.attr = &attr;
  arg.size = sizeof(arg);
  const std::string name = "perf::" + event;
  if (pfm_get_os_event_encoding(name.c_str(), PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg) ==
      PFM_SUCCESS) {
    if (attr.type == PERF_TYPE_SOFTWARE) return EventSection::software;
    if (attr.type == PERF_TYPE_HW_CACHE) return EventSection::hardware_cache;
  }
  return EventSection::hardware;
}

CatalogPmu libpfm_section(const pfm_pmu_info_t& pinfo, EventSection section) {
  CatalogPmu pmu;
  pmu.name = pinfo.name ? pinfo.name : "";
  pmu.description = pinfo.desc ? pinfo.desc : "";
  pmu.section = section;
  pmu.present = pinfo.is_present;
  pmu.needs_core_pmu = section != EventSection::software && pinfo.type != PFM_PMU_TYPE_UNCORE;
  return pmu;
}

// The PMU's events, in libpfm4's order, each in its section's CatalogPmu: one for a model
// PMU, three for the generic perf PMU.
std::vector<CatalogPmu> libpfm_sections(const pfm_pmu_info_t& pinfo) {
  const bool generic = pinfo.pmu == PFM_PMU_PERF_EVENT;
  const EventSection own =
      pinfo.pmu == PFM_PMU_PERF_EVENT_RAW ? EventSection::raw : EventSection::model;
  std::vector<CatalogPmu> sections;
  auto section_of = [&](EventSection s) -> CatalogPmu& {
    for (auto& p : sections)
      if (p.section == s) return p;
    return sections.emplace_back(libpfm_section(pinfo, s));
  };
  if (!generic) section_of(own);  // a PMU without events still shows
  for (int i = pinfo.first_event; i != -1; i = pfm_get_event_next(i)) {
    pfm_event_info_t einfo{};
    einfo.size = sizeof(einfo);
    if (pfm_get_event_info(i, PFM_OS_NONE, &einfo) != PFM_SUCCESS) continue;
    const std::string name = einfo.name ? einfo.name : "";
    // The name a user types: generic perf events lower-case and bare (like perf list),
    // model-specific ones as PMU::EVENT.
    CatalogEvent event{generic ? to_lower(name) : std::string(pinfo.name) + "::" + name,
                       einfo.desc ? einfo.desc : "", umasks_of(einfo)};
    section_of(generic ? generic_section(name) : own).events.push_back(std::move(event));
  }
  return sections;
}

// ---- tracefs ----

// Whether -e reads `name` as one event name: a tracepoint such as x:pu would be event x with
// modifiers p and u.
bool parsed_whole(const std::string& name) {
  try {
    return parse_event(name).name == name;
  } catch (const Error&) {
    return false;
  }
}

// ---- matching ----

bool contains(const std::string& hay, const std::string& lower_needle) {
  return to_lower(hay).find(lower_needle) != std::string::npos;
}

bool glob_matches(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), FNM_CASEFOLD) == 0;
}

bool is_glob(const std::string& filter) {
  return filter.find_first_of("*?[") != std::string::npos;
}

// perf list's section keywords.
constexpr std::array<std::pair<std::string_view, EventSection>, 8> kKeywords{{
    {"hw", EventSection::hardware},
    {"hardware", EventSection::hardware},
    {"sw", EventSection::software},
    {"software", EventSection::software},
    {"cache", EventSection::hardware_cache},
    {"hwcache", EventSection::hardware_cache},
    {"pmu", EventSection::kernel_pmu},
    {"tracepoint", EventSection::tracepoint},
}};

const EventSection* keyword_section(const std::string& filter) {
  for (const auto& [word, section] : kKeywords)
    if (to_lower(filter) == word) return &section;
  return nullptr;
}

// Whether `filter` (not a keyword) selects the event: see filter_catalog.
bool event_matches(const CatalogEvent& e, const std::string& filter) {
  if (is_glob(filter)) {
    if (glob_matches(filter, e.name)) return true;
    return std::any_of(e.umasks.begin(), e.umasks.end(), [&](const CatalogAttribute& u) {
      return glob_matches(filter, e.name + ":" + u.name);
    });
  }
  const std::string needle = to_lower(filter);
  if (contains(e.name, needle) || contains(e.description, needle)) return true;
  return std::any_of(e.umasks.begin(), e.umasks.end(), [&](const CatalogAttribute& u) {
    return contains(e.name + ":" + u.name, needle);
  });
}

bool pmu_name_matches(const CatalogPmu& pmu, const std::string& filter) {
  return pmu.section != EventSection::tracepoint && !is_glob(filter) &&
         contains(pmu.name, to_lower(filter));
}

// ---- hints ----

// The words a did-you-mean may offer: every name, its last part (the tracepoint without its
// category, the model event without its PMU, the sysfs event), the PMUs, the tracepoint
// categories as globs ("sched:*"), the section keywords.
std::vector<std::string> suggestion_words(const std::vector<CatalogPmu>& pmus) {
  std::vector<std::string> words;
  for (const auto& [word, section] : kKeywords) words.emplace_back(word);
  for (const auto& pmu : pmus) {
    if (pmu.section != EventSection::tracepoint) words.push_back(pmu.name);
    for (const auto& e : pmu.events) {
      words.push_back(e.name);
      if (pmu.section == EventSection::tracepoint) {
        const auto colon = e.name.find(':');
        words.push_back(e.name.substr(colon + 1));
        words.push_back(e.name.substr(0, colon) + ":*");
      } else if (auto sep = e.name.find("::"); sep != std::string::npos) {
        words.push_back(e.name.substr(sep + 2));
      } else if (pmu.section == EventSection::kernel_pmu) {
        words.push_back(e.name.substr(pmu.name.size() + 1, e.name.size() - pmu.name.size() - 2));
      }
    }
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  return words;
}

const CatalogPmu* unreadable_tracepoint_section(const std::vector<CatalogPmu>& pmus) {
  for (const auto& pmu : pmus)
    if (pmu.section == EventSection::tracepoint && !pmu.countable()) return &pmu;
  return nullptr;
}

}  // namespace

std::string_view section_title(EventSection section) {
  switch (section) {
    case EventSection::hardware:
      return "Hardware event";
    case EventSection::software:
      return "Software event";
    case EventSection::hardware_cache:
      return "Hardware cache event";
    case EventSection::model:
      return "Model event";
    case EventSection::raw:
      return "Raw hardware event";
    case EventSection::kernel_pmu:
      return "Kernel PMU event";
    case EventSection::tracepoint:
      return "Tracepoint event";
  }
  return "event";
}

std::vector<CatalogPmu> event_catalog(const PfmLibrary& /*pfm: proves libpfm4 is up*/,
                                      bool present_only) {
  std::vector<CatalogPmu> pmus;
  for (int p = 0; p < PFM_PMU_MAX; ++p) {
    pfm_pmu_info_t pinfo{};
    pinfo.size = sizeof(pinfo);
    if (pfm_get_pmu_info(static_cast<pfm_pmu_t>(p), &pinfo) != PFM_SUCCESS) continue;
    if (present_only && !pinfo.is_present) continue;
    for (auto& section : libpfm_sections(pinfo)) pmus.push_back(std::move(section));
  }
  // perf list's order; within a section, libpfm4's.
  std::stable_sort(pmus.begin(), pmus.end(),
                   [](const CatalogPmu& a, const CatalogPmu& b) { return a.section < b.section; });
  return pmus;
}

std::vector<CatalogPmu> kernel_pmu_catalog(const std::string& sysfs_root,
                                           const std::vector<CorePmu>& core_pmus) {
  std::vector<CatalogPmu> out;
  for (const auto& name : sysfs_pmus(sysfs_root)) {
    CatalogPmu pmu;
    pmu.name = name;
    pmu.description = sysfs_root + "/" + name;
    pmu.section = EventSection::kernel_pmu;
    pmu.present = true;
    pmu.needs_core_pmu = std::any_of(core_pmus.begin(), core_pmus.end(),
                                     [&](const CorePmu& c) { return c.name == name; });
    for (const auto& event : sysfs_pmu_events(name, sysfs_root)) {
      const std::string text = name + "/" + event + "/";
      try {
        // What stat does with PMU/EVENT/: an event it cannot encode is not listed.
        const SysfsEncoding enc =
            encode_sysfs_event(name, {{event, std::nullopt}}, text, sysfs_root);
        auto terms = read_file(sysfs_root + "/" + name + "/events/" + event);
        std::string description = terms ? std::string(trim(*terms)) : std::string();
        if (!enc.unit.empty()) description += " (" + enc.unit + ")";
        pmu.events.push_back({text, std::move(description), {}});
      } catch (const Error&) {
        continue;
      }
    }
    if (!pmu.events.empty()) out.push_back(std::move(pmu));
  }
  return out;
}

CatalogPmu tracepoint_catalog(const std::string& tracefs) {
  CatalogPmu pmu;
  pmu.name = kTracepointPmu;
  pmu.description = tracefs + "/events";
  pmu.section = EventSection::tracepoint;
  pmu.present = true;
  for (const auto& category : tracepoint_categories(tracefs))
    for (const auto& name : tracepoint_names(tracefs, category)) {
      // What stat resolves: a name -e keeps whole (not NAME:MODIFIERS) in tracepoint syntax,
      // and an id to put in perf_event_attr.config.
      std::string full = category + ":" + name;
      if (parsed_whole(full) && looks_like_tracepoint(full) &&
          read_tracepoint_id(tracefs, category, name))
        pmu.events.push_back({std::move(full), {}, {}});
    }
  return pmu;
}

CatalogPmu unreadable_tracepoints(std::string why) {
  CatalogPmu pmu;
  pmu.name = kTracepointPmu;
  pmu.description = "tracefs";
  pmu.section = EventSection::tracepoint;
  pmu.present = true;
  pmu.not_countable = std::move(why);
  return pmu;
}

void mark_countable(std::vector<CatalogPmu>& pmus, const CountingChecks& checks) {
  for (auto& pmu : pmus) {
    if (!pmu.present || !pmu.not_countable.empty()) continue;  // already said why
    if (pmu.needs_core_pmu)
      pmu.not_countable = checks.hardware_pmu;
    else if (pmu.section == EventSection::software)
      pmu.not_countable = checks.software_events;
  }
}

bool needs_hardware_check(const std::vector<CatalogPmu>& pmus) {
  return std::any_of(pmus.begin(), pmus.end(),
                     [](const CatalogPmu& p) { return p.present && p.needs_core_pmu; });
}

bool needs_software_check(const std::vector<CatalogPmu>& pmus) {
  return std::any_of(pmus.begin(), pmus.end(), [](const CatalogPmu& p) {
    return p.present && p.section == EventSection::software;
  });
}

std::vector<CatalogPmu> filter_catalog(std::vector<CatalogPmu> pmus, const std::string& filter) {
  if (filter.empty()) return pmus;
  std::vector<CatalogPmu> out;
  if (const EventSection* section = keyword_section(filter)) {
    for (auto& pmu : pmus)
      if (pmu.section == *section) out.push_back(std::move(pmu));
    return out;
  }
  for (auto& pmu : pmus) {
    const bool pmu_matches = pmu_name_matches(pmu, filter);
    std::vector<CatalogEvent> kept;
    for (auto& e : pmu.events)
      if (pmu_matches || event_matches(e, filter)) kept.push_back(std::move(e));
    if (kept.empty() && !pmu_matches) continue;
    pmu.events = std::move(kept);
    out.push_back(std::move(pmu));
  }
  return out;
}

std::string no_match_hint(const std::string& filter, const std::vector<CatalogPmu>& listed,
                          bool matches_absent_pmus) {
  if (matches_absent_pmus)
    return "PMUs not present on this machine have it (listed, not countable): pmcprof list --all " +
           quote(filter);
  const CatalogPmu* tracepoints = unreadable_tracepoint_section(listed);
  const bool names_tracepoint =
      filter.find(':') != std::string::npos && filter.find("::") == std::string::npos;
  if (tracepoints && names_tracepoint)
    return "tracepoints cannot be listed here: " + tracepoints->not_countable;
  auto words = suggestion_words(listed);
  // A keyword whose section is empty here matches nothing, and is no suggestion for itself.
  std::erase_if(words, [&](const std::string& w) { return to_lower(w) == to_lower(filter); });
  if (auto close = closest_matches(filter, words); !close.empty())
    return did_you_mean(close) + "('pmcprof list' shows all)";
  return "a filter is part of a name or description, a glob ('sched:*') or a section (hw, sw, "
         "cache, pmu, tracepoint); 'pmcprof list' shows all";
}

}  // namespace pmcprof

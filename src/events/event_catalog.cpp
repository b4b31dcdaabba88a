#include "pmcprof/events/event_catalog.hpp"

// linux/perf_event.h first: libpfm4's own copy of the perf ABI then stands aside.
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>

#include <cstring>

#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

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

}  // namespace

std::vector<CatalogPmu> event_catalog(const PfmLibrary& /*pfm: proves libpfm4 is up*/,
                                      bool present_only) {
  std::vector<CatalogPmu> pmus;
  for (int p = 0; p < PFM_PMU_MAX; ++p) {
    pfm_pmu_info_t pinfo{};
    pinfo.size = sizeof(pinfo);
    if (pfm_get_pmu_info(static_cast<pfm_pmu_t>(p), &pinfo) != PFM_SUCCESS) continue;
    if (present_only && !pinfo.is_present) continue;
    CatalogPmu pmu;
    pmu.name = pinfo.name ? pinfo.name : "";
    pmu.description = pinfo.desc ? pinfo.desc : "";
    pmu.present = pinfo.is_present;
    for (int i = pinfo.first_event; i != -1; i = pfm_get_event_next(i)) {
      pfm_event_info_t einfo{};
      einfo.size = sizeof(einfo);
      if (pfm_get_event_info(i, PFM_OS_NONE, &einfo) != PFM_SUCCESS) continue;
      pmu.events.push_back(
          {einfo.name ? einfo.name : "", einfo.desc ? einfo.desc : "", umasks_of(einfo)});
    }
    pmus.push_back(std::move(pmu));
  }
  return pmus;
}

std::vector<CatalogPmu> filter_catalog(std::vector<CatalogPmu> pmus, const std::string& filter) {
  if (filter.empty()) return pmus;
  const std::string needle = to_lower(filter);
  auto contains = [&](const std::string& hay) {
    return to_lower(hay).find(needle) != std::string::npos;
  };
  std::vector<CatalogPmu> out;
  for (auto& pmu : pmus) {
    const bool pmu_matches = contains(pmu.name);
    std::vector<CatalogEvent> kept;
    for (auto& e : pmu.events) {
      bool umask_matches = false;
      for (const auto& u : e.umasks) umask_matches |= contains(e.name + ":" + u.name);
      if (pmu_matches || umask_matches || contains(pmu.name + "::" + e.name) ||
          contains(e.description))
        kept.push_back(std::move(e));
    }
    if (kept.empty() && !pmu_matches) continue;
    pmu.events = std::move(kept);
    out.push_back(std::move(pmu));
  }
  return out;
}

}  // namespace pmcprof

#pragma once

#include <string>
#include <vector>

namespace pmcprof {

class PfmLibrary;

struct CatalogAttribute {
  std::string name;
  std::string description;
};

struct CatalogEvent {
  std::string name;
  std::string description;
  std::vector<CatalogAttribute> umasks;  // unit masks (PMU::EVENT:UMASK)
};

struct CatalogPmu {
  std::string name;  // libpfm4 name ("perf", "skl", "amd64_fam19h_zen3", ...)
  std::string description;
  bool present = false;  // detected on this machine (or forced with LIBPFM_FORCE_PMU)
  std::vector<CatalogEvent> events;
};

// What libpfm4 knows. present_only limits the list to PMUs detected on this machine.
std::vector<CatalogPmu> event_catalog(const PfmLibrary& pfm, bool present_only);

// Keeps the events whose PMU::NAME or description contains `filter` (case-insensitive);
// PMUs left without events are dropped unless their own name matches.
std::vector<CatalogPmu> filter_catalog(std::vector<CatalogPmu> pmus, const std::string& filter);

}  // namespace pmcprof

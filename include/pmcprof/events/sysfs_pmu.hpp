#pragma once

#include <linux/perf_event.h>

#include <string>
#include <vector>

#include "pmcprof/events/event_spec.hpp"

namespace pmcprof {

// The kernel's PMUs as sysfs describes them (/sys/bus/event_source/devices/PMU): `type` (the
// perf_event_attr type), `format/TERM` (which config bits a term sets, e.g. "config:0-7"),
// `events/NAME` (named events as terms, e.g. "event=0x3c,umask=0x00", with optional
// NAME.scale and NAME.unit). This is what perf's pmu/term=value,.../ syntax encodes with.
inline constexpr const char* kSysfsPmuRoot = "/sys/bus/event_source/devices";

// What an event written pmu/terms/ encodes to.
struct SysfsEncoding {
  perf_event_attr attr{};  // type and config, config1, config2
  std::string name;        // from a name=... term, else empty
  double scale = 1;        // events/NAME.scale
  std::string unit;        // events/NAME.unit ("Joules", ...)
};

// Names of the PMUs below `root`, sorted.
std::vector<std::string> sysfs_pmus(const std::string& root = kSysfsPmuRoot);
// Whether PMU `name` exists below `root`.
bool sysfs_pmu_exists(const std::string& name, const std::string& root = kSysfsPmuRoot);
// The named events of a PMU (its events/ directory), sorted, without .scale/.unit files.
std::vector<std::string> sysfs_pmu_events(const std::string& pmu,
                                          const std::string& root = kSysfsPmuRoot);

// Encodes PMU/terms/ (`text` is what the user wrote, for messages). Terms: a named event of
// the PMU ("tsc"), a format term ("event=0x3c", "umask=0": bits from format/), config=,
// config1=, config2= (raw), name= (the name shown). Throws UserError naming the PMU or term
// that does not exist, with what does as the hint.
SysfsEncoding encode_sysfs_event(const std::string& pmu, const std::vector<EventTerm>& terms,
                                 const std::string& text, const std::string& root = kSysfsPmuRoot);

// Parses a term value: decimal or 0x hexadecimal. Throws UserError otherwise.
std::uint64_t parse_term_value(const std::string& value, const std::string& text);

}  // namespace pmcprof

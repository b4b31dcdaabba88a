#pragma once

#include <iosfwd>
#include <string>

#include "pmcprof/platform/capabilities.hpp"

namespace pmcprof {

// The aligned text table: CAPABILITY  AVAILABLE  WHY.
void write_capability_table(const CapabilityReport& report, std::ostream& out);

// {"schema":"pmcprof/1","type":"doctor","capabilities":[{"name":..,"available":..,"detail":..,
// <facts>...}, ...]}, one line, no trailing newline.
std::string capability_report_json(const CapabilityReport& report);

}  // namespace pmcprof

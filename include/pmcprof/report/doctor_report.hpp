#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "pmcprof/platform/capabilities.hpp"

namespace pmcprof {

// The aligned text table: CAPABILITY  AVAILABLE  WHY.
void write_capability_table(const CapabilityReport& report, std::ostream& out);

// What this machine can do, judged from the capability checks: one verdict per job a user comes
// with (count hardware events, --func on kernel functions, ...), and a summary of what to use.
struct JobVerdict {
  std::string job;    // stable snake_case id, the --json "job": "count_hardware", "func_kernel"
  std::string title;  // "count hardware events", "--func on kernel functions"
  bool available = false;
  std::string detail;  // available: what to write; not: why, from the failed checks' briefs
};
struct MachineVerdict {
  std::vector<JobVerdict> jobs;
  std::string summary;  // "no PMU: count task-clock, ...; --func works for ... here, not ..."
};
MachineVerdict judge_machine(const CapabilityReport& report);

// The verdict after the table: VERDICT  HERE  WHAT TO USE / WHY NOT, then the summary.
void write_verdict(const MachineVerdict& verdict, std::ostream& out);

// {"schema":"pmcprof/1","type":"doctor","capabilities":[{"name":..,"available":..,"detail":..,
// <facts>...}, ...],"verdict":{"jobs":[{"job":..,"title":..,"available":..,"detail":..}, ...],
// "summary":..}}, one line, no trailing newline.
std::string capability_report_json(const CapabilityReport& report);

}  // namespace pmcprof

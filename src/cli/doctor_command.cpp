#include <ostream>

#include "pmcprof/cli/commands.hpp"
#include "pmcprof/report/doctor_report.hpp"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

// Missing capabilities are findings, not failures: doctor exits 0 whatever it finds, so that
// scripts can always parse its output.
int run_doctor_command(const DoctorOptions& opts, std::ostream& out) {
  const CapabilityReport report = probe_all();
  if (opts.json) {
    out << capability_report_json(report) << '\n';
  } else {
    write_capability_table(report, out);
    write_verdict(judge_machine(report), out);
  }
  return kExitOk;
}

}  // namespace pmcprof

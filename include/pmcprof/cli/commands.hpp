#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace pmcprof {

// Entry point of the CLI: parses argv, runs a subcommand, returns the process exit code.
// UserErrors are caught here and printed as "pmcprof: <what>" (+ "HINT: ...").
int run_cli(int argc, char** argv);

struct DoctorOptions {
  bool json = false;
};
// `pmcprof doctor`: probes the running kernel and prints each capability.
int run_doctor_command(const DoctorOptions& opts, std::ostream& out);

struct ListOptions {
  std::string filter;
  bool all_pmus = false;  // include PMUs libpfm4 supports but this machine lacks
  bool json = false;
  bool names_only = false;     // one name a line, for shell completion
  bool metrics = false;        // --metrics: the -M metrics instead of events
  bool metric_groups = false;  // --metricgroups: the -M metric groups
};
// `pmcprof list`: the events stat takes (libpfm4's, the kernel PMUs' named events,
// tracepoints), by section, each marked with whether this machine counts it.
int run_list_command(const ListOptions& opts, std::ostream& out);

struct ReportOptions {
  std::string input;  // FILE (positional or -i), '-' for standard input
  std::optional<std::string> csv_separator;
  bool json = false;
  bool prometheus = false;
  bool no_big_num = false;
  bool hist = false;                       // --hist[=QUANTITIES], as stat's
  std::string hist_quantities;             // its value: "" for the default
  std::optional<std::string> hist_linear;  // --hist-linear=MIN,MAX,STEP
};
// `pmcprof report FILE`: a saved run (stat -j) rendered again, as perf report -i reads a
// perf.data: text (default), CSV, JSON or the /metrics text of serve.
int run_report_command(const ReportOptions& opts, std::ostream& out);

struct DiffOptions {
  std::string baseline, fresh;  // BASELINE NEW (one of them may be '-')
  std::optional<std::string> csv_separator;
  bool json = false;
  std::string threshold_pct;  // --threshold PCT, as typed ("" for the default)
  std::string alpha;          // --alpha P, as typed ("" for the default)
};
// `pmcprof diff BASELINE NEW`: two saved runs compared, as perf diff compares two perf.data;
// exit 0 whatever changed, non-zero only for bad input.
int run_diff_command(const DiffOptions& opts, std::ostream& out);

}  // namespace pmcprof

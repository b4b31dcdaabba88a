#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/report/report.hpp"

namespace pmcprof {

// What a counting run counts and for how long.
struct CountingPlan {
  std::vector<ResolvedGroup> groups;
  bool system_wide = false;          // -a or -C: one counter per CPU
  std::vector<int> cpus;             // the CPUs when system_wide
  bool cpus_explicit = false;        // -C was given
  std::optional<pid_t> pid;          // -p: every thread of the process
  std::optional<pid_t> tid;          // -t: one thread
  std::vector<std::string> command;  // -- CMD ARGS
  bool per_cpu = false;              // -A
  std::optional<std::uint64_t> interval_ms;
  std::optional<std::uint64_t> timeout_ms;
};

struct CountingOutcome {
  CountingReport report;
  int exit_code = 0;  // the workload's status, 128+signal, or 0
};

// Opens the counters, runs the workload (if any) and the run loop, and returns the final
// report. Interval reports (-I) go to `intervals` as they are read.
CountingOutcome run_counting(const CountingPlan& plan, ReportRenderer* intervals);

// perf's wording of what was counted: "system wide", "CPU(s) 0-1", "'sleep 1'", ...
std::string describe_target(const CountingPlan& plan);

}  // namespace pmcprof

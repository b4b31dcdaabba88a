#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/counters/cgroups.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/report/func_report.hpp"
#include "pmcprof/run/run_loop.hpp"
#include "pmcprof/stream/func_stats.hpp"

namespace pmcprof {

// Where per-call results are summed: from the stream in user space, in kernel maps, or both
// (both: one run, two reports, to check that they agree).
enum class AggregateChoice { automatic, stream, kernel, both };
AggregateChoice parse_aggregate_choice(const std::string& text);

struct FunctionPlan {
  std::vector<ResolvedGroup> groups;
  std::vector<FuncTarget> targets;
  bool system_wide = false;          // -a: every process
  std::optional<pid_t> pid;          // -p: this process (and its children)
  std::vector<std::string> command;  // -- CMD: only CMD and its descendants (without -a)
  std::optional<std::uint64_t> interval_ms;
  std::optional<std::uint64_t> timeout_ms;
  BackendRequest backend = BackendRequest::automatic;
  AggregateChoice aggregate = AggregateChoice::automatic;
  Breakdown by = Breakdown::none;
  bool sched_hook = true;
  std::size_t buffer_pages = 256;
  bool verbose = false;
  bool quiet = false;
  std::vector<Cgroup> filter_cgroups;  // -G: only calls from tasks in these (or below)
  // For `serve`, as in CountingPlan.
  std::vector<RunLoopOptions::Reader> readers;
  std::function<void(std::function<FunctionReport()>)> on_live;
};

struct FunctionOutcome {
  FunctionReport report;
  std::optional<FunctionReport> kernel_report;  // --aggregate both: the kernel's view
  int exit_code = 0;
};

// The automatic aggregation: stream when a --by breakdown needs per-call details, else kernel.
AggregateChoice resolve_aggregate(AggregateChoice requested, Breakdown by);

FunctionOutcome run_function_mode(const FunctionPlan& plan, FuncReportRenderer* intervals);

}  // namespace pmcprof

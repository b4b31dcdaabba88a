#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/counters/cgroups.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/report/metric_values.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/report/report.hpp"
#include "pmcprof/run/run_loop.hpp"
#include "pmcprof/run/session.hpp"

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
  AggrMode aggr = AggrMode::global;  // -A, --per-thread, --per-core, ...
  std::optional<std::uint64_t> interval_ms;
  std::optional<std::uint64_t> interval_count;  // --interval-count: stop after this many
  std::optional<std::uint64_t> timeout_ms;
  std::vector<Cgroup> cgroups;  // -G / --for-each-cgroup (with -a)
  CgroupBackend cgroup_backend = CgroupBackend::automatic;
  std::vector<MetricRequest> metrics;  // -M: computed on every report from their groups' rows
  bool verbose = false;
  bool quiet = false;
  // For `serve`: more fds for the run loop, and the sink Run::drive hands the session's live()
  // while counting (see LiveSink).
  std::vector<RunLoopOptions::Reader> readers;
  LiveSink on_live;
};

struct CountingOutcome {
  CountingReport report;
  int exit_code = 0;  // the workload's status, 128+signal, or 0
};

// One counting run: the Run (workload, signals, loop) driving the counting session the plan
// asks for (see counting_session.hpp). Interval reports (-I) go to `intervals` as they are read.
CountingOutcome run_counting(const CountingPlan& plan, ReportRenderer* intervals);

// perf's wording of what was counted: "system wide", "CPU(s) 0-1", "sleep 1", "process id 42"
// (-p, also with a command, which then only bounds the time), ...
std::string describe_target(const CountingPlan& plan);

}  // namespace pmcprof

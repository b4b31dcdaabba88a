#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/report/render.hpp"

namespace pmcprof {

// `pmcprof stat` flags as parsed, before validation against the machine.
struct StatOptions {
  std::vector<std::string> events;  // -e, repeatable; joined with ','
  bool events_given = false;
  bool all_cpus = false;                     // -a
  std::optional<std::string> cpu_list;       // -C
  std::optional<long long> pid;              // -p
  std::optional<long long> tid;              // -t
  bool per_cpu = false;                      // -A
  bool per_thread = false;                   // --per-thread
  bool per_core = false;                     // --per-core
  bool per_die = false;                      // --per-die
  bool per_socket = false;                   // --per-socket
  bool per_node = false;                     // --per-node
  bool no_merge = false;                     // --no-merge (pmcprof never merges)
  bool big_num = false;                      // -B (the default anyway)
  bool no_big_num = false;                   // --no-big-num
  std::vector<std::string> metrics;          // -M, comma lists, repeatable
  bool metric_only = false;                  // --metric-only
  bool metric_no_group = false;              // --metric-no-group
  bool metric_no_merge = false;              // --metric-no-merge (pmcprof never merges)
  int detailed = 0;                          // -d, -dd, -ddd
  std::optional<long long> interval_ms;      // -I
  std::optional<long long> interval_count;   // --interval-count
  bool summary = false;                      // --summary
  bool no_csv_summary = false;               // --no-csv-summary
  std::optional<long long> timeout_ms;       // --timeout
  long long repeat = 1;                      // -r
  std::optional<std::string> csv_separator;  // -x
  bool json = false;                         // -j
  std::optional<std::string> output;         // -o
  std::vector<std::string> command;          // -- CMD ARGS
  bool command_before_dashes = false;        // CMD came without a "--" before it
  bool subcommand_word = false;              // `stat record|report` (perf's, not pmcprof's)
  // Function mode (--func): per-call deltas through BPF.
  std::vector<std::string> funcs;     // --func, repeatable
  std::vector<std::string> regions;   // --region [NAME=]START,END, repeatable
  bool python = false;                // --python: Python functions (a region, keyed)
  std::optional<long long> max_keys;  // --max-keys
  std::optional<long long> top;       // --top
  std::string backend = "auto";       // --backend auto|fentry|kprobe
  std::string aggregate = "auto";     // --aggregate auto|kernel|stream|both
  std::optional<std::string> by;      // --by pid|comm|cpu|cgroup|argN[:str][,argM[:str]]
  bool no_sched_hook = false;         // --no-sched-hook
  bool syscall_tracepoints = false;   // --syscall-tracepoints
  long long buffer_pages = 256;       // --buffer-pages
  std::string thread_state = "auto";  // --thread-state
  bool no_compensate = false;         // --no-compensate
  bool verbose = false;               // -v
  bool quiet = false;                 // -q: nothing but the report (and errors)
  // Per-cgroup counting / filtering.
  std::vector<std::string> cgroups;          // -G, comma lists, repeatable
  std::vector<std::string> for_each_cgroup;  // --for-each-cgroup DIR_OR_REGEX
  std::string cgroup_backend = "auto";       // --cgroup-backend auto|fd|bpf
  // Function mode's histograms.
  bool hist = false;                       // --hist[=QUANTITIES]
  std::string hist_quantities;             // its value: "" for the default
  std::optional<std::string> hist_linear;  // --hist-linear=MIN,MAX,STEP

  // Function mode: any --func, --region or --python.
  bool function_mode() const { return !funcs.empty() || !regions.empty() || python; }
};

// Checks flag combinations that are wrong whatever the machine; throws UserError.
void validate_stat_options(const StatOptions& opts);

struct CountingPlan;
struct FunctionPlan;
struct ResolvedGroup;
struct MetricRequest;
class EventResolver;
// Turns checked flags into what a run needs (resolving CPUs, cgroups, targets). Counting mode
// splits events of several core PMUs into one per PMU of the CPUs counted, and each -M
// request into one per group its group became. Function mode binds its metrics (-M, and
// those derived automatically) to the events, adding what -M needs, and refuses events of
// one core PMU of several.
CountingPlan make_counting_plan(const StatOptions& opts, const std::vector<ResolvedGroup>& groups,
                                const std::vector<MetricRequest>& metrics);
FunctionPlan make_function_plan(const StatOptions& opts, std::vector<ResolvedGroup> groups,
                                const EventResolver& resolver);

// `pmcprof stat`: returns the exit code.
int run_stat_command(const StatOptions& given);

// `pmcprof serve`: stat's options plus where to serve /metrics.
struct ServeOptions {
  StatOptions stat;
  std::string listen = "127.0.0.1:9464";
  std::string web_config_file;  // --web.config.file: TLS and basic auth ("" = plain HTTP)
};
int run_serve_command(const ServeOptions& opts);

}  // namespace pmcprof

#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/counters/cgroups.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/events/metric_binding.hpp"
#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/report/func_report.hpp"
#include "pmcprof/run/session.hpp"
#include "pmcprof/stream/func_stats.hpp"

namespace pmcprof {

// Where per-call results are summed: from the stream in user space, in kernel maps, or both
// (both: one run, two views of the same calls, to check that they agree).
enum class AggregateChoice { automatic, stream, kernel, both };

struct FunctionPlan {
  std::vector<ResolvedGroup> groups;
  std::vector<FuncTarget> targets;
  std::vector<RegionSpec> regions;   // --region: measured like calls, after the --func
  bool system_wide = false;          // -a: every process
  std::optional<pid_t> pid;          // -p: this process (and its children)
  std::vector<std::string> command;  // -- CMD: only CMD and its descendants (without -a)
  std::optional<std::uint64_t> interval_ms;
  std::optional<std::uint64_t> timeout_ms;
  BackendRequest backend = BackendRequest::automatic;
  AggregateChoice aggregate = AggregateChoice::automatic;
  Breakdown by = Breakdown::none;
  std::vector<KeyArg> key_args;    // --by argN (by == args)
  std::size_t max_keys = 64;       // --max-keys: keys per function, the rest folded as "other"
  std::optional<std::size_t> top;  // --top N: keys shown per function, the rest in one row
  bool sched_hook = true;
  // Syscalls through their own perf tracepoints, not by number at the raw ones
  // (--syscall-tracepoints).
  bool syscall_tracepoints = false;
  std::size_t buffer_pages = 256;
  ThreadStore thread_store = ThreadStore::automatic;
  bool compensate = true;  // subtract the calibrated probe bias (--no-compensate)
  bool verbose = false;
  bool quiet = false;
  std::vector<Cgroup> filter_cgroups;  // -G: only calls from tasks in these (or below)
  // Metrics of each function's calls (-M, and those derived automatically), bound to `groups`.
  std::vector<MetricBinding> metrics;
  // For `serve`, as in CountingPlan.
  std::vector<RunLoopOptions::Reader> readers;
  LiveSink on_live;
};

struct FunctionOutcome {
  FunctionReport report;  // with kernel_view set for --aggregate both
  int exit_code = 0;
};

// How a run's metrics are computed: what the report needs to know of each (FuncMetricInfo,
// its inputs as indexes of the counter events), and the operands of those kept per call (in
// BPF event indexes), in slot order. A metric is kept per call when its formula is a ratio
// of two of a call's quantities, both events the kernel opened (or the wall time), up to
// kMaxCallMetrics of them.
struct FunctionMetricPlan {
  std::vector<FuncMetricInfo> infos;
  std::vector<CallMetricOperands> per_call;
};
FunctionMetricPlan plan_function_metrics(const std::vector<MetricBinding>& bindings,
                                         const CounterSet& counters);

// The automatic aggregation: stream when a --by breakdown needs per-call details, else kernel.
AggregateChoice resolve_aggregate(AggregateChoice requested, Breakdown by);

// Function mode as a Session: the func BPF object, its probes, the per-call stream and the
// views of the calls (kernel sums, stream sums, or both).
class FunctionSession : public Session {
 public:
  FunctionSession(const FunctionPlan& plan, Workload* workload, FuncReportRenderer* intervals);
  ~FunctionSession() override;

  void attach() override;
  void start() override;
  std::vector<RunLoopOptions::Reader> readers() override;
  void interval() override;
  LiveReport live() override;
  void stop() override;
  void finish(const RunEnd& end) override;

  FunctionOutcome& outcome() { return outcome_; }

 private:
  struct State;
  std::unique_ptr<State> st_;
  FunctionOutcome outcome_;
};

// Runs function mode from start to end (signals, workload, loop) and returns its reports.
FunctionOutcome run_function_mode(const FunctionPlan& plan, FuncReportRenderer* intervals);

}  // namespace pmcprof

#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/report/render.hpp"
#include "pmcprof/report/report.hpp"
#include "pmcprof/stream/func_stats.hpp"

namespace pmcprof {

// Per-call distribution of one quantity (an event's delta, wall time, on-CPU time).
struct Distribution {
  CounterStatus status = CounterStatus::not_counted;
  double total = 0;
  double mean = 0;  // total / counted calls
  double p50 = 0, p90 = 0, p99 = 0;
  // A function that was never called: the total is a true 0, per-call figures do not exist.
  bool no_calls = false;
};

struct FuncEventRow {
  std::string event;
  EventKind kind;
  std::string unit;  // "ns" for clocks, "" for counts
  Distribution per_call;
  Histogram histogram;  // per-call values (Prometheus histograms)
};

// One function (or one function and one --by value) in a function-mode report.
struct FuncRow {
  std::string function;  // as given to --func
  std::string backend;   // fentry, kprobe, uprobe, tracepoint
  std::string by_value;  // the --by key ("" without --by); the cgroup's path for --by cgroup
  std::optional<std::uint64_t> cgroup_id;  // --by cgroup
  std::uint64_t calls = 0;
  std::uint64_t not_counted = 0;
  std::uint64_t lost = 0;  // records of this function the stream dropped
  std::uint64_t slept = 0;
  std::uint64_t migrated = 0;
  std::uint64_t multiplexed = 0;
  // Calls seen but not measured: nested deeper than the BPF stack, or returns without a
  // matching entry (the probe was attached mid-call, or a return was missed).
  std::uint64_t depth_overflow = 0;
  std::uint64_t unmatched_exits = 0;
  Distribution wall;   // ns
  Distribution oncpu;  // ns
  Histogram wall_histogram;
  Histogram oncpu_histogram;
  std::vector<FuncEventRow> events;
};

struct FunctionReport {
  std::string target;       // "system wide", "sleep 1", "process id 42"
  std::string aggregation;  // "stream", "kernel"
  std::string by;           // "", "pid", "comm", "cpu", "cgroup"
  std::uint64_t elapsed_ns = 0;
  std::optional<double> interval_s;
  std::uint64_t timestamp_unix_ns = 0;
  bool interrupted = false;
  std::optional<int> exit_status;
  std::uint64_t lost = 0;  // PERF_RECORD_LOST total
  bool partial = false;    // any loss: totals are lower bounds
  std::vector<FuncRow> functions;
};

// Describes an event for make_func_row: its name and whether BPF read it (bpf_index).
struct FuncEventInfo {
  std::string event;
  EventKind kind;
  std::string unit;
  std::optional<std::size_t> bpf_index;  // nullopt: the kernel refused it (not supported)
};

// The distribution of `total` over `counted` calls out of `calls`; status ok with no_calls
// when nothing was called, not-counted when calls happened but none had running counters.
Distribution make_distribution(std::uint64_t total, std::uint64_t counted, std::uint64_t calls,
                               const Histogram& h);

FuncRow make_func_row(const std::string& function, const std::string& backend,
                      const std::string& by_value, const FuncStats& stats, std::uint64_t lost,
                      const std::vector<FuncEventInfo>& events);

// IPC and the like for a function row, from its event totals.
std::optional<Metric> func_metric(const FuncRow& row);

// Renderers of the function-mode model (text like perf stat, -x CSV, -j JSON / NDJSON).
class FuncReportRenderer {
 public:
  virtual ~FuncReportRenderer() = default;
  virtual void interval(const FunctionReport& report) = 0;
  virtual void final(const FunctionReport& report) = 0;
};

std::unique_ptr<FuncReportRenderer> make_func_renderer(const RenderOptions& opts,
                                                       std::ostream& out);
std::string render_func_text(const FunctionReport& report);
std::string render_func_csv(const FunctionReport& report, const std::string& sep = ",");
std::string render_func_json(const FunctionReport& report);

}  // namespace pmcprof

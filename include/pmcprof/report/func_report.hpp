#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/events/metric_table.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/report/report.hpp"
#include "pmcprof/stream/func_stats.hpp"

namespace pmcprof {

// Per-call distribution of one quantity (an event's delta, wall time, on-CPU time).
// Under multiplexing an event measures only the calls it ran through (exactly); its total is
// then scaled to all calls, as perf scales a count by enabled/running, and marked estimated.
struct Distribution {
  CounterStatus status = CounterStatus::not_counted;
  double total = 0;
  double mean = 0;                   // total / counted calls
  double p50 = 0, p90 = 0, p99 = 0;  // over the measured calls, within 1%, inside [min, max]
  double min = 0, max = 0;           // exact, over the measured calls
  std::uint64_t measured = 0;        // calls this quantity measured exactly
  double measured_sum = 0;           // their sum (the histogram's calls)
  bool estimated = false;            // total scaled from measured (or partly run) calls
  bool percentiles = true;           // false: no call was measured exactly (only in part)
  // A function that was never called: the total is a true 0, per-call figures do not exist.
  bool no_calls = false;
  // With the probe bias taken off: the spread of the calibrated bias (set by the session from
  // the calibration), and the measured calls whose value is below it. A percentile or min
  // below the floor is not a measurement of the function: renderers flag it.
  std::optional<double> noise_floor;
  std::uint64_t under_floor = 0;
  bool below_floor(double v) const { return noise_floor && v < *noise_floor; }
};

struct FuncEventRow {
  std::string event;
  EventKind kind;
  std::string unit;  // "ns" for clocks, "" for counts
  Distribution per_call;
  Histogram histogram;  // per-call values (Prometheus histograms)
};

// One argument of a --by argN key, as read at the start.
struct KeyValue {
  // unreadable: BPF could not read the argument's memory (a page the process had not touched,
  // which BPF cannot fault in; a bad pointer): no value, only the address that failed.
  enum class Type { string, signed_int, unsigned_int, unreadable };
  Type type = Type::string;
  std::string text;        // string
  std::uint64_t bits = 0;  // integers (a signed one as its two's complement bits); unreadable:
                           // the address
  // "text" in double quotes (escaped), the number, or <unreadable at 0x...>
  std::string display() const;
};

// A metric of a function's calls (IPC, a miss share, CPUs utilized, ...): the value of its
// formula over the event totals, as perf prints it (the ratio of totals), and, for a metric
// that is a ratio of two quantities of a call, the distribution of its per-call values. The
// two differ: the ratio of totals weighs each call by its divisor (a long call counts more),
// the per-call mean weighs every call alike.
struct FuncMetricRow {
  std::string name;        // "IPC"
  std::string unit;        // "insn per cycle", "%", ...
  std::string formula;     // "instructions / cycles"
  bool requested = false;  // -M; otherwise derived automatically
  // Formula input -> the run's event it was computed from ("instructions" -> "instructions:u");
  // "duration_time" -> "wall time".
  std::vector<std::pair<std::string, std::string>> events;
  // The ratio of totals (perf's figure). For a metric kept per call, over the calls with a
  // value: the sum of its numerator over the sum of its denominator in those calls (the same
  // calls as the per-call figures). Otherwise (or when no call has a value) the formula over
  // the events' totals over the counted calls, `estimated` when one of them is. nullopt with
  // `reason` when it cannot be computed (an event not counted or not supported, no calls, a
  // divisor of 0).
  std::optional<double> of_totals;
  std::string reason;
  bool estimated = false;  // a total it reads is estimated (multiplexed)
  // Per call: kept when the formula is a ratio of two of a call's quantities (else the reason).
  bool per_call = false;
  std::string per_call_reason;
  std::uint64_t calls = 0;         // counted calls with a value
  std::uint64_t unmeasured = 0;    // counted calls one of its events did not run through
  std::uint64_t zero_divisor = 0;  // counted calls whose divisor was 0
  std::string divisor;             // the run's event (or "wall time") it divides by
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;  // when calls > 0
  Histogram histogram;  // per-call values in fixed point: value = bucket value x `per_unit`
  double per_unit = 0;
};

// One function (or one function and one --by value) in a function-mode report.
struct FuncRow {
  std::string function;           // as given to --func; a region's name (or its text)
  std::string backend;            // fentry, kprobe, uprobe, tracepoint, usdt; a region's "a/b"
  std::string kind = "function";  // function, region (START,END), probe (a single probe's hits)
  std::string by_value;  // the --by key ("" without --by); the cgroup's path for --by cgroup
  std::optional<std::uint64_t> cgroup_id;  // --by cgroup
  std::vector<KeyValue> args;              // --by argN: the key (empty on the `other` row)
  bool other = false;                      // --by argN: the calls of keys past --max-keys, folded
  // --by: the function's total row (the sums of all its keys, with the counts that are kept per
  // function rather than per key), and the keys it sums (the `other` row's unknown ones aside).
  bool total = false;
  std::uint64_t keys = 0;
  std::string sorted_by;  // the total row: what its keys are sorted by (sort_quantity)
  // --top N: the keys past the N largest, folded into one row (how many; 0 on every other row).
  std::uint64_t folded = 0;
  // Regions: starts that never ended (still open when the run ended, or left by their thread).
  std::optional<std::uint64_t> open;
  std::uint64_t calls = 0;
  std::uint64_t not_counted = 0;
  std::uint64_t hidden_switches = 0;  // of the not counted: a switch the kernel did not report
  std::uint64_t lost = 0;             // records of this function the stream dropped
  std::uint64_t slept = 0;
  std::uint64_t migrated = 0;
  std::uint64_t multiplexed = 0;
  // Calls seen but not measured: nested deeper than the BPF stack, or returns without a
  // matching entry (the probe was attached mid-call, or a return was missed).
  std::uint64_t depth_overflow = 0;
  std::uint64_t unmatched_exits = 0;
  std::uint64_t abandoned = 0;       // entries whose return never came (longjmp, exceptions)
  std::uint64_t reentered = 0;       // probe hits inside pmcprof's own BPF code: not measured
  std::uint64_t state_failed = 0;    // no per-thread state could be made: not measured
  std::uint64_t not_aggregated = 0;  // kernel aggregation busy (preempted) or full
  std::uint64_t read_errors = 0;     // calls during which a counter read failed
  std::string backend_note;          // e.g. why fentry fell back to kprobes
  // What its probes cost the program in CPU time: the calibrated cost of one probe pair as seen
  // by its caller (else its bias) times the calls that fired them (a call too deep for a return
  // probe fires half). Absent when the backend was not calibrated.
  struct ProbeCost {
    double per_call_ns = 0;
    double calls = 0;
    double total_ns() const { return per_call_ns * calls; }
  };
  std::optional<ProbeCost> probe_cost;
  Distribution wall;   // ns
  Distribution oncpu;  // ns
  Histogram wall_histogram;
  Histogram oncpu_histogram;
  std::vector<FuncEventRow> events;
  std::vector<FuncMetricRow> metrics;
};

// What a probe pair adds to each call, per backend (measured before the run on a function
// that does nothing) and whether it was subtracted from every call's values.
struct ProbeBiasRow {
  std::string backend;
  std::string kind = "function";  // function: a probe pair; region: a region's two probes
  std::string first_instruction;  // uprobes: "push", "endbr64" or "single-stepped"
  std::string probed;
  bool calibrated = false;
  std::string why_not;
  bool subtracted = false;
  std::uint64_t calls = 0;
  struct Event {
    std::string event;
    std::string unit;
    std::optional<double> per_call;  // nullopt: the event never ran through a calibration call
  };
  std::vector<Event> events;
  double wall_ns = 0;
  double oncpu_ns = 0;
  // What a probed call of this backend costs a call it is nested in (taken off that call,
  // once per nested probed call, when subtracting); nullopt when not measured.
  struct Nested {
    std::vector<Event> events;
    double wall_ns = 0;
    double oncpu_ns = 0;
    // What probed calls inside a call add to that call's noise floor: the spread of the
    // above per call (k calls inside add ceil(sqrt(k)) times it) and its tail (k times it).
    std::optional<double> wall_floor_ns;
    std::optional<double> oncpu_floor_ns;
    std::optional<double> wall_tail_ns;
    std::optional<double> oncpu_tail_ns;
  };
  std::optional<Nested> nested;
  bool nested_subtracted = false;
};

struct FunctionReport {
  std::string target;        // "system wide", "sleep 1", "process id 42"
  std::string aggregation;   // "stream", "kernel"
  std::string by;            // "", "pid", "comm", "cpu", "cgroup", "arg0:str,arg1" (--by argN)
  std::size_t max_keys = 0;  // --by argN: keys per function before `other`
  std::optional<std::size_t> top;  // --top N: keys shown per function before the folded row
  std::uint64_t elapsed_ns = 0;
  std::optional<double> interval_s;
  std::uint64_t timestamp_unix_ns = 0;
  bool interrupted = false;
  std::optional<int> exit_status;
  std::uint64_t lost = 0;       // PERF_RECORD_LOST total
  bool partial = false;         // any loss: totals are lower bounds
  std::uint64_t untracked = 0;  // processes the fork hook could not follow
  std::vector<ProbeBiasRow> probe_bias;
  std::vector<FuncRow> functions;
  // --aggregate both: the kernel's view of the same calls, rendered in the same document.
  std::shared_ptr<const FunctionReport> kernel_view;
};

// Describes an event for make_func_row: its name and whether BPF read it (bpf_index).
struct FuncEventInfo {
  std::string event;
  EventKind kind;
  std::string unit;
  std::optional<std::size_t> bpf_index;  // nullopt: the kernel refused it (not supported)
};

// The distribution of a quantity over `calls` counted calls: `measured` of them exactly
// (sum, min, max, histogram). Status ok with no_calls when nothing was called; not-counted
// when calls happened and none was measured or scaled. Sums of compensated values are signed
// (two's complement, bpf/pmcprof.h).
// The calls it did not measure exactly (multiplexed out for all or part of them) are
// estimated per stratum of on-CPU time (bpf/pmcprof.h, PMCPROF_SHORT_CALL_NS): the short ones
// (`short_unmeasured`) at the mean of the short calls measured (`short_sum` /
// `short_measured`), the long ones at the rate per on-CPU ns of the long calls measured
// ((sum - short_sum) / `long_measured_oncpu`) times their on-CPU time (`unmeasured_oncpu`).
// A stratum that measured no call: the mean of the enabled/running-scaled values of the
// `partial` calls (`scaled_sum`), else of the calls measured.
struct MeasuredSums {
  std::uint64_t calls = 0;
  std::uint64_t measured = 0;
  std::uint64_t sum = 0;
  std::uint64_t min = 0, max = 0;
  std::uint64_t partial = 0;
  std::uint64_t scaled_sum = 0;
  std::uint64_t short_measured = 0;
  std::uint64_t short_sum = 0;
  std::uint64_t long_measured_oncpu = 0;
  std::uint64_t short_unmeasured = 0;
  std::uint64_t unmeasured_oncpu = 0;
  std::uint64_t under_floor = 0;  // measured calls below the noise floor
};
Distribution make_distribution(const MeasuredSums& m, const Histogram& h);

// Describes a metric for make_func_row: its formula, and where its inputs are.
struct FuncMetricInfo {
  MetricChoice metric;
  bool requested = false;
  // Formula input -> index into the row's events (the FuncEventInfo list); duration_time is
  // the wall time and not here.
  std::map<std::string, std::size_t> inputs;
  // Its per-call slot in FuncStats (metric_* and metric_hist), when kept per call; else why not.
  std::optional<std::size_t> slot;
  std::string no_slot_reason;
};

// One metric of `row` (whose events are made already) from the stats the row was made of:
// nullopt for an automatic metric one of whose events the kernel could not open (perf prints
// no derived metric then; a -M metric says why it has no value).
std::optional<FuncMetricRow> make_metric_row(const FuncMetricInfo& info, const FuncRow& row,
                                             const FuncStats& stats);

FuncRow make_func_row(const std::string& function, const std::string& backend,
                      const std::string& by_value, const FuncStats& stats, std::uint64_t lost,
                      const std::vector<FuncEventInfo>& events,
                      const std::vector<FuncMetricInfo>& metrics = {});

// With --by, the rows of one function as every format shows them: its keys by their total,
// largest first (sort_total), the keys past `top` folded into one row, the argN `other` row,
// then the total row (a function never called: the total row alone, of 0 keys). Each
// FuncStats is one key's (`rows[i]` made from `stats[i]`; `none`: no calls, in the run's
// shape); `make` makes a row from merged stats, so the folded and total rows' per-call
// figures come from the keys' merged histograms, as exact as a key's.
using FuncRowMaker = std::function<FuncRow(const FuncStats&)>;
std::vector<FuncRow> order_keys(std::vector<FuncRow> rows, const std::vector<FuncStats>& stats,
                                const FuncStats& none, std::optional<std::size_t> top,
                                const FuncRowMaker& make);

// What order_keys sorts the keys of a function by, from its first key (null: none): its first
// event when the kernel opened it (the total of what the user asked for first, as perf top
// sorts by its event), else wall time; a probe's hits (calls of zero length) by their count:
// "calls".
std::string sort_quantity(const FuncRow* first_key);

// A total as every format shows it: an estimated (scaled) total is a count all the same,
// rounded.
double shown_total(const Distribution& d);

// IPC and the like for a function row, from its event totals as shown (shown_total), so that
// it is the ratio of the two totals beside it, also in a report read back from its JSON.
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
std::string render_func_text(const FunctionReport& report, const HistOptions& hist = {});
std::string render_func_csv(const FunctionReport& report, const std::string& sep = ",",
                            const HistOptions& hist = {});
std::string render_func_json(const FunctionReport& report);

}  // namespace pmcprof

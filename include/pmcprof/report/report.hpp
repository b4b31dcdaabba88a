#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/counters/cgroups.hpp"

namespace pmcprof {

inline constexpr const char* kJsonSchema = "pmcprof/1";

enum class CounterStatus { ok, not_counted, not_supported };
const char* to_string(CounterStatus s);  // "ok", "not-counted", "not-supported"

// How rows are aggregated, as perf stat's aggregation modes: the sum over every CPU or thread
// (global), one row per CPU (-A), per core, die, socket or NUMA node of the counted CPUs
// (--per-core, ...), or per thread (--per-thread).
enum class AggrMode { global, cpu, core, die, socket, node, thread };
const char* to_string(AggrMode m);  // "global", "cpu", "core", "die", "socket", "node", "thread"

// What a row of a --per-core/-die/-socket/-node/-thread report sums.
struct AggrId {
  int socket = 0, die = 0, core = 0, node = 0;
  int cpus = 0;      // how many CPUs were summed (perf's "cpus" column)
  int tid = 0;       // --per-thread: the thread ...
  std::string comm;  // ... and its name
  bool operator==(const AggrId&) const = default;
};
// perf's label of an aggregate: "S0-D0-C1", "S0-D0", "S0", "N0", "comm-tid".
std::string aggr_label(AggrMode mode, const AggrId& id);

// What an event is, independent of how the user spelled it; derived metrics key on this.
struct EventKind {
  std::uint32_t type = 0;
  std::uint64_t config = 0;
  bool operator==(const EventKind&) const = default;
};

// One line of a counting report: an event, aggregated over CPUs or for one CPU (-A), one
// core/die/socket/node/thread (--per-*).
struct CounterRow {
  std::string event;  // as the user wrote it (an event split per core PMU: cpu_core/cycles/)
  EventKind kind;     // a hardware or cache event's config without the PMU's extended type
  std::string pmu;    // the core PMU counted on, on a heterogeneous machine ("" otherwise)
  std::string unit;   // the kernel's unit: "ns" for clocks, "" for counts
  CounterStatus status = CounterStatus::not_counted;
  double value = 0;  // scaled (count * enabled / running); meaningful when status == ok
  std::uint64_t raw_value = 0;
  std::uint64_t enabled_ns = 0;
  std::uint64_t running_ns = 0;
  double running_pct = 0;
  std::optional<int> cpu;                  // -A/--per-cpu
  std::optional<AggrId> aggr;              // --per-core, --per-die, ..., --per-thread
  std::optional<std::string> cgroup;       // -G / --for-each-cgroup: path under the v2 mount
  std::optional<std::uint64_t> cgroup_id;  // its id (kernfs inode)
  bool cgroup_removed = false;             // the cgroup was removed while counting
  std::optional<double> stddev_pct;        // -r N: relative stddev of the mean, in %
  std::size_t group = 0;  // the event group (-e order, {a,b} or one event) it was opened in
};

// The percentage of its enabled time a counter ran, as perf prints it: 100 when the two are
// equal (also for counters that never ran: <not supported>), else running / enabled.
double running_percent(std::uint64_t running_ns, std::uint64_t enabled_ns);

// -M: one metric's value for one scope (the whole run, a CPU, a core, a cgroup ...), or why it
// has none. A metric is never printed as 0 when its events could not be counted.
struct MetricValue {
  std::string name;             // "IPC"
  std::string unit;             // "insn per cycle", "%", ...
  std::optional<double> value;  // absent: not computed
  std::string why_not;          // then: "cycles <not supported>", "division by zero"...
  std::optional<int> cpu;       // the scope, as on the rows it was computed from
  std::optional<AggrId> aggr;
  std::optional<std::uint64_t> cgroup_id;
  std::optional<std::string> cgroup;
  std::size_t group = 0;  // the event group it was computed from (shown on its first row)
  std::string pmu;        // the core PMU of that group, on a heterogeneous machine
};

// Per-cgroup counting with the BPF backend: what it charged to no cgroup. A stretch between
// two context switches on a CPU is set aside when the task switched out is not the one the
// CPU last switched to (the kernel ran a switch it did not report, so the stretch may hold
// several tasks' time), or when a counter read failed (that stretch and the next).
struct UnchargedCounts {
  std::uint64_t unreported_switches = 0;  // stretches set aside after an unreported switch
  std::uint64_t read_errors = 0;          // failed counter reads
  std::vector<CounterRow> counters;       // what the stretches set aside counted, per event
};

// A counting-mode report: the whole run, one interval (-I), or the mean of -r runs.
struct CountingReport {
  std::string target;            // "system wide", "sleep 1", "process id 42", "CPU(s) 0-1"
  std::uint64_t elapsed_ns = 0;  // wall time counted (the interval's length for -I)
  std::optional<double> elapsed_stddev_pct;  // -r N
  int runs = 1;
  std::optional<double> interval_s;      // -I: seconds since start at the end of this interval
  std::uint64_t timestamp_unix_ns = 0;   // wall clock when this report's counts were read
  bool interrupted = false;              // stopped by SIGINT/SIGTERM
  std::optional<int> exit_status;        // the workload's exit status, when there is one
  std::optional<std::uint64_t> user_ns;  // the workload's user and system CPU time (rusage),
  std::optional<std::uint64_t> sys_ns;   // for one run of a command (perf's "seconds user")
  std::optional<CgroupBackend> cgroup_backend;      // fd or bpf when counting per cgroup
  std::optional<UnchargedCounts> cgroup_uncharged;  // the bpf backend's
  AggrMode aggr_mode = AggrMode::global;
  std::vector<CounterRow> counters;
  std::vector<MetricValue> metrics;  // -M, computed from `counters`
};

// A derived metric shown beside a counter ("# 1.23 insn per cycle"), perf's shadow stats.
struct Metric {
  double value = 0;
  std::string unit;      // "insn per cycle", "CPUs utilized", "/sec", "GHz", "of all branches"...
  bool percent = false;  // value is a percentage ("12.3%" in text)
};

// The metric perf stat would print for `row`, from other rows of the same report and scope
// (CPU, aggregate, cgroup) and of the same core PMU (or of none: IPC is cpu_core's
// instructions over cpu_core's cycles, never over cpu_atom's; GHz may take task-clock).
std::optional<Metric> derive_metric(const CountingReport& report, const CounterRow& row);
// perf's printf format for its value: "%7.2f " (insn per cycle), "%7.2f%%" (shares), "%8.3f".
const char* metric_format(const Metric& m);

// Rows of the same scope: same CPU, aggregate and cgroup.
bool same_scope(const CounterRow& a, const CounterRow& b);

}  // namespace pmcprof

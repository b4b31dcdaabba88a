#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/counters/cgroups.hpp"

namespace pmcprof {

inline constexpr const char* kJsonSchema = "pmcprof/1";

enum class CounterStatus { ok, not_counted, not_supported };
const char* to_string(CounterStatus s);  // "ok", "not-counted", "not-supported"

// What an event is, independent of how the user spelled it; derived metrics key on this.
struct EventKind {
  std::uint32_t type = 0;
  std::uint64_t config = 0;
  bool operator==(const EventKind&) const = default;
};

// One line of a counting report: an event, aggregated over CPUs or for one CPU (-A).
struct CounterRow {
  std::string event;  // as the user wrote it
  EventKind kind;
  std::string unit;  // the kernel's unit: "ns" for clocks, "" for counts
  CounterStatus status = CounterStatus::not_counted;
  double value = 0;  // scaled (count * enabled / running); meaningful when status == ok
  std::uint64_t raw_value = 0;
  std::uint64_t enabled_ns = 0;
  std::uint64_t running_ns = 0;
  double running_pct = 0;
  std::optional<int> cpu;                  // -A/--per-cpu
  std::optional<std::string> cgroup;       // -G / --for-each-cgroup: path under the v2 mount
  std::optional<std::uint64_t> cgroup_id;  // its id (kernfs inode)
  bool cgroup_removed = false;             // the cgroup was removed while counting
  std::optional<double> stddev_pct;        // -r N: relative stddev of the mean, in %
};

// A counting-mode report: the whole run, one interval (-I), or the mean of -r runs.
struct CountingReport {
  std::string target;            // "system wide", "sleep 1", "process id 42", "CPU(s) 0-1"
  std::uint64_t elapsed_ns = 0;  // wall time counted (the interval's length for -I)
  std::optional<double> elapsed_stddev_pct;  // -r N
  int runs = 1;
  std::optional<double> interval_s;     // -I: seconds since start at the end of this interval
  std::uint64_t timestamp_unix_ns = 0;  // wall clock when this report's counts were read
  bool interrupted = false;             // stopped by SIGINT/SIGTERM
  std::optional<int> exit_status;       // the workload's exit status, when there is one
  std::optional<CgroupBackend> cgroup_backend;  // fd or bpf when counting per cgroup
  std::vector<CounterRow> counters;
};

// A derived metric shown beside a counter ("# 1.23 insn per cycle").
struct Metric {
  double value = 0;
  std::string unit;      // "insn per cycle", "CPUs utilized", "/sec", "GHz", "of all branches"...
  bool percent = false;  // value is a percentage ("12.3%" in text)
};

// The metric perf stat would print for `row`, from other rows of the same report and CPU.
std::optional<Metric> derive_metric(const CountingReport& report, const CounterRow& row);

}  // namespace pmcprof

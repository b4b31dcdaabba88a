#pragma once

#include <cstdint>
#include <string>

#include "pmcprof/report/func_report.hpp"
#include "pmcprof/report/report.hpp"

namespace pmcprof {

struct PrometheusStatus {
  bool up = false;            // counting is live (false while starting up)
  std::uint64_t scrapes = 0;  // this one included
  std::string mode;           // "counting" or "function"
  // false: a saved run rendered (pmcprof report), not a live one: no pmcprof_up and no
  // pmcprof_scrapes_total, which describe a server.
  bool serving = true;
};

// The Prometheus text exposition format (version 0.0.4) of a report: pmcprof_ prefix,
// counters end in _total, base units (seconds), labels event / pmu / cpu / cgroup / function.
// Either report may be null (start-up: only pmcprof's own health is served).
std::string render_prometheus(const CountingReport* counting, const FunctionReport* functions,
                              const PrometheusStatus& status);

// The base unit a function metric (metric_table's unit) is exported in, one unit per metric
// name as Prometheus names them: the name's suffix ("ratio", "hertz") and what the value is
// multiplied by ("%" -> ratio: 0.01; "GHz" -> hertz: 1e9).
struct PrometheusUnit {
  std::string suffix;
  double scale = 1;
};
PrometheusUnit prometheus_unit_of(const std::string& metric_unit);

// Escapes a label value: backslash, double quote and newline.
std::string prometheus_escape(const std::string& raw);

}  // namespace pmcprof

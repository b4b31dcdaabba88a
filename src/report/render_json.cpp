// JSON renderer. Schema documented in docs/json.md: a single report is one pretty-printed
// object; with -I every interval is one compact line (NDJSON), then one "summary" line.
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "pmcprof/report/render.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

using ojson = nlohmann::ordered_json;

// Strings from outside (command lines, cgroup paths, event names) as valid UTF-8: a byte that
// is not UTF-8 becomes the text \xHH (JSON escapes control characters itself).
std::string text(const std::string& s) {
  return escape_bytes(s, false);
}

// Serialized without ever throwing on bytes: anything that escaped text() is replaced (U+FFFD).
std::string dump(const ojson& j, int indent = -1) {
  return j.dump(indent, ' ', false, ojson::error_handler_t::replace);
}

// Integral values go out as JSON integers (no "81.0"; every double >= 2^53 is integral and
// exact as a uint64), fractional ones as doubles.
ojson number(double v) {
  if (std::isfinite(v) && v >= 0 && v < 18446744073709551616.0 && std::floor(v) == v)
    return static_cast<std::uint64_t>(v);
  return v;
}

ojson counter_json(const CountingReport& report, const CounterRow& row) {
  ojson c;
  c["event"] = text(row.event);
  if (row.cpu) c["cpu"] = *row.cpu;
  if (row.cgroup) {
    c["cgroup"] = text(*row.cgroup);
    c["cgroup_id"] = row.cgroup_id.value_or(0);
    c["cgroup_removed"] = row.cgroup_removed;
  }
  c["value"] = row.status == CounterStatus::ok ? number(row.value) : ojson(nullptr);
  c["unit"] = row.unit.empty() ? "count" : row.unit;
  c["status"] = to_string(row.status);
  c["raw_value"] = row.status == CounterStatus::ok ? ojson(row.raw_value) : ojson(nullptr);
  c["enabled_ns"] = row.enabled_ns;
  c["running_ns"] = row.running_ns;
  c["running_pct"] = row.status == CounterStatus::ok ? number(row.running_pct) : ojson(nullptr);
  if (row.stddev_pct) c["stddev_pct"] = *row.stddev_pct;
  if (auto m = derive_metric(report, row)) {
    c["metric"] = {{"value", m->value}, {"unit", m->percent ? "% " + m->unit : m->unit}};
  } else {
    c["metric"] = nullptr;
  }
  return c;
}

ojson report_json(const CountingReport& report, const char* type) {
  ojson j;
  j["schema"] = kJsonSchema;
  j["type"] = type;
  j["mode"] = "counting";
  j["target"] = text(report.target);
  if (report.interval_s) j["interval"] = *report.interval_s;
  j["timestamp_unix_ns"] = report.timestamp_unix_ns;
  j["elapsed_ns"] = report.elapsed_ns;
  j["runs"] = report.runs;
  if (report.elapsed_stddev_pct) j["elapsed_stddev_pct"] = *report.elapsed_stddev_pct;
  j["interrupted"] = report.interrupted;
  j["exit_status"] = report.exit_status ? ojson(*report.exit_status) : ojson(nullptr);
  if (report.cgroup_backend) j["cgroup_backend"] = to_string(*report.cgroup_backend);
  ojson counters = ojson::array();
  for (const auto& row : report.counters) counters.push_back(counter_json(report, row));
  j["counters"] = std::move(counters);
  return j;
}

class JsonRenderer : public ReportRenderer {
 public:
  JsonRenderer(std::ostream& out, bool ndjson) : out_(out), streaming_(ndjson) {}
  void interval(const CountingReport& report) override {
    out_ << dump(report_json(report, "interval")) << '\n';
    out_.flush();
    streaming_ = true;
  }
  void final(const CountingReport& report) override {
    CountingReport whole = report;
    whole.interval_s.reset();
    if (streaming_)
      out_ << dump(report_json(whole, "summary")) << '\n';
    else
      out_ << dump(report_json(whole, "report"), 2) << '\n';
    out_.flush();
  }

 private:
  std::ostream& out_;
  bool streaming_ = false;
};

}  // namespace

std::unique_ptr<ReportRenderer> make_json_renderer(std::ostream& out, bool ndjson) {
  return std::make_unique<JsonRenderer>(out, ndjson);
}

std::string render_json(const CountingReport& report) {
  std::ostringstream ss;
  make_json_renderer(ss, false)->final(report);
  return ss.str();
}

}  // namespace pmcprof

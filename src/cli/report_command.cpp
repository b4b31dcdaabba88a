#include <ostream>

#include "pmcprof/cli/commands.hpp"
#include "pmcprof/cli/saved_input.hpp"
#include "pmcprof/report/prometheus.hpp"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

namespace {

void validate(const ReportOptions& opts) {
  const std::string hint = "see 'pmcprof report --help'";
  if (opts.input.empty())
    throw UserError("pmcprof report needs the saved run to read: pmcprof report FILE.json",
                    "save one with 'pmcprof stat -j -o FILE.json ...'; '-' reads standard input");
  if (opts.json + opts.csv_separator.has_value() + opts.prometheus > 1)
    throw UserError("give one of -j, -x and --prometheus", hint);
  if (opts.csv_separator && opts.csv_separator->empty())
    throw UserError("-x needs a separator, e.g. -x ,", hint);
}

// The /metrics page serve would have served at the run's end, for a textfile collector or a
// push gateway: serve's renderer without its liveness gauges.
void render_metrics(const LoadedRun& in, std::ostream& out) {
  PrometheusStatus status;
  status.serving = false;
  status.mode = to_string(in.run.mode);
  if (in.run.mode == RunMode::counting) {
    out << render_prometheus(&counting_totals(in.run, in.name), nullptr, status);
    return;
  }
  if (!in.run.histograms)
    throw UserError(in.name +
                        " has no per-call buckets (written by an older pmcprof): its "
                        "/metrics histograms cannot be drawn",
                    "render it as text, CSV (-x ,) or JSON (-j)");
  out << render_prometheus(nullptr, &function_totals(in.run, in.name), status);
}

}  // namespace

int run_report_command(const ReportOptions& opts, std::ostream& out) {
  validate(opts);
  const LoadedRun in = load_saved_run(opts.input);
  if (opts.prometheus) {
    render_metrics(in, out);
    return kExitOk;
  }
  RenderOptions r;
  r.big_num = !opts.no_big_num;
  if (opts.json) {
    r.format = OutputFormat::json;
  } else if (opts.csv_separator) {
    r.format = OutputFormat::csv;
    r.csv_separator = *opts.csv_separator;
  }
  render_saved_run(in.run, r, out, in.name);
  out.flush();
  return kExitOk;
}

}  // namespace pmcprof

#include <ostream>
#include <vector>

#include "pmcprof/cli/choices.hpp"
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
  if (opts.prometheus && (opts.hist || opts.hist_linear))
    throw UserError("--hist draws in text and CSV, not in the /metrics text of --prometheus", hint);
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

// What --hist can draw from the saved run: wall and on-CPU time, its events and metrics (as
// stat's --hist names them), each once, in the order of the report.
std::vector<HistName> hist_names(const FunctionReport& r) {
  std::vector<HistName> names{{"wall", true}, {"oncpu", true}};
  auto add = [&names](const std::string& name, bool time) {
    for (const auto& n : names)
      if (n.name == name) return;
    names.push_back({name, time});
  };
  for (const auto& f : r.functions)
    for (const auto& e : f.events) add(e.event, e.unit == "ns");
  for (const auto& f : r.functions)
    for (const auto& m : f.metrics) add(m.name, false);
  return names;
}

HistOptions hist_options(const ReportOptions& opts, const LoadedRun& in) {
  if (!opts.hist && !opts.hist_linear) return {};
  if (in.run.mode != RunMode::function)
    throw UserError("--hist draws the per-call histograms of a function report; " + in.name +
                        " is a counting report",
                    "record one with 'pmcprof stat --func FUNC -j -o FILE'");
  if (!in.run.histograms)
    throw UserError(in.name +
                        " has no per-call buckets (written by an older pmcprof): no "
                        "histograms to draw",
                    "render it without --hist");
  const FunctionReport& r = in.run.function ? *in.run.function : in.run.function_intervals.front();
  return hist_choice(opts.hist, opts.hist_quantities, opts.hist_linear, hist_names(r));
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
  r.hist = hist_options(opts, in);
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

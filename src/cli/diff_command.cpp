#include <ostream>

#include "pmcprof/cli/choices.hpp"
#include "pmcprof/cli/commands.hpp"
#include "pmcprof/cli/saved_input.hpp"
#include "pmcprof/report/diff.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

DiffRule rule_of(const DiffOptions& opts) {
  DiffRule rule;
  if (!opts.threshold_pct.empty())
    rule.threshold_pct = parse_decimal_option(opts.threshold_pct, "--threshold", 0, 1000,
                                              "e.g. --threshold 10 (%); 0 flags any "
                                              "significant change");
  if (!opts.alpha.empty())
    rule.alpha = parse_decimal_option(opts.alpha, "--alpha", 0, 1,
                                      "e.g. --alpha 0.01 (the default is 0.001)", true);
  return rule;
}

void validate(const DiffOptions& opts) {
  const std::string hint = "see 'pmcprof diff --help'";
  if (opts.baseline.empty() || opts.fresh.empty())
    throw UserError("pmcprof diff compares two saved runs: pmcprof diff BASELINE.json NEW.json",
                    "save each with 'pmcprof stat -j -o FILE.json ...'; '-' reads one from "
                    "standard input");
  if (opts.baseline == "-" && opts.fresh == "-")
    throw UserError("only one of the two runs can come from standard input ('-')", hint);
  if (opts.json && opts.csv_separator) throw UserError("give one of -j and -x", hint);
  if (opts.csv_separator && opts.csv_separator->empty())
    throw UserError("-x needs a separator, e.g. -x ,", hint);
}

DiffSide side_of(const LoadedRun& in, const std::string& path) {
  DiffSide side;
  side.name = in.name;
  side.file = path;
  return side;
}

}  // namespace

int run_diff_command(const DiffOptions& opts, std::ostream& out) {
  validate(opts);
  const DiffRule rule = rule_of(opts);
  const LoadedRun base = load_saved_run(opts.baseline);
  const LoadedRun fresh = load_saved_run(opts.fresh);
  const DiffReport diff = diff_runs(base.run, side_of(base, opts.baseline), fresh.run,
                                    side_of(fresh, opts.fresh), rule);
  RenderOptions r;
  if (opts.json) {
    r.format = OutputFormat::json;
  } else if (opts.csv_separator) {
    r.format = OutputFormat::csv;
    r.csv_separator = *opts.csv_separator;
  }
  render_diff(diff, r, out);
  out.flush();
  return kExitOk;
}

}  // namespace pmcprof

#pragma once

// pmcprof's own JSON (schema "pmcprof/1", docs/json.md) read back into the report models, so
// that a saved run renders again through the renderers `stat` uses (`pmcprof report`) and two
// runs can be compared (`pmcprof diff`).
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmcprof/report/func_report.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/report/report.hpp"

namespace pmcprof {

enum class RunMode { counting, function };
const char* to_string(RunMode m);  // "counting", "function"

// One saved run: a single report (`stat -j`), or an NDJSON stream (`stat -j -I MS`) of
// interval records and, when it was asked for (--summary; always in function mode), the summary.
struct SavedRun {
  RunMode mode = RunMode::counting;
  bool streamed = false;  // NDJSON: render with RenderOptions::intervals
  std::vector<CountingReport> counting_intervals;
  std::optional<CountingReport> counting;  // the "report" or "summary" record
  std::vector<FunctionReport> function_intervals;
  std::optional<FunctionReport> function;
  // Every distribution of a function report carried its per-call buckets (older files have
  // none: their histograms are empty, their percentiles are the ones written).
  bool histograms = true;
  // Counters and events written without their perf_event_attr type and config (older files)
  // whose kind the lookup given to read_saved_run did not know: no derived metric shows on them.
  std::vector<std::string> unknown_kinds;
};

// What an event name is, for files written before "attr" was (shadow metrics key on it).
using KindLookup = std::function<std::optional<EventKind>(const std::string& event)>;

// Parses `text`, the contents of `source` (named in errors: "a.json", "standard input").
// Throws UserError in one line naming what is wrong: not JSON (line and column), not
// pmcprof's (another tool's JSON, a list or doctor document), a schema other than
// "pmcprof/1", a field of the wrong type (its path), records of both modes in one stream.
SavedRun read_saved_run(std::string_view text, const std::string& source,
                        const KindLookup& kind_of = {});

// The run's totals: the report or summary record. A stream of intervals without a summary has
// none: throws UserError naming `source` and saying how to record one.
const CountingReport& counting_totals(const SavedRun& run, const std::string& source);
const FunctionReport& function_totals(const SavedRun& run, const std::string& source);

// Renders the run as `stat` did: through the same renderers, intervals first (NDJSON in, NDJSON
// out), then the report or summary. `opts` says the format; a stream sets `intervals` itself.
// A counting report written with --metric-only holds metrics without the counts text and CSV
// are rendered from: refused in those formats (UserError naming `source`).
void render_saved_run(const SavedRun& run, RenderOptions opts, std::ostream& out,
                      const std::string& source);

}  // namespace pmcprof

// pmcprof report's reader (report/read_json): any bytes are read as a saved run or refused
// in one line; a run that is read renders in every format (or is refused in one line, as a
// --metric-only report is in text), and its JSON reads back to the same JSON. pmcprof diff of
// the run against itself (its statistics on whatever histograms the file holds) flags nothing.
#include <cstdlib>
#include <sstream>

#include "fuzz_common.hpp"
#include "pmcprof/report/diff.hpp"
#include "pmcprof/report/read_json.hpp"

namespace {

std::string render(const pmcprof::SavedRun& run, pmcprof::OutputFormat format) {
  pmcprof::RenderOptions opts;
  opts.format = format;
  std::ostringstream out;
  pmcprof::render_saved_run(run, opts, out, "fuzz");
  return out.str();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = pmcprof_fuzz::text(data, size);
  pmcprof_fuzz::run([&] {
    const pmcprof::SavedRun run = pmcprof::read_saved_run(s, "fuzz");
    pmcprof_fuzz::run([&] { render(run, pmcprof::OutputFormat::text); });
    pmcprof_fuzz::run([&] { render(run, pmcprof::OutputFormat::csv); });
    pmcprof_fuzz::run([&] {
      const pmcprof::DiffSide side{"fuzz", "fuzz", {}, 0, 0, 1};
      const auto diff = pmcprof::diff_runs(run, side, run, side, {});
      if (diff.flagged() != 0) std::abort();
      for (auto format :
           {pmcprof::OutputFormat::text, pmcprof::OutputFormat::csv, pmcprof::OutputFormat::json}) {
        pmcprof::RenderOptions opts;
        opts.format = format;
        std::ostringstream out;
        pmcprof::render_diff(diff, opts, out);
      }
    });
    const std::string json = render(run, pmcprof::OutputFormat::json);
    // What pmcprof wrote, it reads: the JSON of a run read back renders to itself.
    if (!json.empty() &&
        render(pmcprof::read_saved_run(json, "again"), pmcprof::OutputFormat::json) != json)
      std::abort();
  });
  return 0;
}

#pragma once

#include <string>

#include "pmcprof/report/read_json.hpp"

namespace pmcprof {

// A saved run named on the command line of `report` or `diff`: FILE, or '-' for standard input.
struct LoadedRun {
  std::string name;  // as errors and headers name it: the path, or "standard input"
  SavedRun run;
};

// Reads and parses it (report/read_json). Events of files written before their kind was saved
// (attr) are looked up by name in libpfm4's generic events, the only ones a derived metric
// keys on. Throws UserError in one line: a file that cannot be read (errno), or what
// read_saved_run refuses.
LoadedRun load_saved_run(const std::string& path);

}  // namespace pmcprof

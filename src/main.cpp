#include <exception>
#include <iostream>

#include "pmcprof/cli/commands.hpp"
#include "pmcprof/run/workload.hpp"

int main(int argc, char** argv) {
  // First of all: from here on SIGINT and SIGTERM wait for a run loop (final report) instead
  // of killing pmcprof mid-start-up.
  pmcprof::take_stop_signals();
  try {
    return pmcprof::run_cli(argc, argv);
  } catch (const std::exception& e) {
    // Anything not a UserError is a bug; still one line and a non-zero exit, never a crash.
    std::cerr << "pmcprof: internal error: " << e.what() << "\n";
    return 1;
  }
}

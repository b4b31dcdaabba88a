#include <exception>
#include <iostream>

#include "pmcprof/cli/commands.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/run/workload.hpp"

// First of all, before main() and before other static initializers (priority 101 is the
// earliest a program may use): from here on SIGINT and SIGTERM wait for a run loop (final
// report) instead of killing pmcprof mid-start-up. Only the dynamic loader runs before this.
__attribute__((constructor(101))) static void take_stop_signals_first() {
  pmcprof::take_stop_signals();
}

int main(int argc, char** argv) {
  pmcprof::prepare_heap();
  try {
    return pmcprof::run_cli(argc, argv);
  } catch (const std::exception& e) {
    // Anything not a UserError is a bug; still one line and a non-zero exit, never a crash.
    std::cerr << "pmcprof: internal error: " << e.what() << "\n";
    return 1;
  }
}

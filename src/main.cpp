#include <exception>
#include <iostream>

#include "pmcprof/cli/commands.hpp"

int main(int argc, char** argv) {
  try {
    return pmcprof::run_cli(argc, argv);
  } catch (const std::exception& e) {
    // Anything not a UserError is a bug; still one line and a non-zero exit, never a crash.
    std::cerr << "pmcprof: internal error: " << e.what() << "\n";
    return 1;
  }
}

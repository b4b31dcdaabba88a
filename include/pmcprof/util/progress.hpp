#pragma once

#include <cstddef>
#include <string>

namespace pmcprof {

// "pmcprof: attaching 12/50" on one rewritten stderr line while a long set-up runs, only when
// stderr is a terminal (never in logs or pipes) and not quiet; cleared when done.
class Progress {
 public:
  Progress(std::string what, std::size_t total, bool quiet);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void step(std::size_t done);

 private:
  std::string what_;
  std::size_t total_;
  bool enabled_;
  bool drawn_ = false;
};

}  // namespace pmcprof

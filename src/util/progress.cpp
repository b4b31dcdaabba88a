#include "pmcprof/util/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace pmcprof {

namespace {
// Short set-ups finish before anyone could read a progress line.
constexpr std::size_t kMinSteps = 4;
}  // namespace

Progress::Progress(std::string what, std::size_t total, bool quiet)
    : what_(std::move(what)), total_(total), enabled_(!quiet && total >= kMinSteps && isatty(2)) {}

Progress::~Progress() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
}

void Progress::step(std::size_t done) {
  if (!enabled_) return;
  std::fprintf(stderr, "\rpmcprof: %s %zu/%zu", what_.c_str(), done, total_);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace pmcprof

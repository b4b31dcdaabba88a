#pragma once

#include <cstdint>

namespace pmcprof {

// One read of a counter: the count and the times it was enabled and actually on the PMU.
struct RawCount {
  std::uint64_t value = 0;
  std::uint64_t enabled = 0;
  std::uint64_t running = 0;

  RawCount& operator+=(const RawCount& o) {
    value += o.value;
    enabled += o.enabled;
    running += o.running;
    return *this;
  }
};

// Difference of two cumulative reads (later - earlier), clamped at 0 per field.
RawCount delta(const RawCount& later, const RawCount& earlier);

struct ScaledCount {
  bool counted = false;      // running > 0
  double value = 0;          // value * enabled / running (exact when running == enabled)
  double running_pct = 0;    // 100 * running / enabled (100 when enabled == 0 and counted)
  bool multiplexed = false;  // running < enabled
};

// perf's scaling: a counter that ran for part of the time it was enabled is extrapolated.
// running == 0 means "not counted" (never reported as 0).
ScaledCount scale(const RawCount& raw);

// value * enabled / running computed without overflow for any 64-bit inputs.
double scale_value(std::uint64_t value, std::uint64_t enabled, std::uint64_t running);

}  // namespace pmcprof

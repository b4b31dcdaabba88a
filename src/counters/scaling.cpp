#include "pmcprof/counters/scaling.hpp"

namespace pmcprof {

RawCount delta(const RawCount& later, const RawCount& earlier) {
  auto sub = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
  return {sub(later.value, earlier.value), sub(later.enabled, earlier.enabled),
          sub(later.running, earlier.running)};
}

double scale_value(std::uint64_t value, std::uint64_t enabled, std::uint64_t running) {
  if (running == 0) return 0;
  if (running >= enabled) return static_cast<double>(value);
  // long double keeps 64 bits of mantissa: value * enabled cannot overflow and stays exact
  // enough for counts up to 2^64.
  long double v = static_cast<long double>(value) * static_cast<long double>(enabled) /
                  static_cast<long double>(running);
  return static_cast<double>(v);
}

ScaledCount scale(const RawCount& raw) {
  ScaledCount out;
  if (raw.running == 0) return out;  // not counted
  out.counted = true;
  out.value = scale_value(raw.value, raw.enabled, raw.running);
  out.multiplexed = raw.running < raw.enabled;
  out.running_pct =
      raw.enabled == 0 || raw.running >= raw.enabled
          ? 100.0
          : 100.0 * static_cast<double>(raw.running) / static_cast<double>(raw.enabled);
  return out;
}

}  // namespace pmcprof

#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace pmcprof {

// A number as pmcprof's JSON writes it: an integral value as a JSON integer (no "81.0"; every
// double >= 2^53 is integral and exact as a uint64), a fractional one as a double.
inline nlohmann::ordered_json json_number(double v) {
  if (std::isfinite(v) && v >= 0 && v < 18446744073709551616.0 && std::floor(v) == v)
    return static_cast<std::uint64_t>(v);
  return v;
}

}  // namespace pmcprof

#pragma once

#include <string>

namespace pmcprof {

// "1234567.891" -> "1,234,567.89": fixed decimals with thousands separators, as perf stat
// prints in an English locale (independent of the process locale).
std::string format_grouped(double value, int decimals);

// printf-style "%.*f" without separators (CSV).
std::string format_fixed(double value, int decimals);

// Right-aligns `s` in a field of `width` characters (no truncation).
std::string pad_left(const std::string& s, std::size_t width);
std::string pad_right(const std::string& s, std::size_t width);

}  // namespace pmcprof

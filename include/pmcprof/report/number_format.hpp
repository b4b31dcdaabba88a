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

// A text field of a CSV row (event, cgroup path, function, comm): bytes escaped as in text
// (escape_bytes: \xHH for bytes that are not UTF-8 and for control characters, so a field
// never holds a line break), then, when it contains the separator or a double quote, quoted
// as RFC 4180 does: "a,b" and "say ""hi""".
std::string csv_field(const std::string& s, const std::string& sep);

}  // namespace pmcprof

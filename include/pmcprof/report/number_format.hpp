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

// ns -> "12.34 us", for per-call times that span ns to seconds. `whole`: a whole number of ns
// (a percentile, min or max), without decimals below 1 us ("281 ns").
std::string format_duration(double ns, bool whole = false);
// A total or mean of a quantity in `unit`: a duration for "ns", else grouped (0 decimals for a
// total, 2 for a mean).
std::string format_amount(double v, const std::string& unit, bool total);
// A percentile, min or max of a count or a time: a whole number, without decimals.
std::string format_point(double v, const std::string& unit);

}  // namespace pmcprof

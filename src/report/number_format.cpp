#include "pmcprof/report/number_format.hpp"

#include <cmath>
#include <cstdio>

#include "pmcprof/util/strings.hpp"

namespace pmcprof {

std::string format_fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

std::string format_grouped(double value, int decimals) {
  std::string s = format_fixed(value, decimals);
  std::size_t start = (s[0] == '-') ? 1 : 0;
  std::size_t dot = s.find('.');
  std::size_t int_end = dot == std::string::npos ? s.size() : dot;
  std::string out = s.substr(0, start);
  const std::size_t digits = int_end - start;
  for (std::size_t i = 0; i < digits; ++i) {
    out += s[start + i];
    std::size_t left = digits - i - 1;
    if (left > 0 && left % 3 == 0) out += ',';
  }
  out += s.substr(int_end);
  return out;
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string csv_field(const std::string& s, const std::string& sep) {
  std::string f = escape_bytes(s);
  const bool quote_it =
      f.find('"') != std::string::npos || f.find_first_of(sep) != std::string::npos;
  if (!quote_it) return f;
  std::string out = "\"";
  for (char c : f) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// ns -> "12.34 us" style, for per-call times that span ns to seconds. `whole`: the value is a
// whole number of ns (a percentile, min or max), so below 1 us it has no decimals ("281 ns").
std::string format_duration(double ns, bool whole) {
  const char* unit = "ns";
  double v = ns;
  int decimals = whole ? 0 : 2;
  if (ns >= 1e9)
    v = ns / 1e9, unit = "s", decimals = 2;
  else if (ns >= 1e6)
    v = ns / 1e6, unit = "ms", decimals = 2;
  else if (ns >= 1e3)
    v = ns / 1e3, unit = "us", decimals = 2;
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f %s", decimals, v, unit);
  return buf;
}

std::string format_amount(double v, const std::string& unit, bool total) {
  if (unit == "ns") return format_duration(v);
  return format_grouped(v, total ? 0 : 2);
}

// A percentile, min or max of a count or a time: a whole number (make_distribution), printed
// without decimals a 2 % bucket does not have (a mean keeps its two).
std::string format_point(double v, const std::string& unit) {
  if (unit == "ns") return format_duration(v, true);
  return format_grouped(v, 0);
}

}  // namespace pmcprof

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

}  // namespace pmcprof

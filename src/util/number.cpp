#include "pmcprof/util/number.hpp"

#include <string>

#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

std::string grouped(std::uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::uint64_t parse_option_number(std::string_view text, std::string_view option, std::uint64_t min,
                                  std::uint64_t max, std::string_view unit) {
  const std::string opt(option);
  const std::string range = grouped(min) + " to " + grouped(max) +
                            (unit.empty() ? std::string() : " " + std::string(unit));
  const std::string hint = "write " + opt + " as a decimal number from " + range;
  if (text.empty()) throw UserError(opt + " needs a value", hint);
  for (char c : text)
    if (c < '0' || c > '9')
      throw UserError("invalid " + opt + " " + quote(text) + ": not a decimal number", hint);
  unsigned long long v = 0;
  if (!parse_u64(text, v) || v < min || v > max)
    throw UserError("invalid " + opt + " " + quote(text) + ": out of range (" + range + ")", hint);
  return v;
}

}  // namespace pmcprof

#pragma once

#include <cstdint>
#include <string_view>

namespace pmcprof {

// The one parser behind every numeric option (-p, -t, -I, --timeout, -r, --buffer-pages):
// plain decimal digits only (no sign, no spaces, no 0x/octal/exponent), range-checked.
// Throws UserError naming the option and quoting the value (shortened when long), e.g.
//   invalid -p '0x10': not a decimal number
//   invalid -I '18446744073709551615': out of range (10 to 31,536,000,000)
//   -I needs a value
std::uint64_t parse_option_number(std::string_view text, std::string_view option, std::uint64_t min,
                                  std::uint64_t max, std::string_view unit = {});

}  // namespace pmcprof

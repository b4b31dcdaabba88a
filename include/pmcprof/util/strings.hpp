#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pmcprof {

std::vector<std::string> split(std::string_view s, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string_view trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
std::string to_lower(std::string_view s);

// Levenshtein distance, case-insensitive; used to suggest close event names.
std::size_t edit_distance(std::string_view a, std::string_view b);

// Up to `max` candidates close to `word`, best first (distance <= max(2, len/3), or a prefix).
std::vector<std::string> closest_matches(std::string_view word,
                                         const std::vector<std::string>& candidates,
                                         std::size_t max = 3);

// Parses a whole decimal unsigned integer; false on junk, sign, or overflow.
bool parse_u64(std::string_view s, unsigned long long& out);

}  // namespace pmcprof

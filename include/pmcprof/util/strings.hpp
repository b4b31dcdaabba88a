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

// "did you mean 'a', 'b'? " (each escaped as quote() does), or "" when `close` is empty: the
// start of a HINT line.
std::string did_you_mean(const std::vector<std::string>& close);

// Parses a whole decimal unsigned integer; false on junk, sign, or overflow.
bool parse_u64(std::string_view s, unsigned long long& out);

// Length of the valid UTF-8 sequence at the start of `s` (1-4), or 0 when its first byte does
// not start one (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, or a
// sequence cut short).
std::size_t utf8_sequence_length(std::string_view s);
bool is_valid_utf8(std::string_view s);

// Text from outside (command lines, thread names, cgroup paths, symbols) made safe to print:
// valid UTF-8 is kept, every byte that is not part of valid UTF-8 becomes the four characters
// \xHH (upper-case hex, as systemd writes bytes in unit names), and with `controls` so do
// the control characters U+0000-U+001F and U+007F (a thread name cannot move the cursor or
// split a line). The result is always valid UTF-8.
std::string escape_bytes(std::string_view s, bool controls = true);

// 'TEXT' for an error line: escaped like escape_bytes, and when longer than `max` characters,
// its first `max` characters and its length instead of the rest:
//   'xxxxxxxx…' (5,000 characters)
std::string quote(std::string_view s, std::size_t max = 64);
// The same without the quotes, for a whole line: "xxxx… (5,000 characters)", or with
// `how_to_see_all` said after the length: "xxxx… (5,000 characters; -v prints it whole)".
std::string shortened(std::string_view s, std::size_t max, std::string_view how_to_see_all = {});

}  // namespace pmcprof

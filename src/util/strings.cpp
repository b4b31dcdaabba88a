#include "pmcprof/util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <utility>

#include "pmcprof/util/error.hpp"

namespace pmcprof {

std::string errno_string(int err) {
  if (err == kKernelEnotsupp) return "not supported by the kernel here (ENOTSUPP, errno 524)";
  return std::strerror(err);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::size_t edit_distance(std::string_view a_in, std::string_view b_in) {
  const std::string a = to_lower(a_in), b = to_lower(b_in);
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> closest_matches(std::string_view word,
                                         const std::vector<std::string>& candidates,
                                         std::size_t max) {
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  const std::string lw = to_lower(word);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& c : candidates) {
    const std::string lc = to_lower(c);
    bool prefix = lw.size() >= 3 && starts_with(lc, lw);
    // The distance is at least the difference in length: most of a long list (a kernel's
    // 100,000 functions) is skipped without computing it.
    const std::size_t gap =
        c.size() > word.size() ? c.size() - word.size() : word.size() - c.size();
    if (gap > limit && !prefix) continue;
    std::size_t d = edit_distance(word, c);
    if (d <= limit || prefix) scored.emplace_back(prefix ? std::min(d, limit) : d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [d, c] : scored) {
    if (std::find(out.begin(), out.end(), c) != out.end()) continue;
    out.push_back(c);
    if (out.size() == max) break;
  }
  return out;
}

std::string did_you_mean(const std::vector<std::string>& close) {
  if (close.empty()) return {};
  std::vector<std::string> quoted;
  for (const auto& c : close) quoted.push_back(quote(c));
  return "did you mean " + join(quoted, ", ") + "? ";
}

bool parse_u64(std::string_view s, unsigned long long& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 10);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace pmcprof

namespace pmcprof {

std::size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  return n;
}

bool is_valid_utf8(std::string_view s) {
  while (!s.empty()) {
    const std::size_t n = utf8_sequence_length(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

std::string escape_bytes(std::string_view s, bool controls) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const std::size_t n = utf8_sequence_length(s);
    const auto c = static_cast<unsigned char>(s.front());
    if (n == 0 || (controls && n == 1 && (c < 0x20 || c == 0x7F))) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      s.remove_prefix(1);
      continue;
    }
    out.append(s.substr(0, n));
    s.remove_prefix(n);
  }
  return out;
}

namespace {

// Where to cut `s` to keep `max` characters (UTF-8 sequences, or single bytes where the text
// is not UTF-8), and how many characters it has.
std::pair<std::size_t, std::size_t> cut_point(std::string_view s, std::size_t max) {
  std::size_t chars = 0, cut = s.size();
  for (std::size_t i = 0; i < s.size(); ++chars) {
    if (chars == max) cut = i;
    const std::size_t n = utf8_sequence_length(s.substr(i));
    i += n ? n : 1;
  }
  return {cut, chars};
}

std::string characters(std::size_t n, std::string_view how_to_see_all = {}) {
  std::string count = std::to_string(n), grouped;
  for (std::size_t i = 0; i < count.size(); ++i) {
    if (i && (count.size() - i) % 3 == 0) grouped += ',';
    grouped += count[i];
  }
  if (!how_to_see_all.empty())
    grouped += " characters; " + std::string(how_to_see_all);
  else
    grouped += " characters";
  return "(" + grouped + ")";
}

}  // namespace

std::string shortened(std::string_view s, std::size_t max, std::string_view how_to_see_all) {
  const auto [cut, chars] = cut_point(s, max);
  if (chars <= max) return escape_bytes(s);
  return escape_bytes(s.substr(0, cut)) + "\u2026 " + characters(chars, how_to_see_all);
}

std::string quote(std::string_view s, std::size_t max) {
  const auto [cut, chars] = cut_point(s, max);
  if (chars <= max) return "'" + escape_bytes(s) + "'";
  return "'" + escape_bytes(s.substr(0, cut)) + "\u2026' " + characters(chars);
}

}  // namespace pmcprof

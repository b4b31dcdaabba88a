#include "pmcprof/probes/func_globs.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>
#include <utility>

#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr auto npos = std::string_view::npos;

// The end (one past its ']') of the [...] expression opening at s[open], or npos when it is
// not terminated (fnmatch then takes the '[' as a plain character).
std::size_t bracket_end(std::string_view s, std::size_t open) {
  std::size_t i = open + 1;
  if (i < s.size() && (s[i] == '!' || s[i] == '^')) ++i;
  if (i < s.size() && s[i] == ']') ++i;  // first, a ']' is a member, not the end
  while (i < s.size()) {
    if (s[i] == '[' && i + 1 < s.size() &&
        (s[i + 1] == ':' || s[i + 1] == '.' || s[i + 1] == '=')) {
      const std::size_t close = s.find(std::string{s[i + 1], ']'}, i + 2);
      if (close == npos) return npos;
      i = close + 2;
      continue;
    }
    if (s[i] == ']') return i + 1;
    ++i;
  }
  return npos;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' ||
         c == '@';
}

// The pattern without its glob syntax, for "did you mean": "burn_zz*" -> "burn_zz".
std::string literal_part(std::string_view pattern) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '[') {
      if (const auto end = bracket_end(pattern, i); end != npos) {
        i = end - 1;
        continue;
      }
    }
    if (pattern[i] != '*' && pattern[i] != '?') out += pattern[i];
  }
  return out;
}

std::size_t leading_underscores(std::string_view name) {
  const auto first = name.find_first_not_of('_');
  return first == npos ? name.size() : first;
}

std::string quoted_list(const std::vector<std::string>& names, std::size_t max) {
  std::vector<std::string> q;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) q.push_back(quote(names[i]));
  return join(q, ", ") + (names.size() > max ? ", ..." : "");
}

// "5 functions", "1 syscall".
std::string functions(std::size_t n, const FuncTarget& of) {
  const char* what = of.kind == FuncTarget::Kind::syscall ? " syscall" : " function";
  return std::to_string(n) + what + (n == 1 ? "" : "s");
}

}  // namespace

bool is_glob(std::string_view name) {
  return name.find_first_of("*?[") != npos;
}

bool valid_glob(std::string_view pattern) {
  if (pattern.empty()) return false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '[') {
      const auto end = bracket_end(pattern, i);
      if (end == npos || end == i + 2) return false;  // unterminated, or "[]"
      for (std::size_t j = i + 1; j + 1 < end; ++j)
        if (!name_char(pattern[j]) && std::string_view("!^-:[]=").find(pattern[j]) == npos)
          return false;
      i = end - 1;
    } else if (!name_char(c) && c != '*' && c != '?') {
      return false;
    }
  }
  return true;
}

std::size_t last_colon_outside_brackets(std::string_view text) {
  std::size_t last = npos;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') {
      if (const auto end = bracket_end(text, i); end != npos) i = end - 1;
    } else if (text[i] == ':') {
      last = i;
    }
  }
  return last;
}

std::vector<std::string> glob_matches(const std::string& pattern,
                                      const std::vector<std::string>& candidates) {
  std::vector<std::string> out;
  for (const auto& c : candidates)
    if (::fnmatch(pattern.c_str(), c.c_str(), 0) == 0) out.push_back(c);
  auto order = [](const std::string& n) {
    const std::size_t u = leading_underscores(n);
    return std::make_tuple(std::string_view(n).substr(u), u, std::string_view(n));
  };
  std::sort(out.begin(), out.end(),
            [&](const std::string& a, const std::string& b) { return order(a) < order(b); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

FuncTarget expanded_target(const FuncTarget& glob, const std::string& name) {
  FuncTarget t = glob;
  // The function part is the end of the text as written (parse_func_target takes it from
  // there): the rest, "./w:", "syscall:sys_", "kernel:", stays as the user wrote it.
  const std::string& text = glob.text;
  if (text.size() >= glob.name.size() &&
      text.compare(text.size() - glob.name.size(), glob.name.size(), glob.name) == 0)
    t.text = text.substr(0, text.size() - glob.name.size()) + name;
  else if (glob.kind == FuncTarget::Kind::syscall)
    t.text = "syscall:" + name;
  else if (glob.kind == FuncTarget::Kind::user)
    t.text = glob.binary + ":" + name;
  else
    t.text = name;
  t.name = name;
  return t;
}

UserError no_match_error(const FuncTarget& glob, const std::string& where,
                         const std::vector<std::string>& names, const std::string& list_hint) {
  std::vector<std::string> close;
  for (const auto& n : closest_matches(literal_part(glob.name), names))
    close.push_back(expanded_target(glob, n).text);
  return UserError("--func " + quote(glob.text) + " matches no " + where,
                   did_you_mean(close) + list_hint);
}

std::vector<DroppedRow> drop_duplicate_rows(std::vector<TargetRow>& rows) {
  std::vector<DroppedRow> dropped;
  std::vector<TargetRow> kept;
  std::map<std::string, std::size_t> first;  // identity -> its row in `kept`
  for (auto& r : rows) {
    const auto it = r.identity.empty() ? first.end() : first.find(r.identity);
    if (it != first.end() && (r.glob || kept[it->second].glob)) {
      dropped.push_back(
          {r.glob.value_or(*kept[it->second].glob), r.target.text, kept[it->second].target.text});
      continue;
    }
    if (it == first.end() && !r.identity.empty()) first.emplace(r.identity, kept.size());
    kept.push_back(std::move(r));
  }
  rows = std::move(kept);
  return dropped;
}

void check_row_limit(const std::vector<TargetRow>& rows, const std::vector<FuncTarget>& targets,
                     std::size_t regions, std::size_t limit) {
  const std::size_t total = rows.size() + regions;
  if (total <= limit) return;
  // The glob with the most matches is the one to narrow.
  std::map<std::size_t, std::vector<std::string>> of_glob;
  for (const auto& r : rows)
    if (r.glob) of_glob[*r.glob].push_back(r.target.name);
  const auto biggest = std::max_element(
      of_glob.begin(), of_glob.end(),
      [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  const std::string at_most = "more than the " + std::to_string(limit) + " a run can measure";
  if (biggest == of_glob.end())
    throw UserError("too many --func and --region (" + std::to_string(total) + "), " + at_most);
  const std::size_t n = biggest->second.size();
  const std::size_t rest = total - n;
  const std::string others =
      rest == 0 ? ", " + at_most
                : "; with the run's " +
                      (rest == 1 ? std::string("other function or region")
                                 : std::to_string(rest) + " other functions and regions") +
                      " that makes " + std::to_string(total) + ", " + at_most;
  const FuncTarget& glob = targets.at(biggest->first);
  throw UserError("--func " + quote(glob.text) + " matches " + functions(n, glob) + others,
                  "narrow the pattern (it matches " + quoted_list(biggest->second, 3) +
                      "; -v lists them all), or measure the rest in another run");
}

std::vector<std::string> describe_expansions(
    const std::vector<TargetRow>& rows, const std::vector<DroppedRow>& dropped,
    const std::vector<FuncTarget>& targets,
    const std::vector<std::pair<std::size_t, std::string>>& skipped) {
  std::vector<std::string> lines;
  for (std::size_t g = 0; g < targets.size(); ++g) {
    if (!is_glob(targets[g].name)) continue;
    std::vector<std::string> names;
    for (const auto& r : rows)
      if (r.glob == g) names.push_back(r.target.text);
    std::string line = "--func " + quote(targets[g].text) + " matched " +
                       functions(names.size(), targets[g]) +
                       (names.empty() ? "" : ": " + join(names, ", "));
    for (const auto& d : dropped)
      if (d.glob == g)
        line += "; " + d.text + (d.text == d.same_as ? " named twice" : " is " + d.same_as) +
                ": measured once";
    for (const auto& [i, note] : skipped)
      if (i == g) line += "; " + note;
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace pmcprof

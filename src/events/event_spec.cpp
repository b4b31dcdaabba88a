#include "pmcprof/events/event_spec.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

// libpfm4 names with all their attributes stay well below this.
constexpr std::size_t kMaxEventLength = 512;
constexpr const char* kEventHint = "write events as -e a,b,{c,d}:u ('pmcprof list' shows names)";

// Braces, blanks and control characters (a line break, an escape sequence) are in no event
// name nor modifier: refused, they can neither reach the resolver nor split an error line.
bool invalid_event_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return c == '{' || c == '}' || c == ' ' || u < 0x20 || u == 0x7F;
}

// Letters only, and either a lower-case letter (cycles:u, cycles:ukD) or nothing but the
// upper-case modifier letters (cycles:D, cycles:GH, {a,b}:W). Upper-case words such as ANY_P or
// READ are libpfm4 unit masks and stay part of the name.
bool looks_like_modifiers(std::string_view seg) {
  if (seg.empty()) return false;
  bool has_lower = false, only_upper_modifiers = true;
  for (char c : seg) {
    if (!std::isalpha(static_cast<unsigned char>(c))) return false;
    if (std::islower(static_cast<unsigned char>(c))) has_lower = true;
    if (std::string_view("GHDIPSW").find(c) == std::string_view::npos) only_upper_modifiers = false;
  }
  return has_lower || only_upper_modifiers;
}

EventModifiers parse_modifiers(std::string_view mods, std::string_view token) {
  EventModifiers m;
  m.text = std::string(mods);
  for (char c : mods) {
    // Each letter once (p up to three times): task-clock:uuuu is a typo, not a request.
    if (c != 'p' && std::count(mods.begin(), mods.end(), c) > 1)
      throw UserError(
          "modifier " + quote(std::string_view(&c, 1)) + " repeated in event " + quote(token),
          kEventHint);
    switch (c) {
      case 'u':
        m.user = true;
        break;
      case 'k':
        m.kernel = true;
        break;
      case 'h':
        m.hypervisor = true;
        break;
      case 'G':
        m.guest_only = true;
        break;
      case 'H':
        m.host_only = true;
        break;
      case 'D':
        m.pinned = true;
        break;
      case 'I':
        m.exclude_idle = true;
        break;
      case 'p':
        if (++m.precise > 3)
          throw UserError("too many 'p' modifiers in " + quote(token) + " (at most ppp)",
                          kEventHint);
        break;
      case 'P':
        m.precise_max = true;
        break;
      case 'S':
        m.sample_read = true;
        break;
      case 'e':
        m.exclusive = true;
        break;
      case 'W':
        m.weak = true;
        break;
      default:
        throw UserError("unknown modifier " + quote(std::string_view(&c, 1)) + " in event " +
                            quote(token) + " (valid: " + std::string(kModifierLetters) + ")",
                        kEventHint);
    }
  }
  return m;
}

void merge_modifiers(EventSpec& ev, const EventModifiers& group_mods) {
  if (group_mods.empty()) return;
  EventModifiers& m = ev.modifiers;
  m.user |= group_mods.user;
  m.kernel |= group_mods.kernel;
  m.hypervisor |= group_mods.hypervisor;
  m.guest_only |= group_mods.guest_only;
  m.host_only |= group_mods.host_only;
  m.pinned |= group_mods.pinned;
  m.exclude_idle |= group_mods.exclude_idle;
  m.precise = std::max(m.precise, group_mods.precise);
  m.precise_max |= group_mods.precise_max;
  m.sample_read |= group_mods.sample_read;
  m.exclusive |= group_mods.exclusive;
  // {a:u,b}:u is a:u: a letter the event has already is not repeated. W is the group's: its
  // members are ordinary events.
  const std::string before = m.text;
  for (char c : group_mods.text)
    if (c != 'W' && (c == 'p' ? std::count(m.text.begin(), m.text.end(), 'p') < m.precise
                              : m.text.find(c) == std::string::npos))
      m.text += c;
  if (m.text == before && group_mods.text.find_first_not_of('W') == std::string::npos) return;
  ev.text = (ev.slashed ? ev.text.substr(0, ev.text.rfind('/') + 1) : ev.name) + ":" + m.text;
}

// Splits at commas that are not inside braces or inside a pmu/.../ term list; validates brace
// balance.
std::vector<std::string> split_top_level(std::string_view text) {
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  bool in_terms = false;  // between the two slashes of pmu/terms/
  for (char c : text) {
    if (c == '/') in_terms = !in_terms;
    if (c == ',' && in_terms) {
      cur += c;
      continue;
    }
    if (c == '{') {
      if (depth > 0) throw UserError("nested groups are not allowed in " + quote(text), kEventHint);
      ++depth;
    } else if (c == '}') {
      if (depth == 0) throw UserError("unbalanced '}' in event list " + quote(text), kEventHint);
      --depth;
    }
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0)
    throw UserError("unterminated group in event list " + quote(text) + ": missing '}'",
                    kEventHint);
  items.push_back(cur);
  return items;
}

EventGroupSpec parse_group(std::string_view item, std::string_view whole) {
  auto close = item.rfind('}');
  std::string_view inner = item.substr(1, close - 1);
  std::string_view after = item.substr(close + 1);
  EventModifiers group_mods;
  if (!after.empty()) {
    if (std::any_of(after.begin(), after.end(), invalid_event_char))
      throw UserError("invalid character in group modifiers " + quote(item), kEventHint);
    if (after.front() != ':' || after.size() == 1)
      throw UserError("unexpected " + quote(after) + " after group in " + quote(whole), kEventHint);
    group_mods = parse_modifiers(after.substr(1), item);
  }
  if (trim(inner).empty())
    throw UserError("empty group '{}' in event list " + quote(whole), kEventHint);
  EventGroupSpec group;
  group.grouped = true;
  group.weak = group_mods.weak;
  for (const auto& tok : split_top_level(inner)) {
    if (trim(tok).empty()) throw UserError("empty event name in group " + quote(item), kEventHint);
    EventSpec ev = parse_event(trim(tok));
    merge_modifiers(ev, group_mods);
    group.events.push_back(std::move(ev));
  }
  return group;
}

}  // namespace

namespace {

bool lower_word(std::string_view w) {
  for (char c : w)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

bool all_modifier_letters(std::string_view seg) {
  for (char c : seg)
    if (std::string_view("ukhGHDIpPSeW").find(c) == std::string_view::npos) return false;
  return true;
}

// "key=value,key,..." between the slashes of pmu/terms/.
std::vector<EventTerm> parse_terms(std::string_view terms, std::string_view token) {
  std::vector<EventTerm> out;
  if (trim(terms).empty()) return out;
  for (const auto& raw : split(terms, ',')) {
    std::string_view t = trim(raw);
    if (t.empty())
      throw UserError("empty term in event " + quote(token),
                      "write terms as pmu/key=value,key=value/, e.g. cpu/event=0x3c,umask=0/");
    auto eq = t.find('=');
    if (eq == std::string_view::npos) {
      out.push_back({std::string(t), std::nullopt});
      continue;
    }
    if (eq == 0 || eq + 1 == t.size())
      throw UserError("malformed term " + quote(t) + " in event " + quote(token),
                      "write terms as key=value, e.g. event=0x3c");
    out.push_back({std::string(trim(t.substr(0, eq))), std::string(trim(t.substr(eq + 1)))});
  }
  return out;
}

// pmu/terms/ with optional modifiers after the closing slash (":u" or "u").
EventSpec parse_slashed(std::string_view token) {
  EventSpec ev;
  ev.text = std::string(token);
  ev.slashed = true;
  const auto first = token.find('/');
  const auto last = token.rfind('/');
  if (first == 0 || last == first)
    throw UserError("malformed event " + quote(token) + ": expected pmu/terms/",
                    "e.g. msr/tsc/ or cpu/event=0x3c,umask=0/");
  ev.name = std::string(token.substr(0, first));
  ev.terms = parse_terms(token.substr(first + 1, last - first - 1), token);
  std::string_view mods = token.substr(last + 1);
  if (!mods.empty() && mods.front() == ':') mods.remove_prefix(1);
  if (!mods.empty()) ev.modifiers = parse_modifiers(mods, token);
  return ev;
}

}  // namespace

EventSpec parse_event(std::string_view token) {
  token = trim(token);
  EventSpec ev;
  ev.text = std::string(token);
  if (token.empty()) throw UserError("empty event name", kEventHint);
  if (token.size() > kMaxEventLength)
    throw UserError("event name " + quote(token) + " is too long (at most " +
                        std::to_string(kMaxEventLength) + " characters)",
                    kEventHint);
  if (std::any_of(token.begin(), token.end(), invalid_event_char))
    throw UserError("invalid character in event name " + quote(token), kEventHint);
  if (token.find('/') != std::string_view::npos) return parse_slashed(token);
  auto colon = token.rfind(':');
  const bool modifiers = colon != std::string_view::npos && colon + 1 < token.size() &&
                         (colon == 0 || token[colon - 1] != ':') &&
                         looks_like_modifiers(token.substr(colon + 1));
  if (modifiers && !all_modifier_letters(token.substr(colon + 1)) && colon > 0 &&
      lower_word(token.substr(0, colon))) {
    // kmem:kmalloc (a tracepoint) or cycles:x (a typo): the resolver tells them apart.
    ev.name = std::string(token);
    try {
      parse_modifiers(token.substr(colon + 1), token);
    } catch (const UserError& e) {
      ev.modifier_error = e.what();
      ev.modifier_hint = e.hint();
    }
  } else if (modifiers) {
    ev.name = std::string(token.substr(0, colon));
    ev.modifiers = parse_modifiers(token.substr(colon + 1), token);
  } else {
    ev.name = std::string(token);
  }
  if (ev.name.empty() || ev.name.back() == ':')
    throw UserError("missing event name in " + quote(token), kEventHint);
  return ev;
}

std::vector<EventGroupSpec> parse_event_list(std::string_view text) {
  if (trim(text).empty()) throw UserError("empty event list given to -e", kEventHint);
  std::vector<EventGroupSpec> groups;
  for (const auto& raw : split_top_level(text)) {
    std::string_view item = trim(raw);
    if (item.empty()) throw UserError("empty event name in event list " + quote(text), kEventHint);
    if (item.front() == '{') {
      groups.push_back(parse_group(item, text));
      continue;
    }
    if (item.find('}') != std::string_view::npos)
      throw UserError("unbalanced '}' in event list " + quote(text), kEventHint);
    EventGroupSpec single;
    single.events.push_back(parse_event(item));
    groups.push_back(std::move(single));
  }
  // An event listed twice would be counted twice and reported as two rows (or, in function
  // mode, collide as one JSON key): refused.
  std::unordered_set<std::string> seen;
  for (const auto& g : groups)
    for (const auto& ev : g.events)
      if (!seen.insert(ev.text).second)
        throw UserError("event " + quote(ev.text) + " is listed twice in -e",
                        "count each event once");
  return groups;
}

std::vector<EventGroupSpec> default_events(bool system_wide, bool stalled_frontend,
                                           bool stalled_backend) {
  std::string list = system_wide ? "cpu-clock" : "task-clock";
  list += ",context-switches,cpu-migrations,page-faults,cycles";
  if (stalled_frontend) list += ",stalled-cycles-frontend";
  if (stalled_backend) list += ",stalled-cycles-backend";
  list += ",instructions,branches,branch-misses";
  return parse_event_list(list);
}

std::vector<EventGroupSpec> detailed_events(int level) {
  std::string list;
  if (level >= 1) list += "L1-dcache-loads,L1-dcache-load-misses,LLC-loads,LLC-load-misses";
  if (level >= 2)
    list +=
        ",L1-icache-loads,L1-icache-load-misses,dTLB-loads,dTLB-load-misses,iTLB-loads,"
        "iTLB-load-misses";
  if (level >= 3) list += ",L1-dcache-prefetches,L1-dcache-prefetch-misses";
  if (list.empty()) return {};
  return parse_event_list(list);
}

}  // namespace pmcprof

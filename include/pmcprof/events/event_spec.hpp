#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pmcprof {

// perf-style event modifiers (`cycles:u`, `instructions:kp`, `{a,b}:u`).
struct EventModifiers {
  bool user = false;          // u: count user space
  bool kernel = false;        // k: count the kernel
  bool hypervisor = false;    // h: count the hypervisor
  bool guest_only = false;    // G
  bool host_only = false;     // H
  bool pinned = false;        // D: always on the PMU (never multiplexed)
  bool exclude_idle = false;  // I
  int precise = 0;            // p, pp, ppp
  std::string text;           // the modifier string as written, "" when none

  bool restricts_privilege() const { return user || kernel || hypervisor; }
  bool empty() const { return text.empty(); }
};

// The valid modifier letters, for error messages and docs.
inline constexpr std::string_view kModifierLetters = "u k h G H D I p";

struct EventSpec {
  std::string text;  // as the user wrote it, e.g. "cycles:u"
  std::string name;  // without perf modifiers, e.g. "cycles" or "skl::INST_RETIRED:ANY_P"
  EventModifiers modifiers;
};

struct EventGroupSpec {
  std::vector<EventSpec> events;
  bool grouped = false;  // written as {a,b}: opened as one perf group
};

// Parses the -e argument: a comma list of events and {a,b} groups, each with optional
// perf-style modifiers. Throws UserError with one clear line on malformed input.
std::vector<EventGroupSpec> parse_event_list(std::string_view text);

// Splits one event token into name and perf modifiers ("cycles:uk" -> "cycles", "uk").
// A trailing ":xyz" counts as modifiers when it is letters only and has a lowercase letter;
// upper-case segments (INST_RETIRED:ANY_P) and key=value attributes are libpfm4's.
EventSpec parse_event(std::string_view token);

// perf stat's default set, used when no -e is given.
std::vector<EventGroupSpec> default_events();

}  // namespace pmcprof

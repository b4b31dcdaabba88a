#pragma once

#include <optional>
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
  bool precise_max = false;   // P: the highest precise level the PMU takes
  bool sample_read = false;   // S: PERF_SAMPLE_READ (sampling only: no effect on counts)
  bool exclusive = false;     // e: alone on the PMU while it counts
  bool weak = false;          // W (groups): fall back to separate events when the group
                              // cannot be scheduled on the PMU
  std::string text;           // the modifier string as written, "" when none

  bool restricts_privilege() const { return user || kernel || hypervisor; }
  bool empty() const { return text.empty(); }
};

// The valid modifier letters, for error messages and docs.
inline constexpr std::string_view kModifierLetters = "u k h G H D I p P S e W";

// One term of the pmu/term=value,.../ syntax: "event=0x3c", "umask=0", "name=x", or a bare
// "tsc" (an event the PMU names in sysfs).
struct EventTerm {
  std::string key;
  std::optional<std::string> value;  // absent for a bare term
  bool operator==(const EventTerm&) const = default;
};

struct EventSpec {
  std::string text;  // as the user wrote it, e.g. "cycles:u"
  std::string name;  // without perf modifiers, e.g. "cycles" or "skl::INST_RETIRED:ANY_P";
                     // for pmu/terms/: the PMU (or event) before the first '/'
  EventModifiers modifiers;
  bool slashed = false;          // written as name/terms/ (terms may be empty: msr/tsc/)
  std::vector<EventTerm> terms;  // the terms between the slashes
  // "sys:word" where word has letters that are no modifier (kmem:kmalloc, cycles:x) is a
  // tracepoint or a modifier typo: the resolver decides (a tracepoint that exists), and throws
  // this when it is none.
  std::string modifier_error;
  std::string modifier_hint;
};

struct EventGroupSpec {
  std::vector<EventSpec> events;
  bool grouped = false;  // written as {a,b}: opened as one perf group
  bool weak = false;     // {a,b}:W: opened one by one when the group does not fit the PMU
  // An -M metric's events: weak, and also opened one by one when the kernel refuses the
  // first (each then says whether it counts; the metric explains why it has no value).
  bool metric = false;
};

// Parses the -e argument: a comma list of events and {a,b} groups, each with optional
// perf-style modifiers; an event is a name (cycles, sched:sched_switch, skl::INST_RETIRED:ANY_P)
// or perf's pmu/term=value,.../ form (msr/tsc/, cpu/event=0x3c,umask=0/u,
// instructions/name=insn/). Throws UserError with one clear line on malformed input.
std::vector<EventGroupSpec> parse_event_list(std::string_view text);

// Splits one event token into name and perf modifiers ("cycles:uk" -> "cycles", "uk").
// A trailing ":xyz" counts as modifiers when it is letters only and has a lowercase letter;
// upper-case segments (INST_RETIRED:ANY_P) and key=value attributes are libpfm4's.
EventSpec parse_event(std::string_view token);

// perf stat's default set, used when no -e is given: with system_wide, cpu-clock instead of
// task-clock (as perf); stalled-cycles-frontend/-backend when the kernel's cpu PMU names them.
std::vector<EventGroupSpec> default_events(bool system_wide = false, bool stalled_frontend = false,
                                           bool stalled_backend = false);

// -d, -dd, -ddd: perf's detailed events (L1-dcache and LLC loads and misses; then L1-icache,
// dTLB and iTLB; then L1-dcache prefetches), appended to the event list.
std::vector<EventGroupSpec> detailed_events(int level);

}  // namespace pmcprof

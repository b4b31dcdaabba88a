#include "pmcprof/events/event_resolver.hpp"

#include <cctype>

// linux/perf_event.h first: libpfm4's own copy of the perf ABI then stands aside.
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>

#include <algorithm>
#include <cstring>

#include "pmcprof/events/core_pmu_events.hpp"
#include "pmcprof/events/event_catalog.hpp"
#include "pmcprof/events/sysfs_pmu.hpp"
#include "pmcprof/platform/tracefs.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

PfmLibrary::PfmLibrary() {
  int rc = pfm_initialize();
  if (rc != PFM_SUCCESS)
    throw SystemError(std::string("libpfm4 failed to initialize: ") + pfm_strerror(rc));
}

PfmLibrary::~PfmLibrary() {
  pfm_terminate();
}

std::string ResolvedEvent::display_name() const {
  const std::string& event = name.empty() ? spec.name : name;
  if (split_from && core_pmus.size() == 1)
    return core_pmus.front().name + "/" + event + "/" + spec.modifiers.text;
  return name.empty() ? spec.text : name;
}

bool ResolvedEvent::is_clock() const {
  return attr.type == PERF_TYPE_SOFTWARE &&
         (attr.config == PERF_COUNT_SW_CPU_CLOCK || attr.config == PERF_COUNT_SW_TASK_CLOCK);
}

bool ResolvedEvent::counts_instructions_or_cycles() const {
  if (attr.type == PERF_TYPE_HARDWARE) {
    const auto config = generic_config(attr);  // whichever core PMU counts it
    return config == PERF_COUNT_HW_INSTRUCTIONS || config == PERF_COUNT_HW_CPU_CYCLES;
  }
  std::string name = canonical;
  for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* known : {"INST_RETIRED", "INSTRUCTIONS_RETIRED", "INSTRUCTION_RETIRED",
                            "CPU_CYCLES", "CPU_CLK_UNHALTED", "CYCLES_NOT_IN_HALT"})
    if (name.find(known) != std::string::npos) return true;
  if (attr.type != PERF_TYPE_RAW) return false;
#if defined(__aarch64__)
  const auto code = attr.config & 0xffff;
  return code == 0x08 || code == 0x11;
#elif defined(__x86_64__)
  const auto code = attr.config & 0xff;
  return code == 0xc0 || code == 0x3c;
#else
  return false;
#endif
}

void apply_modifiers(const EventModifiers& mods, perf_event_attr& attr) {
  if (mods.exclusive) attr.exclusive = 1;
  // P asks for the highest precise level; counting has no use for precision, and the
  // counter set lowers it until the kernel accepts the event.
  if (mods.precise_max) attr.precise_ip = 3;
  if (mods.restricts_privilege()) {
    // perf semantics: naming any of u/k/h counts only the named levels.
    attr.exclude_user = !mods.user;
    attr.exclude_kernel = !mods.kernel;
    attr.exclude_hv = !mods.hypervisor;
  }
  if (mods.guest_only) attr.exclude_host = 1;
  if (mods.host_only) attr.exclude_guest = 1;
  if (mods.pinned) attr.pinned = 1;
  if (mods.exclude_idle) attr.exclude_idle = 1;
  if (mods.precise) attr.precise_ip = static_cast<unsigned>(mods.precise);
}

bool looks_like_tracepoint(std::string_view name) {
  const auto colon = name.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == name.size() ||
      name.find(':', colon + 1) != std::string_view::npos)
    return false;
  auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; };
  for (std::size_t i = 0; i < name.size(); ++i)
    if (i != colon && !ok(name[i]) && !(i > colon && name[i] >= 'A' && name[i] <= 'Z'))
      return false;
  return true;
}

EventResolver::EventResolver(const PfmLibrary& pfm, EventSources sources)
    : pfm_(pfm),
      sources_(std::move(sources)),
      core_pmus_(discover_core_pmus(sources_.sysfs_pmus)) {}

ResolvedEvent EventResolver::resolve(const EventSpec& spec) const {
  ResolvedEvent ev = [&] {
    if (spec.slashed) return resolve_slashed(spec);
    if (auto tp = resolve_tracepoint(spec)) return *tp;
    if (!spec.modifier_error.empty()) throw UserError(spec.modifier_error, spec.modifier_hint);
    return resolve_libpfm(spec);
  }();
  bind_core_pmus(ev, core_pmus_);
  return ev;
}

// PMU/event/ with one of perf's legacy names on a core PMU (cpu_atom/cycles/,
// cpu_core/LLC-load-misses/u), when the PMU has no sysfs event of that name: the hardware or
// cache event, on a heterogeneous machine with the PMU's type in config[63:32] (on a machine
// with one core PMU the kernel counts it there anyway). A name= term may follow.
std::optional<ResolvedEvent> EventResolver::resolve_core_legacy(const EventSpec& spec) const {
  const auto pmu = std::find_if(core_pmus_.begin(), core_pmus_.end(),
                                [&](const CorePmu& p) { return p.name == spec.name; });
  if (pmu == core_pmus_.end() || spec.terms.empty() || spec.terms.front().value)
    return std::nullopt;
  const std::string& word = spec.terms.front().key;
  for (std::size_t k = 1; k < spec.terms.size(); ++k)
    if (spec.terms[k].key != "name" || !spec.terms[k].value) return std::nullopt;
  for (const auto& named : sysfs_pmu_events(spec.name, sources_.sysfs_pmus))
    if (named == word) return std::nullopt;  // the PMU's own event of that name wins, as in perf
  EventSpec legacy = parse_event(word);
  if (legacy.name != word) return std::nullopt;  // "cycles:u" inside the slashes: not a name
  legacy.modifiers = spec.modifiers;
  ResolvedEvent ev;
  try {
    ev = resolve_libpfm(legacy);
  } catch (const UserError&) {
    return std::nullopt;  // not a legacy name: sysfs says what the PMU has
  }
  if (ev.attr.type != PERF_TYPE_HARDWARE && ev.attr.type != PERF_TYPE_HW_CACHE) return std::nullopt;
  ev.spec = spec;
  ev.pmu = pmu->name;
  ev.canonical = spec.text;
  for (std::size_t k = 1; k < spec.terms.size(); ++k) ev.name = *spec.terms[k].value;
  if (heterogeneous(core_pmus_)) ev.attr = attr_on_core_pmu(ev.attr, *pmu);
  return ev;
}

std::optional<ResolvedEvent> EventResolver::resolve_tracepoint(const EventSpec& spec) const {
  if (!looks_like_tracepoint(spec.name)) return std::nullopt;
  std::string tracefs = sources_.tracefs;
  if (tracefs.empty()) {
    try {
      tracefs = ensure_tracefs_mounted();
    } catch (const Error&) {
      return std::nullopt;  // no tracefs: no tracepoints, the name is libpfm4's to judge
    }
  }
  const auto colon = spec.name.find(':');
  auto id = read_tracepoint_id(tracefs, spec.name.substr(0, colon), spec.name.substr(colon + 1));
  if (!id) return std::nullopt;
  ResolvedEvent ev;
  ev.spec = spec;
  ev.pmu = "tracepoint";
  ev.canonical = spec.name;
  ev.attr.size = sizeof(ev.attr);
  ev.attr.type = PERF_TYPE_TRACEPOINT;
  ev.attr.config = *id;
  apply_modifiers(spec.modifiers, ev.attr);
  return ev;
}

ResolvedEvent EventResolver::resolve_slashed(const EventSpec& spec) const {
  ResolvedEvent ev;
  if (!sysfs_pmu_exists(spec.name, sources_.sysfs_pmus) && resolvable(spec.name)) {
    // event/terms/ on a named event (instructions/name=insn/): only name= applies.
    EventSpec plain = spec;
    plain.slashed = false;
    plain.terms.clear();
    ev = resolve(plain);
    ev.spec = spec;
    for (const auto& t : spec.terms) {
      if (t.key != "name" || !t.value)
        throw UserError("event " + quote(spec.text) + ": only name= applies to a named event (" +
                            quote(t.key) + " does not)",
                        "write raw encodings on a PMU, e.g. cpu/event=0x3c,umask=0/");
      ev.name = *t.value;
    }
    return ev;
  }
  if (auto legacy = resolve_core_legacy(spec)) return *legacy;
  SysfsEncoding enc = encode_sysfs_event(spec.name, spec.terms, spec.text, sources_.sysfs_pmus);
  ev.spec = spec;
  ev.pmu = spec.name;
  ev.canonical = spec.text;
  ev.attr = enc.attr;
  ev.name = enc.name;
  ev.scale = enc.scale;
  ev.unit = enc.unit;
  apply_modifiers(spec.modifiers, ev.attr);
  return ev;
}

bool EventResolver::resolvable(const std::string& name) const {
  try {
    EventSpec spec = parse_event(name);
    resolve(spec);
    return true;
  } catch (const Error&) {
    return false;
  }
}

ResolvedEvent EventResolver::resolve_libpfm(const EventSpec& spec) const {
  ResolvedEvent ev;
  ev.spec = spec;
  perf_event_attr attr{};
  char* fstr = nullptr;
  pfm_perf_encode_arg_t arg{};
  arg.attr = &attr;
  arg.fstr = &fstr;
  arg.size = sizeof(arg);
  int rc = pfm_get_os_event_encoding(spec.name.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT,
                                     &arg);
  if (rc != PFM_SUCCESS) {
    if (rc == PFM_ERR_NOTFOUND) {
      auto close = closest_matches(spec.name, known_names());
      std::string hint = close.empty()
                             ? "'pmcprof list' shows the events libpfm4 knows"
                             : "did you mean " + join(close, ", ") + "? ('pmcprof list' shows all)";
      throw UserError("unknown event " + quote(spec.name), hint);
    }
    throw UserError("event " + quote(spec.text) + ": " + pfm_strerror(rc),
                    "'pmcprof list " + shortened(spec.name, 64) +
                        "' shows its valid unit masks and attributes");
  }
  if (fstr) {
    ev.canonical = fstr;
    free(fstr);
    auto sep = ev.canonical.find("::");
    if (sep != std::string::npos) ev.pmu = ev.canonical.substr(0, sep);
  }
  attr.size = sizeof(attr);
  apply_modifiers(spec.modifiers, attr);
  ev.attr = attr;
  if (ev.is_clock()) ev.unit = "ns";
  return ev;
}

std::vector<ResolvedGroup> EventResolver::resolve(const std::vector<EventGroupSpec>& groups) const {
  std::vector<ResolvedGroup> out;
  std::size_t first = 0;  // flat index of the group's first event
  for (const auto& g : groups) {
    ResolvedGroup rg;
    rg.grouped = g.grouped;
    rg.weak = g.weak;
    rg.metric = g.metric;
    for (const auto& e : g.events) rg.events.push_back(resolve(e));
    bind_group_core_pmus(rg, first);
    first += rg.events.size();
    out.push_back(std::move(rg));
  }
  return out;
}

std::vector<std::string> EventResolver::known_names() const {
  std::vector<std::string> names;
  for (const auto& pmu : event_catalog(pfm_, /*present_only=*/true))
    for (const auto& e : pmu.events) names.push_back(e.name);
  return names;
}

}  // namespace pmcprof

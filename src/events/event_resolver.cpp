#include "pmcprof/events/event_resolver.hpp"

#include <cctype>

// linux/perf_event.h first: libpfm4's own copy of the perf ABI then stands aside.
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>

#include <cstring>

#include "pmcprof/events/event_catalog.hpp"
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

bool ResolvedEvent::is_clock() const {
  return attr.type == PERF_TYPE_SOFTWARE &&
         (attr.config == PERF_COUNT_SW_CPU_CLOCK || attr.config == PERF_COUNT_SW_TASK_CLOCK);
}

bool ResolvedEvent::counts_instructions_or_cycles() const {
  if (attr.type == PERF_TYPE_HARDWARE)
    return attr.config == PERF_COUNT_HW_INSTRUCTIONS || attr.config == PERF_COUNT_HW_CPU_CYCLES;
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

ResolvedEvent EventResolver::resolve(const EventSpec& spec) const {
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
  for (const auto& g : groups) {
    ResolvedGroup rg;
    rg.grouped = g.grouped;
    for (const auto& e : g.events) rg.events.push_back(resolve(e));
    out.push_back(std::move(rg));
  }
  return out;
}

std::vector<std::string> EventResolver::known_names() const {
  std::vector<std::string> names;
  for (const auto& pmu : event_catalog(pfm_, /*present_only=*/true)) {
    for (const auto& e : pmu.events) {
      // The generic perf PMU's names are written lower-case without a prefix, like perf.
      names.push_back(pmu.name == "perf" ? to_lower(e.name) : pmu.name + "::" + e.name);
    }
  }
  return names;
}

}  // namespace pmcprof

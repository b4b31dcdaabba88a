#include <nlohmann/json.hpp>
#include <ostream>

#include "pmcprof/cli/commands.hpp"
#include "pmcprof/cli/list_metrics.hpp"
#include "pmcprof/events/event_catalog.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/events/sysfs_pmu.hpp"
#include "pmcprof/platform/capabilities.hpp"
#include "pmcprof/platform/core_pmus.hpp"
#include "pmcprof/platform/tracefs.hpp"
#include "pmcprof/report/number_format.hpp"
#include "pmcprof/report/report.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

// Everything stat takes here: libpfm4's tables, the kernel's PMUs' named events, tracepoints.
std::vector<CatalogPmu> whole_catalog(const PfmLibrary& pfm, bool all_pmus) {
  auto pmus = event_catalog(pfm, !all_pmus);
  for (auto& pmu : kernel_pmu_catalog(kSysfsPmuRoot, discover_core_pmus(kSysfsPmuRoot)))
    pmus.push_back(std::move(pmu));
  try {
    // As stat does for a tracepoint: mounts tracefs when root can and it is not mounted.
    pmus.push_back(tracepoint_catalog(ensure_tracefs_mounted()));
  } catch (const Error& e) {
    // Its hint (run as root, mount it) is what would list them.
    pmus.push_back(unreadable_tracepoints(
        e.hint().empty() ? e.what() : e.what() + std::string("; ") + e.hint()));
  }
  return pmus;
}

// "" when the probe passed, else why not in doctor's words (its brief, else its detail).
std::string failure(const ProbeResult& r) {
  if (r.available) return {};
  return r.brief.empty() ? r.detail : r.brief;
}

// Whether this machine counts each section, by the doctor checks that decide it: the
// hardware one opens cycles as stat opens it, and fails here as stat's <not supported> does.
void mark_what_counts_here(std::vector<CatalogPmu>& pmus) {
  CountingChecks checks;
  if (needs_hardware_check(pmus)) checks.hardware_pmu = failure(probe_hardware_pmu());
  if (needs_software_check(pmus)) checks.software_events = failure(probe_software_events());
  mark_countable(pmus, checks);
}

std::string status(const CatalogPmu& pmu) {
  if (!pmu.present) return "[not present]";
  if (!pmu.countable()) return "[not supported here: " + pmu.not_countable + "]";
  return "[present]";
}

void print_text(const std::vector<CatalogPmu>& pmus, std::ostream& out) {
  for (const auto& pmu : pmus) {
    out << "[" << section_title(pmu.section) << "] " << pmu.name << ": " << pmu.description << " "
        << status(pmu) << "\n";
    for (const auto& e : pmu.events) {
      if (e.description.empty())
        out << "  " << e.name << "\n";
      else
        out << "  " << pad_right(e.name, 40) << " " << e.description << "\n";
      for (const auto& u : e.umasks)
        out << "    :" << pad_right(u.name, 37) << " " << u.description << "\n";
    }
    out << "\n";
  }
}

void print_json(const std::vector<CatalogPmu>& pmus, std::ostream& out) {
  nlohmann::ordered_json j;
  j["schema"] = kJsonSchema;
  j["type"] = "list";
  auto arr = nlohmann::ordered_json::array();
  for (const auto& pmu : pmus) {
    nlohmann::ordered_json p;
    p["pmu"] = pmu.name;
    p["section"] = section_title(pmu.section);
    p["description"] = pmu.description;
    p["present"] = pmu.present;
    p["countable"] = pmu.countable();
    if (!pmu.countable())
      p["reason"] = pmu.present ? pmu.not_countable : "not present on this machine";
    auto events = nlohmann::ordered_json::array();
    for (const auto& e : pmu.events) {
      nlohmann::ordered_json ev;
      ev["name"] = e.name;
      ev["description"] = e.description;
      auto umasks = nlohmann::ordered_json::array();
      for (const auto& u : e.umasks)
        umasks.push_back({{"name", u.name}, {"description", u.description}});
      ev["umasks"] = std::move(umasks);
      events.push_back(std::move(ev));
    }
    p["events"] = std::move(events);
    arr.push_back(std::move(p));
  }
  j["pmus"] = std::move(arr);
  out << j.dump(2) << "\n";
}

// One line for a filter that matches nothing, with a hint that finds it, when anything can.
[[noreturn]] void throw_no_match(const PfmLibrary& pfm, const ListOptions& opts,
                                 const std::vector<CatalogPmu>& listed) {
  // Nothing present matched: whatever the full libpfm4 table matches is of absent PMUs.
  const bool absent =
      !opts.all_pmus && !filter_catalog(event_catalog(pfm, false), opts.filter).empty();
  throw UserError("no event matches " + quote(opts.filter),
                  no_match_hint(opts.filter, listed, absent));
}

}  // namespace

int run_list_command(const ListOptions& opts, std::ostream& out) {
  PfmLibrary pfm;
  if (opts.metrics || opts.metric_groups) {
    if (!opts.filter.empty())
      throw UserError("list --metrics and --metricgroups take no filter",
                      "pmcprof list --metrics | grep WORD");
    return list_metrics(opts, EventResolver(pfm), out);
  }
  const auto catalog = whole_catalog(pfm, opts.all_pmus);
  auto pmus = filter_catalog(catalog, opts.filter);
  if (pmus.empty() && !opts.filter.empty()) throw_no_match(pfm, opts, catalog);
  if (opts.names_only) {
    for (const auto& pmu : pmus)
      for (const auto& e : pmu.events) out << e.name << "\n";
    return kExitOk;
  }
  mark_what_counts_here(pmus);
  if (opts.json)
    print_json(pmus, out);
  else
    print_text(pmus, out);
  return kExitOk;
}

}  // namespace pmcprof

#include <nlohmann/json.hpp>
#include <ostream>

#include "pmcprof/cli/commands.hpp"
#include "pmcprof/cli/list_metrics.hpp"
#include "pmcprof/events/event_catalog.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/report/number_format.hpp"
#include "pmcprof/report/report.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

// The name a user types: generic perf events lower-case and bare (like perf list),
// model-specific ones as PMU::EVENT.
std::string user_name(const CatalogPmu& pmu, const CatalogEvent& e) {
  return pmu.name == "perf" ? to_lower(e.name) : pmu.name + "::" + e.name;
}

void print_text(const std::vector<CatalogPmu>& pmus, std::ostream& out) {
  for (const auto& pmu : pmus) {
    out << pmu.name << ": " << pmu.description << (pmu.present ? " [present]" : " [not present]")
        << "\n";
    for (const auto& e : pmu.events) {
      out << "  " << pad_right(user_name(pmu, e), 40) << " " << e.description << "\n";
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
    p["description"] = pmu.description;
    p["present"] = pmu.present;
    auto events = nlohmann::ordered_json::array();
    for (const auto& e : pmu.events) {
      nlohmann::ordered_json ev;
      ev["name"] = user_name(pmu, e);
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

}  // namespace

int run_list_command(const ListOptions& opts, std::ostream& out) {
  PfmLibrary pfm;
  if (opts.metrics || opts.metric_groups) {
    if (!opts.filter.empty())
      throw UserError("list --metrics and --metricgroups take no filter",
                      "pmcprof list --metrics | grep WORD");
    return list_metrics(opts, EventResolver(pfm), out);
  }
  auto pmus = filter_catalog(event_catalog(pfm, !opts.all_pmus), opts.filter);
  if (pmus.empty() && !opts.filter.empty())
    throw UserError("no event or PMU matches '" + opts.filter + "'",
                    opts.all_pmus ? "try a shorter filter"
                                  : "try --all to include PMUs not present on this machine");
  if (opts.names_only) {
    for (const auto& pmu : pmus)
      for (const auto& e : pmu.events) out << user_name(pmu, e) << "\n";
  } else if (opts.json) {
    print_json(pmus, out);
  } else {
    print_text(pmus, out);
  }
  return kExitOk;
}

}  // namespace pmcprof

#include "pmcprof/report/doctor_report.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string_view>
#include <variant>

#include "pmcprof/report/report.hpp"

namespace pmcprof {

void write_capability_table(const CapabilityReport& report, std::ostream& out) {
  std::size_t width = std::string_view("CAPABILITY").size();
  for (const auto& c : report.capabilities) width = std::max(width, c.name.size());
  auto row = [&](std::string_view name, std::string_view available, std::string_view why) {
    out << name << std::string(width - name.size() + 2, ' ') << available
        << std::string(std::string_view("AVAILABLE").size() - available.size() + 2, ' ') << why
        << '\n';
  };
  row("CAPABILITY", "AVAILABLE", "WHY");
  for (const auto& c : report.capabilities) {
    row(c.name, c.result.available ? "yes" : "no", c.result.detail);
  }
}

std::string capability_report_json(const CapabilityReport& report) {
  nlohmann::ordered_json caps = nlohmann::ordered_json::array();
  for (const auto& c : report.capabilities) {
    nlohmann::ordered_json item;
    item["name"] = c.name;
    item["available"] = c.result.available;
    item["detail"] = c.result.detail;
    for (const auto& fact : c.result.facts) {
      std::visit([&](const auto& v) { item[fact.key] = v; }, fact.value);
    }
    caps.push_back(std::move(item));
  }
  nlohmann::ordered_json doc;
  doc["schema"] = kJsonSchema;
  doc["type"] = "doctor";
  doc["capabilities"] = std::move(caps);
  return doc.dump();
}

}  // namespace pmcprof

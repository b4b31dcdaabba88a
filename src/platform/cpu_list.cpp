#include "pmcprof/platform/cpu_list.hpp"

#include <algorithm>

#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

int parse_cpu_id(std::string_view s, std::string_view whole) {
  unsigned long long v;
  if (!parse_u64(trim(s), v) || v > 65535)
    throw UserError(
        "invalid CPU list " + quote(whole) + ": " + quote(s) + " is not a CPU number (0-65535)",
        "use a list like -C 0,2-3");
  return static_cast<int>(v);
}

}  // namespace

std::vector<int> parse_cpu_list(std::string_view text) {
  text = trim(text);
  if (text.empty()) throw UserError("empty CPU list", "use a list like -C 0,2-3");
  std::vector<int> cpus;
  for (const auto& part : split(text, ',')) {
    auto dash = part.find('-');
    if (dash == std::string::npos) {
      cpus.push_back(parse_cpu_id(part, text));
      continue;
    }
    int lo = parse_cpu_id(std::string_view(part).substr(0, dash), text);
    int hi = parse_cpu_id(std::string_view(part).substr(dash + 1), text);
    if (hi < lo)
      throw UserError("invalid CPU list " + quote(text) + ": range " + quote(part) +
                      " goes backwards");
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

void check_cpus_online(const std::vector<int>& requested, const std::vector<int>& online) {
  for (int c : requested) {
    if (!std::binary_search(online.begin(), online.end(), c))
      throw UserError("CPU " + std::to_string(c) + " is not online on this machine (online: " +
                          format_cpu_list(online) + ")",
                      "pick CPUs from the online list with -C");
  }
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace pmcprof

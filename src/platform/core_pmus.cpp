#include "pmcprof/platform/core_pmus.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>

#include "pmcprof/platform/cpu_list.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_trimmed(const fs::path& path) {
  auto text = read_file(path.string());
  if (!text) return std::nullopt;
  return std::string(trim(*text));
}

// perf's rule (is_pmu_core): its own name for x86 and s390, a `cpus` file for the others.
bool is_core_pmu(const fs::path& dir) {
  const std::string name = dir.filename().string();
  std::error_code ec;
  return name == "cpu" || name == "cpum_cf" || fs::is_regular_file(dir / "cpus", ec);
}

std::optional<CorePmu> read_core_pmu(const fs::path& dir) {
  CorePmu pmu;
  pmu.name = dir.filename().string();
  unsigned long long type = 0;
  auto type_text = read_trimmed(dir / "type");
  if (!type_text || !parse_u64(*type_text, type) || type > 0xffffffffull) return std::nullopt;
  pmu.type = static_cast<std::uint32_t>(type);
  if (auto cpus = read_trimmed(dir / "cpus")) {
    try {
      pmu.cpus = parse_cpu_list(*cpus);
    } catch (const UserError&) {
      return std::nullopt;  // not a list of CPUs: no PMU pmcprof could place
    }
    if (pmu.cpus.empty()) return std::nullopt;  // every CPU of it offline
  }
  pmu.model = read_trimmed(dir / "caps" / "pmu_name").value_or("");
  return pmu;
}

// Names compared with runs of digits by value ("armv8_pmuv3_2" < "armv8_pmuv3_10").
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t i_end = i, j_end = j;
      while (i_end < a.size() && digit(a[i_end])) ++i_end;
      while (j_end < b.size() && digit(b[j_end])) ++j_end;
      // Leading zeros aside, the longer run is the larger number.
      const auto x = a.substr(i, i_end - i), y = b.substr(j, j_end - j);
      const auto xs = x.find_first_not_of('0'), ys = y.find_first_not_of('0');
      const auto xv = xs == std::string::npos ? std::string() : x.substr(xs);
      const auto yv = ys == std::string::npos ? std::string() : y.substr(ys);
      if (xv.size() != yv.size()) return xv.size() < yv.size();
      if (xv != yv) return xv < yv;
      i = i_end;
      j = j_end;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

bool CorePmu::covers(int cpu) const {
  return cpus.empty() || std::binary_search(cpus.begin(), cpus.end(), cpu);
}

std::vector<CorePmu> discover_core_pmus(const std::string& root) {
  std::vector<CorePmu> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!is_core_pmu(entry.path())) continue;
    if (auto pmu = read_core_pmu(entry.path())) out.push_back(std::move(*pmu));
  }
  std::sort(out.begin(), out.end(),
            [](const CorePmu& a, const CorePmu& b) { return natural_less(a.name, b.name); });
  return out;
}

std::string describe_core_pmu(const CorePmu& pmu) {
  if (pmu.cpus.empty()) return pmu.name;
  return pmu.name + " (CPUs " + format_cpu_list(pmu.cpus) + ")";
}

}  // namespace pmcprof

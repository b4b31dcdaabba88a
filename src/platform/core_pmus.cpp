#include "pmcprof/platform/core_pmus.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string_view>

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

struct ArmPart {
  std::uint32_t implementer;
  std::uint32_t part;
  const char* name;
};

// Parts as arch/arm64/include/asm/cputype.h numbers them, named as lscpu prints them
// (util-linux, lscpu-arm.c: its "Model name"), so the two tools agree.
constexpr ArmPart kArmParts[] = {
    {0x41, 0xd03, "Cortex-A53"},     {0x41, 0xd04, "Cortex-A35"},
    {0x41, 0xd05, "Cortex-A55"},     {0x41, 0xd07, "Cortex-A57"},
    {0x41, 0xd08, "Cortex-A72"},     {0x41, 0xd09, "Cortex-A73"},
    {0x41, 0xd0a, "Cortex-A75"},     {0x41, 0xd0b, "Cortex-A76"},
    {0x41, 0xd0c, "Neoverse-N1"},    {0x41, 0xd0d, "Cortex-A77"},
    {0x41, 0xd40, "Neoverse-V1"},    {0x41, 0xd41, "Cortex-A78"},
    {0x41, 0xd42, "Cortex-A78AE"},   {0x41, 0xd44, "Cortex-X1"},
    {0x41, 0xd46, "Cortex-A510"},    {0x41, 0xd47, "Cortex-A710"},
    {0x41, 0xd48, "Cortex-X2"},      {0x41, 0xd49, "Neoverse-N2"},
    {0x41, 0xd4b, "Cortex-A78C"},    {0x41, 0xd4c, "Cortex-X1C"},
    {0x41, 0xd4d, "Cortex-A715"},    {0x41, 0xd4e, "Cortex-X3"},
    {0x41, 0xd4f, "Neoverse-V2"},    {0x41, 0xd80, "Cortex-A520"},
    {0x41, 0xd81, "Cortex-A720"},    {0x41, 0xd82, "Cortex-X4"},
    {0x41, 0xd84, "Neoverse-V3"},    {0x41, 0xd85, "Cortex-X925"},
    {0x41, 0xd87, "Cortex-A725"},    {0x41, 0xd8e, "Neoverse-N3"},
    {0x42, 0x516, "ThunderX2"},      {0x43, 0x0a1, "ThunderX-88XX"},
    {0x43, 0x0af, "ThunderX2-99xx"}, {0x46, 0x001, "A64FX"},
    {0x48, 0xd01, "TaiShan-v110"},   {0x4e, 0x003, "Denver-2"},
    {0x4e, 0x004, "Carmel"},         {0x51, 0x001, "Oryon"},
    {0x51, 0x800, "Falkor-V1/Kryo"}, {0x51, 0x801, "Kryo-V2"},
    {0x51, 0x802, "Kryo-3XX-Gold"},  {0x51, 0x803, "Kryo-3XX-Silver"},
    {0x51, 0x804, "Kryo-4XX-Gold"},  {0x51, 0x805, "Kryo-4XX-Silver"},
    {0x51, 0xc00, "Falkor"},         {0x61, 0x022, "Icestorm-M1"},
    {0x61, 0x023, "Firestorm-M1"},   {0x61, 0x032, "Blizzard-M2"},
    {0x61, 0x033, "Avalanche-M2"},   {0x6d, 0xd49, "Azure-Cobalt-100"},
    {0xc0, 0xac3, "Ampere-1"},       {0xc0, 0xac4, "Ampere-1a"},
};

// MIDR_EL1 as the kernel prints it: "0x00000000411fd070".
std::optional<std::uint64_t> parse_midr(std::string_view text) {
  if (text.starts_with("0x")) text.remove_prefix(2);
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The kinds of core among `cpus`, in the order first met ("Cortex-A55", or
// "Cortex-A55/Cortex-A76" for a PMU that spans two); "" when no CPU has a readable MIDR_EL1 (x86,
// or an older kernel without regs/identification).
std::string arm_cores_of(const std::vector<int>& cpus, const fs::path& cpu_root) {
  std::vector<std::string> names;
  for (int cpu : cpus) {
    auto text = read_trimmed(cpu_root / ("cpu" + std::to_string(cpu)) / "regs" / "identification" /
                             "midr_el1");
    auto midr = text ? parse_midr(*text) : std::nullopt;
    if (!midr) continue;
    auto name = arm_core_name(*midr);
    if (std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(std::move(name));
  }
  return join(names, "/");
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

std::string core_pmu_model(const CorePmu& pmu, const std::string& cpu_root) {
  return pmu.model.empty() ? arm_cores_of(pmu.cpus, cpu_root) : pmu.model;
}

std::string arm_core_name(std::uint64_t midr) {
  const auto implementer = static_cast<std::uint32_t>((midr >> 24) & 0xff);
  const auto part = static_cast<std::uint32_t>((midr >> 4) & 0xfff);
  for (const auto& p : kArmParts)
    if (p.implementer == implementer && p.part == part) return p.name;
  char buf[48];
  std::snprintf(buf, sizeof buf, "implementer 0x%02x part 0x%03x", implementer, part);
  return buf;
}

std::string describe_core_pmu(const CorePmu& pmu) {
  if (pmu.cpus.empty()) return pmu.name;
  return pmu.name + " (CPUs " + format_cpu_list(pmu.cpus) + ")";
}

}  // namespace pmcprof

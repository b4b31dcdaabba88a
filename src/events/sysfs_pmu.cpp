#include "pmcprof/events/sysfs_pmu.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> dir_names(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_trimmed(const std::string& path) {
  auto text = read_file(path);
  return text ? std::string(trim(*text)) : std::string();
}

// Sets the bits a format ("config:0-7,32-35", "config1:0-63", "config:12") describes, from
// the low bits of `value` upward.
void apply_format(perf_event_attr& attr, const std::string& format, std::uint64_t value,
                  const std::string& term, const std::string& text) {
  const auto colon = format.find(':');
  const std::string field = format.substr(0, colon);
  __u64* target = field == "config"    ? &attr.config
                  : field == "config1" ? &attr.config1
                  : field == "config2" ? &attr.config2
                                       : nullptr;
  if (!target || colon == std::string::npos)
    throw UserError("event " + quote(text) + ": term " + quote(term) +
                        " has a format pmcprof cannot use (" + quote(format) + ")",
                    "write the raw config instead: pmu/config=0x.../");
  int bit_of_value = 0;
  for (const auto& range : split(format.substr(colon + 1), ',')) {
    const auto dash = range.find('-');
    const int lo = std::atoi(std::string(range.substr(0, dash)).c_str());
    const int hi =
        dash == std::string::npos ? lo : std::atoi(std::string(range.substr(dash + 1)).c_str());
    for (int b = lo; b <= hi && b < 64; ++b, ++bit_of_value)
      if (bit_of_value < 64 && (value >> bit_of_value) & 1) *target |= __u64{1} << b;
  }
}

void apply_terms(SysfsEncoding& enc, const std::string& dir, const std::string& pmu,
                 const std::vector<EventTerm>& terms, const std::string& text, int depth);

// A bare term: an event the PMU names in events/ (itself terms), with its scale and unit.
void apply_named_event(SysfsEncoding& enc, const std::string& dir, const std::string& pmu,
                       const std::string& name, const std::string& text, int depth) {
  const std::string path = dir + "/events/" + name;
  auto body = read_file(path);
  if (!body || depth > 0) {
    auto names = sysfs_pmu_events(pmu, fs::path(dir).parent_path().string());
    throw UserError(
        "PMU " + quote(pmu) + " has no event " + quote(name) + " (in " + quote(text) + ")",
        names.empty() ? "'pmcprof list " + pmu + "/' shows what it has"
                      : "its events: " + join(names, ", "));
  }
  std::vector<EventTerm> inner;
  for (const auto& t : split(trim(*body), ',')) {
    auto eq = t.find('=');
    inner.push_back({std::string(trim(t.substr(0, eq))),
                     eq == std::string_view::npos ? std::optional<std::string>("1")
                                                  : std::string(trim(t.substr(eq + 1)))});
  }
  apply_terms(enc, dir, pmu, inner, text, depth + 1);
  if (auto scale = read_trimmed(path + ".scale"); !scale.empty())
    enc.scale = std::atof(scale.c_str());
  if (auto unit = read_trimmed(path + ".unit"); !unit.empty()) enc.unit = unit;
}

void apply_terms(SysfsEncoding& enc, const std::string& dir, const std::string& pmu,
                 const std::vector<EventTerm>& terms, const std::string& text, int depth) {
  for (const auto& t : terms) {
    if (!t.value) {
      apply_named_event(enc, dir, pmu, t.key, text, depth);
      continue;
    }
    if (t.key == "name") {
      enc.name = *t.value;
      continue;
    }
    const std::uint64_t v = parse_term_value(*t.value, text);
    if (t.key == "config")
      enc.attr.config = v;
    else if (t.key == "config1")
      enc.attr.config1 = v;
    else if (t.key == "config2")
      enc.attr.config2 = v;
    else if (auto format = read_trimmed(dir + "/format/" + t.key); !format.empty())
      apply_format(enc.attr, format, v, t.key, text);
    else
      throw UserError(
          "PMU " + quote(pmu) + " has no term " + quote(t.key) + " (in " + quote(text) + ")",
          "its terms: " + join(dir_names(dir + "/format"), ", ") +
              ", config, config1, config2, name");
  }
}

}  // namespace

std::uint64_t parse_term_value(const std::string& value, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const bool hex = value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X');
  const unsigned long long v = std::strtoull(value.c_str(), &end, hex ? 16 : 10);
  if (value.empty() || value[0] == '-' || errno != 0 || !end || *end != '\0')
    throw UserError("invalid term value " + quote(value) + " in event " + quote(text),
                    "values are decimal or 0x hexadecimal, e.g. event=0x3c");
  return v;
}

std::vector<std::string> sysfs_pmus(const std::string& root) {
  return dir_names(root);
}

bool sysfs_pmu_exists(const std::string& name, const std::string& root) {
  std::error_code ec;
  return !name.empty() && name.find('/') == std::string::npos &&
         fs::exists(root + "/" + name + "/type", ec);
}

std::vector<std::string> sysfs_pmu_events(const std::string& pmu, const std::string& root) {
  std::vector<std::string> out;
  for (auto& n : dir_names(root + "/" + pmu + "/events")) {
    const auto dot = n.rfind('.');
    if (dot != std::string::npos && (n.substr(dot) == ".scale" || n.substr(dot) == ".unit" ||
                                     n.substr(dot) == ".snapshot" || n.substr(dot) == ".per-pkg"))
      continue;
    out.push_back(std::move(n));
  }
  return out;
}

SysfsEncoding encode_sysfs_event(const std::string& pmu, const std::vector<EventTerm>& terms,
                                 const std::string& text, const std::string& root) {
  const std::string dir = root + "/" + pmu;
  if (!sysfs_pmu_exists(pmu, root))
    throw UserError("unknown PMU " + quote(pmu) + " in event " + quote(text),
                    "this machine's PMUs (" + root + "): " + join(sysfs_pmus(root), ", "));
  SysfsEncoding enc;
  enc.attr.size = sizeof(enc.attr);
  enc.attr.type = static_cast<std::uint32_t>(parse_term_value(read_trimmed(dir + "/type"), text));
  apply_terms(enc, dir, pmu, terms, text, 0);
  return enc;
}

}  // namespace pmcprof

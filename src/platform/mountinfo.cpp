#include "pmcprof/platform/mountinfo.hpp"

#include <algorithm>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

bool is_octal_digit(char c) {
  return c >= '0' && c <= '7';
}

// Whitespace-separated fields of one line; mountinfo never has empty fields.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

bool parse_int(std::string_view s, int& out) {
  unsigned long long v = 0;
  if (!parse_u64(s, v) || v > 0x7fffffffull) return false;
  out = static_cast<int>(v);
  return true;
}

// Parses one line; nullopt when it does not have the documented shape:
// ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
std::optional<MountEntry> parse_line(std::string_view line) {
  auto f = fields_of(line);
  if (f.size() < 9) return std::nullopt;
  MountEntry e;
  if (!parse_int(f[0], e.mount_id) || !parse_int(f[1], e.parent_id)) return std::nullopt;
  e.major_minor = std::string(f[2]);
  e.root = unescape_mount_field(f[3]);
  e.mount_point = unescape_mount_field(f[4]);
  e.mount_options = std::string(f[5]);
  // The optional fields run up to a lone "-"; there may be none.
  std::size_t i = 6;
  while (i < f.size() && f[i] != "-") e.optional_fields.emplace_back(f[i++]);
  // After the separator: FSTYPE SOURCE [SUPER_OPTIONS].
  if (i + 2 >= f.size()) return std::nullopt;
  ++i;
  e.fs_type = std::string(f[i]);
  e.source = unescape_mount_field(f[i + 1]);
  e.super_options = i + 2 < f.size() ? std::string(f[i + 2]) : std::string();
  return e;
}

// Mount options that say how, not which controllers: everything else on a v1 cgroup
// superblock names a controller (or a named hierarchy "name=...").
bool is_generic_cgroup_option(std::string_view opt) {
  static constexpr std::string_view kGeneric[] = {
      "rw", "ro", "noprefix", "clone_children", "xattr", "cpuset_v2_mode", "favordynmods"};
  if (starts_with(opt, "release_agent=")) return true;
  return std::find(std::begin(kGeneric), std::end(kGeneric), opt) != std::end(kGeneric);
}

}  // namespace

std::string unescape_mount_field(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && is_octal_digit(field[i + 1]) &&
        is_octal_digit(field[i + 2]) && is_octal_digit(field[i + 3])) {
      out.push_back(static_cast<char>(((field[i + 1] - '0') << 6) | ((field[i + 2] - '0') << 3) |
                                      (field[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

std::vector<MountEntry> parse_mountinfo(std::string_view text) {
  std::vector<MountEntry> mounts;
  for (const auto& line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    if (auto e = parse_line(line)) mounts.push_back(std::move(*e));
  }
  return mounts;
}

std::vector<MountEntry> read_self_mountinfo() {
  auto text = read_file("/proc/self/mountinfo");
  return text ? parse_mountinfo(*text) : std::vector<MountEntry>{};
}

std::vector<Cgroup1Hierarchy> find_cgroup1_hierarchies(const std::vector<MountEntry>& mounts) {
  std::vector<Cgroup1Hierarchy> out;
  for (const auto& m : mounts) {
    if (m.fs_type != "cgroup") continue;
    Cgroup1Hierarchy h{m.mount_point, {}};
    for (const auto& opt : split(m.super_options, ',')) {
      if (!opt.empty() && !is_generic_cgroup_option(opt)) h.controllers.push_back(opt);
    }
    out.push_back(std::move(h));
  }
  return out;
}

std::optional<Cgroup2Mount> find_cgroup2_mount(const std::vector<MountEntry>& mounts) {
  const MountEntry* best = nullptr;
  auto rank = [](const MountEntry& m) {
    if (m.mount_point == "/sys/fs/cgroup") return 0;
    if (m.mount_point == "/sys/fs/cgroup/unified") return 1;
    return 2;
  };
  for (const auto& m : mounts) {
    if (m.fs_type != "cgroup2") continue;
    if (!best || rank(m) < rank(*best)) best = &m;
  }
  if (!best) return std::nullopt;
  Cgroup2Mount c;
  c.mount_point = best->mount_point;
  c.root = best->root;
  c.v1_hierarchies = find_cgroup1_hierarchies(mounts);
  // A v1 hierarchy holding only a name ("name=systemd") takes no controllers away from v2,
  // so it alone does not make the layout hybrid.
  c.hybrid = std::any_of(c.v1_hierarchies.begin(), c.v1_hierarchies.end(), [](const auto& h) {
    return std::any_of(h.controllers.begin(), h.controllers.end(),
                       [](const std::string& ctl) { return !starts_with(ctl, "name="); });
  });
  return c;
}

}  // namespace pmcprof

#include "pmcprof/counters/cgroups.hpp"

#include <fcntl.h>
#include <limits.h>
#include <re2/re2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <unordered_set>

#include "pmcprof/platform/mountinfo.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

namespace pmcprof {

namespace fs = std::filesystem;

namespace {

std::uint64_t inode_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  return st.st_ino;
}

bool is_cgroup2_dir(const std::string& path) {
  struct statfs sfs {};
  return statfs(path.c_str(), &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

Cgroup open_one(const std::string& abs_path, const std::string& mount) {
  Cgroup cg;
  cg.abs_path = abs_path;
  cg.path = cgroup_relative_path(mount, abs_path);
  cg.id = inode_of(abs_path);
  if (!cg.id) throw UserError("cannot open cgroup " + quote(abs_path) + ": " + errno_string(errno));
  if (cg.path != "/")
    for (char c : cg.path) cg.level += c == '/';
  return cg;
}

}  // namespace

const char* to_string(CgroupBackend b) {
  switch (b) {
    case CgroupBackend::automatic:
      return "auto";
    case CgroupBackend::fd:
      return "fd";
    case CgroupBackend::bpf:
      return "bpf";
  }
  return "?";
}

CgroupBackend resolve_cgroup_backend(CgroupBackend requested, std::size_t n_cgroups,
                                     std::size_t fd_backend_fds) {
  if (requested != CgroupBackend::automatic) return requested;
  return n_cgroups > kCgroupBpfThreshold || fd_backend_fds > kCgroupFdBudget ? CgroupBackend::bpf
                                                                             : CgroupBackend::fd;
}

Fd Cgroup::open_dir() const {
  Fd fd(::open(abs_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw UserError("cannot open cgroup " + quote(abs_path) + ": " + errno_string(errno));
  return fd;
}

std::string cgroup2_mount_point() {
  auto mounts = read_self_mountinfo();
  if (auto m = find_cgroup2_mount(mounts)) return m->mount_point;
  auto v1 = find_cgroup1_hierarchies(mounts);
  throw UserError(
      std::string("no cgroup v2 hierarchy is mounted") +
          (v1.empty() ? "" : " (only cgroup v1 hierarchies, e.g. " + v1.front().mount_point + ")"),
      "mount one: mount -t cgroup2 none /sys/fs/cgroup/unified", kExitFailure);
}

std::string cgroup_relative_path(const std::string& mount, const std::string& abs_path) {
  std::string m = mount;
  while (m.size() > 1 && m.back() == '/') m.pop_back();
  if (abs_path == m) return "/";
  if (starts_with(abs_path, m + "/")) return abs_path.substr(m.size());
  return abs_path;
}

std::vector<Cgroup> open_cgroups(const std::vector<std::string>& names, const std::string& mount) {
  std::vector<Cgroup> out;
  for (const auto& raw : names) {
    std::string name(trim(raw));
    if (name.empty()) throw UserError("empty cgroup name in -G", "e.g. -G system.slice,user.slice");
    std::string abs = name;
    const bool absolute = !name.empty() && name[0] == '/' && starts_with(name, mount);
    if (!absolute) abs = mount + (name[0] == '/' ? "" : "/") + name;
    std::error_code ec;
    if (name.size() > PATH_MAX)
      throw UserError("cgroup " + quote(name) + " is too long for a path (at most " +
                          std::to_string(PATH_MAX) + " characters)",
                      "list them with: ls " + mount);
    if (!fs::is_directory(abs, ec)) {
      // An absolute path outside the v2 mount may be a v1 hierarchy: say so.
      if (name[0] == '/' && fs::is_directory(name, ec) && !is_cgroup2_dir(name))
        throw UserError("cgroup " + quote(name) +
                            " is not in the cgroup v2 hierarchy (mounted at " + mount +
                            "); v1 cgroups cannot be counted",
                        "give a path under " + mount);
      throw UserError("cgroup " + quote(name) + " does not exist (searched " + quote(abs) +
                          ", the cgroup v2 mount is " + mount + ")",
                      "list them with: ls " + mount);
    }
    if (!is_cgroup2_dir(abs))
      throw UserError(quote(abs) + " is not a cgroup v2 directory", "give a path under " + mount);
    const fs::path canonical = fs::canonical(abs, ec);
    if (ec) throw UserError("cannot open cgroup " + quote(abs) + ": " + ec.message());
    out.push_back(open_one(canonical.string(), mount));
  }
  return out;
}

void merge_duplicate_cgroups(std::vector<Cgroup>& cgroups) {
  std::unordered_set<std::uint64_t> seen;
  std::vector<Cgroup> out;
  for (auto& cg : cgroups)
    if (seen.insert(cg.id).second) out.push_back(std::move(cg));
  cgroups = std::move(out);
}

struct CgroupPattern::Impl {
  explicit Impl(const std::string& spec, const RE2::Options& o) : re(spec, o) {}
  RE2 re;
};

namespace {
RE2::Options pattern_options() {
  RE2::Options o;
  o.set_log_errors(false);  // the error goes into pmcprof's one line instead
  o.set_max_mem(8 << 20);   // compiled program and DFA cache
  return o;
}
constexpr const char* kPatternHint =
    "give a directory like system.slice or a pattern like '^/system.slice/.*'";
}  // namespace

CgroupPattern::CgroupPattern(const std::string& spec) {
  if (spec.size() > kMaxCgroupPattern)
    throw UserError("--for-each-cgroup " + quote(spec) +
                        " is not a cgroup directory, and too long for a regular expression (at "
                        "most " +
                        std::to_string(kMaxCgroupPattern) + " characters)",
                    kPatternHint);
  impl_ = std::make_unique<Impl>(spec, pattern_options());
  if (!impl_->re.ok())
    throw UserError("--for-each-cgroup " + quote(spec) +
                        " is neither a cgroup directory nor a valid regular expression (" +
                        shortened(impl_->re.error(), 80) + ")",
                    kPatternHint);
}

CgroupPattern::~CgroupPattern() = default;
CgroupPattern::CgroupPattern(CgroupPattern&&) noexcept = default;

bool CgroupPattern::search(const std::string& path) const {
  return RE2::PartialMatch(path, impl_->re);
}

std::vector<std::string> list_cgroup_dirs(const std::string& root_abs) {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (fs::recursive_directory_iterator
           it(root_abs, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::vector<Cgroup> expand_for_each_cgroup(const std::string& spec, const std::string& mount) {
  // A directory: relative to the mount ("D", "/D" as reports print it), or absolute.
  std::error_code ec;
  std::string dir = mount + (spec.empty() || spec[0] != '/' ? "/" : "") + spec;
  if (spec == "/" || spec.empty()) dir = mount;
  if (!fs::is_directory(dir, ec) && starts_with(spec, mount)) dir = spec;
  std::vector<Cgroup> out;
  if (dir.size() <= PATH_MAX && fs::is_directory(dir, ec) && is_cgroup2_dir(dir)) {
    for (const auto& d : list_cgroup_dirs(dir)) out.push_back(open_one(d, mount));
    if (out.empty())
      throw UserError("--for-each-cgroup " + quote(spec) + ": " + dir + " has no cgroups below it",
                      "give its parent, or name it with -G");
    return out;
  }
  const CgroupPattern pattern(spec);
  for (const auto& d : list_cgroup_dirs(mount)) {
    std::string rel = cgroup_relative_path(mount, d);
    if (pattern.search(rel)) out.push_back(open_one(d, mount));
  }
  if (out.empty())
    throw UserError("--for-each-cgroup " + quote(spec) + " matches no cgroup under " + mount,
                    "list them with: find " + mount + " -type d");
  return out;
}

void CgroupNames::rescan() {
  names_[inode_of(mount_)] = "/";
  alive_.clear();
  alive_[inode_of(mount_)] = true;
  for (const auto& d : list_cgroup_dirs(mount_)) {
    std::uint64_t id = inode_of(d);
    if (!id) continue;
    names_[id] = cgroup_relative_path(mount_, d);
    alive_[id] = true;
  }
}

std::string CgroupNames::name_of(std::uint64_t id) {
  if (auto it = names_.find(id); it != names_.end()) return it->second;
  rescan();
  if (auto it = names_.find(id); it != names_.end()) return it->second;
  return "cgroup-id:" + std::to_string(id);
}

bool CgroupNames::exists(std::uint64_t id) {
  rescan();
  return alive_.count(id) > 0;
}

}  // namespace pmcprof

#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/util/fd.hpp"

namespace pmcprof {

// One cgroup v2 directory pmcprof counts or filters on.
struct Cgroup {
  std::string path;         // relative to the v2 mount, "/" for the root, e.g. "/system.slice/x"
  std::string abs_path;     // on this machine's filesystem
  std::uint64_t id = 0;     // kernfs inode number: what bpf_get_current_cgroup_id() returns
  std::uint32_t level = 0;  // depth below the v2 root: "/" is 0, "/a" is 1

  // The directory fd perf_event_open(PERF_FLAG_PID_CGROUP) wants. Opened on demand and
  // closed by the caller: perf events keep their own reference to the cgroup, so thousands
  // of cgroups never hold thousands of descriptors.
  Fd open_dir() const;
};

// Finds the cgroup v2 mount (/proc/self/mountinfo). Throws UserError when there is none,
// naming what was found instead (v1 only).
std::string cgroup2_mount_point();

// Relative path under `mount` for an absolute path inside it ("/" for the mount itself).
std::string cgroup_relative_path(const std::string& mount, const std::string& abs_path);

// Opens the cgroups named by -G (comma list; paths relative to the v2 mount or absolute).
// Throws UserError for one that does not exist (naming the mount searched) or a v1 path.
std::vector<Cgroup> open_cgroups(const std::vector<std::string>& names, const std::string& mount);

// Keeps the first of cgroups that are the same directory (same id): a cgroup named twice, or
// by -G and matched by --for-each-cgroup, is counted once.
void merge_duplicate_cgroups(std::vector<Cgroup>& cgroups);

// A --for-each-cgroup regular expression (RE2 syntax, close to ECMAScript's without
// backreferences and lookaround): matched in time linear in the path whatever the pattern,
// compiled without recursion and within a memory bound, so no pattern can crash or hang
// pmcprof. Patterns longer than kMaxCgroupPattern characters are refused.
inline constexpr std::size_t kMaxCgroupPattern = 1024;
class CgroupPattern {
 public:
  // Throws UserError naming the pattern (shortened) and what is wrong with it.
  explicit CgroupPattern(const std::string& spec);
  ~CgroupPattern();
  CgroupPattern(CgroupPattern&&) noexcept;
  // True when the pattern matches anywhere in `path` (like std::regex_search).
  bool search(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// --for-each-cgroup: every cgroup below a directory (relative or absolute), or, when the
// argument is not a directory, every cgroup whose relative path matches it as a
// CgroupPattern. Throws UserError when nothing matches.
std::vector<Cgroup> expand_for_each_cgroup(const std::string& spec, const std::string& mount);

// Every cgroup directory below `root_abs` (recursively, not `root_abs` itself), sorted.
std::vector<std::string> list_cgroup_dirs(const std::string& root_abs);

// How per-cgroup counts are taken: perf_event_open per (cgroup, CPU, event), or per-CPU
// counters read in BPF at every context switch and charged to cgroups.
enum class CgroupBackend { automatic, fd, bpf };
const char* to_string(CgroupBackend b);  // "auto", "fd", "bpf"
// More cgroups than this and the automatic choice is the BPF backend: the fd backend needs
// cgroups x CPUs x events descriptors, the BPF backend CPUs x events.
// The fd backend is also left when it would need more descriptors than this.
inline constexpr std::size_t kCgroupBpfThreshold = 16;
inline constexpr std::size_t kCgroupFdBudget = 1024;
CgroupBackend resolve_cgroup_backend(CgroupBackend requested, std::size_t n_cgroups,
                                     std::size_t fd_backend_fds);

// Cgroup ids to paths, for reports: walks the v2 tree, and remembers ids whose cgroup has
// gone under their last known path.
class CgroupNames {
 public:
  explicit CgroupNames(std::string mount) : mount_(std::move(mount)) {}
  void remember(std::uint64_t id, const std::string& path) { names_[id] = path; }
  // Path for an id: a known one, else a fresh walk of the tree, else "cgroup-id:N".
  std::string name_of(std::uint64_t id);
  bool exists(std::uint64_t id);

 private:
  void rescan();
  std::string mount_;
  std::map<std::uint64_t, std::string> names_;
  std::map<std::uint64_t, bool> alive_;
};

}  // namespace pmcprof

#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pmcprof {

// One line of /proc/PID/mountinfo (see proc(5)). Path fields are unescaped ("\040" -> ' ').
struct MountEntry {
  int mount_id = 0;
  int parent_id = 0;
  std::string major_minor;                   // "0:38"
  std::string root;                          // root of the mount inside its filesystem
  std::string mount_point;                   // where it is mounted, relative to our root
  std::string mount_options;                 // per-mount: "rw,relatime"
  std::vector<std::string> optional_fields;  // "shared:1", "master:2", ...
  std::string fs_type;                       // "cgroup2", "tracefs", ...
  std::string source;                        // "cgroup2", "/dev/vda", "nodev"
  std::string super_options;                 // per-superblock: "rw,cpu,cpuacct"
};

// Undoes the kernel's octal escaping of space, tab, newline and backslash in mountinfo paths.
std::string unescape_mount_field(std::string_view field);

// Parses the whole text of a mountinfo file. Malformed lines are skipped rather than fatal:
// a doctor that dies on an odd mount would explain nothing.
std::vector<MountEntry> parse_mountinfo(std::string_view text);

// /proc/self/mountinfo, parsed; empty when it cannot be read.
std::vector<MountEntry> read_self_mountinfo();

// One cgroup v1 hierarchy: its mount point and controllers ("cpu", "cpuacct", "name=systemd").
struct Cgroup1Hierarchy {
  std::string mount_point;
  std::vector<std::string> controllers;
};

// Where the cgroup v2 (unified) hierarchy is mounted, and whether v1 hierarchies are mounted
// beside it. "hybrid" matters: tools that assume /sys/fs/cgroup is v2 (Debian's perf
// --for-each-cgroup) fail on such machines.
struct Cgroup2Mount {
  std::string mount_point;  // e.g. "/sys/fs/cgroup" (pure v2) or "/sys/fs/cgroup/unified"
  std::string root;         // subtree of the hierarchy visible there, usually "/"
  bool hybrid = false;      // v1 hierarchies with real controllers are mounted too
  std::vector<Cgroup1Hierarchy> v1_hierarchies;  // all of them, named-only ones included
};

// Every cgroup v1 hierarchy among `mounts`, in mount order.
std::vector<Cgroup1Hierarchy> find_cgroup1_hierarchies(const std::vector<MountEntry>& mounts);

// The cgroup2 mount; when several exist (bind mounts, containers) the conventional places
// /sys/fs/cgroup and then /sys/fs/cgroup/unified win, else the first one mounted.
std::optional<Cgroup2Mount> find_cgroup2_mount(const std::vector<MountEntry>& mounts);

}  // namespace pmcprof

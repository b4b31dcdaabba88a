#include "pmcprof/platform/tracefs.hpp"

#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr const char* kDefaultTracefs = "/sys/kernel/tracing";

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// tracefs exposes "events/" at its top; a bare mount point directory does not. Leaves errno
// from stat(2) on failure.
bool looks_like_tracefs(const std::string& dir) {
  return is_directory(dir + "/events");
}

// The subdirectories of `dir` that hold tracepoints (or categories of them), sorted.
std::vector<std::string> event_dirs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec)) out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> tracepoint_categories(const std::string& tracefs) {
  return event_dirs(tracefs + "/events");
}

std::vector<std::string> tracepoint_names(const std::string& tracefs, std::string_view category) {
  return event_dirs(tracefs + "/events/" + std::string(category));
}

std::optional<std::string> find_tracefs(const std::vector<MountEntry>& mounts) {
  const MountEntry* tracefs = nullptr;
  for (const auto& m : mounts) {
    if (m.fs_type != "tracefs") continue;
    if (!tracefs || m.mount_point == kDefaultTracefs) tracefs = &m;
  }
  if (tracefs) return tracefs->mount_point;
  for (const auto& m : mounts) {
    if (m.fs_type == "debugfs") return m.mount_point + "/tracing";
  }
  return std::nullopt;
}

std::string ensure_tracefs_mounted() {
  if (auto dir = find_tracefs(read_self_mountinfo())) {
    if (looks_like_tracefs(*dir)) return *dir;
    // Mounted but closed to us (tracefs is mode 0700): mounting again would not help.
    if (errno == EACCES || errno == EPERM) {
      throw UserError("cannot read tracefs at " + *dir + ": " + std::strerror(errno),
                      "run as root, or grant CAP_DAC_READ_SEARCH (tracefs is root's, mode 0700)",
                      kExitFailure);
    }
  }

  if (::mount("nodev", kDefaultTracefs, "tracefs", 0, nullptr) != 0) {
    const int err = errno;
    std::string hint = err == EPERM || err == EACCES
                           ? "run as root, or mount it: mount -t tracefs nodev /sys/kernel/tracing"
                       : err == ENODEV
                           ? "this kernel was built without tracefs (CONFIG_TRACING)"
                           : "mount it by hand: mount -t tracefs nodev /sys/kernel/tracing";
    throw UserError(std::string("tracefs is not mounted and mounting it at ") + kDefaultTracefs +
                        " failed: " + std::strerror(err),
                    std::move(hint), kExitFailure);
  }
  if (!looks_like_tracefs(kDefaultTracefs)) {
    throw UserError(std::string("mounted tracefs at ") + kDefaultTracefs + " but it has no events/",
                    "check `mount | grep tracefs`", kExitFailure);
  }
  return kDefaultTracefs;
}

std::optional<std::uint64_t> read_tracepoint_id(const std::string& tracefs,
                                                std::string_view category, std::string_view name) {
  auto text =
      read_file(tracefs + "/events/" + std::string(category) + "/" + std::string(name) + "/id");
  unsigned long long id = 0;
  if (!text || !parse_u64(trim(*text), id)) return std::nullopt;
  return id;
}

}  // namespace pmcprof

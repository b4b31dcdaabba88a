#include "pmcprof/platform/system.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <malloc.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "pmcprof/platform/cpu_list.hpp"
#include "pmcprof/platform/perf_event.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

void prepare_heap() {
  constexpr int kStep = 16 << 20;            // heap growth per sbrk (and what a free keeps)
  constexpr std::uintptr_t kHuge = 2 << 20;  // a transparent huge page (x86-64, arm64 4K)
  // Large blocks (libbpf's BTF buffers) from the heap, not a fresh mmap each time (2 x kStep:
  // glibc's largest threshold). A refused setting leaves glibc's default: nothing to undo.
  (void)mallopt(M_MMAP_THRESHOLD, 2 * kStep);
  (void)mallopt(M_TRIM_THRESHOLD, 4 * kStep);
  (void)mallopt(M_TOP_PAD, kStep);
  void* const heap_end = sbrk(0);
  if (heap_end == reinterpret_cast<void*>(-1)) return;  // no brk heap: nothing to prepare
  const auto before = reinterpret_cast<std::uintptr_t>(heap_end);
  // Grows the heap by about 2 x kStep, kept (under the trim threshold). Volatile: a compiler
  // may drop a malloc whose block is only freed.
  void* volatile block = malloc(kStep);
  free(block);
  void* const grown_end = sbrk(0);
  if (grown_end == reinterpret_cast<void*>(-1)) return;
  const auto after = reinterpret_cast<std::uintptr_t>(grown_end);
  const std::uintptr_t start = (before + kHuge - 1) & ~(kHuge - 1), end = after & ~(kHuge - 1);
  // A refusal (THP off, an old kernel) leaves 4 KiB pages: slower start-up, nothing else.
  if (end > start) (void)madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<int> online_cpus() {
  auto text = read_file("/sys/devices/system/cpu/online");
  if (text) {
    try {
      return parse_cpu_list(trim(*text));
    } catch (...) {
    }
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<int> cpus;
  for (int i = 0; i < n; ++i) cpus.push_back(i);
  return cpus;
}

int possible_cpu_count() {
  auto text = read_file("/sys/devices/system/cpu/possible");
  if (text) {
    try {
      auto cpus = parse_cpu_list(trim(*text));
      if (!cpus.empty()) return cpus.back() + 1;
    } catch (...) {
    }
  }
  return static_cast<int>(sysconf(_SC_NPROCESSORS_CONF));
}

std::optional<int> perf_event_paranoid() {
  auto text = read_file("/proc/sys/kernel/perf_event_paranoid");
  if (!text) return std::nullopt;
  try {
    return std::stoi(std::string(trim(*text)));
  } catch (...) {
    return std::nullopt;
  }
}

bool has_effective_capability(int cap) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  const int word = cap / 32, bit = cap % 32;
  if (word >= _LINUX_CAPABILITY_U32S_3) return false;
  return (data[word].effective >> bit) & 1u;
}

bool process_exists(pid_t pid) {
  if (pid <= 0) return false;
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

Fd open_pidfd(pid_t pid, bool thread) {
  constexpr unsigned kPidfdThread = O_EXCL;
  long fd = syscall(SYS_pidfd_open, pid, thread ? kPidfdThread : 0u);
  if (fd < 0 && thread && errno == EINVAL) return open_thread_exit_fd(pid);
  return Fd(fd < 0 ? -1 : static_cast<int>(fd));
}

Fd open_thread_exit_fd(pid_t tid) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const int fd = sys_perf_event_open(attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  return Fd(fd < 0 ? -1 : fd);
}

std::optional<pid_t> thread_group_of(pid_t id) {
  if (id <= 0) return std::nullopt;
  auto status = read_file("/proc/" + std::to_string(id) + "/status");
  if (!status) return std::nullopt;
  for (const auto& line : split(*status, '\n')) {
    if (!starts_with(line, "Tgid:")) continue;
    unsigned long long tgid = 0;
    if (parse_u64(trim(std::string_view(line).substr(5)), tgid)) return static_cast<pid_t>(tgid);
  }
  return std::nullopt;
}

std::vector<pid_t> process_threads(pid_t pid) {
  std::vector<pid_t> tids;
  std::string path = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(path.c_str());
  if (!dir) return tids;
  while (dirent* ent = readdir(dir)) {
    unsigned long long tid;
    if (!parse_u64(ent->d_name, tid)) continue;
    // A thread that has exited but is not reaped yet (a first thread that exited before the
    // others stays a zombie until the last one does) cannot be counted: left out.
    auto stat = read_file(path + "/" + ent->d_name + "/stat");
    const auto paren = stat ? stat->rfind(')') : std::string::npos;
    if (paren != std::string::npos && paren + 2 < stat->size() &&
        ((*stat)[paren + 2] == 'Z' || (*stat)[paren + 2] == 'X'))
      continue;
    tids.push_back(static_cast<pid_t>(tid));
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

std::uint64_t raise_nofile_limit(std::uint64_t needed) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur >= needed) return lim.rlim_cur;
  rlimit want = lim;
  want.rlim_cur = (lim.rlim_max == RLIM_INFINITY) ? needed : std::min<rlim_t>(needed, lim.rlim_max);
  if (setrlimit(RLIMIT_NOFILE, &want) == 0) return want.rlim_cur;
  return lim.rlim_cur;
}

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

std::uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

}  // namespace pmcprof

#include "pmcprof/platform/capabilities.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <memory>
#include <ostream>
#include <sstream>

#include "doctor_fentry.skel.h"
#include "pmcprof/platform/core_pmus.hpp"
#include "pmcprof/platform/cpu_list.hpp"
#include "pmcprof/platform/libbpf_support.hpp"
#include "pmcprof/platform/mountinfo.hpp"
#include "pmcprof/platform/perf_event.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/platform/tracefs.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/fd.hpp"
#include "pmcprof/util/strings.hpp"

// The uprobe probe places a probe on this function and calls it. extern "C", noinline and an
// opaque asm body keep it a real, called symbol under any optimisation level.
extern "C" __attribute__((noinline, used)) void pmcprof_doctor_uprobe_target() {
  asm volatile("" ::: "memory");
}

namespace pmcprof {

namespace {

constexpr const char* kEventSourceDir = "/sys/bus/event_source/devices";
constexpr const char* kVmlinuxBtf = "/sys/kernel/btf/vmlinux";
constexpr const char* kProbedKernelFunction = "vfs_read";

ProbeResult yes(std::string detail, std::vector<ProbeFact> facts = {}) {
  return {true, std::move(detail), std::move(facts), {}};
}
ProbeResult no(std::string detail, std::vector<ProbeFact> facts = {}) {
  return {false, std::move(detail), std::move(facts), {}};
}
// The same with its brief (ProbeResult::brief).
ProbeResult no_because(std::string brief, std::string detail, std::vector<ProbeFact> facts = {}) {
  return {false, std::move(detail), std::move(facts), std::move(brief)};
}

// "EPERM" of "EPERM (Operation not permitted)", for a brief.
std::string errno_symbol(int err) {
  const std::string name = errno_name(err);
  return name.substr(0, name.find(" ("));
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// ---- perf_event_open helpers ----

perf_event_attr counting_attr(std::uint32_t type, std::uint64_t config) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = type;
  attr.config = config;
  attr.disabled = 1;  // nothing counts until a probe enables it
  return attr;
}

// Opens the event; the Fd is invalid and `err` holds the errno on failure.
Fd open_event(perf_event_attr& attr, pid_t pid, int cpu, int& err) {
  int fd = sys_perf_event_open(attr, pid, cpu, -1, 0);
  err = fd < 0 ? -fd : 0;
  return Fd(fd < 0 ? -1 : fd);
}

// Opens `attr` for the calling task; when that is refused (kernel.perf_event_paranoid >= 2
// without CAP_PERFMON), retries counting user space only, as perf does. `scope` says which.
Fd open_for_self(perf_event_attr& attr, int& err, std::string& scope) {
  scope = "this task";
  Fd fd = open_event(attr, 0, -1, err);
  if (fd || (err != EACCES && err != EPERM)) return fd;
  perf_event_attr user_only = attr;
  user_only.exclude_kernel = 1;
  user_only.exclude_hv = 1;
  int retry_err = 0;
  fd = open_event(user_only, 0, -1, retry_err);
  if (!fd) return fd;  // keep the first errno: it names the real obstacle
  attr = user_only;
  err = 0;
  scope = "this task, user space";
  return fd;
}

// Enables `fd`, runs `work`, disables it and returns the count (nullopt when reading fails).
template <typename Work>
std::optional<std::uint64_t> count_around(const Fd& fd, Work&& work) {
  if (::ioctl(fd.get(), PERF_EVENT_IOC_RESET, 0) != 0) return std::nullopt;
  if (::ioctl(fd.get(), PERF_EVENT_IOC_ENABLE, 0) != 0) return std::nullopt;
  work();
  ::ioctl(fd.get(), PERF_EVENT_IOC_DISABLE, 0);
  std::uint64_t value = 0;
  if (::read(fd.get(), &value, sizeof(value)) != static_cast<ssize_t>(sizeof(value))) {
    return std::nullopt;
  }
  return value;
}

// A fraction of a millisecond of on-CPU work the compiler cannot remove.
void burn_cpu() {
  volatile std::uint64_t sink = 0;
  for (int i = 0; i < 200000; ++i) sink = sink + static_cast<std::uint64_t>(i);
}

std::vector<std::string> event_source_pmus() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kEventSourceDir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The PMU type number of a dynamic PMU ("kprobe", "uprobe"), nullopt when the kernel lacks it.
std::optional<std::uint32_t> dynamic_pmu_type(const std::string& pmu) {
  auto text = read_file(std::string(kEventSourceDir) + "/" + pmu + "/type");
  unsigned long long type = 0;
  if (!text || !parse_u64(trim(*text), type) || type > 0xffffffffull) return std::nullopt;
  return static_cast<std::uint32_t>(type);
}

// The core PMUs, each named with its model when sysfs gives one and with its CPUs on a
// heterogeneous machine: "cpu (skylake)", "cpu_core (alderlake_hybrid; CPUs 0-7)".
std::vector<std::string> core_pmus() {
  std::vector<std::string> out;
  const auto pmus = discover_core_pmus(kEventSourceDir);
  for (const auto& pmu : pmus) {
    std::vector<std::string> notes;
    if (auto model = core_pmu_model(pmu); !model.empty()) notes.push_back(std::move(model));
    if (heterogeneous(pmus)) notes.push_back("CPUs " + format_cpu_list(pmu.cpus));
    out.push_back(notes.empty() ? pmu.name : pmu.name + " (" + join(notes, "; ") + ")");
  }
  return out;
}

// ---- libbpf helpers ----

struct SkeletonDeleter {
  void operator()(doctor_fentry_bpf* skel) const { doctor_fentry_bpf__destroy(skel); }
};
using DoctorSkeleton = std::unique_ptr<doctor_fentry_bpf, SkeletonDeleter>;

struct BtfDeleter {
  void operator()(btf* b) const { btf__free(b); }
};

// Opens the doctor object with only `keep` (a program name) set to load: a program the kernel
// refuses would otherwise fail the whole object. Null and `err` set when opening fails.
DoctorSkeleton open_doctor_object(std::string_view keep, int& err) {
  DoctorSkeleton skel(doctor_fentry_bpf__open());
  if (!skel) {
    err = errno ? errno : EINVAL;
    return skel;
  }
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    bpf_program__set_autoload(prog, bpf_program__name(prog) == keep);
  }
  err = 0;
  return skel;
}

// The last non-empty line of a verifier log: where the kernel says why it refused.
std::string last_log_line(const char* log) {
  std::string last;
  for (const auto& line : split(log, '\n')) {
    if (!trim(line).empty()) last = std::string(trim(line));
  }
  return last;
}

struct LoadOutcome {
  int err = 0;          // positive errno, 0 on success
  std::string verdict;  // last verifier log line on failure
};

// Loads only program `name` of the doctor object, then (for `attach`) attaches it; everything is
// destroyed before returning.
LoadOutcome try_load(std::string_view name, bool attach) {
  LibbpfQuiet quiet;
  LoadOutcome out;
  DoctorSkeleton skel = open_doctor_object(name, out.err);
  if (!skel) return out;
  bpf_program* prog = bpf_object__find_program_by_name(skel->obj, std::string(name).c_str());
  std::vector<char> log(std::size_t{16} * 1024, '\0');
  if (prog) {
    // Level 1 so the verifier writes a log whenever it runs: an empty log then means the kernel
    // refused the program before verifying it.
    bpf_program__set_log_buf(prog, log.data(), log.size());
    bpf_program__set_log_level(prog, 1);
  }
  if (int rc = doctor_fentry_bpf__load(skel.get()); rc != 0) {
    out.err = -rc;
    out.verdict = last_log_line(log.data());
    return out;
  }
  if (attach && prog) {
    BpfLink link(bpf_program__attach(prog));
    if (!link) out.err = errno ? errno : EINVAL;
  }
  return out;
}

// ---- uprobe target location ----

std::optional<MappedLocation> locate_self_function(std::uint64_t address) {
  auto maps = read_file("/proc/self/maps");
  if (!maps) return std::nullopt;
  auto where = locate_in_maps(*maps, address);
  // A rebuilt binary shows as "PATH (deleted)": its inode lives on behind /proc/self/exe.
  constexpr std::string_view kDeleted = " (deleted)";
  if (where && where->path.size() > kDeleted.size() &&
      where->path.compare(where->path.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    where->path = "/proc/self/exe";
  }
  return where;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// pure helpers

std::string errno_name(int err) {
  if (err == kKernelEnotsupp) return errno_string(err);  // no libc name: errno_string's text
  const char* name = strerrorname_np(err);
  std::string out = name ? name : "errno " + std::to_string(err);
  return out + " (" + std::strerror(err) + ")";
}

std::string describe_perf_event_paranoid(int level) {
  const std::string prefix = std::to_string(level) + ": ";
  if (level <= -1) return prefix + "no restrictions: any user may count any event, CPU-wide too";
  if (level == 0) {
    return prefix +
           "users without CAP_PERFMON may count CPU-wide and in the kernel, but not read raw "
           "tracepoint data";
  }
  if (level == 1) {
    return prefix +
           "users without CAP_PERFMON may count their own processes, kernel included, but not "
           "CPU-wide";
  }
  if (level == 2) {
    return prefix +
           "users without CAP_PERFMON may count only the user space of their own processes";
  }
  return prefix +
         "users without CAP_PERFMON may not use perf_event_open at all (a distribution patch; "
         "upstream kernels treat it as 2)";
}

std::optional<MappedLocation> locate_in_maps(std::string_view maps_text, std::uint64_t address) {
  // START-END PERMS OFFSET DEV INODE [PATH]; PATH may hold spaces: it is the rest of the line.
  for (const auto& line : split(maps_text, '\n')) {
    std::istringstream in(line);
    std::string range, perms, offset_hex, dev;
    unsigned long long inode = 0;
    if (!(in >> range >> perms >> offset_hex >> dev >> inode)) continue;
    auto dash = range.find('-');
    if (dash == std::string::npos) continue;
    std::uint64_t start = 0, end = 0, offset = 0;
    try {
      start = std::stoull(range.substr(0, dash), nullptr, 16);
      end = std::stoull(range.substr(dash + 1), nullptr, 16);
      offset = std::stoull(offset_hex, nullptr, 16);
    } catch (...) {
      continue;
    }
    if (address < start || address >= end) continue;
    std::string path;
    std::getline(in, path);
    path = std::string(trim(path));
    // Anonymous and pseudo mappings ("[vdso]", "[heap]") have no file to probe.
    if (inode == 0 || path.empty() || path.front() == '[') return std::nullopt;
    return MappedLocation{path, address - start + offset};
  }
  return std::nullopt;
}

const Capability* CapabilityReport::find(std::string_view name) const {
  for (const auto& c : capabilities) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// live probes

ProbeResult probe_btf() {
  if (!path_exists(kVmlinuxBtf)) {
    return no_because(
        "no kernel BTF (CONFIG_DEBUG_INFO_BTF unset)",
        std::string(kVmlinuxBtf) + " is missing: kernel built without CONFIG_DEBUG_INFO_BTF");
  }
  LibbpfQuiet quiet;
  std::unique_ptr<btf, BtfDeleter> vmlinux(btf__parse(kVmlinuxBtf, nullptr));
  if (!vmlinux) {
    const int err = errno;
    return no_because("kernel BTF unreadable (" + errno_symbol(err) + ")",
                      std::string(kVmlinuxBtf) + " exists but does not parse: " + errno_name(err));
  }
  const auto types = static_cast<std::int64_t>(btf__type_cnt(vmlinux.get()));
  return yes(std::string(kVmlinuxBtf) + " parses: " + std::to_string(types) + " types",
             {{"types", types}});
}

ProbeResult probe_cap_bpf() {
  if (has_effective_capability(CAP_BPF)) return yes("CAP_BPF is in the effective set (capget)");
  std::string detail = "CAP_BPF is not in the effective set: BPF modes need it";
  detail += has_effective_capability(CAP_SYS_ADMIN) ? " (CAP_SYS_ADMIN is held and also allows BPF)"
                                                    : " (or CAP_SYS_ADMIN, also missing)";
  return no(detail);
}

ProbeResult probe_cap_perfmon() {
  if (has_effective_capability(CAP_PERFMON)) {
    return yes("CAP_PERFMON is in the effective set (capget): perf_event_paranoid does not apply");
  }
  std::string detail = "CAP_PERFMON is not in the effective set: kernel.perf_event_paranoid limits";
  detail += " what can be counted";
  if (has_effective_capability(CAP_SYS_ADMIN)) detail += " (CAP_SYS_ADMIN is held and lifts it)";
  return no(detail);
}

ProbeResult probe_hardware_pmu() {
  auto attr = counting_attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  int err = 0;
  std::string scope = "cpu 0";
  Fd fd = open_event(attr, -1, 0, err);
  if (!fd && (err == EACCES || err == EPERM)) {
    // CPU-wide counting needs privilege; the PMU may still be there for this task's user space.
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    scope = "this task, user space";
    fd = open_event(attr, 0, -1, err);
  }
  auto cores = core_pmus();
  if (fd) {
    std::string pmu =
        cores.empty() ? "a PMU not listed in " + std::string(kEventSourceDir) : join(cores, ", ");
    std::vector<ProbeFact> facts;
    if (!cores.empty()) facts.push_back({"pmu", cores.front()});
    return yes("cycles opens (" + scope + "): " + pmu, std::move(facts));
  }
  std::string detail = "perf_event_open(cycles, " + scope + ") fails with " + errno_name(err);
  std::string brief = "cycles refused (" + errno_symbol(err) + ")";
  if (cores.empty()) {
    detail += "; " + std::string(kEventSourceDir) + " has no cpu PMU (only " +
              join(event_source_pmus(), ", ") + "): no hardware counters are exposed, e.g. a VM";
    brief = "no PMU (no cpu PMU in " + std::string(kEventSourceDir) + ", e.g. a VM)";
  } else if (err == EACCES || err == EPERM) {
    detail +=
        "; " + join(cores, ", ") + " exists but needs CAP_PERFMON or a lower perf_event_paranoid";
    brief = "PMU refused (needs CAP_PERFMON or a lower perf_event_paranoid)";
  }
  return no_because(brief, detail);
}

ProbeResult probe_software_events() {
  auto attr = counting_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
  int err = 0;
  std::string scope;
  Fd fd = open_for_self(attr, err, scope);
  if (!fd)
    return no_because("task-clock refused (" + errno_symbol(err) + ")",
                      "perf_event_open(task-clock, " + scope + ") fails with " + errno_name(err));
  auto ns = count_around(fd, burn_cpu);
  if (!ns) return no("task-clock opens but cannot be enabled or read: " + errno_name(errno));
  if (*ns == 0)
    return no_because("task-clock counts nothing",
                      "task-clock opens but counted 0 ns over a CPU-bound loop");
  return yes("task-clock (" + scope + ") counted " + std::to_string(*ns) +
             " ns over a CPU-bound loop");
}

ProbeResult probe_kprobes() {
  auto type = dynamic_pmu_type("kprobe");
  if (!type) {
    return no_because("no kprobes (kernel without CONFIG_KPROBES)",
                      std::string("no kprobe PMU in ") + kEventSourceDir +
                          ": kernel built without CONFIG_KPROBES (or CONFIG_KPROBE_EVENTS)");
  }
  auto attr = counting_attr(*type, 0);
  attr.config1 = reinterpret_cast<std::uint64_t>(kProbedKernelFunction);  // kprobe_func
  attr.config2 = 0;                                                       // probe_offset
  int err = 0;
  Fd fd = open_event(attr, -1, 0, err);  // closing the fd removes the probe again
  const std::string what =
      std::string("kprobe PMU (type ") + std::to_string(*type) + ") on " + kProbedKernelFunction;
  if (!fd) {
    std::string detail = what + " fails with " + errno_name(err);
    if (err == EACCES || err == EPERM) detail += ": needs CAP_PERFMON (or CAP_SYS_ADMIN)";
    return no_because("kprobes refused (" + errno_symbol(err) + ")", detail,
                      {{"pmu_type", static_cast<std::int64_t>(*type)}});
  }
  return yes(what + " opens", {{"pmu_type", static_cast<std::int64_t>(*type)}});
}

ProbeResult probe_fentry() {
  const std::string target = std::string("fentry/") + kProbedKernelFunction;
  LoadOutcome fentry = try_load("doctor_fentry", /*attach=*/true);
  if (fentry.err == 0) return yes(target + " loads and attaches (BPF trampolines work)");

  std::string detail = target + " fails with " + errno_name(fentry.err);
  if (!fentry.verdict.empty()) {
    detail += " (verifier: \"" + fentry.verdict + "\")";
  } else if (fentry.err == EPERM || fentry.err == EACCES) {
    detail += " before the verifier ran (empty verifier log)";
  }
  // The same program type on a tracepoint tells a fentry-specific refusal from a BPF-wide one.
  LoadOutcome tp_btf = try_load("doctor_tp_btf", /*attach=*/false);
  std::string brief = "fentry refused (" + errno_symbol(fentry.err) + ")";
  if (tp_btf.err == 0) {
    detail += "; tp_btf/sched_switch loads, so the kernel refuses fentry specifically";
  } else {
    detail +=
        "; tp_btf/sched_switch fails too (" + errno_name(tp_btf.err) + "): BPF tracing is refused";
    brief = "BPF tracing refused (" + errno_symbol(fentry.err) + ")";
  }
  if ((fentry.err == EPERM || fentry.err == EACCES) &&
      (!has_effective_capability(CAP_BPF) || !has_effective_capability(CAP_PERFMON))) {
    detail += "; loading tracing programs needs CAP_BPF and CAP_PERFMON";
  }
  return no_because(brief, detail);
}

ProbeResult probe_uprobes() {
  auto type = dynamic_pmu_type("uprobe");
  if (!type) {
    return no_because("no uprobes (kernel without CONFIG_UPROBE_EVENTS)",
                      std::string("no uprobe PMU in ") + kEventSourceDir +
                          ": kernel built without CONFIG_UPROBE_EVENTS");
  }
  const auto address = reinterpret_cast<std::uint64_t>(&pmcprof_doctor_uprobe_target);
  auto where = locate_self_function(address);
  if (!where) return no("cannot find this binary's text in /proc/self/maps to place a uprobe");

  auto attr = counting_attr(*type, 0);
  attr.config1 = reinterpret_cast<std::uint64_t>(where->path.c_str());  // uprobe_path
  attr.config2 = where->file_offset;                                    // probe_offset
  int err = 0;
  Fd fd = open_event(attr, 0, -1, err);
  const std::string what = "uprobe PMU (type " + std::to_string(*type) + ") on " + where->path;
  const std::vector<ProbeFact> facts{{"pmu_type", static_cast<std::int64_t>(*type)}};
  if (!fd) {
    std::string detail = what + " fails with " + errno_name(err);
    if (err == EACCES || err == EPERM) detail += ": needs CAP_PERFMON (or CAP_SYS_ADMIN)";
    return no_because("uprobes refused (" + errno_symbol(err) + ")", detail, facts);
  }

  constexpr int kCalls = 3;
  auto hits = count_around(fd, [] {
    for (int i = 0; i < kCalls; ++i) pmcprof_doctor_uprobe_target();
  });
  if (!hits) return no(what + " opens but cannot be enabled or read: " + errno_name(errno), facts);
  std::string counted =
      "counted " + std::to_string(*hits) + " of " + std::to_string(kCalls) + " calls";
  if (*hits != kCalls)
    return no_because("uprobes miss calls (" + counted + ")", what + " opens but " + counted,
                      facts);
  return yes(what + " " + counted, facts);
}

ProbeResult probe_uprobe_multi() {
  if (!kernel_has_uprobe_multi())
    return no(
        "no multi-uprobe links (BPF_TRACE_UPROBE_MULTI, Linux 6.6+): each uprobe is a link of "
        "its own and detaching one waits for an RCU grace period, so runs with many user "
        "functions take longer to end");
  return yes("BPF_TRACE_UPROBE_MULTI links: with more than " + std::to_string(kUprobeMultiAbove) +
             " user points, the uprobes of one binary attach and detach at once");
}

ProbeResult probe_attach_cookie() {
  LibbpfQuiet quiet;
  if (!kernel_has_attach_cookie())
    return no_because("no bpf_get_attach_cookie (Linux 5.15)",
                      "kprobe and uprobe programs cannot call bpf_get_attach_cookie (Linux 5.15): "
                      "function mode carries each probed point's id in the attach cookie, so "
                      "--func and --region cannot run");
  return yes(
      "kprobe and uprobe programs call bpf_get_attach_cookie: each probed point's id "
      "(and a region's bits) travels in its attach cookie");
}

ProbeResult probe_task_storage() {
  LibbpfQuiet quiet;
  if (!kernel_has_task_storage())
    return no(
        "no BPF task local storage (Linux 5.11): a thread's calls in flight live in a "
        "preallocated hash instead (--thread-state hash), which holds a fixed number of "
        "threads");
  return yes(
      "BPF task local storage: a thread's calls in flight live with the task, for as "
      "many threads as there are");
}

ProbeResult probe_syscall_tracepoints() {
  const bool was_mounted = find_tracefs(read_self_mountinfo()).has_value();
  std::string tracefs;
  try {
    tracefs = ensure_tracefs_mounted();
  } catch (const Error& e) {
    return no_because("no tracefs (" + std::string(e.what()) + ")",
                      std::string(e.what()) + " (" + e.hint() + ")");
  }
  const std::string where =
      was_mounted ? "tracefs at " + tracefs : "tracefs mounted now at " + tracefs;
  std::vector<ProbeFact> facts{{"tracefs", tracefs}};
  auto id = read_tracepoint_id(tracefs, "syscalls", "sys_enter_getppid");
  if (!id) {
    std::string detail = "no syscalls:sys_enter_getppid in " + where;
    std::string brief = "no syscalls:sys_enter_getppid tracepoint";
    if (!path_exists(tracefs + "/events/syscalls")) {
      detail += ": kernel built without CONFIG_FTRACE_SYSCALLS";
      brief = "no syscall tracepoints (kernel without CONFIG_FTRACE_SYSCALLS)";
    }
    return no_because(brief, detail, facts);
  }
  auto attr = counting_attr(PERF_TYPE_TRACEPOINT, *id);
  int err = 0;
  Fd fd = open_event(attr, 0, -1, err);
  const std::string what =
      "syscalls:sys_enter_getppid (id " + std::to_string(*id) + ", " + where + ")";
  if (!fd)
    return no_because("syscall tracepoints refused (" + errno_symbol(err) + ")",
                      what + " fails with " + errno_name(err), facts);
  constexpr int kCalls = 3;
  // Another tracer attaching or detaching syscall tracepoints at that very moment can make
  // the kernel skip our calls once; a capability is there if a retry counts them all.
  std::optional<std::uint64_t> hits;
  for (int attempt = 0; attempt < 3 && (!hits || *hits != kCalls); ++attempt) {
    hits = count_around(fd, [] {
      for (int i = 0; i < kCalls; ++i) ::syscall(SYS_getppid);
    });
    if (!hits) break;
  }
  if (!hits) return no(what + " opens but cannot be enabled or read: " + errno_name(errno), facts);
  std::string counted =
      "counted " + std::to_string(*hits) + " of " + std::to_string(kCalls) + " calls";
  if (*hits != kCalls) return no(what + " opens but " + counted, facts);
  return yes(what + " " + counted, facts);
}

ProbeResult probe_cgroup_v2() {
  auto mounts = read_self_mountinfo();
  auto cg2 = find_cgroup2_mount(mounts);
  if (!cg2) {
    auto v1 = find_cgroup1_hierarchies(mounts);
    return no_because(
        v1.empty() ? "no cgroup v2 (nothing mounted)" : "no cgroup v2 (only cgroup v1 mounted)",
        v1.empty() ? "no cgroup2 mount in /proc/self/mountinfo (and no cgroup v1 either)"
                   : "no cgroup2 mount in /proc/self/mountinfo: only cgroup v1 hierarchies "
                     "are mounted (legacy layout)");
  }
  std::vector<ProbeFact> facts{{"mount_point", cg2->mount_point}, {"hybrid", cg2->hybrid}};
  struct statfs fs {};
  if (::statfs(cg2->mount_point.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
    return no(
        "mountinfo lists cgroup2 at " + cg2->mount_point + " but statfs does not see it there",
        facts);
  }
  std::string detail = "cgroup2 at " + cg2->mount_point;
  if (cg2->hybrid) {
    std::vector<std::string> controllers;
    bool perf_event_on_v1 = false;
    for (const auto& h : cg2->v1_hierarchies) {
      for (const auto& c : h.controllers) {
        controllers.push_back(c);
        perf_event_on_v1 = perf_event_on_v1 || c == "perf_event";
      }
    }
    detail += "; hybrid: cgroup v1 also mounted (" + join(controllers, ",") + ")";
    if (perf_event_on_v1) {
      detail += "; perf_event is bound to v1, so per-cgroup counting needs v1 cgroups";
    }
  } else {
    detail += "; unified: no cgroup v1 controllers mounted";
  }
  return yes(detail, facts);
}

ProbeResult probe_perf_event_paranoid() {
  auto level = perf_event_paranoid();
  if (!level) {
    return no("/proc/sys/kernel/perf_event_paranoid is missing: kernel built without perf events");
  }
  std::string detail = describe_perf_event_paranoid(*level);
  detail += has_effective_capability(CAP_PERFMON) || has_effective_capability(CAP_SYS_ADMIN)
                ? " (this process has CAP_PERFMON/CAP_SYS_ADMIN: not limited by it)"
                : " (this process lacks CAP_PERFMON: limited by it)";
  return yes(detail, {{"value", static_cast<std::int64_t>(*level)}});
}

ProbeResult probe_bpf_counter_read() {
  auto attr = counting_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
  attr.disabled = 0;  // the BPF program reads it while it runs
  int err = 0;
  std::string scope;
  Fd counter = open_for_self(attr, err, scope);
  if (!counter) {
    return no_because("task-clock refused (" + errno_symbol(err) + ")",
                      "perf_event_open(task-clock, " + scope + ") fails with " + errno_name(err));
  }

  LibbpfQuiet quiet;
  DoctorSkeleton skel = open_doctor_object("doctor_counter_read", err);
  if (!skel)
    return no_because("BPF refused (" + errno_symbol(err) + ")",
                      "opening the doctor BPF object fails with " + errno_name(err));
  const int ncpus = possible_cpu_count();
  bpf_map__set_max_entries(skel->maps.doctor_counters, static_cast<std::uint32_t>(ncpus));
  skel->rodata->target_tgid = static_cast<std::uint32_t>(::getpid());
  skel->rodata->target_syscall = SYS_getppid;
  if (int rc = doctor_fentry_bpf__load(skel.get()); rc != 0) {
    return no_because("BPF programs refused (" + errno_symbol(-rc) + ")",
                      "loading raw_tp/sys_enter fails with " + errno_name(-rc));
  }
  // A per-task counter is readable from whichever CPU the task runs on: same fd in every slot.
  const int map_fd = bpf_map__fd(skel->maps.doctor_counters);
  for (std::uint32_t cpu = 0; cpu < static_cast<std::uint32_t>(ncpus); ++cpu) {
    std::uint32_t value = static_cast<std::uint32_t>(counter.get());
    if (bpf_map_update_elem(map_fd, &cpu, &value, BPF_ANY) != 0) {
      return no("storing the counter fd in a PERF_EVENT_ARRAY fails with " + errno_name(errno));
    }
  }
  BpfLink link(bpf_program__attach(skel->progs.doctor_counter_read));
  if (!link) {
    const int attach_err = errno;
    return no_because("BPF programs refused (" + errno_symbol(attach_err) + ")",
                      "attaching raw_tp/sys_enter fails with " + errno_name(attach_err));
  }
  burn_cpu();
  ::syscall(SYS_getppid);
  link.reset();

  const auto* bss = skel->bss;
  if (bss->hits == 0) return no("raw_tp/sys_enter attached but never ran for getppid()");
  if (bss->read_error != 0) {
    const int read_err = static_cast<int>(-bss->read_error);
    return no_because(
        "BPF cannot read counters (" + errno_symbol(read_err) + ")",
        "bpf_perf_event_read_value(task-clock) fails in BPF with " + errno_name(read_err));
  }
  if (bss->read_counter == 0) return no("bpf_perf_event_read_value(task-clock) read 0 ns");
  return yes("a raw_tp program read task-clock with bpf_perf_event_read_value: " +
             std::to_string(bss->read_counter) + " ns");
}

CapabilityReport probe_all() {
  CapabilityReport report;
  auto add = [&](std::string name, ProbeResult (*probe)()) {
    report.capabilities.push_back({std::move(name), probe()});
  };
  add("btf", probe_btf);
  add("cap_bpf", probe_cap_bpf);
  add("cap_perfmon", probe_cap_perfmon);
  add("hardware_pmu", probe_hardware_pmu);
  add("software_events", probe_software_events);
  add("kprobes", probe_kprobes);
  add("fentry", probe_fentry);
  add("uprobes", probe_uprobes);
  add("uprobe_multi", probe_uprobe_multi);
  add("attach_cookie", probe_attach_cookie);
  add("task_storage", probe_task_storage);
  add("syscall_tracepoints", probe_syscall_tracepoints);
  add("cgroup_v2", probe_cgroup_v2);
  add("perf_event_paranoid", probe_perf_event_paranoid);
  add("bpf_counter_read", probe_bpf_counter_read);
  return report;
}

}  // namespace pmcprof

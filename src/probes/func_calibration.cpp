#include "pmcprof/probes/func_calibration.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "calib_trigger.skel.h"
#include "pmcprof/platform/capabilities.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"

// The uprobe calibration target: one `ret` and nothing else (the same mnemonic on x86-64 and
// arm64), so a call of it is the probe pair's own cost.
asm(".text\n"
    ".globl pmcprof_calibration_target\n"
    ".type pmcprof_calibration_target, @function\n"
    "pmcprof_calibration_target:\n"
    "  ret\n"
    ".size pmcprof_calibration_target, .-pmcprof_calibration_target\n");
extern "C" void pmcprof_calibration_target();

namespace pmcprof {

namespace {

constexpr int kCalls = 64;
constexpr const char* kKernelTarget = "bpf_fentry_test1";

struct TriggerDeleter {
  void operator()(calib_trigger_bpf* s) const { calib_trigger_bpf__destroy(s); }
};

// Cheap syscalls for the tracepoint calibration, by number.
struct CheapSyscall {
  const char* name;
  long nr;
};
constexpr CheapSyscall kCheapSyscalls[] = {{"getppid", SYS_getppid}, {"getpid", SYS_getpid},
                                           {"gettid", SYS_gettid},   {"getuid", SYS_getuid},
                                           {"getgid", SYS_getgid},   {"geteuid", SYS_geteuid}};

const CheapSyscall* free_syscall(const std::vector<std::string>& busy) {
  for (const auto& s : kCheapSyscalls)
    if (std::find(busy.begin(), busy.end(), s.name) == busy.end()) return &s;
  return nullptr;
}

// Makes `kCalls` calls of the calibration target for `backend`. Throws SystemError.
void make_calls(ProbeBackend backend, const CheapSyscall* syscall_target) {
  switch (backend) {
    case ProbeBackend::uprobe: {
      // Through a volatile pointer: the calls must happen, and not be inlined away.
      void (*volatile target)() = pmcprof_calibration_target;
      for (int i = 0; i < kCalls; ++i) target();
      return;
    }
    case ProbeBackend::tracepoint:
      for (int i = 0; i < kCalls; ++i) syscall(syscall_target->nr);
      return;
    case ProbeBackend::kprobe:
    case ProbeBackend::fentry: {
      std::unique_ptr<calib_trigger_bpf, TriggerDeleter> trigger(
          calib_trigger_bpf__open_and_load());
      if (!trigger)
        throw SystemError(std::string("cannot call ") + kKernelTarget +
                          " (a BPF test run of a fentry program): " + errno_string(errno));
      const int fd = bpf_program__fd(trigger->progs.calib_trigger);
      for (int i = 0; i < kCalls; ++i) {
        LIBBPF_OPTS(bpf_test_run_opts, opts);
        if (bpf_prog_test_run_opts(fd, &opts) != 0)
          throw SystemError(std::string("cannot call ") + kKernelTarget + ": " +
                            errno_string(errno));
      }
      return;
    }
  }
}

// Attaches the calibration id's probe pair for `backend`. Throws on failure.
struct CalibrationProbe {
  std::vector<BpfLink> links;
  FuncObject::FentryAttachment fentry;
};

CalibrationProbe attach_probe(const FuncObject& object, ProbeBackend backend,
                              const CheapSyscall* syscall_target, std::string& probed) {
  CalibrationProbe p;
  const std::uint32_t id = object.calibration_id();
  switch (backend) {
    case ProbeBackend::uprobe: {
      auto where = locate_in_maps(read_file("/proc/self/maps").value_or(""),
                                  reinterpret_cast<std::uint64_t>(&pmcprof_calibration_target));
      if (!where) throw SystemError("pmcprof's own calibration target is not in a mapped file");
      probed = "an empty function in pmcprof";
      p.links = object.attach_uprobe(id, where->path, where->file_offset, ::getpid());
      break;
    }
    case ProbeBackend::kprobe:
      probed = kKernelTarget;
      p.links = object.attach_kprobe(id, kKernelTarget);
      break;
    case ProbeBackend::fentry:
      probed = kKernelTarget;
      p.fentry = object.attach_fentry(id, kKernelTarget);
      break;
    case ProbeBackend::tracepoint:
      if (!syscall_target)
        throw SystemError("every cheap syscall is a target: nothing left to calibrate on");
      probed = std::string("syscall:") + syscall_target->name + " (its own work included)";
      p.links = object.attach_syscall(id, syscall_target->name);
      break;
  }
  return p;
}

}  // namespace

std::vector<std::uint64_t> bias_values(const ProbeBias& bias) {
  std::vector<std::uint64_t> values;
  for (const auto& v : bias.events) values.push_back(v.value_or(0));
  values.push_back(bias.wall_ns);
  values.push_back(bias.oncpu_ns);
  return values;
}

std::optional<std::uint64_t> median(std::vector<std::uint64_t> values) {
  if (values.empty()) return std::nullopt;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

ProbeBias calibrate_backend(const FuncObject& object, ProbeBackend backend,
                            const std::vector<std::uint32_t>& func_ids, bool compensate,
                            LinkReaper& reaper, const std::vector<std::string>& busy_syscalls) {
  ProbeBias bias;
  bias.backend = backend;
  const CheapSyscall* syscall_target = free_syscall(busy_syscalls);
  try {
    object.reset_calibration();
    CalibrationProbe probe = attach_probe(object, backend, syscall_target, bias.probed);
    make_calls(backend, syscall_target);
    // Only pmcprof's own calls reach the calibration id, and it makes no more: the samples
    // are final while the probe is detached in the background.
    reaper.reap(std::move(probe.links), {});
    reaper.reap(std::move(probe.fentry.links), {std::move(probe.fentry.twin)});
  } catch (const Error& e) {
    bias.why_not = e.what();
    return bias;
  }
  const auto samples = object.calibration_samples();
  const std::size_t n_events = object.events().size();
  std::vector<std::vector<std::uint64_t>> per_event(n_events);
  std::vector<std::uint64_t> wall, oncpu;
  for (const auto& s : samples) {
    wall.push_back(s.wall_ns);
    if (s.not_counted) continue;
    oncpu.push_back(s.oncpu_ns);
    for (std::size_t i = 0; i < n_events; ++i)
      if (s.measured & (1u << i)) per_event[i].push_back(s.delta[i]);
  }
  if (oncpu.empty()) {
    bias.why_not = "no calibration call was measured (" + std::to_string(samples.size()) + " of " +
                   std::to_string(kCalls) + " seen)";
    return bias;
  }
  bias.calibrated = true;
  bias.calls = oncpu.size();
  bias.wall_ns = median(wall).value_or(0);
  bias.oncpu_ns = median(oncpu).value_or(0);
  for (auto& v : per_event) bias.events.push_back(median(v));
  const auto values = bias_values(bias);
  // A tracepoint pair cannot be calibrated on an empty syscall: its figure includes
  // getppid's work, so it is stated but not taken off other syscalls.
  bias.subtracted = compensate && backend != ProbeBackend::tracepoint;
  if (bias.subtracted)
    for (std::uint32_t id : func_ids) object.set_bias(id, values);
  return bias;
}

}  // namespace pmcprof

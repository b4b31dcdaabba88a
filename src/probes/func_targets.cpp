#include "pmcprof/probes/func_targets.hpp"

#include <array>
#include <filesystem>
#include <string_view>

#include "pmcprof.h"
#include "pmcprof/platform/tracefs.hpp"
#include "pmcprof/probes/elf_symbols.hpp"
#include "pmcprof/probes/kernel_functions.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

std::string denied_kernel_function(const std::string& symbol) {
  // Compiler clones (perf_event_read_local.constprop.0, migrate_enable.isra.0) are the same
  // code: judged by their base name.
  const std::string name = symbol.substr(0, symbol.find('.'));
  // What pmcprof's programs call at every entry, exit and context switch, and the machinery
  // that runs them. A kprobe there fires inside pmcprof's own code (counted as re-entered,
  // never measured); the kernel blocks some of these, pmcprof refuses all of them up front.
  static constexpr std::array<std::string_view, 10> kExact = {
      "perf_event_read_local", "perf_event_output", "perf_event_output_forward",
      "trace_call_bpf",        "migrate_disable",   "migrate_enable",
      "__rcu_read_lock",       "__rcu_read_unlock", "preempt_count_add",
      "preempt_count_sub"};
  static constexpr std::array<std::string_view, 17> kPrefixes = {
      "bpf_",      "__bpf_",       "perf_output_", "__perf_event_output", "ktime_get",
      "kprobe_",   "__kprobe",     "kretprobe_",   "__kretprobe",         "rethook_",
      "__rethook", "arch_rethook", "uprobe_",      "uretprobe_",          "ftrace_",
      "__ftrace",  "fprobe_"};
  for (auto e : kExact)
    if (name == e) return "pmcprof's own probes call it at every entry, exit or context switch";
  for (auto p : kPrefixes)
    if (starts_with(name, p))
      return "it belongs to the machinery pmcprof's probes run on (" + std::string(p) + "*)";
  return {};
}

std::vector<AttachPoint> resolve_targets(const std::vector<FuncTarget>& targets,
                                         BackendRequest backend, std::optional<pid_t> pid) {
  if (targets.size() > PMCPROF_MAX_FUNCS)
    throw UserError("too many --func (" + std::to_string(targets.size()) + "), at most " +
                    std::to_string(PMCPROF_MAX_FUNCS));
  std::optional<KernelProbeSupport> kernel_support;
  std::vector<AttachPoint> points;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    AttachPoint p;
    p.func_id = static_cast<std::uint32_t>(i);
    p.target = targets[i];
    switch (p.target.kind) {
      case FuncTarget::Kind::kernel: {
        if (auto why = denied_kernel_function(p.target.name); !why.empty())
          throw UserError("kernel function '" + p.target.name + "' cannot be probed: " + why,
                          "probe a function that calls it, or a syscall (--func syscall:NAME)");
        if (!kernel_support) kernel_support = probe_kernel_probe_support(backend);
        p.backend = choose_kernel_backend(p.target.name, backend, *kernel_support,
                                          lookup_kernel_function(p.target.name));
        p.kprobe_fallback = p.backend == ProbeBackend::fentry &&
                            backend == BackendRequest::automatic && kernel_support->kprobe;
        break;
      }
      case FuncTarget::Kind::user: {
        p.backend = ProbeBackend::uprobe;
        p.binary = resolve_binary(p.target.binary, pid);
        p.file_offset = find_elf_function(p.binary, p.target.name).file_offset;
        p.start = uprobe_start_of(p.binary, p.file_offset);
        break;
      }
      case FuncTarget::Kind::syscall: {
        p.backend = ProbeBackend::tracepoint;
        const std::string tracefs = ensure_tracefs_mounted();
        const std::string dir = tracefs + "/events/syscalls/sys_enter_" + p.target.name;
        if (!std::filesystem::exists(dir))
          throw UserError("unknown syscall '" + p.target.name + "': no tracepoint " + dir,
                          "list them with: ls " + tracefs + "/events/syscalls");
        break;
      }
    }
    points.push_back(std::move(p));
  }
  // Two --func naming one function through different names (libc:getppid and c:getppid,
  // ./w:f and /abs/w:f) would share one probe address and report 0 calls each: refused.
  for (std::size_t i = 0; i < points.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const AttachPoint &a = points[j], &b = points[i];
      std::error_code ec;
      const bool same = a.backend == ProbeBackend::uprobe && b.backend == ProbeBackend::uprobe
                            ? a.file_offset == b.file_offset &&
                                  std::filesystem::equivalent(a.binary, b.binary, ec)
                            : a.target.kind == b.target.kind && a.target.name == b.target.name;
      if (same)
        throw UserError("--func " + quote(a.target.text) + " and " + quote(b.target.text) +
                            " name the same function",
                        "give each function once");
    }
  return points;
}

bool FuncAttachments::attach(const FuncObject& object, std::vector<AttachPoint>& points,
                             const std::function<bool(const AttachPoint&)>& keep_going) {
  auto keep = [&](std::vector<BpfLink> links) {
    for (auto& l : links) links_.push_back(std::move(l));
  };
  for (auto& p : points) {
    if (!keep_going(p)) return false;
    switch (p.backend) {
      case ProbeBackend::uprobe:
        keep(object.attach_uprobe(p.func_id, p.binary, p.file_offset));
        break;
      case ProbeBackend::kprobe:
        keep(object.attach_kprobe(p.func_id, p.target.name));
        break;
      case ProbeBackend::tracepoint:
        keep(object.attach_syscall(p.func_id, p.target.name));
        break;
      case ProbeBackend::fentry: {
        try {
          auto a = object.attach_fentry(p.func_id, p.target.name);
          keep(std::move(a.links));
          twins_.push_back(std::move(a.twin));
        } catch (const SystemError& e) {
          if (!p.kprobe_fallback)
            throw UserError(e.what(), "use --backend kprobe (or auto)", kExitFailure);
          p.backend = ProbeBackend::kprobe;
          p.fallback_why = e.what();
          keep(object.attach_kprobe(p.func_id, p.target.name));
        }
        break;
      }
    }
  }
  return true;
}

void FuncAttachments::detach() {
  destroy_links(std::move(links_), std::move(twins_));
  links_.clear();
  twins_.clear();
}

}  // namespace pmcprof

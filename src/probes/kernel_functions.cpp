#include "pmcprof/probes/kernel_functions.hpp"

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <sstream>

#include "pmcprof/platform/capabilities.hpp"
#include "pmcprof/platform/libbpf_support.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

bool kallsyms_has_function(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string addr, type, sym;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (!(fields >> addr >> type >> sym)) continue;
    // t/T: text; w/W: weak text (page_is_ram, abort, ...).
    if ((type == "t" || type == "T" || type == "w" || type == "W") && sym == name) return true;
  }
  return false;
}

std::vector<std::string> kallsyms_functions(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line, addr, type, sym;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (!(fields >> addr >> type >> sym)) continue;
    if (type == "t" || type == "T" || type == "w" || type == "W") out.push_back(sym);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

KernelFuncInfo lookup_kernel_function(const std::string& name) {
  KernelFuncInfo info;
  const auto kallsyms = read_file("/proc/kallsyms");
  if (kallsyms) info.in_kallsyms = kallsyms_has_function(*kallsyms, name);
  {
    LibbpfQuiet quiet;
    if (btf* vmlinux = btf__load_vmlinux_btf()) {
      info.in_btf = btf__find_by_name_kind(vmlinux, name.c_str(), BTF_KIND_FUNC) > 0;
      btf__free(vmlinux);
    }
  }
  if (kallsyms && !info.in_kallsyms && !info.in_btf)
    info.close_names = closest_matches(name, kallsyms_functions(*kallsyms));
  // ftrace's list of attachable functions: one missing from it is notrace (fentry cannot
  // attach, and kprobes cannot either on kernels without CONFIG_KPROBE_EVENTS_ON_NOTRACE).
  for (const char* path : {"/sys/kernel/tracing/available_filter_functions",
                           "/sys/kernel/debug/tracing/available_filter_functions"}) {
    auto text = read_file(path);
    if (!text || text->empty()) continue;
    bool listed = false;
    std::istringstream in(*text);
    std::string line;
    while (!listed && std::getline(in, line)) {
      std::istringstream fields(line);
      std::string sym;
      fields >> sym;
      listed = sym == name;
    }
    if (!listed && (info.in_kallsyms || info.in_btf)) {
      info.traceable = false;
      info.not_traceable_why = std::string("it is not in ") + path +
                               " (notrace, or inlined: neither fentry nor kprobes can attach)";
    }
    break;
  }
  for (const char* path : {"/sys/kernel/debug/kprobes/blacklist"}) {
    auto text = read_file(path);
    if (!text) continue;
    std::istringstream in(*text);
    std::string range, sym;
    while (in >> range >> sym) {
      if (sym == name) {
        info.traceable = false;
        info.not_traceable_why =
            "it is in the kernel's kprobe blacklist (" + std::string(path) + ")";
      }
    }
  }
  return info;
}

KernelProbeSupport probe_kernel_probe_support(BackendRequest request) {
  KernelProbeSupport s;
  ProbeResult k = probe_kprobes();
  s.kprobe = k.available;
  s.kprobe_why = k.detail;
  // The fentry probe loads and attaches a BPF program (slow on some machines): skipped when
  // kprobes were asked for.
  if (request == BackendRequest::kprobe) {
    s.fentry_why = "not tried (--backend kprobe)";
    return s;
  }
  ProbeResult f = probe_fentry();
  s.fentry = f.available;
  s.fentry_why = f.detail;
  return s;
}

}  // namespace pmcprof

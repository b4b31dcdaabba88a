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

namespace {

std::vector<std::string> sorted_unique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

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
  return sorted_unique(std::move(out));
}

namespace {

// Where ftrace lists the functions it can attach to (tracefs, or its debugfs mount).
constexpr const char* kFilterFunctionFiles[] = {
    "/sys/kernel/tracing/available_filter_functions",
    "/sys/kernel/debug/tracing/available_filter_functions"};

}  // namespace

std::vector<std::string> filter_function_names(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line, sym;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (fields >> sym) out.push_back(sym);
  }
  return sorted_unique(std::move(out));
}

namespace {

bool has(const std::vector<std::string>& sorted, const std::string& name) {
  return std::binary_search(sorted.begin(), sorted.end(), name);
}

constexpr const char* kKprobeBlacklist = "/sys/kernel/debug/kprobes/blacklist";

}  // namespace

KernelFunctionTable::KernelFunctionTable() : btf_(nullptr, btf__free) {
  if (const auto kallsyms = read_file("/proc/kallsyms")) {
    have_kallsyms_ = true;
    text_symbols_ = kallsyms_functions(*kallsyms);
  }
  {
    LibbpfQuiet quiet;
    btf_.reset(btf__load_vmlinux_btf());
  }
  for (const char* path : kFilterFunctionFiles) {
    const auto text = read_file(path);  // fails (EPERM) where ftrace's function tracer is off
    if (!text || text->empty()) continue;
    filter_path_ = path;
    filter_names_ = filter_function_names(*text);
    break;
  }
  if (const auto text = read_file(kKprobeBlacklist)) {
    std::istringstream in(*text);
    std::string range, sym;
    while (in >> range >> sym) blacklist_.push_back(sym);
    blacklist_ = sorted_unique(std::move(blacklist_));
  }
}

KernelFuncInfo KernelFunctionTable::lookup(const std::string& name) const {
  KernelFuncInfo info;
  info.in_kallsyms = has(text_symbols_, name);
  if (btf_) info.in_btf = btf__find_by_name_kind(btf_.get(), name.c_str(), BTF_KIND_FUNC) > 0;
  if (have_kallsyms_ && !info.in_kallsyms && !info.in_btf)
    info.close_names = closest_matches(name, text_symbols_);
  // ftrace's list of attachable functions: one missing from it is notrace (fentry cannot
  // attach, and kprobes cannot either on kernels without CONFIG_KPROBE_EVENTS_ON_NOTRACE).
  if (!filter_path_.empty() && !has(filter_names_, name) && (info.in_kallsyms || info.in_btf)) {
    info.traceable = false;
    info.not_traceable_why = "it is not in " + filter_path_ +
                             " (notrace, or inlined: neither fentry nor kprobes can attach)";
  }
  if (has(blacklist_, name)) {
    info.traceable = false;
    info.not_traceable_why =
        "it is in the kernel's kprobe blacklist (" + std::string(kKprobeBlacklist) + ")";
  }
  return info;
}

KernelFunctionList KernelFunctionTable::attachable() const {
  if (!filter_path_.empty()) return {filter_path_, filter_names_};
  if (!have_kallsyms_) return {};
  KernelFunctionList list{"/proc/kallsyms", text_symbols_};
  std::erase_if(list.names, [](const std::string& n) {
    return starts_with(n, "__pfx_") || starts_with(n, "__cfi_");
  });
  return list;
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

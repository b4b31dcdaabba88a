#include "pmcprof/probes/target_spec.hpp"

#include <cctype>

#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr const char* kFuncHint =
    "use --func NAME (kernel), --func syscall:NAME, or --func /path/to/binary:SYMBOL";

// Longest names accepted: a syscall's tracepoint directory name must fit NAME_MAX with its
// sys_enter_ prefix; kernel symbols are at most KSYM_NAME_LEN (512); user symbols (C++ mangled
// names can be long) and paths at most PATH_MAX.
constexpr std::size_t kMaxSyscallName = 64;
constexpr std::size_t kMaxKernelName = 512;
constexpr std::size_t kMaxUserName = 4096;

void check_length(std::string_view name, std::size_t max, const char* what,
                  const std::string& text) {
  if (name.size() > max)
    throw UserError(std::string(what) + " in --func " + quote(text) + " is too long (at most " +
                        std::to_string(max) + " characters)",
                    kFuncHint);
}

bool valid_identifier(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '_' && c != '.' && c != '$' && c != '@') return false;
  }
  return true;
}

std::string_view strip_prefix(std::string_view s, std::string_view prefix) {
  return starts_with(s, prefix) ? s.substr(prefix.size()) : std::string_view{};
}

}  // namespace

const char* to_string(FuncTarget::Kind kind) {
  switch (kind) {
    case FuncTarget::Kind::kernel:
      return "kernel";
    case FuncTarget::Kind::user:
      return "user";
    case FuncTarget::Kind::syscall:
      return "syscall";
  }
  return "?";
}

const char* to_string(ProbeBackend b) {
  switch (b) {
    case ProbeBackend::fentry:
      return "fentry";
    case ProbeBackend::kprobe:
      return "kprobe";
    case ProbeBackend::uprobe:
      return "uprobe";
    case ProbeBackend::tracepoint:
      return "tracepoint";
  }
  return "?";
}

FuncTarget parse_func_target(std::string_view raw) {
  std::string_view text = trim(raw);
  FuncTarget t;
  t.text = std::string(text);
  if (text.empty()) throw UserError("empty --func", kFuncHint);
  check_length(text, 2 * kMaxUserName, "the target", t.text);

  if (auto rest = strip_prefix(text, "syscall:"); !rest.empty() || text == "syscall:") {
    if (starts_with(rest, "sys_")) rest.remove_prefix(4);  // sys_getppid -> getppid
    check_length(rest, kMaxSyscallName, "the syscall name", t.text);
    if (!valid_identifier(rest))
      throw UserError(
          "invalid syscall name in --func " + quote(t.text),
          "e.g. --func syscall:getppid (names as in /sys/kernel/tracing/events/syscalls)");
    t.kind = FuncTarget::Kind::syscall;
    t.name = std::string(rest);
    return t;
  }
  if (auto rest = strip_prefix(text, "kernel:"); !rest.empty() || text == "kernel:") {
    check_length(rest, kMaxKernelName, "the kernel function name", t.text);
    if (!valid_identifier(rest))
      throw UserError("invalid kernel function name in --func " + quote(t.text), kFuncHint);
    t.kind = FuncTarget::Kind::kernel;
    t.name = std::string(rest);
    return t;
  }
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    if (text.find('/') != std::string_view::npos)
      throw UserError("--func " + quote(t.text) + " names a file but no symbol",
                      "write PATH:SYMBOL, e.g. --func /usr/bin/bash:readline");
    check_length(text, kMaxKernelName, "the kernel function name", t.text);
    if (!valid_identifier(text))
      throw UserError("invalid kernel function name in --func " + quote(t.text), kFuncHint);
    t.kind = FuncTarget::Kind::kernel;
    t.name = std::string(text);
    return t;
  }
  t.kind = FuncTarget::Kind::user;
  t.binary = std::string(text.substr(0, colon));
  t.name = std::string(text.substr(colon + 1));
  if (t.name.empty())
    throw UserError("--func " + quote(t.text) + " has no symbol after ':'",
                    "write PATH:SYMBOL, e.g. --func libc:malloc");
  check_length(t.binary, kMaxUserName, "the file name", t.text);
  check_length(t.name, kMaxUserName, "the symbol", t.text);
  if (!valid_identifier(t.name))
    throw UserError("invalid symbol " + quote(t.name) + " in --func " + quote(t.text), kFuncHint);
  return t;
}

void check_distinct_targets(const std::vector<FuncTarget>& targets) {
  for (std::size_t i = 0; i < targets.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const FuncTarget &a = targets[j], &b = targets[i];
      if (a.kind == b.kind && a.name == b.name && a.binary == b.binary)
        throw UserError(a.text == b.text ? "--func " + quote(a.text) + " is given twice"
                                         : "--func " + quote(a.text) + " and " + quote(b.text) +
                                               " name the same function",
                        "give each function once");
    }
}

ProbeBackend choose_kernel_backend(const std::string& func, BackendRequest request,
                                   const KernelProbeSupport& support, const KernelFuncInfo& info) {
  const std::string alternatives =
      "probe a syscall (--func syscall:NAME) or a user function (--func /path/bin:SYMBOL); "
      "'pmcprof doctor' shows what this kernel allows";
  if (!info.in_kallsyms && !info.in_btf)
    throw UserError("unknown kernel function '" + func +
                        "': not in /proc/kallsyms nor in vmlinux BTF (misspelled, not built in, "
                        "or inlined by the compiler)",
                    "grep the name in /proc/kallsyms, or " + alternatives);
  if (!support.fentry && !support.kprobe)
    throw UserError("cannot probe kernel function '" + func + "' on this kernel: kprobes: " +
                        support.kprobe_why + "; fentry: " + support.fentry_why,
                    alternatives, kExitFailure);
  if (!info.traceable)
    throw UserError("kernel function '" + func + "' cannot be traced: " + info.not_traceable_why,
                    alternatives);
  const bool fentry_ok = support.fentry && info.in_btf;
  const bool kprobe_ok = support.kprobe && info.in_kallsyms;
  switch (request) {
    case BackendRequest::fentry:
      if (fentry_ok) return ProbeBackend::fentry;
      throw UserError("--backend fentry cannot probe '" + func +
                          "': " + (support.fentry ? "it has no BTF entry" : support.fentry_why),
                      kprobe_ok ? "use --backend kprobe (or auto)" : alternatives);
    case BackendRequest::kprobe:
      if (kprobe_ok) return ProbeBackend::kprobe;
      throw UserError("--backend kprobe cannot probe '" + func + "': " +
                          (support.kprobe ? "it is not in /proc/kallsyms" : support.kprobe_why),
                      fentry_ok ? "use --backend fentry (or auto)" : alternatives);
    case BackendRequest::automatic:
      break;
  }
  if (fentry_ok) return ProbeBackend::fentry;
  if (kprobe_ok) return ProbeBackend::kprobe;
  throw UserError("cannot probe kernel function '" + func + "' with fentry (" +
                      (support.fentry ? "no BTF entry" : support.fentry_why) + ") or kprobe (" +
                      (support.kprobe ? "not in /proc/kallsyms" : support.kprobe_why) + ")",
                  alternatives);
}

}  // namespace pmcprof

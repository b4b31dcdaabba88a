#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pmcprof {

// What a --func argument names, before anything is looked up.
struct FuncTarget {
  enum class Kind { kernel, user, syscall };
  Kind kind = Kind::kernel;
  std::string text;    // as written: "tcp_sendmsg", "libc:malloc", "syscall:getppid"
  std::string name;    // kernel function, syscall name, or user symbol
  std::string binary;  // user: "/usr/bin/x", "libc", "" (= the -p process's executable)
};

// Parses one --func value:
//   NAME | kernel:NAME       kernel function (fentry/fexit or kprobe/kretprobe)
//   syscall:NAME            sys_enter_NAME / sys_exit_NAME tracepoints
//   PATH:SYMBOL             user function in an executable or library (uprobe/uretprobe)
//   LIB:SYMBOL              a library by bare name (libc:malloc), resolved like bcc's tools
//   :SYMBOL                 a function of the -p process's own executable
// Throws UserError on malformed input.
FuncTarget parse_func_target(std::string_view text);

// Refuses two --func that name the same function as written (syscall:getppid and
// syscall:sys_getppid, NAME and kernel:NAME, the same PATH:SYMBOL twice): one probe would
// serve both and each would report 0 calls. Throws UserError naming both.
void check_distinct_targets(const std::vector<FuncTarget>& targets);

const char* to_string(FuncTarget::Kind kind);

// Backends that attach a function probe.
enum class ProbeBackend { fentry, kprobe, uprobe, tracepoint };
const char* to_string(ProbeBackend b);

enum class BackendRequest { automatic, fentry, kprobe };

// What the running kernel allows for kernel functions (from the doctor probes).
struct KernelProbeSupport {
  bool fentry = false;
  std::string fentry_why;
  bool kprobe = false;
  std::string kprobe_why;
};

// What is known about one kernel function name.
struct KernelFuncInfo {
  bool in_kallsyms = false;  // a text symbol in /proc/kallsyms
  bool in_btf = false;       // a FUNC in vmlinux BTF (fentry needs it)
  bool traceable = true;     // not in the kprobe blacklist / listed in available_filter_functions
  std::string not_traceable_why;
};

// The backend for a kernel function: fentry when allowed and the function has BTF, else
// kprobe; an explicit request is honoured or refused. Throws UserError with one line saying
// why nothing works and what to probe instead.
ProbeBackend choose_kernel_backend(const std::string& func, BackendRequest request,
                                   const KernelProbeSupport& support, const KernelFuncInfo& info);

}  // namespace pmcprof

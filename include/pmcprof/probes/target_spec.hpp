#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pmcprof {

// What a --func argument (or one end of a --region) names, before anything is looked up.
struct FuncTarget {
  enum class Kind { kernel, user, syscall, usdt, tracepoint };
  Kind kind = Kind::kernel;
  std::string text;      // as written: "tcp_sendmsg", "libc:malloc", "syscall:getppid"
  std::string name;      // kernel function, syscall name, user symbol, USDT probe, tracepoint
  std::string binary;    // user, usdt: "/usr/bin/x", "libc", "" (= the -p process's executable)
  std::string provider;  // usdt: "python" of usdt:/usr/bin/python3:python:function__entry
  std::string category;  // tracepoint: "sched" of tracepoint:sched:sched_process_exec
  // A region's end only: user SYMBOL+OFFSET (a uprobe inside the function) ...
  std::optional<std::uint64_t> offset;
  // ... or NAME%return: the function's (syscall's) return rather than its entry.
  bool at_return = false;

  // A single probe (USDT, tracepoint) rather than a function with an entry and a return.
  bool is_point() const { return kind == Kind::usdt || kind == Kind::tracepoint; }
};

// A region: from a start probe to an end probe in the same thread, measured like a call.
struct RegionSpec {
  std::string text;  // as written: "[NAME=]START,END"
  std::string name;  // NAME= (its name in reports), or ""
  FuncTarget start;
  FuncTarget end;
  const std::string& label() const { return name.empty() ? text : name; }
};

// --by argN[:str|:int]: an argument of every start point, as the key of its calls.
struct KeyArg {
  unsigned index = 0;
  bool string = false;       // the argument is the address of a NUL-terminated string
  std::string text() const;  // "arg0", "arg1:str"
};

// Where a start point's argument is when it fires (struct pmcprof_arg_spec for BPF).
struct ArgSpec {
  enum class Kind { constant, reg, deref };
  Kind kind = Kind::constant;
  std::uint64_t val = 0;  // the constant, or the displacement added to the register
  int reg_off = 0;        // of the register (the field) in the program's context
  int idx_off = 0;        // deref: an index register's offset ...
  int scale = 0;          // ... times this (0: no index)
  int size = 8;           // bytes: 1, 2, 4 or 8
  bool is_signed = false;
  bool is_string = false;
  bool user = false;  // memory of the probed process (else the kernel's)
};
using KeySpec = std::vector<ArgSpec>;  // in --by order

// Parses one --func value:
//   NAME | kernel:NAME       kernel function (fentry/fexit or kprobe/kretprobe)
//   syscall:NAME            sys_enter_NAME / sys_exit_NAME tracepoints
//   PATH:SYMBOL             user function in an executable or library (uprobe/uretprobe)
//   LIB:SYMBOL              a library by bare name (libc:malloc), resolved like bcc's tools
//   :SYMBOL                 a function of the -p process's own executable
//   usdt:BINARY:PROVIDER:NAME   a USDT probe (in an executable or a library; BINARY "" or
//                           usdt:PROVIDER:NAME: the -p process's executable and libraries)
//   tracepoint:CATEGORY:NAME   a tracepoint
// NAME of a kernel function, a syscall or a user function may be a glob (*, ?, [...]):
// resolve_targets expands it to every match (probes/func_globs.hpp).
// A USDT probe or a tracepoint has no return: given to --func, each hit is counted (and
// keyed) as a call of zero length.
// Throws UserError on malformed input.
FuncTarget parse_func_target(std::string_view raw);

// Parses one end of a --region: what --func takes, and also user PATH:SYMBOL+OFFSET (inside a
// function) and NAME%return (a function's or a syscall's return). `which` is "start" or "end"
// for messages.
FuncTarget parse_probe_point(std::string_view raw, const char* which);

// Parses one --region value: [NAME=]START,END. Throws UserError.
RegionSpec parse_region(std::string_view raw);

// Parses --by argN[:str|:int][,argM[:str|:int]] (at most two). nullopt when the text does not
// start with "arg" (another --by key); throws UserError when it does but is malformed.
std::optional<std::vector<KeyArg>> parse_key_args(std::string_view text);

// Refuses two --func that name the same function as written (syscall:getppid and
// syscall:sys_getppid, NAME and kernel:NAME, the same PATH:SYMBOL twice): one probe would
// serve both and each would report 0 calls. Throws UserError naming both.
void check_distinct_targets(const std::vector<FuncTarget>& targets);

const char* to_string(FuncTarget::Kind kind);

// Backends that attach a function probe.
enum class ProbeBackend { fentry, kprobe, uprobe, tracepoint, usdt };
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
  // Neither in kallsyms nor in BTF: the closest function names of kallsyms ("did you mean").
  std::vector<std::string> close_names;
};

// The backend for a kernel function: fentry when allowed and the function has BTF, else
// kprobe; an explicit request is honoured or refused. Throws UserError with one line saying
// why nothing works and what to probe instead.
ProbeBackend choose_kernel_backend(const std::string& func, BackendRequest request,
                                   const KernelProbeSupport& support, const KernelFuncInfo& info);

}  // namespace pmcprof

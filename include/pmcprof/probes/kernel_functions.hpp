#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pmcprof/probes/target_spec.hpp"

struct btf;

namespace pmcprof {

// The kernel functions a --func glob is matched against, and the file they came from.
struct KernelFunctionList {
  std::string source;  // "/sys/kernel/tracing/available_filter_functions", "/proc/kallsyms", ""
  std::vector<std::string> names;
};

// A run's kernel functions, looked up in /proc/kallsyms, vmlinux BTF, ftrace's attachable list
// and the kprobe blacklist, each read once for every lookup (a glob's matches): each reading of
// kallsyms and the BTF takes a few hundred milliseconds.
class KernelFunctionTable {
 public:
  KernelFunctionTable();
  KernelFuncInfo lookup(const std::string& name) const;
  // ftrace's attachable functions when this kernel lets them be read (what fentry and kprobes
  // can attach to), else kallsyms' text symbols without the padding and CFI symbols before
  // each function (__pfx_*, __cfi_*), which are no functions of their own.
  KernelFunctionList attachable() const;

 private:
  bool have_kallsyms_ = false;
  std::vector<std::string> text_symbols_;  // kallsyms' text symbols, sorted
  std::unique_ptr<btf, void (*)(btf*)> btf_;
  std::string filter_path_;                // available_filter_functions, when readable
  std::vector<std::string> filter_names_;  // sorted
  std::vector<std::string> blacklist_;     // the kprobe blacklist's names, sorted
};

// True when `name` is a text symbol in kallsyms-format text ("ffff... T name [module]").
bool kallsyms_has_function(const std::string& kallsyms_text, const std::string& name);

// The text symbols of kallsyms-format text, once each, sorted.
std::vector<std::string> kallsyms_functions(const std::string& kallsyms_text);

// The names of ftrace's available_filter_functions text ("name [module]" lines), once each,
// sorted.
std::vector<std::string> filter_function_names(const std::string& text);

// What this kernel allows for kernel-function probes, from the doctor probes.
KernelProbeSupport probe_kernel_probe_support(BackendRequest request);

}  // namespace pmcprof

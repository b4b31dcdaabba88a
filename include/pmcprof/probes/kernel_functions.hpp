#pragma once

#include <string>
#include <vector>

#include "pmcprof/probes/target_spec.hpp"

namespace pmcprof {

// Looks a kernel function up in /proc/kallsyms, vmlinux BTF and the kprobe blacklist.
KernelFuncInfo lookup_kernel_function(const std::string& name);

// True when `name` is a text symbol in kallsyms-format text ("ffff... T name [module]").
bool kallsyms_has_function(const std::string& kallsyms_text, const std::string& name);

// The text symbols of kallsyms-format text, once each, sorted.
std::vector<std::string> kallsyms_functions(const std::string& kallsyms_text);

// What this kernel allows for kernel-function probes, from the doctor probes.
KernelProbeSupport probe_kernel_probe_support(BackendRequest request);

}  // namespace pmcprof

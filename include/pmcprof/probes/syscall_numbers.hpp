#pragma once

#include <optional>
#include <string_view>

namespace pmcprof {

// The number of the syscall whose tracepoints are syscalls:sys_enter_NAME and sys_exit_NAME
// (NAME: the kernel function sys_NAME behind it, which is not always the C library's name:
// fstat's is newfstat), for the architecture pmcprof is built for (x86-64 or arm64), from the
// kernel's own tables (src/probes/syscall_numbers.inc). nullopt: not in the table (a syscall
// newer than it, another architecture), and then its tracepoints are probed one by one.
std::optional<long> syscall_number(std::string_view name);

}  // namespace pmcprof

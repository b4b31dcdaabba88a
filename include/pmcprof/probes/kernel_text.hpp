#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pmcprof {

// The instructions a tiny kernel function executes of its own, read from the kernel's live
// text: what the kernel calibration target (sys_ni_syscall's wrapper) does besides the probe,
// taken off its calibration as the uprobe targets' own instructions are.

enum class CodeArch { x86_64, arm64 };

// `len` bytes of code at virtual address `addr`, or nullopt where they cannot be read.
using CodeReader =
    std::function<std::optional<std::vector<std::uint8_t>>(std::uint64_t addr, std::size_t len)>;

struct StraightLineCount {
  std::optional<std::uint64_t> instructions;  // nullopt: not counted, why_not says why
  std::string why_not;
};

// The instructions executed from `entry` up to the `ret` that leaves the function, on a path
// with no choice in it: direct calls are followed into their callees (at most `max_depth`
// open) and back, direct jumps (tail calls) followed. Anything else that changes the flow (a
// conditional or indirect branch, a trap), and on x86-64 any instruction outside the few forms
// such a function is made of, is not counted: never a guess.
//   arm64   fixed 4-byte instructions; bl / b imm26 followed; ret, retaa, retab return; an
//           enabled ftrace patch site (`mov x9, x30; bl <trampoline>`) counts as the two
//           instructions it is with ftrace off (its bl is not followed)
//   x86-64  endbr64; nops (90, 66 90, 0f 1f /0 of 3 to 6 bytes); mov $imm32 to %eax or %rax;
//           xor %eax,%eax; lea 8(%rsp),%rsp (drops a return address, as the return thunks
//           do); call / jmp rel32 followed; ret
StraightLineCount count_straight_line(CodeArch arch, std::uint64_t entry, const CodeReader& read,
                                      int max_depth = 2);

// A PT_LOAD segment of an ELF core file (/proc/kcore): virtual addresses [vaddr, vaddr +
// size) are at `offset` in the file.
struct CoreSegment {
  std::uint64_t vaddr = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

// The PT_LOAD segments of the 64-bit little-endian ELF file at `path` (empty when it is not one
// or cannot be read).
std::vector<CoreSegment> core_load_segments(const std::string& path);

// The file offset of [addr, addr + len) in the segment that holds all of it.
std::optional<std::uint64_t> core_file_offset(const std::vector<CoreSegment>& segments,
                                              std::uint64_t addr, std::size_t len);

// A CodeReader over the ELF core file at `path` (its segments read once).
CodeReader core_reader(const std::string& path);

// The address of the text symbol `name` in kallsyms-format text (nullopt when absent or
// shown as 0, as /proc/kallsyms shows it to the unprivileged).
std::optional<std::uint64_t> kallsyms_address(const std::string& kallsyms_text,
                                              const std::string& name);

// count_straight_line on this kernel's `name` (its /proc/kallsyms address, its code from
// /proc/kcore; root only), for the architecture pmcprof is built for.
StraightLineCount count_kernel_function(const std::string& name);

}  // namespace pmcprof

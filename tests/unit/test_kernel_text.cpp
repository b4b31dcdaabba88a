// The kernel calibration target's own instructions (issue 22 item 8): the straight-line decoder
// on byte arrays (arm64: __arm64_sys_ni_syscall as the 6.12 guest kernel has it; x86-64: the
// wrapper with a return thunk), the ELF core (/proc/kcore) segment lookup on a small file made
// here, kallsyms addresses; and, as root where /proc/kcore exists, this kernel's own target.
#include <elf.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/probes/kernel_text.hpp"

using namespace pmcprof;

namespace {

using Bytes = std::vector<std::uint8_t>;

// Code at a few addresses: reads inside one block only.
CodeReader reader_of(const std::map<std::uint64_t, Bytes>& blocks) {
  return [blocks](std::uint64_t addr, std::size_t len) -> std::optional<Bytes> {
    for (const auto& [base, b] : blocks)
      if (addr >= base && addr - base + len <= b.size())
        return Bytes(b.begin() + static_cast<std::ptrdiff_t>(addr - base),
                     b.begin() + static_cast<std::ptrdiff_t>(addr - base + len));
    return std::nullopt;
  };
}

Bytes arm64(const std::vector<std::uint32_t>& insns) {
  Bytes b;
  for (std::uint32_t i : insns)
    for (int k = 0; k < 4; ++k) b.push_back(static_cast<std::uint8_t>(i >> (8 * k)));
  return b;
}

// bl / b from `at` to `to`.
std::uint32_t bl(std::uint64_t at, std::uint64_t to) {
  return 0x94000000u | (static_cast<std::uint32_t>((to - at) / 4) & 0x03ffffffu);
}
std::uint32_t b(std::uint64_t at, std::uint64_t to) {
  return 0x14000000u | (static_cast<std::uint32_t>((to - at) / 4) & 0x03ffffffu);
}

constexpr std::uint32_t kNop = 0xd503201f, kPaciasp = 0xd503233f, kAutiasp = 0xd50323bf,
                        kStp = 0xa9bf7bfd,  // stp x29, x30, [sp, #-16]!
    kMovFp = 0x910003fd,                    // mov x29, sp
    kLdp = 0xa8c17bfd,                      // ldp x29, x30, [sp], #16
    kMovEnosys = 0x928004a0,                // mov x0, #-38
    kRet = 0xd65f03c0, kRetaa = 0xd65f0bff, kMovX9X30 = 0xaa1e03e9;

constexpr std::uint64_t kWrapper = 0xffff800080010000, kCallee = 0xffff800080020000;

// __arm64_sys_ni_syscall: 9 instructions of its own around a bl into sys_ni_syscall's 4.
std::map<std::uint64_t, Bytes> arm64_ni_syscall(std::uint32_t first = kNop,
                                                std::uint32_t second = kNop) {
  return {{kWrapper, arm64({first, second, kPaciasp, kStp, kMovFp, bl(kWrapper + 20, kCallee), kLdp,
                            kAutiasp, kRet})},
          {kCallee, arm64({kNop, kNop, kMovEnosys, kRet})}};
}

}  // namespace

// ---- count_straight_line, arm64 ----

TEST(KernelText, Arm64NiSyscallIsThirteen) {
  const auto n = count_straight_line(CodeArch::arm64, kWrapper, reader_of(arm64_ni_syscall()));
  ASSERT_TRUE(n.instructions) << n.why_not;
  EXPECT_EQ(*n.instructions, 13u);  // 9 + 4, as the oracle counts it
}

TEST(KernelText, Arm64EnabledFtraceSiteCountsAsItsTwoInstructions) {
  // mov x9, x30; bl <trampoline>: the trampoline is not followed (it is not readable here).
  const std::uint64_t tramp = 0xffff800080030000;
  const auto n = count_straight_line(
      CodeArch::arm64, kWrapper, reader_of(arm64_ni_syscall(kMovX9X30, bl(kWrapper + 4, tramp))));
  ASSERT_TRUE(n.instructions) << n.why_not;
  EXPECT_EQ(*n.instructions, 13u);
}

TEST(KernelText, Arm64TailCallAndRetaa) {
  // paciasp; b callee (no return of its own) -> callee: mov; retaa.
  const auto n =
      count_straight_line(CodeArch::arm64, kWrapper,
                          reader_of({{kWrapper, arm64({kPaciasp, b(kWrapper + 4, kCallee)})},
                                     {kCallee, arm64({kMovEnosys, kRetaa})}}));
  ASSERT_TRUE(n.instructions) << n.why_not;
  EXPECT_EQ(*n.instructions, 4u);
}

TEST(KernelText, Arm64ChoicesAndTrapsAreNotCounted) {
  for (std::uint32_t insn : {0xb4000040u,     // cbz x0, +8
                             0x54000040u,     // b.eq +8
                             0x36000040u,     // tbz w0, #0, +8
                             0xd63f0100u,     // blr x8
                             0xd4200000u,     // brk #0 (a kprobe's breakpoint)
                             0x00000000u}) {  // udf
    const auto n = count_straight_line(CodeArch::arm64, kWrapper,
                                       reader_of({{kWrapper, arm64({kNop, insn, kRet})}}));
    EXPECT_FALSE(n.instructions) << std::hex << insn;
    EXPECT_FALSE(n.why_not.empty());
  }
}

TEST(KernelText, Arm64DepthAndReadsAreBounded) {
  // Calls deeper than max_depth, code that cannot be read, a loop with no return.
  const auto deep = count_straight_line(CodeArch::arm64, kWrapper, reader_of(arm64_ni_syscall()),
                                        /*max_depth=*/0);
  EXPECT_FALSE(deep.instructions);
  const auto unread = count_straight_line(
      CodeArch::arm64, kWrapper, reader_of({{kWrapper, arm64({kNop, bl(kWrapper + 4, kCallee)})}}));
  EXPECT_FALSE(unread.instructions);
  const auto loop = count_straight_line(
      CodeArch::arm64, kWrapper, reader_of({{kWrapper, arm64({kNop, b(kWrapper + 4, kWrapper)})}}));
  EXPECT_FALSE(loop.instructions);
}

// ---- count_straight_line, x86-64 ----

namespace {

constexpr std::uint64_t kX86Fn = 0xffffffff8130c7d0, kThunk = 0xffffffff822057f0,
                        kSafeRet = 0xffffffff82205800;

Bytes rel(std::uint8_t op, std::uint64_t at, std::uint64_t to) {
  const auto d = static_cast<std::uint32_t>(to - (at + 5));
  return {op, static_cast<std::uint8_t>(d), static_cast<std::uint8_t>(d >> 8),
          static_cast<std::uint8_t>(d >> 16), static_cast<std::uint8_t>(d >> 24)};
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  all.resize(all.size() + 8, 0xcc);  // int3 padding, as the kernel's
  return all;
}

// endbr64; nop5 (the fentry site); mov $-38,%rax; jmp <thunk>
Bytes x86_ni_syscall() {
  return cat({{0xf3, 0x0f, 0x1e, 0xfa},
              {0x0f, 0x1f, 0x44, 0x00, 0x00},
              {0x48, 0xc7, 0xc0, 0xda, 0xff, 0xff, 0xff},
              rel(0xe9, kX86Fn + 16, kThunk)});
}

}  // namespace

TEST(KernelText, X86NiSyscallThroughARetThunk) {
  const auto n = count_straight_line(
      CodeArch::x86_64, kX86Fn, reader_of({{kX86Fn, x86_ni_syscall()}, {kThunk, cat({{0xc3}})}}));
  ASSERT_TRUE(n.instructions) << n.why_not;
  // endbr64, nop, mov, jmp, and the thunk's ret: five instructions retire.
  EXPECT_EQ(*n.instructions, 5u);
}

TEST(KernelText, X86ThunkThatDropsItsReturnAddress) {
  // The SRSO-style thunk: call safe_ret; ud2 / safe_ret: lea 8(%rsp),%rsp; ret. Its ret
  // returns from the function itself; the ud2 is never reached.
  const auto n =
      count_straight_line(CodeArch::x86_64, kX86Fn,
                          reader_of({{kX86Fn, x86_ni_syscall()},
                                     {kThunk, cat({rel(0xe8, kThunk, kSafeRet), {0x0f, 0x0b}})},
                                     {kSafeRet, cat({{0x48, 0x8d, 0x64, 0x24, 0x08}, {0xc3}})}}));
  ASSERT_TRUE(n.instructions) << n.why_not;
  EXPECT_EQ(*n.instructions, 7u);  // endbr64, nop, mov, jmp; call, lea, ret
}

TEST(KernelText, X86CallAndReturn) {
  // endbr64; call f; ret / f: xor %eax,%eax; ret
  const auto n = count_straight_line(
      CodeArch::x86_64, kX86Fn,
      reader_of({{kX86Fn, cat({{0xf3, 0x0f, 0x1e, 0xfa}, rel(0xe8, kX86Fn + 4, kThunk), {0xc3}})},
                 {kThunk, cat({{0x31, 0xc0}, {0xc3}})}}));
  ASSERT_TRUE(n.instructions) << n.why_not;
  EXPECT_EQ(*n.instructions, 5u);
}

TEST(KernelText, X86UnknownBytesAreNotCounted) {
  for (const Bytes& unknown : {Bytes{0x0f, 0x0b},                       // ud2
                               Bytes{0xcc},                             // int3 (a kprobe's)
                               Bytes{0x74, 0x02},                       // je +2
                               Bytes{0x65, 0x48, 0xc1, 0x3c, 0x25}}) {  // sarq %gs:... (depth)
    const auto n = count_straight_line(CodeArch::x86_64, kX86Fn,
                                       reader_of({{kX86Fn, cat({{0x90}, unknown, {0xc3}})}}));
    EXPECT_FALSE(n.instructions);
    EXPECT_NE(n.why_not.find("not followed"), std::string::npos) << n.why_not;
  }
  // A return address dropped with no call open: not this function's own straight line.
  const auto dropped =
      count_straight_line(CodeArch::x86_64, kX86Fn,
                          reader_of({{kX86Fn, cat({{0x48, 0x8d, 0x64, 0x24, 0x08}, {0xc3}})}}));
  EXPECT_FALSE(dropped.instructions);
}

// ---- kallsyms_address ----

TEST(KernelText, KallsymsAddress) {
  const std::string text =
      "ffffffff8130c7d0 T __x64_sys_ni_syscall\n"
      "ffffffff8138dcb0 T sys_ni_syscall\n"
      "ffffffff81000000 t dup_name\n"
      "ffffffff81000010 t dup_name\n"
      "ffffffffc0000000 t mod_fn\t[some_module]\n"
      "ffffffff82000000 D data_name\n"
      "0000000000000000 T hidden\n";
  EXPECT_EQ(kallsyms_address(text, "sys_ni_syscall"), 0xffffffff8138dcb0u);
  EXPECT_EQ(kallsyms_address(text, "__x64_sys_ni_syscall"), 0xffffffff8130c7d0u);
  EXPECT_FALSE(kallsyms_address(text, "dup_name"));  // two of that name: which one?
  EXPECT_FALSE(kallsyms_address(text, "mod_fn"));    // a module's: not the kernel's own
  EXPECT_FALSE(kallsyms_address(text, "data_name"));
  EXPECT_FALSE(kallsyms_address(text, "hidden"));  // kptr_restrict: not root
  EXPECT_FALSE(kallsyms_address(text, "absent"));
}

// ---- the ELF core file ----

namespace {

// A core file like /proc/kcore: a PT_NOTE and two PT_LOAD segments, the second holding
// __arm64_sys_ni_syscall's code at kWrapper and sys_ni_syscall's at kCallee.
std::string write_core(const std::filesystem::path& path) {
  const auto code = arm64_ni_syscall();
  const Bytes& wrapper = code.at(kWrapper);
  const Bytes& callee = code.at(kCallee);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_CORE;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof eh;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 4;
  const std::uint64_t data = sizeof eh + 4 * sizeof(Elf64_Phdr);
  Elf64_Phdr ph[4]{};
  ph[0].p_type = PT_NOTE;
  ph[0].p_offset = data;
  ph[0].p_filesz = 8;
  ph[1].p_type = PT_LOAD;  // 64 bytes of zeros far below
  ph[1].p_vaddr = 0xffff000000000000;
  ph[1].p_offset = data + 8;
  ph[1].p_filesz = 64;
  ph[2].p_type = PT_LOAD;  // the wrapper
  ph[2].p_vaddr = kWrapper;
  ph[2].p_offset = data + 72;
  ph[2].p_filesz = wrapper.size();
  ph[3].p_type = PT_LOAD;  // the callee
  ph[3].p_vaddr = kCallee;
  ph[3].p_offset = ph[2].p_offset + wrapper.size();
  ph[3].p_filesz = callee.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&eh), sizeof eh);
  out.write(reinterpret_cast<const char*>(ph), sizeof ph);
  const std::string zeros(72, '\0');
  out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  out.write(reinterpret_cast<const char*>(wrapper.data()),
            static_cast<std::streamsize>(wrapper.size()));
  out.write(reinterpret_cast<const char*>(callee.data()),
            static_cast<std::streamsize>(callee.size()));
  return path.string();
}

}  // namespace

TEST(KernelText, CoreSegmentsAndReader) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "pmcprof-kcore-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::filesystem::path dir = tmpl;
  const std::string core = write_core(dir / "kcore");

  const auto segments = core_load_segments(core);
  ASSERT_EQ(segments.size(), 3u);  // the note is not a load segment
  EXPECT_EQ(segments[1].vaddr, kWrapper);
  EXPECT_EQ(segments[1].size, 36u);
  EXPECT_EQ(core_file_offset(segments, kWrapper, 4), segments[1].offset);
  EXPECT_EQ(core_file_offset(segments, kWrapper + 32, 4), segments[1].offset + 32);
  EXPECT_FALSE(core_file_offset(segments, kWrapper + 34, 4));  // runs past the segment
  EXPECT_FALSE(core_file_offset(segments, kWrapper - 4, 4));
  EXPECT_FALSE(core_file_offset(segments, 0x1000, 1));

  const CodeReader read = core_reader(core);
  EXPECT_EQ(read(kCallee + 8, 4), arm64({kMovEnosys}));
  EXPECT_FALSE(read(kCallee + 16, 4));
  const auto n = count_straight_line(CodeArch::arm64, kWrapper, read);
  ASSERT_TRUE(n.instructions) << n.why_not;
  EXPECT_EQ(*n.instructions, 13u);

  // Not an ELF file, or none at all: no segments, nothing read.
  const std::string text = (dir / "text").string();
  std::ofstream(text) << "not an ELF core file, long enough to hold a header's worth of bytes\n";
  EXPECT_TRUE(core_load_segments(text).empty());
  EXPECT_TRUE(core_load_segments((dir / "absent").string()).empty());
  EXPECT_FALSE(core_reader((dir / "absent").string())(kWrapper, 4));
  std::filesystem::remove_all(dir);
}

// ---- this kernel (root, /proc/kcore) ----

TEST(KernelText, ThisKernelsCalibrationTarget) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: kallsyms addresses and /proc/kcore hidden";
#if defined(__x86_64__)
  const std::string name = "__x64_sys_ni_syscall";
#else
  const std::string name = "__arm64_sys_ni_syscall";
#endif
  const auto n = count_kernel_function(name);
  if (!n.instructions && ::access("/proc/kcore", F_OK) != 0)
    GTEST_SKIP() << name << ": " << n.why_not;
  ASSERT_TRUE(n.instructions) << name << ": " << n.why_not;
  std::printf("%s: %llu instructions of its own\n", name.c_str(),
              static_cast<unsigned long long>(*n.instructions));
  EXPECT_GE(*n.instructions, 3u);
  EXPECT_LE(*n.instructions, 32u);
}

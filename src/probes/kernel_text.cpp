#include "pmcprof/probes/kernel_text.hpp"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <sstream>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/fd.hpp"

namespace pmcprof {

namespace {

constexpr std::uint64_t kMaxInstructions = 256;  // a straight line longer than this: not counted

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string hex_bytes(const std::vector<std::uint8_t>& b, std::size_t n) {
  std::string s;
  char buf[4];
  for (std::size_t i = 0; i < n && i < b.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", b[i]);
    s += buf;
  }
  return s;
}

std::int64_t rel32(const std::vector<std::uint8_t>& b, std::size_t at) {
  const std::uint32_t u =
      static_cast<std::uint32_t>(b[at]) | static_cast<std::uint32_t>(b[at + 1]) << 8 |
      static_cast<std::uint32_t>(b[at + 2]) << 16 | static_cast<std::uint32_t>(b[at + 3]) << 24;
  return static_cast<std::int32_t>(u);
}

StraightLineCount not_counted(std::string why) {
  return {std::nullopt, std::move(why)};
}

// The flow of one decoded instruction.
enum class Flow { next, call, jump, ret, drop_return, unknown };

struct Decoded {
  Flow flow = Flow::unknown;
  std::uint64_t length = 0;   // bytes
  std::uint64_t target = 0;   // call, jump
  std::uint64_t counted = 1;  // instructions it stands for
};

bool starts(const std::vector<std::uint8_t>& b, std::initializer_list<std::uint8_t> prefix) {
  if (b.size() < prefix.size()) return false;
  std::size_t i = 0;
  for (std::uint8_t p : prefix)
    if (b[i++] != p) return false;
  return true;
}

Decoded decode_x86(std::uint64_t pc, const std::vector<std::uint8_t>& b) {
  Decoded d;
  auto fixed = [&](std::uint64_t len) {
    d.flow = Flow::next;
    d.length = len;
    return d;
  };
  if (starts(b, {0xf3, 0x0f, 0x1e, 0xfa})) return fixed(4);  // endbr64
  if (starts(b, {0x90})) return fixed(1);                    // nop
  if (starts(b, {0x66, 0x90})) return fixed(2);              // xchg %ax,%ax
  if (starts(b, {0x0f, 0x1f, 0x00})) return fixed(3);        // nopl (%rax)
  if (starts(b, {0x0f, 0x1f, 0x40})) return fixed(4);        // nopl disp8(%rax)
  if (starts(b, {0x0f, 0x1f, 0x44, 0x00})) return fixed(5);  // nopl disp8(%rax,%rax,1)
  if (starts(b, {0x66, 0x0f, 0x1f, 0x44, 0x00})) return fixed(6);
  if (starts(b, {0xb8})) return fixed(5);                                   // mov $imm32,%eax
  if (starts(b, {0x48, 0xc7, 0xc0})) return fixed(7);                       // mov $imm32,%rax
  if (starts(b, {0x31, 0xc0}) || starts(b, {0x33, 0xc0})) return fixed(2);  // xor %eax,%eax
  if (starts(b, {0x48, 0x31, 0xc0}) || starts(b, {0x48, 0x33, 0xc0})) return fixed(3);
  if (starts(b, {0x48, 0x8d, 0x64, 0x24, 0x08})) {  // lea 0x8(%rsp),%rsp
    d.flow = Flow::drop_return;
    d.length = 5;
    return d;
  }
  if (starts(b, {0xc3})) {
    d.flow = Flow::ret;
    d.length = 1;
    return d;
  }
  if ((starts(b, {0xe8}) || starts(b, {0xe9})) && b.size() >= 5) {
    d.flow = b[0] == 0xe8 ? Flow::call : Flow::jump;
    d.length = 5;
    d.target = pc + 5 + static_cast<std::uint64_t>(rel32(b, 1));
    return d;
  }
  return d;
}

std::uint32_t le32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return static_cast<std::uint32_t>(b[at]) | static_cast<std::uint32_t>(b[at + 1]) << 8 |
         static_cast<std::uint32_t>(b[at + 2]) << 16 | static_cast<std::uint32_t>(b[at + 3]) << 24;
}

constexpr std::uint32_t kArm64MovX9X30 = 0xaa1e03e9;  // an enabled ftrace site's first half

bool arm64_bl(std::uint32_t insn) {
  return (insn & 0xfc000000u) == 0x94000000u;
}

// `b`: the bytes at pc (8 of them where readable: an ftrace site is two instructions).
Decoded decode_arm64(std::uint64_t pc, const std::vector<std::uint8_t>& b) {
  Decoded d;
  const std::uint32_t insn = le32(b, 0);
  d.length = 4;
  auto imm26 = [&] {
    std::int64_t off = static_cast<std::int64_t>(insn & 0x03ffffffu);
    if (off & 0x02000000) off -= 0x04000000;
    return pc + static_cast<std::uint64_t>(off * 4);
  };
  if (insn == kArm64MovX9X30 && b.size() >= 8 && arm64_bl(le32(b, 4))) {
    // `mov x9, x30; bl <ftrace trampoline>`: a patch site someone has enabled. With ftrace off
    // it is `mov x9, x30; nop` (or two nops): two instructions of the function's own.
    d.flow = Flow::next;
    d.length = 8;
    d.counted = 2;
    return d;
  }
  if ((insn & 0xfffffc1fu) == 0xd65f0000u || insn == 0xd65f0bffu || insn == 0xd65f0fffu) {
    d.flow = Flow::ret;  // ret Xn, retaa, retab
    return d;
  }
  if (arm64_bl(insn) || (insn & 0xfc000000u) == 0x14000000u) {
    d.flow = arm64_bl(insn) ? Flow::call : Flow::jump;
    d.target = imm26();
    return d;
  }
  const bool choice = (insn & 0xff000000u) == 0x54000000u ||  // b.cond, bc.cond
                      (insn & 0x7e000000u) == 0x34000000u ||  // cbz, cbnz
                      (insn & 0x7e000000u) == 0x36000000u ||  // tbz, tbnz
                      (insn & 0xfe000000u) == 0xd6000000u ||  // br, blr, eret, braa...
                      (insn & 0xff000000u) == 0xd4000000u ||  // svc, hvc, brk, hlt...
                      (insn & 0xffff0000u) == 0;              // udf
  d.flow = choice ? Flow::unknown : Flow::next;
  return d;
}

}  // namespace

StraightLineCount count_straight_line(CodeArch arch, std::uint64_t entry, const CodeReader& read,
                                      int max_depth) {
  std::vector<std::uint64_t> returns;  // the open calls' return addresses
  std::uint64_t pc = entry;
  std::uint64_t n = 0;
  while (n < kMaxInstructions) {
    // x86-64: the longest form decoded is 7 bytes; arm64: an ftrace site is two instructions.
    std::optional<std::vector<std::uint8_t>> bytes = read(pc, 8);
    if (!bytes && arch == CodeArch::arm64) bytes = read(pc, 4);
    if (!bytes || bytes->size() < 4)
      return not_counted("its code at " + hex(pc) + " cannot be read");
    const Decoded d = arch == CodeArch::x86_64 ? decode_x86(pc, *bytes) : decode_arm64(pc, *bytes);
    if (d.flow == Flow::unknown)
      return not_counted("an instruction not followed at " + hex(pc) + " (" +
                         hex_bytes(*bytes, arch == CodeArch::arm64 ? 4 : 8) + ")");
    n += d.counted;
    switch (d.flow) {
      case Flow::next:
        pc += d.length;
        break;
      case Flow::call:
        if (static_cast<int>(returns.size()) >= max_depth)
          return not_counted("calls nested deeper than " + std::to_string(max_depth) + " at " +
                             hex(pc));
        returns.push_back(pc + d.length);
        pc = d.target;
        break;
      case Flow::jump:
        pc = d.target;
        break;
      case Flow::drop_return:
        if (returns.empty()) return not_counted("its own return address dropped at " + hex(pc));
        returns.pop_back();
        pc += d.length;
        break;
      case Flow::ret:
        if (returns.empty()) return {n, {}};
        pc = returns.back();
        returns.pop_back();
        break;
      case Flow::unknown:
        break;
    }
  }
  return not_counted("no return within " + std::to_string(kMaxInstructions) + " instructions");
}

std::vector<CoreSegment> core_load_segments(const std::string& path) {
  std::vector<CoreSegment> segments;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return segments;
  Elf64_Ehdr eh{};
  if (::pread(fd.get(), &eh, sizeof eh, 0) != static_cast<ssize_t>(sizeof eh)) return segments;
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize != sizeof(Elf64_Phdr))
    return segments;
  std::uint64_t count = eh.e_phnum;
  if (count == PN_XNUM) {  // the real count is the first section header's sh_info
    Elf64_Shdr sh{};
    if (eh.e_shoff == 0 || ::pread(fd.get(), &sh, sizeof sh, static_cast<off_t>(eh.e_shoff)) !=
                               static_cast<ssize_t>(sizeof sh))
      return segments;
    count = sh.sh_info;
  }
  std::vector<Elf64_Phdr> ph(count);
  const auto bytes = static_cast<ssize_t>(count * sizeof(Elf64_Phdr));
  if (count == 0 || ::pread(fd.get(), ph.data(), static_cast<std::size_t>(bytes),
                            static_cast<off_t>(eh.e_phoff)) != bytes)
    return segments;
  for (const auto& p : ph)
    if (p.p_type == PT_LOAD && p.p_filesz > 0)
      segments.push_back({p.p_vaddr, p.p_offset, p.p_filesz});
  return segments;
}

std::optional<std::uint64_t> core_file_offset(const std::vector<CoreSegment>& segments,
                                              std::uint64_t addr, std::size_t len) {
  for (const auto& s : segments)
    if (addr >= s.vaddr && addr - s.vaddr <= s.size && len <= s.size - (addr - s.vaddr))
      return s.offset + (addr - s.vaddr);
  return std::nullopt;
}

CodeReader core_reader(const std::string& path) {
  auto fd = std::make_shared<Fd>(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto segments = std::make_shared<const std::vector<CoreSegment>>(core_load_segments(path));
  return [fd, segments](std::uint64_t addr,
                        std::size_t len) -> std::optional<std::vector<std::uint8_t>> {
    if (!*fd) return std::nullopt;
    const auto at = core_file_offset(*segments, addr, len);
    if (!at) return std::nullopt;
    std::vector<std::uint8_t> b(len);
    if (::pread(fd->get(), b.data(), len, static_cast<off_t>(*at)) != static_cast<ssize_t>(len))
      return std::nullopt;
    return b;
  };
}

std::optional<std::uint64_t> kallsyms_address(const std::string& kallsyms_text,
                                              const std::string& name) {
  std::optional<std::uint64_t> found;
  std::istringstream in(kallsyms_text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string addr, type, sym, module;
    if (!(fields >> addr >> type >> sym) || sym != name || (fields >> module)) continue;
    if (type != "t" && type != "T") continue;
    std::uint64_t a = 0;
    try {
      a = std::stoull(addr, nullptr, 16);
    } catch (const std::exception&) {
      continue;
    }
    if (a == 0 || (found && *found != a)) return std::nullopt;  // hidden, or two of that name
    found = a;
  }
  return found;
}

StraightLineCount count_kernel_function(const std::string& name) {
#if defined(__x86_64__)
  constexpr CodeArch arch = CodeArch::x86_64;
#elif defined(__aarch64__)
  constexpr CodeArch arch = CodeArch::arm64;
#else
#error "pmcprof decodes kernel text for x86-64 and arm64"
#endif
  const auto addr = kallsyms_address(read_file("/proc/kallsyms").value_or(""), name);
  if (!addr) return not_counted("no address for " + name + " in /proc/kallsyms");
  {
    Fd probe(::open("/proc/kcore", O_RDONLY | O_CLOEXEC));
    if (!probe)
      return not_counted(errno == ENOENT ? std::string("this kernel has no /proc/kcore")
                                         : "/proc/kcore: " + std::string(std::strerror(errno)));
  }
  if (core_load_segments("/proc/kcore").empty())
    return not_counted("/proc/kcore's segments cannot be read");
  return count_straight_line(arch, *addr, core_reader("/proc/kcore"));
}

}  // namespace pmcprof

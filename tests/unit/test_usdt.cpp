// USDT probes: the stapsdt argument specs (x86-64 and arm64 operand syntax), the NT_STAPSDT
// descriptor, and the notes of a real ELF file: this test binary, which carries SDT probes of
// its own (<sys/sdt.h>) so their sites and semaphores can be checked against where the code and
// the variables really are in memory.
#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/probes/usdt.hpp"
#include "pmcprof/util/error.hpp"

#if __has_include(<sys/sdt.h>)
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#define PMCPROF_HAVE_SDT 1
// A probe's semaphore, as dtrace -G makes them: the kernel raises it while a uprobe with it is
// attached.
extern "C" {
__extension__ unsigned short pmcprof_unit_first_semaphore __attribute__((unused))
__attribute__((section(".probes")));
__extension__ unsigned short pmcprof_unit_second_semaphore __attribute__((unused))
__attribute__((section(".probes")));
}
#endif

using namespace pmcprof;

namespace {

UsdtArg x86(std::string_view spec) {
  return parse_usdt_arg(spec, SdtArch::x86_64);
}

UsdtArg arm64(std::string_view spec) {
  return parse_usdt_arg(spec, SdtArch::aarch64);
}

// The message parse_usdt_arg throws for `spec`; fails the test when it does not throw.
std::string arg_error(std::string_view spec, SdtArch arch) {
  try {
    parse_usdt_arg(spec, arch);
    ADD_FAILURE() << "'" << spec << "' was accepted";
  } catch (const UserError& e) {
    return e.what();
  }
  return {};
}

// An NT_STAPSDT descriptor: three addresses of `width` bytes, then provider, name and args.
std::vector<unsigned char> desc(std::size_t width, std::uint64_t pc, std::uint64_t base,
                                std::uint64_t sema, const std::string& strings) {
  std::vector<unsigned char> out(3 * width);
  const std::uint64_t addrs[] = {pc, base, sema};
  for (std::size_t i = 0; i < 3; ++i) {
    if (width == 8) {
      std::memcpy(out.data() + i * 8, &addrs[i], 8);
    } else {
      const auto w = static_cast<std::uint32_t>(addrs[i]);
      std::memcpy(out.data() + i * 4, &w, 4);
    }
  }
  out.insert(out.end(), strings.begin(), strings.end());
  return out;
}

}  // namespace

// ---- x86-64 operands (AT&T syntax, as GCC writes them) ----

TEST(UsdtArgX86, Registers) {
  UsdtArg a = x86("-4@%edi");
  EXPECT_EQ(a.kind, UsdtArg::Kind::reg);
  EXPECT_EQ(a.size, 4);
  EXPECT_TRUE(a.is_signed);
  EXPECT_EQ(a.reg, "edi");
  EXPECT_EQ(a.reg_offset, 112);  // struct pt_regs: di
  a = x86("8@%rbx");
  EXPECT_EQ(a.kind, UsdtArg::Kind::reg);
  EXPECT_FALSE(a.is_signed);
  EXPECT_EQ(a.size, 8);
  EXPECT_EQ(a.reg_offset, 40);
  EXPECT_EQ(x86("1@%sil").reg_offset, 104);
  EXPECT_EQ(x86("2@%r8w").reg_offset, 72);
  EXPECT_EQ(x86("-8@%r14").reg_offset, 8);
  EXPECT_EQ(x86("4@%r12d").reg_offset, 24);
  EXPECT_EQ(x86("8@%r15").reg_offset, 0);
  EXPECT_EQ(x86("8@%rax").reg_offset, 80);
  EXPECT_EQ(x86("8@%rsp").reg_offset, 152);
}

TEST(UsdtArgX86, MemoryAtARegister) {
  // PostgreSQL's query__done: 8@-144(%rbp)
  UsdtArg a = x86("8@-144(%rbp)");
  EXPECT_EQ(a.kind, UsdtArg::Kind::deref);
  EXPECT_EQ(a.reg_offset, 32);
  EXPECT_EQ(a.value, -144);
  EXPECT_EQ(a.scale, 0);
  a = x86("4@(%r12)");
  EXPECT_EQ(a.kind, UsdtArg::Kind::deref);
  EXPECT_EQ(a.value, 0);
  EXPECT_EQ(a.reg_offset, 24);
  EXPECT_EQ(x86("8@0x10(%rsp)").value, 16);
  EXPECT_EQ(x86("-2@+8(%rdi)").value, 8);
}

TEST(UsdtArgX86, BaseIndexScale) {
  // sdt_workload's work__start: 8@(%rdx,%rax,8), an array element
  UsdtArg a = x86("8@(%rdx,%rax,8)");
  EXPECT_EQ(a.kind, UsdtArg::Kind::deref);
  EXPECT_EQ(a.reg_offset, 96);    // dx
  EXPECT_EQ(a.index_offset, 80);  // ax
  EXPECT_EQ(a.scale, 8);
  EXPECT_EQ(a.value, 0);
  a = x86("4@-4(%rbx,%rcx)");
  EXPECT_EQ(a.index_offset, 88);
  EXPECT_EQ(a.scale, 1);
  EXPECT_EQ(a.value, -4);
}

TEST(UsdtArgX86, Constants) {
  UsdtArg a = x86("-4@$8");
  EXPECT_EQ(a.kind, UsdtArg::Kind::constant);
  EXPECT_EQ(a.value, 8);
  EXPECT_TRUE(a.is_signed);
  EXPECT_EQ(x86("4@$-5").value, -5);
  EXPECT_EQ(x86("8@$0x1f").value, 31);
}

TEST(UsdtArgX86, GlobalsRelativeToTheInstructionPointer) {
  // PostgreSQL's buffer probes: -4@NBuffers(%rip), -4@40+CheckpointStats(%rip)
  UsdtArg a = x86("-4@NBuffers(%rip)");
  EXPECT_EQ(a.kind, UsdtArg::Kind::ip_relative);
  EXPECT_EQ(a.symbol, "NBuffers");
  EXPECT_EQ(a.value, 0);
  a = x86("-4@40+CheckpointStats(%rip)");
  EXPECT_EQ(a.kind, UsdtArg::Kind::ip_relative);
  EXPECT_EQ(a.symbol, "CheckpointStats");
  EXPECT_EQ(a.value, 40);
  a = x86("8@sym.part.0-8(%rip)");
  EXPECT_EQ(a.symbol, "sym.part.0");
  EXPECT_EQ(a.value, -8);
}

TEST(UsdtArgX86, Refused) {
  const auto x = SdtArch::x86_64;
  EXPECT_NE(arg_error("%rax", x).find("no size"), std::string::npos);
  EXPECT_NE(arg_error("3@%eax", x).find("1, 2, 4 or 8"), std::string::npos);
  EXPECT_NE(arg_error("16@%rax", x).find("1, 2, 4 or 8"), std::string::npos);
  EXPECT_NE(arg_error("8@%xmm0", x).find("unknown register %xmm0"), std::string::npos);
  EXPECT_NE(arg_error("1@%ah", x).find("high-byte"), std::string::npos);
  EXPECT_NE(arg_error("8@%rip", x).find("instruction pointer"), std::string::npos);
  EXPECT_NE(arg_error("8@(%rip)", x).find("without a symbol"), std::string::npos);
  EXPECT_NE(arg_error("8@(%rax,%rbx,3)", x).find("scale"), std::string::npos);
  EXPECT_NE(arg_error("8@sym(%rax)", x).find("a symbol added to %rax"), std::string::npos);
  EXPECT_NE(arg_error("8@", x).find("no operand"), std::string::npos);
  EXPECT_NE(arg_error("8@$x", x).find("not a constant"), std::string::npos);
  EXPECT_NE(arg_error("8@16", x).find("neither"), std::string::npos);
  // The message names the spec and how to go on.
  try {
    x86("8@%xmm0");
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'8@%xmm0'"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("readelf -n"), std::string::npos) << e.hint();
  }
}

// ---- arm64 operands ----

TEST(UsdtArgArm64, RegistersAndStackPointer) {
  UsdtArg a = arm64("8@x19");
  EXPECT_EQ(a.kind, UsdtArg::Kind::reg);
  EXPECT_EQ(a.reg_offset, 19 * 8);  // struct user_pt_regs: regs[19]
  a = arm64("-4@w0");
  EXPECT_EQ(a.reg_offset, 0);
  EXPECT_EQ(a.size, 4);
  EXPECT_TRUE(a.is_signed);
  EXPECT_EQ(arm64("8@x30").reg_offset, 30 * 8);
  EXPECT_EQ(arm64("8@sp").reg_offset, 31 * 8);
}

TEST(UsdtArgArm64, MemoryAtARegister) {
  UsdtArg a = arm64("8@[sp, 16]");
  EXPECT_EQ(a.kind, UsdtArg::Kind::deref);
  EXPECT_EQ(a.reg_offset, 31 * 8);
  EXPECT_EQ(a.value, 16);
  a = arm64("8@[x1]");
  EXPECT_EQ(a.kind, UsdtArg::Kind::deref);
  EXPECT_EQ(a.reg_offset, 8);
  EXPECT_EQ(a.value, 0);
  EXPECT_EQ(arm64("4@[x29, -8]").value, -8);
  EXPECT_EQ(arm64("-4@[x2, #24]").value, 24);
}

TEST(UsdtArgArm64, Constants) {
  UsdtArg a = arm64("4@5");
  EXPECT_EQ(a.kind, UsdtArg::Kind::constant);
  EXPECT_EQ(a.value, 5);
  EXPECT_EQ(arm64("-4@#-3").value, -3);
}

TEST(UsdtArgArm64, Refused) {
  const auto a = SdtArch::aarch64;
  EXPECT_NE(arg_error("8@x31", a).find("unknown register x31"), std::string::npos);
  EXPECT_NE(arg_error("8@v0", a).find("unknown register v0"), std::string::npos);
  EXPECT_NE(arg_error("8@x01", a).find("unknown register"), std::string::npos);
  EXPECT_NE(arg_error("8@[x1", a).find("unclosed"), std::string::npos);
  EXPECT_NE(arg_error("8@[x1, y]", a).find("offset"), std::string::npos);
  // x86 syntax is not arm64's
  EXPECT_NE(arg_error("8@%rax", a).find("unknown register"), std::string::npos);
}

TEST(UsdtArgs, SplitOnSpacesOutsideBrackets) {
  EXPECT_EQ(split_usdt_args("-4@%edi 8@(%rdx,%rax,8)"),
            (std::vector<std::string>{"-4@%edi", "8@(%rdx,%rax,8)"}));
  EXPECT_EQ(split_usdt_args("8@[sp, 16] -4@w1"), (std::vector<std::string>{"8@[sp, 16]", "-4@w1"}));
  EXPECT_EQ(split_usdt_args("  8@%rbp   8@%r12  -4@%eax "),
            (std::vector<std::string>{"8@%rbp", "8@%r12", "-4@%eax"}));
  EXPECT_TRUE(split_usdt_args("").empty());
}

// ---- the note descriptor ----

TEST(StapsdtDesc, SixtyFourBit) {
  const auto d = desc(8, 0x4722d3, 0x792ea0, 0x88595e,
                      std::string("postgresql\0query__start\0"
                                  "8@%rbx\0",
                                  31));
  auto n = parse_stapsdt_desc(d.data(), d.size(), 8);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->pc, 0x4722d3u);
  EXPECT_EQ(n->base, 0x792ea0u);
  EXPECT_EQ(n->semaphore, 0x88595eu);
  EXPECT_EQ(n->provider, "postgresql");
  EXPECT_EQ(n->name, "query__start");
  EXPECT_EQ(n->args, "8@%rbx");
}

TEST(StapsdtDesc, ThirtyTwoBitAndNoArguments) {
  const auto d = desc(4, 0x1000, 0x2000, 0, std::string("p\0n\0\0", 5));
  auto n = parse_stapsdt_desc(d.data(), d.size(), 4);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->pc, 0x1000u);
  EXPECT_EQ(n->semaphore, 0u);
  EXPECT_EQ(n->args, "");
}

TEST(StapsdtDesc, MalformedIsRefused) {
  const auto good = desc(8, 1, 2, 3, std::string("p\0n\0a\0", 6));
  EXPECT_FALSE(parse_stapsdt_desc(good.data(), 20, 8));               // addresses cut short
  EXPECT_FALSE(parse_stapsdt_desc(good.data(), good.size() - 1, 8));  // args without NUL
  EXPECT_FALSE(parse_stapsdt_desc(good.data(), good.size(), 2));      // no such width
  const auto empty = desc(8, 1, 2, 3, std::string("\0n\0a\0", 5));
  EXPECT_FALSE(parse_stapsdt_desc(empty.data(), empty.size(), 8));  // no provider
}

TEST(SdtArch, FromTheElfMachine) {
  EXPECT_EQ(sdt_arch_of_machine(EM_X86_64), SdtArch::x86_64);
  EXPECT_EQ(sdt_arch_of_machine(EM_AARCH64), SdtArch::aarch64);
  EXPECT_FALSE(sdt_arch_of_machine(EM_386));
  EXPECT_STREQ(to_string(SdtArch::aarch64), "arm64");
}

// ---- a real file: this test binary ----

#ifdef PMCPROF_HAVE_SDT
namespace {

// Keeps the compiler from folding the arguments into constants.
volatile int g_counter = 7;
const char* volatile g_text = "pmcprof";

__attribute__((noinline)) void fire_probes() {
  const int n = g_counter;
  const char* s = g_text;
  STAP_PROBE2(pmcprof_unit, first, n, s);
  STAP_PROBE(pmcprof_unit, second);
  if (n > 100) STAP_PROBE2(pmcprof_unit, first, n + 1, s);  // a second site
}

struct Mapped {
  std::uint64_t start = 0, end = 0, offset = 0;
};

// The mapping of this executable that holds file offset `off`.
std::optional<Mapped> mapping_of(std::uint64_t off) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe");
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0, offset = 0;
    char perms[8] = {};
    char path[4096] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi, perms, &offset,
                    path) != 5)
      continue;
    if (exe != path) continue;
    if (off >= offset && off < offset + (hi - lo)) return Mapped{lo, hi, offset};
  }
  return std::nullopt;
}

}  // namespace

TEST(UsdtFile, ProbesOfThisBinary) {
  fire_probes();
  const auto probes = read_usdt_probes("/proc/self/exe");
  const UsdtProbe* first = nullptr;
  const UsdtProbe* second = nullptr;
  for (const auto& p : probes) {
    if (p.provider == "pmcprof_unit" && p.name == "first") first = &p;
    if (p.provider == "pmcprof_unit" && p.name == "second") second = &p;
  }
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->locations.size(), 2u);
  EXPECT_EQ(second->locations.size(), 1u);
  EXPECT_EQ(first->arg_count(), 2u);
  EXPECT_EQ(second->arg_count(), 0u);
  EXPECT_EQ(first->text(), "usdt:/proc/self/exe:pmcprof_unit:first");
  // Every site is a nop in this process's code, where the file offset says; its semaphore is
  // the variable declared above.
  for (const UsdtProbe* p : {first, second}) {
    for (const auto& loc : p->locations) {
      for (const auto& spec : split_usdt_args(loc.args))
        EXPECT_NO_THROW(parse_usdt_arg(spec, p->arch)) << spec;
      auto code = mapping_of(loc.file_offset);
      ASSERT_TRUE(code) << p->name << " site at file offset " << loc.file_offset;
      const auto* insn =
          reinterpret_cast<const unsigned char*>(code->start + loc.file_offset - code->offset);
#if defined(__x86_64__)
      EXPECT_EQ(insn[0], 0x90) << p->name;
#elif defined(__aarch64__)
      std::uint32_t word;
      std::memcpy(&word, insn, 4);
      EXPECT_EQ(word, 0xd503201fu) << p->name;
#endif
      ASSERT_NE(loc.semaphore_offset, 0u);
      auto data = mapping_of(loc.semaphore_offset);
      ASSERT_TRUE(data);
      const std::uint64_t at = data->start + loc.semaphore_offset - data->offset;
      const void* want = p == first ? static_cast<const void*>(&pmcprof_unit_first_semaphore)
                                    : static_cast<const void*>(&pmcprof_unit_second_semaphore);
      EXPECT_EQ(reinterpret_cast<const void*>(at), want) << p->name;
    }
  }
}

TEST(UsdtFile, FindOrSayWhatThereIs) {
  const UsdtProbe p = find_usdt_probe("/proc/self/exe", "pmcprof_unit", "first");
  EXPECT_EQ(p.locations.size(), 2u);
  try {
    find_usdt_probe("/proc/self/exe", "pmcprof_unit", "third");
    ADD_FAILURE() << "no such probe was found";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no USDT probe 'pmcprof_unit:third'"), std::string::npos)
        << e.what();
    EXPECT_NE(e.hint().find("first"), std::string::npos) << e.hint();
    EXPECT_NE(e.hint().find("second"), std::string::npos) << e.hint();
  }
  try {
    find_usdt_probe("/proc/self/exe", "nosuch", "first");
    ADD_FAILURE() << "no such provider was found";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no USDT provider 'nosuch'"), std::string::npos);
    EXPECT_NE(e.hint().find("pmcprof_unit"), std::string::npos) << e.hint();
  }
}

TEST(UsdtFile, ArgumentsForTheBpfSide) {
  const UsdtProbe p = find_usdt_probe("/proc/self/exe", "pmcprof_unit", "first");
  const UsdtLocation& site = p.locations.front();
  const auto specs = split_usdt_args(site.args);
  ASSERT_EQ(specs.size(), 2u);
  const UsdtArg text = parse_usdt_arg(specs[1], p.arch);
  EXPECT_EQ(text.size, 8);  // a pointer
  const ArgSpec s = usdt_arg_spec(p, site, 1, /*as_string=*/true);
  EXPECT_TRUE(s.is_string);
  EXPECT_TRUE(s.user);
  EXPECT_EQ(s.size, 8);
  const ArgSpec n = usdt_arg_spec(p, site, 0, false);
  EXPECT_EQ(n.size, 4);
  EXPECT_TRUE(n.is_signed);
  EXPECT_FALSE(n.is_string);
  try {
    usdt_arg_spec(p, site, 2, false);
    ADD_FAILURE() << "arg2 of a probe with two arguments was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("has 2 arguments (arg0..arg1)"), std::string::npos)
        << e.what();
  }
  try {
    usdt_arg_spec(p, site, 0, true);
    ADD_FAILURE() << "a 4-byte argument was accepted as a string's address";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is 4 bytes"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("--by arg0"), std::string::npos) << e.hint();
  }
}
#endif  // PMCPROF_HAVE_SDT

TEST(UsdtFile, AGlobalIsReadRelativeToTheProbedAddress) {
  // A global named in an x86 spec is found in the file's symbols and made relative to the
  // site's own address: the kernel gives the probed address in the instruction pointer.
  UsdtProbe p;
  p.path = "/proc/self/exe";
  p.provider = "p";
  p.name = "n";
  p.arch = SdtArch::x86_64;
  UsdtLocation at0, at100;
  at0.args = at100.args = "-4@8+main(%rip)";
  at100.address = 100;
  const ArgSpec a = usdt_arg_spec(p, at0, 0, false), b = usdt_arg_spec(p, at100, 0, false);
  EXPECT_EQ(a.kind, ArgSpec::Kind::deref);
  EXPECT_EQ(a.reg_off, 128);  // pt_regs ip
  EXPECT_EQ(a.val - b.val, 100u);
  EXPECT_NE(a.val, 8u);  // main is not at 0
  UsdtLocation missing = at0;
  missing.args = "-4@pmcprof_no_such_symbol(%rip)";
  EXPECT_THROW(usdt_arg_spec(p, missing, 0, false), UserError);
}

TEST(UsdtFile, NotAnElfFileOrNoNotes) {
  const std::string text = ::testing::TempDir() + "pmcprof_not_elf.txt";
  { std::ofstream(text) << "not an ELF file\n"; }
  try {
    read_usdt_probes(text);
    ADD_FAILURE() << "a text file was read";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is not an ELF file"), std::string::npos) << e.what();
  }
  std::filesystem::remove(text);
  EXPECT_THROW(read_usdt_probes("/nonexistent/pmcprof"), UserError);
  EXPECT_THROW(read_usdt_probes("/proc"), UserError);  // a directory
}

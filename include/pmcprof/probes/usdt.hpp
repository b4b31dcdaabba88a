#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmcprof/probes/target_spec.hpp"

namespace pmcprof {

// USDT (statically defined tracing) probes, as SystemTap's <sys/sdt.h> and DTrace-style
// providers (Python, PostgreSQL, libstdc++) put them in an ELF file: one NT_STAPSDT note per
// probe site in .note.stapsdt, each naming its provider, its name, its address, an optional
// semaphore (a counter the program tests before doing the work of a probe's arguments) and
// its arguments' locations as assembler operands ("-4@%eax 8@16(%rbx)").

// The architectures whose argument specs pmcprof reads (by the ELF file's e_machine).
enum class SdtArch { x86_64, aarch64 };
std::optional<SdtArch> sdt_arch_of_machine(unsigned e_machine);
const char* to_string(SdtArch arch);

// One argument of a probe site.
struct UsdtArg {
  enum class Kind {
    constant,     // "4@$5" (x86), "4@5" (arm64): the value
    reg,          // "-4@%eax", "8@x19": a register's value
    deref,        // "8@-16(%rbp)", "4@(%r12)", "8@[sp, 16]", "8@[x1]": memory at reg + value;
                  // "8@(%rdx,%rax,8)": + index * scale
    ip_relative,  // "-4@NBuffers(%rip)", "-4@40+CheckpointStats(%rip)": a global at symbol + value
  };
  Kind kind = Kind::constant;
  int size = 8;  // bytes: 1, 2, 4 or 8
  bool is_signed = false;
  std::string reg;      // as written, without '%': "eax", "r14d", "rbp", "x0", "sp"
  int reg_offset = -1;  // of its 64-bit register in the architecture's struct pt_regs
  std::string index;    // deref: the index register ("" when none) ...
  int index_offset = -1;
  int scale = 0;           // ... and its scale (1, 2, 4, 8)
  std::int64_t value = 0;  // the constant, or the displacement
  std::string symbol;      // ip_relative
};

// Splits a note's argument text into one spec per argument (spaces separate them, except
// inside arm64's "[sp, 16]").
std::vector<std::string> split_usdt_args(std::string_view args);

// Parses one argument spec. Throws UserError naming the spec and why it is not understood.
UsdtArg parse_usdt_arg(std::string_view spec, SdtArch arch);

// A note's descriptor: the probe's address, the .stapsdt.base address it was linked with, its
// semaphore's address (0: none), then provider, name and arguments as NUL-terminated strings.
struct SdtNote {
  std::uint64_t pc = 0;
  std::uint64_t base = 0;
  std::uint64_t semaphore = 0;
  std::string provider;
  std::string name;
  std::string args;
};

// Decodes one NT_STAPSDT descriptor with addresses of `addr_size` bytes (8 in a 64-bit ELF
// file, 4 in a 32-bit one). nullopt when it is malformed.
std::optional<SdtNote> parse_stapsdt_desc(const void* desc, std::size_t size,
                                          std::size_t addr_size);

// Where one site of a probe is in its file.
struct UsdtLocation {
  std::uint64_t address = 0;           // the site's address (link time, .stapsdt.base adjusted)
  std::uint64_t file_offset = 0;       // where its uprobe goes
  std::uint64_t semaphore_offset = 0;  // its semaphore's file offset (uprobe ref_ctr); 0: none
  std::string args;                    // its argument specs, as written in the note
};

// A probe: every site of one provider:name in one file.
struct UsdtProbe {
  std::string path;
  std::string provider;
  std::string name;
  SdtArch arch = SdtArch::x86_64;
  std::vector<UsdtLocation> locations;
  // The argument count (the same at every site, as <sys/sdt.h> makes them).
  std::size_t arg_count() const;
  std::string text() const;  // "usdt:PATH:PROVIDER:NAME"
};

// Every probe of an ELF file, grouped by provider and name in note order (empty when it has
// no SDT notes). Throws UserError when the file cannot be read, is not ELF, or its notes
// cannot be placed in the file (an address outside its loadable segments).
std::vector<UsdtProbe> read_usdt_probes(const std::string& path);

// One probe of a file. Throws UserError in one line: the file has no SDT notes, has no such
// provider (naming the ones it has), or the provider has no such probe (naming its probes).
UsdtProbe find_usdt_probe(const std::string& path, const std::string& provider,
                          const std::string& name);

// The BPF side's view of argument `index` at `site` of `probe`, for a --by key: its location
// in the uprobe's pt_regs, its size and sign, and (as_string) that its value is the address of
// a string in the process. A global's address is made relative to the probe's own address
// (the kernel gives the probed address in the instruction pointer), so it holds wherever the
// file is mapped. Throws UserError: index out of range, an argument pmcprof cannot read.
ArgSpec usdt_arg_spec(const UsdtProbe& probe, const UsdtLocation& site, unsigned index,
                      bool as_string);

}  // namespace pmcprof

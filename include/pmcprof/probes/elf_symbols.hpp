#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pmcprof {

// A function in an ELF file, where a uprobe attaches.
struct ElfFunction {
  std::string path;
  std::string symbol;
  std::uint64_t address = 0;      // st_value
  std::uint64_t file_offset = 0;  // what the uprobe PMU wants
};

// Resolves the binary part of PATH:SYMBOL: a path (contains '/'), a bare library name
// ("libc", "libc.so.6", "pthread") looked up in the -p process's maps, then in ld.so's
// cache (ldconfig -p) and the usual library directories, or "" meaning /proc/PID/exe.
// Throws UserError naming what was searched.
std::string resolve_binary(const std::string& binary, std::optional<pid_t> pid);

// Finds a function symbol (STT_FUNC / STT_GNU_IFUNC) in .symtab or .dynsym and computes its
// file offset. Throws UserError: file missing, not an ELF, symbol absent (saying whether the
// file is stripped of .symtab).
ElfFunction find_elf_function(const std::string& path, const std::string& symbol);

// Library candidates from `ldconfig -p` output for a bare name ("c" / "libc" / "libc.so.6").
std::vector<std::string> match_ldconfig(const std::string& ldconfig_output,
                                        const std::string& name);

// The path of a mapped library in /proc/PID/maps text whose file name matches `name`.
std::optional<std::string> match_maps_library(const std::string& maps_text,
                                              const std::string& name);

}  // namespace pmcprof

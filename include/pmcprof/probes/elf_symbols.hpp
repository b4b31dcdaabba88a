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
// file is stripped of .symtab, with the closest function names as the hint).
ElfFunction find_elf_function(const std::string& path, const std::string& symbol);

// Every function of an ELF file, once per name (without its @VERSION), sorted by name; what
// find_elf_function would find for each. Throws UserError as find_elf_function does.
std::vector<ElfFunction> elf_functions(const std::string& path);

// How ld.so's cache and Debian's multiarch layout name one architecture's libraries.
struct LibraryArch {
  std::string debian;  // dpkg's architecture name: "amd64", "arm64", ...
  // What `ldconfig -p` prints after "libc6" in an entry's parentheses: "x86-64" for
  // "(libc6,x86-64)", "AArch64", "hard-float", "" for i386's bare "(libc6)". nullopt: an
  // architecture pmcprof does not know; every entry is then a candidate.
  std::optional<std::string> ldconfig_abi;
  std::string multiarch;  // the multiarch tuple: "x86_64-linux-gnu", "aarch64-linux-gnu", ...
};

// The architecture this pmcprof was compiled for (the one a probed process runs).
const LibraryArch& host_library_arch();

// A Debian architecture by dpkg name ("amd64", "arm64", "armhf", "i386", "ppc64el", ...).
std::optional<LibraryArch> library_arch(const std::string& debian_arch);

// Directories searched for a library when ld.so's cache does not name it: the multiarch
// directories of ARCH first, then the classic ones.
std::vector<std::string> library_dirs(const LibraryArch& arch = host_library_arch());

// Library candidates from `ldconfig -p` output for a bare name ("c" / "libc" / "libc.so.6"):
// only ARCH's entries (a process cannot map another ABI's library).
std::vector<std::string> match_ldconfig(const std::string& ldconfig_output, const std::string& name,
                                        const LibraryArch& arch = host_library_arch());

// The path of a mapped library in /proc/PID/maps text whose file name matches `name`.
std::optional<std::string> match_maps_library(const std::string& maps_text,
                                              const std::string& name);

}  // namespace pmcprof

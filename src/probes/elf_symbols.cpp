#include "pmcprof/probes/elf_symbols.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/fd.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

// "c" -> "libc", "libc.so.6" stays.
std::string library_stem(const std::string& name) {
  std::string stem = starts_with(name, "lib") ? name : "lib" + name;
  return stem;
}

bool library_name_matches(const std::string& file, const std::string& name) {
  const std::string stem = library_stem(name);
  if (file == stem) return true;
  if (name.find(".so") != std::string::npos) return file == name;
  // libc matches libc.so, libc.so.6, libc-2.36.so
  return starts_with(file, stem + ".so") || starts_with(file, stem + "-");
}

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string run_ldconfig() {
  for (const char* cmd : {"/sbin/ldconfig -p 2>/dev/null", "/usr/sbin/ldconfig -p 2>/dev/null"}) {
    std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd, "r"), pclose);
    if (!p) continue;
    std::string out;
    std::array<char, 4096> buf;
    while (std::size_t n = fread(buf.data(), 1, buf.size(), p.get())) out.append(buf.data(), n);
    if (!out.empty()) return out;
  }
  return {};
}

std::optional<std::string> scan_library_dirs(const std::string& name) {
  for (const auto& dir : library_dirs()) {
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    std::optional<std::string> found;
    while (dirent* e = readdir(d)) {
      if (library_name_matches(e->d_name, name)) {
        found = dir + "/" + e->d_name;
        break;
      }
    }
    closedir(d);
    if (found) return found;
  }
  return std::nullopt;
}

// The ABI flags of an `ldconfig -p` entry: "libc6,x86-64, OS ABI: Linux 3.2.0" -> "x86-64",
// "libc6" -> "", "libc6,64bit,nan2008" -> "64bit,nan2008". The first item is the library type
// (libc6, ELF, libc5); annotations ("OS ABI: ...", "hwcap: ...") are dropped.
std::string ldconfig_abi_of(std::string_view flags) {
  std::string abi;
  bool first = true;
  for (const auto& part : split(flags, ',')) {
    if (std::exchange(first, false)) continue;
    const std::string_view item = trim(part);
    if (item.empty() || item.find(':') != std::string_view::npos) continue;
    if (!abi.empty()) abi += ',';
    abi += item;
  }
  return abi;
}

// Debian's architectures (and the ports), as glibc's ldconfig prints their libraries' flags.
const LibraryArch kLibraryArchs[] = {
    {"amd64", "x86-64", "x86_64-linux-gnu"},
    {"arm64", "AArch64", "aarch64-linux-gnu"},
    {"armel", "soft-float", "arm-linux-gnueabi"},
    {"armhf", "hard-float", "arm-linux-gnueabihf"},
    {"i386", "", "i386-linux-gnu"},
    {"mips64el", "64bit", "mips64el-linux-gnuabi64"},
    {"ppc64el", "64bit", "powerpc64le-linux-gnu"},
    {"riscv64", "double-float", "riscv64-linux-gnu"},
    {"s390x", "64bit", "s390x-linux-gnu"},
    {"loong64", "double-float", "loongarch64-linux-gnu"},
    {"ppc64", "64bit", "powerpc64-linux-gnu"},
    {"x32", "x32", "x86_64-linux-gnux32"},
};

// The compile-time target, by dpkg's name for it.
constexpr const char* kHostDebianArch =
#if defined(__x86_64__) && defined(__ILP32__)
    "x32";
#elif defined(__x86_64__)
    "amd64";
#elif defined(__i386__)
    "i386";
#elif defined(__aarch64__)
    "arm64";
#elif defined(__arm__) && defined(__ARM_PCS_VFP)
    "armhf";
#elif defined(__arm__)
    "armel";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    "ppc64el";
#elif defined(__powerpc64__)
    "ppc64";
#elif defined(__s390x__)
    "s390x";
#elif defined(__mips64) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    "mips64el";
#elif defined(__riscv) && __riscv_xlen == 64
    "riscv64";
#elif defined(__loongarch64)
    "loong64";
#else
    "";
#endif

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};

}  // namespace

std::optional<LibraryArch> library_arch(const std::string& debian_arch) {
  for (const auto& a : kLibraryArchs)
    if (a.debian == debian_arch) return a;
  return std::nullopt;
}

const LibraryArch& host_library_arch() {
  static const LibraryArch host =
      library_arch(kHostDebianArch).value_or(LibraryArch{kHostDebianArch, std::nullopt, ""});
  return host;
}

std::vector<std::string> library_dirs(const LibraryArch& arch) {
  std::vector<std::string> dirs;
  if (!arch.multiarch.empty()) dirs = {"/lib/" + arch.multiarch, "/usr/lib/" + arch.multiarch};
  for (const char* d : {"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"})
    dirs.emplace_back(d);
  return dirs;
}

std::vector<std::string> match_ldconfig(const std::string& ldconfig_output, const std::string& name,
                                        const LibraryArch& arch) {
  // Lines look like: "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6"
  std::vector<std::string> out;
  std::istringstream in(ldconfig_output);
  std::string line;
  while (std::getline(in, line)) {
    auto arrow = line.find(" => ");
    auto open = line.find(" (");
    if (arrow == std::string::npos || open == std::string::npos || open > arrow) continue;
    std::string soname(trim(line.substr(0, open)));
    if (!library_name_matches(soname, name)) continue;
    // Only this architecture's entries: on amd64 "(libc6)" is i386 and "(libc6,x32)" x32.
    auto close = line.rfind(')', arrow);
    if (close == std::string::npos || close < open) continue;
    if (arch.ldconfig_abi && ldconfig_abi_of(std::string_view(line).substr(
                                 open + 2, close - open - 2)) != *arch.ldconfig_abi)
      continue;
    out.emplace_back(trim(line.substr(arrow + 4)));
  }
  return out;
}

std::optional<std::string> match_maps_library(const std::string& maps, const std::string& name) {
  std::istringstream in(maps);
  std::string line;
  while (std::getline(in, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (library_name_matches(basename_of(path), name)) return path;
  }
  return std::nullopt;
}

std::string resolve_binary(const std::string& binary, std::optional<pid_t> pid) {
  if (binary.empty()) {
    if (!pid)
      throw UserError("--func ':SYMBOL' needs -p PID (the process whose executable to probe)",
                      "add -p PID, or write /path/to/binary:SYMBOL");
    // The file itself, not the /proc link: the probe must stay valid if the process exits
    // while pmcprof starts (then the run simply reports what it collected).
    const std::string proc = "/proc/" + std::to_string(*pid);
    std::error_code ec;
    auto exe = std::filesystem::read_symlink(proc + "/exe", ec);
    if (!ec) return exe.string();
    if (ec == std::errc::no_such_file_or_directory) {
      std::error_code exists_ec;
      if (!std::filesystem::exists(proc, exists_ec))
        throw UserError("no process with PID " + std::to_string(*pid) + " (it has exited)",
                        "check the PID with ps");
      throw UserError("PID " + std::to_string(*pid) +
                          " has no executable to probe (a kernel thread, or a process exiting)",
                      "give a user process's PID, or write /path/to/binary:SYMBOL");
    }
    throw UserError("cannot read " + proc + "/exe for --func ':SYMBOL': " + ec.message(),
                    "run pmcprof as root, or write /path/to/binary:SYMBOL");
  }
  if (binary.find('/') != std::string::npos) {
    struct stat st {};
    if (stat(binary.c_str(), &st) != 0)
      throw UserError("binary not found: " + binary, "check the path");
    return binary;
  }
  if (pid) {
    if (auto maps = read_file("/proc/" + std::to_string(*pid) + "/maps"))
      if (auto path = match_maps_library(*maps, binary)) return *path;
  }
  auto cached = match_ldconfig(run_ldconfig(), binary);
  if (!cached.empty()) return cached.front();
  if (auto path = scan_library_dirs(binary)) return *path;
  throw UserError("library or binary '" + binary +
                      "' not found (searched ldconfig -p and the standard library directories" +
                      (pid ? ", and the maps of PID " + std::to_string(*pid) : std::string()) + ")",
                  "give a path: --func /path/to/" + binary + ":SYMBOL");
}

namespace {

// An ELF file opened for its symbols: a regular file only, read without blocking, so a FIFO or
// a device named as a binary is refused at once instead of blocking pmcprof forever.
class ElfFile {
 public:
  explicit ElfFile(const std::string& path) : path_(path) {
    fd_ = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd_)
      throw UserError("cannot open " + quote(path) + ": " + errno_string(errno), "check the path");
    struct stat st {};
    if (fstat(fd_.get(), &st) != 0 || !S_ISREG(st.st_mode))
      throw UserError(quote(path) + " is not a regular file, so not an executable or a library",
                      "give an executable or a shared library");
    if (elf_version(EV_CURRENT) == EV_NONE) throw SystemError("libelf is too old");
    elf_.reset(elf_begin(fd_.get(), ELF_C_READ, nullptr));
    if (!elf_ || elf_kind(elf_.get()) != ELF_K_ELF)
      throw UserError(path + " is not an ELF file", "give an executable or a shared library");
  }

  // Calls visit(name, symbol) for each defined function symbol (STT_FUNC, STT_GNU_IFUNC) of
  // .symtab and .dynsym, in section order, until it returns false. Returns whether the file
  // has a .symtab (is not stripped).
  template <typename Visit>
  bool functions(Visit&& visit) const {
    bool has_symtab = false;
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf_.get(), scn)) != nullptr) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr)) continue;
      if (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM) continue;
      if (shdr.sh_type == SHT_SYMTAB) has_symtab = true;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data || shdr.sh_entsize == 0) continue;
      const std::size_t count = shdr.sh_size / shdr.sh_entsize;
      for (std::size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
        const int type = GELF_ST_TYPE(sym.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_value == 0) continue;
        const char* name = elf_strptr(elf_.get(), shdr.sh_link, sym.st_name);
        if (name && !visit(std::string_view(name), sym)) return has_symtab;
      }
    }
    return has_symtab;
  }

  // The function at st_value `address`, with the file offset the uprobe PMU wants.
  ElfFunction function(std::string symbol, std::uint64_t address) const {
    ElfFunction fn;
    fn.path = path_;
    fn.symbol = std::move(symbol);
    fn.address = address;
    fn.file_offset = address;
    std::size_t phnum = 0;
    elf_getphdrnum(elf_.get(), &phnum);
    for (std::size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf_.get(), static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
      if (!(ph.p_flags & PF_X)) continue;
      if (address >= ph.p_vaddr && address < ph.p_vaddr + ph.p_memsz) {
        fn.file_offset = address - ph.p_vaddr + ph.p_offset;
        break;
      }
    }
    return fn;
  }

 private:
  std::string path_;
  Fd fd_;
  std::unique_ptr<Elf, ElfCloser> elf_;
};

// malloc of malloc@@GLIBC_2.2.5: the name a user writes.
std::string_view unversioned(std::string_view name) {
  return name.substr(0, name.find('@'));
}

}  // namespace

ElfFunction find_elf_function(const std::string& path, const std::string& symbol) {
  const ElfFile elf(path);
  std::optional<std::uint64_t> found;
  std::vector<std::string> names;  // for "did you mean", when it is not there
  const bool has_symtab = elf.functions([&](std::string_view name, const GElf_Sym& sym) {
    // Versioned names: malloc@@GLIBC_2.2.5 matches malloc.
    if (unversioned(name) == symbol) {
      found = sym.st_value;
      return false;
    }
    names.emplace_back(unversioned(name));
    return true;
  });
  if (!found) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    const std::string close = did_you_mean(closest_matches(symbol, names));
    throw UserError("symbol '" + symbol + "' not found in " + path +
                        (has_symtab ? ""
                                    : " (the file is stripped: it has no .symtab, only "
                                      "exported .dynsym symbols)"),
                    close + (has_symtab ? "list its functions with: nm " + path
                                        : "use an unstripped build or its debug symbols, "
                                          "or an exported function (nm -D " +
                                              path + ")"));
  }
  return elf.function(symbol, *found);
}

std::vector<ElfFunction> elf_functions(const std::string& path) {
  const ElfFile elf(path);
  std::vector<ElfFunction> out;
  std::set<std::string> seen;
  elf.functions([&](std::string_view name, const GElf_Sym& sym) {
    std::string plain(unversioned(name));
    if (seen.insert(plain).second) out.push_back(elf.function(std::move(plain), sym.st_value));
    return true;
  });
  std::sort(out.begin(), out.end(),
            [](const ElfFunction& a, const ElfFunction& b) { return a.symbol < b.symbol; });
  return out;
}

}  // namespace pmcprof

#include "pmcprof/probes/elf_symbols.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

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
  for (const char* dir : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                          "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"}) {
    DIR* d = opendir(dir);
    if (!d) continue;
    std::optional<std::string> found;
    while (dirent* e = readdir(d)) {
      if (library_name_matches(e->d_name, name)) {
        found = std::string(dir) + "/" + e->d_name;
        break;
      }
    }
    closedir(d);
    if (found) return found;
  }
  return std::nullopt;
}

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};

}  // namespace

std::vector<std::string> match_ldconfig(const std::string& text, const std::string& name) {
  // Lines look like: "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6"
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto arrow = line.find(" => ");
    if (arrow == std::string::npos) continue;
    std::string soname(trim(line.substr(0, line.find(" ("))));
    if (!library_name_matches(soname, name)) continue;
    // On x86-64 only "(libc6,x86-64)" entries are ours; "(libc6)" is i386, "x32" is x32.
    if (line.find("x86-64") == std::string::npos) continue;
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
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(*pid) + "/exe", ec);
    if (ec)
      throw UserError("no process with PID " + std::to_string(*pid) +
                          " (or its executable is "
                          "unreadable: " +
                          ec.message() + ")",
                      "check the PID with ps");
    return exe.string();
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

ElfFunction find_elf_function(const std::string& path, const std::string& symbol) {
  // Non-blocking, and only a regular file is read: a FIFO or a device named as a binary is
  // refused at once instead of blocking pmcprof forever.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd)
    throw UserError("cannot open " + quote(path) + ": " + errno_string(errno), "check the path");
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw UserError(quote(path) + " is not a regular file, so not an executable or a library",
                    "give an executable or a shared library");
  if (elf_version(EV_CURRENT) == EV_NONE) throw SystemError("libelf is too old");
  std::unique_ptr<Elf, ElfCloser> elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF)
    throw UserError(path + " is not an ELF file", "give an executable or a shared library");

  bool has_symtab = false;
  std::optional<GElf_Sym> found;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn)) != nullptr && !found) {
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
      const char* name = elf_strptr(elf.get(), shdr.sh_link, sym.st_name);
      if (!name) continue;
      std::string_view n(name);
      // Versioned names: malloc@@GLIBC_2.2.5 matches malloc.
      if (n == symbol ||
          (starts_with(n, symbol) && n.size() > symbol.size() && n[symbol.size()] == '@')) {
        found = sym;
        break;
      }
    }
  }
  if (!found) {
    throw UserError("symbol '" + symbol + "' not found in " + path +
                        (has_symtab ? ""
                                    : " (the file is stripped: it has no .symtab, only "
                                      "exported .dynsym symbols)"),
                    has_symtab ? "list its functions with: nm " + path
                               : "use an unstripped build or its debug symbols, or an exported "
                                 "function (nm -D " +
                                     path + ")");
  }
  ElfFunction fn;
  fn.path = path;
  fn.symbol = symbol;
  fn.address = found->st_value;
  fn.file_offset = found->st_value;
  std::size_t phnum = 0;
  elf_getphdrnum(elf.get(), &phnum);
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf.get(), static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
    if (!(ph.p_flags & PF_X)) continue;
    if (fn.address >= ph.p_vaddr && fn.address < ph.p_vaddr + ph.p_memsz) {
      fn.file_offset = fn.address - ph.p_vaddr + ph.p_offset;
      break;
    }
  }
  return fn;
}

}  // namespace pmcprof

#include "pmcprof/probes/usdt.hpp"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>

#include "pmcprof/util/error.hpp"
#include "pmcprof/util/fd.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr unsigned kNtStapsdt = 3;
constexpr const char* kSpecHint =
    "key by another argument, or by one this probe passes in a register (readelf -n FILE "
    "shows each probe's argument specs)";

// struct pt_regs (arch/x86/include/asm/ptrace.h): the 64-bit register behind each name.
struct X86Reg {
  const char* names[4];  // 64, 32, 16, 8 bits
  int offset;
};
constexpr X86Reg kX86Regs[] = {
    {{"rax", "eax", "ax", "al"}, 80},        {{"rbx", "ebx", "bx", "bl"}, 40},
    {{"rcx", "ecx", "cx", "cl"}, 88},        {{"rdx", "edx", "dx", "dl"}, 96},
    {{"rsi", "esi", "si", "sil"}, 104},      {{"rdi", "edi", "di", "dil"}, 112},
    {{"rbp", "ebp", "bp", "bpl"}, 32},       {{"rsp", "esp", "sp", "spl"}, 152},
    {{"r8", "r8d", "r8w", "r8b"}, 72},       {{"r9", "r9d", "r9w", "r9b"}, 64},
    {{"r10", "r10d", "r10w", "r10b"}, 56},   {{"r11", "r11d", "r11w", "r11b"}, 48},
    {{"r12", "r12d", "r12w", "r12b"}, 24},   {{"r13", "r13d", "r13w", "r13b"}, 16},
    {{"r14", "r14d", "r14w", "r14b"}, 8},    {{"r15", "r15d", "r15w", "r15b"}, 0},
    {{"rip", "eip", nullptr, nullptr}, 128},
};
constexpr int kX86IpOffset = 128;

int x86_reg_offset(std::string_view name) {
  for (const auto& r : kX86Regs)
    for (const char* n : r.names)
      if (n && name == n) return r.offset;
  return -1;
}

// struct user_pt_regs (arch/arm64/include/uapi/asm/ptrace.h): regs[31], sp, pc, pstate.
int arm64_reg_offset(std::string_view name) {
  if (name == "sp") return 31 * 8;
  if (name.size() < 2 || (name[0] != 'x' && name[0] != 'w')) return -1;
  unsigned n = 0;
  const auto* end = name.data() + name.size();
  auto [p, ec] = std::from_chars(name.data() + 1, end, n);
  if (ec != std::errc() || p != end || n > 30 || (name.size() > 2 && name[1] == '0')) return -1;
  return static_cast<int>(n * 8);
}

[[noreturn]] void bad_spec(std::string_view spec, const std::string& why) {
  throw UserError("USDT argument spec " + quote(std::string(spec)) + " is not supported: " + why,
                  kSpecHint);
}

// A decimal or 0x-hexadecimal integer, with an optional sign: the whole text.
std::optional<std::int64_t> parse_int(std::string_view s) {
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  if (v > static_cast<std::uint64_t>(INT64_MAX) + (neg ? 1 : 0)) return std::nullopt;
  return neg ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
}

bool is_symbol_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

// "40+CheckpointStats", "sym-8", "-16", "": a displacement and at most one symbol.
void parse_displacement(std::string_view text, std::string_view spec, UsdtArg& arg) {
  std::size_t i = 0;
  while (i < text.size()) {
    bool neg = false;
    if (text[i] == '+' || text[i] == '-') {
      neg = text[i] == '-';
      ++i;
    } else if (i != 0) {
      bad_spec(spec, "cannot read the displacement " + quote(std::string(text)));
    }
    std::size_t j = i;
    while (j < text.size() && text[j] != '+' && text[j] != '-') ++j;
    const std::string_view term = text.substr(i, j - i);
    if (term.empty()) bad_spec(spec, "cannot read the displacement " + quote(std::string(text)));
    if (auto n = parse_int(term)) {
      arg.value += neg ? -*n : *n;
    } else if (!neg && arg.symbol.empty() &&
               std::all_of(term.begin(), term.end(), is_symbol_char) &&
               !std::isdigit(static_cast<unsigned char>(term[0]))) {
      arg.symbol = std::string(term);
    } else {
      bad_spec(spec, "cannot read the displacement " + quote(std::string(text)));
    }
    i = j;
  }
}

void parse_x86_operand(std::string_view op, std::string_view spec, UsdtArg& arg) {
  if (op.empty()) bad_spec(spec, "no operand after '@'");
  if (op[0] == '$') {
    auto v = parse_int(op.substr(1));
    if (!v) bad_spec(spec, "not a constant");
    arg.kind = UsdtArg::Kind::constant;
    arg.value = *v;
    return;
  }
  if (op[0] == '%') {
    arg.reg = std::string(op.substr(1));
    if (arg.reg == "ah" || arg.reg == "bh" || arg.reg == "ch" || arg.reg == "dh")
      bad_spec(spec, "a high-byte register");
    arg.reg_offset = x86_reg_offset(arg.reg);
    if (arg.reg_offset < 0) bad_spec(spec, "unknown register %" + arg.reg);
    if (arg.reg_offset == kX86IpOffset) bad_spec(spec, "the instruction pointer as a value");
    arg.kind = UsdtArg::Kind::reg;
    return;
  }
  const auto open = op.find('(');
  if (open == std::string_view::npos || op.back() != ')')
    bad_spec(spec, "neither $constant, %register nor displacement(%register)");
  std::string_view inside = op.substr(open + 1, op.size() - open - 2);
  if (auto comma = inside.find(','); comma != std::string_view::npos) {
    // (%base,%index,scale) or (%base,%index)
    const auto parts = split(inside.substr(comma + 1), ',');
    if (parts.empty() || parts.size() > 2 || parts[0].size() < 2 || parts[0][0] != '%')
      bad_spec(spec, "cannot read the index register");
    arg.index = parts[0].substr(1);
    arg.index_offset = x86_reg_offset(arg.index);
    if (arg.index_offset < 0 || arg.index_offset == kX86IpOffset)
      bad_spec(spec, "unknown index register %" + arg.index);
    arg.scale = 1;
    if (parts.size() == 2) {
      auto sc = parse_int(parts[1]);
      if (!sc || (*sc != 1 && *sc != 2 && *sc != 4 && *sc != 8))
        bad_spec(spec, "the scale is not 1, 2, 4 or 8");
      arg.scale = static_cast<int>(*sc);
    }
    inside = inside.substr(0, comma);
  }
  if (inside.empty() || inside[0] != '%') bad_spec(spec, "no base register");
  arg.reg = std::string(inside.substr(1));
  arg.reg_offset = x86_reg_offset(arg.reg);
  if (arg.reg_offset < 0) bad_spec(spec, "unknown register %" + arg.reg);
  parse_displacement(op.substr(0, open), spec, arg);
  if (arg.reg_offset == kX86IpOffset) {
    if (arg.symbol.empty()) bad_spec(spec, "an address relative to %rip without a symbol");
    if (arg.scale) bad_spec(spec, "an index added to %rip");
    arg.kind = UsdtArg::Kind::ip_relative;
    return;
  }
  if (!arg.symbol.empty()) bad_spec(spec, "a symbol added to %" + arg.reg);
  arg.kind = UsdtArg::Kind::deref;
}

void parse_arm64_operand(std::string_view op, std::string_view spec, UsdtArg& arg) {
  if (op.empty()) bad_spec(spec, "no operand after '@'");
  if (op[0] == '[') {
    if (op.back() != ']') bad_spec(spec, "an unclosed '['");
    std::string_view inside = op.substr(1, op.size() - 2);
    std::string_view reg = inside, disp;
    if (auto comma = inside.find(','); comma != std::string_view::npos) {
      reg = trim(inside.substr(0, comma));
      disp = trim(inside.substr(comma + 1));
      if (!disp.empty() && disp[0] == '#') disp.remove_prefix(1);
    }
    arg.reg = std::string(trim(reg));
    arg.reg_offset = arm64_reg_offset(arg.reg);
    if (arg.reg_offset < 0) bad_spec(spec, "unknown register " + arg.reg);
    if (!disp.empty()) {
      auto v = parse_int(disp);
      if (!v) bad_spec(spec, "cannot read the offset " + quote(std::string(disp)));
      arg.value = *v;
    }
    arg.kind = UsdtArg::Kind::deref;
    return;
  }
  if (auto v = parse_int(op[0] == '#' ? op.substr(1) : op)) {
    arg.kind = UsdtArg::Kind::constant;
    arg.value = *v;
    return;
  }
  arg.reg = std::string(op);
  arg.reg_offset = arm64_reg_offset(arg.reg);
  if (arg.reg_offset < 0) bad_spec(spec, "unknown register " + arg.reg);
  arg.kind = UsdtArg::Kind::reg;
}

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};

struct OpenElf {
  Fd fd;
  std::unique_ptr<Elf, ElfCloser> elf;
};

OpenElf open_elf(const std::string& path) {
  OpenElf out;
  out.fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!out.fd)
    throw UserError("cannot open " + quote(path) + ": " + errno_string(errno), "check the path");
  struct stat st {};
  if (fstat(out.fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw UserError(quote(path) + " is not a regular file, so not an executable or a library",
                    "give an executable or a shared library");
  if (elf_version(EV_CURRENT) == EV_NONE) throw SystemError("libelf is too old");
  out.elf.reset(elf_begin(out.fd.get(), ELF_C_READ, nullptr));
  if (!out.elf || elf_kind(out.elf.get()) != ELF_K_ELF)
    throw UserError(quote(path) + " is not an ELF file", "give an executable or a shared library");
  return out;
}

// The file offset of a link-time address: through the loadable segment that holds it (an
// executable one for code), within its file image.
std::optional<std::uint64_t> file_offset_of(Elf* elf, std::uint64_t addr, bool code) {
  std::size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return std::nullopt;
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
    if (code && !(ph.p_flags & PF_X)) continue;
    if (addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_filesz)
      return addr - ph.p_vaddr + ph.p_offset;
  }
  return std::nullopt;
}

// The value of a symbol (any type) in .symtab or .dynsym.
std::optional<std::uint64_t> symbol_value(Elf* elf, std::string_view name) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    if (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || shdr.sh_entsize == 0) continue;
    const std::size_t count = shdr.sh_size / shdr.sh_entsize;
    for (std::size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF) continue;
      const char* n = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (n && name == n) return sym.st_value;
    }
  }
  return std::nullopt;
}

std::string list_names(const std::vector<std::string>& names, std::size_t max = 12) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > max) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

}  // namespace

std::optional<SdtArch> sdt_arch_of_machine(unsigned e_machine) {
  if (e_machine == EM_X86_64) return SdtArch::x86_64;
  if (e_machine == EM_AARCH64) return SdtArch::aarch64;
  return std::nullopt;
}

const char* to_string(SdtArch arch) {
  return arch == SdtArch::x86_64 ? "x86-64" : "arm64";
}

std::vector<std::string> split_usdt_args(std::string_view args) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : args) {
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    if (std::isspace(static_cast<unsigned char>(c)) && depth == 0) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

UsdtArg parse_usdt_arg(std::string_view spec, SdtArch arch) {
  UsdtArg arg;
  const auto at = spec.find('@');
  if (at == std::string_view::npos) bad_spec(spec, "no size (N@) before the operand");
  auto size = parse_int(spec.substr(0, at));
  if (!size || (std::llabs(*size) != 1 && std::llabs(*size) != 2 && std::llabs(*size) != 4 &&
                std::llabs(*size) != 8))
    bad_spec(spec, "the size is not 1, 2, 4 or 8 bytes (negative: signed)");
  arg.size = static_cast<int>(std::llabs(*size));
  arg.is_signed = *size < 0;
  const std::string_view op = spec.substr(at + 1);
  if (arch == SdtArch::x86_64)
    parse_x86_operand(op, spec, arg);
  else
    parse_arm64_operand(op, spec, arg);
  return arg;
}

std::optional<SdtNote> parse_stapsdt_desc(const void* desc, std::size_t size,
                                          std::size_t addr_size) {
  if (addr_size != 4 && addr_size != 8) return std::nullopt;
  const auto* p = static_cast<const unsigned char*>(desc);
  if (size < 3 * addr_size) return std::nullopt;
  auto addr = [&](std::size_t i) {
    std::uint64_t v = 0;
    if (addr_size == 8) {
      std::memcpy(&v, p + i * 8, 8);
    } else {
      std::uint32_t w = 0;
      std::memcpy(&w, p + i * 4, 4);
      v = w;
    }
    return v;
  };
  SdtNote n;
  n.pc = addr(0);
  n.base = addr(1);
  n.semaphore = addr(2);
  std::size_t pos = 3 * addr_size;
  std::string* fields[] = {&n.provider, &n.name, &n.args};
  for (std::string* f : fields) {
    const void* nul = pos < size ? std::memchr(p + pos, 0, size - pos) : nullptr;
    if (!nul) return std::nullopt;
    const std::size_t len = static_cast<const unsigned char*>(nul) - (p + pos);
    f->assign(reinterpret_cast<const char*>(p + pos), len);
    pos += len + 1;
  }
  if (n.provider.empty() || n.name.empty()) return std::nullopt;
  return n;
}

std::size_t UsdtProbe::arg_count() const {
  return locations.empty() ? 0 : split_usdt_args(locations.front().args).size();
}

std::string UsdtProbe::text() const {
  return "usdt:" + path + ":" + provider + ":" + name;
}

std::vector<UsdtProbe> read_usdt_probes(const std::string& path) {
  OpenElf f = open_elf(path);
  Elf* elf = f.elf.get();
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf, &ehdr)) throw UserError(quote(path) + " has no readable ELF header");
  const std::size_t addr_size = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
  std::size_t shstrndx = 0;
  elf_getshdrstrndx(elf, &shstrndx);
  std::optional<std::uint64_t> base_section;
  std::vector<Elf_Scn*> note_sections;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (!name) continue;
    if (std::strcmp(name, ".stapsdt.base") == 0) base_section = shdr.sh_addr;
    if (shdr.sh_type == SHT_NOTE && std::strcmp(name, ".note.stapsdt") == 0)
      note_sections.push_back(scn);
  }
  std::vector<UsdtProbe> probes;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  const auto arch = sdt_arch_of_machine(ehdr.e_machine);
  for (Elf_Scn* s : note_sections) {
    Elf_Data* data = elf_getdata(s, nullptr);
    if (!data) continue;
    std::size_t off = 0, name_off = 0, desc_off = 0;
    GElf_Nhdr nhdr;
    while ((off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
      if (nhdr.n_type != kNtStapsdt || nhdr.n_namesz != 8 ||
          std::memcmp(static_cast<const char*>(data->d_buf) + name_off, "stapsdt", 8) != 0)
        continue;
      auto note = parse_stapsdt_desc(static_cast<const char*>(data->d_buf) + desc_off,
                                     nhdr.n_descsz, addr_size);
      if (!note) continue;
      if (!arch)
        throw UserError(quote(path) +
                        " is for a machine whose USDT arguments pmcprof cannot "
                        "read (ELF machine " +
                        std::to_string(ehdr.e_machine) + ")");
      UsdtLocation loc;
      // Prelinked files moved their code: .stapsdt.base says where the note thought it was.
      loc.address = note->pc;
      if (base_section && note->base) loc.address += *base_section - note->base;
      auto code = file_offset_of(elf, loc.address, true);
      if (!code)
        throw UserError("USDT probe " + note->provider + ":" + note->name + " in " + path +
                        " is at an address outside the file's code");
      loc.file_offset = *code;
      if (note->semaphore) {
        auto sema = file_offset_of(elf, note->semaphore, false);
        if (!sema)
          throw UserError("USDT probe " + note->provider + ":" + note->name + " in " + path +
                          " has a semaphore outside the file's data");
        loc.semaphore_offset = *sema;
      }
      loc.args = note->args;
      auto key = std::make_pair(note->provider, note->name);
      auto it = index.find(key);
      if (it == index.end()) {
        UsdtProbe p;
        p.path = path;
        p.provider = note->provider;
        p.name = note->name;
        p.arch = *arch;
        it = index.emplace(key, probes.size()).first;
        probes.push_back(std::move(p));
      }
      probes[it->second].locations.push_back(std::move(loc));
    }
  }
  return probes;
}

UsdtProbe find_usdt_probe(const std::string& path, const std::string& provider,
                          const std::string& name) {
  const auto probes = read_usdt_probes(path);
  if (probes.empty())
    throw UserError(quote(path) + " has no USDT probes (no .note.stapsdt section)",
                    "probes exist where a program was built with <sys/sdt.h> or dtrace -G; "
                    "list a file's with: readelf -n FILE");
  std::vector<std::string> providers, names;
  for (const auto& p : probes) {
    if (p.provider == provider && p.name == name) return p;
    if (std::find(providers.begin(), providers.end(), p.provider) == providers.end())
      providers.push_back(p.provider);
    if (p.provider == provider) names.push_back(p.name);
  }
  if (names.empty())
    throw UserError("no USDT provider " + quote(provider) + " in " + path,
                    "its providers: " + list_names(providers));
  throw UserError("no USDT probe " + quote(provider + ":" + name) + " in " + path,
                  "its " + provider + " probes: " + list_names(names));
}

ArgSpec usdt_arg_spec(const UsdtProbe& probe, const UsdtLocation& site, unsigned index,
                      bool as_string) {
  const auto specs = split_usdt_args(site.args);
  if (index >= specs.size())
    throw UserError(
        "--by arg" + std::to_string(index) + ": USDT probe " + probe.provider + ":" + probe.name +
            " has " +
            (specs.empty() ? std::string("no arguments")
                           : std::to_string(specs.size()) + " argument" +
                                 (specs.size() == 1 ? "" : "s") + " (arg0" +
                                 (specs.size() > 1 ? "..arg" + std::to_string(specs.size() - 1)
                                                   : std::string()) +
                                 ")"),
        "readelf -n " + probe.path + " lists each probe's arguments");
  const UsdtArg a = parse_usdt_arg(specs[index], probe.arch);
  ArgSpec s;
  s.size = a.size;
  s.is_signed = a.is_signed;
  s.is_string = as_string;
  s.user = true;
  if (as_string && a.size != 8)
    throw UserError("--by arg" + std::to_string(index) + ":str: argument " + std::to_string(index) +
                        " of USDT probe " + probe.provider + ":" + probe.name + " is " +
                        std::to_string(a.size) + " bytes (" + specs[index] + "), not an address",
                    "key by it as an integer: --by arg" + std::to_string(index));
  switch (a.kind) {
    case UsdtArg::Kind::constant:
      s.kind = ArgSpec::Kind::constant;
      s.val = static_cast<std::uint64_t>(a.value);
      break;
    case UsdtArg::Kind::reg:
      s.kind = ArgSpec::Kind::reg;
      s.reg_off = a.reg_offset;
      break;
    case UsdtArg::Kind::deref:
      s.kind = ArgSpec::Kind::deref;
      s.reg_off = a.reg_offset;
      s.val = static_cast<std::uint64_t>(a.value);
      s.idx_off = a.scale ? a.index_offset : 0;
      s.scale = a.scale;
      break;
    case UsdtArg::Kind::ip_relative: {
      OpenElf f = open_elf(probe.path);
      auto sym = symbol_value(f.elf.get(), a.symbol);
      if (!sym)
        throw UserError("--by arg" + std::to_string(index) + ": the symbol " + quote(a.symbol) +
                            " of USDT argument " + specs[index] + " is not in " + probe.path,
                        kSpecHint);
      // The kernel gives the probed address in the instruction pointer: the global is at
      // ip + (symbol + displacement - the site's address), wherever the file is mapped.
      s.kind = ArgSpec::Kind::deref;
      s.reg_off = kX86IpOffset;
      s.val = *sym + static_cast<std::uint64_t>(a.value) - site.address;
      break;
    }
  }
  return s;
}

}  // namespace pmcprof

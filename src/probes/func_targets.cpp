#include "pmcprof/probes/func_targets.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <ostream>
#include <string_view>
#include <utility>

#include "pmcprof.h"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/platform/tracefs.hpp"
#include "pmcprof/probes/elf_symbols.hpp"
#include "pmcprof/probes/func_globs.hpp"
#include "pmcprof/probes/kernel_functions.hpp"
#include "pmcprof/probes/usdt.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

std::string denied_kernel_function(const std::string& symbol) {
  // Compiler clones (perf_event_read_local.constprop.0, migrate_enable.isra.0) are the same
  // code: judged by their base name.
  const std::string name = symbol.substr(0, symbol.find('.'));
  // What pmcprof's programs call at every entry, exit and context switch, and the machinery
  // that runs them. A kprobe there fires inside pmcprof's own code (counted as re-entered,
  // never measured); the kernel blocks some of these, pmcprof refuses all of them up front.
  static constexpr std::array<std::string_view, 10> kExact = {
      "perf_event_read_local", "perf_event_output", "perf_event_output_forward",
      "trace_call_bpf",        "migrate_disable",   "migrate_enable",
      "__rcu_read_lock",       "__rcu_read_unlock", "preempt_count_add",
      "preempt_count_sub"};
  static constexpr std::array<std::string_view, 17> kPrefixes = {
      "bpf_",      "__bpf_",       "perf_output_", "__perf_event_output", "ktime_get",
      "kprobe_",   "__kprobe",     "kretprobe_",   "__kretprobe",         "rethook_",
      "__rethook", "arch_rethook", "uprobe_",      "uretprobe_",          "ftrace_",
      "__ftrace",  "fprobe_"};
  for (auto e : kExact)
    if (name == e) return "pmcprof's own probes call it at every entry, exit or context switch";
  for (auto p : kPrefixes)
    if (starts_with(name, p))
      return "it belongs to the machinery pmcprof's probes run on (" + std::string(p) + "*)";
  return {};
}

namespace {

// The syscalls with tracepoints here: NAME of each syscalls:sys_enter_NAME.
std::vector<std::string> syscall_names(const std::string& tracefs) {
  std::vector<std::string> out;
  for (const auto& e : tracepoint_names(tracefs, "syscalls"))
    if (starts_with(e, "sys_enter_")) out.push_back(e.substr(std::strlen("sys_enter_")));
  return out;
}

// --by argN: the key spec of each start point, in slots.
class KeySlots {
 public:
  KeySlots(const std::vector<KeyArg>& args, ResolvedTargets& out) : args_(args), out_(out) {
    out_.key_signed.assign(args.size(), false);
  }
  bool wanted() const { return !args_.empty(); }
  const std::vector<KeyArg>& args() const { return args_; }
  std::optional<std::size_t> add(KeySpec spec) {
    if (args_.empty()) return std::nullopt;
    if (out_.key_specs.size() >= PMCPROF_MAX_KEY_SLOTS)
      throw UserError("too many probe sites read --by arguments (at most " +
                      std::to_string(PMCPROF_MAX_KEY_SLOTS) + ")");
    for (std::size_t i = 0; i < spec.size() && i < out_.key_signed.size(); ++i)
      if (spec[i].is_signed && !spec[i].is_string) out_.key_signed[i] = true;
    out_.key_specs.push_back(std::move(spec));
    return out_.key_specs.size() - 1;
  }

 private:
  const std::vector<KeyArg>& args_;
  ResolvedTargets& out_;
};

#if defined(__aarch64__)
constexpr unsigned kAbiArgs = 8;
#else
constexpr unsigned kAbiArgs = 6;
#endif

constexpr const char* kKeyHint =
    "--by argN reads a start point's arguments: a USDT probe's, a function's at its entry, a "
    "tracepoint's fields";

// At a function's entry: the calling convention's registers (uprobe, kprobe) or the
// trampoline's argument array (fentry).
KeySpec entry_key_spec(const std::vector<KeyArg>& args, ProbeBackend backend, bool user,
                       const std::string& what) {
  KeySpec spec;
  for (const auto& a : args) {
    ArgSpec s;
    s.kind = ArgSpec::Kind::reg;
    s.size = 8;
    s.user = user;
    s.is_string = a.string;
    if (backend == ProbeBackend::fentry) {
      if (a.index >= 6)
        throw UserError("--by " + a.text() + ": " + what +
                            " is probed with fentry, which reads "
                            "at most 6 arguments (arg0..arg5)",
                        kKeyHint);
      s.reg_off = static_cast<int>(8 * a.index);
    } else {
      auto off = abi_arg_offset(a.index);
      if (!off)
        throw UserError(
            "--by " + a.text() + ": " + what + "'s argument is not in a register at its entry",
            "arguments in registers: arg0..arg" + std::to_string(kAbiArgs - 1));
      s.reg_off = *off;
    }
    spec.push_back(s);
  }
  return spec;
}

// A tracepoint's fields (a syscall's arguments are user memory).
KeySpec tracepoint_key_spec(const std::vector<KeyArg>& args, const std::string& tracefs,
                            const std::string& category, const std::string& event,
                            const std::string& what) {
  const auto text = read_file(tracefs + "/events/" + category + "/" + event + "/format");
  if (!text) throw UserError("cannot read the format of tracepoint " + category + ":" + event);
  const auto fields = parse_tracepoint_format(*text);
  const bool syscall = category == "syscalls";
  KeySpec spec;
  for (const auto& a : args) {
    if (a.index >= fields.size()) {
      std::vector<std::string> names;
      for (const auto& f : fields) names.push_back(f.name);
      throw UserError("--by " + a.text() + ": " + what + " has " + std::to_string(fields.size()) +
                          " field" + (fields.size() == 1 ? "" : "s") +
                          (names.empty() ? std::string() : " (" + join(names, ", ") + ")"),
                      "arg0 is its first field");
    }
    const TracepointField& f = fields[a.index];
    if (starts_with(f.type, "__data_loc") ||
        (f.size != 1 && f.size != 2 && f.size != 4 && f.size != 8))
      throw UserError("--by " + a.text() + ": field " + f.name + " (" + f.type + ") of " + what +
                          " is not an integer pmcprof can read",
                      kKeyHint);
    if (a.string && (!syscall || f.size != 8))
      throw UserError("--by " + a.text() + ": field " + f.name + " of " + what +
                          " is not a string address pmcprof can read (only a syscall's "
                          "arguments are)",
                      "key by it as an integer: --by arg" + std::to_string(a.index));
    ArgSpec s;
    s.kind = ArgSpec::Kind::reg;
    s.reg_off = f.offset;
    s.size = f.size;
    s.is_signed = f.is_signed;
    s.is_string = a.string;
    s.user = syscall;
    spec.push_back(s);
  }
  return spec;
}

// usdt:PROVIDER:NAME (no file named) with -p: the process's executable, then every file it
// maps.
std::string find_usdt_binary(const FuncTarget& t, std::optional<pid_t> pid) {
  if (!pid)
    throw UserError(quote(t.text) + " names no file: usdt:PROVIDER:NAME needs -p PID",
                    "write usdt:BINARY:PROVIDER:NAME (a path or a library name)");
  std::vector<std::string> files{resolve_binary("", pid)};
  if (auto maps = read_file("/proc/" + std::to_string(*pid) + "/maps")) {
    for (const auto& line : split(*maps, '\n')) {
      const auto slash = line.find('/');
      if (slash == std::string::npos || line.find(" r-xp ") == std::string::npos) continue;
      std::string path = line.substr(slash);
      if (std::find(files.begin(), files.end(), path) == files.end()) files.push_back(path);
    }
  }
  for (const auto& f : files) {
    try {
      for (const auto& p : read_usdt_probes(f))
        if (p.provider == t.provider && p.name == t.name) return f;
    } catch (const UserError&) {
      // a mapping that is not a readable ELF file: not where the probe is
    }
  }
  throw UserError("no USDT probe " + quote(t.provider + ":" + t.name) + " in process " +
                      std::to_string(*pid) + "'s executable or libraries",
                  "list a file's probes with: readelf -n FILE");
}

struct SiteResolver {
  BackendRequest backend;
  std::optional<pid_t> pid;
  std::optional<KernelProbeSupport> kernel_support;
  std::string tracefs;

  std::optional<KernelFunctionTable> kernel_table;  // read at the first kernel function
  // resolve_binary's answers: a library name costs an `ldconfig -p` (a fork and two execs),
  // once a run, not once a target (64 libc functions took 1.5 s to start, 3.3 s sanitized).
  std::map<std::string, std::string> binaries;

  const std::string& binary_path(const std::string& name) {
    auto it = binaries.find(name);
    if (it == binaries.end()) it = binaries.emplace(name, resolve_binary(name, pid)).first;
    return it->second;
  }

  const KernelFunctionTable& kernel_functions() {
    if (!kernel_table) kernel_table.emplace();
    return *kernel_table;
  }

  const std::string& tracefs_dir() {
    if (tracefs.empty()) tracefs = ensure_tracefs_mounted();
    return tracefs;
  }

  // Throws, with the closest tracepoints of its category as the hint, when CATEGORY:EVENT is
  // not a tracepoint here.
  void check_tracepoint(const std::string& category, const std::string& event,
                        const std::string& what) {
    const std::string dir = tracefs_dir() + "/events/" + category;
    if (std::filesystem::exists(dir + "/" + event)) return;
    std::vector<std::string> close;
    for (const auto& c : closest_matches(event, tracepoint_names(tracefs_dir(), category)))
      close.push_back("tracepoint:" + category + ":" + c);
    throw UserError("unknown " + what + ": no tracepoint " + dir + "/" + event,
                    did_you_mean(close) + "list them with: ls " + dir);
  }

  // The same for syscall:NAME (its sys_enter_NAME, and sys_exit_NAME for a return), the
  // closest syscalls as the hint.
  void check_syscall(const std::string& name, bool at_return) {
    const std::string dir = tracefs_dir() + "/events/syscalls";
    const std::string event = (at_return ? "sys_exit_" : "sys_enter_") + name;
    if (std::filesystem::exists(dir + "/" + event)) return;
    std::vector<std::string> close;
    for (const auto& c : closest_matches(name, syscall_names(tracefs_dir())))
      close.push_back("syscall:" + c);
    throw UserError("unknown syscall " + quote(name) + ": no tracepoint " + dir + "/" + event,
                    did_you_mean(close) + "list them with: ls " + dir);
  }

  // One point: where its program attaches, and (keys set) its arguments.
  ProbeSite site(const FuncTarget& t, KeySlots* keys) {
    ProbeSite s;
    const std::string what = quote(t.text);
    auto no_args_here = [&](const char* why) {
      if (keys && keys->wanted())
        throw UserError("--by " + keys->args().front().text() + ": " + what + " " + why, kKeyHint);
    };
    switch (t.kind) {
      case FuncTarget::Kind::usdt: {
        s.backend = ProbeBackend::usdt;
        s.binary = t.binary.empty() ? find_usdt_binary(t, pid) : binary_path(t.binary);
        const UsdtProbe probe = find_usdt_probe(s.binary, t.provider, t.name);
        for (const auto& loc : probe.locations) {
          ProbeSite::Location l;
          l.file_offset = loc.file_offset;
          l.semaphore_offset = loc.semaphore_offset;
          if (keys && keys->wanted()) {
            KeySpec spec;
            for (const auto& a : keys->args())
              spec.push_back(usdt_arg_spec(probe, loc, a.index, a.string));
            l.key_slot = keys->add(std::move(spec));
          }
          s.locations.push_back(l);
        }
        break;
      }
      case FuncTarget::Kind::user: {
        s.backend = ProbeBackend::uprobe;
        s.binary = binary_path(t.binary);
        ProbeSite::Location l;
        l.file_offset = find_elf_function(s.binary, t.name).file_offset + t.offset.value_or(0);
        s.retprobe = t.at_return;
        s.start = uprobe_start_of(s.binary, l.file_offset);
        if (t.offset) no_args_here("is inside a function, where its arguments are not known");
        if (t.at_return) no_args_here("is a return, where the arguments are gone");
        if (keys && keys->wanted())
          l.key_slot = keys->add(entry_key_spec(keys->args(), ProbeBackend::uprobe, true, what));
        s.locations.push_back(l);
        break;
      }
      case FuncTarget::Kind::kernel: {
        if (auto why = denied_kernel_function(t.name); !why.empty())
          throw UserError("kernel function '" + t.name + "' cannot be probed: " + why,
                          "probe a function that calls it, or a syscall (syscall:NAME)");
        if (!kernel_support) kernel_support = probe_kernel_probe_support(BackendRequest::kprobe);
        // A region's end on a kernel function is a kprobe (a kretprobe for %return).
        choose_kernel_backend(t.name, BackendRequest::kprobe, *kernel_support,
                              kernel_functions().lookup(t.name));
        s.backend = ProbeBackend::kprobe;
        s.function = t.name;
        s.retprobe = t.at_return;
        ProbeSite::Location l;
        if (t.at_return) no_args_here("is a return, where the arguments are gone");
        if (keys && keys->wanted())
          l.key_slot = keys->add(entry_key_spec(keys->args(), ProbeBackend::kprobe, false, what));
        s.locations.push_back(l);
        break;
      }
      case FuncTarget::Kind::syscall:
      case FuncTarget::Kind::tracepoint: {
        s.backend = ProbeBackend::tracepoint;
        const bool syscall = t.kind == FuncTarget::Kind::syscall;
        s.category = syscall ? "syscalls" : t.category;
        s.event = syscall ? (t.at_return ? "sys_exit_" : "sys_enter_") + t.name : t.name;
        if (syscall)
          check_syscall(t.name, t.at_return);
        else
          check_tracepoint(s.category, s.event, "tracepoint " + what);
        if (t.at_return) no_args_here("is a return, where the arguments are gone");
        ProbeSite::Location l;
        if (keys && keys->wanted())
          l.key_slot = keys->add(
              tracepoint_key_spec(keys->args(), tracefs_dir(), s.category, s.event, what));
        s.locations.push_back(l);
        break;
      }
    }
    return s;
  }
};

// A user function is its file (whatever path or link names it) and its offset there: aliases
// (getpid and __getpid) are one function.
std::string user_identity(const ElfFunction& f) {
  std::error_code ec;
  const auto real = std::filesystem::weakly_canonical(f.path, ec);
  return "user:" + (ec ? f.path : real.string()) + "+" + std::to_string(f.file_offset);
}

// The rows the --func stand for: each one named, and every match of each glob, in order.
class RowLister {
 public:
  explicit RowLister(SiteResolver& sites) : sites_(sites) {}

  std::vector<TargetRow> rows;
  std::vector<std::pair<std::size_t, std::string>> skipped;  // -v: what a glob left out

  void add(const FuncTarget& t, std::size_t index) {
    const bool glob = is_glob(t.name);
    if (t.is_point()) {
      rows.push_back({t, "", std::nullopt, std::nullopt});
    } else if (t.kind == FuncTarget::Kind::user) {
      add_user(t, index, glob);
    } else if (t.kind == FuncTarget::Kind::syscall) {
      if (glob)
        add_syscalls(t, index);
      else
        rows.push_back({t, "syscall:" + t.name, std::nullopt, std::nullopt});
    } else if (glob) {
      add_kernel(t, index);
    } else {
      rows.push_back({t, "kernel:" + t.name, std::nullopt, std::nullopt});
    }
  }

 private:
  void add_user(const FuncTarget& t, std::size_t index, bool glob) {
    const std::string binary = sites_.binary_path(t.binary);
    if (!glob) {
      ElfFunction f = find_elf_function(binary, t.name);
      rows.push_back({t, user_identity(f), std::nullopt, std::move(f)});
      return;
    }
    const std::vector<ElfFunction> fns = elf_functions(binary);  // sorted by name
    std::vector<std::string> names;
    for (const auto& f : fns) names.push_back(f.symbol);
    const auto matches = glob_matches(t.name, names);
    if (matches.empty())
      throw no_match_error(t, "function in " + binary, names,
                           "list its functions with: nm " + binary);
    for (const auto& m : matches) {
      const auto& f = *std::lower_bound(
          fns.begin(), fns.end(), m,
          [](const ElfFunction& e, const std::string& name) { return e.symbol < name; });
      rows.push_back({expanded_target(t, m), user_identity(f), index, f});
    }
  }

  void add_syscalls(const FuncTarget& t, std::size_t index) {
    if (!syscalls_) syscalls_ = syscall_names(sites_.tracefs_dir());
    const auto matches = glob_matches(t.name, *syscalls_);
    if (matches.empty())
      throw no_match_error(t, "syscall", *syscalls_,
                           "list them with: ls " + sites_.tracefs_dir() + "/events/syscalls");
    for (const auto& m : matches)
      rows.push_back({expanded_target(t, m), "syscall:" + m, index, std::nullopt});
  }

  void add_kernel(const FuncTarget& t, std::size_t index) {
    if (!kernel_) kernel_ = sites_.kernel_functions().attachable();
    const std::string& from = kernel_->source.empty() ? "/proc/kallsyms" : kernel_->source;
    // pmcprof's own machinery is left out of a glob (bpf_*, ktime_get*) rather than failing
    // the run: a probe there would fire inside pmcprof's programs.
    std::size_t denied = 0;
    const std::size_t before = rows.size();
    for (const auto& m : glob_matches(t.name, kernel_->names)) {
      if (!denied_kernel_function(m).empty()) {
        ++denied;
        continue;
      }
      rows.push_back({expanded_target(t, m), "kernel:" + m, index, std::nullopt});
    }
    const std::string own = std::to_string(denied) + " on pmcprof's own probe path left out";
    if (rows.size() == before)
      throw no_match_error(
          t, "kernel function pmcprof may probe in " + from + (denied ? " (" + own + ")" : ""),
          kernel_->names, "grep the name in " + from);
    if (denied) skipped.emplace_back(index, own);
  }

  SiteResolver& sites_;
  std::optional<std::vector<std::string>> syscalls_;  // listed once for every glob
  std::optional<KernelFunctionList> kernel_;
};

void refuse_duplicates(const std::vector<AttachPoint>& points) {
  // Two --func naming one function through different names (libc:getppid and c:getppid,
  // ./w:f and /abs/w:f) would share one probe address and report 0 calls each: refused.
  for (std::size_t i = 0; i < points.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const AttachPoint &a = points[j], &b = points[i];
      if (a.shape != MeasureShape::function || b.shape != MeasureShape::function) continue;
      std::error_code ec;
      const bool same = a.backend == ProbeBackend::uprobe && b.backend == ProbeBackend::uprobe
                            ? a.file_offset == b.file_offset &&
                                  std::filesystem::equivalent(a.binary, b.binary, ec)
                            : a.target.kind == b.target.kind && a.target.name == b.target.name;
      if (same)
        throw UserError("--func " + quote(a.target.text) + " and " + quote(b.target.text) +
                            " name the same function",
                        "give each function once");
    }
  // A program runs once per tracepoint: two starts (or two ends, two probes) on one tracepoint
  // cannot both be attached.
  std::vector<std::pair<std::string, std::string>> used;  // (role, category:event)
  auto take = [&](const char* role, const std::string& tp, const std::string& who) {
    const std::string r = std::strcmp(role, "end") == 0 ? "end" : role;
    for (const auto& [ur, ut] : used)
      if (ur == r && ut == tp)
        throw UserError("tracepoint " + tp + " is used twice as a " + r + " (by " + who +
                            " and an earlier --func or --region)",
                        "give each tracepoint once as a start, once as an end, once as a probe");
    used.emplace_back(r, tp);
  };
  for (const auto& p : points) {
    if (p.shape == MeasureShape::function && p.backend == ProbeBackend::tracepoint) {
      take("start", "syscalls:sys_enter_" + p.target.name, quote(p.label));
      take("end", "syscalls:sys_exit_" + p.target.name, quote(p.label));
    }
    if (p.begin && p.begin->backend == ProbeBackend::tracepoint)
      take(p.shape == MeasureShape::probe ? "probe" : "start",
           p.begin->category + ":" + p.begin->event, quote(p.label));
    if (p.end && p.end->backend == ProbeBackend::tracepoint)
      take("end", p.end->category + ":" + p.end->event, quote(p.label));
  }
}

}  // namespace

const char* to_string(MeasureShape shape) {
  switch (shape) {
    case MeasureShape::function:
      return "function";
    case MeasureShape::region:
      return "region";
    case MeasureShape::probe:
      return "probe";
  }
  return "?";
}

std::string ProbeSite::text() const {
  std::string t = to_string(backend);
  if (retprobe) t = backend == ProbeBackend::kprobe ? "kretprobe" : "uretprobe";
  if (!binary.empty()) {
    t += " " + binary;
    for (const auto& l : locations) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "+0x%llx", static_cast<unsigned long long>(l.file_offset));
      t += buf;
      if (l.semaphore_offset) {
        std::snprintf(buf, sizeof(buf), "(semaphore +0x%llx)",
                      static_cast<unsigned long long>(l.semaphore_offset));
        t += buf;
      }
    }
  }
  if (!function.empty()) t += " " + function;
  if (!event.empty()) t += " " + category + ":" + event;
  return t;
}

std::string AttachPoint::backend_text() const {
  if (shape != MeasureShape::region || !begin || !end) return to_string(backend);
  const std::string a = to_string(begin->backend), b = to_string(end->backend);
  return a == b ? a : a + "/" + b;
}

std::optional<int> abi_arg_offset(unsigned index) {
#if defined(__x86_64__)
  // struct pt_regs: rdi, rsi, rdx, rcx, r8, r9
  static constexpr int kRegs[] = {112, 104, 96, 88, 72, 64};
#elif defined(__aarch64__)
  static constexpr int kRegs[] = {0, 8, 16, 24, 32, 40, 48, 56};  // x0-x7
#else
#error "pmcprof reads function arguments on x86-64 and arm64"
#endif
  if (index >= std::size(kRegs)) return std::nullopt;
  return kRegs[index];
}

std::vector<TracepointField> parse_tracepoint_format(const std::string& text) {
  // "\tfield:const char * filename;\toffset:16;\tsize:8;\tsigned:0;"
  std::vector<TracepointField> out;
  for (const auto& raw : split(text, '\n')) {
    const std::string_view line = trim(raw);
    if (!starts_with(line, "field:")) continue;
    TracepointField f;
    for (const auto& part : split(line, ';')) {
      const std::string_view item = trim(part);
      auto number = [&](std::string_view prefix, int& into) {
        if (!starts_with(item, prefix)) return false;
        unsigned long long v = 0;
        if (parse_u64(item.substr(prefix.size()), v)) into = static_cast<int>(v);
        return true;
      };
      int sign = 0;
      if (starts_with(item, "field:")) {
        std::string decl(trim(item.substr(6)));
        // "char comm[16]": the name's array size; "__data_loc char[] name": the type's.
        if (!decl.empty() && decl.back() == ']') decl = decl.substr(0, decl.rfind('['));
        decl = std::string(trim(decl));
        const auto sp = decl.find_last_of(" *");
        f.name = sp == std::string::npos ? decl : decl.substr(sp + 1);
        f.type = std::string(trim(sp == std::string::npos ? "" : decl.substr(0, sp + 1)));
      } else if (number("offset:", f.offset) || number("size:", f.size)) {
      } else if (number("signed:", sign)) {
        f.is_signed = sign != 0;
      }
    }
    if (f.name.empty() || starts_with(f.name, "common_") || f.name == "__syscall_nr") continue;
    out.push_back(std::move(f));
  }
  return out;
}

ResolvedTargets resolve_targets(const std::vector<FuncTarget>& targets,
                                const std::vector<RegionSpec>& regions,
                                const std::vector<KeyArg>& key_args, BackendRequest backend,
                                std::optional<pid_t> pid, std::ostream* verbose) {
  const std::size_t total = targets.size() + regions.size();
  if (total > PMCPROF_MAX_FUNCS)
    throw UserError("too many --func and --region (" + std::to_string(total) + "), at most " +
                    std::to_string(PMCPROF_MAX_FUNCS));
  ResolvedTargets out;
  KeySlots keys(key_args, out);
  SiteResolver sites{backend, pid, std::nullopt, {}, std::nullopt, {}};
  RowLister lister(sites);
  for (std::size_t i = 0; i < targets.size(); ++i) lister.add(targets[i], i);
  std::vector<TargetRow>& rows = lister.rows;
  const auto dropped = drop_duplicate_rows(rows);
  // Said before the limit is checked: -v then lists what a glob too wide matched.
  if (verbose)
    for (const auto& line : describe_expansions(rows, dropped, targets, lister.skipped))
      *verbose << "pmcprof: " << line << "\n";
  check_row_limit(rows, targets, regions.size(), PMCPROF_MAX_FUNCS);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    AttachPoint p;
    p.func_id = static_cast<std::uint32_t>(i);
    p.target = rows[i].target;
    p.label = p.target.text;
    const std::string what = quote(p.target.text);
    if (p.target.is_point()) {
      p.shape = MeasureShape::probe;
      p.begin = sites.site(p.target, &keys);
      p.backend = p.begin->backend;
      out.points.push_back(std::move(p));
      continue;
    }
    switch (p.target.kind) {
      case FuncTarget::Kind::kernel: {
        if (auto why = denied_kernel_function(p.target.name); !why.empty())
          throw UserError("kernel function '" + p.target.name + "' cannot be probed: " + why,
                          "probe a function that calls it, or a syscall (--func syscall:NAME)");
        if (!sites.kernel_support) sites.kernel_support = probe_kernel_probe_support(backend);
        p.backend = choose_kernel_backend(p.target.name, backend, *sites.kernel_support,
                                          sites.kernel_functions().lookup(p.target.name));
        p.kprobe_fallback = p.backend == ProbeBackend::fentry &&
                            backend == BackendRequest::automatic && sites.kernel_support->kprobe;
        if (keys.wanted()) {
          // fentry reads the trampoline's argument array, kprobes the registers: a fentry
          // target that may fall back to kprobes has a slot for each.
          p.key_slot = keys.add(entry_key_spec(key_args, p.backend, false, what));
          if (p.kprobe_fallback)
            p.fallback_key_slot =
                keys.add(entry_key_spec(key_args, ProbeBackend::kprobe, false, what));
        }
        break;
      }
      case FuncTarget::Kind::user: {
        p.backend = ProbeBackend::uprobe;
        p.binary = rows[i].user->path;  // resolved and looked up by the lister
        p.file_offset = rows[i].user->file_offset;
        p.start = uprobe_start_of(p.binary, p.file_offset);
        if (keys.wanted())
          p.key_slot = keys.add(entry_key_spec(key_args, ProbeBackend::uprobe, true, what));
        break;
      }
      case FuncTarget::Kind::syscall: {
        p.backend = ProbeBackend::tracepoint;
        sites.check_syscall(p.target.name, /*at_return=*/false);
        if (keys.wanted())
          p.key_slot = keys.add(tracepoint_key_spec(key_args, sites.tracefs_dir(), "syscalls",
                                                    "sys_enter_" + p.target.name, what));
        break;
      }
      case FuncTarget::Kind::usdt:
      case FuncTarget::Kind::tracepoint:
        break;  // points, above
    }
    out.points.push_back(std::move(p));
  }
  for (std::size_t i = 0; i < regions.size(); ++i) {
    AttachPoint p;
    p.func_id = static_cast<std::uint32_t>(rows.size() + i);
    p.shape = MeasureShape::region;
    p.target = regions[i].start;
    p.label = regions[i].label();
    p.begin = sites.site(regions[i].start, &keys);
    p.end = sites.site(regions[i].end, nullptr);
    p.backend = p.begin->backend;
    out.points.push_back(std::move(p));
  }
  refuse_duplicates(out.points);
  return out;
}

void FuncAttachments::attach_site(const FuncObject& object, const AttachPoint& p,
                                  const ProbeSite& site, ProbeRole role) {
  // A region's starts go first when detaching (see detach()).
  auto& into = role == ProbeRole::entry && p.shape == MeasureShape::region ? starts_ : links_;
  for (const auto& loc : site.locations) {
    // Only a region's start carries the region flag and, with --by argN, a key slot.
    const bool start = role != ProbeRole::exit;
    const std::uint64_t cookie = probe_cookie(p.func_id, start ? loc.key_slot : std::nullopt,
                                              start && p.shape == MeasureShape::region) |
                                 cost_cookie(site.cost_class, site.retprobe);
    switch (site.backend) {
      case ProbeBackend::uprobe:
      case ProbeBackend::usdt:
        if (object.uprobe_multi())
          pending_[{role == ProbeRole::entry && p.shape == MeasureShape::region, role,
                    site.retprobe, site.binary}]
              .push_back({loc.file_offset, loc.semaphore_offset, cookie});
        else
          into.push_back(object.attach_user(role, cookie, site.binary, loc.file_offset,
                                            loc.semaphore_offset, site.retprobe));
        break;
      case ProbeBackend::kprobe:
      case ProbeBackend::fentry:
        into.push_back(object.attach_kernel(role, cookie, site.function, site.retprobe));
        break;
      case ProbeBackend::tracepoint:
        into.push_back(object.attach_tracepoint(role, cookie, site.category, site.event));
        break;
    }
  }
}

bool FuncAttachments::attach(const FuncObject& object, std::vector<AttachPoint>& points,
                             const std::function<bool(const AttachPoint&)>& keep_going) {
  auto keep = [&](std::vector<BpfLink> links) {
    for (auto& l : links) links_.push_back(std::move(l));
  };
  for (auto& p : points) {
    if (!keep_going(p)) {
      pending_.clear();
      return false;
    }
    if (p.shape == MeasureShape::probe) {
      attach_site(object, p, *p.begin, ProbeRole::hit);
      continue;
    }
    if (p.shape == MeasureShape::region) {
      // The end first: a start with no end attached yet would leave its frame open.
      attach_site(object, p, *p.end, ProbeRole::exit);
      attach_site(object, p, *p.begin, ProbeRole::entry);
      continue;
    }
    const std::uint64_t cookie = probe_cookie(p.func_id, p.key_slot);
    switch (p.backend) {
      case ProbeBackend::uprobe:
        if (object.uprobe_multi()) {
          pending_[{false, ProbeRole::entry, false, p.binary}].push_back(
              {p.file_offset, 0, cookie});
          pending_[{false, ProbeRole::exit, true, p.binary}].push_back({p.file_offset, 0, cookie});
        } else {
          keep(object.attach_uprobe(cookie, p.binary, p.file_offset));
        }
        break;
      case ProbeBackend::kprobe:
        keep(object.attach_kprobe(cookie, p.target.name));
        break;
      case ProbeBackend::tracepoint:
        keep(object.attach_syscall(cookie, p.target.name));
        break;
      case ProbeBackend::usdt:
        break;  // a point: above
      case ProbeBackend::fentry: {
        try {
          auto a = object.attach_fentry(cookie, p.target.name);
          keep(std::move(a.links));
          twins_.push_back(std::move(a.twin));
        } catch (const SystemError& e) {
          if (!p.kprobe_fallback)
            throw UserError(e.what(), "use --backend kprobe (or auto)", kExitFailure);
          p.backend = ProbeBackend::kprobe;
          p.fallback_why = e.what();
          keep(object.attach_kprobe(probe_cookie(p.func_id, p.fallback_key_slot), p.target.name));
        }
        break;
      }
    }
  }
  attach_user_groups(object);
  return true;
}

void FuncAttachments::attach_user_groups(const FuncObject& object) {
  // std::map order: every end and whole function first (start == false), then the starts, so
  // no region can start before its end is attached.
  auto pending = std::exchange(pending_, {});
  for (auto& [g, spots] : pending) {
    auto& into = g.start ? starts_ : links_;
    try {
      into.push_back(object.attach_user_multi(g.role, g.binary, spots, g.retprobe));
    } catch (const UserError&) {
      // Name the point the kernel refused: each alone (the error path only).
      std::vector<BpfLink> singles;
      for (const auto& spot : spots)
        singles.push_back(object.attach_user_multi(g.role, g.binary, {spot}, g.retprobe));
      throw;
    }
  }
}

void FuncAttachments::detach() {
  // Regions' starts before their ends: a region that starts while the probes go away would
  // otherwise find its end already gone and be reported as never ended.
  destroy_links(std::move(starts_));
  starts_.clear();
  destroy_links(std::move(links_), std::move(twins_));
  links_.clear();
  twins_.clear();
}

}  // namespace pmcprof

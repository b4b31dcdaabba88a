#include "pmcprof/probes/target_spec.hpp"

#include <cctype>
#include <charconv>

#include "pmcprof/probes/func_globs.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr const char* kFuncHint =
    "use --func NAME (kernel), --func syscall:NAME, --func /path/to/binary:SYMBOL, or --func "
    "usdt:BINARY:PROVIDER:NAME";
constexpr const char* kRegionHint =
    "write --region [NAME=]START,END, e.g. --region "
    "q=usdt:/usr/lib/postgresql/15/bin/postgres:postgresql:query__start,usdt:/usr/lib/"
    "postgresql/15/bin/postgres:postgresql:query__done";

// Longest names accepted: a syscall's tracepoint directory name must fit NAME_MAX with its
// sys_enter_ prefix; kernel symbols are at most KSYM_NAME_LEN (512); user symbols (C++ mangled
// names can be long) and paths at most PATH_MAX.
constexpr std::size_t kMaxSyscallName = 64;
constexpr std::size_t kMaxKernelName = 512;
constexpr std::size_t kMaxUserName = 4096;

void check_length(std::string_view name, std::size_t max, const char* what,
                  const std::string& text) {
  if (name.size() > max)
    throw UserError(std::string(what) + " in --func " + quote(text) + " is too long (at most " +
                        std::to_string(max) + " characters)",
                    kFuncHint);
}

bool valid_identifier(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '_' && c != '.' && c != '$' && c != '@') return false;
  }
  return true;
}

// A function's name in --func, or a glob of names (*, ?, [...]) that stands for every match.
// Throws for a malformed glob; false for a name that is neither.
bool valid_function_name(std::string_view s, const std::string& text) {
  if (!is_glob(s)) return valid_identifier(s);
  if (!valid_glob(s))
    throw UserError("invalid wildcard pattern " + quote(s) + " in --func " + quote(text),
                    "a pattern takes *, ? and [...] as fnmatch(3) does, between the characters "
                    "of function names, e.g. --func 'libc:str*' or --func 'syscall:get[pu]id'");
  return true;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view strip_prefix(std::string_view s, std::string_view prefix) {
  return starts_with(s, prefix) ? s.substr(prefix.size()) : std::string_view{};
}

// A USDT provider or probe name, a tracepoint category or name: C identifiers.
bool valid_probe_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

FuncTarget parse_usdt(std::string_view rest, FuncTarget t, const char* flag) {
  // usdt:BINARY:PROVIDER:NAME or usdt:PROVIDER:NAME; a path may hold ':' only before the last
  // two fields.
  const auto last = rest.rfind(':');
  if (last == std::string_view::npos)
    throw UserError(std::string(flag) + " " + quote(t.text) + " names no probe",
                    "write usdt:BINARY:PROVIDER:NAME, e.g. usdt:/usr/bin/python3:python:"
                    "function__entry");
  t.name = std::string(rest.substr(last + 1));
  const std::string_view front = rest.substr(0, last);
  const auto mid = front.rfind(':');
  t.provider = std::string(mid == std::string_view::npos ? front : front.substr(mid + 1));
  t.binary = mid == std::string_view::npos ? "" : std::string(front.substr(0, mid));
  check_length(t.binary, kMaxUserName, "the file name", t.text);
  if (!valid_probe_name(t.provider) || !valid_probe_name(t.name))
    throw UserError(
        "invalid USDT provider or probe name in " + std::string(flag) + " " + quote(t.text),
        "names are C identifiers, as readelf -n prints them (e.g. "
        "python:function__entry)");
  t.kind = FuncTarget::Kind::usdt;
  return t;
}

FuncTarget parse_tracepoint(std::string_view rest, FuncTarget t, const char* flag) {
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos || !valid_probe_name(rest.substr(0, colon)) ||
      !valid_probe_name(rest.substr(colon + 1)))
    throw UserError(
        "invalid tracepoint in " + std::string(flag) + " " + quote(t.text),
        "write tracepoint:CATEGORY:NAME, as in /sys/kernel/tracing/events/CATEGORY/NAME");
  t.kind = FuncTarget::Kind::tracepoint;
  t.category = std::string(rest.substr(0, colon));
  t.name = std::string(rest.substr(colon + 1));
  check_length(t.category + t.name, kMaxSyscallName * 4, "the tracepoint", t.text);
  return t;
}

}  // namespace

const char* to_string(FuncTarget::Kind kind) {
  switch (kind) {
    case FuncTarget::Kind::kernel:
      return "kernel";
    case FuncTarget::Kind::user:
      return "user";
    case FuncTarget::Kind::syscall:
      return "syscall";
    case FuncTarget::Kind::usdt:
      return "usdt";
    case FuncTarget::Kind::tracepoint:
      return "tracepoint";
  }
  return "?";
}

std::string KeyArg::text() const {
  return "arg" + std::to_string(index) + (string ? ":str" : "");
}

const char* to_string(ProbeBackend b) {
  switch (b) {
    case ProbeBackend::fentry:
      return "fentry";
    case ProbeBackend::kprobe:
      return "kprobe";
    case ProbeBackend::uprobe:
      return "uprobe";
    case ProbeBackend::tracepoint:
      return "tracepoint";
    case ProbeBackend::usdt:
      return "usdt";
  }
  return "?";
}

FuncTarget parse_func_target(std::string_view raw) {
  std::string_view text = trim(raw);
  FuncTarget t;
  t.text = std::string(text);
  if (text.empty()) throw UserError("empty --func", kFuncHint);
  check_length(text, 2 * kMaxUserName, "the target", t.text);

  if (auto rest = strip_prefix(text, "usdt:"); !rest.empty() || text == "usdt:")
    return parse_usdt(rest, t, "--func");
  if (auto rest = strip_prefix(text, "tracepoint:"); !rest.empty() || text == "tracepoint:")
    return parse_tracepoint(rest, t, "--func");
  if (auto rest = strip_prefix(text, "syscall:"); !rest.empty() || text == "syscall:") {
    if (starts_with(rest, "sys_")) rest.remove_prefix(4);  // sys_getppid -> getppid
    check_length(rest, kMaxSyscallName, "the syscall name", t.text);
    if (!valid_function_name(rest, t.text))
      throw UserError(
          "invalid syscall name in --func " + quote(t.text),
          "e.g. --func syscall:getppid (names as in /sys/kernel/tracing/events/syscalls)");
    t.kind = FuncTarget::Kind::syscall;
    t.name = std::string(rest);
    return t;
  }
  if (auto rest = strip_prefix(text, "kernel:"); !rest.empty() || text == "kernel:") {
    check_length(rest, kMaxKernelName, "the kernel function name", t.text);
    if (!valid_function_name(rest, t.text))
      throw UserError("invalid kernel function name in --func " + quote(t.text), kFuncHint);
    t.kind = FuncTarget::Kind::kernel;
    t.name = std::string(rest);
    return t;
  }
  // A glob's [[:alpha:]] holds colons that do not end a file name.
  const auto colon = last_colon_outside_brackets(text);
  if (colon == std::string_view::npos) {
    if (text.find('/') != std::string_view::npos)
      throw UserError("--func " + quote(t.text) + " names a file but no symbol",
                      "write PATH:SYMBOL, e.g. --func /usr/bin/bash:readline");
    check_length(text, kMaxKernelName, "the kernel function name", t.text);
    if (!valid_function_name(text, t.text))
      throw UserError("invalid kernel function name in --func " + quote(t.text), kFuncHint);
    t.kind = FuncTarget::Kind::kernel;
    t.name = std::string(text);
    return t;
  }
  t.kind = FuncTarget::Kind::user;
  t.binary = std::string(text.substr(0, colon));
  t.name = std::string(text.substr(colon + 1));
  if (t.name.empty())
    throw UserError("--func " + quote(t.text) + " has no symbol after ':'",
                    "write PATH:SYMBOL, e.g. --func libc:malloc");
  check_length(t.binary, kMaxUserName, "the file name", t.text);
  check_length(t.name, kMaxUserName, "the symbol", t.text);
  if (t.name.find('+') != std::string::npos || ends_with(t.name, "%return"))
    throw UserError("--func " + quote(t.text) +
                        " names a point inside or at the return of a "
                        "function: --func measures whole calls",
                    "use it as one end of a --region START,END");
  if (!valid_function_name(t.name, t.text))
    throw UserError("invalid symbol " + quote(t.name) + " in --func " + quote(t.text), kFuncHint);
  return t;
}

FuncTarget parse_probe_point(std::string_view raw, const char* which) {
  const std::string_view text = trim(raw);
  const std::string flag = std::string("--region ") + which;
  if (text.empty()) throw UserError(flag + " is empty", kRegionHint);
  FuncTarget t;
  t.text = std::string(text);
  check_length(text, 2 * kMaxUserName, "the target", t.text);
  const bool point = starts_with(text, "usdt:") || starts_with(text, "tracepoint:");
  if (point && (ends_with(text, "%return") ||
                text.substr(text.rfind(':') + 1).find('+') != std::string_view::npos))
    throw UserError(flag + " " + quote(t.text) +
                        ": a USDT probe or a tracepoint is one point, with no return or offset "
                        "(%return and +OFFSET apply to functions)",
                    kRegionHint);
  if (auto rest = strip_prefix(text, "usdt:"); !rest.empty() || text == "usdt:")
    return parse_usdt(rest, t, flag.c_str());
  if (auto rest = strip_prefix(text, "tracepoint:"); !rest.empty() || text == "tracepoint:")
    return parse_tracepoint(rest, t, flag.c_str());
  std::string_view body = text;
  if (ends_with(body, "%return")) {
    t.at_return = true;
    body.remove_suffix(7);
  }
  // +OFFSET: only after a user symbol (PATH:SYMBOL+OFFSET).
  std::optional<std::uint64_t> offset;
  const auto colon = body.rfind(':');
  const auto plus = body.rfind('+');
  if (plus != std::string_view::npos && colon != std::string_view::npos && plus > colon &&
      !starts_with(body, "syscall:") && !starts_with(body, "kernel:")) {
    const std::string_view digits = body.substr(plus + 1);
    std::uint64_t v = 0;
    int base = 10;
    std::string_view d = digits;
    if (starts_with(d, "0x")) {
      base = 16;
      d.remove_prefix(2);
    }
    auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), v, base);
    if (d.empty() || ec != std::errc() || p != d.data() + d.size())
      throw UserError(
          "invalid offset " + quote(std::string(digits)) + " in " + flag + " " + quote(t.text),
          "write PATH:SYMBOL+OFFSET with a decimal or 0x offset in bytes");
    offset = v;
    body = body.substr(0, plus);
  }
  if (t.at_return && offset)
    throw UserError(flag + " " + quote(t.text) + " has both +OFFSET and %return",
                    "give a point inside the function or its return, not both");
  FuncTarget f;
  try {
    f = parse_func_target(body);
  } catch (const UserError& e) {
    throw UserError(flag + ": " + e.what(), e.hint().empty() ? kRegionHint : e.hint());
  }
  if (f.kind == FuncTarget::Kind::usdt || f.kind == FuncTarget::Kind::tracepoint)
    throw UserError(flag + " " + quote(t.text) + ": %return and +OFFSET apply to functions",
                    kRegionHint);
  // A region is one pair of points: a pattern would stand for many.
  if (is_glob(f.name))
    throw UserError(flag + " " + quote(t.text) + ": a --region point takes no wildcard",
                    "name one function at each end of a region; wildcards are for --func");
  if (offset && f.kind != FuncTarget::Kind::user)
    throw UserError(flag + " " + quote(t.text) + ": +OFFSET applies to a user function",
                    "write PATH:SYMBOL+OFFSET");
  f.text = t.text;
  f.offset = offset;
  f.at_return = t.at_return;
  return f;
}

RegionSpec parse_region(std::string_view raw) {
  const std::string_view text = trim(raw);
  RegionSpec r;
  r.text = std::string(text);
  std::string_view body = text;
  const auto eq = body.find('=');
  if (eq != std::string_view::npos) {
    const std::string_view name = body.substr(0, eq);
    if (name.find_first_of(":/,") == std::string_view::npos) {
      if (name.empty() || name.size() > 64)
        throw UserError("--region " + quote(r.text) +
                            ": the name before '=' must be 1 to 64 "
                            "characters",
                        kRegionHint);
      r.name = std::string(name);
      body = body.substr(eq + 1);
    }
  }
  const auto comma = body.find(',');
  if (comma == std::string_view::npos || body.find(',', comma + 1) != std::string_view::npos)
    throw UserError("--region " + quote(r.text) + " needs exactly two points, START,END",
                    kRegionHint);
  r.start = parse_probe_point(body.substr(0, comma), "start");
  r.end = parse_probe_point(body.substr(comma + 1), "end");
  const FuncTarget &a = r.start, &b = r.end;
  if (a.kind == b.kind && a.name == b.name && a.binary == b.binary && a.provider == b.provider &&
      a.category == b.category && a.offset == b.offset && a.at_return == b.at_return)
    throw UserError("--region " + quote(r.text) + " starts and ends at the same point",
                    "a region needs two points (a function and its return: NAME,NAME%return)");
  return r;
}

std::optional<std::vector<KeyArg>> parse_key_args(std::string_view text) {
  if (!starts_with(text, "arg")) return std::nullopt;
  const char* hint =
      "write --by argN (an integer), argN:str (a string), or two: --by arg0:str,arg1:str";
  std::vector<KeyArg> out;
  for (const auto& part : split(text, ',')) {
    std::string_view p = trim(part);
    KeyArg k;
    if (ends_with(p, ":str")) {
      k.string = true;
      p.remove_suffix(4);
    } else if (ends_with(p, ":int")) {
      p.remove_suffix(4);
    }
    if (!starts_with(p, "arg")) throw UserError("invalid --by " + quote(std::string(text)), hint);
    const std::string_view digits = p.substr(3);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k.index);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
        k.index > 11 || (digits.size() > 1 && digits[0] == '0'))
      throw UserError("invalid --by " + quote(std::string(text)) + ": argument numbers are 0 to 11",
                      hint);
    for (const auto& o : out)
      if (o.index == k.index)
        throw UserError(
            "--by " + quote(std::string(text)) + " names arg" + std::to_string(k.index) + " twice",
            hint);
    out.push_back(k);
  }
  if (out.empty() || out.size() > 2)
    throw UserError("--by " + quote(std::string(text)) + ": one or two arguments", hint);
  return out;
}

void check_distinct_targets(const std::vector<FuncTarget>& targets) {
  for (std::size_t i = 0; i < targets.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const FuncTarget &a = targets[j], &b = targets[i];
      if (a.kind == b.kind && a.name == b.name && a.binary == b.binary &&
          a.provider == b.provider && a.category == b.category)
        throw UserError(a.text == b.text ? "--func " + quote(a.text) + " is given twice"
                                         : "--func " + quote(a.text) + " and " + quote(b.text) +
                                               " name the same function",
                        "give each function once");
    }
}

ProbeBackend choose_kernel_backend(const std::string& func, BackendRequest request,
                                   const KernelProbeSupport& support, const KernelFuncInfo& info) {
  const std::string alternatives =
      "probe a syscall (--func syscall:NAME) or a user function (--func /path/bin:SYMBOL); "
      "'pmcprof doctor' shows what this kernel allows";
  if (!info.in_kallsyms && !info.in_btf)
    throw UserError(
        "unknown kernel function '" + func +
            "': not in /proc/kallsyms nor in vmlinux BTF (misspelled, not built in, "
            "or inlined by the compiler)",
        did_you_mean(info.close_names) + "grep the name in /proc/kallsyms, or " + alternatives);
  if (!support.fentry && !support.kprobe)
    throw UserError("cannot probe kernel function '" + func + "' on this kernel: kprobes: " +
                        support.kprobe_why + "; fentry: " + support.fentry_why,
                    alternatives, kExitFailure);
  if (!info.traceable)
    throw UserError("kernel function '" + func + "' cannot be traced: " + info.not_traceable_why,
                    alternatives);
  const bool fentry_ok = support.fentry && info.in_btf;
  const bool kprobe_ok = support.kprobe && info.in_kallsyms;
  switch (request) {
    case BackendRequest::fentry:
      if (fentry_ok) return ProbeBackend::fentry;
      throw UserError("--backend fentry cannot probe '" + func +
                          "': " + (support.fentry ? "it has no BTF entry" : support.fentry_why),
                      kprobe_ok ? "use --backend kprobe (or auto)" : alternatives);
    case BackendRequest::kprobe:
      if (kprobe_ok) return ProbeBackend::kprobe;
      throw UserError("--backend kprobe cannot probe '" + func + "': " +
                          (support.kprobe ? "it is not in /proc/kallsyms" : support.kprobe_why),
                      fentry_ok ? "use --backend fentry (or auto)" : alternatives);
    case BackendRequest::automatic:
      break;
  }
  if (fentry_ok) return ProbeBackend::fentry;
  if (kprobe_ok) return ProbeBackend::kprobe;
  throw UserError("cannot probe kernel function '" + func + "' with fentry (" +
                      (support.fentry ? "no BTF entry" : support.fentry_why) + ") or kprobe (" +
                      (support.kprobe ? "not in /proc/kallsyms" : support.kprobe_why) + ")",
                  alternatives);
}

}  // namespace pmcprof

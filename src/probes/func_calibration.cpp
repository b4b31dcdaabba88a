#include "pmcprof/probes/func_calibration.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>

#include "pmcprof/platform/capabilities.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/probes/kernel_functions.hpp"
#include "pmcprof/probes/kernel_text.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/fd.hpp"

// The uprobe calibration targets: functions that do nothing, one per way the kernel handles a
// probed first instruction, with a known number of instructions of their own.
#if defined(__x86_64__)
#define PMCPROF_CALIBRATION_TARGET(name, body)                                                \
  asm(".text\n.globl " #name "\n.type " #name ", @function\n" #name ":\n" body ".size " #name \
      ", .-" #name "\n");
PMCPROF_CALIBRATION_TARGET(pmcprof_calibration_stepped, "  mov %rdi, %rax\n  ret\n")
PMCPROF_CALIBRATION_TARGET(pmcprof_calibration_push, "  push %rbp\n  pop %rbp\n  ret\n")
PMCPROF_CALIBRATION_TARGET(pmcprof_calibration_endbr, "  endbr64\n  ret\n")
// A USDT region with nothing inside: two probe sites (an SDT probe is one nop) back to back.
PMCPROF_CALIBRATION_TARGET(pmcprof_calibration_usdt, "  nop\n  nop\n  ret\n")
// Their unprobed twins, the same code: what a nested call costs its caller is measured as the
// difference between calls of the caller with the target and with its twin, interleaved.
PMCPROF_CALIBRATION_TARGET(pmcprof_calibration_stepped_twin, "  mov %rdi, %rax\n  ret\n")
PMCPROF_CALIBRATION_TARGET(pmcprof_calibration_push_twin, "  push %rbp\n  pop %rbp\n  ret\n")
PMCPROF_CALIBRATION_TARGET(pmcprof_calibration_endbr_twin, "  endbr64\n  ret\n")
PMCPROF_CALIBRATION_TARGET(pmcprof_calibration_usdt_twin, "  nop\n  nop\n  ret\n")
constexpr std::uint64_t kUsdtSiteBytes = 1;
extern "C" void pmcprof_calibration_push();
extern "C" void pmcprof_calibration_endbr();
extern "C" void pmcprof_calibration_push_twin();
extern "C" void pmcprof_calibration_endbr_twin();
#elif defined(__aarch64__)
asm(".text\n.globl pmcprof_calibration_stepped\n.type pmcprof_calibration_stepped, @function\n"
    "pmcprof_calibration_stepped:\n  nop\n  ret\n"
    ".size pmcprof_calibration_stepped, .-pmcprof_calibration_stepped\n");
asm(".text\n.globl pmcprof_calibration_usdt\n.type pmcprof_calibration_usdt, @function\n"
    "pmcprof_calibration_usdt:\n  nop\n  nop\n  ret\n"
    ".size pmcprof_calibration_usdt, .-pmcprof_calibration_usdt\n");
// A first instruction the kernel simulates: a branch to the next one.
asm(".text\n.globl pmcprof_calibration_simulated\n.type pmcprof_calibration_simulated, @function\n"
    "pmcprof_calibration_simulated:\n  b 1f\n1:\n  ret\n"
    ".size pmcprof_calibration_simulated, .-pmcprof_calibration_simulated\n");
extern "C" void pmcprof_calibration_simulated();
// Their unprobed twins (see the x86 ones).
asm(".text\n.globl pmcprof_calibration_stepped_twin\n"
    ".type pmcprof_calibration_stepped_twin, @function\n"
    "pmcprof_calibration_stepped_twin:\n  nop\n  ret\n"
    ".size pmcprof_calibration_stepped_twin, .-pmcprof_calibration_stepped_twin\n");
asm(".text\n.globl pmcprof_calibration_usdt_twin\n.type pmcprof_calibration_usdt_twin, @function\n"
    "pmcprof_calibration_usdt_twin:\n  nop\n  nop\n  ret\n"
    ".size pmcprof_calibration_usdt_twin, .-pmcprof_calibration_usdt_twin\n");
asm(".text\n.globl pmcprof_calibration_simulated_twin\n"
    ".type pmcprof_calibration_simulated_twin, @function\n"
    "pmcprof_calibration_simulated_twin:\n  b 1f\n1:\n  ret\n"
    ".size pmcprof_calibration_simulated_twin, .-pmcprof_calibration_simulated_twin\n");
extern "C" void pmcprof_calibration_simulated_twin();
constexpr std::uint64_t kUsdtSiteBytes = 4;
#else
#error "pmcprof's uprobe calibration targets exist for x86-64 and arm64"
#endif
extern "C" void pmcprof_calibration_stepped();
extern "C" void pmcprof_calibration_usdt();
extern "C" void pmcprof_calibration_stepped_twin();
extern "C" void pmcprof_calibration_usdt_twin();

// The calibration target's caller: calls it (or makes the syscall) `k` times. Probed under
// the outer calibration id, with and without the target probed, it measures what a probed
// call costs the call it is nested in.
extern "C" __attribute__((noinline, used)) void pmcprof_calibration_outer(void (*fn)(), long nr,
                                                                          int k) {
  for (int i = 0; i < k; ++i) {
    if (fn)
      fn();
    else
      syscall(nr);
  }
  asm volatile("" ::: "memory");
}

namespace pmcprof {

const char* to_string(UprobeStart s) {
  switch (s) {
    case UprobeStart::stepped:
      return "single-stepped";
    case UprobeStart::push:
      return "push";
    case UprobeStart::endbr:
      return "endbr64";
    case UprobeStart::simulated:
      return "simulated";
  }
  return "?";
}

bool arm64_uprobe_simulates(std::uint32_t insn) {
  const bool b_bl = (insn & 0x7C000000u) == 0x14000000u;        // b, bl
  const bool b_cond = (insn & 0xFF000010u) == 0x54000000u;      // b.cond
  const bool cb_tb = (insn & 0x7C000000u) == 0x34000000u;       // cbz/cbnz, tbz/tbnz
  const bool br_blr_ret = (insn & 0xFF9FFC1Fu) == 0xD61F0000u;  // br, blr, ret
  const bool adr = (insn & 0x1F000000u) == 0x10000000u;         // adr, adrp
  const bool ldr_lit = (insn & 0xBF000000u) == 0x18000000u ||   // ldr (literal), 32/64 bit
                       (insn & 0xFF000000u) == 0x98000000u;     // ldrsw (literal)
  return b_bl || b_cond || cb_tb || br_blr_ret || adr || ldr_lit;
}

UprobeStart uprobe_start_of(const std::string& path, std::uint64_t file_offset) {
#if defined(__x86_64__)
  std::array<unsigned char, 4> b{};
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd || ::pread(fd.get(), b.data(), b.size(), static_cast<off_t>(file_offset)) < 4)
    return UprobeStart::stepped;
  if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa) return UprobeStart::endbr;
  if ((b[0] >= 0x50 && b[0] <= 0x57) || (b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57))
    return UprobeStart::push;
#elif defined(__aarch64__)
  std::array<unsigned char, 4> b{};
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd && ::pread(fd.get(), b.data(), b.size(), static_cast<off_t>(file_offset)) == 4) {
    const std::uint32_t insn = b[0] | (b[1] << 8) | (b[2] << 16) | (std::uint32_t{b[3]} << 24);
    if (arm64_uprobe_simulates(insn)) return UprobeStart::simulated;
  }
#else
  (void)path;
  (void)file_offset;
#endif
  return UprobeStart::stepped;
}

namespace {

// The index of the P-th percentile of N sorted values (nearest rank).
std::size_t percentile_rank(std::size_t n, double p) {
  const auto r = static_cast<std::size_t>(std::ceil(p * static_cast<double>(n)));
  return std::min(n, std::max<std::size_t>(1, r)) - 1;
}

constexpr int kCalls = 64;      // a round (PMCPROF_CALIB_CALLS samples)
constexpr int kMaxRounds = 16;  // multiplexed events need more rounds
constexpr int kWantedPerEvent = 32;

bool enough_samples(const std::vector<FuncObject::CalibrationSample>& samples,
                    std::size_t n_events) {
  for (std::size_t i = 0; i < n_events; ++i) {
    int n = 0;
    for (const auto& s : samples) n += !s.not_counted && (s.measured & (1u << i));
    if (n < kWantedPerEvent) return false;
  }
  return true;
}

struct UprobeTarget {
  void (*fn)();
  void (*twin)();  // the same code, never probed
  std::uint64_t own_instructions;
  const char* text;
};

UprobeTarget uprobe_target(UprobeStart start) {
#if defined(__x86_64__)
  switch (start) {
    case UprobeStart::push:
      return {pmcprof_calibration_push, pmcprof_calibration_push_twin, 3,
              "push %rbp; pop %rbp; ret"};
    case UprobeStart::endbr:
      return {pmcprof_calibration_endbr, pmcprof_calibration_endbr_twin, 2, "endbr64; ret"};
    case UprobeStart::stepped:
    case UprobeStart::simulated:
      break;
  }
  return {pmcprof_calibration_stepped, pmcprof_calibration_stepped_twin, 2, "mov %rdi, %rax; ret"};
#else
  if (start == UprobeStart::simulated)
    return {pmcprof_calibration_simulated, pmcprof_calibration_simulated_twin, 2, "b .+4; ret"};
  return {pmcprof_calibration_stepped, pmcprof_calibration_stepped_twin, 2, "nop; ret"};
#endif
}

// The kernel calibration target: the function behind every syscall number a kernel does not
// implement, which returns -ENOSYS and does nothing else; a syscall with such a number calls it.
#if defined(__x86_64__)
constexpr long kNotImplementedSyscall = 183;  // afs_syscall
#elif defined(__aarch64__)
constexpr long kNotImplementedSyscall = 244;  // __NR_arch_specific_syscall: none on arm64
#endif

// Its name in this kernel (the syscall wrapper's, per architecture), or "" when absent.
std::string kernel_target() {
  const auto kallsyms = read_file("/proc/kallsyms").value_or("");
  for (const char* name : {"__x64_sys_ni_syscall", "__arm64_sys_ni_syscall", "sys_ni_syscall"})
    if (kallsyms_has_function(kallsyms, name)) return name;
  return {};
}

// The kernel target's own instructions (the wrapper, the call of sys_ni_syscall, its return),
// counted from the kernel's live text once per process: before any calibration probe of
// pmcprof's is on it (a kprobe's breakpoint, a live ftrace site's trampoline are not counted).
const StraightLineCount& kernel_target_own(const std::string& target) {
  static const StraightLineCount counted = count_kernel_function(target);
  return counted;
}

// Cheap syscalls for the tracepoint calibration, by number.
struct CheapSyscall {
  const char* name;
  long nr;
};
constexpr CheapSyscall kCheapSyscalls[] = {{"getppid", SYS_getppid}, {"getpid", SYS_getpid},
                                           {"gettid", SYS_gettid},   {"getuid", SYS_getuid},
                                           {"getgid", SYS_getgid},   {"geteuid", SYS_geteuid}};

const CheapSyscall* free_syscall(const std::vector<std::string>& busy) {
  for (const auto& s : kCheapSyscalls)
    if (std::find(busy.begin(), busy.end(), s.name) == busy.end()) return &s;
  return nullptr;
}

// The calibration id's probe pair, attached, and how to make one call of what it probes.
struct CalibrationProbe {
  std::vector<BpfLink> links;
  FuncObject::FentryAttachment fentry;
  std::string probed;
  std::uint64_t own_instructions = 0;
  void (*call)() = nullptr;
  void (*twin)() = nullptr;  // `call`'s unprobed twin (user-space targets)
  long syscall_nr = -1;
};

// The calibration probe of `req`'s backend: what it probes and how to call it, attached (or,
// without `attach`, only described).
CalibrationProbe attach_probe(const FuncObject& object, const CalibrationRequest& req,
                              bool attach = true) {
  CalibrationProbe p;
  const std::uint32_t id = object.calibration_id();
  switch (req.backend) {
    case ProbeBackend::uprobe: {
      const UprobeTarget t = uprobe_target(req.start);
      auto where = locate_in_maps(read_file("/proc/self/maps").value_or(""),
                                  reinterpret_cast<std::uint64_t>(t.fn));
      if (!where) throw SystemError("pmcprof's own calibration target is not in a mapped file");
      p.probed = std::string("an empty function in pmcprof (") + t.text + ")";
      p.own_instructions = t.own_instructions;
      p.call = t.fn;
      p.twin = t.twin;
      if (attach) p.links = object.attach_uprobe(id, where->path, where->file_offset, ::getpid());
      break;
    }
    case ProbeBackend::kprobe:
    case ProbeBackend::fentry: {
      const std::string target = kernel_target();
      if (target.empty()) throw SystemError("no sys_ni_syscall in /proc/kallsyms to calibrate on");
      const StraightLineCount& own = kernel_target_own(target);
      p.own_instructions = own.instructions.value_or(0);
      p.probed = target + " (an unimplemented syscall; " +
                 (own.instructions ? "its own " + std::to_string(*own.instructions) +
                                         " instructions counted from the kernel text"
                                   : "its own instructions could not be counted (" + own.why_not +
                                         "): taken as 0") +
                 ")";
      p.syscall_nr = kNotImplementedSyscall;
      if (!attach)
        break;
      else if (req.backend == ProbeBackend::kprobe)
        p.links = object.attach_kprobe(id, target);
      else
        p.fentry = object.attach_fentry(id, target);
      break;
    }
    case ProbeBackend::usdt: {
      // The region's end at the second site, then its start at the first: the start's nop
      // is the probe's (it exists only to be probed), so no instruction is the region's own.
      auto where = locate_in_maps(read_file("/proc/self/maps").value_or(""),
                                  reinterpret_cast<std::uint64_t>(pmcprof_calibration_usdt));
      if (!where) throw SystemError("pmcprof's own calibration target is not in a mapped file");
      p.probed = "an empty region in pmcprof (between two nop sites, as USDT probes are)";
      p.call = pmcprof_calibration_usdt;
      p.twin = pmcprof_calibration_usdt_twin;
      if (!attach) break;
      p.links.push_back(object.attach_user(ProbeRole::exit, id, where->path,
                                           where->file_offset + kUsdtSiteBytes, 0, false,
                                           ::getpid()));
      p.links.push_back(object.attach_user(ProbeRole::entry, probe_cookie(id, {}, true),
                                           where->path, where->file_offset, 0, false, ::getpid()));
      break;
    }
    case ProbeBackend::tracepoint: {
      const CheapSyscall* s = free_syscall(req.busy_syscalls);
      if (!s) throw SystemError("every cheap syscall is a target: nothing left to calibrate on");
      p.probed = std::string("syscall:") + s->name + " (its own work included)";
      p.syscall_nr = s->nr;
      if (attach) p.links = object.attach_syscall(id, s->name);
      break;
    }
  }
  return p;
}

constexpr int kNested = 4;  // target calls per call of the outer function

// Calls the outer function kCalls times, each calling the target kNested times.
void make_outer_calls(const CalibrationProbe& p) {
  void (*volatile outer)(void (*)(), long, int) = pmcprof_calibration_outer;
  for (int i = 0; i < kCalls; ++i) outer(p.call, p.syscall_nr, kNested);
}

// Rounds of `calls` until every event has measured enough calls of the calibration id (or,
// with `outer`, of the outer id): multiplexed, an event runs through only the calls made while
// it is on the PMU.
template <class Calls>
std::vector<FuncObject::CalibrationSample> sample_rounds(const FuncObject& object, bool outer,
                                                         Calls calls) {
  std::vector<FuncObject::CalibrationSample> samples;
  for (int round = 0; round < kMaxRounds; ++round) {
    object.reset_calibration();
    calls();
    for (auto& s : object.calibration_samples(outer)) samples.push_back(std::move(s));
    if (enough_samples(samples, object.events().size())) break;
  }
  return samples;
}

// Medians and spreads of calibration samples, per event (of the calls it measured), wall (of
// every call) and on-CPU (of the counted calls).
struct SampleStats {
  std::size_t seen = 0, counted = 0;
  std::vector<std::optional<std::uint64_t>> events, events_spread;
  std::vector<double> events_mean;
  std::uint64_t wall = 0, oncpu = 0, wall_spread = 0, oncpu_spread = 0;
  double wall_mean = 0, oncpu_mean = 0;
};

template <class T>
double mean_of(const std::vector<T>& v) {
  double sum = 0;
  for (T x : v) sum += static_cast<double>(x);
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

SampleStats sample_stats(const std::vector<FuncObject::CalibrationSample>& samples,
                         std::size_t n_events) {
  std::vector<std::vector<std::uint64_t>> per_event(n_events);
  std::vector<std::uint64_t> wall, oncpu;
  for (const auto& s : samples) {
    wall.push_back(s.wall_ns);
    if (s.not_counted) continue;
    oncpu.push_back(s.oncpu_ns);
    for (std::size_t i = 0; i < n_events; ++i)
      if (s.measured & (1u << i)) per_event[i].push_back(s.delta[i]);
  }
  SampleStats st;
  st.seen = samples.size();
  st.counted = oncpu.size();
  st.wall = median(wall).value_or(0);
  st.oncpu = median(oncpu).value_or(0);
  st.wall_spread = spread(wall).value_or(0);
  st.oncpu_spread = spread(oncpu).value_or(0);
  st.wall_mean = mean_of(wall);
  st.oncpu_mean = mean_of(oncpu);
  for (auto& v : per_event) {
    st.events_mean.push_back(mean_of(v));
    st.events.push_back(median(v));
    st.events_spread.push_back(spread(std::move(v)));
  }
  return st;
}

// How much the outer function's calls with the target probed exceed those without (kNested
// target calls inside each), the spread of that figure, and its tail (mean less median).
struct EnclosedDiff {
  std::optional<std::int64_t> diff;  // nullopt: not measured both ways
  std::uint64_t spread = 0;
  double tail = 0;
};

// The tail per target call: never below 0 (a mean under the median: no slow calls to allow for).
std::uint64_t tail_per_call(double tail) {
  return tail > 0 ? static_cast<std::uint64_t>(std::llround(tail / kNested)) : 0;
}

std::int64_t signed_diff(std::uint64_t with, std::uint64_t alone) {
  return static_cast<std::int64_t>(with) - static_cast<std::int64_t>(alone);
}

// Stores what a probed call costs the call it is nested in, per target call: each difference
// (never below 0), its spread and its tail, per event, then wall (at most the on-CPU cost) and
// on-CPU; the wall slot's noise is the on-CPU one (`oncpu`'s spread and tail).
void store_enclosed(ProbeBias& bias, const std::vector<EnclosedDiff>& events,
                    std::int64_t wall_diff, const EnclosedDiff& oncpu) {
  auto per_call = [](std::int64_t d) {
    return d > 0 ? static_cast<std::uint64_t>(d) / kNested : 0;
  };
  // kNested target calls in each outer sample: the spread of one is about sqrt(kNested) less.
  auto one = [](std::uint64_t spread) { return spread / 2; };
  static_assert(kNested == 4, "one(): the square root of kNested");
  bias.nested_calibrated = true;
  for (const auto& e : events) {
    bias.enclosed.push_back(e.diff ? std::optional(per_call(*e.diff)) : std::nullopt);
    bias.enclosed_noise.push_back(one(e.spread));
    bias.enclosed_tail.push_back(tail_per_call(e.tail));
  }
  bias.enclosed_oncpu_ns = per_call(oncpu.diff.value_or(0));
  bias.enclosed_wall_ns = std::min(per_call(wall_diff), bias.enclosed_oncpu_ns);
  for (int slot = 0; slot < 2; ++slot) {  // wall, on-CPU
    bias.enclosed_noise.push_back(one(oncpu.spread));
    bias.enclosed_tail.push_back(tail_per_call(oncpu.tail));
  }
}

// From sequential samples: the outer function's medians with the target probed less without;
// the spread is that of the samples with it, the tail what their mean exceeds their median by
// more than the samples' without.
void set_enclosed(ProbeBias& bias, const SampleStats& with, const SampleStats& alone) {
  if (with.counted == 0 || alone.counted == 0) return;
  auto tail = [](double mean_with, std::uint64_t median_with, double mean_alone,
                 std::uint64_t median_alone) {
    return (mean_with - static_cast<double>(median_with)) -
           (mean_alone - static_cast<double>(median_alone));
  };
  std::vector<EnclosedDiff> events;
  for (std::size_t i = 0; i < with.events.size() && i < alone.events.size(); ++i) {
    const bool both = with.events[i] && alone.events[i];
    events.push_back(
        {both ? std::optional(signed_diff(*with.events[i], *alone.events[i])) : std::nullopt,
         with.events_spread[i].value_or(0),
         both ? tail(with.events_mean[i], *with.events[i], alone.events_mean[i], *alone.events[i])
              : 0});
  }
  store_enclosed(bias, events, signed_diff(with.wall, alone.wall),
                 {signed_diff(with.oncpu, alone.oncpu), with.oncpu_spread,
                  tail(with.oncpu_mean, with.oncpu, alone.oncpu_mean, alone.oncpu)});
}

// Calls the outer function kCalls times, alternately with the probed target and with its
// unprobed twin (kNested calls each): sample 2j is a call with the target, 2j + 1 the same
// call without it, made right after, under the same load and cache state.
void make_outer_pairs(const CalibrationProbe& p) {
  void (*volatile outer)(void (*)(), long, int) = pmcprof_calibration_outer;
  for (int i = 0; i < kCalls / 2; ++i) {
    outer(p.call, p.syscall_nr, kNested);
    outer(p.twin, p.syscall_nr, kNested);
  }
}

// Pairs wanted per event: a difference carries the outliers (an interrupt, a cache miss) of
// two calls, and its spread's 90th percentile must not land on them (32 pairs put it on the
// 4th largest; an interrupt in about 1 call in 16 put 4 there).
constexpr int kWantedPairs = 128;

bool both_counted(const SamplePair& p) {
  return !p.first.not_counted && !p.second.not_counted;
}

bool both_measured(const SamplePair& p, std::size_t event) {
  return both_counted(p) && (p.first.measured & p.second.measured & (1u << event));
}

// Rounds of pairs until the pairs both of whose calls were counted, and those of every event
// (multiplexed, an event runs through only some), are enough. A round with a sample missing
// (a call went unrecorded) cannot be paired by position: dropped.
std::vector<SamplePair> sample_pairs(const FuncObject& object, const CalibrationProbe& p) {
  const std::size_t n_events = object.events().size();
  std::vector<SamplePair> pairs;
  auto enough = [&] {
    auto count = [&](auto&& pred) { return std::count_if(pairs.begin(), pairs.end(), pred); };
    if (count(both_counted) < kWantedPairs) return false;
    for (std::size_t i = 0; i < n_events; ++i)
      if (count([i](const SamplePair& q) { return both_measured(q, i); }) < kWantedPairs)
        return false;
    return true;
  };
  for (int round = 0; round < kMaxRounds && !enough(); ++round) {
    object.reset_calibration();
    make_outer_pairs(p);
    auto samples = object.calibration_samples(true);
    if (samples.size() != static_cast<std::size_t>(kCalls)) continue;
    for (std::size_t j = 0; j + 1 < samples.size(); j += 2)
      pairs.emplace_back(std::move(samples[j]), std::move(samples[j + 1]));
  }
  return pairs;
}

// The median, spread (as spread()) and mean of signed values; nullopt when there are none.
struct SignedStats {
  std::int64_t median = 0, spread = 0;
  double mean = 0;
};

std::optional<SignedStats> signed_stats(std::vector<std::int64_t> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return SignedStats{v[v.size() / 2],
                     v[percentile_rank(v.size(), 0.9)] - v[percentile_rank(v.size(), 0.1)],
                     mean_of(v)};
}

// A difference's figures: its median, spread and tail (mean less median).
EnclosedDiff enclosed_diff(const SignedStats& st) {
  return {st.median, static_cast<std::uint64_t>(st.spread),
          st.mean - static_cast<double>(st.median)};
}

}  // namespace

void set_enclosed_from_pairs(ProbeBias& bias, const std::vector<SamplePair>& pairs,
                             std::size_t n_events) {
  std::vector<std::vector<std::int64_t>> per_event(n_events);
  std::vector<std::int64_t> wall, oncpu;
  for (const auto& q : pairs) {
    wall.push_back(signed_diff(q.first.wall_ns, q.second.wall_ns));
    if (!both_counted(q)) continue;
    oncpu.push_back(signed_diff(q.first.oncpu_ns, q.second.oncpu_ns));
    for (std::size_t i = 0; i < n_events; ++i)
      if (both_measured(q, i))
        per_event[i].push_back(signed_diff(q.first.delta[i], q.second.delta[i]));
  }
  const auto on = signed_stats(oncpu);
  const auto wa = signed_stats(wall);
  if (!on || !wa) return;
  std::vector<EnclosedDiff> events;
  for (auto& v : per_event) {
    const auto st = signed_stats(std::move(v));
    events.push_back(st ? enclosed_diff(*st) : EnclosedDiff{});
  }
  store_enclosed(bias, events, wa->median, enclosed_diff(*on));
}

namespace {

void make_calls(const CalibrationProbe& p) {
  // Through a volatile pointer: the calls must happen, and not be inlined away.
  void (*volatile fn)() = p.call;
  for (int i = 0; i < kCalls; ++i) {
    if (fn)
      fn();
    else
      syscall(p.syscall_nr);
  }
}

}  // namespace

namespace {

// Per event (0 where not measured), then wall, then on-CPU: the slots' order.
std::vector<std::uint64_t> slot_values(const std::vector<std::optional<std::uint64_t>>& events,
                                       std::uint64_t wall, std::uint64_t oncpu) {
  std::vector<std::uint64_t> values;
  for (const auto& v : events) values.push_back(v.value_or(0));
  values.push_back(wall);
  values.push_back(oncpu);
  return values;
}

}  // namespace

std::vector<std::uint64_t> bias_values(const ProbeBias& bias) {
  return slot_values(bias.events, std::min(bias.wall_ns, bias.oncpu_ns), bias.oncpu_ns);
}

std::vector<std::uint64_t> noise_values(const ProbeBias& bias) {
  return slot_values(bias.events_noise, bias.wall_noise_ns, bias.oncpu_noise_ns);
}

std::optional<std::uint64_t> spread(std::vector<std::uint64_t> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  return values[percentile_rank(values.size(), 0.9)] - values[percentile_rank(values.size(), 0.1)];
}

std::optional<std::uint64_t> median(std::vector<std::uint64_t> values) {
  if (values.empty()) return std::nullopt;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

namespace {

// The outer function probed. A user-space target has an unprobed twin, and the outer calls
// alternate between the two once the target is probed. A kernel target has none: what a call
// of the outer function costs alone is measured now, in `alone`, before the target is probed.
// Without the outer probe (why_not said), the probe's own bias is still calibrated: nested
// calls are then not compensated.
std::vector<BpfLink> attach_outer(const FuncObject& object, const CalibrationRequest& req,
                                  SampleStats& alone, std::string& why_not) {
  try {
    auto outer_at = locate_in_maps(read_file("/proc/self/maps").value_or(""),
                                   reinterpret_cast<std::uint64_t>(pmcprof_calibration_outer));
    if (!outer_at) throw SystemError("pmcprof's calibration caller is not in a mapped file");
    const CalibrationProbe target = attach_probe(object, req, false);
    auto links = object.attach_uprobe(object.calibration_outer_id(), outer_at->path,
                                      outer_at->file_offset, ::getpid());
    if (!target.twin)
      alone = sample_stats(sample_rounds(object, true, [&] { make_outer_calls(target); }),
                           object.events().size());
    return links;
  } catch (const Error& e) {
    why_not = e.what();
    return {};
  }
}

}  // namespace

ProbeBias calibrate(const FuncObject& object, const CalibrationRequest& req, LinkReaper& reaper) {
  ProbeBias bias;
  bias.backend = req.backend;
  if (req.backend == ProbeBackend::uprobe) bias.start = req.start;
  const std::size_t n_events = object.events().size();
  std::uint64_t own = 0;
  std::vector<FuncObject::CalibrationSample> samples;
  SampleStats outer_alone, outer_with;
  bool paired = false;
  std::vector<SamplePair> pairs;
  try {
    std::vector<BpfLink> outer;
    if (req.nested)
      outer = attach_outer(object, req, outer_alone, bias.nested_why_not);
    else
      bias.nested_why_not = "no probed call of this run can enclose another";
    CalibrationProbe probe = attach_probe(object, req);
    paired = probe.twin != nullptr;
    bias.probed = probe.probed;
    own = probe.own_instructions;
    samples = sample_rounds(object, false, [&] { make_calls(probe); });
    if (!outer.empty() && paired)
      pairs = sample_pairs(object, probe);
    else if (!outer.empty())
      outer_with =
          sample_stats(sample_rounds(object, true, [&] { make_outer_calls(probe); }), n_events);
    // Only pmcprof's own calls reach the calibration ids, and it makes no more: the samples
    // are final while the probes are detached in the background.
    reaper.reap(std::move(outer), {});
    reaper.reap(std::move(probe.links), {});
    reaper.reap(std::move(probe.fentry.links), {std::move(probe.fentry.twin)});
  } catch (const Error& e) {
    bias.why_not = e.what();
    return bias;
  }
  const SampleStats st = sample_stats(samples, n_events);
  if (st.counted == 0) {
    bias.why_not = "no calibration call was measured (" + std::to_string(st.seen) + " seen)";
    return bias;
  }
  bias.calibrated = true;
  bias.calls = st.counted;
  bias.wall_ns = st.wall;
  bias.oncpu_ns = st.oncpu;
  bias.wall_noise_ns = st.wall_spread;
  bias.oncpu_noise_ns = st.oncpu_spread;
  for (std::size_t i = 0; i < n_events; ++i) {
    auto m = st.events[i];
    // The empty function's own instructions are its work, not the probe's (and, for cycles,
    // one cycle each: exact under qemu's -icount, about right for two trivial instructions).
    if (m && i < req.own_work_events.size() && req.own_work_events[i]) *m = *m > own ? *m - own : 0;
    bias.events.push_back(m);
    bias.events_noise.push_back(st.events_spread[i]);
  }
  if (paired)
    set_enclosed_from_pairs(bias, pairs, n_events);
  else
    set_enclosed(bias, outer_with, outer_alone);
  // A tracepoint pair cannot be calibrated on an empty syscall: its figure includes the
  // syscall's work, so it is stated but not taken off other syscalls. (What it costs a call
  // it is nested in is the difference of two runs of the same syscalls: taken off.)
  bias.subtracted = req.compensate && req.backend != ProbeBackend::tracepoint;
  if (bias.subtracted)
    for (std::uint32_t id : req.func_ids)
      object.set_bias(id, bias_values(bias), noise_values(bias));
  return bias;
}

std::vector<std::uint64_t> enclosed_values(const ProbeBias& bias) {
  return slot_values(bias.enclosed, bias.enclosed_wall_ns, bias.enclosed_oncpu_ns);
}

}  // namespace pmcprof

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/probes/target_spec.hpp"

namespace pmcprof {

// How the kernel runs a uprobed function's first instruction, which decides what the probe
// costs: x86-64 emulates some instructions (push) and single-steps the rest out of line;
// arm64 single-steps nearly everything. Calibrated separately.
// arm64 simulates branches, adr/adrp and literal loads in the kernel (no instruction runs in
// user mode for them: a user-mode instruction count sees one fewer), and single-steps the rest.
enum class UprobeStart { stepped, push, endbr, simulated };
const char* to_string(UprobeStart s);

// The class of the instruction at `file_offset` of the ELF file `path` (its first bytes).
UprobeStart uprobe_start_of(const std::string& path, std::uint64_t file_offset);

// Whether arm64's uprobe code simulates instruction `insn` (arch/arm64/kernel/probes/
// decode-insn.c: b, bl, b.cond, cbz/cbnz, tbz/tbnz, br/blr/ret, adr/adrp, ldr/ldrsw literal).
bool arm64_uprobe_simulates(std::uint32_t insn);

// What one probe pair adds to every call it measures, per backend (and, for uprobes, per kind
// of first instruction): measured before the run by probing a function that does nothing with
// the run's own programs and events.
//   uprobe      an empty function in pmcprof whose first instruction is handled like the
//               targets' (x86-64: `push %rbp; pop %rbp; ret`, `endbr64; ret` or
//               `mov %rdi,%rax; ret`; arm64: `nop; ret`); its own instructions are not bias
//   kprobe      sys_ni_syscall (returns -ENOSYS), called by a syscall no kernel implements;
//               its own instructions (the syscall wrapper's, sys_ni_syscall's) are counted
//               from the kernel's live text (kernel_text.hpp: /proc/kcore, root) and are not
//               bias; where they cannot be, they are taken as 0 and `probed` says so
//   fentry      the same function
//   usdt        a region between two nops in pmcprof (a USDT probe site is one nop): the
//               whole of it is the probes' cost (regions whose both ends are USDT probes)
//   tracepoint  the pair of a cheap syscall no target uses (getppid, getpid, ...); the
//               syscall's own work is inside, so this is an upper bound: stated, never
//               subtracted
struct ProbeBias {
  ProbeBackend backend = ProbeBackend::uprobe;
  std::optional<UprobeStart> start;  // uprobes
  std::string probed;                // what was probed, for the report
  // Regions whose ends are not both USDT probes: their kinds ("uprobe/usdt", "tracepoint"),
  // stated as not calibrated.
  std::string region_kinds;
  bool calibrated = false;  // false: why_not says why
  std::string why_not;
  bool subtracted = false;                           // compensating this backend's calls
  std::size_t calls = 0;                             // calibration calls measured
  std::vector<std::optional<std::uint64_t>> events;  // per BPF event: median per call
  std::uint64_t wall_ns = 0;                         // median
  std::uint64_t oncpu_ns = 0;                        // median
  // The noise floor: the spread of the samples (90th less 10th percentile), per BPF event
  // (nullopt where none measured), wall and on-CPU. A compensated value below it is flagged.
  std::vector<std::optional<std::uint64_t>> events_noise;
  std::uint64_t wall_noise_ns = 0;
  std::uint64_t oncpu_noise_ns = 0;
  // What one probed call of this backend costs a call it is nested in (an outer function in
  // pmcprof calling the target, probed with and without the target probed: a user-space
  // target alternately with its unprobed twin, the median of the pairs' differences), per BPF
  // event (nullopt where not measured), wall and on-CPU.
  bool nested_calibrated = false;
  std::string nested_why_not;  // when not
  std::vector<std::optional<std::uint64_t>> enclosed;
  std::uint64_t enclosed_wall_ns = 0;
  std::uint64_t enclosed_oncpu_ns = 0;
  // Its noise per nested call, in two parts (per BPF event, wall, on-CPU). The spread (the
  // outer samples' spread, or the pairs' differences', over the square root of the target
  // calls in each) varies from call to call: k probed calls inside a call add the square root
  // of k times it to the call's noise floor. The tail (the mean less the median, never below
  // 0: a few calls much slower, which the median leaves out) adds up: k times it.
  std::vector<std::uint64_t> enclosed_noise;
  std::vector<std::uint64_t> enclosed_tail;
};

struct CalibrationRequest {
  ProbeBackend backend = ProbeBackend::uprobe;
  UprobeStart start = UprobeStart::stepped;  // uprobes
  std::vector<std::uint32_t> func_ids;       // whose bias to set
  bool compensate = true;
  // Syscalls the run probes (one program cannot be attached twice to a tracepoint), which
  // the tracepoint calibration avoids.
  std::vector<std::string> busy_syscalls;
  // Per BPF event: an instruction or cycle count, from which the calibration target's own
  // instructions are taken off (they are the empty function's work, not the probe's).
  std::vector<bool> own_work_events;
  // Whether a call of the run can enclose another probed call, so that what a probed call
  // costs its caller is needed (not when every target is a syscall: syscalls do not nest).
  bool nested = true;
};

// Calibrates on `object` (counters enabled, nothing else attached for the calibration id)
// and, when compensating (and the backend allows it), sets the bias of `func_ids`. Never
// throws for what this kernel cannot calibrate: the result says why. The calibration probe is
// detached on `reaper`'s thread, so the run need not wait for it.
ProbeBias calibrate(const FuncObject& object, const CalibrationRequest& request,
                    LinkReaper& reaper);

// What set_bias takes for a calibrated backend: per event, then wall, then on-CPU. The wall
// slot is the on-CPU bias (the probe's time is on-CPU work): a call's two times lose the same,
// so its on-CPU time stays within its wall time (per-call CPUs utilized never above 1).
std::vector<std::uint64_t> bias_values(const ProbeBias& bias);
// The noise floors in the same order.
std::vector<std::uint64_t> noise_values(const ProbeBias& bias);
// What a nested probed call costs, in the same order (FuncObject::set_class_cost); its
// noise is `enclosed_noise` and `enclosed_tail`.
std::vector<std::uint64_t> enclosed_values(const ProbeBias& bias);

// Calls of the calibration's outer function (kNested = 4 target calls inside each) in pairs:
// with the target probed, then with its unprobed twin, made one right after the other.
using SamplePair = std::pair<FuncObject::CalibrationSample, FuncObject::CalibrationSample>;

// Sets what a probed call costs the call it is nested in (bias.enclosed*, nested_calibrated)
// from such pairs: per event (of the pairs whose two calls it ran through), wall (every pair)
// and on-CPU (the pairs whose two calls were counted), the median of the pairs' differences
// per target call (never below 0), their spread over sqrt(4) as the noise, which holds
// whatever varied between the two calls of a pair (the load did not, much), and their mean
// less their median per target call as the tail. Without a counted pair nothing is set.
void set_enclosed_from_pairs(ProbeBias& bias, const std::vector<SamplePair>& pairs,
                             std::size_t n_events);

// The spread of the values: their 90th less their 10th percentile (nearest rank; 0 for fewer
// than two values).
std::optional<std::uint64_t> spread(std::vector<std::uint64_t> values);

// The median of the measured values (nullopt when none), as the calibration uses it.
std::optional<std::uint64_t> median(std::vector<std::uint64_t> values);

}  // namespace pmcprof

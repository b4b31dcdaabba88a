#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/probes/target_spec.hpp"

namespace pmcprof {

// What one probe pair adds to every call it measures, per backend: measured before the run by
// probing a function that does nothing with the run's own programs and events.
//   uprobe      an empty function in pmcprof itself (one `ret`, emulated by the kernel)
//   kprobe      bpf_fentry_test1 (returns its argument + 1), called through a BPF test run
//   fentry      the same function
//   tracepoint  the pair of a cheap syscall no target uses (getppid, getpid, ...); the
//               syscall's own work is inside, so this is an upper bound: stated, never
//               subtracted
struct ProbeBias {
  ProbeBackend backend = ProbeBackend::uprobe;
  std::string probed;       // what was probed, for the report
  bool calibrated = false;  // false: why_not says why
  std::string why_not;
  bool subtracted = false;                           // compensating this backend's calls
  std::size_t calls = 0;                             // calibration calls measured
  std::vector<std::optional<std::uint64_t>> events;  // per BPF event: median per call
  std::uint64_t wall_ns = 0;                         // median
  std::uint64_t oncpu_ns = 0;                        // median
};

// Calibrates `backend` on `object` (counters enabled, nothing else attached for the
// calibration id), and when `compensate` (and the backend allows it) sets the bias of every
// function id in `func_ids`. Never throws for a backend this kernel cannot calibrate: the
// result says why.
// The calibration probe is detached on `reaper`'s thread, so the run need not wait for it.
// `busy_syscalls`: syscalls the run probes (one program cannot be attached twice to a
// tracepoint), which the tracepoint calibration avoids.
ProbeBias calibrate_backend(const FuncObject& object, ProbeBackend backend,
                            const std::vector<std::uint32_t>& func_ids, bool compensate,
                            LinkReaper& reaper, const std::vector<std::string>& busy_syscalls);

// What set_bias takes for a calibrated backend: per event, then wall, then on-CPU.
std::vector<std::uint64_t> bias_values(const ProbeBias& bias);

// The median of the measured values (nullopt when none), as the calibration uses it.
std::optional<std::uint64_t> median(std::vector<std::uint64_t> values);

}  // namespace pmcprof

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace pmcprof {

// A machine-readable fact behind a verdict, e.g. {"mount_point", "/sys/fs/cgroup/unified"}.
// Emitted as extra members of the capability's object in --json.
struct ProbeFact {
  std::string key;
  std::variant<bool, std::int64_t, std::string> value;
};

// The outcome of one live probe. `detail` is one line saying why, written for a person who
// has to fix the machine (it names the errno, the file, the missing privilege).
struct ProbeResult {
  bool available = false;
  std::string detail;
  std::vector<ProbeFact> facts;
  // When not available, why in a few words for doctor's verdict: a phrase, then what lies
  // behind it in parentheses ("no kprobes (kernel without CONFIG_KPROBES)", "fentry refused
  // (EPERM)"); the phrase alone is the verdict's summary. Empty: `detail` says it.
  std::string brief;
};

// Each probe asks the running kernel (not its config) by really doing the thing, and undoes
// it before returning: no fd stays open, no program stays loaded or attached. The one lasting
// effect is probe_syscall_tracepoints() mounting tracefs when it is not mounted (root only).
// Modes that are refused call the same probes to explain why.
ProbeResult probe_btf();                  // /sys/kernel/btf/vmlinux loads as BTF
ProbeResult probe_cap_bpf();              // CAP_BPF in the effective set
ProbeResult probe_cap_perfmon();          // CAP_PERFMON in the effective set
ProbeResult probe_hardware_pmu();         // cycles opens on CPU 0 (or on this task)
ProbeResult probe_software_events();      // task-clock opens and counts for this task
ProbeResult probe_kprobes();              // the kprobe PMU opens a probe on vfs_read
ProbeResult probe_fentry();               // a fentry/vfs_read BPF program loads and attaches
ProbeResult probe_uprobes();              // the uprobe PMU counts a call in this binary
ProbeResult probe_uprobe_multi();         // the kernel makes multi-uprobe links
ProbeResult probe_attach_cookie();        // kprobe programs may call bpf_get_attach_cookie
ProbeResult probe_task_storage();         // a BPF task local storage map can be made
ProbeResult probe_syscall_tracepoints();  // syscalls:sys_enter_getppid counts our getppid()s
ProbeResult probe_cgroup_v2();            // a cgroup2 mount; hybrid or not
ProbeResult probe_perf_event_paranoid();  // yes = the sysctl exists; detail = what it means
ProbeResult probe_bpf_counter_read();     // a BPF program reads task-clock (read_value helper)

struct Capability {
  std::string name;  // snake_case, stable: the --json "name"
  ProbeResult result;
};

struct CapabilityReport {
  std::vector<Capability> capabilities;
  // nullptr when no capability has that name.
  const Capability* find(std::string_view name) const;
};

// Runs every probe above, in the order `pmcprof doctor` prints them.
CapabilityReport probe_all();

// ---- pure helpers (unit-tested) ----

// "EPERM (Operation not permitted)"; the symbolic name is what people search for.
std::string errno_name(int err);

// What kernel.perf_event_paranoid = level allows a process without CAP_PERFMON.
std::string describe_perf_event_paranoid(int level);

// Where `address` lies in a /proc/PID/maps text: the mapped file and the file offset, which is
// what a uprobe is placed by. nullopt when the address is not in a file-backed mapping.
struct MappedLocation {
  std::string path;
  std::uint64_t file_offset = 0;
};
std::optional<MappedLocation> locate_in_maps(std::string_view maps_text, std::uint64_t address);

}  // namespace pmcprof

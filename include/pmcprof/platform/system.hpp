#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/util/fd.hpp"

namespace pmcprof {

// Start-up allocates in bursts: each BPF object's load has libbpf read and index the kernel's
// BTF (5 MiB here, ~15 MiB allocated and freed), and page faults cost tens of microseconds
// each on some VMs (40-90 ms of a run's start-up on this one). So the heap grows in large steps
// on transparent huge pages where the kernel allows them (THP "madvise" or "always"), and
// keeps what it frees (up to 64 MiB, for the process's life: a long `serve` keeps its peak).
// Called first thing in main(); harmless where THP is off.
void prepare_heap();

// Whole file as a string; nullopt when it cannot be opened.
std::optional<std::string> read_file(const std::string& path);

// CPUs the kernel reports online (/sys/devices/system/cpu/online), e.g. {0,1}.
std::vector<int> online_cpus();
// Number of possible CPU ids (highest possible id + 1), the size of per-CPU BPF arrays.
int possible_cpu_count();

// kernel.perf_event_paranoid, or nullopt when the file is missing.
std::optional<int> perf_event_paranoid();

// Effective capability check of the calling process (CAP_* number from linux/capability.h).
bool has_effective_capability(int cap);

bool process_exists(pid_t pid);
// An fd that becomes readable when the process exits (a pidfd: a process whose leader thread
// exits first ends when its last thread does), or, with `thread`, when that one thread exits
// (a PIDFD_THREAD pidfd on Linux 6.9+, else open_thread_exit_fd). Invalid when the task is
// already gone (or, without `thread`, when `pid` is not a process id but another thread's).
Fd open_pidfd(pid_t pid, bool thread = false);
// Before Linux 6.9 a pidfd watches only a whole process: a thread's end is seen through a
// software dummy perf event on it, which poll() reports as hung up (POLLHUP) once its task has
// exited. Invalid when the thread is gone or cannot be watched.
Fd open_thread_exit_fd(pid_t tid);
// The process (thread group) a task id belongs to: itself for a process id, the process for
// the id of one of its other threads; nullopt when there is no such task.
std::optional<pid_t> thread_group_of(pid_t id);

// Thread ids of a process (/proc/PID/task) that have not exited (a first thread that exited
// before the others is a zombie until they do), sorted; empty when the process is gone.
std::vector<pid_t> process_threads(pid_t pid);

// Raises the soft RLIMIT_NOFILE to at least `needed` (up to the hard limit).
// Returns the soft limit in force afterwards.
std::uint64_t raise_nofile_limit(std::uint64_t needed);

// Monotonic clock in nanoseconds.
std::uint64_t monotonic_ns();
// Wall clock (CLOCK_REALTIME) in nanoseconds since the epoch: report timestamps.
std::uint64_t realtime_ns();

}  // namespace pmcprof

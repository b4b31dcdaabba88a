#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace pmcprof {

// Where a CPU sits (sysfs topology): what perf's --per-core/--per-die/--per-socket/--per-node
// aggregate by. A missing file reads as 0 (die_id before Linux 5.2, no NUMA nodes), -1 is
// kept when the kernel reports it (an unknown socket).
struct CpuPlace {
  int socket = 0;  // topology/physical_package_id
  int die = 0;     // topology/die_id
  int core = 0;    // topology/core_id
  int node = 0;    // the nodeN link in the CPU's directory
};

// The places of `cpus`, read below `sys_cpu_dir` (/sys/devices/system/cpu on a live system).
std::map<int, CpuPlace> read_cpu_topology(
    const std::vector<int>& cpus, const std::string& sys_cpu_dir = "/sys/devices/system/cpu");

// One thread of the system: for --per-thread rows ("comm-tid").
struct ThreadInfo {
  pid_t tid = 0;
  std::string comm;
};
// Every thread of every process (/proc/PID/task/TID), sorted by tid; threads that exit while
// the list is read are left out.
std::vector<ThreadInfo> all_threads();
// The comm of one thread ("" when it is gone).
std::string thread_comm(pid_t tid);

}  // namespace pmcprof

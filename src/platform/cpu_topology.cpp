#include "pmcprof/platform/cpu_topology.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace fs = std::filesystem;

namespace {

int read_int(const std::string& path, int fallback) {
  auto text = read_file(path);
  if (!text) return fallback;
  std::string t(trim(*text));
  if (t.empty()) return fallback;
  char* end = nullptr;
  long v = std::strtol(t.c_str(), &end, 10);
  return end && *end == '\0' ? static_cast<int>(v) : fallback;
}

int node_of(const std::string& cpu_dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cpu_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 4 && starts_with(name, "node") &&
        std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::atoi(name.c_str() + 4);
  }
  return 0;
}

}  // namespace

std::map<int, CpuPlace> read_cpu_topology(const std::vector<int>& cpus,
                                          const std::string& sys_cpu_dir) {
  std::map<int, CpuPlace> out;
  for (int cpu : cpus) {
    const std::string dir = sys_cpu_dir + "/cpu" + std::to_string(cpu);
    CpuPlace p;
    p.socket = read_int(dir + "/topology/physical_package_id", 0);
    p.die = read_int(dir + "/topology/die_id", 0);
    p.core = read_int(dir + "/topology/core_id", 0);
    p.node = node_of(dir);
    out[cpu] = p;
  }
  return out;
}

std::string thread_comm(pid_t tid) {
  auto comm = read_file("/proc/" + std::to_string(tid) + "/comm");
  if (!comm) return {};
  std::string c = *comm;
  while (!c.empty() && c.back() == '\n') c.pop_back();
  return c;
}

std::vector<ThreadInfo> all_threads() {
  std::vector<ThreadInfo> out;
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.empty() ||
        !std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    std::error_code ec2;
    for (const auto& task : fs::directory_iterator(proc.path() / "task", ec2)) {
      const pid_t tid = static_cast<pid_t>(std::atoi(task.path().filename().c_str()));
      std::string comm = thread_comm(tid);
      if (tid > 0 && !comm.empty()) out.push_back({tid, std::move(comm)});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.tid < b.tid; });
  return out;
}

}  // namespace pmcprof

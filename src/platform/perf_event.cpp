#include "pmcprof/platform/perf_event.hpp"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "pmcprof/platform/system.hpp"

namespace pmcprof {

int sys_perf_event_open(perf_event_attr& attr, pid_t pid, int cpu, int group_fd,
                        unsigned long flags) {
  long fd = syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

OpenFailure classify_open_errno(int err) {
  switch (err) {
    case EACCES:
    case EPERM:
      return OpenFailure::permission;
    case EMFILE:
    case ENFILE:
      return OpenFailure::too_many_files;
    case ESRCH:
      return OpenFailure::no_such_process;
    case EBUSY:
      return OpenFailure::busy;
    case ENOENT:
    case EOPNOTSUPP:
    case EINVAL:
    case ENODEV:
    case ENOSYS:
    case E2BIG:
      return OpenFailure::not_supported;
    default:
      return OpenFailure::other;
  }
}

std::string explain_permission_denied(const std::string& event, bool system_wide, int err) {
  std::string msg = "no permission to open '" + event + "'";
  msg += system_wide ? " system-wide" : " for the target task";
  msg += " (" + std::string(err == EPERM ? "EPERM" : "EACCES") + "): needs CAP_PERFMON";
  if (system_wide || err == EPERM) msg += " (or CAP_SYS_ADMIN)";
  auto paranoid = perf_event_paranoid();
  if (paranoid) {
    int needed = system_wide ? 0 : 1;
    msg += " or kernel.perf_event_paranoid <= " + std::to_string(needed) + " (it is " +
           std::to_string(*paranoid) + ")";
  }
  if (!has_effective_capability(CAP_BPF)) msg += "; BPF modes also need CAP_BPF";
  return msg;
}

}  // namespace pmcprof

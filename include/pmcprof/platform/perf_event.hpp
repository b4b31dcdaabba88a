#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <string>

#include "pmcprof/util/fd.hpp"

namespace pmcprof {

// Raw perf_event_open(2). Returns the fd or -errno.
int sys_perf_event_open(perf_event_attr& attr, pid_t pid, int cpu, int group_fd,
                        unsigned long flags);

// How pmcprof treats a perf_event_open failure.
enum class OpenFailure {
  not_supported,    // ENOENT, EOPNOTSUPP, EINVAL, ENODEV, ...: print <not supported>, go on
  permission,       // EACCES, EPERM: fatal, explain capabilities / paranoid
  too_many_files,   // EMFILE, ENFILE: fatal, say how many fds are needed
  no_such_process,  // ESRCH: the target went away
  busy,             // EBUSY: another user holds the PMU exclusively
  other,
};

OpenFailure classify_open_errno(int err);

// One line naming the missing privilege: CAP_PERFMON / CAP_SYS_ADMIN, and the
// kernel.perf_event_paranoid value that would allow it.
std::string explain_permission_denied(const std::string& event, bool system_wide, int err);

}  // namespace pmcprof

#include "pmcprof/run/workload.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

SignalBlocker::SignalBlocker() {
  sigemptyset(&blocked_);
  sigaddset(&blocked_, SIGINT);
  sigaddset(&blocked_, SIGTERM);
  sigprocmask(SIG_BLOCK, &blocked_, &previous_);
}

SignalBlocker::~SignalBlocker() {
  // Drop what arrived while blocked so it does not hit the default handler on unblock:
  // the run loop already acted on it.
  timespec zero{};
  while (sigtimedwait(&blocked_, nullptr, &zero) > 0) {
  }
  sigprocmask(SIG_SETMASK, &previous_, nullptr);
}

int shell_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitFailure;
}

Workload Workload::prepare(const std::vector<std::string>& argv, const sigset_t& child_sigmask) {
  if (argv.empty()) throw UserError("no command given");
  int go[2], err[2];
  if (pipe2(go, O_CLOEXEC) != 0) throw SystemError("pipe: " + errno_string(errno));
  Fd go_read(go[0]), go_write(go[1]);
  if (pipe2(err, O_CLOEXEC) != 0) throw SystemError("pipe: " + errno_string(errno));
  Fd err_read(err[0]), err_write(err[1]);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw SystemError("fork: " + errno_string(errno));
  if (pid == 0) {
    // Child: wait for the go byte (EOF means the parent gave up), then exec.
    sigprocmask(SIG_SETMASK, &child_sigmask, nullptr);
    // If pmcprof dies (even by SIGKILL) its workload is told, like an interrupted run.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(kExitFailure);
    char c;
    ssize_t n;
    do n = ::read(go_read.get(), &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) _exit(kExitFailure);
    execvp(args[0], args.data());
    int e = errno;
    (void)!::write(err_write.get(), &e, sizeof(e));
    _exit(e == ENOENT ? kExitNotFound : kExitNotExecutable);
  }
  Workload w;
  w.pid_ = pid;
  w.go_pipe_ = std::move(go_write);
  w.err_pipe_ = std::move(err_read);
  w.command_line_ = join(argv, " ");
  w.program_ = argv[0];
  w.pidfd_ = open_pidfd(pid);
  return w;
}

Workload::Workload(Workload&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      reaped_(o.reaped_),
      status_(o.status_),
      pidfd_(std::move(o.pidfd_)),
      go_pipe_(std::move(o.go_pipe_)),
      err_pipe_(std::move(o.err_pipe_)),
      command_line_(std::move(o.command_line_)),
      program_(std::move(o.program_)) {}

Workload::~Workload() {
  if (pid_ > 0 && !reaped_) terminate(SIGKILL, 0);
}

void Workload::start() {
  char go = 1;
  if (::write(go_pipe_.get(), &go, 1) != 1) throw SystemError("cannot start the workload");
  go_pipe_.reset();
  int e = 0;
  ssize_t n;
  do n = ::read(err_pipe_.get(), &e, sizeof(e));
  while (n < 0 && errno == EINTR);
  err_pipe_.reset();
  if (n == static_cast<ssize_t>(sizeof(e))) {
    try_reap();
    if (e == ENOENT)
      throw UserError("command not found: " + program_, "check the name and $PATH", kExitNotFound);
    throw UserError("cannot execute " + program_ + ": " + errno_string(e), {}, kExitNotExecutable);
  }
}

std::optional<int> Workload::try_reap() {
  if (reaped_) return shell_status(status_);
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = st;
    return shell_status(st);
  }
  return std::nullopt;
}

int Workload::finish(bool exited) {
  if (exited)
    if (auto status = try_reap()) return *status;
  return exited ? terminate(SIGKILL, 200) : terminate(SIGTERM, 1000);
}

int Workload::terminate(int sig, int grace_ms) {
  if (auto s = try_reap()) return *s;
  ::kill(pid_, sig);
  for (int waited = 0; waited < grace_ms; waited += 10) {
    if (auto s = try_reap()) return *s;
    usleep(10000);
  }
  if (auto s = try_reap()) return *s;
  ::kill(pid_, SIGKILL);
  int st = 0;
  while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  status_ = st;
  return shell_status(st);
}

}  // namespace pmcprof

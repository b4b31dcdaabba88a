#include "pmcprof/run/workload.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

// The signal state pmcprof started with, restored in the workload before exec.
struct StartupSignals {
  bool taken = false;
  sigset_t mask{};
};
StartupSignals& startup() {
  static StartupSignals s;
  return s;
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void take_stop_signals() {
  if (startup().taken) return;
  const sigset_t stop = stop_signals();
  sigprocmask(SIG_BLOCK, &stop, &startup().mask);
  startup().taken = true;
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTTOU, SIG_IGN);
}

int pending_stop_signal() {
  sigset_t pending;
  if (sigpending(&pending) != 0) return 0;
  if (sigismember(&pending, SIGINT) == 1) return SIGINT;
  if (sigismember(&pending, SIGTERM) == 1) return SIGTERM;
  return 0;
}

void stop_if_interrupted(const char* during) {
  const int sig = pending_stop_signal();
  if (!sig) return;
  throw UserError(std::string("interrupted by SIG") + sigabbrev_np(sig) + " while " + during +
                      ": nothing was counted",
                  {}, 128 + sig);
}

SignalBlocker::SignalBlocker() {
  blocked_ = stop_signals();
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

const sigset_t& SignalBlocker::previous() const {
  return startup().taken ? startup().mask : previous_;
}

namespace {

// The guard: a child of pmcprof in a session of its own (a signal to pmcprof's process group
// does not reach it), with every signal blocked and no descriptor but its pipe. It waits on
// the pipe: a byte means pmcprof ended the workload itself; EOF without one means pmcprof died
// (SIGKILL, a crash) with the workload's group still there: the guard ends the group (SIGTERM,
// then SIGKILL after a second) and exits.
[[noreturn]] void run_guard(int pipe_fd, pid_t group) {
  setsid();
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  prctl(PR_SET_NAME, "pmcprof-guard");
  if (pipe_fd != 3) {
    dup2(pipe_fd, 3);
  }
  const int null_fd = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd)
    if (null_fd >= 0 && null_fd != fd) dup2(null_fd, fd);
  syscall(SYS_close_range, 4u, ~0u, 0u);
  char c;
  ssize_t n;
  do n = ::read(3, &c, 1);
  while (n < 0 && errno == EINTR);
  if (n == 1) _exit(0);
  if (::kill(-group, SIGTERM) != 0) _exit(0);
  for (int i = 0; i < 100; ++i) {
    if (::kill(-group, 0) != 0) _exit(0);
    usleep(10000);
  }
  ::kill(-group, SIGKILL);
  _exit(0);
}

// The command's side of the fork: its own group (unless a terminal's foreground job), default
// SIGPIPE/SIGTTOU, the command's signal mask, killed with pmcprof; then it waits for the go
// byte (EOF means the parent gave up) and execs, or writes errno to the error pipe.
[[noreturn]] void exec_when_told(Fd& go_read, Fd& go_write, Fd& err_read, Fd& err_write,
                                 bool own_group, const sigset_t& child_sigmask, char** args) {
  if (own_group) setpgid(0, 0);
  signal(SIGPIPE, SIG_DFL);
  signal(SIGTTOU, SIG_DFL);
  sigprocmask(SIG_SETMASK, &child_sigmask, nullptr);
  // If pmcprof dies (even by SIGKILL) its workload dies with it: SIGKILL cannot be ignored.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent's end of the go pipe is its alone: EOF means pmcprof died (before or after
  // the parent-death signal was set). No getppid() here: a --func syscall:getppid run
  // already follows this child and would count the call.
  go_write.reset();
  err_read.reset();
  char c;
  ssize_t n;
  do n = ::read(go_read.get(), &c, 1);
  while (n < 0 && errno == EINTR);
  if (n != 1) _exit(kExitFailure);
  execvp(args[0], args);
  int e = errno;
  (void)!::write(err_write.get(), &e, sizeof(e));
  _exit(e == ENOENT ? kExitNotFound : kExitNotExecutable);
}

}  // namespace

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

  // A foreground job of a terminal keeps one process group, so that the terminal's Ctrl-C and
  // Ctrl-Z still reach the command and the shell still controls the job; anywhere else the
  // command gets a group of its own, which pmcprof ends with itself.
  bool foreground = false;
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO})
    foreground |= isatty(fd) && tcgetpgrp(fd) == getpgrp();
  const bool own_group = !foreground;

  pid_t pid = fork();
  if (pid < 0) throw SystemError("fork: " + errno_string(errno));
  if (pid == 0)
    exec_when_told(go_read, go_write, err_read, err_write, own_group, child_sigmask, args.data());
  Workload w;
  w.pid_ = pid;
  w.own_group_ = own_group;
  if (own_group) {
    setpgid(pid, pid);  // as the child does: whichever runs first, the group exists
    w.start_guard();
  }
  w.go_pipe_ = std::move(go_write);
  w.err_pipe_ = std::move(err_read);
  w.command_line_ = join(argv, " ");
  w.program_ = argv[0];
  w.pidfd_ = open_pidfd(pid);
  return w;
}

void Workload::start_guard() {
  int guard[2];
  if (pipe2(guard, O_CLOEXEC) != 0) return;  // no guard: PR_SET_PDEATHSIG still ends the command
  Fd guard_read(guard[0]), guard_write(guard[1]);
  const pid_t g = fork();
  if (g == 0) run_guard(guard_read.get(), pid_);
  if (g > 0) {
    guard_pid_ = g;
    guard_pipe_ = std::move(guard_write);
  }
}

Workload::Workload(Workload&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      own_group_(o.own_group_),
      guard_pid_(std::exchange(o.guard_pid_, -1)),
      guard_pipe_(std::move(o.guard_pipe_)),
      reaped_(o.reaped_),
      status_(o.status_),
      rusage_(o.rusage_),
      pidfd_(std::move(o.pidfd_)),
      go_pipe_(std::move(o.go_pipe_)),
      err_pipe_(std::move(o.err_pipe_)),
      command_line_(std::move(o.command_line_)),
      program_(std::move(o.program_)) {}

Workload::~Workload() {
  if (pid_ > 0 && (!reaped_ || (own_group_ && !group_gone()))) terminate(SIGKILL, 0);
  release_guard();
}

void Workload::signal_group(int sig) const {
  ::kill(own_group_ ? -pid_ : pid_, sig);
}

// The group is gone when no process is left in it (a zombie of it still counts until its new
// parent reaps it).
bool Workload::group_gone() const {
  return !own_group_ || (::kill(-pid_, 0) != 0 && errno == ESRCH);
}

void Workload::release_guard() {
  if (guard_pid_ <= 0) return;
  char done = 1;
  (void)!::write(guard_pipe_.get(), &done, 1);
  guard_pipe_.reset();
  while (waitpid(guard_pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  guard_pid_ = -1;
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

pid_t Workload::wait_child(int* status, int options) {
  return wait4(pid_, status, options, &rusage_);
}

std::optional<int> Workload::try_reap() {
  if (reaped_) return shell_status(status_);
  int st = 0;
  pid_t r = wait_child(&st, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = st;
    return shell_status(st);
  }
  return std::nullopt;
}

int Workload::finish(bool exited, int sig) {
  if (exited)
    if (auto status = try_reap()) {
      release_guard();  // what the command left running in the background is its own
      return *status;
    }
  return exited ? terminate(SIGKILL, 200) : terminate(sig ? sig : SIGTERM, 1000);
}

int Workload::terminate(int sig, int grace_ms) {
  if (!reaped_ || !group_gone()) signal_group(sig);
  for (int waited = 0; waited < grace_ms; waited += 10) {
    const bool leader_done = try_reap().has_value();
    if (leader_done && group_gone()) break;
    usleep(10000);
  }
  if (!try_reap() || !group_gone()) signal_group(SIGKILL);
  if (!reaped_) {
    int st = 0;
    while (wait_child(&st, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    status_ = st;
  }
  // SIGKILLed members vanish as soon as their parent (init or a subreaper) reaps them.
  for (int i = 0; i < 100 && !group_gone(); ++i) usleep(1000);
  release_guard();
  return shell_status(status_);
}

}  // namespace pmcprof

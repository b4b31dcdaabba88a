/* burn MS [--child MS] [--cgroup DIR]: burns MS milliseconds of CPU on one thread (measured
 * with CLOCK_THREAD_CPUTIME_ID), optionally in parallel with a forked child that burns its own
 * CHILD_MS. Prints one line of key=value figures the runtime tests parse:
 *
 *   burn burned_ns=N process_cpu_ns=N children_cpu_ns=N task_clock_ns=N wall_ns=N
 *
 * burned_ns: CPU time of the burn loop itself; process_cpu_ns: CLOCK_PROCESS_CPUTIME_ID at
 * exit (includes start-up, and what the forking process did after fork); children_cpu_ns: CPU
 * of reaped children (getrusage); task_clock_ns: the kernel's task-clock software counter on
 * this process and its children (inherited), opened first thing in main and read at the end.
 *
 * task_clock_ns is the clock pmcprof and perf count, and the reference the runtime tests
 * compare their task-clock with. It advances whenever the task is on a CPU, including time
 * the hypervisor took from the vCPU while the task was current (steal); the CPU-time clocks
 * (CLOCK_*_CPUTIME_ID, getrusage) leave steal out on this kernel
 * (CONFIG_PARAVIRT_TIME_ACCOUNTING), so on a busy host they fall several percent short of any
 * task-clock. task_clock_ns is left out of the line when the counter cannot be opened.
 *
 * --cgroup DIR: the burn runs in a process created in cgroup DIR (clone3 with
 * CLONE_INTO_CGROUP; the process started as burn waits for it and exits with its status), so
 * DIR holds exactly that process, from its first instruction to its exit: nothing moves into
 * DIR while it runs. A moving task is what per-cgroup counters split imprecisely (the BPF
 * backend charges the stretch on the CPU that spans a move to the cgroup the task is in when
 * it ends), and a workload started by a process that moves itself (a fork writing
 * cgroup.procs before exec) brings that process's own start into DIR. DIR's task-clock is
 * task_clock_ns plus the exit after the last read and the few calls before the counter opens
 * (0.2 to 1.4 ms, more on a busy machine); so the process started as burn holds a task-clock
 * counter on the worker from before it runs its first line (the worker waits for it) to after
 * its exit, and prints it after the worker's own line:
 *
 *   burn-life task_clock_ns=N
 *
 * the worker's whole life in DIR, as DIR's own task-clock should count it.
 *
 * The child, if any, prints "burn-child burned_ns=N" first. */
#define _GNU_SOURCE /* pipe2 */
#include <fcntl.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What the burn loop writes: volatile, so the loop is not optimised away. */
static volatile uint64_t sink;

/* Spins until this thread has used ms milliseconds of CPU; returns what it used. */
__attribute__((noinline)) static uint64_t burn_ms(long ms) {
  const uint64_t start = now_ns(CLOCK_THREAD_CPUTIME_ID);
  const uint64_t goal = (uint64_t)ms * 1000000ull;
  uint64_t used = 0;
  while (used < goal) {
    for (int i = 0; i < 20000; ++i) sink += (uint64_t)i * 2654435761u;
    used = now_ns(CLOCK_THREAD_CPUTIME_ID) - start;
  }
  return used;
}

/* task-clock on process PID (0: this one), inherited by its children: -1 when it cannot be
 * opened. */
static int open_task_clock(pid_t pid) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.inherit = 1;
  return (int)syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Forks a process born in cgroup DIR: returns its PID in the parent, 0 in it, -1 on error. */
static pid_t fork_into_cgroup(const char* dir) {
  const int cgroup_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cgroup_fd < 0) {
    perror(dir);
    return -1;
  }
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = (uint64_t)cgroup_fd;
  fflush(stdout);
  const pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) perror("clone3 into the cgroup");
  close(cgroup_fd);
  return pid;
}

static uint64_t tv_ns(struct timeval tv) {
  return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
}

int main(int argc, char** argv) {
  long ms = -1, child_ms = -1;
  const char* cgroup = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--child") == 0 && i + 1 < argc)
      child_ms = atol(argv[++i]);
    else if (strcmp(argv[i], "--cgroup") == 0 && i + 1 < argc)
      cgroup = argv[++i];
    else if (ms < 0 && argv[i][0] != '-')
      ms = atol(argv[i]);
    else
      ms = -2;
  }
  if (ms < 0) {
    fprintf(stderr, "usage: burn MS [--child MS] [--cgroup DIR]\n");
    return 2;
  }
  if (cgroup) {
    /* The worker waits on GO until this process holds a task-clock counter on it. */
    int go[2];
    if (pipe2(go, O_CLOEXEC) != 0) {
      perror("pipe");
      return 1;
    }
    const pid_t parent = getpid();
    const pid_t worker = fork_into_cgroup(cgroup);
    if (worker < 0) return 1;
    if (worker == 0) {
      /* it ends with the process the test started (and may stop) */
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) return 1;
      char c;
      close(go[1]);
      if (read(go[0], &c, 1) != 1) return 1;
      close(go[0]);
    } else {
      close(go[0]);
      const int life = open_task_clock(worker);
      const int released = write(go[1], "g", 1) == 1;
      close(go[1]);
      int st = 0;
      struct rusage wru;
      memset(&wru, 0, sizeof wru);
      while (wait4(worker, &st, 0, &wru) < 0) {
      }
      uint64_t life_ns = 0;
      /* switches: the worker's context switches, each of which a cgroup's clock pays the
       * switch path of (tests: SWITCH_NS) */
      if (released && life >= 0 && read(life, &life_ns, sizeof life_ns) == (ssize_t)sizeof life_ns)
        printf("burn-life task_clock_ns=%llu switches=%ld\n", (unsigned long long)life_ns,
               wru.ru_nvcsw + wru.ru_nivcsw);
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
  }
  const int task_clock = open_task_clock(0);
  const uint64_t wall0 = now_ns(CLOCK_MONOTONIC);
  pid_t child = -1;
  if (child_ms >= 0) {
    fflush(stdout);
    child = fork();
    if (child < 0) {
      perror("fork");
      return 1;
    }
    if (child == 0) {
      uint64_t used = burn_ms(child_ms);
      printf("burn-child burned_ns=%llu\n", (unsigned long long)used);
      fflush(stdout);
      _exit(0);
    }
  }
  const uint64_t burned = burn_ms(ms);
  if (child > 0) {
    int st;
    while (waitpid(child, &st, 0) < 0) {
    }
  }
  uint64_t tc = 0;
  const int have_tc = task_clock >= 0 && read(task_clock, &tc, sizeof tc) == (ssize_t)sizeof tc;
  const uint64_t process_cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  char tc_field[48] = "";
  if (have_tc) snprintf(tc_field, sizeof tc_field, " task_clock_ns=%llu", (unsigned long long)tc);
  printf("burn burned_ns=%llu process_cpu_ns=%llu children_cpu_ns=%llu%s wall_ns=%llu\n",
         (unsigned long long)burned, (unsigned long long)process_cpu,
         (unsigned long long)(tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime)), tc_field,
         (unsigned long long)(now_ns(CLOCK_MONOTONIC) - wall0));
  return 0;
}

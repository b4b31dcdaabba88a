/* Function-mode workload: functions with a known cost, called a known number of times, so
 * runtime tests can compare pmcprof --func against ground truth measured here with
 * CLOCK_THREAD_CPUTIME_ID. Prints one JSON line with what it did.
 *
 * The probed functions also read a task-clock perf counter the program opens on itself: the clock
 * pmcprof's task-clock is, which keeps running when the hypervisor takes the vCPU away (steal
 * time), while CLOCK_THREAD_CPUTIME_ID does not (CONFIG_PARAVIRT_TIME_ACCOUNTING). The two sums,
 * inside_cpu_ns and inside_task_clock_ns, measure that noise in the very calls a test checks
 * (inside_task_clock_ns is null when perf_event_open is refused).
 *
 *   func_workload burn N USEC          burn_cpu(USEC) N times
 *   func_workload bimodal N FAST SLOW  burn_cpu(FAST us) and burn_cpu(SLOW us) in turn, N calls
 *                                      (two modes: a fast path and a slow one)
 *   func_workload sleep N USEC SLEEP   burn USEC, sleep SLEEP us, inside one call, N times
 *   func_workload migrate N USEC       burn, move to the other CPU, burn: N times
 *   func_workload getppid N            getppid() N times
 *   func_workload tiny N               tiny_function() N times (overhead measurements)
 *   func_workload burst N              tiny_function() N times as fast as possible
 *   func_workload pair N USEC_A USEC_B burn_a(USEC_A) then burn_b(USEC_B), N times: two
 *                                      functions whose work per call each run sets (diff)
 *   func_workload ladder N USEC        N rounds of burn_cpu with four arguments (--by arg0):
 *                                      20*USEC once, USEC 10 times, 5*USEC once, 2*USEC once;
 *                                      by total 20, 1, 5, 2 (x USEC): an order neither the calls
 *                                      nor the arguments give. burn_cpu_calls: 13 N */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A task-clock counter on this thread (-1: none). */
static int task_clock_fd = -1;

static void open_task_clock(void) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof(attr);
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.inherit = 0;
  task_clock_fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static uint64_t task_clock_ns(void) {
  uint64_t v = 0;
  if (task_clock_fd >= 0 && read(task_clock_fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
    close(task_clock_fd);
    task_clock_fd = -1;
  }
  return v;
}

static volatile uint64_t sink;

static void spin_ns(uint64_t ns) {
  uint64_t start = thread_cpu_ns();
  while (thread_cpu_ns() - start < ns) sink++;
}

/* CPU time spent inside the probed functions, measured by the functions themselves: thread CPU
 * time, and the same span on the task-clock counter. */
static uint64_t inside_cpu_ns, inside_task_clock_ns;

struct inside {
  uint64_t task_clock, cpu;
};

static struct inside inside_begin(void) {
  struct inside b;
  b.task_clock = task_clock_ns();
  b.cpu = thread_cpu_ns();
  return b;
}

static void inside_end(struct inside b) {
  inside_cpu_ns += thread_cpu_ns() - b.cpu;
  inside_task_clock_ns += task_clock_ns() - b.task_clock;
}

static long burn_cpu_calls; /* calls of burn_cpu made, as the program counts them */

__attribute__((noinline)) void burn_cpu(uint64_t usec) {
  burn_cpu_calls++;
  struct inside b = inside_begin();
  spin_ns(usec * 1000);
  inside_end(b);
}

__attribute__((noinline)) void burn_and_sleep(uint64_t usec, uint64_t sleep_us) {
  struct inside b = inside_begin();
  spin_ns(usec * 1000);
  usleep((useconds_t)sleep_us);
  inside_end(b);
}

/* The CPUs this process may use at start; burn_and_migrate pins itself to another one. */
static cpu_set_t allowed_at_start;

static int other_cpu(int cpu) {
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (c != cpu && CPU_ISSET(c, &allowed_at_start)) return c;
  return cpu;
}

__attribute__((noinline)) int burn_and_migrate(uint64_t usec) {
  struct inside b = inside_begin();
  int from = sched_getcpu();
  spin_ns(usec * 500);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(other_cpu(from), &set);
  sched_setaffinity(0, sizeof(set), &set);
  int to = sched_getcpu();
  spin_ns(usec * 500);
  inside_end(b);
  return from != to;
}

/* One round of `ladder`: burn_cpu's four keys, each with its own calls and total. */
static void ladder_round(uint64_t usec) {
  burn_cpu(20 * usec);
  for (int k = 0; k < 10; k++) burn_cpu(usec);
  burn_cpu(5 * usec);
  burn_cpu(2 * usec);
}

/* Two functions of the same code, each its own symbol: one can be made slower than in another
 * run while the other stays the same (pmcprof diff). */
__attribute__((noinline)) void burn_a(uint64_t usec) {
  struct inside b = inside_begin();
  spin_ns(usec * 1000);
  inside_end(b);
}

__attribute__((noinline)) void burn_b(uint64_t usec) {
  struct inside b = inside_begin();
  spin_ns(usec * 1000);
  inside_end(b);
}

__attribute__((noinline)) int tiny_function(int x) {
  __asm__ volatile("" ::: "memory");
  return x + 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s burn|bimodal|sleep|migrate|getppid|tiny|burst|pair|ladder N [USEC "
            "[USEC2]]\n",
            argv[0]);
    return 2;
  }
  sched_getaffinity(0, sizeof(allowed_at_start), &allowed_at_start);
  const char* mode = argv[1];
  const int burns = !strcmp(mode, "burn") || !strcmp(mode, "bimodal") || !strcmp(mode, "sleep") ||
                    !strcmp(mode, "migrate") || !strcmp(mode, "pair") || !strcmp(mode, "ladder");
  if (burns) open_task_clock(); /* only there: other modes make no extra system calls */
  long n = atol(argv[2]);
  uint64_t usec = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000;
  /* sleep: SLEEP; bimodal: SLOW; pair: burn_b's USEC */
  uint64_t usec2 = argc > 4 ? strtoull(argv[4], NULL, 10) : 10000;
  long migrated = 0;
  int acc = 0;
  struct timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  for (long i = 0; i < n; i++) {
    if (!strcmp(mode, "burn"))
      burn_cpu(usec);
    else if (!strcmp(mode, "bimodal"))
      burn_cpu(i % 2 ? usec2 : usec); /* FAST, SLOW, FAST, ... */
    else if (!strcmp(mode, "sleep"))
      burn_and_sleep(usec, usec2);
    else if (!strcmp(mode, "migrate"))
      migrated += burn_and_migrate(usec);
    else if (!strcmp(mode, "pair"))
      burn_a(usec), burn_b(usec2);
    else if (!strcmp(mode, "ladder"))
      ladder_round(usec);
    else if (!strcmp(mode, "getppid"))
      acc += (int)syscall(SYS_getppid) > 0;
    else if (!strcmp(mode, "tiny") || !strcmp(mode, "burst"))
      acc = tiny_function(acc);
    else {
      fprintf(stderr, "unknown mode %s\n", mode);
      return 2;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &w1);
  uint64_t wall =
      (uint64_t)(w1.tv_sec - w0.tv_sec) * 1000000000ull + (uint64_t)(w1.tv_nsec - w0.tv_nsec);
  /* start_ns: CLOCK_MONOTONIC right before the first call (bench_func_startup.py) */
  uint64_t start = (uint64_t)w0.tv_sec * 1000000000ull + (uint64_t)w0.tv_nsec;
  char task_clock[32] = "null";
  if (burns && task_clock_fd >= 0)
    snprintf(task_clock, sizeof(task_clock), "%llu", (unsigned long long)inside_task_clock_ns);
  printf(
      "{\"mode\":\"%s\",\"calls\":%ld,\"inside_cpu_ns\":%llu,\"inside_task_clock_ns\":%s,"
      "\"migrated\":%ld,\"wall_ns\":%llu,\"pid\":%d,\"acc\":%d,\"start_ns\":%llu,"
      "\"burn_cpu_calls\":%ld}\n",
      mode, n, (unsigned long long)inside_cpu_ns, task_clock, migrated, (unsigned long long)wall,
      getpid(), acc, (unsigned long long)start, burn_cpu_calls);
  return 0;
}

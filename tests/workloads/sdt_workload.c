/* USDT workload: SDT probes (<sys/sdt.h>, provider pmcprof_test) fired a known number of times
 * around work of a known cost, so runtime tests can check --region and --func usdt:... exactly.
 * Prints one JSON line with what it did.
 *
 *   sdt_workload regions K USEC   work__start(id, name) ... work__done(id) around USEC us of
 *                                 CPU: "alpha" K times, "beta" 2K, "gamma" 3K (ids 1, 2, 3)
 *   sdt_workload nested DEPTH N   N times a recursion DEPTH deep, a region at every level
 *                                 (id = the level); each level burns 100 us of its own and
 *                                 sums its own task-clock per level, inclusive (levels_ns)
 *   sdt_workload unmatched N      N work__done without a start, then N work__start never
 *                                 ended, then one complete region (id 9)
 *   sdt_workload ticks N          tick(i % 4) for i < N: N/4 hits of each key (N % 4 == 0)
 *   sdt_workload guarded N        N times: if the guarded probe's semaphore is set, count it
 *                                 and fire guarded(i); the count says whether pmcprof set it
 *   sdt_workload overlap N        N times: outer__start, work__start(7), outer__done,
 *                                 work__done(7): regions that overlap without nesting
 *   sdt_workload unreadable N     N regions each of work__start(4, a name on a page this
 *                                 process never touched: BPF cannot read it), (5, NULL) and
 *                                 (1, "alpha"); prints the untouched page's address
 *
 * With "wait" before the mode it first reads a line from stdin (tests attach with -p then).
 * `regions` also sums a task-clock counter of its own over the regions (inside_task_clock_ns,
 * null when perf_event_open is refused): the clock pmcprof reads, steal time included, which
 * CLOCK_THREAD_CPUTIME_ID leaves out (see func_workload.c). */
#define _GNU_SOURCE
#define _SDT_HAS_SEMAPHORES 1
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sdt.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Every probe has a semaphore (as dtrace -G makes them): the kernel raises a probe's while a
 * uprobe with it is attached. Only `guarded` tests its own. */
#define SEMAPHORE(name)                                                                \
  __extension__ unsigned short pmcprof_test_##name##_semaphore __attribute__((unused)) \
  __attribute__((section(".probes")))
SEMAPHORE(work__start);
SEMAPHORE(work__done);
SEMAPHORE(outer__start);
SEMAPHORE(outer__done);
SEMAPHORE(tick);
SEMAPHORE(guarded);

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

static void spin_ns(uint64_t ns) {
  uint64_t start = thread_cpu_ns();
  while (thread_cpu_ns() - start < ns) sink++;
}

/* A task-clock counter on this thread (-1: none). */
static int task_clock_fd = -1;

static void open_task_clock(void) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof(attr);
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
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

/* CPU time inside the regions (start to done), measured here: thread CPU time, and the same
 * spans on the task-clock counter. */
static uint64_t inside_cpu_ns, inside_task_clock_ns;

static void region(int id, const char* name, uint64_t usec) {
  DTRACE_PROBE2(pmcprof_test, work__start, id, name);
  uint64_t k0 = task_clock_ns();
  uint64_t t0 = thread_cpu_ns();
  spin_ns(usec * 1000);
  inside_cpu_ns += thread_cpu_ns() - t0;
  inside_task_clock_ns += task_clock_ns() - k0;
  DTRACE_PROBE1(pmcprof_test, work__done, id);
}

static const char* const kNames[] = {"alpha", "beta", "gamma"};

enum { kMaxLevels = 64 };
static uint64_t level_task_clock_ns[kMaxLevels];

__attribute__((noinline)) static void nest(int level, int depth) {
  DTRACE_PROBE2(pmcprof_test, work__start, level, kNames[level % 3]);
  const uint64_t k0 = task_clock_ns();
  spin_ns(100 * 1000);
  if (level + 1 < depth) nest(level + 1, depth);
  if (level < kMaxLevels) level_task_clock_ns[level] += task_clock_ns() - k0;
  DTRACE_PROBE1(pmcprof_test, work__done, level);
}

int main(int argc, char** argv) {
  int a = 1;
  if (a < argc && strcmp(argv[a], "wait") == 0) {
    char line[16];
    if (!fgets(line, sizeof(line), stdin)) return 2;
    a++;
  }
  if (argc - a < 2) {
    fprintf(stderr,
            "usage: sdt_workload [wait] regions K USEC | nested DEPTH N | unmatched N | "
            "ticks N | guarded N | overlap N | unreadable N\n");
    return 2;
  }
  const char* mode = argv[a];
  const long n = atol(argv[a + 1]);
  if (strcmp(mode, "regions") == 0 && argc - a >= 3) {
    const uint64_t usec = strtoull(argv[a + 2], NULL, 10);
    open_task_clock();
    for (long i = 0; i < n; i++) {
      region(1, kNames[0], usec);
      for (int k = 0; k < 2; k++) region(2, kNames[1], usec);
      for (int k = 0; k < 3; k++) region(3, kNames[2], usec);
    }
    char task_clock[32] = "null";
    if (task_clock_fd >= 0)
      snprintf(task_clock, sizeof(task_clock), "%llu", (unsigned long long)inside_task_clock_ns);
    printf(
        "{\"mode\": \"regions\", \"alpha\": %ld, \"beta\": %ld, \"gamma\": %ld, "
        "\"inside_cpu_ns\": %llu, \"inside_task_clock_ns\": %s}\n",
        n, 2 * n, 3 * n, (unsigned long long)inside_cpu_ns, task_clock);
  } else if (strcmp(mode, "nested") == 0 && argc - a >= 3) {
    const long times = atol(argv[a + 2]);
    open_task_clock();
    for (long i = 0; i < times; i++) nest(0, (int)n);
    printf("{\"mode\": \"nested\", \"depth\": %ld, \"times\": %ld, \"levels_ns\": ", n, times);
    if (task_clock_fd < 0) {
      printf("null}\n");
    } else {
      printf("[");
      for (long l = 0; l < n && l < kMaxLevels; l++)
        printf("%s%llu", l ? ", " : "", (unsigned long long)level_task_clock_ns[l]);
      printf("]}\n");
    }
  } else if (strcmp(mode, "unmatched") == 0) {
    for (long i = 0; i < n; i++) DTRACE_PROBE1(pmcprof_test, work__done, 8);
    for (long i = 0; i < n; i++) DTRACE_PROBE2(pmcprof_test, work__start, 8, "never");
    region(9, "complete", 50);
    printf(
        "{\"mode\": \"unmatched\", \"ends_without_start\": %ld, \"starts_never_ended\": %ld, "
        "\"complete\": 1}\n",
        n, n);
  } else if (strcmp(mode, "ticks") == 0) {
    for (long i = 0; i < n; i++) DTRACE_PROBE1(pmcprof_test, tick, i % 4);
    printf("{\"mode\": \"ticks\", \"hits\": %ld}\n", n);
  } else if (strcmp(mode, "guarded") == 0) {
    long enabled = 0;
    for (long i = 0; i < n; i++) {
      if (pmcprof_test_guarded_semaphore) {
        enabled++;
        DTRACE_PROBE1(pmcprof_test, guarded, i);
      }
    }
    printf("{\"mode\": \"guarded\", \"calls\": %ld, \"enabled\": %ld}\n", n, enabled);
  } else if (strcmp(mode, "overlap") == 0) {
    for (long i = 0; i < n; i++) {
      DTRACE_PROBE(pmcprof_test, outer__start);
      DTRACE_PROBE2(pmcprof_test, work__start, 7, "inner");
      spin_ns(50 * 1000);
      DTRACE_PROBE(pmcprof_test, outer__done);
      spin_ns(50 * 1000);
      DTRACE_PROBE1(pmcprof_test, work__done, 7);
    }
    printf("{\"mode\": \"overlap\", \"times\": %ld}\n", n);
  } else if (strcmp(mode, "unreadable") == 0) {
    /* A fresh anonymous page has no page table entry until it is touched, and a probe's BPF
     * program cannot fault one in. */
    const char* untouched =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (untouched == MAP_FAILED) return 1;
    for (long i = 0; i < n; i++) {
      region(4, untouched, 20);
      region(5, NULL, 20);
      region(1, kNames[0], 20);
    }
    printf("{\"mode\": \"unreadable\", \"times\": %ld, \"untouched\": %llu}\n", n,
           (unsigned long long)(uintptr_t)untouched);
  } else {
    fprintf(stderr, "sdt_workload: unknown mode %s\n", mode);
    return 2;
  }
  return 0;
}

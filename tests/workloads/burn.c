/* burn MS [--child MS]: burns MS milliseconds of CPU on one thread (measured with
 * CLOCK_THREAD_CPUTIME_ID), optionally in parallel with a forked child that burns its own
 * CHILD_MS. Prints one line of key=value figures the runtime tests parse:
 *   burn burned_ns=N process_cpu_ns=N children_cpu_ns=N wall_ns=N
 * burned_ns: CPU time of the burn loop itself; process_cpu_ns: CLOCK_PROCESS_CPUTIME_ID at
 * exit (includes start-up); children_cpu_ns: CPU of reaped children (getrusage). The child, if
 * any, prints "burn-child burned_ns=N" first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Spins until this thread has used ms milliseconds of CPU; returns what it used. */
__attribute__((noinline)) static uint64_t burn_ms(long ms) {
  const uint64_t start = now_ns(CLOCK_THREAD_CPUTIME_ID);
  const uint64_t goal = (uint64_t)ms * 1000000ull;
  volatile uint64_t sink = 0;
  uint64_t used = 0;
  while (used < goal) {
    for (int i = 0; i < 20000; ++i) sink += (uint64_t)i * 2654435761u;
    used = now_ns(CLOCK_THREAD_CPUTIME_ID) - start;
  }
  return used;
}

static uint64_t tv_ns(struct timeval tv) {
  return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
}

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--child") == 0)) {
    fprintf(stderr, "usage: burn MS [--child MS]\n");
    return 2;
  }
  const long ms = atol(argv[1]);
  const long child_ms = argc == 4 ? atol(argv[3]) : -1;
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
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  printf("burn burned_ns=%llu process_cpu_ns=%llu children_cpu_ns=%llu wall_ns=%llu\n",
         (unsigned long long)burned, (unsigned long long)now_ns(CLOCK_PROCESS_CPUTIME_ID),
         (unsigned long long)(tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime)),
         (unsigned long long)(now_ns(CLOCK_MONOTONIC) - wall0));
  return 0;
}

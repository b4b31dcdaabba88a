/* Function-mode workload with several probed things in one process, for runtime tests that
 * give two or more --func at once: burn_cpu (known CPU cost), tiny_function and the getppid
 * syscall, interleaved in one loop so every probe is live at the same time. No shell, no
 * libc wrapper that calls getppid on its own: the counts below are the exact ground truth.
 *
 *   func_mix N_BURN USEC N_GETPPID N_TINY
 *
 * Prints one JSON line: burn_calls, getppid_calls, tiny_calls, inside_cpu_ns (CPU time inside
 * burn_cpu, CLOCK_THREAD_CPUTIME_ID), pid. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;
static uint64_t inside_cpu_ns;

__attribute__((noinline)) void burn_cpu(uint64_t usec) {
  uint64_t t0 = thread_cpu_ns();
  while (thread_cpu_ns() - t0 < usec * 1000) sink++;
  inside_cpu_ns += thread_cpu_ns() - t0;
}

__attribute__((noinline)) int tiny_function(int x) {
  __asm__ volatile("" ::: "memory");
  return x + 1;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s N_BURN USEC N_GETPPID N_TINY\n", argv[0]);
    return 2;
  }
  long n_burn = atol(argv[1]), n_getppid = atol(argv[3]), n_tiny = atol(argv[4]);
  uint64_t usec = strtoull(argv[2], NULL, 10);
  long n = n_burn;
  if (n_getppid > n) n = n_getppid;
  if (n_tiny > n) n = n_tiny;
  long burns = 0, getppids = 0, tinies = 0;
  int acc = 0;
  for (long i = 0; i < n; i++) {
    if (i < n_burn) burn_cpu(usec), burns++;
    if (i < n_getppid) acc += (int)syscall(SYS_getppid) > 0, getppids++;
    if (i < n_tiny) acc = tiny_function(acc), tinies++;
  }
  printf(
      "{\"burn_calls\":%ld,\"getppid_calls\":%ld,\"tiny_calls\":%ld,\"inside_cpu_ns\":%llu,"
      "\"pid\":%d,\"acc\":%d}\n",
      burns, getppids, tinies, (unsigned long long)inside_cpu_ns, getpid(), acc);
  return 0;
}

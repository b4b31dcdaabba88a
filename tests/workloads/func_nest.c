/* Function-mode workload for call shapes the per-thread stack must get right:
 *   nest N          outer() calls inner() N times: both probed, nested
 *   nest_many N K   outer_many() N times, each calling inner() K times
 *   recurse N D     recurse(D) N times: D levels of recursion (deeper than the BPF stack of 16)
 *   longjmp N       jump_outer() calls jump_inner(), which longjmps out N times: inner never
 *                   returns, outer does
 *   busy N          tiny() N times (pin it and a competitor to one CPU to force preemption)
 * Prints one JSON line with the calls made per function. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;
static jmp_buf env;

__attribute__((noinline)) void inner(void) {
  for (int i = 0; i < 100; i++) sink += (unsigned long)i;
}

__attribute__((noinline)) void outer(void) {
  sink++;
  inner();
  sink++;
}

__attribute__((noinline)) void outer_many(int k) {
  sink++;
  for (int i = 0; i < k; i++) inner();
  sink++;
}

__attribute__((noinline)) unsigned long recurse(int depth) {
  if (depth <= 1) return sink++;
  unsigned long v = recurse(depth - 1);
  __asm__ volatile("" ::: "memory");
  return v + 1;
}

__attribute__((noinline)) void jump_inner(void) {
  sink++;
  longjmp(env, 1);
}

__attribute__((noinline)) int jump_outer(void) {
  if (setjmp(env) == 0) jump_inner();
  return (int)sink;
}

__attribute__((noinline)) int tiny(int x) {
  __asm__ volatile("" ::: "memory");
  return x + 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s nest|nest_many|recurse|longjmp|busy N [DEPTH|K]\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  long n = atol(argv[2]);
  int depth = argc > 3 ? atoi(argv[3]) : 12;
  int acc = 0;
  for (long i = 0; i < n; i++) {
    if (!strcmp(mode, "nest"))
      outer();
    else if (!strcmp(mode, "nest_many"))
      outer_many(depth);
    else if (!strcmp(mode, "recurse"))
      recurse(depth);
    else if (!strcmp(mode, "longjmp"))
      acc += jump_outer();
    else if (!strcmp(mode, "busy"))
      acc = tiny(acc);
    else {
      fprintf(stderr, "unknown mode %s\n", mode);
      return 2;
    }
  }
  printf("{\"mode\":\"%s\",\"calls\":%ld,\"depth\":%d,\"acc\":%d}\n", mode, n, depth, acc);
  return 0;
}

/* Function-mode workload for the per-thread frame stack across regions, exec and signal stacks
 * (tests/runtime/test_func_frames.py). Every probed function is a real, non-inlined symbol.
 *   region_end_inside N   N times: region_begin(); g(), which calls region_end() half-way.
 *                         --region region_begin,region_end and --func g: the region ends inside
 *                         g's call, which is still live and returns normally.
 *   exec_deep D N         descend() D levels deep (a probed recursion), then, at the bottom,
 *                         execve() of this program as `calls N`: the old image's D frames never
 *                         return; the new image calls leaf() N times.
 *   exec_regions K N      region_begin() K times and never region_end(), then execve() of this
 *                         program as `calls N` (regions started and never ended at exec).
 *   calls N               leaf() N times (what the exec modes run in the new image).
 *   recurse D N           N times climb() D levels deep (a probed recursion that returns).
 *   longjmp D N           N times: jclimb() D levels deep, which longjmps out of the bottom
 *                         level back to main; then leaf() 100 times.
 *   tailcall N            N times tail_f(), which ends by a tail call (a jump) into tail_g():
 *                         both probed, tail_g is entered at tail_f's stack pointer with the
 *                         uretprobe trampoline as its return address, and tail_f is live.
 *   altstack N below|above
 *                         a thread whose stack and sigaltstack are the two ends of one mapping,
 *                         the alt stack below the thread's stack (as a malloc'ed alt stack is
 *                         below the main thread's stack) or above it: N times, f() signals its
 *                         own thread, the SA_ONSTACK handler runs on the alt stack and calls h();
 *                         f returns after the handler. (`above` with uretprobes on both f and h:
 *                         the kernel itself drops f's return instance when h's is armed at a
 *                         stack pointer above f's, and f's return then dies of SIGILL.)
 * Prints one JSON line with what it did (the exec modes: the new image prints it). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void region_begin(void) {
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void region_end(void) {
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void g(void) {
  for (int i = 0; i < 50; i++) sink += (unsigned long)i;
  region_end();
  for (int i = 0; i < 50; i++) sink += (unsigned long)i;
}

__attribute__((noinline)) void leaf(void) {
  for (int i = 0; i < 20; i++) sink += (unsigned long)i;
}

static char self_path[4096];

/* Returns only when execv fails. */
static int exec_calls(long n) {
  char count[32];
  snprintf(count, sizeof count, "%ld", n);
  char* args[] = {self_path, "calls", count, NULL};
  fflush(stdout);
  execv(self_path, args);
  fprintf(stderr, "execv %s: %s\n", self_path, strerror(errno));
  return 3;
}

__attribute__((noinline)) unsigned long descend(int depth, long n) {
  if (depth <= 1) return (unsigned long)exec_calls(n); /* returns only when exec failed */
  unsigned long v = descend(depth - 1, n);
  __asm__ volatile("" ::: "memory");
  return v + 1;
}

__attribute__((noinline)) unsigned long climb(int depth) {
  if (depth <= 1) return 1;
  unsigned long v = climb(depth - 1);
  __asm__ volatile("" ::: "memory");
  return v + 1;
}

static jmp_buf jump_out;
static volatile int jump_armed; /* set while jump_out is valid */

__attribute__((noinline)) unsigned long jclimb(int depth) {
  if (depth <= 1) {
    if (jump_armed) longjmp(jump_out, 1);
    return 1;
  }
  unsigned long v = jclimb(depth - 1);
  __asm__ volatile("" ::: "memory");
  return v + 1;
}

/* ---- tailcall: written in assembly, so that the jump is certain whatever the compiler ---- */

#if defined(__x86_64__)
__asm__(
    ".text\n.globl tail_f\n.type tail_f,@function\ntail_f:\n  add $1, %edi\n  jmp tail_g\n"
    ".size tail_f,.-tail_f\n.globl tail_g\n.type tail_g,@function\ntail_g:\n"
    "  lea 1(%rdi), %eax\n  ret\n.size tail_g,.-tail_g\n");
#elif defined(__aarch64__)
__asm__(
    ".text\n.globl tail_f\n.type tail_f,%function\ntail_f:\n  add w0, w0, #1\n  b tail_g\n"
    ".size tail_f,.-tail_f\n.globl tail_g\n.type tail_g,%function\ntail_g:\n"
    "  add w0, w0, #1\n  ret\n.size tail_g,.-tail_g\n");
#else
#error "tail_f: x86-64 or aarch64 only"
#endif
int tail_f(int x);

/* ---- altstack ---- */

static volatile unsigned long handled;
static uintptr_t f_sp, h_sp; /* one sample of each stack pointer, for the JSON line */

__attribute__((noinline)) void h(void) {
  h_sp = (uintptr_t)__builtin_frame_address(0);
  sink++;
}

static void on_signal(int sig) {
  (void)sig;
  h();
  handled++;
}

__attribute__((noinline)) void f(void) {
  f_sp = (uintptr_t)__builtin_frame_address(0);
  sink++;
  /* Delivered to this thread on the way out of the syscall: the handler runs before f goes on. */
  syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGUSR1);
  sink++;
}

#define THREAD_STACK (1 << 20)
#define ALT_STACK (256 << 10)
#define GUARD (64 << 10)

static long alt_n;
static int alt_ok;

static void* alt_thread(void* arg) {
  char* alt = arg;
  stack_t ss = {.ss_sp = alt, .ss_size = ALT_STACK, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) {
    perror("sigaltstack");
    return NULL;
  }
  for (long i = 0; i < alt_n; i++) f();
  alt_ok = 1;
  return NULL;
}

static int run_altstack(long n, int above) {
  /* One mapping, [thread stack | guard | alt stack] (above) or [alt stack | guard | thread
   * stack] (below): every address of the alt stack is on the chosen side of every address of
   * the thread's stack, whatever the kernel's mmap layout. */
  size_t size = THREAD_STACK + GUARD + ALT_STACK;
  char* base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  char* stack = above ? base : base + ALT_STACK + GUARD;
  char* alt = above ? base + THREAD_STACK + GUARD : base;
  mprotect(above ? base + THREAD_STACK : base + ALT_STACK, GUARD, PROT_NONE);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR1, &sa, NULL) != 0) {
    perror("sigaction");
    return 1;
  }
  alt_n = n;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, stack, THREAD_STACK);
  pthread_t th;
  int err = pthread_create(&th, &attr, alt_thread, alt);
  if (err != 0) {
    fprintf(stderr, "pthread_create: %s\n", strerror(err));
    return 1;
  }
  pthread_join(th, NULL);
  if (!alt_ok) return 1;
  printf(
      "{\"mode\":\"altstack\",\"layout\":\"%s\",\"calls\":%ld,\"handled\":%lu,"
      "\"f_frame\":%lu,\"h_frame\":%lu,\"h_above_f\":%s}\n",
      above ? "above" : "below", n, handled, (unsigned long)f_sp, (unsigned long)h_sp,
      h_sp > f_sp ? "true" : "false");
  return handled == (unsigned long)n ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s region_end_inside N | exec_deep D N | exec_regions K N | calls N | "
            "recurse D N | longjmp D N | tailcall N | altstack N below|above\n",
            argv[0]);
    return 2;
  }
  ssize_t len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  if (len <= 0) {
    perror("readlink /proc/self/exe");
    return 2;
  }
  self_path[len] = '\0';
  const char* mode = argv[1];
  long a = atol(argv[2]);
  long b = argc > 3 ? atol(argv[3]) : 0;
  if (!strcmp(mode, "region_end_inside")) {
    for (long i = 0; i < a; i++) {
      region_begin();
      g();
    }
    printf("{\"mode\":\"%s\",\"calls\":%ld}\n", mode, a);
  } else if (!strcmp(mode, "exec_deep")) {
    descend((int)a, b);
    return 3;
  } else if (!strcmp(mode, "exec_regions")) {
    for (long i = 0; i < a; i++) region_begin();
    return exec_calls(b);
  } else if (!strcmp(mode, "recurse")) {
    unsigned long total = 0;
    for (long i = 0; i < b; i++) total += climb((int)a);
    printf("{\"mode\":\"%s\",\"depth\":%ld,\"rounds\":%ld,\"calls\":%lu}\n", mode, a, b, total);
  } else if (!strcmp(mode, "longjmp")) {
    static volatile long rounds; /* volatile: kept across longjmp */
    jump_armed = 1;
    for (rounds = 0; rounds < b;) {
      if (setjmp(jump_out) == 0) sink += jclimb((int)a);
      rounds = rounds + 1;
    }
    jump_armed = 0;
    for (int i = 0; i < 100; i++) leaf();
    printf("{\"mode\":\"%s\",\"depth\":%ld,\"rounds\":%ld,\"leaf_calls\":100}\n", mode, a,
           (long)rounds);
  } else if (!strcmp(mode, "tailcall")) {
    int x = 0;
    for (long i = 0; i < a; i++) x = tail_f(x);
    printf("{\"mode\":\"%s\",\"calls\":%ld,\"result\":%d}\n", mode, a, x);
    if (x != 2 * a) return 1;
  } else if (!strcmp(mode, "calls")) {
    for (long i = 0; i < a; i++) leaf();
    printf("{\"mode\":\"%s\",\"calls\":%ld}\n", mode, a);
  } else if (!strcmp(mode, "altstack")) {
    if (argc < 4 || (strcmp(argv[3], "above") && strcmp(argv[3], "below"))) {
      fprintf(stderr, "altstack N below|above\n");
      return 2;
    }
    return run_altstack(a, !strcmp(argv[3], "above"));
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  return 0;
}

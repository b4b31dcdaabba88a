/* The workload of scripts/hw-check: code whose user-mode instruction counts are known exactly
 * on x86-64 and aarch64 (written in assembly, so no compiler choice changes them), and a
 * system call for the kernel-function check. Elsewhere it builds with C loops whose counts are
 * not known, and `info` says so.
 *
 *   hw_workload loop N      hw_spin(N) once: N iterations of a two-instruction loop (x86-64:
 *                           dec, jnz; aarch64: subs, b.ne), so the run's instructions:u is
 *                           2N + C, C the constant cost of start-up and exit
 *   hw_workload calls N     hw_fn() N times: every call retires exactly HW_FN_INSNS (202) user
 *                           instructions, ret included
 *   hw_workload getppid N   the getppid system call N times
 *   hw_workload info        "exact=1 fn_insns=202" (exact=0 where the counts are not known)
 * Prints nothing else: output would add instructions. Exit status 0, 2 on bad arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HW_FN_LOOPS 100
#define HW_FN_INSNS 202 /* mov + HW_FN_LOOPS x (decrement, branch) + ret */
#define STR_(x) #x
#define STR(x) STR_(x)
_Static_assert(HW_FN_INSNS == 1 + 2 * HW_FN_LOOPS + 1, "hw_fn's count");

#if defined(__x86_64__)
#define HW_EXACT 1
/* hw_spin(n): mov, n x (dec, jnz), ret. hw_fn: mov, HW_FN_LOOPS x (dec, jnz), ret. */
__asm__(".text\n"
        ".global hw_spin\n.type hw_spin, @function\n.p2align 4\n"
        "hw_spin:\n"
        "  mov %rdi, %rcx\n"
        "1:\n"
        "  dec %rcx\n"
        "  jnz 1b\n"
        "  ret\n"
        ".size hw_spin, .-hw_spin\n"
        ".global hw_fn\n.type hw_fn, @function\n.p2align 4\n"
        "hw_fn:\n"
        "  mov $" STR(HW_FN_LOOPS) ", %ecx\n"
        "1:\n"
        "  dec %ecx\n"
        "  jnz 1b\n"
        "  ret\n"
        ".size hw_fn, .-hw_fn\n");
#elif defined(__aarch64__)
#define HW_EXACT 1
/* The same with subs, b.ne (x9: a caller-saved temporary in the AAPCS64). */
__asm__(".text\n"
        ".global hw_spin\n.type hw_spin, %function\n.p2align 4\n"
        "hw_spin:\n"
        "  mov x9, x0\n"
        "1:\n"
        "  subs x9, x9, #1\n"
        "  b.ne 1b\n"
        "  ret\n"
        ".size hw_spin, .-hw_spin\n"
        ".global hw_fn\n.type hw_fn, %function\n.p2align 4\n"
        "hw_fn:\n"
        "  mov x9, #" STR(HW_FN_LOOPS) "\n"
        "1:\n"
        "  subs x9, x9, #1\n"
        "  b.ne 1b\n"
        "  ret\n"
        ".size hw_fn, .-hw_fn\n");
#else
#define HW_EXACT 0
__attribute__((noinline)) void hw_spin(unsigned long n) {
  for (volatile unsigned long i = 0; i < n; i++) {
  }
}
__attribute__((noinline)) void hw_fn(void) {
  hw_spin(HW_FN_LOOPS);
}
#endif
void hw_spin(unsigned long n);
void hw_fn(void);

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "info") == 0) {
    printf("exact=%d fn_insns=%d\n", HW_EXACT, HW_FN_INSNS);
    return 0;
  }
  if (argc != 3) return 2;
  char* end = NULL;
  const unsigned long n = strtoul(argv[2], &end, 10);
  if (!end || *end || n == 0) return 2;
  if (strcmp(argv[1], "loop") == 0) {
    hw_spin(n);
  } else if (strcmp(argv[1], "calls") == 0) {
    void (*volatile fn)(void) = hw_fn; /* called through a pointer: never inlined away */
    for (unsigned long i = 0; i < n; i++) fn();
  } else if (strcmp(argv[1], "getppid") == 0) {
    for (unsigned long i = 0; i < n; i++) syscall(SYS_getppid);
  } else {
    return 2;
  }
  return 0;
}

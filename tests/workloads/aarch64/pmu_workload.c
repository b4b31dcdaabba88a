/* Workloads whose user-mode instruction counts are known exactly on aarch64, for the arm64 guest
 * test (tests/guest/test_guest_arm64_pmu.py), where qemu -icount shift=0 makes the PMU's
 * instruction counter exact. Built only for aarch64 (tests/workloads/<processor>/).
 *
 *   pmu_workload loop N          spin(N): N iterations of a two-instruction loop, so the run's
 *                                instructions:u is 2N + C, C the constant cost of start-up and
 *                                exit (keep N's digit count fixed: strtoul's cost depends on it)
 *   pmu_workload exact_calls N   calls exact_fn() N times; every call retires exactly
 *                                EXACT_FN_INSNS (202) user instructions, ret included
 *   pmu_workload libc_calls N    calls libc's rand() N times (a probe target inside libc that
 *                                makes no system call)
 *   pmu_workload umask_calls N   umask(022) N times: a system call whose kernel function
 *                                (__arm64_sys_umask) is a leaf, for the probes' cost per call
 *   pmu_workload alt_calls N     calls alt_fn() N times, alternating a short and a long call
 *                                (short first): a short call retires exactly ALT_SHORT_INSNS
 *                                (2,002: ~2 us under -icount shift=0) user instructions, a long
 *                                one ALT_LONG_INSNS (2,000,002: ~2 ms), ret included; N even, the
 *                                calls total N/2 x (ALT_SHORT_INSNS + ALT_LONG_INSNS)
 *   pmu_workload info            prints EXACT_FN_INSNS, ALT_SHORT_INSNS and ALT_LONG_INSNS
 * Prints nothing else: output would add instructions. Exit status 0, 2 on bad arguments. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXACT_FN_LOOPS 100
#define EXACT_FN_INSNS 202 /* mov + EXACT_FN_LOOPS x (subs, b.ne) + ret */
#define STR_(x) #x
#define STR(x) STR_(x)
_Static_assert(EXACT_FN_INSNS == 1 + 2 * EXACT_FN_LOOPS + 1, "exact_fn's count");

/* exact_fn: mov, EXACT_FN_LOOPS x (subs, b.ne), ret. Written in assembly so that no compiler
 * choice changes the count. x9 is a caller-saved temporary in the AAPCS64. */
__asm__(".text\n"
        ".global exact_fn\n"
        ".type exact_fn, %function\n"
        ".p2align 4\n"
        "exact_fn:\n"
        "  mov x9, #" STR(EXACT_FN_LOOPS) "\n"
        "1:\n"
        "  subs x9, x9, #1\n"
        "  b.ne 1b\n"
        "  ret\n"
        ".size exact_fn, .-exact_fn\n");
void exact_fn(void);

#define ALT_SHORT_LOOPS 1000
#define ALT_LONG_LOOPS 1000000
#define ALT_SHORT_INSNS 2002   /* mov + ALT_SHORT_LOOPS x (subs, b.ne) + ret */
#define ALT_LONG_INSNS 2000002 /* mov + ALT_LONG_LOOPS x (subs, b.ne) + ret */
_Static_assert(ALT_SHORT_INSNS == 1 + 2 * ALT_SHORT_LOOPS + 1, "alt_fn's short count");
_Static_assert(ALT_LONG_INSNS == 1 + 2 * ALT_LONG_LOOPS + 1, "alt_fn's long count");

/* alt_fn(loops): mov, loops x (subs, b.ne), ret: 2 loops + 2 instructions for loops >= 1, the
 * count in x0 (its first argument in the AAPCS64). In assembly, as exact_fn; the mov first, so
 * the loop never branches back to the entry instruction the uprobe replaces. */
__asm__(
    ".text\n"
    ".global alt_fn\n"
    ".type alt_fn, %function\n"
    ".p2align 4\n"
    "alt_fn:\n"
    "  mov x9, x0\n"
    "1:\n"
    "  subs x9, x9, #1\n"
    "  b.ne 1b\n"
    "  ret\n"
    ".size alt_fn, .-alt_fn\n");
void alt_fn(unsigned long loops);

/* n iterations of subs + b.ne: 2n instructions for n >= 1. */
__attribute__((noinline)) static void spin(unsigned long n) {
  if (n == 0) return;
  __asm__ volatile("1:\n\tsubs %0, %0, #1\n\tb.ne 1b" : "+r"(n) : : "cc");
}

static volatile int sink;

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "info") == 0) {
    static const char msg[] = "exact_fn " STR(EXACT_FN_INSNS) "\nalt_fn " STR(
        ALT_SHORT_INSNS) " " STR(ALT_LONG_INSNS) "\n";
    return write(1, msg, sizeof msg - 1) == (ssize_t)(sizeof msg - 1) ? 0 : 1;
  }
  if (argc != 3) return 2;
  unsigned long n = strtoul(argv[2], NULL, 10);
  if (strcmp(argv[1], "loop") == 0) {
    spin(n);
  } else if (strcmp(argv[1], "exact_calls") == 0) {
    for (unsigned long i = 0; i < n; i++) exact_fn();
  } else if (strcmp(argv[1], "alt_calls") == 0) {
    for (unsigned long i = 0; i < n; i++) alt_fn(i % 2 ? ALT_LONG_LOOPS : ALT_SHORT_LOOPS);
  } else if (strcmp(argv[1], "libc_calls") == 0) {
    for (unsigned long i = 0; i < n; i++) sink += rand();
  } else if (strcmp(argv[1], "umask_calls") == 0) {
    for (unsigned long i = 0; i < n; i++) sink += (int)umask(022);
  } else {
    return 2;
  }
  return 0;
}

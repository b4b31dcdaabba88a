/* The workload of the instruction-oracle test (tests/guest/test_guest_arm64_oracle.py): functions
 * whose per-call instruction counts a qemu TCG plugin (tests/guest/oracle/insn_oracle.c) counts
 * exactly, to hold pmcprof's per-call instructions:u against. The test builds it itself, static,
 * at a text address no other program in the guest uses:
 *   aarch64-linux-gnu-gcc -O1 -static -Wl,-Ttext-segment=0x5000000 -o oracle_workload this.c
 * (the plugin cannot tell processes apart; the address can). The cross build's workloads glob
 * builds it too, dynamically linked, which nothing uses.
 *
 *   oracle_workload run N R D   N times: leaf_fn(), branch_leaf_fn(), then outer_fn(i % 4) (which
 *                               calls leaf_fn i % 4 times); then R times rec_fn(D) (D + 1 calls,
 *                               nested D + 1 deep). leaf_fn runs N + sum(i % 4) times,
 *                               branch_leaf_fn and outer_fn N times, rec_fn R * (D + 1) times.
 *   oracle_workload info        prints LEAF_INSNS and BRANCH_LEAF_INSNS
 *
 *   leaf_fn   assembly: mov, LEAF_LOOPS x (subs, b.ne), ret: exactly LEAF_INSNS (102) a call
 *   branch_leaf_fn  the same behind a `b` as its first instruction: BRANCH_LEAF_INSNS (103). An
 *             arm64 uprobe single-steps most first instructions out of line but simulates a
 *             branch in the kernel: the probe's own cost differs by one instruction.
 *   outer_fn  C, not a leaf: k calls of leaf_fn plus its own work, which the compiler decides
 *   rec_fn    C, recursive: rec_fn(n) calls rec_fn(n - 1) down to 0; no tail call (it stores and
 *             adds after the call)
 * Before measuring, it touches 64 KB of stack and its global: the plugin counts an instruction
 * that faults (a first touch of a page) twice, the PMU once. Prints nothing in `run`. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEAF_LOOPS 50
#define LEAF_INSNS 102        /* mov + LEAF_LOOPS x (subs, b.ne) + ret */
#define BRANCH_LEAF_INSNS 103 /* b + LEAF_INSNS */
#define STR_(x) #x
#define STR(x) STR_(x)
_Static_assert(LEAF_INSNS == 1 + 2 * LEAF_LOOPS + 1, "leaf_fn's count");

/* x9 is a caller-saved temporary in the AAPCS64. */
__asm__(".text\n"
        ".global leaf_fn\n"
        ".type leaf_fn, %function\n"
        ".p2align 4\n"
        "leaf_fn:\n"
        "  mov x9, #" STR(LEAF_LOOPS) "\n"
        "1:\n"
        "  subs x9, x9, #1\n"
        "  b.ne 1b\n"
        "  ret\n"
        ".size leaf_fn, .-leaf_fn\n"
        ".global branch_leaf_fn\n"
        ".type branch_leaf_fn, %function\n"
        ".p2align 4\n"
        "branch_leaf_fn:\n"
        "  b 2f\n"
        "2:\n"
        "  mov x9, #" STR(LEAF_LOOPS) "\n"
        "1:\n"
        "  subs x9, x9, #1\n"
        "  b.ne 1b\n"
        "  ret\n"
        ".size branch_leaf_fn, .-branch_leaf_fn\n");
void leaf_fn(void);
void branch_leaf_fn(void);

volatile unsigned long sink;

__attribute__((noinline, noipa)) unsigned long outer_fn(unsigned long k) {
  unsigned long s = 0;
  for (unsigned long i = 0; i < k; i++) {
    leaf_fn();
    s += i;
  }
  sink = s;
  return s;
}

__attribute__((noinline, noipa)) unsigned long rec_fn(unsigned long n) {
  if (n == 0) return 1;
  unsigned long r = rec_fn(n - 1);
  sink = r;
  return r + n;
}

__attribute__((noinline, noipa)) static void touch_stack(void) {
  volatile char buf[65536];
  for (size_t i = 0; i < sizeof buf; i += 256) buf[i] = 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "info") == 0) {
    static const char msg[] =
        "leaf_fn " STR(LEAF_INSNS) "\nbranch_leaf_fn " STR(BRANCH_LEAF_INSNS) "\n";
    return write(1, msg, sizeof msg - 1) == (ssize_t)(sizeof msg - 1) ? 0 : 1;
  }
  if (argc != 5 || strcmp(argv[1], "run") != 0) return 2;
  unsigned long n = strtoul(argv[2], NULL, 10), r = strtoul(argv[3], NULL, 10),
                d = strtoul(argv[4], NULL, 10);
  touch_stack();
  sink = 0;
  for (unsigned long i = 0; i < n; i++) {
    leaf_fn();
    branch_leaf_fn();
    outer_fn(i % 4);
  }
  for (unsigned long i = 0; i < r; i++) rec_fn(d);
  return 0;
}

#include <gtest/gtest.h>

#include "pmcprof/platform/libbpf_support.hpp"

using namespace pmcprof;

// What a user sees when the kernel refuses pmcprof's BPF: the verifier's own reason, taken
// from libbpf's log (as Debian 6.1 printed it for an unbounded frame index).
TEST(VerifierVerdict, LineBeforeProcessedAndTheProgram) {
  const std::string log =
      "libbpf: prog 'func_exit': BPF program load failed: Permission denied\n"
      "libbpf: prog 'func_exit': -- BEGIN PROG LOAD LOG --\n"
      "38: (0f) r1 += r6   ; R1_w=map_value(umax=481036337040)\n"
      "39: (61) r1 = *(u32 *)(r1 +296)\n"
      "R1 unbounded memory access, make sure to bounds check any such access\n"
      "processed 896088 insns (limit 1000000) max_states_per_insn 46\n"
      "-- END PROG LOAD LOG --\n";
  EXPECT_EQ(verifier_verdict(log),
            "program func_exit: R1 unbounded memory access, make sure to bounds check any such "
            "access");
}

TEST(VerifierVerdict, NothingFromOtherMessages) {
  EXPECT_EQ(verifier_verdict("libbpf: failed to load object 'pmcprof_bpf'\n"), "");
  EXPECT_EQ(verifier_verdict("-- END PROG LOAD LOG --\n"), "");
}

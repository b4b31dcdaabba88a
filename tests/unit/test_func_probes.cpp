// Function mode's probe layer without a kernel: the denylist of kernel functions pmcprof's own
// probes run through (and that resolve_targets refuses them before anything is loaded), and
// the BPF map memory read from /proc/self/fdinfo, and the probe-bias calibration's arithmetic.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmcprof/probes/func_calibration.hpp"
#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/probes/func_targets.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

namespace {

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

// ---- denied_kernel_function ----

TEST(DeniedKernelFunction, ProbesOwnPathIsDenied) {
  // The counter read (bpf_perf_event_read_value -> perf_event_read_local), the clock
  // (bpf_ktime_get_ns -> ktime_get_mono_fast_ns), the record output, the kprobe machinery.
  for (const char* name :
       {"perf_event_read_local", "bpf_perf_event_read_value", "ktime_get_mono_fast_ns",
        "kprobe_ftrace_handler", "kprobe_int3_handler", "kprobe_busy_begin", "perf_event_output",
        "bpf_task_storage_get", "trace_call_bpf", "migrate_disable", "__rcu_read_lock",
        "__bpf_prog_enter", "rethook_trampoline_handler", "uprobe_dispatcher"}) {
    const std::string why = denied_kernel_function(name);
    EXPECT_FALSE(why.empty()) << name << " is allowed";
    EXPECT_FALSE(contains(why, "\n")) << name << ": " << why;
  }
}

TEST(DeniedKernelFunction, OrdinaryFunctionsAreAllowed) {
  for (const char* name : {"tcp_sendmsg", "vfs_read", "vfs_write", "do_sys_openat2",
                           "__x64_sys_getppid", "tcp_sendmsg_locked.isra.0"}) {
    EXPECT_EQ(denied_kernel_function(name), "") << name << " is denied";
  }
}

TEST(DeniedKernelFunction, CompilerClonesOfDeniedFunctionsAreDenied) {
  // --func accepts GCC clone names as they appear in kallsyms (name.isra.0, name.constprop.0,
  // name.part.0). A clone of a denied function is the same code on the same path.
  for (const char* name : {"perf_event_read_local.constprop.0", "preempt_count_add.part.0",
                           "migrate_enable.isra.0", "ktime_get_mono_fast_ns.cold"})
    EXPECT_FALSE(denied_kernel_function(name).empty()) << name << " is allowed";
  EXPECT_EQ(denied_kernel_function("tcp_sendmsg_locked.isra.0"), "");
}

TEST(DeniedKernelFunction, ResolveTargetsRefusesUpFront) {
  // The denylist is applied before the kernel is asked anything: one line naming the
  // function and why, a hint, usage exit code.
  for (const char* text : {"perf_event_read_local", "kernel:bpf_perf_event_read_value",
                           "ktime_get_mono_fast_ns", "kernel:kprobe_ftrace_handler"}) {
    const FuncTarget t = parse_func_target(text);
    try {
      resolve_targets({t}, {}, {}, BackendRequest::automatic, std::nullopt);
      ADD_FAILURE() << "resolved denied " << text;
    } catch (const UserError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(contains(what, "'" + t.name + "'")) << what;
      EXPECT_TRUE(contains(what, "cannot be probed")) << what;
      EXPECT_TRUE(contains(what, denied_kernel_function(t.name))) << what;
      EXPECT_FALSE(contains(what, "\n")) << what;
      EXPECT_FALSE(e.hint().empty());
      EXPECT_EQ(e.exit_code(), kExitUsage) << what;
    }
  }
}

// ---- fdinfo_memlock ----

namespace {

// /proc/self/fdinfo/FD of BPF maps, captured on this machine (Linux 6.18): a 1024-entry
// array of u64, the same as a per-CPU array (2 CPUs), and a 512-entry hash.
constexpr const char* kArrayFdinfo =
    "pos:\t0\n"
    "flags:\t02000002\n"
    "mnt_id:\t17\n"
    "ino:\t1039\n"
    "map_type:\t2\n"
    "key_size:\t4\n"
    "value_size:\t8\n"
    "max_entries:\t1024\n"
    "map_flags:\t0x0\n"
    "map_extra:\t0x0\n"
    "memlock:\t8504\n"
    "map_id:\t2303\n"
    "frozen:\t0\n";
constexpr const char* kPercpuArrayFdinfo =
    "pos:\t0\n"
    "flags:\t02000002\n"
    "mnt_id:\t17\n"
    "ino:\t1039\n"
    "map_type:\t6\n"
    "key_size:\t4\n"
    "value_size:\t8\n"
    "max_entries:\t1024\n"
    "map_flags:\t0x0\n"
    "map_extra:\t0x0\n"
    "memlock:\t24888\n"
    "map_id:\t2304\n"
    "frozen:\t0\n";
constexpr const char* kHashFdinfo =
    "pos:\t0\n"
    "flags:\t02000002\n"
    "mnt_id:\t17\n"
    "ino:\t1039\n"
    "map_type:\t1\n"
    "key_size:\t4\n"
    "value_size:\t64\n"
    "max_entries:\t512\n"
    "map_flags:\t0x0\n"
    "map_extra:\t0x0\n"
    "memlock:\t70784\n"
    "map_id:\t2305\n"
    "frozen:\t0\n";

}  // namespace

TEST(FdinfoMemlock, RealMapSamples) {
  EXPECT_EQ(fdinfo_memlock(kArrayFdinfo), 8504u);
  EXPECT_EQ(fdinfo_memlock(kPercpuArrayFdinfo), 24888u);
  EXPECT_EQ(fdinfo_memlock(kHashFdinfo), 70784u);
}

TEST(FdinfoMemlock, LargeValuesAndNoTrailingNewline) {
  EXPECT_EQ(fdinfo_memlock("map_type:\t5\nmemlock:\t8589934592"), 8589934592ULL);  // 8 GiB
}

TEST(FdinfoMemlock, NotAMapIsZero) {
  // A regular file's fdinfo has no memlock line.
  EXPECT_EQ(fdinfo_memlock("pos:\t0\nflags:\t0100000\nmnt_id:\t25\nino:\t42\n"), 0u);
  EXPECT_EQ(fdinfo_memlock(""), 0u);
}

// ---- probe-bias calibration: the arithmetic ----

TEST(Calibration, MedianOfMeasuredValues) {
  EXPECT_FALSE(median({}));
  EXPECT_EQ(median({42}), 42u);
  EXPECT_EQ(median({9, 1, 5}), 5u);
  EXPECT_EQ(median({412, 9000, 413, 411, 412}), 412u);  // one outlier (an interrupt) ignored
  // An even count: one of the two middle values (never their mean, never an outlier).
  const auto even = median({4, 1, 3, 2});
  ASSERT_TRUE(even);
  EXPECT_TRUE(*even == 2 || *even == 3) << *even;
}

TEST(Calibration, BiasValuesInSetBiasOrder) {
  // Per event (an event that never ran through a calibration call subtracts nothing), then
  // wall, then on-CPU: the order FuncObject::set_bias and the BPF side's bias[] slots use.
  ProbeBias b;
  b.calibrated = true;
  b.events = {1520, std::nullopt, 412};
  b.wall_ns = 1810;
  b.oncpu_ns = 1500;
  // The wall slot takes the on-CPU bias: both times lose the same (issue 22 (12): per-call
  // CPUs utilized read 1.02 for a single-threaded function when they lost different biases).
  EXPECT_EQ(bias_values(b), (std::vector<std::uint64_t>{1520, 0, 412, 1500, 1500}));
  b.events_noise = {40, std::nullopt, 3};
  b.wall_noise_ns = 90;
  b.oncpu_noise_ns = 60;
  EXPECT_EQ(noise_values(b), (std::vector<std::uint64_t>{40, 0, 3, 90, 60}));
  ProbeBias none;
  EXPECT_EQ(bias_values(none), (std::vector<std::uint64_t>{0, 0}));
}

TEST(Calibration, SpreadIsTheMiddleEightyPercent) {
  EXPECT_FALSE(spread({}));
  EXPECT_EQ(spread({7}), 0u);
  // Exact counts (qemu's PMU under -icount): no spread, no floor.
  EXPECT_EQ(spread({202, 202, 202, 202}), 0u);
  // 10 values 100..109 and one outlier: the outlier is outside the middle 80 %.
  std::vector<std::uint64_t> v = {100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 5000};
  EXPECT_EQ(spread(v), 109u - 101u);
}

namespace {

FuncObject::CalibrationSample calibration_sample(std::uint64_t ns, std::uint64_t instructions,
                                                 bool counted = true) {
  FuncObject::CalibrationSample s;
  s.delta = {instructions};
  s.measured = 1;
  s.wall_ns = ns;
  s.oncpu_ns = ns;
  s.not_counted = !counted;
  return s;
}

}  // namespace

TEST(Calibration, NestedCostIsTheMedianOfPairedDifferences) {
  // 9 pairs: with the target 40,000 ns (4 nested calls of 10,000) above its twin, whatever the
  // twin took (a load burst slows both calls of a pair alike), plus one interrupted call.
  std::vector<SamplePair> pairs;
  for (std::uint64_t alone : {15000, 15100, 30000, 15050, 14900, 31000, 15000, 15200, 15000})
    pairs.emplace_back(calibration_sample(alone + 40000, 1008), calibration_sample(alone, 1000));
  pairs.emplace_back(calibration_sample(15000 + 40000 + 90000, 1008),
                     calibration_sample(15000, 1000));
  // A pair with a call not counted (a switch inside) gives no on-CPU or event difference.
  pairs.emplace_back(calibration_sample(500000, 9999, false), calibration_sample(15000, 1000));
  ProbeBias b;
  set_enclosed_from_pairs(b, pairs, 1);
  ASSERT_TRUE(b.nested_calibrated);
  EXPECT_EQ(b.enclosed_oncpu_ns, 10000u);
  EXPECT_EQ(b.enclosed_wall_ns, 10000u);
  ASSERT_EQ(b.enclosed.size(), 1u);
  EXPECT_EQ(b.enclosed[0], 2u);  // 8 instructions over 4 calls: exact counts stay exact
  // Noise: the differences' spread over sqrt(4). One interrupted pair in ten is outside the
  // middle 80 %: none. Two are not (p90 lands on 130,000, p10 on 40,000).
  EXPECT_EQ(b.enclosed_noise, (std::vector<std::uint64_t>{0, 0, 0}));
  // Tail: what the mean exceeds the median by, per call. The median leaves the interrupted
  // pair out; the mean of the ten on-CPU differences is 49,000: 9,000 over 4 calls. The
  // instruction differences have no tail.
  EXPECT_EQ(b.enclosed_tail, (std::vector<std::uint64_t>{0, 2250, 2250}));
  pairs.emplace_back(calibration_sample(145000, 1008), calibration_sample(15000, 1000));
  ProbeBias two;
  set_enclosed_from_pairs(two, pairs, 1);
  EXPECT_EQ(two.enclosed_oncpu_ns, 10000u);
  EXPECT_EQ(two.enclosed_noise, (std::vector<std::uint64_t>{0, 45000, 45000}));
  EXPECT_EQ(two.enclosed_tail, (std::vector<std::uint64_t>{0, 4091, 4091}));  // 16,364 / 4
}

TEST(Calibration, NestedCostNeverBelowZeroAndNeedsACountedPair) {
  // The target cheaper than its twin (noise): 0, not a negative cost or a wrapped one.
  std::vector<SamplePair> pairs = {{calibration_sample(900, 10), calibration_sample(1000, 12)}};
  ProbeBias b;
  set_enclosed_from_pairs(b, pairs, 1);
  ASSERT_TRUE(b.nested_calibrated);
  EXPECT_EQ(b.enclosed_oncpu_ns, 0u);
  EXPECT_EQ(b.enclosed[0], 0u);
  EXPECT_EQ(b.enclosed_tail, (std::vector<std::uint64_t>{0, 0, 0}));
  // A low outlier puts the mean under the median: no tail, never a negative (wrapped) one.
  std::vector<SamplePair> low;
  for (int i = 0; i < 9; ++i)
    low.emplace_back(calibration_sample(55000, 1008), calibration_sample(15000, 1000));
  low.emplace_back(calibration_sample(15000, 1008), calibration_sample(15000, 1000));
  ProbeBias l;
  set_enclosed_from_pairs(l, low, 1);
  EXPECT_EQ(l.enclosed_oncpu_ns, 10000u);
  EXPECT_EQ(l.enclosed_tail, (std::vector<std::uint64_t>{0, 0, 0}));
  // No pair whose two calls were counted: nothing is calibrated (the report says why not).
  ProbeBias none;
  set_enclosed_from_pairs(none,
                          {{calibration_sample(900, 10, false), calibration_sample(1000, 12)}}, 1);
  EXPECT_FALSE(none.nested_calibrated);
  EXPECT_TRUE(none.enclosed.empty());
}

TEST(Calibration, Arm64FirstInstructionsTheKernelSimulates) {
  // What arm64's uprobe code simulates: no instruction runs in user mode for it, so such a
  // function is calibrated apart (issue 22: a branch first read one instruction short).
  for (std::uint32_t insn : {0x14000001u,   // b .+4
                             0x94000010u,   // bl
                             0x54000040u,   // b.eq
                             0x34000040u,   // cbz w0
                             0xb5000040u,   // cbnz x0
                             0x36000040u,   // tbz w0, #0
                             0xd61f0200u,   // br x16
                             0xd63f0200u,   // blr x16
                             0xd65f03c0u,   // ret
                             0x10000040u,   // adr x0
                             0x90000000u,   // adrp x0
                             0x58000040u,   // ldr x0, literal
                             0x98000040u})  // ldrsw x0, literal
    EXPECT_TRUE(arm64_uprobe_simulates(insn)) << std::hex << insn;
  for (std::uint32_t insn : {0xd503201fu,   // nop
                             0xaa0003e1u,   // mov x1, x0
                             0xa9bf7bfdu,   // stp x29, x30, [sp, #-16]!
                             0x7100005fu,   // cmp w2, #0
                             0x5c000040u,   // ldr d0, literal (SIMD: stepped)
                             0xd69f03e0u})  // eret
    EXPECT_FALSE(arm64_uprobe_simulates(insn)) << std::hex << insn;
}

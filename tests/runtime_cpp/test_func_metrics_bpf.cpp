// Runtime (root): metrics per call computed in BPF. The function-mode object is loaded with all
// eight per-call metric slots in use (the most the verifier has to walk), over three software
// events and the wall time, with kernel and stream aggregation at once; a child process makes
// getppid calls. The kernel's per-call metric sums, counts, extremes and histograms must equal
// what user space computes from the same calls' records, and every counted call must be
// accounted for once per metric (a value, unmeasured, or a zero divisor).
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/events/event_resolver.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/platform/tracefs.hpp"
#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/stream/func_stats.hpp"
#include "pmcprof/stream/record_stream.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

namespace {

constexpr int kCalls = 3000;

void child_calls(int n) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    for (int i = 0; i < n; ++i) syscall(SYS_getppid);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace

TEST(FuncMetricsBpf, EightPerCallMetricsInTheKernelEqualTheStream) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load BPF and open system-wide counters";
  // The syscall tracepoints need tracefs mounted, as pmcprof mounts it (a fresh machine may
  // not have it yet).
  try {
    ensure_tracefs_mounted();
  } catch (const UserError& e) {
    GTEST_SKIP() << "no tracefs for the syscall tracepoints: " << e.what();
  }
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  auto groups = resolver.resolve(parse_event_list("task-clock,page-faults,context-switches"));
  CounterSet counters = CounterSet::open(groups, CounterTarget::system_wide(online_cpus()));
  for (std::size_t e = 0; e < 3; ++e) ASSERT_TRUE(counters.supported(e)) << e;
  counters.enable();

  FuncObjectConfig config;
  config.n_funcs = 1;
  config.agg_mode = kAggKernel | kAggStream;
  config.syscall_programs = true;
  config.compensate = false;
  // As a run does: task-clock is the call's on-CPU time from the probe's own clock.
  config.clock_events = 0x1;
  // task-clock (0), page-faults (1), context-switches (2) and the wall time, in eight ratios:
  // some always have a value (task-clock / wall), some have a zero divisor in nearly every call
  // (anything over page-faults or context-switches).
  config.metrics = {{0, kOperandWall}, {kOperandWall, 0}, {1, 0}, {0, 1}, {2, 0}, {0, 2}, {1, 2},
                    {2, kOperandWall}};
  ASSERT_EQ(config.metrics.size(), kMaxCallMetrics);
  FuncObject object = FuncObject::load(counters, config);
  ASSERT_EQ(object.events().size(), 3u);

  StreamAggregator stream_stats(3, Breakdown::none, 0, config.metrics);
  RecordStream stream(object.records_fd(), 256, RecordShape::call,
                      [&](const CallRecord& r) { stream_stats.add(r); });
  {
    auto hooks = object.attach_scheduler_hooks();
    auto links = object.attach_syscall(probe_cookie(0), "getppid");
    child_calls(kCalls);
  }  // detached: no call is half-recorded from here on
  stream.drain();
  ASSERT_EQ(stream.lost(), 0u);

  FuncStats kernel(3, config.metrics);
  for (const auto& k : object.read_aggregates())
    if (k.func_id == 0) kernel.add_kernel(k);
  ASSERT_EQ(stream_stats.stats().size(), 1u);
  const FuncStats& s = stream_stats.stats().begin()->second;
  // System-wide: other processes' getppid calls count too, in both views alike.
  EXPECT_GE(s.calls(), static_cast<std::uint64_t>(kCalls));
  EXPECT_EQ(kernel.calls(), s.calls());
  const std::uint64_t counted = s.counted_calls();
  for (std::size_t m = 0; m < kMaxCallMetrics; ++m) {
    SCOPED_TRACE("metric " + std::to_string(m));
    EXPECT_EQ(kernel.s.metric_calls[m], s.s.metric_calls[m]);
    EXPECT_EQ(kernel.s.metric_unmeasured[m], s.s.metric_unmeasured[m]);
    EXPECT_EQ(kernel.s.metric_zero[m], s.s.metric_zero[m]);
    EXPECT_EQ(kernel.s.metric_sum[m], s.s.metric_sum[m]);
    EXPECT_EQ(kernel.s.metric_sum_hi[m], s.s.metric_sum_hi[m]);
    EXPECT_EQ(kernel.s.metric_min_inv[m], s.s.metric_min_inv[m]);
    EXPECT_EQ(kernel.s.metric_max[m], s.s.metric_max[m]);
    EXPECT_EQ(kernel.s.metric_num_sum[m], s.s.metric_num_sum[m]);
    EXPECT_EQ(kernel.s.metric_den_sum[m], s.s.metric_den_sum[m]);
    EXPECT_EQ(s.s.metric_calls[m] + s.s.metric_unmeasured[m] + s.s.metric_zero[m], counted);
    EXPECT_EQ(kernel.metric_hist[m].count(), s.metric_hist[m].count());
    for (std::uint32_t b = 0; b < Histogram::kBuckets; ++b)
      ASSERT_EQ(kernel.metric_hist[m].bucket_count(b), s.metric_hist[m].bucket_count(b));
  }
  // The event and time histograms too. The kernel's buckets are a byte per CPU with a shared
  // carry per 256 calls: page-faults reads 0 in nearly every call, so its bucket 0 wraps many
  // times, and only the carries make the two views agree.
  auto same_hist = [](const Histogram& k, const Histogram& st, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(k.count(), st.count());
    for (std::uint32_t b = 0; b < Histogram::kBuckets; ++b)
      ASSERT_EQ(k.bucket_count(b), st.bucket_count(b)) << "bucket " << b;
  };
  same_hist(kernel.wall, s.wall, "wall");
  same_hist(kernel.oncpu, s.oncpu, "on-CPU");
  for (std::size_t e = 1; e < 3; ++e)
    same_hist(kernel.hist[e], s.hist[e], "event " + std::to_string(e));
  EXPECT_GT(s.hist[1].bucket_count(0), 2u * 256) << "page-faults: too few zero calls to wrap";
  // Software counters run all the time: no call loses a value to multiplexing.
  for (std::size_t m = 0; m < kMaxCallMetrics; ++m) EXPECT_EQ(s.s.metric_unmeasured[m], 0u) << m;
  // task-clock (on-CPU time) over wall time: a value in (nearly) every counted call, never
  // above 1 (on-CPU time is the part of the wall time the thread ran), near 1 on average (a
  // getppid call does not sleep).
  EXPECT_GE(s.s.metric_calls[0], counted * 99 / 100);
  EXPECT_LE(s.s.metric_max[0], 1u << kMetricFracBits);
  const double mean = s.metric_sum(0) / static_cast<double>(s.s.metric_calls[0]) /
                      static_cast<double>(1u << kMetricFracBits);
  EXPECT_GT(mean, 0.5);
  // A getppid call takes no page fault: page-faults as a divisor is 0 in nearly every call.
  EXPECT_GE(s.s.metric_zero[3], counted * 99 / 100);
}

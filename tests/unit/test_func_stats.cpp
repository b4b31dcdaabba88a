// Per-function aggregation: FuncStats from stream records and from the kernel's pmcprof_agg,
// the --by breakdowns of the stream aggregator, and the --aggregate choice.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../../bpf/pmcprof.h"
#include "pmcprof/run/function_run.hpp"
#include "pmcprof/stream/func_stats.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

namespace {

CallRecord rec(std::uint32_t func_id, std::uint64_t wall, std::uint64_t oncpu,
               std::vector<std::uint64_t> delta, std::uint32_t flags = 0, std::uint32_t pid = 100,
               const std::string& comm = "app", std::uint32_t cpu = 0) {
  CallRecord r;
  r.func_id = func_id;
  r.pid = pid;
  r.tid = pid;
  r.cpu = cpu;
  r.comm = comm;
  r.wall_ns = wall;
  r.oncpu_ns = oncpu;
  r.flags = flags;
  r.delta = std::move(delta);
  return r;
}

void expect_same_hist(const Histogram& a, const Histogram& b, const std::string& what) {
  EXPECT_EQ(a.count(), b.count()) << what;
  for (double p : {0.0, 0.1, 0.5, 0.9, 0.99, 1.0})
    EXPECT_EQ(a.percentile(p), b.percentile(p)) << what << " p=" << p;
}

void expect_same_stats(const FuncStats& a, const FuncStats& b) {
  EXPECT_EQ(a.calls, b.calls);
  EXPECT_EQ(a.not_counted, b.not_counted);
  EXPECT_EQ(a.slept, b.slept);
  EXPECT_EQ(a.migrated, b.migrated);
  EXPECT_EQ(a.multiplexed, b.multiplexed);
  EXPECT_EQ(a.wall_sum, b.wall_sum);
  EXPECT_EQ(a.oncpu_sum, b.oncpu_sum);
  expect_same_hist(a.wall, b.wall, "wall");
  expect_same_hist(a.oncpu, b.oncpu, "oncpu");
  ASSERT_EQ(a.sum.size(), b.sum.size());
  ASSERT_EQ(a.hist.size(), b.hist.size());
  for (std::size_t i = 0; i < a.sum.size(); ++i) {
    EXPECT_EQ(a.sum[i], b.sum[i]) << "event " << i;
    expect_same_hist(a.hist[i], b.hist[i], "event " + std::to_string(i));
  }
}

// What bpf/pmcprof.bpf.c's aggregate() does with one record (n_events events).
void bpf_aggregate(pmcprof_agg& a, const CallRecord& r, std::size_t n_events) {
  a.calls++;
  if (r.flags & PMCPROF_REC_SLEPT) a.slept++;
  if (r.flags & PMCPROF_REC_MIGRATED) a.migrated++;
  if (r.flags & PMCPROF_REC_MULTIPLEXED) a.multiplexed++;
  a.wall_sum += r.wall_ns;
  a.oncpu_sum += r.oncpu_ns;
  a.wall_hist[pmcprof_hist_bucket(r.wall_ns)]++;
  a.oncpu_hist[pmcprof_hist_bucket(r.oncpu_ns)]++;
  if (r.flags & PMCPROF_REC_NOT_COUNTED) {
    a.not_counted++;
    return;
  }
  for (std::size_t i = 0; i < n_events; ++i) {
    a.sum[i] += r.delta[i];
    a.hist[i][pmcprof_hist_bucket(r.delta[i])]++;
  }
}

std::unique_ptr<pmcprof_agg> zero_agg() {
  auto a = std::make_unique<pmcprof_agg>();
  std::memset(a.get(), 0, sizeof(*a));
  return a;
}

std::vector<CallRecord> mixed_records() {
  std::vector<CallRecord> out;
  std::uint64_t x = 99;
  for (int i = 0; i < 400; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    std::uint32_t flags = 0;
    if (i % 7 == 0) flags |= PMCPROF_REC_SLEPT;
    if (i % 11 == 0) flags |= PMCPROF_REC_MIGRATED;
    if (i % 5 == 0) flags |= PMCPROF_REC_MULTIPLEXED;
    if (i % 13 == 0) flags |= PMCPROF_REC_NOT_COUNTED;
    const std::uint64_t wall = 1000 + (x >> 40) % 100000;
    const std::uint64_t oncpu = wall / 2 + (x >> 50) % 100;
    out.push_back(rec(0, wall, oncpu, {(x >> 20) % 5000000, (x >> 30) % 9000000}, flags));
  }
  return out;
}

}  // namespace

// ---- FuncStats ----

TEST(FuncStats, AddCountsAndSums) {
  FuncStats s(2);
  s.add(rec(0, 1000, 800, {100, 200}, PMCPROF_REC_SLEPT));
  s.add(rec(0, 3000, 2000, {300, 400}, PMCPROF_REC_MIGRATED | PMCPROF_REC_MULTIPLEXED));
  EXPECT_EQ(s.calls, 2u);
  EXPECT_EQ(s.not_counted, 0u);
  EXPECT_EQ(s.counted_calls(), 2u);
  EXPECT_EQ(s.slept, 1u);
  EXPECT_EQ(s.migrated, 1u);
  EXPECT_EQ(s.multiplexed, 1u);
  EXPECT_EQ(s.wall_sum, 4000u);
  EXPECT_EQ(s.oncpu_sum, 2800u);
  EXPECT_EQ(s.sum, (std::vector<std::uint64_t>{400, 600}));
  EXPECT_EQ(s.hist[0].count(), 2u);
  EXPECT_EQ(s.hist[1].count(), 2u);
  EXPECT_EQ(s.wall.count(), 2u);
  EXPECT_EQ(s.oncpu.count(), 2u);
}

TEST(FuncStats, NotCountedCallKeptInCallsExcludedFromSums) {
  FuncStats s(2);
  s.add(rec(0, 1000, 800, {100, 200}));
  s.add(rec(0, 5000, 4000, {999999, 999999}, PMCPROF_REC_NOT_COUNTED | PMCPROF_REC_SLEPT));
  EXPECT_EQ(s.calls, 2u);
  EXPECT_EQ(s.not_counted, 1u);
  EXPECT_EQ(s.counted_calls(), 1u);
  EXPECT_EQ(s.slept, 1u);
  // Times are real for every call; counter deltas only for counted ones.
  EXPECT_EQ(s.wall_sum, 6000u);
  EXPECT_EQ(s.oncpu_sum, 4800u);
  EXPECT_EQ(s.wall.count(), 2u);
  EXPECT_EQ(s.sum, (std::vector<std::uint64_t>{100, 200}));
  EXPECT_EQ(s.hist[0].count(), 1u);
  EXPECT_EQ(s.hist[1].count(), 1u);
}

TEST(FuncStats, ShortDeltaVectorDoesNotOverrun) {
  FuncStats s(3);
  s.add(rec(0, 10, 10, {5}));  // a record with fewer deltas than the stats expect
  EXPECT_EQ(s.sum, (std::vector<std::uint64_t>{5, 0, 0}));
  EXPECT_EQ(s.hist[1].count(), 0u);
}

TEST(FuncStats, MergeEqualsAddingAll) {
  const auto records = mixed_records();
  FuncStats all(2), first(2), second(2);
  for (std::size_t i = 0; i < records.size(); ++i) {
    all.add(records[i]);
    (i < records.size() / 3 ? first : second).add(records[i]);
  }
  first.merge(second);
  expect_same_stats(first, all);
}

TEST(FuncStats, SubtractGivesIntervalDelta) {
  const auto records = mixed_records();
  FuncStats before(2), after(2), interval(2);
  for (std::size_t i = 0; i < records.size(); ++i) {
    after.add(records[i]);
    if (i < 150)
      before.add(records[i]);
    else
      interval.add(records[i]);
  }
  FuncStats delta = after;
  delta.subtract(before);
  expect_same_stats(delta, interval);
}

TEST(FuncStats, SubtractClampsAtZero) {
  // Subtracting a later snapshot from an earlier one (a reset, a reordered read) clamps
  // every counter and every histogram bucket at 0 instead of wrapping.
  FuncStats small(1), big(1);
  small.add(rec(0, 10, 10, {5}));
  big.add(rec(0, 10, 10, {5}));
  big.add(rec(0, 10, 10, {5}));
  big.add(rec(0, 10, 10, {5}, PMCPROF_REC_NOT_COUNTED));
  small.subtract(big);
  EXPECT_EQ(small.calls, 0u);
  EXPECT_EQ(small.not_counted, 0u);
  EXPECT_EQ(small.sum[0], 0u);
  EXPECT_EQ(small.wall_sum, 0u);
  EXPECT_EQ(small.hist[0].count(), 0u);
  EXPECT_EQ(small.wall.count(), 0u);
  EXPECT_EQ(small.counted_calls(), 0u);
}

TEST(FuncStats, AddKernelEqualsAddingRecords) {
  const auto records = mixed_records();
  FuncStats stream(2);
  auto agg = zero_agg();
  for (const auto& r : records) {
    stream.add(r);
    bpf_aggregate(*agg, r, 2);
  }
  FuncStats kernel(2);
  kernel.add_kernel(*agg);
  expect_same_stats(kernel, stream);
  EXPECT_GT(kernel.not_counted, 0u);  // the sample includes not-counted calls
}

TEST(FuncStats, AddKernelSumsPerCpuValues) {
  // The aggregates map is per-CPU: user space adds one value per CPU.
  const auto records = mixed_records();
  FuncStats stream(2);
  auto cpu0 = zero_agg();
  auto cpu1 = zero_agg();
  for (std::size_t i = 0; i < records.size(); ++i) {
    stream.add(records[i]);
    bpf_aggregate(i % 2 ? *cpu1 : *cpu0, records[i], 2);
  }
  FuncStats kernel(2);
  kernel.add_kernel(*cpu0);
  kernel.add_kernel(*cpu1);
  expect_same_stats(kernel, stream);
}

TEST(FuncStats, AddKernelByHand) {
  auto a = zero_agg();
  a->calls = 3;
  a->not_counted = 1;
  a->slept = 2;
  a->wall_sum = 600;
  a->oncpu_sum = 300;
  a->wall_hist[pmcprof_hist_bucket(200)] = 3;
  a->oncpu_hist[pmcprof_hist_bucket(100)] = 3;
  a->sum[0] = 50;
  a->hist[0][pmcprof_hist_bucket(25)] = 2;
  a->sum[1] = 7;  // an event the stats were not asked for: ignored
  FuncStats s(1);
  s.add_kernel(*a);
  EXPECT_EQ(s.calls, 3u);
  EXPECT_EQ(s.not_counted, 1u);
  EXPECT_EQ(s.counted_calls(), 2u);
  EXPECT_EQ(s.slept, 2u);
  EXPECT_EQ(s.wall_sum, 600u);
  EXPECT_EQ(s.oncpu_sum, 300u);
  EXPECT_EQ(s.wall.count(), 3u);
  EXPECT_EQ(s.sum, (std::vector<std::uint64_t>{50}));
  EXPECT_EQ(s.hist[0].count(), 2u);
  EXPECT_NEAR(s.hist[0].percentile(0.5), 25, 25 * 0.125);
}

// ---- StreamAggregator and --by ----

TEST(StreamAggregator, NoBreakdownKeysByFunction) {
  StreamAggregator agg(1, Breakdown::none);
  agg.add(rec(0, 10, 10, {1}, 0, 100));
  agg.add(rec(0, 10, 10, {2}, 0, 200));
  agg.add(rec(1, 10, 10, {3}, 0, 100));
  EXPECT_EQ(agg.records(), 3u);
  ASSERT_EQ(agg.stats().size(), 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, ""}).calls, 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, ""}).sum[0], 3u);
  EXPECT_EQ(agg.stats().at(FuncKey{1, ""}).calls, 1u);
}

TEST(StreamAggregator, ByPid) {
  StreamAggregator agg(1, Breakdown::pid);
  agg.add(rec(0, 10, 10, {1}, 0, 100));
  agg.add(rec(0, 10, 10, {2}, 0, 200));
  agg.add(rec(0, 10, 10, {4}, 0, 100));
  agg.add(rec(2, 10, 10, {8}, 0, 100));
  ASSERT_EQ(agg.stats().size(), 3u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, "100"}).calls, 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, "100"}).sum[0], 5u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, "200"}).sum[0], 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{2, "100"}).sum[0], 8u);
}

TEST(StreamAggregator, ByComm) {
  StreamAggregator agg(1, Breakdown::comm);
  agg.add(rec(0, 10, 10, {1}, 0, 100, "nginx"));
  agg.add(rec(0, 10, 10, {2}, 0, 101, "nginx"));
  agg.add(rec(0, 10, 10, {4}, 0, 102, "curl"));
  ASSERT_EQ(agg.stats().size(), 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, "nginx"}).calls, 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, "nginx"}).sum[0], 3u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, "curl"}).sum[0], 4u);
}

TEST(StreamAggregator, ByCpu) {
  StreamAggregator agg(2, Breakdown::cpu);
  agg.add(rec(0, 10, 10, {1, 10}, 0, 100, "a", 0));
  agg.add(rec(0, 10, 10, {2, 20}, 0, 100, "a", 3));
  agg.add(rec(0, 10, 10, {4, 40}, PMCPROF_REC_NOT_COUNTED, 100, "a", 3));
  ASSERT_EQ(agg.stats().size(), 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, "0"}).sum, (std::vector<std::uint64_t>{1, 10}));
  const FuncStats& cpu3 = agg.stats().at(FuncKey{0, "3"});
  EXPECT_EQ(cpu3.calls, 2u);
  EXPECT_EQ(cpu3.not_counted, 1u);
  EXPECT_EQ(cpu3.sum, (std::vector<std::uint64_t>{2, 20}));
}

TEST(StreamAggregator, ByCgroup) {
  StreamAggregator agg(1, Breakdown::cgroup);
  CallRecord r = rec(0, 10, 10, {1});
  r.cgroup_id = 4711;
  agg.add(r);
  ASSERT_EQ(agg.stats().size(), 1u);
  EXPECT_EQ(agg.stats().begin()->first, (FuncKey{0, "4711"}));
}

TEST(Breakdown, ParseValues) {
  EXPECT_EQ(parse_breakdown("pid"), Breakdown::pid);
  EXPECT_EQ(parse_breakdown("comm"), Breakdown::comm);
  EXPECT_EQ(parse_breakdown("cpu"), Breakdown::cpu);
  EXPECT_EQ(parse_breakdown("cgroup"), Breakdown::cgroup);
  for (Breakdown b : {Breakdown::pid, Breakdown::comm, Breakdown::cpu, Breakdown::cgroup})
    EXPECT_EQ(parse_breakdown(to_string(b)), b);
  EXPECT_STREQ(to_string(Breakdown::none), "none");
}

TEST(Breakdown, ParseErrors) {
  for (const char* text : {"", "tid", "PID", "none", "pid,comm"}) {
    try {
      parse_breakdown(text);
      ADD_FAILURE() << "accepted --by '" << text << "'";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("--by '" + std::string(text) + "'"), std::string::npos)
          << e.what();
      EXPECT_NE(e.hint().find("pid"), std::string::npos) << e.hint();
      EXPECT_NE(e.hint().find("cgroup"), std::string::npos) << e.hint();
      EXPECT_EQ(e.exit_code(), kExitUsage);
    }
  }
}

// ---- --aggregate ----

TEST(AggregateChoice, Parse) {
  EXPECT_EQ(parse_aggregate_choice("auto"), AggregateChoice::automatic);
  EXPECT_EQ(parse_aggregate_choice("stream"), AggregateChoice::stream);
  EXPECT_EQ(parse_aggregate_choice("kernel"), AggregateChoice::kernel);
  EXPECT_EQ(parse_aggregate_choice("both"), AggregateChoice::both);
}

TEST(AggregateChoice, ParseErrors) {
  for (const char* text : {"", "Kernel", "user", "streams"}) {
    try {
      parse_aggregate_choice(text);
      ADD_FAILURE() << "accepted --aggregate '" << text << "'";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("--aggregate"), std::string::npos) << e.what();
      EXPECT_NE(e.hint().find("stream"), std::string::npos) << e.hint();
      EXPECT_EQ(e.exit_code(), kExitUsage);
    }
  }
}

TEST(AggregateChoice, AutoResolvesByBreakdown) {
  EXPECT_EQ(resolve_aggregate(AggregateChoice::automatic, Breakdown::pid), AggregateChoice::stream);
  EXPECT_EQ(resolve_aggregate(AggregateChoice::automatic, Breakdown::comm),
            AggregateChoice::stream);
  EXPECT_EQ(resolve_aggregate(AggregateChoice::automatic, Breakdown::cpu), AggregateChoice::stream);
  EXPECT_EQ(resolve_aggregate(AggregateChoice::automatic, Breakdown::none),
            AggregateChoice::kernel);
  EXPECT_EQ(resolve_aggregate(AggregateChoice::automatic, Breakdown::cgroup),
            AggregateChoice::kernel);
}

TEST(AggregateChoice, ExplicitChoiceIsKept) {
  for (AggregateChoice c :
       {AggregateChoice::stream, AggregateChoice::kernel, AggregateChoice::both})
    for (Breakdown b :
         {Breakdown::none, Breakdown::pid, Breakdown::comm, Breakdown::cpu, Breakdown::cgroup})
      EXPECT_EQ(resolve_aggregate(c, b), c);
}

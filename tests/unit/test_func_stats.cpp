// Per-function aggregation: FuncStats from stream records and from the kernel's per-CPU
// pmcprof_agg and histograms (the same pmcprof_agg_add defines what a call contributes on
// both sides), the --by breakdowns of the stream aggregator, and the --aggregate choice.
// The flag parsers (--by, --aggregate, ...) are tested in test_choices.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "../../bpf/pmcprof.h"
#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/run/function_session.hpp"
#include "pmcprof/stream/func_stats.hpp"

using namespace pmcprof;

namespace {

constexpr std::uint8_t kAll = 0xff;  // every event measured the call

CallRecord rec(std::uint32_t func_id, std::uint64_t wall, std::uint64_t oncpu,
               std::initializer_list<std::uint64_t> delta, std::uint32_t flags = 0,
               std::uint32_t pid = 100, const std::string& comm = "app", std::uint32_t cpu = 0,
               std::uint8_t measured = kAll, std::uint8_t ran = kAll) {
  CallRecord r;
  r.func_id = func_id;
  r.pid = pid;
  r.tid = pid;
  r.cpu = cpu;
  std::memcpy(r.comm.data(), comm.data(), std::min(comm.size(), r.comm.size()));
  r.wall_ns = wall;
  r.oncpu_ns = oncpu;
  r.flags = flags;
  r.n_events = static_cast<std::uint8_t>(delta.size());
  std::size_t i = 0;
  for (auto d : delta) r.delta[i++] = d;
  const std::uint8_t present = static_cast<std::uint8_t>((1u << delta.size()) - 1);
  r.measured = measured & present;
  r.ran = (ran | measured) & present;
  return r;
}

std::vector<std::uint64_t> first(const std::array<std::uint64_t, kMaxBpfEvents>& a, std::size_t n) {
  return {a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n)};
}

void expect_same_hist(const Histogram& a, const Histogram& b, const std::string& what) {
  EXPECT_EQ(a.count(), b.count()) << what;
  for (std::uint32_t k = 0; k < Histogram::kBuckets; ++k)
    ASSERT_EQ(a.bucket_count(k), b.bucket_count(k)) << what << " bucket " << k;
  for (double p : {0.0, 0.1, 0.5, 0.9, 0.99, 1.0})
    EXPECT_EQ(a.percentile(p, 0, 1e300), b.percentile(p, 0, 1e300)) << what << " p=" << p;
}

// Everything but min and max (subtract cannot keep them exact).
void expect_same_sums(const FuncStats& a, const FuncStats& b) {
  EXPECT_EQ(a.s.calls, b.s.calls);
  EXPECT_EQ(a.s.not_counted, b.s.not_counted);
  EXPECT_EQ(a.s.slept, b.s.slept);
  EXPECT_EQ(a.s.migrated, b.s.migrated);
  EXPECT_EQ(a.s.multiplexed, b.s.multiplexed);
  EXPECT_EQ(a.s.read_errors, b.s.read_errors);
  EXPECT_EQ(a.s.wall_sum, b.s.wall_sum);
  EXPECT_EQ(a.s.oncpu_sum, b.s.oncpu_sum);
  EXPECT_EQ(a.s.measured, b.s.measured);
  EXPECT_EQ(a.s.sum, b.s.sum);
  EXPECT_EQ(a.s.partial, b.s.partial);
  EXPECT_EQ(a.s.scaled_sum, b.s.scaled_sum);
  expect_same_hist(a.wall, b.wall, "wall");
  expect_same_hist(a.oncpu, b.oncpu, "oncpu");
  ASSERT_EQ(a.n_events(), b.n_events());
  for (std::size_t i = 0; i < a.n_events(); ++i)
    expect_same_hist(a.hist[i], b.hist[i], "event " + std::to_string(i));
}

void expect_same_stats(const FuncStats& a, const FuncStats& b) {
  expect_same_sums(a, b);
  EXPECT_EQ(min_of(a.s.wall_min_inv), min_of(b.s.wall_min_inv));
  EXPECT_EQ(a.s.wall_max, b.s.wall_max);
  EXPECT_EQ(min_of(a.s.oncpu_min_inv), min_of(b.s.oncpu_min_inv));
  EXPECT_EQ(a.s.oncpu_max, b.s.oncpu_max);
  EXPECT_EQ(a.s.min_inv, b.s.min_inv);
  EXPECT_EQ(a.s.max, b.s.max);
  // The whole struct, byte for byte: nothing else differs either.
  EXPECT_EQ(std::memcmp(&a.s, &b.s, sizeof(FuncScalars)), 0);
}

// 400 calls with every flag, some not counted, event 1 multiplexed (measured 2 calls in 3,
// ran in part in half the rest), event 2 the on-CPU clock (task-clock: delta == on-CPU time).
std::vector<CallRecord> mixed_records() {
  std::vector<CallRecord> out;
  std::uint64_t x = 99;
  for (int i = 0; i < 400; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    std::uint32_t flags = 0;
    if (i % 7 == 0) flags |= PMCPROF_REC_SLEPT;
    if (i % 11 == 0) flags |= PMCPROF_REC_MIGRATED;
    if (i % 13 == 0) flags |= PMCPROF_REC_NOT_COUNTED;
    if (i % 17 == 0) flags |= PMCPROF_REC_READ_ERROR;
    std::uint8_t measured = 0x7, ran = 0x7;
    if (i % 3 == 2) {
      measured = 0x5;
      ran = i % 2 ? 0x7 : 0x5;
      if (ran & 0x2) flags |= PMCPROF_REC_MULTIPLEXED;
    }
    const std::uint64_t wall = 1000 + (x >> 40) % 400000;  // short and long calls
    const std::uint64_t oncpu = wall / 2 + (x >> 50) % 100;
    out.push_back(rec(0, wall, oncpu, {(x >> 20) % 5000000, (x >> 30) % 9000000, oncpu}, flags, 100,
                      "app", 0, measured, ran));
  }
  return out;
}

// ---- the kernel path, simulated: what bpf/func.bpf.c's aggregate() does per call on the
// CPU the call ended on, then what FuncObject::read_aggregates() does (merge over CPUs,
// histograms summed, a clock event's histogram is the on-CPU one). ----

struct SimCpu {
  pmcprof_agg agg;
  // [histogram index][bucket]; one histogram per non-clock event (event_hist).
  std::vector<std::vector<std::uint64_t>> hists;
};

struct SimKernel {
  std::uint32_t n_events;
  std::uint32_t clock_events;  // bit i: event i is the on-CPU clock
  std::vector<std::uint32_t> event_hist;
  std::vector<SimCpu> cpus;

  SimKernel(std::uint32_t n, std::uint32_t clocks, std::size_t n_cpus)
      : n_events(n), clock_events(clocks), cpus(n_cpus) {
    std::uint32_t next = PMCPROF_HIST_EVENT0;
    for (std::uint32_t i = 0; i < n; ++i) event_hist.push_back((clocks >> i) & 1 ? 0 : next++);
    for (auto& c : cpus) {
      std::memset(&c.agg, 0, sizeof(c.agg));
      c.hists.assign(next, std::vector<std::uint64_t>(PMCPROF_HIST_BUCKETS, 0));
    }
  }

  void aggregate(const CallRecord& r, std::size_t cpu) {
    pmcprof_record raw;
    static_assert(sizeof(raw) == sizeof(r));
    std::memcpy(&raw, &r, sizeof(raw));
    SimCpu& c = cpus[cpu];
    pmcprof_agg_add(&c.agg, &raw, n_events);
    c.hists[PMCPROF_HIST_WALL][pmcprof_hist_bucket(raw.wall_ns)]++;
    if (raw.flags & PMCPROF_REC_NOT_COUNTED) return;
    c.hists[PMCPROF_HIST_ONCPU][pmcprof_hist_bucket(raw.oncpu_ns)]++;
    for (std::uint32_t i = 0; i < n_events; ++i) {
      if (clock_events & (1u << i)) continue;
      if (raw.measured & (1u << i)) c.hists[event_hist[i]][pmcprof_hist_bucket(raw.delta[i])]++;
    }
  }

  KernelAggregate read(const std::vector<std::size_t>& which) const {
    auto total = std::make_shared<pmcprof_agg>();
    std::memset(total.get(), 0, sizeof(*total));
    std::vector<std::vector<std::uint64_t>> summed(
        cpus[0].hists.size(), std::vector<std::uint64_t>(PMCPROF_HIST_BUCKETS, 0));
    for (std::size_t c : which) {
      pmcprof_agg_merge(total.get(), &cpus[c].agg);
      for (std::size_t h = 0; h < summed.size(); ++h)
        for (std::size_t b = 0; b < PMCPROF_HIST_BUCKETS; ++b) summed[h][b] += cpus[c].hists[h][b];
    }
    KernelAggregate k;
    k.agg = total;
    k.hists.resize(PMCPROF_HIST_EVENT0 + n_events);
    k.hists[PMCPROF_HIST_WALL] = summed[PMCPROF_HIST_WALL];
    k.hists[PMCPROF_HIST_ONCPU] = summed[PMCPROF_HIST_ONCPU];
    for (std::uint32_t i = 0; i < n_events; ++i)
      k.hists[PMCPROF_HIST_EVENT0 + i] =
          (clock_events >> i) & 1 ? summed[PMCPROF_HIST_ONCPU] : summed[event_hist[i]];
    return k;
  }
};

}  // namespace

// ---- FuncStats ----

TEST(FuncStats, AddCountsAndSums) {
  FuncStats s(2);
  s.add(rec(0, 1000, 800, {100, 200}, PMCPROF_REC_SLEPT));
  s.add(rec(0, 3000, 2000, {300, 400}, PMCPROF_REC_MIGRATED | PMCPROF_REC_READ_ERROR));
  EXPECT_EQ(s.calls(), 2u);
  EXPECT_EQ(s.s.not_counted, 0u);
  EXPECT_EQ(s.counted_calls(), 2u);
  EXPECT_EQ(s.s.slept, 1u);
  EXPECT_EQ(s.s.migrated, 1u);
  EXPECT_EQ(s.s.multiplexed, 0u);
  EXPECT_EQ(s.s.read_errors, 1u);
  EXPECT_EQ(s.s.wall_sum, 4000u);
  EXPECT_EQ(s.s.oncpu_sum, 2800u);
  EXPECT_EQ(first(s.s.sum, 2), (std::vector<std::uint64_t>{400, 600}));
  EXPECT_EQ(first(s.s.measured, 2), (std::vector<std::uint64_t>{2, 2}));
  EXPECT_EQ(first(s.s.partial, 2), (std::vector<std::uint64_t>{0, 0}));
  EXPECT_EQ(s.hist[0].count(), 2u);
  EXPECT_EQ(s.hist[1].count(), 2u);
  EXPECT_EQ(s.wall.count(), 2u);
  EXPECT_EQ(s.oncpu.count(), 2u);
}

TEST(FuncStats, ExactMinAndMax) {
  FuncStats s(2);
  EXPECT_EQ(min_of(s.s.wall_min_inv), 0u);  // none yet
  s.add(rec(0, 5000, 800, {2003, 7}));
  s.add(rec(0, 1000, 900, {1999, 0}));
  s.add(rec(0, 3000, 700, {2010, 9}));
  EXPECT_EQ(min_of(s.s.wall_min_inv), 1000u);
  EXPECT_EQ(s.s.wall_max, 5000u);
  EXPECT_EQ(min_of(s.s.oncpu_min_inv), 700u);
  EXPECT_EQ(s.s.oncpu_max, 900u);
  EXPECT_EQ(min_of(s.s.min_inv[0]), 1999u);
  EXPECT_EQ(s.s.max[0], 2010u);
  EXPECT_EQ(min_of(s.s.min_inv[1]), 0u);  // a true 0 is a minimum, not "none"
  EXPECT_NE(s.s.min_inv[1], 0u);
  EXPECT_EQ(s.s.max[1], 9u);
}

TEST(FuncStats, NotCountedCallKeptInCallsExcludedFromSums) {
  FuncStats s(2);
  s.add(rec(0, 1000, 800, {100, 200}));
  s.add(rec(0, 5000, 4000, {999999, 999999}, PMCPROF_REC_NOT_COUNTED | PMCPROF_REC_SLEPT));
  EXPECT_EQ(s.calls(), 2u);
  EXPECT_EQ(s.s.not_counted, 1u);
  EXPECT_EQ(s.counted_calls(), 1u);
  EXPECT_EQ(s.s.slept, 1u);
  // Wall time is real for every call. Changed with the new model: a disturbed call's on-CPU
  // time cannot be trusted either (its segment was broken), so it is excluded like its events
  // (was: on-CPU time summed over every call, 4800).
  EXPECT_EQ(s.s.wall_sum, 6000u);
  EXPECT_EQ(s.s.wall_max, 5000u);
  EXPECT_EQ(s.wall.count(), 2u);
  EXPECT_EQ(s.s.oncpu_sum, 800u);
  EXPECT_EQ(s.s.oncpu_max, 800u);
  EXPECT_EQ(s.oncpu.count(), 1u);
  EXPECT_EQ(first(s.s.sum, 2), (std::vector<std::uint64_t>{100, 200}));
  EXPECT_EQ(first(s.s.measured, 2), (std::vector<std::uint64_t>{1, 1}));
  EXPECT_EQ(s.s.max[0], 100u);
  EXPECT_EQ(s.hist[0].count(), 1u);
  EXPECT_EQ(s.hist[1].count(), 1u);
}

TEST(FuncStats, ShortRecordDoesNotOverrun) {
  FuncStats s(3);
  s.add(rec(0, 10, 10, {5}));  // a record with fewer events than the stats expect
  EXPECT_EQ(first(s.s.sum, 3), (std::vector<std::uint64_t>{5, 0, 0}));
  EXPECT_EQ(first(s.s.measured, 3), (std::vector<std::uint64_t>{1, 0, 0}));
  EXPECT_EQ(s.hist[1].count(), 0u);
}

TEST(FuncStats, ShortRecordCountsOnlyItsOwnEvents) {
  // A record announcing 1 event whose measured/ran bits claim more (a foreign or corrupt
  // sample): events past its n_events must not count, in the scalars as in the histograms
  // (measured[i] is the number of values in hist[i]).
  CallRecord r = rec(0, 10, 10, {5});
  r.measured = r.ran = 0x7;
  FuncStats s(3);
  s.add(r);
  EXPECT_EQ(first(s.s.measured, 3), (std::vector<std::uint64_t>{1, 0, 0}));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(s.s.measured[i], s.hist[i].count()) << i;
}

TEST(FuncStats, MeasuredCountsMatchHistograms) {
  FuncStats s(3);
  for (const auto& r : mixed_records()) s.add(r);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(s.s.measured[i], s.hist[i].count()) << i;
  EXPECT_EQ(s.counted_calls(), s.oncpu.count());
  EXPECT_EQ(s.calls(), s.wall.count());
}

TEST(FuncStats, MultiplexedEventCountsPerCall) {
  // Event 1 ran through the first call only; ran in part through the second, a long one (its
  // delta is enabled/running-scaled) and the fourth, a short one; never ran in the third.
  // Event 0 measured all four.
  FuncStats s(2);
  s.add(rec(0, 100, 100, {10, 1000}, 0, 100, "a", 0, 0x3, 0x3));
  s.add(rec(0, 200000, 200000, {20, 3000}, PMCPROF_REC_MULTIPLEXED, 100, "a", 0, 0x1, 0x3));
  s.add(rec(0, 100, 100, {30, 0}, 0, 100, "a", 0, 0x1, 0x1));
  s.add(rec(0, 100, 100, {0, 5}, PMCPROF_REC_MULTIPLEXED, 100, "a", 0, 0x1, 0x3));
  EXPECT_EQ(s.calls(), 4u);
  EXPECT_EQ(s.s.multiplexed, 2u);
  EXPECT_EQ(s.s.measured[0], 4u);
  EXPECT_EQ(s.s.sum[0], 60u);
  EXPECT_EQ(s.s.measured[1], 1u);
  EXPECT_EQ(s.s.sum[1], 1000u);
  EXPECT_EQ(s.s.max[1], 1000u);
  EXPECT_EQ(min_of(s.s.min_inv[1]), 1000u);  // partial calls stay out of min and max
  // Both calls in part are in their stratum of calls not measured too.
  EXPECT_EQ(s.s.partial[1], 2u);
  EXPECT_EQ(s.s.scaled_sum[1], 3005u);
  EXPECT_EQ(s.s.unmeasured_oncpu[1], 200000u);
  EXPECT_EQ(s.s.short_unmeasured[1], 2u);
  EXPECT_EQ(s.hist[1].count(), 1u);  // only measured calls in the distribution
}

TEST(FuncStats, MergeEqualsAddingAll) {
  const auto records = mixed_records();
  FuncStats all(3), first_part(3), second(3);
  for (std::size_t i = 0; i < records.size(); ++i) {
    all.add(records[i]);
    (i < records.size() / 3 ? first_part : second).add(records[i]);
  }
  first_part.merge(second);
  expect_same_stats(first_part, all);
  FuncStats empty(3);
  all.merge(empty);  // an empty side keeps min and max
  expect_same_stats(first_part, all);
}

TEST(FuncStats, SubtractGivesIntervalDelta) {
  const auto records = mixed_records();
  FuncStats before(3), after(3), interval(3);
  for (std::size_t i = 0; i < records.size(); ++i) {
    after.add(records[i]);
    if (i < 150)
      before.add(records[i]);
    else
      interval.add(records[i]);
  }
  FuncStats delta = after;
  delta.subtract(before);
  expect_same_sums(delta, interval);
  // Min and max cannot be subtracted: they become the interval's lowest and highest bucket
  // bounds, which hold the exact values and are at most 2% away from them.
  auto bracket = [](std::uint64_t min_inv, std::uint64_t max, std::uint64_t exact_min_inv,
                    std::uint64_t exact_max, const char* what) {
    const double lo = static_cast<double>(min_of(min_inv)), hi = static_cast<double>(max);
    const double emin = static_cast<double>(min_of(exact_min_inv));
    const double emax = static_cast<double>(exact_max);
    EXPECT_LE(lo, emin) << what;
    EXPECT_GE(lo, emin / 1.02) << what;
    EXPECT_GE(hi, emax) << what;
    EXPECT_LE(hi, emax * 1.02) << what;
  };
  bracket(delta.s.wall_min_inv, delta.s.wall_max, interval.s.wall_min_inv, interval.s.wall_max,
          "wall");
  bracket(delta.s.oncpu_min_inv, delta.s.oncpu_max, interval.s.oncpu_min_inv, interval.s.oncpu_max,
          "oncpu");
  for (std::size_t i = 0; i < 3; ++i)
    bracket(delta.s.min_inv[i], delta.s.max[i], interval.s.min_inv[i], interval.s.max[i],
            ("event " + std::to_string(i)).c_str());
}

TEST(FuncStats, SubtractClampsAtZero) {
  // Subtracting a later snapshot from an earlier one (a reset, a reordered read) clamps
  // every counter and every histogram bucket at 0 instead of wrapping.
  FuncStats small(1), big(1);
  small.add(rec(0, 10, 10, {5}));
  big.add(rec(0, 10, 10, {5}));
  big.add(rec(0, 10, 10, {5}, 0, 100, "a", 0, 0, 0x1));
  big.add(rec(0, 10, 10, {5}, PMCPROF_REC_NOT_COUNTED));
  small.subtract(big);
  EXPECT_EQ(small.calls(), 0u);
  EXPECT_EQ(small.s.not_counted, 0u);
  EXPECT_EQ(small.s.sum[0], 0u);
  EXPECT_EQ(small.s.measured[0], 0u);
  EXPECT_EQ(small.s.partial[0], 0u);
  EXPECT_EQ(small.s.scaled_sum[0], 0u);
  EXPECT_EQ(small.s.wall_sum, 0u);
  EXPECT_EQ(small.hist[0].count(), 0u);
  EXPECT_EQ(small.wall.count(), 0u);
  EXPECT_EQ(small.counted_calls(), 0u);
  EXPECT_EQ(small.s.wall_max, 0u);  // an empty interval has no min or max
  EXPECT_EQ(small.s.wall_min_inv, 0u);
}

TEST(FuncStats, IntervalMaxNeverAboveTheRunsMax) {
  // Issue 22 (12): an interval's max was its highest bucket's upper bound, above the run's
  // exact max; bounded by it now (and its min by the run's min).
  FuncStats before(1), after(1);
  before.add(rec(0, 1000, 1000, {150}));
  after = before;
  after.add(rec(0, 2000, 2000, {200}));
  FuncStats delta = after;
  delta.subtract(before);
  EXPECT_LE(delta.s.max[0], after.s.max[0]);
  EXPECT_GE(delta.s.max[0], 200u);
  EXPECT_LE(delta.s.wall_max, 2000u);
  EXPECT_GE(min_of(delta.s.min_inv[0]), min_of(after.s.min_inv[0]));
}

TEST(FuncStats, CompensatedValuesSumSignedAndCountUnderTheFloor) {
  // Issue 22 (7, 11): a call below the median probe cost reads below 0 (two's complement):
  // its sum is taken as it is, its histogram, min and max at 0, and its flags count it.
  FuncStats st(1);
  const std::uint64_t minus_5 = ~std::uint64_t{5} + 1;
  CallRecord low = rec(0, minus_5, minus_5, {minus_5});
  low.under_floor = 1;
  low.flags = PMCPROF_REC_WALL_UNDER_FLOOR | PMCPROF_REC_ONCPU_UNDER_FLOOR;
  st.add(low);
  st.add(rec(0, 105, 105, {105}));
  EXPECT_EQ(st.s.sum[0], 100u);
  EXPECT_EQ(st.s.wall_sum, 100u);
  EXPECT_EQ(st.s.oncpu_sum, 100u);
  EXPECT_EQ(min_of(st.s.min_inv[0]), 0u);
  EXPECT_EQ(st.s.max[0], 105u);
  EXPECT_EQ(st.hist[0].bucket_count(0), 1u);
  EXPECT_EQ(st.s.under_floor[0], 1u);
  EXPECT_EQ(st.s.wall_under_floor, 1u);
  EXPECT_EQ(st.s.oncpu_under_floor, 1u);
}

TEST(FuncStats, UnrunCallsPerStratumOfOnCpuTime) {
  // Issue 22 (1): per event, the calls it measured and those it never ran in (multiplexed
  // out), short (under PMCPROF_SHORT_CALL_NS on CPU: counted) or long (their on-CPU time).
  FuncStats st(2);
  st.add(rec(0, 10, 10, {7, 7}));
  st.add(rec(0, 300000, 200000, {9, 9}));
  st.add(rec(0, 500, 400, {9, 9}, PMCPROF_REC_MULTIPLEXED, 100, "app", 0, 0x1, 0x1));
  st.add(rec(0, 500000, 300000, {9, 9}, PMCPROF_REC_MULTIPLEXED, 100, "app", 0, 0x1, 0x1));
  EXPECT_EQ(st.s.short_measured[0], 2u);
  EXPECT_EQ(st.s.short_sum[0], 16u);
  EXPECT_EQ(st.s.long_measured_oncpu[0], 500000u);
  EXPECT_EQ(st.s.short_measured[1], 1u);
  EXPECT_EQ(st.s.long_measured_oncpu[1], 200000u);
  EXPECT_EQ(st.s.short_unmeasured[1], 1u);
  EXPECT_EQ(st.s.unmeasured_oncpu[1], 300000u);
  EXPECT_EQ(st.s.unmeasured_oncpu[0], 0u);
}

// ---- stream and kernel aggregation: the same calls give the same numbers ----

TEST(FuncStatsKernel, StreamEqualsKernelOverTwoCpus) {
  const auto records = mixed_records();
  FuncStats stream(3);
  SimKernel kernel(3, /*clocks=*/0x4, /*n_cpus=*/2);
  std::uint64_t x = 7;
  for (const auto& r : records) {
    stream.add(r);
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    kernel.aggregate(r, (x >> 33) % 2);
  }
  ASSERT_GT(kernel.cpus[0].agg.calls, 0u);
  ASSERT_GT(kernel.cpus[1].agg.calls, 0u);
  FuncStats from_kernel(3);
  from_kernel.add_kernel(kernel.read({0, 1}));
  expect_same_stats(from_kernel, stream);
  // The sample covers what matters: not-counted calls, partial runs, read errors.
  EXPECT_GT(from_kernel.s.not_counted, 0u);
  EXPECT_GT(from_kernel.s.partial[1], 0u);
  EXPECT_LT(from_kernel.s.measured[1], from_kernel.counted_calls());
  EXPECT_GT(from_kernel.s.read_errors, 0u);
  // Percentiles with the exact min/max: identical too.
  for (std::size_t i = 0; i < 3; ++i) {
    const double lo = static_cast<double>(min_of(stream.s.min_inv[i]));
    const double hi = static_cast<double>(stream.s.max[i]);
    for (double p : {0.5, 0.9, 0.99})
      EXPECT_EQ(from_kernel.hist[i].percentile(p, lo, hi), stream.hist[i].percentile(p, lo, hi))
          << "event " << i << " p=" << p;
  }
}

TEST(FuncStatsKernel, AddKernelPerCpuEqualsMerged) {
  // add_kernel merges: one KernelAggregate per CPU gives the same as one merged over CPUs.
  const auto records = mixed_records();
  SimKernel kernel(3, 0x4, 2);
  for (std::size_t i = 0; i < records.size(); ++i) kernel.aggregate(records[i], i % 2);
  FuncStats merged(3), per_cpu(3);
  merged.add_kernel(kernel.read({0, 1}));
  per_cpu.add_kernel(kernel.read({0}));
  per_cpu.add_kernel(kernel.read({1}));
  expect_same_stats(per_cpu, merged);
}

TEST(FuncStatsKernel, IdleCpuDoesNotDisturbMinimum) {
  // A CPU that saw no call has a zeroed pmcprof_agg: its min (inverted, 0 = none) must not
  // win the merge.
  SimKernel kernel(1, 0, 2);
  kernel.aggregate(rec(0, 5000, 4000, {777}), 0);
  FuncStats s(1);
  s.add_kernel(kernel.read({0, 1}));
  EXPECT_EQ(min_of(s.s.wall_min_inv), 5000u);
  EXPECT_EQ(min_of(s.s.oncpu_min_inv), 4000u);
  EXPECT_EQ(min_of(s.s.min_inv[0]), 777u);
  EXPECT_EQ(s.s.max[0], 777u);
}

TEST(FuncStatsKernel, AddKernelByHand) {
  auto a = std::make_shared<pmcprof_agg>();
  std::memset(a.get(), 0, sizeof(*a));
  a->calls = 3;
  a->not_counted = 1;
  a->slept = 2;
  a->wall_sum = 600;
  a->oncpu_sum = 300;
  a->measured[0] = 2;
  a->sum[0] = 50;
  a->min_inv[0] = ~25ULL;
  a->max[0] = 25;
  a->sum[1] = 7;  // an event the stats were not asked for: no histogram
  KernelAggregate k;
  k.agg = a;
  k.hists.assign(PMCPROF_HIST_EVENT0 + 1, std::vector<std::uint64_t>(PMCPROF_HIST_BUCKETS, 0));
  k.hists[PMCPROF_HIST_WALL][pmcprof_hist_bucket(200)] = 3;
  k.hists[PMCPROF_HIST_ONCPU][pmcprof_hist_bucket(150)] = 2;
  k.hists[PMCPROF_HIST_EVENT0][pmcprof_hist_bucket(25)] = 2;
  FuncStats s(1);
  s.add_kernel(k);
  EXPECT_EQ(s.calls(), 3u);
  EXPECT_EQ(s.s.not_counted, 1u);
  EXPECT_EQ(s.counted_calls(), 2u);
  EXPECT_EQ(s.s.slept, 2u);
  EXPECT_EQ(s.s.wall_sum, 600u);
  EXPECT_EQ(s.s.oncpu_sum, 300u);
  EXPECT_EQ(s.wall.count(), 3u);
  EXPECT_EQ(s.oncpu.count(), 2u);
  EXPECT_EQ(s.s.sum[0], 50u);
  EXPECT_EQ(s.hist[0].count(), 2u);
  // Was within 12.5% (interpolated); now exact below 128, and clamped to the exact min/max.
  EXPECT_EQ(s.hist[0].percentile(0.5, 25, 25), 25.0);
  EXPECT_EQ(s.hist[0].percentile(0.5, 0, 1e300), 25.0);
}

TEST(FuncStatsKernel, MissingHistogramsAreEmpty) {
  // A KernelAggregate without histograms (none kept) adds the scalars only.
  auto a = std::make_shared<pmcprof_agg>();
  std::memset(a.get(), 0, sizeof(*a));
  a->calls = 4;
  KernelAggregate k;
  k.agg = a;
  FuncStats s(2);
  s.add_kernel(k);
  EXPECT_EQ(s.calls(), 4u);
  EXPECT_EQ(s.wall.count(), 0u);
  EXPECT_EQ(s.hist[1].count(), 0u);
}

// ---- StreamAggregator and --by ----

TEST(StreamAggregator, NoBreakdownKeysByFunction) {
  StreamAggregator agg(1, Breakdown::none);
  agg.add(rec(0, 10, 10, {1}, 0, 100));
  agg.add(rec(0, 10, 10, {2}, 0, 200));
  agg.add(rec(1, 10, 10, {3}, 0, 100));
  EXPECT_EQ(agg.records(), 3u);
  ASSERT_EQ(agg.stats().size(), 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, 0, ""}).calls(), 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, 0, ""}).s.sum[0], 3u);
  EXPECT_EQ(agg.stats().at(FuncKey{1, 0, ""}).calls(), 1u);
}

TEST(StreamAggregator, ByPid) {
  StreamAggregator agg(1, Breakdown::pid);
  agg.add(rec(0, 10, 10, {1}, 0, 100));
  agg.add(rec(0, 10, 10, {2}, 0, 200));
  agg.add(rec(0, 10, 10, {4}, 0, 100));
  agg.add(rec(2, 10, 10, {8}, 0, 100));
  ASSERT_EQ(agg.stats().size(), 3u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, 100, ""}).calls(), 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, 100, ""}).s.sum[0], 5u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, 200, ""}).s.sum[0], 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{2, 100, ""}).s.sum[0], 8u);
}

TEST(StreamAggregator, ByComm) {
  StreamAggregator agg(1, Breakdown::comm);
  agg.add(rec(0, 10, 10, {1}, 0, 100, "nginx"));
  agg.add(rec(0, 10, 10, {2}, 0, 101, "nginx"));
  agg.add(rec(0, 10, 10, {4}, 0, 102, "curl"));
  agg.add(rec(0, 10, 10, {8}, 0, 103, "a-sixteen-chars!"));  // no NUL in comm[16]
  ASSERT_EQ(agg.stats().size(), 3u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, 0, "nginx"}).calls(), 2u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, 0, "nginx"}).s.sum[0], 3u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, 0, "curl"}).s.sum[0], 4u);
  EXPECT_EQ(agg.stats().at(FuncKey{0, 0, "a-sixteen-chars!"}).s.sum[0], 8u);
}

TEST(StreamAggregator, ByCpu) {
  StreamAggregator agg(2, Breakdown::cpu);
  agg.add(rec(0, 10, 10, {1, 10}, 0, 100, "a", 0));
  agg.add(rec(0, 10, 10, {2, 20}, 0, 100, "a", 3));
  agg.add(rec(0, 10, 10, {4, 40}, PMCPROF_REC_NOT_COUNTED, 100, "a", 3));
  ASSERT_EQ(agg.stats().size(), 2u);
  EXPECT_EQ(first(agg.stats().at(FuncKey{0, 0, ""}).s.sum, 2), (std::vector<std::uint64_t>{1, 10}));
  const FuncStats& cpu3 = agg.stats().at(FuncKey{0, 3, ""});
  EXPECT_EQ(cpu3.calls(), 2u);
  EXPECT_EQ(cpu3.s.not_counted, 1u);
  EXPECT_EQ(first(cpu3.s.sum, 2), (std::vector<std::uint64_t>{2, 20}));
}

TEST(StreamAggregator, ByCgroup) {
  StreamAggregator agg(1, Breakdown::cgroup);
  CallRecord r = rec(0, 10, 10, {1});
  r.cgroup_id = 4711;
  agg.add(r);
  r.cgroup_id = 0xffffffffffULL;  // 64-bit ids are kept whole
  agg.add(r);
  ASSERT_EQ(agg.stats().size(), 2u);
  EXPECT_EQ(agg.stats().begin()->first, (FuncKey{0, 4711, ""}));
  EXPECT_EQ(agg.stats().count(FuncKey{0, 0xffffffffffULL, ""}), 1u);
}

TEST(StreamAggregator, ClearKeepsRecordCount) {
  StreamAggregator agg(1, Breakdown::none);
  agg.add(rec(0, 10, 10, {1}));
  agg.clear();
  EXPECT_TRUE(agg.stats().empty());
  EXPECT_EQ(agg.records(), 1u);
}

TEST(Breakdown, Names) {
  EXPECT_STREQ(to_string(Breakdown::none), "none");
  EXPECT_STREQ(to_string(Breakdown::pid), "pid");
  EXPECT_STREQ(to_string(Breakdown::comm), "comm");
  EXPECT_STREQ(to_string(Breakdown::cpu), "cpu");
  EXPECT_STREQ(to_string(Breakdown::cgroup), "cgroup");
}

// ---- --aggregate ----

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

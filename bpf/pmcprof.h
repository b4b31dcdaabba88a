/* Shared between the BPF programs (bpf/NAME.bpf.c) and the user-space loader.
 * Plain C, fixed-width types only: this header is compiled by clang -target bpf and by g++,
 * so the math below (normalization, histogram buckets) is the same on both sides and
 * unit-tested in user space. */
#pragma once

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Events per run that the BPF side reads. Bounded so loops unroll and records stay small. */
#define PMCPROF_MAX_EVENTS 8
/* Nested in-flight calls kept per thread (recursion, or f calling g, both probed). */
#define PMCPROF_MAX_DEPTH 8
/* Log-linear histogram: exact below 4, then 4 buckets per power of two; values from
 * 1.75 * 2^40 up share the last bucket. */
#define PMCPROF_HIST_SUB_BITS 2
#define PMCPROF_HIST_BUCKETS 160
/* Per-cgroup BPF backend: cgroup levels walked from the root. User space refuses deeper. */
#define PMCPROF_MAX_CGROUP_DEPTH 32
/* Functions per run (func_id < this). */
#define PMCPROF_MAX_FUNCS 64

/* Layout of the counter PERF_EVENT_ARRAY ("counters"):
 * slot = event_index * n_cpus + cpu. bpf_perf_event_read_value() only reads counters that
 * belong to the current CPU, so each event has one slot per possible CPU. */

/* Flags carried by a per-call record. */
#define PMCPROF_REC_SLEPT 0x1u       /* the call was switched out at least once */
#define PMCPROF_REC_MIGRATED 0x2u    /* it resumed on another CPU */
#define PMCPROF_REC_MULTIPLEXED 0x4u /* at least one event ran less than enabled */
#define PMCPROF_REC_NOT_COUNTED 0x8u /* some event had running == 0 (or a failed read) */

/* Aggregation modes (rodata agg_mode bits). */
#define PMCPROF_AGG_STREAM 0x1u
#define PMCPROF_AGG_KERNEL 0x2u

/* One completed call, sent through the BPF-output PERF_EVENT_ARRAY ("records").
 * Only the first n_events entries of delta[] are sent. */
struct pmcprof_record {
  __u32 func_id;
  __u32 pid;
  __u32 tid;
  __u32 cpu;
  __u64 cgroup_id;
  __u64 wall_ns;
  __u64 oncpu_ns;
  __u32 flags;
  __u32 n_events;
  char comm[16];
  __u64 delta[PMCPROF_MAX_EVENTS]; /* normalized: dcounter * denabled / drunning */
};
#define PMCPROF_RECORD_HEADER_SIZE 64 /* offsetof(struct pmcprof_record, delta) */

/* Kernel aggregation: one value per (function, cgroup) and CPU (PERCPU_HASH). */
struct pmcprof_agg_key {
  __u32 func_id;
  __u32 pad;
  __u64 cgroup_id; /* 0 unless the run breaks results down by cgroup */
};

struct pmcprof_agg {
  __u64 calls;
  __u64 not_counted;
  __u64 slept;
  __u64 migrated;
  __u64 multiplexed;
  __u64 wall_sum;
  __u64 oncpu_sum;
  __u64 sum[PMCPROF_MAX_EVENTS];
  __u32 wall_hist[PMCPROF_HIST_BUCKETS];
  __u32 oncpu_hist[PMCPROF_HIST_BUCKETS];
  __u32 hist[PMCPROF_MAX_EVENTS][PMCPROF_HIST_BUCKETS];
};

/* Per-function stream bookkeeping (per-CPU array indexed by func_id): records the kernel
 * tried to send and records bpf_perf_event_output refused (ring full = lost). */
struct pmcprof_func_stats {
  __u64 emitted;
  __u64 lost;
  __u64 depth_overflow; /* calls nested deeper than PMCPROF_MAX_DEPTH: not measured */
  __u64 unmatched_exit; /* exits without a matching entry (attached mid-call) */
};

/* Result of the counter self-test program (snapshot): one read of every event on one CPU. */
struct pmcprof_snapshot {
  __s64 err[PMCPROF_MAX_EVENTS];
  __u64 counter[PMCPROF_MAX_EVENTS];
  __u64 enabled[PMCPROF_MAX_EVENTS];
  __u64 running[PMCPROF_MAX_EVENTS];
  __u32 cpu;
  __u32 n_events;
};

/* floor(log2(v)), 0 for v == 0. */
static __always_inline __u32 pmcprof_log2(__u64 v) {
  __u32 r = 0;
  if (v >> 32) {
    v >>= 32;
    r += 32;
  }
  if (v >> 16) {
    v >>= 16;
    r += 16;
  }
  if (v >> 8) {
    v >>= 8;
    r += 8;
  }
  if (v >> 4) {
    v >>= 4;
    r += 4;
  }
  if (v >> 2) {
    v >>= 2;
    r += 2;
  }
  if (v >> 1) {
    r += 1;
  }
  return r;
}

/* a * b / d for b <= d (so the result is <= a) without 64-bit overflow: exact while a * b
 * fits in 64 bits; otherwise low bits of b and d (then of a) are dropped, a relative error
 * below 2^-30. d > b >> s stays >= 1, so no division by zero. */
static __always_inline __u64 pmcprof_mul_div(__u64 a, __u64 b, __u64 d) {
  if (a == 0 || b == 0) return 0;
  __u32 la = pmcprof_log2(a), lb = pmcprof_log2(b);
  if (la + lb < 62) return a * b / d;
  __u32 drop = la + lb - 61;
  __u32 from_b = drop < lb ? drop : lb;
  b >>= from_b;
  d >>= from_b;
  drop -= from_b;
  if (drop == 0) return a * b / d;
  return ((a >> drop) * b / d) << drop;
}

/* c * e / r (r > 0) as c * (e / r) + c * (e % r) / r: the first term is exact, the second is
 * below c. Callers handle r == 0 (not counted) and r >= e (exact) before calling. */
static __always_inline __u64 pmcprof_scale(__u64 c, __u64 e, __u64 r) {
  return c * (e / r) + pmcprof_mul_div(c, e % r, r);
}

/* The counter delta of one on-CPU segment, normalized for multiplexing. */
static __always_inline __u64 pmcprof_normalize(__u64 dc, __u64 de, __u64 dr) {
  if (dr == 0 || dr >= de) return dc;
  return pmcprof_scale(dc, de, dr);
}

/* Bucket of v: exact for v < 4, then 4 buckets per power of two (relative width 25%). */
static __always_inline __u32 pmcprof_hist_bucket(__u64 v) {
  if (v < (1u << PMCPROF_HIST_SUB_BITS)) return (__u32)v;
  __u32 exp = pmcprof_log2(v);
  __u32 sub = (__u32)(v >> (exp - PMCPROF_HIST_SUB_BITS)) & ((1u << PMCPROF_HIST_SUB_BITS) - 1);
  __u32 idx = ((exp - PMCPROF_HIST_SUB_BITS + 1) << PMCPROF_HIST_SUB_BITS) + sub;
  return idx < PMCPROF_HIST_BUCKETS ? idx : PMCPROF_HIST_BUCKETS - 1;
}

/* Shared between the BPF programs (bpf/NAME.bpf.c) and the user-space loaders and decoders.
 * Plain C, fixed-width types only: this header is compiled by clang -target bpf and by g++,
 * so the math below (normalization, histogram buckets, per-call aggregation) is the same on
 * both sides and unit-tested in user space. */
#pragma once

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Events per run that the BPF side reads. Bounded so loops unroll and records stay small. */
#define PMCPROF_MAX_EVENTS 8
/* Nested in-flight calls measured per thread (recursion, or f calling g, both probed): the
 * first PMCPROF_INLINE_FRAMES in the thread's state, deeper ones in a hash created as a
 * thread first goes that deep (memory grows with the depth used, not with this limit). */
#define PMCPROF_MAX_DEPTH 256
#define PMCPROF_INLINE_FRAMES 16
/* Per-cgroup BPF backend: cgroup levels walked from the root. User space refuses deeper. */
#define PMCPROF_MAX_CGROUP_DEPTH 32
/* Functions per run (func_id < this); one more id is pmcprof's own calibration target. */
#define PMCPROF_MAX_FUNCS 64
/* Function mode -G filter: at most this many cgroups. */
#define PMCPROF_MAX_FILTER_CGROUPS 8

/* ---- what a probe's BPF cookie carries ----
 * bits 0-31: the function id (a --func, a --region or a probe; PMCPROF_MAX_FUNCS is the
 * calibration's); bits 32-47: the key spec slot + 1 of the attach point (0: no --by argN key
 * is read there); bit 48: the point starts a region (no stack pointer: a region is not a call
 * whose frame the stack pointer could show gone). */
#define PMCPROF_COOKIE_SPEC_SHIFT 32
#define PMCPROF_COOKIE_SPEC_MASK 0xffffull
#define PMCPROF_COOKIE_REGION (1ull << 48)
/* bits 49-52: on a region's start or end and on a single probe, the cost class of that point's
 * own probe (1..PMCPROF_COST_CLASSES, its way's calibration; 0: none): each hit costs the calls
 * in flight on the thread half a probe pair of that class, or a whole pair with bit 53 (a
 * return probe, which also traps at its function's entry). A function's own pair is counted
 * at its entry from its id's class instead (cost_class). */
#define PMCPROF_COOKIE_HIT_SHIFT 49
#define PMCPROF_COOKIE_HIT_MASK 0xfull
#define PMCPROF_COOKIE_HIT_PAIR (1ull << 53)
/* bit 63: a syscall_ids entry in use (a function id 0 without other bits is a cookie of 0). */
#define PMCPROF_COOKIE_SET (1ull << 63)
/* syscall_ids' size: syscall numbers below it are probed through the raw tracepoints. */
#define PMCPROF_MAX_SYSCALL_NR 1024
#define PMCPROF_MAX_KEY_SLOTS 4096

/* ---- --by argN: keys read from a start probe's arguments ----
 * Up to PMCPROF_MAX_KEY_ARGS arguments; the key is PMCPROF_KEY_SIZE bytes: one argument uses
 * all of it, two use half each. An integer is 8 bytes (little endian, sign-extended when the
 * argument is signed); a string is NUL-terminated (cut to the room it has), the rest zero. */
#define PMCPROF_MAX_KEY_ARGS 2
#define PMCPROF_KEY_SIZE 128
/* An argument whose memory could not be read (a page the process never touched, which BPF
 * cannot fault in; a bad pointer) is not a value: its slot's first 8 bytes stay zero, the
 * address that failed is at byte PMCPROF_KEY_ADDR_OFF and PMCPROF_KEY_UNREADABLE (1) at byte
 * PMCPROF_KEY_UNREADABLE_OFF. An argument read whole leaves that byte 0 whenever its first 8
 * bytes are zero (an integer takes 8 bytes; an empty string is all zeros). */
#define PMCPROF_KEY_ADDR_OFF 8
#define PMCPROF_KEY_UNREADABLE_OFF 16
#define PMCPROF_KEY_UNREADABLE 1

/* Where an argument's value is (struct pmcprof_arg_spec.kind). */
#define PMCPROF_ARG_CONST 0 /* val itself */
#define PMCPROF_ARG_REG 1   /* the 8 bytes at ctx + reg_off (a pt_regs register, a field) */
#define PMCPROF_ARG_DEREF                                        \
  2 /* the `size` bytes at (the 8 bytes at ctx + reg_off) + val, \
     plus (those at ctx + idx_off) * scale when scale is not 0 */

struct pmcprof_arg_spec {
  __u64 val;      /* the constant, or the displacement added to the register */
  __s16 reg_off;  /* offset in the program's context: pt_regs, a tracepoint's record */
  __s16 idx_off;  /* DEREF with an index register (x86 "8@(%rdx,%rax,8)"): its offset */
  __u8 scale;     /* ... and its scale; 0: no index */
  __u8 kind;      /* PMCPROF_ARG_* */
  __u8 size;      /* 1, 2, 4 or 8 bytes */
  __u8 is_signed; /* sign-extended to 64 bits */
  __u8 is_string; /* the value is the address of a NUL-terminated string: the key is it */
  __u8 user;      /* memory of the probed process (uprobes, USDT, syscall arguments) */
  __u8 pad[2];
};

/* One attach point's arguments, in --by order. */
struct pmcprof_key_spec {
  struct pmcprof_arg_spec arg[PMCPROF_MAX_KEY_ARGS];
};

struct pmcprof_key {
  union {
    __u8 b[PMCPROF_KEY_SIZE];
    __u64 q[PMCPROF_KEY_SIZE / 8];
  };
};

/* ---- histograms ----
 * Log-linear with a table: values below 128 have a bucket each (exact); above, every power of
 * two [2^e, 2^(e+1)) is cut into 128 equal steps, and consecutive steps are merged into
 * buckets whose upper bound is at most 2% above their lower bound (PMCPROF_HIST_PER_OCTAVE
 * buckets per octave). A bucket's representative value (the harmonic mean of its bounds,
 * see histogram.cpp) is then within 1% of any value in it. Values from 0.99 x 2^42 (4.3e12:
 * 72 minutes in ns) share the last bucket; min and max are kept exactly beside the histogram. */
#define PMCPROF_HIST_EXACT_BITS 7
#define PMCPROF_HIST_EXACT (1u << PMCPROF_HIST_EXACT_BITS)
#define PMCPROF_HIST_PER_OCTAVE 42
#define PMCPROF_HIST_MAX_LOG2 42 /* 42, not 44: 8 functions x 8 events in 128 KiB a CPU */
#define PMCPROF_HIST_BUCKETS \
  (PMCPROF_HIST_EXACT + PMCPROF_HIST_PER_OCTAVE * (PMCPROF_HIST_MAX_LOG2 - PMCPROF_HIST_EXACT_BITS))

/* Step (0..127) of an octave -> bucket within the octave. Generated: step s covers
 * [1 + s/128, 1 + (s+1)/128); a bucket grows while (its end / its start) <= 1.02. */
static const __u8 pmcprof_hist_step_bucket[PMCPROF_HIST_EXACT] = {
    0,  0,  1,  1,  2,  2,  3,  3,  4,  4,  5,  5,  6,  6,  7,  7,  8,  8,  9,  9,  10, 10,
    11, 11, 11, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15, 16, 16, 16, 17, 17, 17, 18,
    18, 18, 19, 19, 19, 20, 20, 20, 21, 21, 21, 22, 22, 22, 23, 23, 23, 24, 24, 24, 25, 25,
    25, 26, 26, 26, 27, 27, 27, 28, 28, 28, 28, 29, 29, 29, 29, 30, 30, 30, 30, 31, 31, 31,
    31, 32, 32, 32, 32, 33, 33, 33, 33, 34, 34, 34, 34, 35, 35, 35, 35, 36, 36, 36, 36, 37,
    37, 37, 37, 38, 38, 38, 38, 39, 39, 39, 39, 40, 40, 40, 40, 41, 41, 41};

/* floor(log2(v)), 0 for v == 0. Branch-free (BPF has no set-on-compare: a comparison would be a
 * jump): with six ifs the verifier followed 2^6 paths, each with the result known exactly, in
 * every caller (~40,000 of the ~46,000 instructions it checked per program). Each step
 * halves the width: s is 1 when the upper half of v is non-zero (x + 2^w - 1 carries into bit
 * w exactly when x >= 1, and x < 2^w keeps that sum below 2^(w+1)). */
static __always_inline __u32 pmcprof_log2(__u64 v) {
  __u64 r = (((v >> 32) + 0xFFFFFFFFull) >> 32) << 5;
  v >>= r;
  __u64 s = (((v >> 16) + 0xFFFFull) >> 16) << 4;
  v >>= s;
  r |= s;
  s = (((v >> 8) + 0xFFull) >> 8) << 3;
  v >>= s;
  r |= s;
  s = (((v >> 4) + 0xFull) >> 4) << 2;
  v >>= s;
  r |= s;
  s = (((v >> 2) + 0x3ull) >> 2) << 1;
  v >>= s;
  r |= s;
  r |= v >> 1;
  return (__u32)r;
}

/* ceil(sqrt(k)), branch-free (as pmcprof_log2): the floor root bit by bit, a bit kept when
 * its square fits (k - t * t does not wrap), then 1 more when the root's square is short. */
static __always_inline __u32 pmcprof_sqrt_up(__u32 k) {
  __u64 r = 0;
#ifdef __clang__
#pragma unroll
#endif
  for (int b = 15; b >= 0; b--) {
    __u64 t = r | (1ull << b);
    __u64 d = (__u64)k - t * t; /* wraps (bit 63 set) when t * t > k */
    /* Opaque to the compiler: it would turn the sign test into a branch (BPF has no select),
     * and 16 branches make ~1,000 verified instructions of ~130. */
    asm volatile("" : "+r"(d));
    r |= (1ull << b) * (1 - (d >> 63));
  }
  __u64 short_by = r * r - (__u64)k; /* wraps when r * r < k */
  asm volatile("" : "+r"(short_by));
  return (__u32)(r + (short_by >> 63));
}

/* Bucket of v: exact below 128, then PMCPROF_HIST_PER_OCTAVE buckets per power of two. */
static __always_inline __u32 pmcprof_hist_bucket(__u64 v) {
  if (v < PMCPROF_HIST_EXACT) return (__u32)v;
  __u32 exp = pmcprof_log2(v);
  if (exp >= PMCPROF_HIST_MAX_LOG2) return PMCPROF_HIST_BUCKETS - 1;
  __u32 step = (__u32)(v >> (exp - PMCPROF_HIST_EXACT_BITS)) & (PMCPROF_HIST_EXACT - 1);
  return PMCPROF_HIST_EXACT + (exp - PMCPROF_HIST_EXACT_BITS) * PMCPROF_HIST_PER_OCTAVE +
         pmcprof_hist_step_bucket[step];
}

/* ---- multiplexing ---- */

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

/* ---- function mode: what leaves the kernel ---- */

/* Flags carried by a per-call record. */
#define PMCPROF_REC_SLEPT 0x1u       /* the call was switched out at least once */
#define PMCPROF_REC_MIGRATED 0x2u    /* it resumed on another CPU */
#define PMCPROF_REC_MULTIPLEXED 0x4u /* some event did not run through the whole call */
#define PMCPROF_REC_NOT_COUNTED                                                               \
  0x8u                               /* the thread's readings were disturbed: no event and no \
                                        on-CPU time of this call can be trusted */
#define PMCPROF_REC_READ_ERROR 0x10u /* a counter read failed during the call */
/* With the probe bias taken off: the call's wall (on-CPU) time is below the noise floor, the
 * spread of the calibrated bias. Such a value is not a measurement of the function. */
/* Not counted because the kernel did not report one of the thread's context switches (the
 * sched_switch tracepoint missed a switch in or out: seen on VMs under load); with
 * PMCPROF_REC_NOT_COUNTED. */
#define PMCPROF_REC_HIDDEN_SWITCH 0x80u
#define PMCPROF_REC_WALL_UNDER_FLOOR 0x20u
#define PMCPROF_REC_ONCPU_UNDER_FLOOR 0x40u

/* Multiplexed-out calls: on-CPU time below which a call is short (see pmcprof_agg). A tenth
 * of the shortest rotation interval the kernel uses (1 ms, perf_event_mux_interval_ms). */
#define PMCPROF_SHORT_CALL_NS 100000ull

/* Aggregation modes (rodata agg_mode bits). */
#define PMCPROF_AGG_STREAM 0x1u
#define PMCPROF_AGG_KERNEL 0x2u

/* One completed call, sent through the BPF-output PERF_EVENT_ARRAY ("records").
 * Only the first n_events entries of delta[] are sent. An event measured the call when it
 * ran (was scheduled on the PMU) for the whole call: its delta is then exact. An event that
 * ran for part of every piece of the call (pieces: cut at switches and at probed calls inside
 * it) has a delta scaled by enabled/running; one that never ran in some piece (or was not
 * even enabled) has neither bit, and is estimated as if it never ran in the call.
 * With the probe bias taken off, wall_ns, oncpu_ns and delta[] are signed (two's complement):
 * a call cheaper than the median probe cost reads below 0. Sums add them as they are, so the
 * bias is taken off each call exactly once and no clamp pushes a total up; min, max and
 * histograms see pmcprof_nonneg() of them, and the call is flagged under the noise floor. */
struct pmcprof_record {
  /* Who made the call: on the wire only with a --by that splits on it (the stream's "caller"
   * shape); the compact shape starts at func_id (PMCPROF_RECORD_CALL_OFFSET). */
  __u32 pid;
  __u32 tid;
  __u64 cgroup_id;
  char comm[16];
  /* The call: always on the wire. */
  __u32 func_id;
  __u32 flags;
  __u64 wall_ns;
  __u64 oncpu_ns;
  __u8 n_events;
  __u8 under_floor; /* bit i: event i's value (bias taken off) is below its noise floor */
  __u8 measured;    /* bit i: event i ran through the call */
  __u8 ran;         /* bit i: event i ran for part of every piece of it at least */
  __u32 cpu;        /* where it ended */
  __u64 delta[PMCPROF_MAX_EVENTS]; /* only n_events on the wire, but with a key */
  /* --by argN: the key read at the call's start. Sent (after every delta slot) only then. */
  struct pmcprof_key key;
};
#define PMCPROF_RECORD_CALL_OFFSET 32 /* offsetof(struct pmcprof_record, func_id) */
#define PMCPROF_RECORD_HEADER_SIZE 64 /* offsetof(struct pmcprof_record, delta) */
#define PMCPROF_RECORD_KEY_OFFSET (PMCPROF_RECORD_HEADER_SIZE + 8 * PMCPROF_MAX_EVENTS)

/* A compensated value as a count: a value below 0 (two's complement) is 0. */
static __always_inline __u64 pmcprof_nonneg(__u64 v) { return (__s64)v < 0 ? 0 : v; }

/* ---- function mode: per-call metrics ----
 * A per-call metric is the ratio of two quantities of the same call (IPC: instructions /
 * cycles; CPUs utilized: task-clock / wall time). A call has a value when it was counted,
 * both operands measured it (ran through the whole call: never a scaled estimate) and the
 * divisor is not 0. The value is kept in fixed point with PMCPROF_METRIC_FRAC_BITS fractional
 * bits (a resolution of 2^-20 = 9.5e-7), summed, and put into the same log histogram as the
 * events, with its exact min and max beside it. A metric's constant factor (100 for a share
 * in %, 1000 per 1k instructions) is applied in user space. */
#define PMCPROF_MAX_METRICS 8
#define PMCPROF_METRIC_FRAC_BITS 20
#define PMCPROF_OPERAND_WALL PMCPROF_MAX_EVENTS /* operand: the call's wall time (ns) */

struct pmcprof_metric {
  __u8 num; /* an event index, or PMCPROF_OPERAND_WALL */
  __u8 den;
};

/* num / den in fixed point, for den > 0: exact (rounded down) while num < 2^44; above, both
 * lose the same low bits first (a relative error below 2^-43). A ratio too large for 64 bits
 * (num >= 2^44 and den tiny) saturates. */
static __always_inline __u64 pmcprof_ratio_fixed(__u64 num, __u64 den) {
  __u32 ln = pmcprof_log2(num);
  if (ln >= 64 - PMCPROF_METRIC_FRAC_BITS) {
    __u32 s = ln - (63 - PMCPROF_METRIC_FRAC_BITS);
    num >>= s;
    den >>= s;
    if (den == 0) return ~(__u64)0;
  }
  return (num << PMCPROF_METRIC_FRAC_BITS) / den;
}

/* Operand `op` of a call: 1 with its value when the call has it exactly, 0 when not. */
static __always_inline int pmcprof_operand(const struct pmcprof_record* r, __u32 op, __u32 n_events,
                                           __u64* v) {
  if (op == PMCPROF_OPERAND_WALL) {
    *v = pmcprof_nonneg(r->wall_ns);
    return 1;
  }
  if (op >= n_events || op >= PMCPROF_MAX_EVENTS) return 0;
  if (!(r->measured & (1u << op))) return 0;
  *v = pmcprof_nonneg(r->delta[op & (PMCPROF_MAX_EVENTS - 1)]);
  return 1;
}

/* Kernel aggregation of one function (or one function and cgroup): the scalars. Histograms
 * live in their own map (wall, on-CPU, then one per event). min is kept inverted (~min) so a
 * zeroed value means "no value yet" in both directions. */
struct pmcprof_agg {
  __u64 calls;
  __u64 not_counted;
  __u64 slept;
  __u64 migrated;
  __u64 multiplexed;
  __u64 read_errors;
  __u64 wall_sum;
  __u64 oncpu_sum;
  __u64 wall_min_inv;
  __u64 wall_max;
  __u64 oncpu_min_inv;
  __u64 oncpu_max;
  __u64 measured[PMCPROF_MAX_EVENTS]; /* calls the event measured exactly */
  __u64 sum[PMCPROF_MAX_EVENTS];      /* over those calls */
  __u64 min_inv[PMCPROF_MAX_EVENTS];
  __u64 max[PMCPROF_MAX_EVENTS];
  /* The counted calls an event did not measure exactly (multiplexed out for all or part of
   * them) are estimated per stratum of on-CPU time (PMCPROF_SHORT_CALL_NS): a call much
   * shorter than the kernel's rotation interval is left out whatever its size, so those are
   * the mean of the short calls it measured; a longer one is left out less often the longer it
   * is, so those are its rate per on-CPU ns over the long calls it measured, times their
   * on-CPU time. (One per-call scaling weighs short calls too much where sizes differ; one
   * rate per ns is noise where every call is tiny.) A call's own enabled/running-scaled value
   * is not used where the stratum measured calls: the time the event was scheduled includes
   * kernel work (the rotation's own interrupt) that a user-only event does not count, which
   * the scaling multiplies by the call's share the event did not run: in the arm64 guest,
   * 87 % low on a 2 ms call it ran in for its first 2 us. Where a stratum measured no call
   * (every one longer than a rotation, say), the scaled values are all there is. */
  __u64 partial[PMCPROF_MAX_EVENTS];             /* calls it ran in, in part of every piece */
  __u64 scaled_sum[PMCPROF_MAX_EVENTS];          /* their enabled/running-scaled deltas */
  __u64 short_measured[PMCPROF_MAX_EVENTS];      /* measured calls under the threshold ... */
  __u64 short_sum[PMCPROF_MAX_EVENTS];           /* ... and their sum */
  __u64 long_measured_oncpu[PMCPROF_MAX_EVENTS]; /* on-CPU ns of the measured calls above it */
  __u64 short_unmeasured[PMCPROF_MAX_EVENTS];    /* calls under it the event did not measure */
  __u64 unmeasured_oncpu[PMCPROF_MAX_EVENTS];    /* on-CPU ns of those above it */
  __u64 under_floor[PMCPROF_MAX_EVENTS];         /* measured calls below the noise floor */
  __u64 wall_under_floor;                        /* calls whose wall time is below it */
  __u64 oncpu_under_floor;                       /* counted calls whose on-CPU time is */
  /* Per-call metrics (struct pmcprof_metric), over the counted calls: */
  __u64 metric_calls[PMCPROF_MAX_METRICS];      /* with a value */
  __u64 metric_unmeasured[PMCPROF_MAX_METRICS]; /* an operand did not run through the call */
  __u64 metric_zero[PMCPROF_MAX_METRICS];       /* the divisor was 0 */
  __u64 metric_sum[PMCPROF_MAX_METRICS];        /* of the fixed-point values, modulo 2^64 */
  __u64 metric_sum_hi[PMCPROF_MAX_METRICS];     /* ... and its carries: a 128-bit sum */
  __u64 metric_min_inv[PMCPROF_MAX_METRICS];
  __u64 metric_max[PMCPROF_MAX_METRICS];
  __u64 metric_num_sum[PMCPROF_MAX_METRICS]; /* its operands, summed over the calls with a */
  __u64 metric_den_sum[PMCPROF_MAX_METRICS]; /* value: their ratio is the ratio of totals */
  __u64 hidden_switch; /* not counted calls: a switch the kernel did not report */
};

/* Histogram indexes within a function's histograms. */
#define PMCPROF_HIST_WALL 0
#define PMCPROF_HIST_ONCPU 1
#define PMCPROF_HIST_EVENT0 2
#define PMCPROF_HISTS_PER_FUNC (PMCPROF_HIST_EVENT0 + PMCPROF_MAX_EVENTS)

/* Key of the keyed aggregation hashes (--by cgroup, --by argN). */
struct pmcprof_agg_key {
  __u32 func_id;
  __u16 hist;  /* histogram index; 0 in the scalar map */
  __u16 other; /* 1: the calls whose --by argN key found no room (key all zero) */
  __u64 cgroup_id;
  struct pmcprof_key key; /* --by argN; zero otherwise */
};

static __always_inline void pmcprof_min_max(__u64* min_inv, __u64* max, __u64 v) {
  if (~v > *min_inv) *min_inv = ~v;
  if (v > *max) *max = v;
}

/* Adds one call to the scalars: the one definition of what a call contributes, used by the
 * kernel aggregation and by the stream's aggregation in user space. */
static __always_inline void pmcprof_agg_add(struct pmcprof_agg* a, const struct pmcprof_record* r,
                                            __u32 n_events) {
  a->calls++;
  if (r->flags & PMCPROF_REC_SLEPT) a->slept++;
  if (r->flags & PMCPROF_REC_MIGRATED) a->migrated++;
  if (r->flags & PMCPROF_REC_MULTIPLEXED) a->multiplexed++;
  if (r->flags & PMCPROF_REC_READ_ERROR) a->read_errors++;
  a->wall_sum += r->wall_ns; /* signed when compensated: modulo 2^64 */
  pmcprof_min_max(&a->wall_min_inv, &a->wall_max, pmcprof_nonneg(r->wall_ns));
  if (r->flags & PMCPROF_REC_WALL_UNDER_FLOOR) a->wall_under_floor++;
  if (r->flags & PMCPROF_REC_NOT_COUNTED) {
    a->not_counted++;
    if (r->flags & PMCPROF_REC_HIDDEN_SWITCH) a->hidden_switch++;
    return;
  }
  a->oncpu_sum += r->oncpu_ns;
  pmcprof_min_max(&a->oncpu_min_inv, &a->oncpu_max, pmcprof_nonneg(r->oncpu_ns));
  if (r->flags & PMCPROF_REC_ONCPU_UNDER_FLOOR) a->oncpu_under_floor++;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    __u64 d = r->delta[i];
    const __u64 oncpu = pmcprof_nonneg(r->oncpu_ns);
    const bool short_call = oncpu < PMCPROF_SHORT_CALL_NS;
    if (r->measured & (1u << i)) {
      a->measured[i]++;
      a->sum[i] += d;
      pmcprof_min_max(&a->min_inv[i], &a->max[i], pmcprof_nonneg(d));
      if (r->under_floor & (1u << i)) a->under_floor[i]++;
      if (short_call) {
        a->short_measured[i]++;
        a->short_sum[i] += d;
      } else {
        a->long_measured_oncpu[i] += oncpu;
      }
    } else {
      if (r->ran & (1u << i)) {
        a->partial[i]++;
        a->scaled_sum[i] += d;
      }
      if (short_call)
        a->short_unmeasured[i]++;
      else
        a->unmeasured_oncpu[i] += oncpu;
    }
  }
}

/* Adds metric m (operands num_op / den_op) of one call: the one definition of which calls have
 * a value and what it is, used by the kernel aggregation and by the stream's in user space.
 * Returns 1 with the fixed-point value in *value (for the histogram) when the call has one. */
static __always_inline int pmcprof_metric_add(struct pmcprof_agg* a, const struct pmcprof_record* r,
                                              __u32 n_events, __u32 m, __u32 num_op, __u32 den_op,
                                              __u64* value) {
  if (r->flags & PMCPROF_REC_NOT_COUNTED) return 0; /* counted in not_counted */
  m &= PMCPROF_MAX_METRICS - 1;
  __u64 num = 0, den = 0;
  if (!pmcprof_operand(r, num_op, n_events, &num) || !pmcprof_operand(r, den_op, n_events, &den)) {
    a->metric_unmeasured[m]++;
    return 0;
  }
  if (den == 0) {
    a->metric_zero[m]++;
    return 0;
  }
  __u64 v = pmcprof_ratio_fixed(num, den);
  a->metric_calls[m]++;
  a->metric_sum[m] += v;
  if (a->metric_sum[m] < v) a->metric_sum_hi[m]++;
  pmcprof_min_max(&a->metric_min_inv[m], &a->metric_max[m], v);
  a->metric_num_sum[m] += num;
  a->metric_den_sum[m] += den;
  *value = v;
  return 1;
}

/* Merges one CPU's scalars into a running total (every field adds up but min and max). */
static __always_inline void pmcprof_agg_merge(struct pmcprof_agg* into,
                                              const struct pmcprof_agg* a) {
  into->calls += a->calls;
  into->not_counted += a->not_counted;
  into->hidden_switch += a->hidden_switch;
  into->slept += a->slept;
  into->migrated += a->migrated;
  into->multiplexed += a->multiplexed;
  into->read_errors += a->read_errors;
  into->wall_sum += a->wall_sum;
  into->oncpu_sum += a->oncpu_sum;
  if (a->wall_min_inv > into->wall_min_inv) into->wall_min_inv = a->wall_min_inv;
  if (a->wall_max > into->wall_max) into->wall_max = a->wall_max;
  if (a->oncpu_min_inv > into->oncpu_min_inv) into->oncpu_min_inv = a->oncpu_min_inv;
  if (a->oncpu_max > into->oncpu_max) into->oncpu_max = a->oncpu_max;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    into->measured[i] += a->measured[i];
    into->sum[i] += a->sum[i];
    if (a->min_inv[i] > into->min_inv[i]) into->min_inv[i] = a->min_inv[i];
    if (a->max[i] > into->max[i]) into->max[i] = a->max[i];
    into->partial[i] += a->partial[i];
    into->scaled_sum[i] += a->scaled_sum[i];
    into->short_measured[i] += a->short_measured[i];
    into->short_sum[i] += a->short_sum[i];
    into->long_measured_oncpu[i] += a->long_measured_oncpu[i];
    into->short_unmeasured[i] += a->short_unmeasured[i];
    into->unmeasured_oncpu[i] += a->unmeasured_oncpu[i];
    into->under_floor[i] += a->under_floor[i];
  }
  into->wall_under_floor += a->wall_under_floor;
  into->oncpu_under_floor += a->oncpu_under_floor;
  for (__u32 m = 0; m < PMCPROF_MAX_METRICS; m++) {
    into->metric_calls[m] += a->metric_calls[m];
    into->metric_unmeasured[m] += a->metric_unmeasured[m];
    into->metric_zero[m] += a->metric_zero[m];
    __u64 lo = into->metric_sum[m] + a->metric_sum[m];
    into->metric_sum_hi[m] += a->metric_sum_hi[m] + (lo < a->metric_sum[m] ? 1 : 0);
    into->metric_sum[m] = lo;
    if (a->metric_min_inv[m] > into->metric_min_inv[m])
      into->metric_min_inv[m] = a->metric_min_inv[m];
    if (a->metric_max[m] > into->metric_max[m]) into->metric_max[m] = a->metric_max[m];
    into->metric_num_sum[m] += a->metric_num_sum[m];
    into->metric_den_sum[m] += a->metric_den_sum[m];
  }
}

/* Per-function bookkeeping (per-CPU array indexed by func_id), updated atomically: these are
 * rare events, and uprobe programs can be preempted. */
struct pmcprof_func_stats {
  __u64 lost;           /* records bpf_perf_event_output refused (ring full) */
  __u64 depth_overflow; /* calls nested deeper than PMCPROF_MAX_DEPTH: not measured */
  __u64 unmatched_exit; /* returns without a matching entry (attached mid-call) */
  __u64 abandoned;      /* entries whose return never came (longjmp, exception) */
  __u64 reentered;      /* probe fired inside pmcprof's own BPF code for this thread */
  __u64 state_failed;   /* per-thread state could not be created: call not measured */
  __u64 agg_collisions; /* kernel aggregation busy on this CPU (preempted): not aggregated */
  __u64 agg_full;       /* no room for another --by cgroup key: not aggregated */
  __u64 entered;        /* runs with regions: starts (entries) measured ... */
  __u64 ended;          /* ... and the ends (exits) that matched one: the rest never ended */
};

/* ---- probe-bias calibration ----
 * Before a run, pmcprof probes a function that does nothing (per backend) with the run's own
 * programs and events, under the calibration function id: each such call leaves one sample.
 * The median per event is what a probe pair adds to every call; the kernel subtracts it from
 * each call's values (unless --no-compensate), so sums, histograms and records agree. */
#define PMCPROF_CALIB_CALLS 64
#define PMCPROF_BIAS_WALL PMCPROF_MAX_EVENTS
#define PMCPROF_BIAS_ONCPU (PMCPROF_MAX_EVENTS + 1)
#define PMCPROF_BIAS_SLOTS (PMCPROF_MAX_EVENTS + 2)
/* Probed calls nested in a call add their probes' cost to it: each function belongs to a cost
 * class (its backend's calibration, 1..PMCPROF_COST_CLASSES; 0: none), whose cost as seen
 * from an enclosing call is calibrated (an outer function calling the calibration target, with
 * and without the target probed); every call loses that cost once per probed call entered
 * inside it, besides its own bias. */
#define PMCPROF_COST_CLASSES 4
/* Their noise, per nested call: a spread, which varies from call to call (k calls inside add
 * ceil(sqrt(k)) times the largest class's in the run to a call's noise floor), and a tail (a
 * few slow calls the median leaves out: k calls add k times their class's). */
/* The noise floor beside each bias (same slots): the spread of the calibration's samples
 * (their 90th less their 10th percentile). A compensated value below it is flagged. */

struct pmcprof_calib_sample {
  __u64 delta[PMCPROF_MAX_EVENTS];
  __u64 wall_ns;
  __u64 oncpu_ns;
  __u32 flags;
  __u8 measured;
  __u8 pad[3];
};

/* ---- counter self-test (bpf/counter_read.bpf.c): one read of every event on one CPU ---- */
struct pmcprof_snapshot {
  __s64 err[PMCPROF_MAX_EVENTS];
  __u64 counter[PMCPROF_MAX_EVENTS];
  __u64 enabled[PMCPROF_MAX_EVENTS];
  __u64 running[PMCPROF_MAX_EVENTS];
  __u32 cpu;
  __u32 n_events;
};

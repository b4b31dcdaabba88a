// SPDX-License-Identifier: GPL-2.0
/* Function mode: counters per call of a function (kprobe/kretprobe, fentry/fexit, uprobe/
 * uretprobe, or a syscall's enter/exit tracepoints), per region between two probes (USDT,
 * uprobes, kprobes, tracepoints: an entry program at the start, an exit program at the end,
 * with the same function id), and hits of single probes.
 *
 * Per thread, a virtual counter V per event only advances while the thread is on a CPU:
 * V = acc + normalized(read_now - segment_start). The sched_switch hook folds the running
 * segment into acc when the thread leaves a CPU and takes fresh readings when it comes back,
 * on whatever CPU. A call's delta is V(exit) - V(entry): its own on-CPU work however often it
 * slept or migrated, with O(events) work per switch at any nesting depth. Events whose value
 * is the on-CPU time itself (task-clock, cpu-clock: `clock_events`) come from the probe's own
 * clock instead of a counter read.
 *
 * Safety:
 *  - per-thread state lives in task local storage (a preallocated hash keyed by thread id
 *    where the kernel lacks it), created on a thread's first call and freed with the thread;
 *  - `busy` marks a thread whose state an entry, exit or switch program is updating. A probe
 *    that fires inside that code (a kprobe on a function the hook calls) is skipped and
 *    counted; a switch that preempts an entry/exit program (uprobes run preemptible) only
 *    marks the state disturbed, and the interrupted program, or the next switch, starts a
 *    fresh segment and flags the calls in flight as not counted (never a wrapped sum);
 *  - records are built on the stack, never in a shared per-CPU buffer;
 *  - the kernel aggregation is guarded per CPU by an atomic exchange: a program that preempts
 *    another one mid-update does not touch it, and counts that it could not;
 *  - counter reads use bpf_perf_event_read_value: errors are out of band, and a failed read
 *    flags the call (READ_ERROR) and keeps that event from measuring it;
 *  - pmcprof's own process is never counted (except its calibration calls);
 *  - a region's frame is never taken for gone by the stack pointer, and an end takes only its
 *    own region's frame: regions may nest (Python functions) and overlap (a query and its
 *    transaction); a function's frame above a finished one is abandoned, a region's stays,
 *    and a region's end inside a call leaves that call live;
 *  - frames: PMCPROF_MAX_DEPTH (256) per thread, the first PMCPROF_INLINE_FRAMES in the
 *    thread's state, deeper ones in `deep_frames` (made on first use, freed at thread exit);
 *    a frame that ends under live ones is marked dead in place and comes off once on top;
 *    exec abandons the old image's user frames; stack pointers compare only on one stack;
 *  - compensation: the calibrated bias, and the cost of the probed calls nested in a call (per
 *    cost class), come off each call as signed values; calls under the noise floor are
 *    flagged, never clamped into the sums.
 *
 * Every map is sized by the loader before load; maps a run does not need are not created
 * (their code is dead for the verifier: rodata switches). */
// clang-format off
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
// clang-format on

#include "pmcprof.h"
#include "counters.bpf.h"

#if defined(__TARGET_ARCH_arm64) && !defined(PMCPROF_HAVE_USER_PT_REGS)
/* The cross build compiles against the build host's vmlinux.h (x86), which lacks arm64's
 * register layout: the part of it PT_REGS_SP reads, relocated against the running kernel's
 * BTF at load (CO-RE). */
struct user_pt_regs {
  __u64 regs[31];
  __u64 sp;
  __u64 pc;
  __u64 pstate;
} __attribute__((preserve_access_index));
#endif

const volatile __u32 agg_mode = PMCPROF_AGG_STREAM;
const volatile bool use_task_storage = true; /* else the preallocated `threads_hash` */
const volatile bool follow_tgids = false;    /* count only tgids in `tracked` (and their forks) */
const volatile bool sched_hook = true;       /* suspend/resume in-flight calls at sched_switch */
const volatile bool agg_keyed = false;       /* kernel aggregation in the keyed hashes ... */
const volatile bool agg_by_cgroup = false;   /* ... keyed by cgroup (--by cgroup) */
const volatile __u32 n_key_args = 0;         /* --by argN: arguments read at a start */
const volatile __u32 max_keys = 0;           /* --by argN: keys per function in the kernel's sums */
const volatile bool count_entries = false;   /* regions: starts and matched ends counted */
const volatile bool need_cgroup_id = false;  /* records carry the cgroup (--by cgroup) */
const volatile bool need_comm = false;       /* records carry the command name (--by comm) */
const volatile bool send_caller = false;     /* the stream sends pid, tid, cpu, cgroup, comm */
const volatile __u32 clock_events = 0;       /* bit i: event i is the on-CPU time (ns) */
/* Software events the sched_switch hook counts itself (only with the hook): context switches
 * and migrations of the thread while a call is in flight. Read as counters they say the same
 * (a call's per-CPU context-switches delta is its switches back in, each counted after the
 * hook's reading) or less (cpu-migrations counts what the CPU migrates, not the thread). */
const volatile __u32 switch_events = 0;    /* bit i: event i is context-switches */
const volatile __u32 migration_events = 0; /* bit i: event i is cpu-migrations */
/* clock_events | switch_events | migration_events: one test per event in the hot loops (each
 * rodata value is a load there: ~30 instructions a call per extra mask tested, on arm64). */
const volatile __u32 unread_events = 0;
const volatile __u32 self_tgid = 0;                      /* pmcprof itself: never counted ... */
const volatile __u32 calibration_id = PMCPROF_MAX_FUNCS; /* ... but for this function id */
/* ... and this one: an outer function calling the calibration target (nested probes' cost) */
const volatile __u32 calibration_outer_id = PMCPROF_MAX_FUNCS + 1;
const volatile __u32 n_hists = PMCPROF_HIST_EVENT0; /* histograms per function */
/* Histogram of event i: PMCPROF_HIST_EVENT0 + its rank among the events that are not clock
 * events (a clock event's histogram is the on-CPU one). */
const volatile __u32 event_hist[PMCPROF_MAX_EVENTS] = {};
/* Per-call metrics (kernel aggregation): operands, and the histogram of metric m. */
const volatile __u32 n_metrics = 0;
const volatile struct pmcprof_metric metrics[PMCPROF_MAX_METRICS] = {};
const volatile __u32 metric_hist[PMCPROF_MAX_METRICS] = {};
const volatile __u32 n_filter_cgroups = 0;
/* Function mode -G filter: a call counts when the task's cgroup is one of these or below one:
 * its ancestor at the filter cgroup's level is that cgroup. */
const volatile __u64 filter_cgroup_ids[PMCPROF_MAX_FILTER_CGROUPS] = {};
const volatile __u32 filter_cgroup_levels[PMCPROF_MAX_FILTER_CGROUPS] = {};

struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
  __uint(max_entries, 1); /* n_cpus */
} records SEC(".maps");

struct frame {
  __u32 func_id;
  __u32 entry_cpu;
  __u32 region;                       /* a region's start (else a call) */
  __u32 hidden;                       /* the thread's hidden switches at entry */
  __u32 nested[PMCPROF_COST_CLASSES]; /* the thread's nested counts (halves of pairs), at entry */
  __u64 sp; /* stack pointer at entry (0: unknown): a later entry at or above it means this
               frame was left without a return (longjmp) */
  __u64 wall_start;
  __u64 oncpu_start;
  __u64 cgroup_id;
  __u32 switches; /* the thread's counters at entry: changed at exit = it happened */
  __u32 migrations;
  __u32 bad;
  __u32 read_errors;
  __u32 folds;     /* the thread's folds at entry: the call's pieces are the folds since */
  __u32 kswitches; /* the kernel's count of the thread's switches at entry (kernel_switches) */
  __u32 gaps[PMCPROF_MAX_EVENTS];
  __u32 runs[PMCPROF_MAX_EVENTS];
  __u64 v_start[PMCPROF_MAX_EVENTS];
  struct pmcprof_key key; /* --by argN, read at the start */
};

/* All readings of one moment: every event read back to back, so that each event's window
 * holds the same probe work (read all, then update). */
struct readings {
  struct bpf_perf_event_value v[PMCPROF_MAX_EVENTS];
  __u32 failed; /* bit i: the read of event i failed */
};

struct thread_state {
  __u32 depth; /* may exceed PMCPROF_MAX_DEPTH: deeper frames are not measured */
  __u32 deep;  /* levels from PMCPROF_INLINE_FRAMES up to this one have a deep frame */
  __u32 pad2;
  __u32 cpu;       /* CPU of the current segment */
  __u32 busy;      /* an entry/exit/switch program is updating this state */
  __u32 disturbed; /* a switch happened while busy: the segment is unusable */
  __u32 switches;  /* times switched out while a call was in flight */
  __u32 migrations;
  __u32 bad;         /* segments that could not be measured (disturbed, clock went back) */
  __u32 read_errors; /* failed counter reads */
  __u32 seg_invalid; /* no segment to fold: the next reading starts one */
  __u32 off_cpu;     /* switched out with a call in flight, and not yet seen switched in */
  __u32 hidden;      /* switches the kernel did not report (a missed switch in or out) */
  __u32 folds;       /* segments folded into acc, ever: the pieces calls are measured in */
  __u32 nested[PMCPROF_COST_CLASSES]; /* probed entries per cost class, ever, in halves of pairs */
  __u32 gaps[PMCPROF_MAX_EVENTS];     /* per event: segments it did not run throughout */
  __u32 runs[PMCPROF_MAX_EVENTS];     /* per event: segments it ran in at all */
  __u64 seg_start_ns;
  __u64 oncpu_acc;
  __u64 acc[PMCPROF_MAX_EVENTS];
  struct bpf_perf_event_value seg[PMCPROF_MAX_EVENTS];
  struct readings rd; /* an exit's readings (here, not on its stack: the record is there) */
  struct frame frames[PMCPROF_INLINE_FRAMES];
};

/* Frames of levels PMCPROF_INLINE_FRAMES and up, per thread: made when a thread first goes
 * that deep, reused after, deleted when the thread exits. */
struct deep_key {
  __u32 tid;
  __u32 level;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct deep_key);
  __type(value, struct frame);
  __uint(max_entries, 1); /* sized by the loader */
} deep_frames SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct frame);
  __uint(max_entries, 1);
} zero_frame SEC(".maps"); /* a zeroed frame to insert (too large for the BPF stack) */

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct thread_state);
} threads SEC(".maps");

/* Where task storage does not exist: preallocated, keyed by thread id, sized by the loader. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u32);
  __type(value, struct thread_state);
  __uint(max_entries, 1);
} threads_hash SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct thread_state);
  __uint(max_entries, 1);
} zero_state SEC(".maps"); /* threads_hash only: a zeroed value to insert */

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u32); /* tgid */
  __type(value, __u8);
  __uint(max_entries, 1); /* sized by the loader when following processes */
} tracked SEC(".maps");

/* Kernel aggregation by function: scalars at func_id, histograms at func_id * n_hists + h.
 * A histogram's buckets are one byte per CPU (1.6 KiB; 8 functions x 8 events fit in 128 KiB a
 * CPU): the 256th call in a bucket on a CPU wraps it to 0, then adds 1 to the bucket's carry,
 * shared by every CPU (hist_carry at the same index, hists_keyed_carry under the same key).
 * A carry is added rarely (once in 256 calls at most), so CPUs do not contend for it; added
 * after the wrap, a reader that takes the carries first and the buckets after never sees more
 * calls than were made (FuncObject::read_hist). */
struct hist {
  __u8 bucket[PMCPROF_HIST_BUCKETS];
};

struct hist_carry {
  __u32 bucket[PMCPROF_HIST_BUCKETS]; /* wraps of the per-CPU buckets: 256 calls each */
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct pmcprof_agg);
  __uint(max_entries, 1);
} aggs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct hist);
  __uint(max_entries, 1);
} hists SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __type(key, __u32);
  __type(value, struct hist_carry);
  __uint(max_entries, 1);
} hist_carry SEC(".maps");

/* ... and by function and key (--by cgroup, --by argN), preallocated to the keys the run
 * allows. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __type(key, struct pmcprof_agg_key);
  __type(value, struct pmcprof_agg);
  __uint(max_entries, 1);
} aggs_keyed SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __type(key, struct pmcprof_agg_key);
  __type(value, struct hist);
  __uint(max_entries, 1);
} hists_keyed SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, struct pmcprof_agg_key);
  __type(value, struct hist_carry);
  __uint(max_entries, 1);
} hists_keyed_carry SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __type(key, __u32);
  __type(value, struct hist_carry);
  __uint(max_entries, 1);
} zero_carry SEC(".maps"); /* keyed only: a zeroed carry to insert */

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct pmcprof_agg_key);
  __uint(max_entries, 1);
} agg_key SEC(".maps"); /* keyed: the key being summed (too large for the stack); per CPU,
                           used under the aggregation guard only */

/* --by argN: where each start point's arguments are (the slot in its cookie). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __type(key, __u32);
  __type(value, struct pmcprof_key_spec);
  __uint(max_entries, 1);
} key_specs SEC(".maps");

/* --by argN: keys each function has in the kernel's sums; past max_keys a call goes to the
 * function's "other" key. */
__u32 key_count[PMCPROF_MAX_FUNCS + 1] = {};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct hist);
  __uint(max_entries, 1);
} zero_hist SEC(".maps"); /* keyed only: a zeroed histogram to insert */

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct pmcprof_agg);
  __uint(max_entries, 1);
} zero_agg SEC(".maps"); /* keyed only: too large for the BPF stack */

struct agg_guard {
  __u64 busy; /* 64-bit: the BPF atomic exchange */
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct agg_guard);
  __uint(max_entries, 1);
} guard SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct pmcprof_func_stats);
  __uint(max_entries, 1); /* n_funcs + 1 (calibration) */
} func_stats SEC(".maps");

/* Syscalls probed through the raw sys_enter/sys_exit tracepoints: [number] -> the cookie
 * (PMCPROF_COOKIE_SET | probe cookie), 0 where not probed. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __type(key, __u32);
  __type(value, __u64);
  __uint(max_entries, 1); /* PMCPROF_MAX_SYSCALL_NR where used */
} syscall_ids SEC(".maps");

/* Processes (--  CMD, -p) that could not be added to `tracked`: their calls are missed. */
__u64 untracked = 0;

/* Calibration samples (calls of the calibration id), and the bias user space derives from
 * them per function: subtracted from each call's values when `compensate` is set. */
const volatile bool compensate = false;
struct pmcprof_calib_sample calib[PMCPROF_CALIB_CALLS] = {};
__u32 calib_count = 0;
__u64 bias[PMCPROF_MAX_FUNCS + 1][PMCPROF_BIAS_SLOTS] = {};
__u64 noise[PMCPROF_MAX_FUNCS + 1][PMCPROF_BIAS_SLOTS] = {}; /* the floor beside each bias */
/* Nested probes: each function's cost class (0: none) and each class's cost to an enclosing
 * call (per event, wall, on-CPU); the outer calibration function's samples. */
#define PMCPROF_COST_CLASS_SLOTS 128 /* a power of two above PMCPROF_MAX_FUNCS + 1 */
__u32 cost_class[PMCPROF_COST_CLASS_SLOTS] = {};
__u64 enclosed[PMCPROF_COST_CLASSES][PMCPROF_BIAS_SLOTS] = {};
__u64 enclosed_tail[PMCPROF_COST_CLASSES][PMCPROF_BIAS_SLOTS] = {}; /* its tail */
__u64 enclosed_noise_max[PMCPROF_BIAS_SLOTS] = {}; /* the largest spread of any class's cost */
struct pmcprof_calib_sample calib_outer[PMCPROF_CALIB_CALLS] = {};
__u32 calib_outer_count = 0;

/* ---- small helpers ---- */

enum stat_field {
  STAT_LOST,
  STAT_DEPTH_OVERFLOW,
  STAT_UNMATCHED_EXIT,
  STAT_ABANDONED,
  STAT_REENTERED,
  STAT_STATE_FAILED,
  STAT_AGG_COLLISIONS,
  STAT_AGG_FULL,
  STAT_ENTERED,
  STAT_ENDED,
};

/* Counts a rare event of a function. A global function: verified once, not per call site. */
__attribute__((noinline)) int stat_inc(__u32 func_id, __u32 field) {
  struct pmcprof_func_stats *s = bpf_map_lookup_elem(&func_stats, &func_id);
  if (!s) return 0;
  __u64 *p;
  switch (field) {
    case STAT_LOST:
      p = &s->lost;
      break;
    case STAT_DEPTH_OVERFLOW:
      p = &s->depth_overflow;
      break;
    case STAT_UNMATCHED_EXIT:
      p = &s->unmatched_exit;
      break;
    case STAT_ABANDONED:
      p = &s->abandoned;
      break;
    case STAT_REENTERED:
      p = &s->reentered;
      break;
    case STAT_STATE_FAILED:
      p = &s->state_failed;
      break;
    case STAT_AGG_COLLISIONS:
      p = &s->agg_collisions;
      break;
    case STAT_AGG_FULL:
      p = &s->agg_full;
      break;
    case STAT_ENTERED:
      p = &s->entered;
      break;
    default:
      p = &s->ended;
      break;
  }
  __sync_fetch_and_add(p, 1);
  return 0;
}

/* The value of `key` in a hash map, made from the zeroed value in `zero_map` (too large for
 * the stack) when absent. NULL when it cannot be made (the map is full): the caller counts
 * that. A failed insert because another CPU inserted the key first finds that one. */
static __always_inline void *lookup_or_insert(void *map, const void *key, void *zero_map) {
  void *v = bpf_map_lookup_elem(map, key);
  if (v) return v;
  __u32 zero = 0;
  void *z = bpf_map_lookup_elem(zero_map, &zero);
  if (!z) return NULL;
  bpf_map_update_elem(map, key, z, BPF_NOEXIST);
  return bpf_map_lookup_elem(map, key);
}

/* Where task storage does not exist: the preallocated hash, keyed by thread id. */
static __always_inline struct thread_state *hash_state(__u32 tid, bool create) {
  if (!create) return bpf_map_lookup_elem(&threads_hash, &tid);
  return lookup_or_insert(&threads_hash, &tid, &zero_state);
}

static __always_inline struct thread_state *current_state(__u32 tid, bool create) {
  if (use_task_storage)
    return bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
                                create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
  return hash_state(tid, create);
}

static __always_inline struct thread_state *task_state(struct task_struct *task) {
  if (use_task_storage) return bpf_task_storage_get(&threads, task, 0, 0);
  return hash_state(BPF_CORE_READ(task, pid), false);
}

/* Global (noinline, non-static) functions below are verified once each, on their own: inlined
 * into every entry, exit and switch path their per-event branches would multiply the
 * verifier's states past its limit. Their pointer arguments may be NULL for the verifier. */
__attribute__((noinline)) int read_all(struct readings *r, __u32 cpu) {
  if (!r) return 0;
  r->failed = 0;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    if (unread_events & (1u << i)) {
      r->v[i].counter = r->v[i].enabled = r->v[i].running = 0;
      continue;
    }
    if (bpf_perf_event_read_value(&counters, (__u64)i * n_cpus + cpu, &r->v[i], sizeof(r->v[i])) !=
        0)
      r->failed |= 1u << i;
  }
  return 0;
}

/* A global function is verified once on its own; inlined into the event loops its branches
 * would multiply the verifier's states. */
__attribute__((noinline)) __u64 normalize_delta(__u64 dc, __u64 de, __u64 dr) {
  return pmcprof_normalize(dc, de, dr);
}

/* Starts a segment on this CPU at `now` with readings `r`. */
__attribute__((noinline)) int segment_start(struct thread_state *t, __u32 cpu, __u64 now,
                                            const struct readings *r) {
  if (!t || !r) return 0;
  t->cpu = cpu;
  t->seg_start_ns = now;
  t->seg_invalid = 0;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    t->seg[i] = r->v[i];
    if (r->failed & (1u << i)) {
      /* No start reading: this event cannot measure the segment. */
      t->gaps[i]++;
      t->read_errors++;
      t->seg[i].enabled = 0;
    }
  }
  return 0;
}

/* Folds the running segment into acc (at switch-out, or to sample V at entry/exit). */
__attribute__((noinline)) int segment_fold(struct thread_state *t, __u32 cpu, __u64 now,
                                           const struct readings *r) {
  if (!t || !r) return 0;
  if (t->seg_invalid) return segment_start(t, cpu, now, r);
  if (now < t->seg_start_ns) {
    t->bad++; /* a clock that went backwards: nothing in flight can be trusted */
  } else {
    t->oncpu_acc += now - t->seg_start_ns;
  }
  __u64 dt = now > t->seg_start_ns ? now - t->seg_start_ns : 0;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    if (unread_events & (1u << i)) {
      /* The on-CPU time, or a count the hook keeps: always "running". */
      if (clock_events & (1u << i)) t->acc[i] += dt;
      t->runs[i]++;
      continue;
    }
    const struct bpf_perf_event_value *v = &r->v[i];
    if ((r->failed & (1u << i)) || t->seg[i].enabled == 0) {
      if (r->failed & (1u << i)) t->read_errors++;
      t->gaps[i]++;
      t->seg[i] = *v;
      if (r->failed & (1u << i)) t->seg[i].enabled = 0;
      continue;
    }
    __u64 dc = v->counter - t->seg[i].counter;
    __u64 de = v->enabled - t->seg[i].enabled;
    __u64 dr = v->running - t->seg[i].running;
    /* Not running throughout is a gap, and so is not running at all: an event that was not
     * even enabled (de == 0: its CPU went offline and back, which leaves it off) measured
     * nothing of the segment, it did not measure 0. */
    if (dr < de || dr == 0) t->gaps[i]++;
    if (dr > 0) t->runs[i]++;
    t->acc[i] += normalize_delta(dc, de, dr);
    t->seg[i] = *v;
  }
  t->folds++;
  t->seg_start_ns = now;
  return 0;
}

/* A context switch interrupted a program that was updating the state (or the clock went
 * back): the calls in flight are not counted, and the next reading starts a fresh segment. */
static __always_inline void absorb_disturbance(struct thread_state *t) {
  if (!t->disturbed) return;
  t->disturbed = 0;
  t->bad++;
  t->seg_invalid = 1;
}

/* A thread running its own entry or exit program is on a CPU: if the hook last saw it switched
 * out, the hook missed its switch in (its state could not be looked up then), so the running
 * segment started at that switch-out and would count the time off the CPU: not counted. */
static __always_inline void absorb_missed_switch_in(struct thread_state *t) {
  if (!t->off_cpu) return;
  t->off_cpu = 0;
  t->hidden++;
  t->bad++;
  t->seg_invalid = 1;
}

/* The thread's context switches as the kernel counts them (voluntary and not: both rise in
 * __schedule's block that fires sched_switch). A call over which they rose by more than the
 * hook saw the thread switched out went through a switch the hook never saw, out and back in:
 * another task's counts are in it, which no other check can tell (issue 22, item 9). */
static __always_inline __u32 kernel_switches(void) {
  struct task_struct *task = bpf_get_current_task_btf();
  return (__u32)(task->nvcsw + task->nivcsw);
}

/* One more of the hook's own events (mask: switch_events or migration_events) in the calls in
 * flight. */
static __always_inline void hook_count(struct thread_state *t, __u32 mask) {
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    if (mask & (1u << i)) t->acc[i]++;
  }
}

/* busy brackets every update of a thread's state by an entry or exit program. A switch in
 * between only sets `disturbed`; it is absorbed on both sides of the update, so a segment
 * whose start readings were taken on another CPU is never folded. */
static __always_inline void acquire(struct thread_state *t) {
  t->busy = 1;
  asm volatile("" ::: "memory");
  absorb_disturbance(t);
}

static __always_inline void release(struct thread_state *t) {
  asm volatile("" ::: "memory");
  absorb_disturbance(t);
  asm volatile("" ::: "memory");
  t->busy = 0;
}

static __always_inline bool in_filter_cgroups(void) {
#pragma unroll
  for (__u32 i = 0; i < PMCPROF_MAX_FILTER_CGROUPS; i++) {
    if (i < n_filter_cgroups &&
        bpf_get_current_ancestor_cgroup_id(filter_cgroup_levels[i]) == filter_cgroup_ids[i])
      return true;
  }
  return false;
}

static __always_inline bool wanted(__u32 tgid) {
  if (!follow_tgids) return true;
  return bpf_map_lookup_elem(&tracked, &tgid) != NULL;
}

/* ---- --by argN: keys from a start point's arguments ---- */

/* Reads `size` bytes at addr (the probed process's memory, or the kernel's) into the low bytes
 * of *v (little endian); < 0 when it could not (then *v is 0). */
static __always_inline long read_sized(__u64 *v, __u8 size, const void *addr, bool user) {
  *v = 0;
  if (size == 8) return user ? bpf_probe_read_user(v, 8, addr) : bpf_probe_read_kernel(v, 8, addr);
  if (size == 4) return user ? bpf_probe_read_user(v, 4, addr) : bpf_probe_read_kernel(v, 4, addr);
  if (size == 2) return user ? bpf_probe_read_user(v, 2, addr) : bpf_probe_read_kernel(v, 2, addr);
  return user ? bpf_probe_read_user(v, 1, addr) : bpf_probe_read_kernel(v, 1, addr);
}

static __always_inline long read_str(void *dst, __u32 size, const void *src, bool user) {
  return user ? bpf_probe_read_user_str(dst, size, src) : bpf_probe_read_kernel_str(dst, size, src);
}

/* The argument at byte `slot` of the key could not be read at addr (bpf/pmcprof.h). */
static __always_inline void mark_unreadable(struct pmcprof_key *key, __u32 slot, __u64 addr) {
  key->q[slot / 8] = 0;
  key->q[(slot + PMCPROF_KEY_ADDR_OFF) / 8] = addr;
  key->b[slot + PMCPROF_KEY_UNREADABLE_OFF] = PMCPROF_KEY_UNREADABLE;
}

/* Argument i of the key, from the 8 bytes of its register (or record field) `reg`: its value
 * cut to its size and sign-extended, or the string at that value. A read that fails marks
 * the argument unreadable, with its address (never a silent 0 or empty string). */
__attribute__((noinline)) int key_arg(const struct pmcprof_arg_spec *s, __u64 reg,
                                      struct pmcprof_key *key, __u32 i) {
  if (!s || !key) return 0;
  __u64 v = s->kind == PMCPROF_ARG_CONST ? s->val : reg;
  const bool user = s->user;
  const __u64 addr = reg + s->val;
  if (s->kind == PMCPROF_ARG_DEREF && read_sized(&v, s->size, (const void *)addr, user) < 0) {
    if (n_key_args == 1 || i == 0)
      mark_unreadable(key, 0, addr);
    else
      mark_unreadable(key, PMCPROF_KEY_SIZE / 2, addr);
    return 0;
  }
  switch (s->size) {
    case 1:
      v = s->is_signed ? (__u64)(__s64)(__s8)v : (__u8)v;
      break;
    case 2:
      v = s->is_signed ? (__u64)(__s64)(__s16)v : (__u16)v;
      break;
    case 4:
      v = s->is_signed ? (__u64)(__s64)(__s32)v : (__u32)v;
      break;
    default:
      break;
  }
  if (!s->is_string) {
    if (n_key_args == 1 || i == 0)
      key->q[0] = v;
    else
      key->q[PMCPROF_KEY_SIZE / 16] = v;
    return 0;
  }
  if (n_key_args == 1) {
    if (read_str(&key->b[0], PMCPROF_KEY_SIZE, (const void *)v, user) < 0)
      mark_unreadable(key, 0, v);
  } else if (i == 0) {
    if (read_str(&key->b[0], PMCPROF_KEY_SIZE / 2, (const void *)v, user) < 0)
      mark_unreadable(key, 0, v);
  } else if (read_str(&key->b[PMCPROF_KEY_SIZE / 2], PMCPROF_KEY_SIZE / 2, (const void *)v, user) <
             0) {
    mark_unreadable(key, PMCPROF_KEY_SIZE / 2, v);
  }
  return 0;
}

/* The key of a start point: its arguments as its key spec (the slot in its cookie) says. */
static __always_inline void capture_key(void *ctx, __u64 cookie, struct pmcprof_key *key) {
  if (!n_key_args) return;
  for (__u32 q = 0; q < PMCPROF_KEY_SIZE / 8; q++) key->q[q] = 0;
  __u32 slot = (__u32)((cookie >> PMCPROF_COOKIE_SPEC_SHIFT) & PMCPROF_COOKIE_SPEC_MASK);
  if (slot == 0) return;
  slot -= 1;
  const struct pmcprof_key_spec *ks = bpf_map_lookup_elem(&key_specs, &slot);
  if (!ks) return;
#pragma unroll
  for (__u32 i = 0; i < PMCPROF_MAX_KEY_ARGS; i++) {
    if (i >= n_key_args) break;
    const struct pmcprof_arg_spec *s = &ks->arg[i];
    __u64 reg = 0, idx = 0;
    if (s->kind != PMCPROF_ARG_CONST)
      bpf_probe_read_kernel(&reg, sizeof(reg), (const char *)ctx + s->reg_off);
    if (s->kind == PMCPROF_ARG_DEREF && s->scale) {
      bpf_probe_read_kernel(&idx, sizeof(idx), (const char *)ctx + s->idx_off);
      reg += idx * s->scale;
    }
    key_arg(s, reg, key, i);
  }
}

/* ---- entry and exit ---- */

static __always_inline __u32 frame_index(__u32 i) {
  asm volatile("" : "+r"(i));
  return i & (PMCPROF_INLINE_FRAMES - 1);
}

/* The frame of `level` (< PMCPROF_MAX_DEPTH): in the thread's state below
 * PMCPROF_INLINE_FRAMES, else in `deep_frames`, made when `create` (NULL when it cannot be). */
static __always_inline struct frame *frame_at(struct thread_state *t, __u32 tid, __u32 level,
                                              bool create) {
  if (level < PMCPROF_INLINE_FRAMES) return &t->frames[frame_index(level)];
  struct deep_key k = {.tid = tid, .level = level};
  struct frame *f = bpf_map_lookup_elem(&deep_frames, &k);
  if (f || !create) return f;
  __u32 zero = 0;
  struct frame *z = bpf_map_lookup_elem(&zero_frame, &zero);
  if (!z || bpf_map_update_elem(&deep_frames, &k, z, BPF_NOEXIST) != 0) return NULL;
  if (level > t->deep) t->deep = level;
  return bpf_map_lookup_elem(&deep_frames, &k);
}

/* A frame whose call is over but which could not be taken off the stack yet (frames above it
 * are live: a region still open, or the calls a region's end ran inside), or whose program
 * image exec replaced: no exit matches its id, it comes off once it is on top, and nothing
 * counts for it again (no function has this id). */
#define PMCPROF_DEAD_FRAME (PMCPROF_MAX_FUNCS + 2)

/* Deep frames are walked by global functions (verified once each, on their own: a loop of
 * map lookups inlined into the entry and exit programs multiplied the verifier's paths past
 * its limit); the inline frames by short loops in place. */

/* The deep frame of (tid, level), or NULL. */
static __always_inline struct frame *deep_frame(__u32 tid, __u32 level) {
  struct deep_key k = {.tid = tid, .level = level};
  return bpf_map_lookup_elem(&deep_frames, &k);
}

/* The global functions walk at most a chunk of deep levels per call, and their callers call
 * them chunk by chunk: a loop of 240 map lookups in one function cost the verifier ~1,400
 * instructions per level (346,000 for the entry program). */
#define PMCPROF_DEEP_CHUNK 16
#define PMCPROF_DEEP_CHUNKS ((PMCPROF_MAX_DEPTH - PMCPROF_INLINE_FRAMES) / PMCPROF_DEEP_CHUNK)

/* Takes dead deep frames off the top (a chunk at most): the new depth. */
__attribute__((noinline)) __u32 pop_deep_dead(__u32 tid, __u32 depth) {
  for (__u32 k = 0; k < PMCPROF_DEEP_CHUNK; k++) {
    if (depth <= PMCPROF_INLINE_FRAMES || depth > PMCPROF_MAX_DEPTH) break;
    struct frame *f = deep_frame(tid, depth - 1);
    if (f && f->func_id != PMCPROF_DEAD_FRAME) break;
    depth--;
  }
  return depth;
}

/* Takes dead frames off the top of the stack. */
static __always_inline void pop_dead(struct thread_state *t, __u32 tid) {
  for (__u32 c = 0; c < PMCPROF_DEEP_CHUNKS; c++) {
    const __u32 depth = t->depth;
    if (depth <= PMCPROF_INLINE_FRAMES) break;
    t->depth = pop_deep_dead(tid, depth);
    if (t->depth == depth) break;
  }
  for (__u32 k = 0; k < PMCPROF_INLINE_FRAMES; k++) {
    __u32 depth = t->depth;
    if (depth == 0 || depth > PMCPROF_INLINE_FRAMES) break;
    if (t->frames[frame_index(depth - 1)].func_id != PMCPROF_DEAD_FRAME) break;
    t->depth = depth - 1;
  }
}

/* Which stack a stack pointer is on: 1 on the thread's own (its kernel stack for a kernel
 * address, its user stack otherwise), 2 elsewhere (an IRQ or softirq stack in the kernel, the
 * sigaltstack a signal handler runs on in user space). Pointers on different stacks say
 * nothing about each other's frames. */
#define PMCPROF_KSTACK_SHIFT 14 /* THREAD_SIZE (16 KiB) of x86-64 and arm64 without KASAN */

/* 1 when v != 0, without a branch (BPF has no set-on-compare: each branch here would double
 * the paths the verifier walks in the loop that calls it). */
static __always_inline __u64 nonzero(__u64 v) { return (v | -v) >> 63; }

/* 1 when a < b (unsigned), without a branch: the borrow of a - b. */
static __always_inline __u64 below(__u64 a, __u64 b) {
  return ((~a & b) | ((~a | b) & (a - b))) >> 63;
}

/* The stack of sp: bit 1 kernel (else user), bit 0 not the thread's own. */
static __always_inline __u64 stack_of(__u64 sp, __u64 kstack, __u64 alt, __u64 alt_size) {
  const __u64 kernel = sp >> 63;
  const __u64 off_kstack = nonzero((sp - kstack) >> PMCPROF_KSTACK_SHIFT);
  const __u64 on_alt = below(sp - alt, alt_size);
  return (kernel << 1) | (kernel * off_kstack + (1 - kernel) * on_alt);
}

/* Frames the thread has left without returning: a new entry whose stack pointer is above
 * theirs (the stack grows down), or the same function entered again at the same stack pointer,
 * means they are gone (longjmp, exceptions). Popped and counted as abandoned, so a function
 * left by longjmp cannot fill the stack. (A tail call enters at the same stack pointer as its
 * caller, which is still live: only the same function there counts as gone.) Only pointers on
 * the same stack compare: a kprobe in softirq, a signal handler on its sigaltstack, a kernel
 * function inside a probed user function leave the frames below them alone. */
struct stack_where {
  __u64 sp, kstack, alt, alt_size, here;
  __u32 func_id;
  /* At the same stack pointer: 1, the entry was reached by a tail call from the frame there
   * (its return address is the uretprobe trampoline: that frame is live); 0, by a call (the
   * frame there is gone: left by longjmp, say); 2, not known (a kernel function). */
  __u32 tail_call;
};

/* Frame f (not dead) is gone, seen from an entry at w->sp (see pop_abandoned): on the same
 * stack as it, and from above it; at the same place, when the entry is a new call (not known:
 * when it is the same function). */
static __always_inline bool frame_gone(const struct frame *f, const struct stack_where *w) {
  const __u64 fsp = f->sp;
  if (fsp == 0 || stack_of(fsp, w->kstack, w->alt, w->alt_size) != w->here) return false;
  if (fsp != w->sp) return fsp < w->sp;
  return w->tail_call == 2 ? f->func_id == w->func_id : w->tail_call == 0;
}

/* The address a user function's entry returns to (uprobe context): its caller's, or the
 * uretprobe trampoline when a probed function reached it by a tail call. 0 when unknown. */
static __always_inline __u64 user_return_address(struct pt_regs *ctx, __u64 sp) {
#if defined(__TARGET_ARCH_arm64)
  (void)sp;
  return PT_REGS_RET_CORE(ctx); /* the link register */
#elif defined(__TARGET_ARCH_x86)
  (void)ctx;
  __u64 ra = 0;
  if (bpf_probe_read_user(&ra, sizeof(ra), (const void *)sp) != 0) return 0;
  return ra; /* at the entry, the top of the stack */
#else
  (void)ctx;
  (void)sp;
  return 0;
#endif
}

/* pop_abandoned's deep part, a chunk at most: the new depth. */
__attribute__((noinline)) __u32 pop_deep_abandoned(__u32 tid, __u32 depth,
                                                   const struct stack_where *w) {
  if (!w) return depth;
  for (__u32 k = 0; k < PMCPROF_DEEP_CHUNK; k++) {
    if (depth <= PMCPROF_INLINE_FRAMES || depth > PMCPROF_MAX_DEPTH) break;
    struct frame *f = deep_frame(tid, depth - 1);
    if (!f) break;
    const __u32 fid = f->func_id;
    if (fid != PMCPROF_DEAD_FRAME) {
      if (!frame_gone(f, w)) break;
      stat_inc(fid, STAT_ABANDONED);
    }
    depth--;
  }
  return depth;
}

__attribute__((noinline)) int pop_abandoned(struct thread_state *t, __u32 tid, __u64 sp, __u64 ra,
                                            __u32 func_id) {
  if (!t || sp == 0 || t->depth == 0) return 0;
  struct task_struct *task = bpf_get_current_task_btf();
  struct stack_where w = {.sp = sp, .func_id = func_id, .tail_call = 2};
  if (!(sp >> 63) && ra) {
    const __u64 trampoline = (__u64)BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
    if (trampoline) w.tail_call = ra == trampoline;
  }
  w.kstack = (__u64)BPF_CORE_READ(task, stack);
  w.alt = BPF_CORE_READ(task, sas_ss_sp);
  w.alt_size = BPF_CORE_READ(task, sas_ss_size);
  w.here = stack_of(sp, w.kstack, w.alt, w.alt_size);
  for (__u32 c = 0; c < PMCPROF_DEEP_CHUNKS; c++) {
    const __u32 depth = t->depth;
    if (depth <= PMCPROF_INLINE_FRAMES) break;
    t->depth = pop_deep_abandoned(tid, depth, &w);
    if (t->depth == depth) return 0; /* a live deep frame on top */
  }
  if (t->depth > PMCPROF_INLINE_FRAMES) return 0;
  for (__u32 k = 0; k < PMCPROF_INLINE_FRAMES; k++) {
    __u32 depth = t->depth;
    if (depth == 0 || depth > PMCPROF_INLINE_FRAMES) break;
    struct frame *f = &t->frames[frame_index(depth - 1)];
    const __u32 fid = f->func_id;
    if (fid != PMCPROF_DEAD_FRAME) {
      if (!frame_gone(f, &w)) break;
      stat_inc(fid, STAT_ABANDONED);
    }
    t->depth = depth - 1;
  }
  return 0;
}

/* pmcprof's own calibration calls: the ids past the run's own (calibration_id, then
 * calibration_outer_id). One compare for every call, before the readings: two, the second only
 * for real calls, made their window a few instructions longer than the calibration's, whose
 * cost is subtracted from them (10 on arm64's exact PMU). */
static __always_inline bool is_calibration(__u32 func_id) { return func_id >= calibration_id; }

/* A probed call of func_id's cost class is entered: every call in flight (and every frame this
 * entry makes) sees its probes' cost. Counted in halves of a pair: 2, or 1 for a call that
 * fires its entry probe only (too deep for a return probe). */
static __always_inline void count_nested(__u32 func_id, struct thread_state *t, __u32 halves) {
  /* Masked, not compared: Linux 6.1's verifier, after the calibration test on func_id, held
   * bounds for it with umin above umax and lost the pointer of a compared index. */
  const __u32 c = cost_class[func_id & (PMCPROF_COST_CLASS_SLOTS - 1)];
  if (c >= 1 && c <= PMCPROF_COST_CLASSES)
    t->nested[(c - 1) & (PMCPROF_COST_CLASSES - 1)] += halves;
}

/* A region's start or end, or a single probe, fired: every call in flight sees what that probe
 * costs (its cookie's class: half a pair, or a whole one for a return probe). Not counted,
 * these hits put one instruction each into the calls around them on arm64 (issue 22). */
static __always_inline void count_hit(struct thread_state *t, __u64 cookie) {
  const __u32 c = (cookie >> PMCPROF_COOKIE_HIT_SHIFT) & PMCPROF_COOKIE_HIT_MASK;
  if (c >= 1 && c <= PMCPROF_COST_CLASSES)
    t->nested[(c - 1) & (PMCPROF_COST_CLASSES - 1)] += cookie & PMCPROF_COOKIE_HIT_PAIR ? 2 : 1;
}

/* The kernel's limit of nested uretprobe instances per task (MAX_URETPROBE_DEPTH). */
#define PMCPROF_MAX_URETPROBE_DEPTH 64

static __always_inline bool uretprobes_full(void) {
  struct task_struct *task = bpf_get_current_task_btf();
  return BPF_CORE_READ(task, utask, depth) >= PMCPROF_MAX_URETPROBE_DEPTH;
}

/* Whether pop_abandoned may meet a frame at the entry's own stack pointer, where only the
 * return address tells a tail call (that frame live) from a call after a longjmp (it gone).
 * Not when the frame on top is live and above the entry (or not on a user stack): the popping
 * stops there. Reading the address costs a helper call (~100 instructions on arm64), and
 * nearly every entry is either the first call in flight or deeper than the one on top. */
static __always_inline bool needs_return_address(const struct thread_state *t, __u64 sp) {
  const __u32 depth = t->depth;
  if (depth == 0) return false;
  if (depth > PMCPROF_INLINE_FRAMES) return true; /* deep frames: not looked at here */
  const struct frame *f = &t->frames[frame_index(depth - 1)];
  return f->func_id == PMCPROF_DEAD_FRAME || (f->sp != 0 && f->sp <= sp);
}

/* sp: the stack pointer at the entry (0: none, a tracepoint or fentry); user_regs: a uprobe's
 * registers (NULL for other probes), to read the entry's return address from when needed. */
static __always_inline int on_entry(void *ctx, __u64 cookie, __u64 sp, struct pt_regs *user_regs) {
  const __u32 func_id = (__u32)cookie;
  const bool region = cookie & PMCPROF_COOKIE_REGION;
  if (region) sp = 0;
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32, tid = (__u32)id;
  /* pmcprof's own calls count only as calibration calls, and calibration calls only from
   * pmcprof (a calibration tracepoint fires for every process); no filter applies to them. */
  const bool calibration = is_calibration(func_id);
  if ((tgid == self_tgid) != calibration) return 0;
  if (!calibration && n_filter_cgroups && !in_filter_cgroups()) return 0;
  /* A thread with state already passed the process filter: skip that lookup per call. */
  struct thread_state *t = current_state(tid, false);
  if (!t) {
    if (!calibration && !wanted(tgid)) return 0;
    t = current_state(tid, true);
    if (!t) {
      stat_inc(func_id, STAT_STATE_FAILED);
      return 0;
    }
  }
  if (t->busy) {
    stat_inc(func_id, STAT_REENTERED);
    return 0;
  }
  acquire(t);
  absorb_missed_switch_in(t);
  const __u64 ra =
      user_regs && sp && needs_return_address(t, sp) ? user_return_address(user_regs, sp) : 0;
  pop_abandoned(t, tid, sp, ra, func_id);
  /* A user function whose return the kernel will not probe: past MAX_URETPROBE_DEPTH (64)
   * return instances in flight, the kernel omits the uretprobe, so no exit would come. Too
   * deep, and no frame (an exit of an outer call must not be paired with it); the calls in
   * flight see its entry probe only. */
  const bool no_return = sp && !(sp >> 63) && !region && uretprobes_full();
  if (region)
    count_hit(t, cookie); /* before its own frame: the region does not lose its start's cost */
  else
    count_nested(func_id, t, no_return ? 1 : 2);
  if (no_return) {
    stat_inc(func_id, STAT_DEPTH_OVERFLOW);
    release(t);
    return 0;
  }
  __u32 depth = t->depth;
  t->depth = depth + 1;
  if (depth >= PMCPROF_MAX_DEPTH) {
    stat_inc(func_id, STAT_DEPTH_OVERFLOW);
    release(t);
    return 0;
  }
  /* A deep frame that cannot be made: the level stays, unmeasured (its exit finds no frame). */
  struct frame *f = frame_at(t, tid, depth, true);
  if (!f) {
    stat_inc(func_id, STAT_STATE_FAILED);
    release(t);
    return 0;
  }
  __u32 cpu = bpf_get_smp_processor_id();
  f->func_id = func_id;
  f->entry_cpu = cpu;
  f->region = region;
  f->sp = sp;
  f->cgroup_id = need_cgroup_id ? bpf_get_current_cgroup_id() : 0;
  capture_key(ctx, cookie, &f->key);
  if (count_entries) stat_inc(func_id, STAT_ENTERED);
  /* Readings last, so the probe's own work before them is not charged to the call. */
  struct readings r;
  read_all(&r, cpu);
  __u64 now = bpf_ktime_get_ns();
  if (depth == 0) {
    /* First call in flight: V restarts at 0 on this CPU. */
    t->oncpu_acc = 0;
    for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) t->acc[i] = 0;
    segment_start(t, cpu, now, &r);
  } else {
    segment_fold(t, cpu, now, &r);
  }
  f->switches = t->switches;
  f->kswitches = kernel_switches();
  f->migrations = t->migrations;
  f->bad = t->bad;
  f->hidden = t->hidden;
  for (__u32 c = 0; c < PMCPROF_COST_CLASSES; c++) f->nested[c] = t->nested[c];
  f->read_errors = t->read_errors;
  f->wall_start = now;
  f->oncpu_start = t->oncpu_acc;
  f->folds = t->folds;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    f->v_start[i] = t->acc[i];
    f->gaps[i] = t->gaps[i];
    f->runs[i] = t->runs[i];
  }
  release(t);
  return 0;
}

/* The record's shape on the wire (the reader decodes the run's one shape): the call and its
 * n_events deltas (32 + 8 n bytes), after the caller with a --by that splits on it, the whole
 * record with a key (every delta slot, then the key). The fewer bytes a record takes, the more
 * the ring holds before it drops any. */
static __always_inline void emit(void *ctx, struct pmcprof_record *rec) {
  __u64 deltas = (__u64)n_events * sizeof(__u64);
  if (deltas > sizeof(rec->delta)) deltas = sizeof(rec->delta);
  long err;
  if (n_key_args)
    err = bpf_perf_event_output(ctx, &records, BPF_F_CURRENT_CPU, rec, sizeof(*rec));
  else if (send_caller)
    err = bpf_perf_event_output(ctx, &records, BPF_F_CURRENT_CPU, rec,
                                PMCPROF_RECORD_HEADER_SIZE + deltas);
  else
    err = bpf_perf_event_output(ctx, &records, BPF_F_CURRENT_CPU,
                                (char *)rec + PMCPROF_RECORD_CALL_OFFSET,
                                PMCPROF_RECORD_HEADER_SIZE - PMCPROF_RECORD_CALL_OFFSET + deltas);
  if (err != 0) stat_inc(rec->func_id, STAT_LOST);
}

/* A histogram index the 6.1 verifier can bound: 64-bit and clamped after a compiler barrier,
 * so the compare and the use are the same register. */
static __always_inline __u64 bucket_of(__u64 v) {
  __u64 b = pmcprof_hist_bucket(v);
  asm volatile("" : "+r"(b));
  if (b > PMCPROF_HIST_BUCKETS - 1) b = PMCPROF_HIST_BUCKETS - 1;
  return b;
}

/* A histogram of the call being summed: by function (k NULL), or under the keyed key k. */
static __always_inline struct hist *hist_of(__u32 func_id, __u32 h, struct pmcprof_agg_key *k) {
  if (!k) {
    __u32 key = func_id * n_hists + h;
    return bpf_map_lookup_elem(&hists, &key);
  }
  k->hist = (__u16)h;
  return lookup_or_insert(&hists_keyed, k, &zero_hist);
}

/* A per-CPU bucket wrapped: its carry grows by one (256 calls). Out of line: verified once,
 * not at every histogram the exit adds to. Keyed, the key is the one being summed (agg_key,
 * its histogram set by hist_of): a map value, which Linux 6.1 takes as a lookup key where it
 * refuses a global function's pointer argument. */
__attribute__((noinline)) int carry_add(__u32 func_id, __u32 h, __u32 bucket) {
  struct hist_carry *c;
  /* On the rodata: verified on its own (global; on Linux 6.1 even where no call reaches it),
   * this function must leave the maps a run does not create in code the verifier knows is
   * dead. */
  if (!(agg_mode & PMCPROF_AGG_KERNEL)) return 0;
  __u32 zero = 0;
  if (!agg_keyed) {
    __u32 key = func_id * n_hists + h;
    c = bpf_map_lookup_elem(&hist_carry, &key);
  } else {
    struct pmcprof_agg_key *k = bpf_map_lookup_elem(&agg_key, &zero);
    if (!k) return 0;
    c = lookup_or_insert(&hists_keyed_carry, k, &zero_carry);
  }
  if (!c || bucket >= PMCPROF_HIST_BUCKETS) {
    stat_inc(func_id, STAT_AGG_FULL); /* 256 calls out of the histogram: said, not hidden */
    return 0;
  }
  /* A fetching add (its result used): ordered after the wrap's store on every architecture
   * (arm64: ldaddal), so no reader sees the carry before the wrap. */
  return __sync_fetch_and_add(&c->bucket[bucket], 1) == ~0u;
}

static __always_inline void hist_add(__u32 func_id, __u32 h, struct pmcprof_agg_key *k, __u64 v) {
  struct hist *hp = hist_of(func_id, h, k);
  if (!hp) return;
  const __u64 b = bucket_of(v);
  const __u8 n = hp->bucket[b] + 1;
  hp->bucket[b] = n;
  if (n == 0) carry_add(func_id, h, (__u32)b); /* keyed: hist_of set k's histogram */
}

/* The sums of key k (hist 0), created when new. --by argN: a function keeps at most max_keys
 * keys; the calls of further keys are summed under its "other" key (k is changed to it). */
static __always_inline struct pmcprof_agg *keyed_agg(struct pmcprof_agg_key *k) {
  struct pmcprof_agg *a = bpf_map_lookup_elem(&aggs_keyed, k);
  if (a) return a;
  __u32 zero = 0;
  struct pmcprof_agg *z = bpf_map_lookup_elem(&zero_agg, &zero);
  if (!z) return NULL;
  const __u32 fid = k->func_id;
  if (max_keys && fid < PMCPROF_MAX_FUNCS) {
    if (__sync_fetch_and_add(&key_count[fid], 1) >= max_keys) {
      __sync_fetch_and_add(&key_count[fid], -1);
      k->other = 1;
      for (__u32 q = 0; q < PMCPROF_KEY_SIZE / 8; q++) k->key.q[q] = 0;
      a = bpf_map_lookup_elem(&aggs_keyed, k);
      if (a) return a;
      bpf_map_update_elem(&aggs_keyed, k, z, BPF_NOEXIST);
      return bpf_map_lookup_elem(&aggs_keyed, k);
    }
    /* Not added (another CPU added the same key first, or no room): not counted. */
    if (bpf_map_update_elem(&aggs_keyed, k, z, BPF_NOEXIST) != 0)
      __sync_fetch_and_add(&key_count[fid], -1);
    return bpf_map_lookup_elem(&aggs_keyed, k);
  }
  bpf_map_update_elem(&aggs_keyed, k, z, BPF_NOEXIST);
  return bpf_map_lookup_elem(&aggs_keyed, k);
}

__attribute__((noinline)) int aggregate(const struct pmcprof_record *rec) {
  /* Linux 6.1 verifies a global function even where no call reaches it (--aggregate stream):
   * on the rodata, the maps a stream-only run does not create are in dead code. */
  if (!(agg_mode & PMCPROF_AGG_KERNEL) || !rec) return 0;
  __u32 zero = 0;
  struct agg_guard *g = bpf_map_lookup_elem(&guard, &zero);
  if (!g) return 0;
  if (__sync_lock_test_and_set(&g->busy, 1)) {
    stat_inc(rec->func_id, STAT_AGG_COLLISIONS);
    return 0;
  }
  const __u32 fid = rec->func_id;
  struct pmcprof_agg_key *k = NULL;
  struct pmcprof_agg *a;
  if (agg_keyed) {
    k = bpf_map_lookup_elem(&agg_key, &zero);
    if (!k) goto out;
    k->func_id = fid;
    k->hist = 0;
    k->other = 0;
    k->cgroup_id = agg_by_cgroup ? rec->cgroup_id : 0;
    if (n_key_args) k->key = rec->key;
    a = keyed_agg(k);
  } else {
    a = bpf_map_lookup_elem(&aggs, &fid);
  }
  if (!a) {
    stat_inc(fid, STAT_AGG_FULL);
    goto out;
  }
  pmcprof_agg_add(a, rec, n_events);
  hist_add(fid, PMCPROF_HIST_WALL, k, pmcprof_nonneg(rec->wall_ns));
  if (rec->flags & PMCPROF_REC_NOT_COUNTED) goto out;
  hist_add(fid, PMCPROF_HIST_ONCPU, k, pmcprof_nonneg(rec->oncpu_ns));
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    /* A clock event's histogram is the on-CPU histogram: not kept twice. */
    if (clock_events & (1u << i)) continue;
    if (rec->measured & (1u << i)) hist_add(fid, event_hist[i], k, pmcprof_nonneg(rec->delta[i]));
  }
  for (__u32 m = 0; m < PMCPROF_MAX_METRICS; m++) {
    if (m >= n_metrics) break;
    __u64 v = 0;
    if (pmcprof_metric_add(a, rec, n_events, m, metrics[m].num, metrics[m].den, &v))
      hist_add(fid, metric_hist[m], k, v);
  }
out:
  asm volatile("" ::: "memory");
  g->busy = 0;
  return 0;
}

/* find_frame's deep part, a chunk of levels below `depth`: the level + 1 of the innermost
 * deep frame of func_id there, or 0. */
__attribute__((noinline)) __u32 find_deep(__u32 tid, __u32 func_id, __u32 depth) {
  for (__u32 k = 0; k < PMCPROF_DEEP_CHUNK; k++) {
    if (depth <= PMCPROF_INLINE_FRAMES || depth > PMCPROF_MAX_DEPTH) break;
    struct frame *f = deep_frame(tid, depth - 1);
    if (f && f->func_id == func_id) return depth;
    depth--;
  }
  return 0;
}

/* The innermost frame of func_id: its depth + 1, or 0 when no frame in the stack matches (an
 * exit without entry: the probe was attached mid-call; a region's end without its start). */
__attribute__((noinline)) __u32 find_frame(struct thread_state *t, __u32 tid, __u32 func_id,
                                           __u32 depth) {
  if (!t) return 0;
  for (__u32 c = 0; c < PMCPROF_DEEP_CHUNKS; c++) {
    if (depth <= PMCPROF_INLINE_FRAMES) break;
    __u32 level = find_deep(tid, func_id, depth);
    if (level) return level;
    depth = depth > PMCPROF_INLINE_FRAMES + PMCPROF_DEEP_CHUNK ? depth - PMCPROF_DEEP_CHUNK
                                                               : PMCPROF_INLINE_FRAMES;
  }
  if (depth > PMCPROF_INLINE_FRAMES) return 0;
  for (__u32 k = 0; k < PMCPROF_INLINE_FRAMES; k++) {
    if (k >= depth) break;
    __u32 j = depth - 1 - k;
    if (t->frames[frame_index(j)].func_id == func_id) return j + 1;
  }
  return 0;
}

/* Frames marked abandoned (dead, counted): the calls above a finished call (their return
 * never came), or at exec the frames of user code (uprobe calls, regions: they cannot outlive
 * their program image). */
enum abandon_what { ABANDON_CALLS, ABANDON_USER };

static __always_inline void abandon(struct frame *f, __u32 what) {
  if (f->func_id == PMCPROF_DEAD_FRAME) return;
  if (what == ABANDON_CALLS ? f->region != 0 : !(f->region || (f->sp != 0 && !(f->sp >> 63))))
    return;
  stat_inc(f->func_id, STAT_ABANDONED);
  f->func_id = PMCPROF_DEAD_FRAME;
}

/* The deep frames of a chunk of levels from `from` (below depth), abandoned as `what` says. */
__attribute__((noinline)) int abandon_deep(__u32 tid, __u32 from, __u32 depth, __u32 what) {
  for (__u32 k = 0; k < PMCPROF_DEEP_CHUNK; k++) {
    __u32 level = from + k;
    if (level >= depth || level >= PMCPROF_MAX_DEPTH) break;
    struct frame *f = deep_frame(tid, level);
    if (f) abandon(f, what);
  }
  return 0;
}

/* Takes frame j off the stack once its call is recorded. The frames above it: when j is a
 * call, a call above whose return never came (longjmp out of it, an exception, a missed
 * uretprobe) is abandoned; a region still open stays (regions overlap calls and each other).
 * When j is a region, its end ran inside whatever is above it: those calls are live and stay.
 * A frame that is over but has live frames above it is marked dead in place (no copying) and
 * comes off once it is on top. */
__attribute__((noinline)) int remove_frame(struct thread_state *t, __u32 tid, __u32 j,
                                           __u32 depth) {
  if (!t || j >= PMCPROF_MAX_DEPTH) return 0;
  struct frame *ended = j < PMCPROF_INLINE_FRAMES ? &t->frames[frame_index(j)] : deep_frame(tid, j);
  if (!ended) return 0;
  const __u32 ended_region = ended->region;
  ended->func_id = PMCPROF_DEAD_FRAME;
  if (!ended_region) {
    for (__u32 k = 0; k < PMCPROF_INLINE_FRAMES; k++) {
      __u32 i = j + 1 + k;
      if (i >= depth || i >= PMCPROF_INLINE_FRAMES) break;
      abandon(&t->frames[frame_index(i)], ABANDON_CALLS);
    }
    __u32 from = j + 1 > PMCPROF_INLINE_FRAMES ? j + 1 : PMCPROF_INLINE_FRAMES;
    for (__u32 c = 0; c < PMCPROF_DEEP_CHUNKS; c++) {
      if (from >= depth) break;
      abandon_deep(tid, from, depth, ABANDON_CALLS);
      from += PMCPROF_DEEP_CHUNK;
    }
  }
  pop_dead(t, tid);
  return 0;
}

/* What the probed calls entered inside a call (n per cost class, `halves` in all) added to its
 * quantity `slot`. (A call with none, the usual one, skips the classes.) */
static __always_inline __u64 nested_cost(const __u32 *n, __u32 halves, __u32 slot) {
  if (!halves) return 0;
  __u64 cost = 0; /* calibrated per pair of probes; n counts halves of pairs */
  for (__u32 c = 0; c < PMCPROF_COST_CLASSES; c++)
    cost += (__u64)n[c] * enclosed[c][slot < PMCPROF_BIAS_SLOTS ? slot : 0];
  return cost / 2;
}

/* ... and its noise (what the noise floor grows by with the probed calls inside): the tail per
 * call times the calls, per class, and the spread times the root of all the calls (`root`:
 * the spread of a sum grows as its root), the largest spread of any class standing for all. */
static __always_inline __u64 nested_noise(const __u32 *n, __u32 halves, __u32 root, __u32 slot) {
  if (!halves) return 0;
  __u64 tail = 0;
  for (__u32 c = 0; c < PMCPROF_COST_CLASSES; c++)
    tail += (__u64)n[c] * enclosed_tail[c][slot < PMCPROF_BIAS_SLOTS ? slot : 0];
  return tail / 2 + (__u64)root * enclosed_noise_max[slot < PMCPROF_BIAS_SLOTS ? slot : 0];
}

/* ceil(sqrt(calls)) of a number of probe halves: out of line, verified once (inline, the
 * verifier walked its ~100 instructions at every path through fill_deltas: +1,000). */
__attribute__((noinline)) __u32 root_of_calls(__u32 halves) {
  if (!halves) return 0;
  return pmcprof_sqrt_up(halves / 2 + (halves & 1));
}

/* The call's per-event deltas, and which events ran through it (measured) or in part, less
 * the probe's own bias when compensating: then signed (two's complement), never clamped, so
 * sums are not pushed up (a value below the floor is flagged instead). */
__attribute__((noinline)) int fill_deltas(const struct thread_state *t, const struct frame *f,
                                          struct pmcprof_record *rec) {
  if (!t || !f || !rec) return 0;
  __u32 fid = rec->func_id;
  if (fid > PMCPROF_MAX_FUNCS) return 0;
  const bool comp = compensate && !is_calibration(fid);
  /* Probed calls entered inside this one, per cost class, in halves of a probe pair (their
   * probes' cost is in it), and the root of their number of calls (branch-free: 0 for none). */
  __u32 n[PMCPROF_COST_CLASSES], halves = 0;
  for (__u32 c = 0; c < PMCPROF_COST_CLASSES; c++) {
    n[c] = t->nested[c] - f->nested[c];
    halves += n[c];
  }
  const __u32 root = root_of_calls(halves);
  if (comp) {
    rec->wall_ns -= bias[fid][PMCPROF_BIAS_WALL] + nested_cost(n, halves, PMCPROF_BIAS_WALL);
    if ((__s64)rec->wall_ns <
        (__s64)(noise[fid][PMCPROF_BIAS_WALL] + nested_noise(n, halves, root, PMCPROF_BIAS_WALL)))
      rec->flags |= PMCPROF_REC_WALL_UNDER_FLOOR;
    rec->oncpu_ns -= bias[fid][PMCPROF_BIAS_ONCPU] + nested_cost(n, halves, PMCPROF_BIAS_ONCPU);
    if ((__s64)rec->oncpu_ns <
        (__s64)(noise[fid][PMCPROF_BIAS_ONCPU] + nested_noise(n, halves, root, PMCPROF_BIAS_ONCPU)))
      rec->flags |= PMCPROF_REC_ONCPU_UNDER_FLOOR;
  }
  /* The masks are built in the record (volatile: read back from memory each time), not in
   * registers: a register's exact value per path would keep the verifier from merging paths
   * (2^16 of them with 8 events). */
  volatile __u8 *measured = &rec->measured, *ran = &rec->ran, *under = &rec->under_floor;
  *measured = 0;
  *ran = 0;
  *under = 0;
  /* A call is measured in pieces: from its entry to its exit, cut at every switch out and
   * every probed call inside it. An event scaled by enabled/running in every piece has its
   * own estimate of the call; one that did not run at all in some piece (multiplexed out for
   * all of it) has nothing for that piece, and its sum would come out low: it is left to
   * the estimate of the calls it never ran in (by on-CPU time), and only `ran` when it ran in
   * every piece. */
  const __u32 pieces = t->folds - f->folds;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    __u64 d = t->acc[i] - f->v_start[i];
    if (comp) {
      d -= bias[fid][i] + nested_cost(n, halves, i);
      if ((__s64)d < (__s64)(noise[fid][i] + nested_noise(n, halves, root, i))) *under |= 1u << i;
    }
    rec->delta[i] = d;
    if (t->gaps[i] == f->gaps[i]) *measured |= 1u << i;
    __u32 runs = t->runs[i] - f->runs[i];
    if (runs != 0 && runs == pieces) *ran |= 1u << i;
  }
  /* Some event did not run through the call (ran in part, or not at all): multiplexed. */
  if (*measured != (__u8)((1u << n_events) - 1)) rec->flags |= PMCPROF_REC_MULTIPLEXED;
  return 0;
}

__attribute__((noinline)) int keep_calibration_sample(const struct pmcprof_record *rec,
                                                      bool outer) {
  if (!rec) return 0;
  __u32 idx = __sync_fetch_and_add(outer ? &calib_outer_count : &calib_count, 1);
  if (idx >= PMCPROF_CALIB_CALLS) return 0;
  struct pmcprof_calib_sample *c = outer ? &calib_outer[idx] : &calib[idx];
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) c->delta[i] = rec->delta[i];
  c->wall_ns = rec->wall_ns;
  c->oncpu_ns = rec->oncpu_ns;
  c->flags = rec->flags;
  c->measured = rec->measured;
  return 0;
}

/* cookie: the exit's (a region's end carries its probe's cost class: count_hit). */
static __always_inline int on_exit(void *ctx, __u64 cookie) {
  const __u32 func_id = (__u32)cookie;
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32, tid = (__u32)id;
  const bool calibration = is_calibration(func_id);
  if ((tgid == self_tgid) != calibration) return 0;
  struct thread_state *t = current_state(tid, false);
  if (!t) {
    /* A thread with no state has nothing in flight: an exit (a region's end) without entry,
     * counted when the thread is one the run watches. */
    if (!calibration && wanted(tgid) && (!n_filter_cgroups || in_filter_cgroups()))
      stat_inc(func_id, STAT_UNMATCHED_EXIT);
    return 0;
  }
  if (t->busy) {
    stat_inc(func_id, STAT_REENTERED);
    return 0;
  }
  acquire(t);
  absorb_missed_switch_in(t);
  /* Readings first, so the probe's own work after them is not charged to the call. */
  __u64 now = bpf_ktime_get_ns();
  __u32 cpu = bpf_get_smp_processor_id();
  read_all(&t->rd, cpu);
  __u32 depth = t->depth;
  if (depth == 0) {
    stat_inc(func_id, STAT_UNMATCHED_EXIT);
    release(t);
    return 0;
  }
  /* An unmeasured frame on top (too deep, or its deep frame could not be made: counted at
   * entry) is this exit's. */
  if (depth > PMCPROF_MAX_DEPTH || !frame_at(t, tid, depth - 1, false)) {
    t->depth = depth - 1;
    release(t);
    return 0;
  }
  __u32 level = find_frame(t, tid, func_id, depth);
  if (level == 0) {
    stat_inc(func_id, STAT_UNMATCHED_EXIT);
    count_hit(t, cookie); /* a region's end without a start still costs the calls in flight */
    release(t);
    return 0;
  }
  struct frame *f = frame_at(t, tid, level - 1, false);
  if (!f) {
    release(t);
    return 0;
  }
  bool same_cpu = cpu == t->cpu;
  if (sched_hook || same_cpu) segment_fold(t, cpu, now, &t->rd);
  /* A switch since acquire() (uprobe programs run preemptible) may have come before the
   * readings: they would hold the other task's counts and the time off the CPU. Taken into
   * account before the flags, so the call is not counted (it was only after them). */
  asm volatile("" ::: "memory");
  absorb_disturbance(t);

  struct pmcprof_record rec;
  __builtin_memset(&rec, 0, PMCPROF_RECORD_HEADER_SIZE);
  rec.func_id = func_id;
  rec.pid = tgid;
  rec.tid = tid;
  rec.cpu = cpu;
  rec.cgroup_id = f->cgroup_id;
  rec.wall_ns = now > f->wall_start ? now - f->wall_start : 0;
  rec.oncpu_ns = t->oncpu_acc - f->oncpu_start;
  rec.n_events = n_events;
  __u32 flags = 0;
  if (t->switches != f->switches) flags |= PMCPROF_REC_SLEPT;
  if (t->migrations != f->migrations || cpu != f->entry_cpu) flags |= PMCPROF_REC_MIGRATED;
  if (t->read_errors != f->read_errors) flags |= PMCPROF_REC_READ_ERROR;
  /* Without the sched hook, readings on another CPU are another counter: not counted. */
  if (t->bad != f->bad || now < f->wall_start || (!sched_hook && !same_cpu))
    flags |= PMCPROF_REC_NOT_COUNTED;
  /* Without the sched hook no switch is seen: a call that slept is charged with what its CPU
   * ran meanwhile (documented, --no-sched-hook), not flagged as a switch the kernel hid. */
  if (sched_hook &&
      (t->hidden != f->hidden || kernel_switches() - f->kswitches != t->switches - f->switches))
    flags |= PMCPROF_REC_NOT_COUNTED | PMCPROF_REC_HIDDEN_SWITCH;
  rec.flags = flags;
  fill_deltas(t, f, &rec);
  if (n_key_args) rec.key = f->key;
  count_hit(t, cookie); /* after its own deltas: a region does not lose its end's cost */
  remove_frame(t, tid, level - 1, depth);
  if (count_entries) stat_inc(func_id, STAT_ENDED);
  release(t);

  if (calibration) {
    keep_calibration_sample(&rec, func_id == calibration_outer_id);
    return 0;
  }
  if (agg_mode & PMCPROF_AGG_KERNEL) aggregate(&rec);
  if (agg_mode & PMCPROF_AGG_STREAM) {
    if (need_comm) bpf_get_current_comm(rec.comm, sizeof(rec.comm));
    emit(ctx, &rec);
  }
  return 0;
}

/* A single probe's hit: a call of zero length, counted (and keyed) like a call, its events
 * exactly 0. It makes no frame; the calls in flight on its thread see its cost (count_hit). */
static __always_inline int on_hit(void *ctx, __u64 cookie) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32, tid = (__u32)id;
  if (tgid == self_tgid) return 0;
  if (n_filter_cgroups && !in_filter_cgroups()) return 0;
  if (!wanted(tgid)) return 0;
  if ((cookie >> PMCPROF_COOKIE_HIT_SHIFT) & PMCPROF_COOKIE_HIT_MASK) {
    struct thread_state *t = current_state(tid, false);
    /* Busy: the hit is inside one of the thread's own programs, which owns its state. Not
     * marked busy itself: a switch in that window would cost the calls in flight their
     * segment, and no other program touches `nested` but the thread's own. */
    if (t && t->depth > 0 && !t->busy) count_hit(t, cookie);
  }
  struct pmcprof_record rec;
  __builtin_memset(&rec, 0, PMCPROF_RECORD_KEY_OFFSET);
  rec.func_id = (__u32)cookie;
  rec.pid = tgid;
  rec.tid = tid;
  rec.cpu = bpf_get_smp_processor_id();
  rec.cgroup_id = need_cgroup_id ? bpf_get_current_cgroup_id() : 0;
  rec.n_events = n_events;
  rec.measured = rec.ran = (__u8)((1u << n_events) - 1);
  capture_key(ctx, cookie, &rec.key);
  if (agg_mode & PMCPROF_AGG_KERNEL) aggregate(&rec);
  if (agg_mode & PMCPROF_AGG_STREAM) {
    if (need_comm) bpf_get_current_comm(rec.comm, sizeof(rec.comm));
    emit(ctx, &rec);
  }
  return 0;
}

/* ---- attach points: the function id (and key slot, region flag) travel in the BPF cookie ---- */

SEC("kprobe")
int func_entry(struct pt_regs *ctx) {
  const __u64 sp = PT_REGS_SP(ctx);
  return on_entry(ctx, bpf_get_attach_cookie(ctx), sp, sp >> 63 ? NULL : ctx);
}

SEC("kretprobe")
int func_exit(struct pt_regs *ctx) { return on_exit(ctx, bpf_get_attach_cookie(ctx)); }

SEC("kprobe")
int probe_hit(struct pt_regs *ctx) { return on_hit(ctx, bpf_get_attach_cookie(ctx)); }

/* The same three for multi-uprobe links (Linux 6.6+): the loader gives them that attach type
 * (libbpf 1.1 has no section name for it), and they attach every uprobe of a binary at once. */
SEC("kprobe")
int func_entry_multi(struct pt_regs *ctx) {
  const __u64 sp = PT_REGS_SP(ctx);
  return on_entry(ctx, bpf_get_attach_cookie(ctx), sp, sp >> 63 ? NULL : ctx);
}

SEC("kprobe")
int func_exit_multi(struct pt_regs *ctx) { return on_exit(ctx, bpf_get_attach_cookie(ctx)); }

SEC("kprobe")
int probe_hit_multi(struct pt_regs *ctx) { return on_hit(ctx, bpf_get_attach_cookie(ctx)); }

SEC("tracepoint")
int syscall_entry(void *ctx) { return on_entry(ctx, bpf_get_attach_cookie(ctx), 0, NULL); }

SEC("tracepoint")
int syscall_exit(void *ctx) { return on_exit(ctx, bpf_get_attach_cookie(ctx)); }

SEC("tracepoint")
int tracepoint_hit(void *ctx) { return on_hit(ctx, bpf_get_attach_cookie(ctx)); }

/* Syscalls by number: one program at each of the raw sys_enter and sys_exit tracepoints, which
 * every syscall of the machine passes, looks the number up in syscall_ids. Beside a pair of
 * syscalls:sys_enter_NAME/sys_exit_NAME perf events per syscall this skips the perf
 * tracepoint's record (its arguments copied for every call), and attaching or detaching costs
 * no RCU grace period per syscall (a perf tracepoint's last close waits for one, ~30 ms here).
 * Every syscall pays the lookup; with any syscall tracepoint enabled every syscall already
 * takes the kernel's slow path that fires these. */
#if defined(__TARGET_ARCH_arm64)
struct pt_regs___syscallno {
  __u64 pstate;
  __s32 syscallno;
} __attribute__((preserve_access_index));
#define PMCPROF_PSR_MODE32_BIT 0x10 /* arm64's PSR_MODE32_BIT: an AArch32 task's registers */
#endif

#if defined(__TARGET_ARCH_x86)
struct thread_info___x86 {
  __u32 status;
} __attribute__((preserve_access_index));
#define PMCPROF_TS_COMPAT 0x0002 /* x86's TS_COMPAT: an ia32 syscall is running */
#endif

/* syscall_ids' entry of syscall `nr` (PMCPROF_COOKIE_SET | its probe cookie), 0 when it is not
 * probed. The loader writes an entry's cookie before its SET byte and clears that byte first
 * (BpfLink), so an entry with SET is whole. A 32-bit task's numbers are another table's: the
 * kernel's syscall tracepoints ignore its syscalls (trace_get_syscall_nr is -1 for them), and
 * so does this: x86 by TS_COMPAT (set for an ia32 syscall, also of a 64-bit process), arm64 by
 * the registers' mode bit (not TIF_32BIT, whose number is no ABI). */
static __always_inline __u64 syscall_entry_of(long nr, struct pt_regs *regs) {
  __u32 key = (__u32)nr;
  if (nr < 0 || nr >= PMCPROF_MAX_SYSCALL_NR) return 0;
  __u64 *c = bpf_map_lookup_elem(&syscall_ids, &key);
  if (!c) return 0;
  const __u64 entry = *c;
  if (!(entry & PMCPROF_COOKIE_SET)) return 0;
#if defined(__TARGET_ARCH_x86)
  struct task_struct *task = bpf_get_current_task_btf();
  if (bpf_core_field_exists(struct thread_info___x86, status) &&
      (((struct thread_info___x86 *)&task->thread_info)->status & PMCPROF_TS_COMPAT))
    return 0;
#elif defined(__TARGET_ARCH_arm64)
  if (((struct pt_regs___syscallno *)regs)->pstate & PMCPROF_PSR_MODE32_BIT) return 0;
#endif
  return entry;
}

/* The syscall's number at its exit, as the kernel's tracepoints read it (syscall_get_nr). */
static __always_inline long syscall_nr_at_exit(struct pt_regs *regs) {
#if defined(__TARGET_ARCH_arm64)
  return ((struct pt_regs___syscallno *)regs)->syscallno;
#else
  return regs->orig_ax;
#endif
}

SEC("tp_btf/sys_enter")
int BPF_PROG(syscall_entry_raw, struct pt_regs *regs, long id) {
  const __u64 c = syscall_entry_of(id, regs);
  return c ? on_entry(ctx, c & ~PMCPROF_COOKIE_SET, 0, NULL) : 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(syscall_exit_raw, struct pt_regs *regs, long ret) {
  const __u64 c = syscall_entry_of(syscall_nr_at_exit(regs), regs);
  return c ? on_exit(ctx, c & ~PMCPROF_COOKIE_SET) : 0;
}

/* fentry/fexit: loaded once against one target, then cloned per target by the loader with
 * that target's BTF id and linked with the function id as cookie. Autoload off unless the run
 * has kernel functions and the kernel allows fentry. */
SEC("fentry")
int BPF_PROG(func_fentry) { return on_entry(ctx, bpf_get_attach_cookie(ctx), 0, NULL); }

SEC("fexit")
int BPF_PROG(func_fexit) { return on_exit(ctx, bpf_get_attach_cookie(ctx)); }

/* ---- scheduler: suspend / resume in-flight calls, follow forks, forget exited processes ---- */

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  /* Runs at every context switch of every task: only a thread with a call in flight pays
   * for the clock and the counters. */
  __u32 cpu = bpf_get_smp_processor_id();
  struct thread_state *t = task_state(prev);
  if (t && t->depth > 0) {
    if (t->busy) {
      t->disturbed = 1; /* preempted inside an entry/exit program */
      t->switches++;    /* seen: not a switch the kernel hid (kernel_switches) */
    } else {
      acquire(t);
      absorb_missed_switch_in(t); /* switched out twice: the switch in between was missed */
      if (t->cpu != cpu) {
        t->bad++; /* a segment this hook did not start: flag what is in flight */
        t->seg_invalid = 1;
      } else if (!t->seg_invalid) {
        struct readings r;
        read_all(&r, cpu);
        segment_fold(t, cpu, bpf_ktime_get_ns(), &r);
      }
      t->switches++;
      hook_count(t, switch_events);
      release(t);
    }
    t->off_cpu = 1;
  }
  t = task_state(next);
  if (t && t->depth > 0) {
    const bool seen_out = t->off_cpu;
    t->off_cpu = 0;
    if (t->busy) {
      t->disturbed = 1; /* it resumes inside an entry/exit program, which restarts */
    } else {
      acquire(t);
      /* Switched in but never seen switched out: the time on the CPU since the last reading
       * is lost with the segment this starts. Not counted. */
      if (!seen_out) {
        t->hidden++;
        t->bad++;
      }
      if (t->cpu != cpu) {
        t->migrations++;
        hook_count(t, migration_events);
      }
      struct readings r;
      read_all(&r, cpu);
      segment_start(t, cpu, bpf_ktime_get_ns(), &r);
      release(t);
    }
  }
  return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child) {
  if (!follow_tgids) return 0;
  __u32 ptgid = BPF_CORE_READ(parent, tgid);
  if (!bpf_map_lookup_elem(&tracked, &ptgid)) return 0;
  __u32 ctgid = BPF_CORE_READ(child, tgid);
  if (ctgid == ptgid) return 0; /* a new thread: its process is tracked already */
  __u8 one = 1;
  if (bpf_map_update_elem(&tracked, &ctgid, &one, BPF_ANY) != 0)
    __sync_fetch_and_add(&untracked, 1);
  return 0;
}

/* Frames of user code (uprobe calls, regions) at exec: abandoned, marked dead in place; the
 * frames of kernel functions and syscalls in flight (exec's own) stay. */
__attribute__((noinline)) int drop_user_frames(struct thread_state *t, __u32 tid) {
  if (!t) return 0;
  for (__u32 i = 0; i < PMCPROF_INLINE_FRAMES; i++) {
    if (i >= t->depth) break;
    abandon(&t->frames[frame_index(i)], ABANDON_USER);
  }
  for (__u32 c = 0; c < PMCPROF_DEEP_CHUNKS; c++) {
    const __u32 from = PMCPROF_INLINE_FRAMES + c * PMCPROF_DEEP_CHUNK;
    if (from >= t->depth) break;
    abandon_deep(tid, from, t->depth, ABANDON_USER);
  }
  /* Levels past the measured depth were never recorded (counted as too deep at entry): they
   * go with the image when nothing below them stays. */
  if (t->depth > PMCPROF_MAX_DEPTH) t->depth = PMCPROF_MAX_DEPTH;
  pop_dead(t, tid);
  return 0;
}

/* At exec the old image's calls and regions are gone without a return: abandoned, so the new
 * program starts with an empty stack (else its calls would be "too deep" behind frames that
 * never end). Frames of kernel functions and syscalls (exec's own) stay. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) {
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct thread_state *t = current_state(tid, false);
  if (!t || t->depth == 0 || t->busy) return 0;
  acquire(t);
  drop_user_frames(t, tid);
  release(t);
  return 0;
}

/* The deep frames a thread made: a chunk of levels from `from`. */
__attribute__((noinline)) int delete_deep_frames(__u32 tid, __u32 from, __u32 deep) {
  for (__u32 k = 0; k < PMCPROF_DEEP_CHUNK; k++) {
    __u32 level = from + k;
    if (level > deep || level >= PMCPROF_MAX_DEPTH) break;
    struct deep_key k = {.tid = tid, .level = level};
    bpf_map_delete_elem(&deep_frames, &k);
  }
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_task_exit, struct task_struct *task) {
  /* Task storage goes with the task, but not the deep frames; the fallback hash and the
   * process filter are pruned here, so a reused id starts clean. */
  __u32 tid = BPF_CORE_READ(task, pid);
  struct thread_state *t = task_state(task);
  if (t && t->deep) {
    const __u32 deep = t->deep;
    for (__u32 c = 0; c < PMCPROF_DEEP_CHUNKS; c++) {
      const __u32 from = PMCPROF_INLINE_FRAMES + c * PMCPROF_DEEP_CHUNK;
      if (from > deep) break;
      delete_deep_frames(tid, from, deep);
    }
  }
  if (!use_task_storage) bpf_map_delete_elem(&threads_hash, &tid);
  if (follow_tgids && BPF_CORE_READ(task, signal, live.counter) == 0) {
    __u32 tgid = BPF_CORE_READ(task, tgid);
    bpf_map_delete_elem(&tracked, &tgid);
  }
  return 0;
}

// SPDX-License-Identifier: GPL-2.0
/* pmcprof's BPF side.
 *
 * Maps (the layout every mode shares):
 *   counters - PERF_EVENT_ARRAY of the user's counter fds, slot = event * n_cpus + cpu
 *   records  - PERF_EVENT_ARRAY of PERF_COUNT_SW_BPF_OUTPUT events, one per CPU: the per-call
 *              stream consumed by libbpf's perf_buffer.
 * Configuration comes through const volatile rodata set by the loader before load.
 *
 * Function mode: an entry program and an exit program per attach type (kprobe/uprobe,
 * syscall tracepoint, fentry/fexit) share on_entry()/on_exit(). Per thread, `threads` holds a
 * virtual counter V that only advances while the thread is on a CPU: V = acc + normalized
 * (read_now - segment_start). sched_switch folds the running segment into acc when the thread
 * leaves a CPU and takes fresh start readings when it comes back, on whatever CPU. A call's
 * delta is V(exit) - V(entry): its own on-CPU work, however often it slept or migrated, with
 * O(events) work per switch whatever the nesting depth. */
// clang-format off
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
// clang-format on

#include "pmcprof.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 n_events = 0;
const volatile __u32 n_cpus = 1;
const volatile __u32 agg_mode = PMCPROF_AGG_STREAM;
const volatile bool follow_tgids = false;  /* count only tgids in `tracked` (and their forks) */
const volatile bool sched_hook = true;     /* suspend/resume in-flight calls at sched_switch */
const volatile bool agg_by_cgroup = false; /* kernel aggregation keyed by cgroup too */
const volatile __u32 fentry_func_id = 0;
/* Bit i: event i cannot be multiplexed (a software event), so its enabled/running times
 * carry no information and the cheaper bpf_perf_event_read() does. */
const volatile __u32 exact_events = 0;
const volatile bool need_cgroup_id = true; /* records carry the cgroup (--by cgroup) */
const volatile bool need_comm = true;      /* records carry the command name (--by comm) */
const volatile __u32 n_cgroups = 0;        /* cgroup counting: watched cgroups */
const volatile __u32 n_filter_cgroups = 0;
/* function mode: count only calls in these (-G) */ /* fentry/fexit: the one function they
                                                       attach to */

struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
  __uint(max_entries, 1); /* resized by the loader: n_events * n_cpus */
} counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
  __uint(max_entries, 1); /* resized by the loader: n_cpus */
} records SEC(".maps");

struct frame {
  __u32 func_id;
  __u32 entry_cpu;
  __u64 wall_start;
  __u64 oncpu_start;
  __u64 cgroup_id;
  __u32 switches; /* thread's switch count at entry */
  __u32 migrations;
  __u32 not_counted;
  __u32 multiplexed;
  __u64 v_start[PMCPROF_MAX_EVENTS];
};

struct thread_state {
  __u32 depth;    /* may exceed PMCPROF_MAX_DEPTH: deeper frames are not measured */
  __u32 cpu;      /* CPU of the current segment */
  __u32 switches; /* times switched out while a call was in flight */
  __u32 migrations;
  __u32 not_counted; /* segments with a failed read or running == 0 */
  __u32 multiplexed; /* segments with running < enabled */
  __u64 seg_start_ns;
  __u64 oncpu_acc;
  __u64 acc[PMCPROF_MAX_EVENTS];
  __u64 seg_counter[PMCPROF_MAX_EVENTS];
  __u64 seg_enabled[PMCPROF_MAX_EVENTS];
  __u64 seg_running[PMCPROF_MAX_EVENTS];
  struct frame frames[PMCPROF_MAX_DEPTH];
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32); /* tid */
  __type(value, struct thread_state);
  __uint(max_entries, 65536);
} threads SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct thread_state);
  __uint(max_entries, 1);
} zero_state SEC(".maps"); /* a zeroed value to insert: too large for the BPF stack */

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u32); /* tgid */
  __type(value, __u8);
  __uint(max_entries, 65536);
} tracked SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __type(key, struct pmcprof_agg_key);
  __type(value, struct pmcprof_agg);
  __uint(max_entries, 1024);
} aggregates SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct pmcprof_agg);
  __uint(max_entries, 1);
} zero_agg SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct pmcprof_func_stats);
  __uint(max_entries, PMCPROF_MAX_FUNCS);
} func_stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct pmcprof_record);
  __uint(max_entries, 1);
} scratch_record SEC(".maps");

struct pmcprof_snapshot snapshot = {};

/* ---- per-cgroup counting (the BPF backend of -G / --for-each-cgroup) ----
 * perf's bperf-cgroup idea: counters stay one per CPU and event; at every context switch
 * (and when user space flushes) the delta since the last read on this CPU is charged to the
 * cgroup of the task that was running and to each of its ancestors that is watched. */
struct cgroup_count {
  __u64 counter;
  __u64 enabled;
  __u64 running;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32); /* cgroup index * n_events + event */
  __type(value, struct cgroup_count);
  __uint(max_entries, 1); /* resized by the loader */
} cgroup_counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u64);     /* cgroup id */
  __type(value, __u32);   /* its index */
  __uint(max_entries, 1); /* resized by the loader */
} cgroup_index SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32); /* event */
  __type(value, struct bpf_perf_event_value);
  __uint(max_entries, PMCPROF_MAX_EVENTS);
} cgroup_last SEC(".maps");

/* Function mode -G filter: a call counts when the task's cgroup is one of these or below
 * one: its ancestor at the filter cgroup's level is that cgroup. */
#define PMCPROF_MAX_FILTER_CGROUPS 8
const volatile __u64 filter_cgroup_ids[PMCPROF_MAX_FILTER_CGROUPS] = {};
const volatile __u32 filter_cgroup_levels[PMCPROF_MAX_FILTER_CGROUPS] = {};

/* This CPU's deltas since its last charge, per event (valid == 0: nothing to charge). */
struct cgroup_delta {
  struct cgroup_count d;
  __u64 valid;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32); /* event */
  __type(value, struct cgroup_delta);
  __uint(max_entries, PMCPROF_MAX_EVENTS);
} cgroup_deltas SEC(".maps");

/* Reads event i on this CPU, stores the delta since the last read (none on the first). */
static __always_inline void take_delta(__u32 i, __u32 cpu) {
  struct cgroup_delta *out = bpf_map_lookup_elem(&cgroup_deltas, &i);
  struct bpf_perf_event_value *last = bpf_map_lookup_elem(&cgroup_last, &i);
  if (!out || !last) return;
  out->valid = 0;
  struct bpf_perf_event_value v = {};
  if (bpf_perf_event_read_value(&counters, (__u64)i * n_cpus + cpu, &v, sizeof(v)) != 0) return;
  bool primed = last->enabled != 0;
  out->d.counter = v.counter - last->counter;
  out->d.enabled = v.enabled - last->enabled;
  out->d.running = v.running - last->running;
  out->valid = primed; /* the first read on a CPU only primes it */
  *last = v;
}

static __always_inline void add_delta(__u32 cgroup_idx, __u32 i) {
  struct cgroup_delta *d = bpf_map_lookup_elem(&cgroup_deltas, &i);
  if (!d || !d->valid) return;
  __u32 slot = cgroup_idx * n_events + i;
  struct cgroup_count *c = bpf_map_lookup_elem(&cgroup_counts, &slot);
  if (!c) return;
  c->counter += d->d.counter;
  c->enabled += d->d.enabled;
  c->running += d->d.running;
}

/* Charges this CPU's deltas to the running task's cgroup and every watched ancestor (root
 * is level 0). The walk carries no per-level state, so the verifier's paths merge at every
 * level however many cgroups are watched. */
static __always_inline void cgroup_charge(void) {
  __u32 cpu = bpf_get_smp_processor_id();
#pragma unroll
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++)
    if (i < n_events) take_delta(i, cpu);
  for (int level = 0; level < PMCPROF_MAX_CGROUP_DEPTH; level++) {
    __u64 id = bpf_get_current_ancestor_cgroup_id(level);
    if (!id) break;
    __u32 *idx = bpf_map_lookup_elem(&cgroup_index, &id);
    if (!idx) continue;
    __u32 cg = *idx;
#pragma unroll
    for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++)
      if (i < n_events) add_delta(cg, i);
  }
}

SEC("tp_btf/sched_switch")
int BPF_PROG(cgroup_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  cgroup_charge(); /* current is still prev here */
  return 0;
}

/* Run by user space on every CPU (BPF_PROG_TEST_RUN) before it reads: charges the time since
 * the last switch to whatever task is running there. */
SEC("raw_tp")
int cgroup_flush(void *ctx) {
  cgroup_charge();
  return 0;
}

/* Counter self-test: reads every configured event on the CPU it runs on. User space runs it
 * with BPF_PROG_TEST_RUN pinned to a CPU, proving that the fds in `counters` are readable
 * from BPF with bpf_perf_event_read_value — the read function mode does at every entry/exit. */
SEC("raw_tp")
int read_counters(void *ctx) {
  __u32 cpu = bpf_get_smp_processor_id();
  snapshot.cpu = cpu;
  snapshot.n_events = n_events;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    struct bpf_perf_event_value v = {};
    __u64 slot = (__u64)i * n_cpus + cpu;
    long err = bpf_perf_event_read_value(&counters, slot, &v, sizeof(v));
    snapshot.err[i] = err;
    snapshot.counter[i] = v.counter;
    snapshot.enabled[i] = v.enabled;
    snapshot.running[i] = v.running;
  }
  return 0;
}

/* ---- per-thread virtual counters ---- */

/* One reading of event i on this CPU. Exact events report running == enabled == 0. */
static __always_inline long read_event(__u32 i, __u32 cpu, struct bpf_perf_event_value *v) {
  __u64 slot = (__u64)i * n_cpus + cpu;
  if (exact_events & (1u << i)) {
    long c = (long)bpf_perf_event_read(&counters, slot);
    /* Errors are small negative numbers (-ENOENT, -EINVAL, ...); counts never get there. */
    if (c < 0 && c > -4096) return c;
    v->counter = (__u64)c;
    v->enabled = v->running = 0;
    return 0;
  }
  return bpf_perf_event_read_value(&counters, slot, v, sizeof(*v));
}

/* A global (non-static, not inlined) function is verified once on its own; inlined into the
 * unrolled per-event loops its branches would multiply the verifier's states. */
__attribute__((noinline)) __u64 normalize_delta(__u64 dc, __u64 de, __u64 dr) {
  return pmcprof_normalize(dc, de, dr);
}

/* Starts a segment: fresh readings of every event on this CPU. */
static __always_inline void segment_start(struct thread_state *t, __u32 cpu, __u64 now) {
  t->cpu = cpu;
  t->seg_start_ns = now;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    struct bpf_perf_event_value v = {};
    if (read_event(i, cpu, &v) != 0) {
      t->not_counted++;
      v.counter = v.enabled = v.running = 0;
    }
    t->seg_counter[i] = v.counter;
    t->seg_enabled[i] = v.enabled;
    t->seg_running[i] = v.running;
  }
}

/* Folds the running segment into acc (at switch-out, or to sample V at entry/exit). */
static __always_inline void segment_fold(struct thread_state *t, __u32 cpu, __u64 now) {
  bool nc = false, mux = false;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    struct bpf_perf_event_value v = {};
    if (read_event(i, cpu, &v) != 0) {
      nc = true;
      continue;
    }
    __u64 dc = v.counter - t->seg_counter[i];
    __u64 de = v.enabled - t->seg_enabled[i];
    __u64 dr = v.running - t->seg_running[i];
    if (dr == 0 && de > 0) nc = true;
    if (dr < de) mux = true;
    t->acc[i] += normalize_delta(dc, de, dr);
    t->seg_counter[i] = v.counter;
    t->seg_enabled[i] = v.enabled;
    t->seg_running[i] = v.running;
  }
  if (nc) t->not_counted++;
  if (mux) t->multiplexed++;
  t->oncpu_acc += now - t->seg_start_ns;
  t->seg_start_ns = now;
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

static __always_inline struct thread_state *thread_get(__u32 tid, bool create) {
  struct thread_state *t = bpf_map_lookup_elem(&threads, &tid);
  if (t || !create) return t;
  __u32 zero = 0;
  struct thread_state *z = bpf_map_lookup_elem(&zero_state, &zero);
  if (!z) return NULL;
  bpf_map_update_elem(&threads, &tid, z, BPF_NOEXIST);
  return bpf_map_lookup_elem(&threads, &tid);
}

static __always_inline struct pmcprof_func_stats *stats_of(__u32 func_id) {
  return bpf_map_lookup_elem(&func_stats, &func_id);
}

static __always_inline int on_entry(void *ctx, __u32 func_id) {
  __u64 id = bpf_get_current_pid_tgid();
  if (n_filter_cgroups && !in_filter_cgroups()) return 0;
  /* A thread with state already passed the process filter: skip that lookup per call. */
  struct thread_state *t = thread_get((__u32)id, false);
  if (!t) {
    if (!wanted(id >> 32)) return 0;
    t = thread_get((__u32)id, true);
    if (!t) return 0;
  }
  __u32 depth = t->depth;
  t->depth = depth + 1;
  if (depth >= PMCPROF_MAX_DEPTH) {
    struct pmcprof_func_stats *s = stats_of(func_id);
    if (s) s->depth_overflow++;
    return 0;
  }
  __u32 cpu = bpf_get_smp_processor_id();
  struct frame *f = &t->frames[depth];
  f->func_id = func_id;
  f->entry_cpu = cpu;
  f->cgroup_id = need_cgroup_id ? bpf_get_current_cgroup_id() : 0;
  /* Readings last, so the probe's own work before them is not charged to the call. */
  __u64 now = bpf_ktime_get_ns();
  if (depth == 0) {
    /* First call in flight: V restarts at 0 on this CPU. */
    t->oncpu_acc = 0;
    for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) t->acc[i] = 0;
    segment_start(t, cpu, now);
  } else {
    segment_fold(t, cpu, now);
  }
  f->switches = t->switches;
  f->migrations = t->migrations;
  f->not_counted = t->not_counted;
  f->multiplexed = t->multiplexed;
  f->wall_start = now;
  f->oncpu_start = t->oncpu_acc;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) f->v_start[i] = t->acc[i];
  return 0;
}

static __always_inline void emit(void *ctx, struct pmcprof_record *rec, __u32 func_id) {
  struct pmcprof_func_stats *s = stats_of(func_id);
  __u64 size = PMCPROF_RECORD_HEADER_SIZE + (__u64)n_events * sizeof(__u64);
  if (size > sizeof(*rec)) size = sizeof(*rec);
  long err = bpf_perf_event_output(ctx, &records, BPF_F_CURRENT_CPU, rec, size);
  if (!s) return;
  s->emitted++;
  if (err) s->lost++;
}

/* A histogram index the 6.1 verifier can bound: 64-bit (no zero-extended copy) and clamped
 * after a compiler barrier, so the compare and the use are the same register. */
static __always_inline __u64 bucket_of(__u64 v) {
  __u64 b = pmcprof_hist_bucket(v);
  asm volatile("" : "+r"(b));
  if (b > PMCPROF_HIST_BUCKETS - 1) b = PMCPROF_HIST_BUCKETS - 1;
  return b;
}

static __always_inline void aggregate(struct pmcprof_record *rec) {
  struct pmcprof_agg_key key = {.func_id = rec->func_id,
                                .cgroup_id = agg_by_cgroup ? rec->cgroup_id : 0};
  struct pmcprof_agg *a = bpf_map_lookup_elem(&aggregates, &key);
  if (!a) {
    __u32 zero = 0;
    struct pmcprof_agg *z = bpf_map_lookup_elem(&zero_agg, &zero);
    if (!z) return;
    bpf_map_update_elem(&aggregates, &key, z, BPF_NOEXIST);
    a = bpf_map_lookup_elem(&aggregates, &key);
    if (!a) return;
  }
  a->calls++;
  if (rec->flags & PMCPROF_REC_SLEPT) a->slept++;
  if (rec->flags & PMCPROF_REC_MIGRATED) a->migrated++;
  if (rec->flags & PMCPROF_REC_MULTIPLEXED) a->multiplexed++;
  a->wall_sum += rec->wall_ns;
  a->oncpu_sum += rec->oncpu_ns;
  a->wall_hist[bucket_of(rec->wall_ns)]++;
  a->oncpu_hist[bucket_of(rec->oncpu_ns)]++;
  if (rec->flags & PMCPROF_REC_NOT_COUNTED) {
    a->not_counted++;
    return;
  }
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    a->sum[i] += rec->delta[i];
    a->hist[i & (PMCPROF_MAX_EVENTS - 1)][bucket_of(rec->delta[i])]++;
  }
}

static __always_inline int on_exit(void *ctx, __u32 func_id) {
  __u64 id = bpf_get_current_pid_tgid();
  struct thread_state *t = thread_get((__u32)id, false);
  if (!t) return 0;
  __u32 depth = t->depth;
  if (depth == 0) {
    struct pmcprof_func_stats *s = stats_of(func_id);
    if (s) s->unmatched_exit++;
    return 0;
  }
  /* Readings first, so the probe's own work after them is not charged to the call. */
  __u64 now = bpf_ktime_get_ns();
  __u32 cpu = bpf_get_smp_processor_id();
  t->depth = depth - 1;
  if (depth > PMCPROF_MAX_DEPTH) return 0; /* an unmeasured deep frame (counted at entry) */
  __u32 slot = depth - 1;
  asm volatile("" : "+r"(slot)); /* keep the mask: 6.1's verifier does not link slot to depth */
  struct frame *f = &t->frames[slot & (PMCPROF_MAX_DEPTH - 1)];
  if (f->func_id != func_id) {
    /* A missed return (longjmp, exception, probe limit): drop the stale frame. */
    struct pmcprof_func_stats *s = stats_of(func_id);
    if (s) s->unmatched_exit++;
    return 0;
  }
  if (sched_hook || cpu == t->cpu) segment_fold(t, cpu, now);

  __u32 zero = 0;
  struct pmcprof_record *rec = bpf_map_lookup_elem(&scratch_record, &zero);
  if (!rec) return 0;
  rec->func_id = func_id;
  rec->pid = id >> 32;
  rec->tid = (__u32)id;
  rec->cpu = cpu;
  rec->cgroup_id = f->cgroup_id;
  rec->wall_ns = now - f->wall_start;
  rec->oncpu_ns = t->oncpu_acc - f->oncpu_start;
  rec->n_events = n_events;
  __u32 flags = 0;
  if (t->switches != f->switches) flags |= PMCPROF_REC_SLEPT;
  if (t->migrations != f->migrations || cpu != f->entry_cpu) flags |= PMCPROF_REC_MIGRATED;
  if (t->multiplexed != f->multiplexed) flags |= PMCPROF_REC_MULTIPLEXED;
  if (t->not_counted != f->not_counted) flags |= PMCPROF_REC_NOT_COUNTED;
  /* Without the sched hook, readings on another CPU are another counter: not counted. */
  if (!sched_hook && cpu != f->entry_cpu) flags |= PMCPROF_REC_NOT_COUNTED;
  rec->flags = flags;
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
    if (i >= n_events) break;
    rec->delta[i] = t->acc[i] - f->v_start[i];
  }
  if (agg_mode & PMCPROF_AGG_KERNEL) aggregate(rec);
  if (agg_mode & PMCPROF_AGG_STREAM) {
    if (need_comm) bpf_get_current_comm(rec->comm, sizeof(rec->comm));
    emit(ctx, rec, func_id);
  }
  return 0;
}

/* ---- attach points: the function id travels in the BPF cookie ---- */

SEC("kprobe")
int func_entry(struct pt_regs *ctx) { return on_entry(ctx, (__u32)bpf_get_attach_cookie(ctx)); }

SEC("kretprobe")
int func_exit(struct pt_regs *ctx) { return on_exit(ctx, (__u32)bpf_get_attach_cookie(ctx)); }

SEC("tracepoint")
int syscall_entry(void *ctx) { return on_entry(ctx, (__u32)bpf_get_attach_cookie(ctx)); }

SEC("tracepoint")
int syscall_exit(void *ctx) { return on_exit(ctx, (__u32)bpf_get_attach_cookie(ctx)); }

/* fentry/fexit carry no cookie on older kernels: one target per load, id from rodata.
 * Not loaded unless the fentry backend is chosen (autoload off by default). */
SEC("fentry")
int BPF_PROG(func_fentry) { return on_entry(ctx, fentry_func_id); }

SEC("fexit")
int BPF_PROG(func_fexit) { return on_exit(ctx, fentry_func_id); }

/* ---- scheduler: suspend / resume in-flight calls, follow forks, forget exited threads ---- */

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  /* Runs at every context switch of every task: only a thread with a call in flight pays
   * for the clock and the counters. */
  __u32 cpu = bpf_get_smp_processor_id();
  __u32 prev_tid = BPF_CORE_READ(prev, pid);
  __u32 next_tid = BPF_CORE_READ(next, pid);
  struct thread_state *t = bpf_map_lookup_elem(&threads, &prev_tid);
  if (t && t->depth > 0) {
    segment_fold(t, t->cpu == cpu ? cpu : t->cpu, bpf_ktime_get_ns());
    t->switches++;
  }
  t = bpf_map_lookup_elem(&threads, &next_tid);
  if (t && t->depth > 0) {
    if (t->cpu != cpu) t->migrations++;
    segment_start(t, cpu, bpf_ktime_get_ns());
  }
  return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child) {
  if (!follow_tgids) return 0;
  __u32 ptgid = BPF_CORE_READ(parent, tgid);
  if (!bpf_map_lookup_elem(&tracked, &ptgid)) return 0;
  __u32 ctgid = BPF_CORE_READ(child, tgid);
  __u8 one = 1;
  bpf_map_update_elem(&tracked, &ctgid, &one, BPF_ANY);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_task_exit, struct task_struct *task) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  bpf_map_delete_elem(&threads, &tid);
  return 0;
}

// SPDX-License-Identifier: GPL-2.0
/* Per-cgroup counting, the BPF backend of -G / --for-each-cgroup (perf's bperf-cgroup idea):
 * counters stay one per CPU and event; at every context switch (and when user space flushes
 * before it reads) the delta since the last read on this CPU is charged to the cgroup of the
 * task that was running and to each of its ancestors that is watched.
 *
 * A stretch is charged only when it is known to be one task's: the task switched out must be
 * the one this CPU last switched to. Some kernels run a switch without reporting it (seen on
 * VMs: the tracepoint misses a switch while the task's nr_switches rises), and the stretch
 * after it holds several tasks' time; such a stretch, and one whose counter read failed, is
 * set aside in `uncharged` and counted, so user space reports it instead of a cgroup
 * silently holding another's time.
 *
 * Maps: counters (the user's per-CPU counter fds, slot = event * n_cpus + cpu), cgroup_index
 * (watched cgroup id -> index), cgroup_counts (per CPU, index * n_events + event; the slot
 * after the last cgroup's is `uncharged`), and this CPU's last reading per event and last
 * task switched to. Every one is sized by the loader before load. */
// clang-format off
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
// clang-format on

#include "pmcprof.h"
#include "counters.bpf.h"

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

enum delta_state {
  DELTA_NONE,   /* nothing to charge: the first read on this CPU */
  DELTA_CHARGE, /* one task's stretch */
  DELTA_ASIDE,  /* a stretch that failed to read (with the one after it): set aside */
};

/* This CPU's last reading of each event, and the delta since the reading before it. */
struct cgroup_last {
  struct bpf_perf_event_value last;
  struct cgroup_count delta;
  __u32 state;  /* enum delta_state */
  __u32 failed; /* the last read failed: the next delta spans two stretches */
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32); /* event */
  __type(value, struct cgroup_last);
  __uint(max_entries, PMCPROF_MAX_EVENTS);
} cgroup_last SEC(".maps");

/* The pid + 1 of the task this CPU last switched to (0: none seen yet). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, __u64);
  __uint(max_entries, 1);
} cgroup_on_cpu SEC(".maps");

/* Failed counter reads, and stretches set aside after a switch the kernel did not report:
 * both are charged to no cgroup (`uncharged`), and user space says so. */
__u64 read_errors = 0;
__u64 unreported_switches = 0;

/* The index of the uncharged slot: the one after the last cgroup's (set by the loader). */
const volatile __u32 uncharged = 0;

/* Whether tracing programs may call bpf_get_current_ancestor_cgroup_id (not on Linux 5.10; the
 * loader probes it). Without it the ancestors' ids are read from the task's default-hierarchy
 * cgroup, whose ancestor_ids[] array (up to Linux 6.0) holds them by level. */
const volatile bool ancestor_helper = true;

/* struct cgroup before Linux 6.1 (CO-RE: only the fields read here, relocated at load). */
struct cgroup___ids {
  int level;
  __u64 ancestor_ids[];
} __attribute__((preserve_access_index));

/* The id of the running task's cgroup's ancestor at LEVEL (root: 0), 0 if it is not that deep. */
static __always_inline __u64 ancestor_cgroup_id(int level) {
  if (ancestor_helper) return bpf_get_current_ancestor_cgroup_id(level);
  if (!bpf_core_field_exists(struct cgroup___ids, ancestor_ids)) return 0;
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  struct cgroup___ids *cgrp = (void *)BPF_CORE_READ(task, cgroups, dfl_cgrp);
  if (!cgrp || level > BPF_CORE_READ(cgrp, level)) return 0;
  __u64 id = 0;
  const __u64 *ids = (const __u64 *)((const char *)cgrp +
                                     bpf_core_field_offset(struct cgroup___ids, ancestor_ids));
  if (bpf_probe_read_kernel(&id, sizeof(id), ids + level) != 0) return 0;
  return id;
}

/* bpf_perf_event_read_value's error for an empty slot: a CPU with no counters (-C). */
#define PMCPROF_ENOENT 2

/* Reads event i on this CPU, stores the delta since the last read (none on the first).
 * Returns false when this CPU has no counter for event i (nothing to read, not an error). */
static __always_inline bool take_delta(__u32 i, __u32 cpu) {
  struct cgroup_last *l = bpf_map_lookup_elem(&cgroup_last, &i);
  if (!l) return true;
  l->state = DELTA_NONE;
  struct bpf_perf_event_value v = {};
  long err = bpf_perf_event_read_value(&counters, (__u64)i * n_cpus + cpu, &v, sizeof(v));
  if (err == -PMCPROF_ENOENT) return false;
  if (err) {
    __sync_fetch_and_add(&read_errors, 1);
    l->failed = 1; /* the last reading stays: the next delta covers this stretch too */
    return true;
  }
  bool primed = l->last.enabled != 0;
  l->delta.counter = v.counter - l->last.counter;
  l->delta.enabled = v.enabled - l->last.enabled;
  l->delta.running = v.running - l->last.running;
  /* The first read on a CPU only primes it. */
  l->state = !primed ? DELTA_NONE : l->failed ? DELTA_ASIDE : DELTA_CHARGE;
  l->failed = 0;
  l->last = v;
  return true;
}

/* Adds event i's delta to cgroup slot CGROUP_IDX (or `uncharged`) when it is in STATE. */
static __always_inline void add_delta(__u32 cgroup_idx, __u32 i, __u32 state) {
  struct cgroup_last *l = bpf_map_lookup_elem(&cgroup_last, &i);
  if (!l || l->state != state) return;
  __u32 slot = cgroup_idx * n_events + i;
  struct cgroup_count *c = bpf_map_lookup_elem(&cgroup_counts, &slot);
  if (!c) return;
  c->counter += l->delta.counter;
  c->enabled += l->delta.enabled;
  c->running += l->delta.running;
}

/* Whether the stretch ending now is the running task's: it must be the task this CPU last
 * switched to. NEXT (pid + 1) becomes the one switched to; 0 for a flush, which switches
 * nothing (and does not start the checks: before the first switch is seen, a CPU may have
 * switched unseen since the hook attached). */
static __always_inline bool stretch_is_current(__u64 next) {
  __u32 key = 0;
  __u64 *on = bpf_map_lookup_elem(&cgroup_on_cpu, &key);
  if (!on) return true;
  __u64 running = (bpf_get_current_pid_tgid() & 0xffffffff) + 1;
  /* Nothing seen yet (before the first switch after attaching): charged, whose ever it is. */
  bool ok = *on == 0 || *on == running;
  if (next) *on = next;
  return ok;
}

/* Charges this CPU's deltas to the running task's cgroup and every watched ancestor (root
 * is level 0), or sets them aside (see the top). The walk carries no per-level state, so the
 * verifier's paths merge at every level however many cgroups are watched. Runs with
 * preemption off (sched_switch, or a test run), so the per-CPU values are never updated by
 * two programs at once. NEXT: as stretch_is_current. */
static __always_inline void cgroup_charge(__u64 next) {
  __u32 cpu = bpf_get_smp_processor_id();
  /* A CPU that is not counted (-C) charges nothing, and its switches are not checked. Every
   * event the loader put in the map has a counter on every counted CPU. */
  if (!take_delta(0, cpu)) return;
#pragma unroll
  for (__u32 i = 1; i < PMCPROF_MAX_EVENTS; i++)
    if (i < n_events) take_delta(i, cpu);
  if (!stretch_is_current(next)) {
    __sync_fetch_and_add(&unreported_switches, 1);
#pragma unroll
    for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++) {
      if (i >= n_events) break;
      add_delta(uncharged, i, DELTA_CHARGE);
      add_delta(uncharged, i, DELTA_ASIDE);
    }
    return;
  }
#pragma unroll
  for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++)
    if (i < n_events) add_delta(uncharged, i, DELTA_ASIDE);
  for (int level = 0; level < PMCPROF_MAX_CGROUP_DEPTH; level++) {
    __u64 id = ancestor_cgroup_id(level);
    if (!id) break;
    __u32 *idx = bpf_map_lookup_elem(&cgroup_index, &id);
    if (!idx) continue;
    __u32 cg = *idx;
#pragma unroll
    for (__u32 i = 0; i < PMCPROF_MAX_EVENTS; i++)
      if (i < n_events) add_delta(cg, i, DELTA_CHARGE);
  }
}

SEC("tp_btf/sched_switch")
int BPF_PROG(cgroup_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  cgroup_charge((__u64)next->pid + 1); /* current is still prev here */
  return 0;
}

/* Run by user space on every CPU (BPF_PROG_TEST_RUN) before it reads: charges the time since
 * the last switch to whatever task is running there. */
SEC("raw_tp")
int cgroup_flush(void *ctx) {
  cgroup_charge(0);
  return 0;
}

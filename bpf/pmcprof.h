/* Shared between the BPF programs (bpf/NAME.bpf.c) and the user-space loader.
 * Plain C, fixed-width types only: this header is compiled by clang -target bpf and by g++. */
#pragma once

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Events per run that the BPF side reads. Bounded so loops unroll and records stay small. */
#define PMCPROF_MAX_EVENTS 8

/* Layout of the counter PERF_EVENT_ARRAY ("counters"):
 * slot = event_index * n_cpus + cpu. bpf_perf_event_read_value() only reads counters that
 * belong to the current CPU, so each event has one slot per possible CPU. */

/* Flags carried by a per-call record. */
#define PMCPROF_REC_SLEPT 0x1u       /* the call was switched out at least once */
#define PMCPROF_REC_MIGRATED 0x2u    /* it resumed on another CPU */
#define PMCPROF_REC_MULTIPLEXED 0x4u /* at least one event ran less than enabled */
#define PMCPROF_REC_NOT_COUNTED 0x8u /* some event had running == 0 during the call */

/* One completed call, sent through the BPF-output PERF_EVENT_ARRAY ("records"). */
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
  __u64 delta[PMCPROF_MAX_EVENTS]; /* normalized: dcounter * denabled / drunning */
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

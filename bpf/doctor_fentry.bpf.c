// SPDX-License-Identifier: GPL-2.0
/* `pmcprof doctor`'s BPF probes: tiny programs loaded only to learn what the kernel accepts,
 * then destroyed. The loader enables one program at a time (bpf_program__set_autoload), so a
 * refused program cannot hide whether the others load.
 *   doctor_fentry       - fentry/vfs_read: the fentry capability itself.
 *   doctor_tp_btf       - tp_btf/sched_switch: the same program type (BPF_PROG_TYPE_TRACING) on a
 *                         tracepoint. When it loads but fentry does not, the refusal is specific
 *                         to fentry (function trampolines), not to BPF tracing as a whole.
 *   doctor_counter_read - raw_tp/sys_enter: reads a software counter of the calling task with
 *                         bpf_perf_event_read_value, the path every BPF mode of pmcprof relies on.
 *                         raw_tp needs no tracefs, so this check does not depend on tracefs. */
/* vmlinux.h defines the kernel types the libbpf headers use, so it must come first. */
// clang-format off
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
// clang-format on

char LICENSE[] SEC("license") = "GPL";

SEC("fentry/vfs_read")
int BPF_PROG(doctor_fentry) { return 0; }

SEC("tp_btf/sched_switch")
int BPF_PROG(doctor_tp_btf) { return 0; }

/* Set by the loader before load. */
const volatile __u32 target_tgid = 0;
const volatile long target_syscall = -1;

/* One slot per possible CPU, all holding the same per-task counter fd (resized by the loader). */
struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
  __uint(max_entries, 1);
} doctor_counters SEC(".maps");

/* Results, read back through the skeleton's bss. */
__u64 hits = 0;
long read_error = 0;
__u64 read_counter = 0;
__u64 read_enabled = 0;

SEC("raw_tp/sys_enter")
int BPF_PROG(doctor_counter_read, struct pt_regs* regs, long id) {
  if (id != target_syscall || (bpf_get_current_pid_tgid() >> 32) != target_tgid) return 0;
  struct bpf_perf_event_value value = {};
  long err = bpf_perf_event_read_value(&doctor_counters, BPF_F_CURRENT_CPU, &value, sizeof(value));
  __sync_fetch_and_add(&hits, 1);
  read_error = err;
  if (err == 0) {
    read_counter = value.counter;
    read_enabled = value.enabled;
  }
  return 0;
}

// SPDX-License-Identifier: GPL-2.0
/* Counter self-test: reads every configured event on the CPU it runs on. User space runs it
 * with BPF_PROG_TEST_RUN pinned to a CPU, proving that the fds in `counters` are readable from
 * BPF with bpf_perf_event_read_value — the read function mode does at every entry and exit. */
// clang-format off
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
// clang-format on

#include "pmcprof.h"
#include "counters.bpf.h"

struct pmcprof_snapshot snapshot = {};

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

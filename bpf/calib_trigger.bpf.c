// SPDX-License-Identifier: GPL-2.0
/* Makes the kernel call bpf_fentry_test1(), a function that does nothing: a test run of this
 * fentry program (BPF_PROG_TEST_RUN) calls it once. pmcprof probes that function with its own
 * kprobe or fentry programs before a run to measure what a probe pair adds to each call. */
// clang-format off
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
// clang-format on

char LICENSE[] SEC("license") = "GPL";

SEC("fentry/bpf_fentry_test1")
int BPF_PROG(calib_trigger) { return 0; }

/* The counters every pmcprof BPF object reads, and how they are laid out: included once by
 * each *.bpf.c (after vmlinux.h and bpf_helpers.h). The loader sets n_events and n_cpus and
 * sizes `counters` before load; the perf event fd of event i on CPU c is in slot
 * i * n_cpus + c. */
#pragma once

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 n_events = 0;
const volatile __u32 n_cpus = 1;

struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
  __uint(max_entries, 1); /* resized by the loader: n_events * n_cpus */
} counters SEC(".maps");

#!/usr/bin/env python3
"""How --func attaches uprobes, seen from the kernel's list of BPF links (bpftool link show).

Three functions of func_workload and three of libc (more than pmcprof's 4 user points for
perf-event uprobes), measured while func_workload burns:
- on a kernel with multi-uprobe links (Linux 6.6+: bpf_uprobe_multi_link_attach in
  /proc/kallsyms), exactly four new links of that type (12) exist while pmcprof runs: one per
  binary and program (entry, return), whatever the number of functions; no new perf-event link
  (type 7) carries a uprobe. Detaching them at once is what lets a run with many user functions
  end at once: one perf-event link per uprobe waits for an RCU grace period each when detached,
  serialized by the kernel (64 libc functions took 14 s to end);
- on an older kernel, no multi link;
- with two functions, perf-event uprobes on any kernel (their programs run with preemption
  off, so no call is lost to a preempted program): no multi link;
- either way burn_cpu is counted exactly (50 calls) and every link is gone once pmcprof ended.

Usage: test_func_uprobe_links.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import json
import subprocess
import sys
import tempfile
import time
import unittest
from collections import Counter

import pmcprof_testlib as t

LINK_UPROBE_MULTI, LINK_PERF_EVENT = 12, 7
CALLS = 50


def link_types():
    """Counter of link type -> number of BPF links in the kernel now."""
    out = t.run(["bpftool", "-j", "link", "show"]).stdout
    return Counter(int(link["type"]) if str(link["type"]).isdigit() else link["type"]
                   for link in json.loads(out or "[]"))


def kernel_has_uprobe_multi():
    with open("/proc/kallsyms") as f:
        return any(line.split()[2:3] == ["bpf_uprobe_multi_link_attach"] for line in f)


class UprobeLinks(unittest.TestCase):
    def test_many_functions_share_links(self):
        wl = t.workload("func_workload")
        self.check([f"{wl}:burn_cpu", f"{wl}:burn_and_sleep", f"{wl}:tiny_function",
                    "libc:getppid", "libc:getpid", "libc:getuid"], multi=kernel_has_uprobe_multi())

    def test_few_functions_perf_event_links(self):
        wl = t.workload("func_workload")
        self.check([f"{wl}:burn_cpu", "libc:getppid"], multi=False)

    def check(self, funcs, multi):
        wl = t.workload("func_workload")
        out_file = tempfile.NamedTemporaryFile(suffix=".json")
        args = [t.pmcprof(), "stat", "-v", "-j", "-o", out_file.name, "-e", "task-clock"]
        for f in funcs:
            args += ["--func", f]
        # The command waits a second before it burns: the links are listed meanwhile.
        args += ["--", "sh", "-c", f"sleep 1; exec {wl} burn {CALLS} 100"]
        before = link_types()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = ""
            while "per-thread state" not in line:  # -v: printed once every probe is attached
                line = proc.stderr.readline()
                self.assertTrue(line, "pmcprof ended before attaching")
            # The calibration's own probes (on pmcprof itself) go away in the background
            # meanwhile: poll until only the targets' remain, within the command's 1 s sleep.
            deadline = time.monotonic() + 0.8
            while True:
                during = link_types()
                if during[LINK_UPROBE_MULTI] - before[LINK_UPROBE_MULTI] <= (4 if multi else 0) or \
                        time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            _, err = proc.communicate(timeout=60)
        finally:
            t.stop(proc)
        after = link_types()
        new = {k: during[k] - before[k] for k in (LINK_UPROBE_MULTI, LINK_PERF_EVENT)}
        t.log(f"{len(funcs)} functions in 2 binaries: new links by type {new}; "
              f"multi-uprobe links in the kernel: {kernel_has_uprobe_multi()}")
        self.assertEqual(proc.returncode, 0, err)
        if multi:
            self.assertEqual(new[LINK_UPROBE_MULTI], 4, "one per binary and program")
            self.assertLessEqual(new[LINK_PERF_EVENT], 0, "no uprobe as a perf-event link")
        else:  # (perf-event uprobes: libbpf may attach them without a BPF link, by ioctl)
            self.assertEqual(new[LINK_UPROBE_MULTI], 0)
        self.assertLessEqual(after[LINK_UPROBE_MULTI], before[LINK_UPROBE_MULTI],
                             "links left behind")
        report = json.load(out_file)
        self.assertEqual(t.func_row(report, f"{wl}:burn_cpu")["calls"], CALLS)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes", "program:bpftool"), doc=__doc__))

#!/usr/bin/env python3
"""An event that neither ran nor was enabled through a call did not measure it (issue 22,
defect 5).

A CPU taken offline and back leaves the perf events pmcprof opened on it off: they read the
same count, enabled and running time forever after. Before the fix a call there had de == dr ==
0, "no gap", and counted as measured exactly: a made-up exact 0.

`pmcprof stat -e page-faults,minor-faults,context-switches --func syscall:getppid -- sh -c '...'`,
where the
command takes CPU 1 offline and back (chcpu), then calls getppid 200 times pinned to CPU 1 and
100 times pinned to CPU 0 (func_workload, taskset). The kernel aggregation counts every call
(300, and the shell's own); the events measured only those on CPU 0 (measured_calls, the total
estimated), never the 200 on CPU 1; context-switches, which the sched_switch hook counts
itself (no counter read), measured every call. The stream's BPF-output event on CPU 1 is left
off too:
the records of the calls there are lost, and counted as lost (never silently). CPU 1 is put
back online whatever happens. (pmcprof does not reopen a CPU's events after it comes back.)

Usage: test_func_cpu_offline.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import unittest

import pmcprof_testlib as t

ONLINE = "/sys/devices/system/cpu/cpu1/online"
ON_CPU1, ON_CPU0 = 200, 100


def set_online(value):
    with open(ONLINE, "w") as f:
        f.write(value)


class CpuOfflineTest(unittest.TestCase):
    def test_events_left_off_measure_nothing(self):
        wl = t.workload("func_workload")
        script = (f"chcpu -d 1 >/dev/null && chcpu -e 1 >/dev/null && "
                  f"taskset -c 1 {wl} getppid {ON_CPU1} && taskset -c 0 {wl} getppid {ON_CPU0}")
        try:
            s = t.func_stat(["-e", "page-faults,minor-faults,context-switches", "--aggregate", "both",
                             "--func", "syscall:getppid"], command=["sh", "-c", script])
        finally:
            set_online("1")
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual([w["calls"] for w in s.workload], [ON_CPU1, ON_CPU0], s.stdout)
        for agg in ("stream", "kernel"):
            row = t.func_row(t.report_of(s, agg), "syscall:getppid")
            t.log(f"[{agg}] {t.describe_func_row(row)}; " + ", ".join(
                f"{name}: {e['status']}, measured {e['measured_calls']}"
                for name, e in row["events"].items()))
            if agg == "kernel":
                self.assertGreaterEqual(row["calls"], ON_CPU1 + ON_CPU0)
            else:
                self.assertGreaterEqual(row["lost"], ON_CPU1, "the records on CPU 1: lost")
                self.assertGreaterEqual(row["calls"] + row["lost"], ON_CPU1 + ON_CPU0)
            off_cpu1 = row["calls"] - (ON_CPU1 if agg == "kernel" else 0)
            for name, e in row["events"].items():
                if name == "context-switches":  # the hook's own count: no counter left off
                    self.assertEqual(e["measured_calls"], row["calls"] - row["not_counted"],
                                     f"{agg} {name}")
                    self.assertFalse(e["estimated"], f"{agg} {name}")
                    continue
                # At most the calls not on CPU 1, and at least those on CPU 0 but the rare not
                # counted ones.
                self.assertLessEqual(e["measured_calls"], off_cpu1, f"{agg} {name}")
                self.assertGreaterEqual(e["measured_calls"], ON_CPU0 - row["not_counted"],
                                        f"{agg} {name}")
                if agg == "kernel":
                    self.assertTrue(e["estimated"], f"{agg} {name}: its total is an estimate")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "cpus:2", "program:chcpu", "program:taskset",
                              "syscall-tracepoints"), doc=__doc__))

#!/usr/bin/env python3
"""--func syscall:getppid through the sys_enter/sys_exit tracepoint pair, paired per thread.

`pmcprof stat -e task-clock --aggregate both --func syscall:getppid -- func_workload getppid
10000`, while a sibling func_workload (started by this test, outside pmcprof) calls getppid in a
loop of its own: only the command's calls count. In both the stream and the kernel report:
calls == 10000 exactly, backend "tracepoint", not_counted rare (testlib counted_share), lost == 0; task-clock per call
is small and positive (p50 between 10 ns and 1 ms), sum of task-clock == on-CPU time within 5%
(short calls: probe jitter is a larger share).

Usage: test_func_syscall.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import unittest

import pmcprof_testlib as t

N = 10000


class SyscallTest(unittest.TestCase):
    def test_getppid_exact(self):
        wl = t.workload("func_workload")
        sibling = t.spawn([wl, "getppid", "1000000000"])
        try:
            s = t.func_stat(["-e", "task-clock", "--aggregate", "both", "--func",
                             "syscall:getppid"], command=[wl, "getppid", str(N)])
            self.assertTrue(t.pid_alive(sibling.pid), "the busy sibling died early")
        finally:
            t.stop(sibling)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(s.workload[0]["calls"], N)
        for agg in ("stream", "kernel"):
            rep = t.report_of(s, agg)
            row = t.func_row(rep, "syscall:getppid")
            tc = t.func_event(row)
            t.log(f"[{agg}] {t.describe_func_row(row)}; task-clock mean {tc['mean']:.0f} ns")
            self.assertEqual(row["function"], "syscall:getppid")
            self.assertEqual(row["backend"], "tracepoint")
            self.assertEqual(row["calls"], N, f"{agg}: calls (the sibling's must not count)")
            t.counted_share(self, row, agg)
            self.assertEqual(row["lost"], 0)
            self.assertFalse(rep["partial"])
            self.assertEqual(tc["status"], "ok")
            self.assertGreater(tc["p50"], 10)
            self.assertLess(tc["p50"], 1e6)
            t.assert_within(self, tc["total"], row["oncpu_ns"], 0.05, "task-clock vs on-CPU time")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "syscall-tracepoints"), doc=__doc__))

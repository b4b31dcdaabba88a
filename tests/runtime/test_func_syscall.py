#!/usr/bin/env python3
"""--func syscall:NAME: by the syscall's number at the raw sys_enter/sys_exit tracepoints, or
through its own syscalls:sys_enter_NAME/sys_exit_NAME pair where arguments are read, paired per
thread.

`pmcprof stat -e task-clock --aggregate both --func syscall:getppid -- func_workload getppid
10000`, while a sibling func_workload (started by this test, outside pmcprof) calls getppid in a
loop of its own: only the command's calls count. In both the stream and the kernel report:
calls == 10000 exactly, backend "tracepoint", not_counted rare (testlib counted_share), lost == 0; task-clock per call
is small and positive (p50 between 10 ns and 1 ms), sum of task-clock == on-CPU time within 5%
(short calls: probe jitter is a larger share).

The same with --syscall-tracepoints (its own tracepoints), -v saying which way each run took.
Also: a 32-bit (ia32) program's syscalls are not the 64-bit ones of the same number (its getppid
is 64, which is semget's on x86-64): 1,000 of them count for neither syscall:semget nor
syscall:getppid, as perf's syscall tracepoints ignore them; and `--by arg1:str` on openat (its
tracepoints, which hold the arguments) gives each path its exact number of opens.

Usage: test_func_syscall.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import os
import platform
import sys
import tempfile
import unittest

import pmcprof_testlib as t

N = 10000
IA32_CALLS = 1000


class SyscallTest(unittest.TestCase):
    def test_getppid_exact(self):
        self.getppid_exact([], "syscall 110 at the raw sys_enter/sys_exit tracepoints"
                           if platform.machine() == "x86_64" else "raw sys_enter/sys_exit")

    def test_getppid_exact_through_its_tracepoints(self):
        self.getppid_exact(["--syscall-tracepoints"],
                           "(syscalls:sys_enter_getppid and sys_exit_getppid)")

    def getppid_exact(self, extra, how):
        wl = t.workload("func_workload")
        sibling = t.spawn([wl, "getppid", "1000000000"])
        try:
            s = t.func_stat(["-v", "-e", "task-clock", "--aggregate", "both", *extra, "--func",
                             "syscall:getppid"], command=[wl, "getppid", str(N)])
            self.assertTrue(t.pid_alive(sibling.pid), "the busy sibling died early")
        finally:
            t.stop(sibling)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertIn(how, s.stderr, "-v says how the syscall is probed")
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

    def test_ia32_syscalls_are_not_64_bit_ones(self):
        if platform.machine() != "x86_64":
            self.skipTest("ia32 syscalls exist on x86-64 only")
        with tempfile.TemporaryDirectory() as tmp:
            exe, why_not = t.ia32_getppid_program(tmp, IA32_CALLS)
            if not exe:
                self.skipTest(why_not)
            s = t.func_stat(["-e", "task-clock", "--func", "syscall:semget", "--func",
                             "syscall:getppid"], command=[exe])
        self.assertEqual(s.returncode, 0, s.stderr)
        rep = t.report_of(s, "kernel")
        for name in ("syscall:semget", "syscall:getppid"):
            row = t.func_row(rep, name)
            t.log(f"{name}: {t.describe_func_row(row)}")
            self.assertEqual(row["calls"], 0, f"{name}: the ia32 program's getppid calls")
            self.assertEqual(row["unmatched_exits"], 0, name)

    def test_keyed_by_path(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
            for p in (a, b):
                with open(p, "w") as f:
                    f.write("x\n")
            s = t.func_stat(["-e", "task-clock", "--aggregate", "both", "--func",
                             "syscall:openat", "--by", "arg1:str"], command=["cat", a, b, a])
        self.assertEqual(s.returncode, 0, s.stderr)
        for agg in ("stream", "kernel"):
            rep = t.report_of(s, agg)
            calls = {}
            for row in t.func_rows(rep, "syscall:openat"):
                self.assertEqual(row["backend"], "tracepoint")
                if all(isinstance(a, str) for a in row.get("args", [{}])):
                    calls[tuple(row["args"])] = row["calls"]
            t.log(f"[{agg}] {calls}")
            self.assertEqual(calls.get((a,)), 2, f"{agg}: opens of {a}")
            self.assertEqual(calls.get((b,)), 1, f"{agg}: opens of {b}")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "syscall-tracepoints"), doc=__doc__))

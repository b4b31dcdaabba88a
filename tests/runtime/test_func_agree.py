#!/usr/bin/env python3
"""Stream aggregation (per-call records summed in user space) and kernel aggregation (per-CPU
maps summed in BPF) agree on the same calls: one run with --aggregate both, no loss.

1. func_mix with three --func (burn_cpu, syscall:getppid, tiny_function), events task-clock,
   page-faults, context-switches.
2. func_workload sleep (calls that sleep: slept flags, wall >> on-CPU), with --by cgroup (the one
   key both aggregations have).
For every function row: calls, not_counted, slept, migrated, multiplexed, wall_ns, oncpu_ns are
equal; for wall, on-CPU and every event: status and total are equal, and p50/p90/p99 are equal
(the same log-linear histogram buckets on both sides), mean equal to 1e-9.

Usage: test_func_agree.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import unittest

import pmcprof_testlib as t

COUNTS = ("calls", "not_counted", "slept", "migrated", "multiplexed", "wall_ns", "oncpu_ns")


class AgreeTest(unittest.TestCase):
    def compare(self, s, key=None):
        stream, kernel = t.report_of(s, "stream"), t.report_of(s, "kernel")
        self.assertEqual(stream["lost"], 0, "the stream lost records: nothing to compare")
        self.assertFalse(stream["partial"])
        def rows(rep):
            return {(f["function"], f.get(key) if key else None): f for f in rep["functions"]}
        srows, krows = rows(stream), rows(kernel)
        self.assertEqual(sorted(srows), sorted(krows), "the same rows")
        for k, sf in srows.items():
            kf = krows[k]
            t.log(f"stream {t.describe_func_row(sf)}")
            t.log(f"kernel {t.describe_func_row(kf)}")
            self.assertGreater(sf["calls"], 0, k)
            for c in COUNTS:
                self.assertEqual(sf[c], kf[c], f"{k}: {c}")
            dists = {"wall": (sf["wall"], kf["wall"]), "oncpu": (sf["oncpu"], kf["oncpu"])}
            self.assertEqual(sorted(sf["events"]), sorted(kf["events"]))
            for e in sf["events"]:
                dists[e] = (sf["events"][e], kf["events"][e])
            for name, (a, b) in dists.items():
                what = f"{k} {name}"
                self.assertEqual(a["status"], b["status"], what)
                for field in ("total", "p50", "p90", "p99"):
                    self.assertEqual(a[field], b[field], f"{what} {field}")
                if a["mean"] is not None:
                    t.assert_within(self, a["mean"], b["mean"], 1e-9, f"{what} mean")
        return srows

    def test_three_functions(self):
        mix = t.workload("func_mix")
        funcs = [f"{mix}:burn_cpu", "syscall:getppid", f"{mix}:tiny_function"]
        args = ["-e", "task-clock,page-faults,context-switches", "--aggregate", "both"]
        for f in funcs:
            args += ["--func", f]
        s = t.func_stat(args, command=[mix, "30", "500", "5000", "3000"])
        self.assertEqual(s.returncode, 0, s.stderr)
        rows = self.compare(s)
        self.assertEqual({k[0]: r["calls"] for k, r in rows.items()},
                         {funcs[0]: 30, funcs[1]: 5000, funcs[2]: 3000})

    def test_sleeping_calls_by_cgroup(self):
        wl = t.workload("func_workload")
        func = f"{wl}:burn_and_sleep"
        s = t.func_stat(["-e", "task-clock", "--aggregate", "both", "--by", "cgroup",
                         "--func", func], command=[wl, "sleep", "20", "500", "2000"])
        self.assertEqual(s.returncode, 0, s.stderr)
        rows = self.compare(s, key="cgroup")
        self.assertEqual(sum(r["calls"] for r in rows.values()), 20)
        self.assertEqual(sum(r["slept"] for r in rows.values()), 20)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes", "syscall-tracepoints", "cgroup2"), doc=__doc__))

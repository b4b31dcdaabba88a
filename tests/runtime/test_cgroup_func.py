#!/usr/bin/env python3
"""Function mode per cgroup: --by cgroup splits calls exactly by cgroup, -G filters them.

Cgroups X, Y and X/sub under the cgroup v2 mount. `pmcprof stat -a -e task-clock --func
func_workload:burn_cpu` runs (held open until the workloads are done); once it has attached,
`func_workload burn N USEC` processes run one after the other: one calling burn_cpu N1 = 37
times in X, one N2 = 23 times in Y, one N3 = 11 times in X/sub and one N4 = 5 times in the
test's own cgroup (outside all of them). Then:
- `--by cgroup` (kernel aggregation, and the per-call stream with --aggregate both): the row
  whose cgroup is X has exactly N1 calls, Y exactly N2, X/sub exactly N3 (a call is keyed by
  the cgroup it ran in, not an ancestor); each row's cgroup_id is the directory's inode, and
  its task-clock total is within 10% + 0.5 ms of what the workload measured inside the calls;
- `-G X`: exactly N1 + N3 calls (X and everything below it), `-G Y`: exactly N2,
  `-G X,Y --by cgroup`: X N1, Y N2, X/sub N3 and nothing from outside;
- a cgroup removed before the report is written keeps its calls, under its last known path
  or `cgroup-id:ID`, with its id.

Usage: test_cgroup_func.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import os
import sys
import unittest

import pmcprof_testlib as t

N1, N2, N3, N4 = 37, 23, 11, 5
USEC = 200


class FuncCgroupTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fw = t.workload("func_workload")
        cls.func = f"{cls.fw}:burn_cpu"

    def run_calls(self, cg, args, plan, func=True):
        """Starts pmcprof ARGS, held; once attached runs func_workload in each cgroup of PLAN
        ({cgroup name or None for 'here': calls}) one after the other; returns (Stat,
        {name: workload JSON})."""
        r = t.BackgroundStat(["-a", "-e", "task-clock", "--func", self.func, *args], func=func,
                             hold=True)
        done = {}
        try:
            r.wait_ready()
            for name, n in plan.items():
                argv = [self.fw, "burn", str(n), str(USEC)]
                p = cg.spawn_in(name, argv) if name is not None else t.spawn(
                    argv, stdout=t.subprocess.PIPE, text=True)
                out, _ = p.communicate(timeout=30)
                self.assertEqual(p.returncode, 0)
                done[name] = t.json_lines(out)[0]
                self.assertEqual(done[name]["calls"], n)
            s = r.finish()
        finally:
            if r.proc.poll() is None:
                r.kill()
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertTrue(s.records, f"no report: {s.stderr}")
        return s, done

    def by_cgroup(self, report):
        rows = {}
        for f in t.func_rows(report, ":burn_cpu"):
            self.assertNotIn(f["cgroup"], rows, f"two rows for cgroup {f['cgroup']}")
            rows[f["cgroup"]] = f
        return rows

    def check_row(self, row, calls, measured, cg_abs, what):
        self.assertEqual(row["calls"], calls, f"{what}: calls")
        self.assertEqual(row["cgroup_id"], t.cgroup_id(cg_abs), f"{what}: cgroup_id")
        tc = t.func_event(row)["total"]
        # Held to the calls pmcprof counted (the rare call not counted is in calls only), to
        # the workload's own task-clock over its calls, and to their CPU time plus the steal
        # it measured in them (task-clock runs on through steal; beside busy loops one 208 us
        # burn read 1.08 ms, against CPU time alone).
        share = t.counted_share(self, row, what)
        t.assert_inside_cpu_time(self, tc, dict(measured, counted_share=share), what,
                                 rel=0.10, abs_tol=5e5)

    def test_by_cgroup_exact_counts(self):
        with t.TestCgroups("func") as cg:
            X, Y, S = cg.make("x"), cg.make("y"), cg.make("x/sub")
            s, done = self.run_calls(cg, ["--by", "cgroup", "--aggregate", "both"],
                                     {"x": N1, "y": N2, "x/sub": N3, None: N4})
            for agg in ("kernel", "stream"):
                rep = t.report_of(s, agg)
                self.assertEqual(rep.get("by"), "cgroup")
                rows = self.by_cgroup(rep)
                for f in rows.values():
                    t.log(f"[{agg}] cgroup {f['cgroup']} (id {f['cgroup_id']}): "
                          + t.describe_func_row(f))
                for name, path, n in (("x", X, N1), ("y", Y, N2), ("x/sub", S, N3)):
                    self.assertIn(path, rows, f"[{agg}] no row for {path}: {sorted(rows)}")
                    self.check_row(rows[path], n, done[name], cg.abs(name), f"[{agg}] {path}")
                others = sum(f["calls"] for p, f in rows.items() if p not in (X, Y, S))
                self.assertEqual(others, N4, f"[{agg}] calls outside the test cgroups")

    def test_filter(self):
        with t.TestCgroups("funcfilter") as cg:
            X, Y, S = cg.make("x"), cg.make("y"), cg.make("x/sub")
            plan = {"x": N1, "y": N2, "x/sub": N3, None: N4}
            s, _ = self.run_calls(cg, ["-G", X], plan)
            row = t.func_row(s.json, ":burn_cpu")
            t.log(f"-G {X}: " + t.describe_func_row(row))
            self.assertEqual(row["calls"], N1 + N3, "-G X counts X and below it, nothing else")

            s, _ = self.run_calls(cg, ["-G", Y], plan)
            row = t.func_row(s.json, ":burn_cpu")
            t.log(f"-G {Y}: " + t.describe_func_row(row))
            self.assertEqual(row["calls"], N2)

            s, done = self.run_calls(cg, ["-G", f"{X},{Y}", "--by", "cgroup"], plan)
            rows = self.by_cgroup(s.json)
            t.log("-G X,Y --by cgroup: " + ", ".join(f"{p}: {f['calls']}" for p, f in rows.items()))
            self.assertEqual({p: f["calls"] for p, f in rows.items()}, {X: N1, Y: N2, S: N3})

    def test_removed_cgroup_keeps_its_calls(self):
        with t.TestCgroups("funcgone") as cg:
            X = cg.make("x")
            gone_abs = cg.abs("gone")
            r = t.BackgroundStat(["-a", "-e", "task-clock", "--func", self.func, "--by", "cgroup"],
                                 func=True, hold=True)
            try:
                r.wait_ready()
                cg.make("gone")
                gone_id = t.cgroup_id(gone_abs)
                for name, n in (("x", N1), ("gone", N2)):
                    p = cg.spawn_in(name, [self.fw, "burn", str(n), str(USEC)])
                    p.communicate(timeout=30)
                    self.assertEqual(p.returncode, 0)
                cg.remove("gone")
                self.assertFalse(os.path.exists(gone_abs))
                s = r.finish()
            finally:
                if r.proc.poll() is None:
                    r.kill()
            self.assertEqual(s.returncode, 0, s.stderr)
            rows = self.by_cgroup(s.json)
            t.log("after removing a cgroup: " + ", ".join(
                f"{p} (id {f['cgroup_id']}): {f['calls']}" for p, f in rows.items()))
            self.assertEqual(rows[X]["calls"], N1)
            gone = [f for f in rows.values() if f["cgroup_id"] == gone_id]
            self.assertEqual(len(gone), 1, "the removed cgroup's row is missing")
            self.assertIn(gone[0]["cgroup"], (cg.rel("gone"), f"cgroup-id:{gone_id}"))
            self.assertEqual(gone[0]["calls"], N2)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "cgroup2", "uprobes"), doc=__doc__))

#!/usr/bin/env python3
"""A function that moves itself to another CPU inside the call keeps exact counts and its own
CPU time: the sched_switch hook folds what it counted on the first CPU and restarts on the next.

`pmcprof stat -e task-clock,context-switches,cpu-migrations --aggregate both --func
func_workload:burn_and_migrate -- func_workload migrate 20 2000`: each call burns 1000 us, pins itself to another allowed CPU
(sched_setaffinity), burns 1000 us more; the program prints how many calls really changed CPU
(sched_getcpu before and after) and its CPU time inside the calls. In both the stream and the
kernel report:
- calls == 20, not_counted rare (testlib counted_share; no call reads a counter of another CPU), lost == 0;
- migrated == the program's own count of calls that changed CPU (== 20);
- per counted call, cpu-migrations exactly 1 (the thread's own move, counted by the
  sched_switch hook) and context-switches at least 1 (the move is a switch out and back in);
- sum of task-clock within 3% of the program's CPU time in the calls, the steal time measured in
  the same calls allowed on top (pmcprof_testlib.assert_inside_cpu_time), and == on-CPU time
  within 0.5%.
Requires 2 online CPUs allowed to this process.

Usage: test_func_migrate.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import unittest

import pmcprof_testlib as t

N, USEC = 20, 2000


class MigrateTest(unittest.TestCase):
    @t.requires("cpus:2")  # to migrate between
    def test_migrating_calls(self):
        wl = t.workload("func_workload")
        func = f"{wl}:burn_and_migrate"
        s = t.func_stat(["-e", "task-clock,context-switches,cpu-migrations", "--aggregate", "both",
                         "--func", func],
                        command=[wl, "migrate", str(N), str(USEC)])
        self.assertEqual(s.returncode, 0, s.stderr)
        truth = s.workload[0]
        t.log(f"program: calls={truth['calls']} migrated={truth['migrated']} "
              f"inside_cpu={truth['inside_cpu_ns'] / 1e6:.3f} ms")
        self.assertEqual(truth["migrated"], N, "the workload failed to change CPU every call")
        for agg in ("stream", "kernel"):
            rep = t.report_of(s, agg)
            row = t.func_row(rep, func)
            tc = t.func_event(row)
            t.log(f"[{agg}] {t.describe_func_row(row)}")
            self.assertFalse(rep["partial"])
            self.assertEqual(row["calls"], N)
            truth["counted_share"] = t.counted_share(self, row, agg)
            self.assertEqual(row["lost"], 0)
            self.assertEqual(row["migrated"], truth["migrated"])
            t.assert_within(self, tc["total"], row["oncpu_ns"], 0.005,
                            f"{agg}: task-clock vs on-CPU time")
            t.assert_inside_cpu_time(self, tc["total"], truth, f"[{agg}]")
            counted = row["calls"] - row["not_counted"]
            mig, cs = t.func_event(row, "cpu-migrations"), t.func_event(row, "context-switches")
            t.log(f"[{agg}] cpu-migrations {mig}; context-switches {cs}")
            self.assertEqual((mig["min"], mig["max"], mig["total"]), (1, 1, counted),
                             f"{agg}: one migration in every counted call")
            self.assertGreaterEqual(cs["min"], 1, f"{agg}: every counted call switched out")

if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes"), doc=__doc__))

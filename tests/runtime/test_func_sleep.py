#!/usr/bin/env python3
"""A function that sleeps inside the call: the sched_switch hook keeps the sleep out of its
counters, wall time keeps it in; without the hook the documented wrong answer shows.

`func_workload sleep 20 2000 5000`: burn_and_sleep burns 2000 us of thread CPU, then usleeps
5000 us, inside one call, 20 times; the program prints the CPU time it measured inside.
- With the hook (default): calls == 20, slept == 20 (every call was switched out), not_counted rare (testlib counted_share);
  sum of task-clock within 3% of the program's CPU time in the calls (the sleep is excluded; the
  steal time measured in the same calls is allowed on top, see
  pmcprof_testlib.assert_inside_cpu_time); task-clock == on-CPU time within 0.5%;
  wall >= 20 x 5000 us (the sleep is included) and wall >= on-CPU + 20 x 5000 us x 0.9.
- --no-sched-hook: per-CPU counters then count whatever the CPU did while the caller slept (or,
  if it woke on the other CPU, the call cannot be measured). Asserted: calls == 20, some counted,
  none flagged for a hidden switch, and the sleep shows up as task-clock (a counted call's mean
  > 1.5 x the CPU time measured inside a call).

Usage: test_func_sleep.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import unittest

import pmcprof_testlib as t

N, USEC, SLEEP_US = 20, 2000, 5000


class SleepTest(unittest.TestCase):
    def run_sleep(self, extra=()):
        wl = t.workload("func_workload")
        func = f"{wl}:burn_and_sleep"
        s = t.func_stat(["-e", "task-clock", *extra, "--func", func],
                        command=[wl, "sleep", str(N), str(USEC), str(SLEEP_US)])
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertTrue(s.workload, f"no workload line: {s.stdout!r}")
        row = t.func_row(s.json, func)
        truth = s.workload[0]
        tag = " ".join(extra) or "hook"
        t.log(f"[{tag}] {t.describe_func_row(row)}")
        t.log(f"[{tag}] program: inside_cpu={truth['inside_cpu_ns'] / 1e6:.3f} ms "
              f"wall={truth['wall_ns'] / 1e6:.3f} ms")
        self.assertEqual(row["calls"], N)
        self.assertEqual(truth["calls"], N)
        return row, truth

    def test_hook_excludes_sleep_from_counters_not_from_wall(self):
        row, truth = self.run_sleep()
        tc = t.func_event(row)
        self.assertEqual(row["slept"], N, "every call slept")
        share = truth["counted_share"] = t.counted_share(self, row, "[hook]")
        self.assertEqual(tc["status"], "ok")
        t.assert_within(self, tc["total"], row["oncpu_ns"], 0.005, "task-clock vs on-CPU time")
        self.assertGreaterEqual(row["wall_ns"], share * N * SLEEP_US * 1000,
                                "wall time must include the sleeps")
        self.assertGreaterEqual(row["wall_ns"] - row["oncpu_ns"],
                                0.9 * share * N * SLEEP_US * 1000, "the sleeps are off-CPU time")
        self.assertGreaterEqual(row["wall"]["p50"], SLEEP_US * 1000 * 0.75)
        t.log(f"wall/on-CPU = {row['wall_ns'] / row['oncpu_ns']:.2f}")
        t.assert_inside_cpu_time(self, tc["total"], truth, "[hook]")

    def test_no_sched_hook_shows_the_wrong_answer(self):
        row, truth = self.run_sleep(["--no-sched-hook"])
        tc = t.func_event(row)
        counted = row["calls"] - row["not_counted"]
        total = tc["total"] or 0
        t.log(f"--no-sched-hook: {counted} calls counted, task-clock {total / 1e6:.3f} ms vs "
              f"inside {truth['inside_cpu_ns'] / 1e6:.3f} ms; not counted {row['not_counted']}")
        # A call that woke on its own CPU is measured, and charged with its sleep (not flagged
        # as a switch the kernel hid: without the hook no switch is seen at all); one that woke
        # on the other CPU is not counted.
        self.assertEqual(row.get("not_counted_hidden_switch", 0), 0,
                         "without the hook, no call is flagged for a switch the kernel hid")
        self.assertGreater(counted, 0, "calls that return on their own CPU are counted")
        self.assertGreater(total / counted, 1.5 * truth["inside_cpu_ns"] / N,
                           "without the hook a counted call includes what its CPU ran while it slept")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes"), doc=__doc__))

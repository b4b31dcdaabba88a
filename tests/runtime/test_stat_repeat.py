#!/usr/bin/env python3
"""Repeated runs (-r N): mean and relative standard deviation of the mean, like perf stat.

- `-r 5 -e task-clock -j -- STEP` where STEP is a shell that execs `burn 20*k` on its k-th run
  (20, 40, 60, 80, 100 ms): the command ran 5 times (5 burn lines), "runs": 5, task-clock has a
  numeric "stddev_pct" and the report an "elapsed_stddev_pct". Against the runs' own task-clock
  (burn's counter on itself; pmcprof_testlib, "the workload's own task-clock"): the mean is
  their mean plus each run's shell start, exec and exit (TASK_EDGES_NS), and stddev_pct within
  10% (relative) of 100 * stdev(runs) / sqrt(5) / mean computed from them (~23% here), which
  checks perf's formula rather than just the field's presence.
- text output: "(5 runs)" in the header, "( +-" on the task-clock and elapsed lines.
- CSV: the column after the event name is the stddev, "N.NN%".

Usage: test_stat_repeat.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import math
import os
import statistics
import sys
import tempfile
import unittest

import pmcprof_testlib as t

RUNS = 5


def stepping_burn(counter_file):
    """A command that burns 20 ms more CPU on each run than on the one before."""
    # Shell built-ins only (no $(cat ...)): the one process that runs is the one that becomes
    # burn.
    return ["sh", "-c", f'n=0; [ -f "{counter_file}" ] && read n < "{counter_file}"; '
            f'n=$((n+1)); echo $n > "{counter_file}"; exec "{t.workload("burn")}" $((n*20))']


class RepeatTest(unittest.TestCase):
    def test_json_mean_and_stddev(self):
        with tempfile.TemporaryDirectory() as tmp:
            with t.Steal() as steal:
                s = t.stat(["-r", str(RUNS), "-e", "task-clock,context-switches"],
                           stepping_burn(os.path.join(tmp, "n")))
        self.assertEqual(s.returncode, 0, s.stderr)
        runs = [kv for kv in (t.parse_kv(l, "burn") for l in s.stdout.splitlines()
                              if l.startswith("burn "))]
        own = [t.own_task_clock(r) for r in runs]
        self.assertEqual(len(own), RUNS, f"the command ran {len(own)} times: {s.stdout!r}")
        tc = s.counter("task-clock")
        mean = statistics.mean(own)
        expected_pct = 100 * statistics.stdev(own) / math.sqrt(len(own)) / mean
        t.log(f"runs' own task-clock (ms): {[round(c / 1e6, 2) for c in own]}; mean "
              f"{mean / 1e6:.2f} ms, "
              f"stddev of the mean {expected_pct:.2f}%")
        t.log(f"pmcprof -r {RUNS}: task-clock {tc['value'] / 1e6:.2f} ms +- {tc.get('stddev_pct')}%, "
              f"runs {s.json.get('runs')}, elapsed {s.json['elapsed_ns'] / 1e6:.2f} ms "
              f"+- {s.json.get('elapsed_stddev_pct')}%")
        self.assertEqual(s.json["runs"], RUNS)
        self.assertIn("stddev_pct", tc)
        self.assertIsInstance(tc["stddev_pct"], (int, float))
        self.assertTrue(math.isfinite(tc["stddev_pct"]))
        self.assertIsInstance(s.json.get("elapsed_stddev_pct"), (int, float))
        # Bracketed by what each run measured: at least burn's own clock (opened after its
        # exec, so without sh's start-up and burn's loading: tens of milliseconds under load),
        # at most the process's CPU time (sh, then burn: one process) from its fork, which holds
        # the forked pmcprof's time before the exec the count starts at, plus the edges, steal
        # (in task-clock, not in CPU time) and the switches.
        whole = statistics.mean(r["process_cpu_ns"] + r["children_cpu_ns"] for r in runs)
        lo = mean * (1 - t.CLOCK_REL)
        hi = (max(whole, mean) * (1 + t.CLOCK_REL) + t.TASK_EDGES_NS + steal.allowance_ns() / RUNS
              + s.counter("context-switches")["value"] * t.SWITCH_NS)
        self.assertTrue(lo <= tc["value"] <= hi,
                        f"mean task-clock {tc['value'] / 1e6:.3f} ms outside the runs' own "
                        f"{mean / 1e6:.3f} ms (-{t.CLOCK_REL:.1%}) to their CPU time "
                        f"{whole / 1e6:.3f} ms (+edges, switches: {hi / 1e6:.3f} ms)")
        # The runs' spread is the workload's (20 ms steps); the edges add a near-constant to
        # each run, which moves the mean the percentage is of: relative to pmcprof's mean.
        expected_pct = 100 * statistics.stdev(own) / math.sqrt(len(own)) / tc["value"]
        t.assert_within(self, tc["stddev_pct"], expected_pct, 0.10, "task-clock stddev_pct")

    def test_text(self):
        s = t.stat(["-r", str(RUNS), "-e", "task-clock"], [t.workload("burn"), "20"], fmt="text")
        self.assertEqual(s.returncode, 0, s.stderr)
        t.log("text:\n" + s.text.rstrip())
        self.assertIn(f"({RUNS} runs)", s.text)
        line = [l for l in s.text.splitlines() if "task-clock" in l]
        self.assertEqual(len(line), 1, s.text)
        self.assertRegex(line[0], r"\( \+-\s*\d+\.\d\d% \)")
        self.assertRegex(s.text, r"seconds time elapsed\s+\( \+-\s*\d+\.\d\d% \)")

    def test_csv(self):
        s = t.stat(["-r", "3", "-e", "task-clock,page-faults", "-x", ","],
                   [t.workload("burn"), "20"], fmt="csv")
        self.assertEqual(s.returncode, 0, s.stderr)
        t.log("csv:\n" + s.text.rstrip())
        rows = [l.split(",") for l in s.text.splitlines() if l]
        self.assertEqual([r[2] for r in rows], ["task-clock", "page-faults"])
        for r in rows:
            self.assertRegex(r[3], r"^\d+\.\d\d%$", r)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root",), doc=__doc__))

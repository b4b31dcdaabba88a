#!/usr/bin/env python3
"""Repeated runs (-r N): mean and relative standard deviation of the mean, like perf stat.

- `-r 5 -e task-clock -j -- STEP` where STEP is a shell that execs `burn 20*k` on its k-th run
  (20, 40, 60, 80, 100 ms): the command ran 5 times (5 burn lines), "runs": 5, task-clock has a
  numeric "stddev_pct" and the report an "elapsed_stddev_pct". The mean is within 5% of the mean
  of the runs' own CPU times (CLOCK_PROCESS_CPUTIME_ID) and stddev_pct within 10% (relative) of
  100 * stdev(runs) / sqrt(5) / mean computed from those CPU times (~23% here), which checks
  perf's formula rather than just the field's presence.
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
    return ["sh", "-c", f'n=$(cat "{counter_file}" 2>/dev/null || echo 0); n=$((n+1)); '
            f'echo $n > "{counter_file}"; exec "{t.workload("burn")}" $((n*20))']


class RepeatTest(unittest.TestCase):
    def test_json_mean_and_stddev(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = t.stat(["-r", str(RUNS), "-e", "task-clock"],
                       stepping_burn(os.path.join(tmp, "n")))
        self.assertEqual(s.returncode, 0, s.stderr)
        runs = [kv for kv in (t.parse_kv(l, "burn") for l in s.stdout.splitlines()
                              if l.startswith("burn "))]
        cpu = [r["process_cpu_ns"] for r in runs]
        self.assertEqual(len(cpu), RUNS, f"the command ran {len(cpu)} times: {s.stdout!r}")
        tc = s.counter("task-clock")
        mean = statistics.mean(cpu)
        expected_pct = 100 * statistics.stdev(cpu) / math.sqrt(len(cpu)) / mean
        t.log(f"runs' CPU (ms): {[round(c / 1e6, 2) for c in cpu]}; mean {mean / 1e6:.2f} ms, "
              f"stddev of the mean {expected_pct:.2f}%")
        t.log(f"pmcprof -r {RUNS}: task-clock {tc['value'] / 1e6:.2f} ms +- {tc.get('stddev_pct')}%, "
              f"runs {s.json.get('runs')}, elapsed {s.json['elapsed_ns'] / 1e6:.2f} ms "
              f"+- {s.json.get('elapsed_stddev_pct')}%")
        self.assertEqual(s.json["runs"], RUNS)
        self.assertIn("stddev_pct", tc)
        self.assertIsInstance(tc["stddev_pct"], (int, float))
        self.assertTrue(math.isfinite(tc["stddev_pct"]))
        self.assertIsInstance(s.json.get("elapsed_stddev_pct"), (int, float))
        t.assert_within(self, tc["value"], mean, 0.05, "mean task-clock vs mean CPU of the runs")
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
    sys.exit(t.main(requires_root=True, doc=__doc__))

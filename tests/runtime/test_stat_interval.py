#!/usr/bin/env python3
"""Interval printing (-I MS): `pmcprof stat -a -I 100 --summary --timeout 1000 -e task-clock -j`.

- JSON: one compact line per interval ("type": "interval", "interval" = seconds since start,
  strictly increasing), then (--summary) exactly one "summary" line last. >= 8 interval records (10
  expected: a 1000 ms timeout / 100 ms). The interval task-clock values sum to the summary's
  total within 2% (only the sliver between the last tick and the stop is missing). Each
  interval's task-clock / its elapsed_ns ~= number of CPUs (within 10%: system-wide task-clock
  counts idle time too), and each elapsed_ns is 100 ms within 30%.
- With -A: every interval holds one row per online CPU with its "cpu".
- CSV (-x ,) and text: the interval lines start with the time column (seconds, 9 decimals),
  times increase; with --summary the CSV totals at the end say "summary" in that column, and
  without it (as perf) there are none; text prints the perf-style
  "#  time ... counts unit events" header.
- --interval-count N: exactly N intervals, then the run ends (before its --timeout).

Usage: test_stat_interval.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import json
import re
import sys
import unittest

import pmcprof_testlib as t

TIME = r"\d+\.\d{9}"


class IntervalTest(unittest.TestCase):
    def test_json_intervals_sum_to_summary(self):
        ncpu = t.nproc_online()
        s = t.stat(["-a", "-I", "100", "--summary", "--timeout", "1000", "-e", "task-clock"],
                   timeout=30)
        self.assertEqual(s.returncode, 0, s.stderr)
        lines = [l for l in s.text.splitlines() if l.strip()]
        recs = [json.loads(l) for l in lines]  # every line is one JSON object (NDJSON)
        intervals = [r for r in recs if r["type"] == "interval"]
        self.assertEqual(recs[-1]["type"], "summary", "the summary comes last")
        self.assertEqual(len(recs), len(intervals) + 1, [r["type"] for r in recs])
        summary = recs[-1]
        values = [t.find_counter(r, "task-clock")["value"] for r in intervals]
        total = t.find_counter(summary, "task-clock")["value"]
        t.log(f"{len(intervals)} intervals at {[round(r['interval'], 3) for r in intervals]}")
        t.log(f"interval task-clock (ms): {[round(v / 1e6, 2) for v in values]}")
        t.log(f"sum {sum(values) / 1e6:.3f} ms, summary {total / 1e6:.3f} ms "
              f"({100 * (sum(values) - total) / total:+.3f}%), summary elapsed "
              f"{summary['elapsed_ns'] / 1e6:.2f} ms")
        self.assertGreaterEqual(len(intervals), 8)
        for r in recs:
            self.assertEqual(r["schema"], "pmcprof/1")
        times = [r["interval"] for r in intervals]
        self.assertEqual(times, sorted(times))
        self.assertEqual(len(set(times)), len(times), "interval times repeat")
        self.assertNotIn("interval", summary)
        # The last record is the stretch between the last tick and the stop (it can be short),
        # so the intervals add up to the summary exactly, up to counter reads in between.
        t.assert_within(self, sum(values), total, 0.005, "sum of intervals vs summary")
        t.assert_within(self, summary["elapsed_ns"], 1e9, 0.10, "summary elapsed vs --timeout")
        self.assertLessEqual(intervals[-1]["elapsed_ns"], 130e6, "the final stretch")
        for r, v in zip(intervals[:-1], values):
            t.assert_within(self, r["elapsed_ns"], 100e6, 0.30, f"interval {r['interval']} length")
            t.assert_within(self, v / r["elapsed_ns"], ncpu, 0.10,
                            f"interval {r['interval']} task-clock/elapsed vs nproc")

    def test_json_per_cpu(self):
        cpus = t.online_cpus()
        s = t.stat(["-a", "-A", "-I", "100", "--summary", "--timeout", "350", "-e", "task-clock"],
                   timeout=30)
        self.assertEqual(s.returncode, 0, s.stderr)
        intervals = [r for r in s.records if r["type"] == "interval"]
        self.assertGreaterEqual(len(intervals), 2)
        for r in intervals + [s.json]:
            self.assertEqual(sorted(c["cpu"] for c in r["counters"]), cpus, r)
        t.log(f"-A: {len(intervals)} intervals x {len(cpus)} CPUs")

    def test_csv(self):
        s = t.stat(["-a", "-I", "100", "--summary", "--timeout", "450", "-e",
                    "task-clock,page-faults", "-x", ","], fmt="csv", timeout=30)
        self.assertEqual(s.returncode, 0, s.stderr)
        timed = [l.split(",") for l in s.text.splitlines() if re.match(TIME + ",", l)]
        t.log(f"csv: {len(timed)} timed lines, first {timed[:2]}")
        self.assertGreaterEqual(len(timed), 6, s.text)  # >= 3 intervals x 2 events
        clocks = [f for f in timed if f[3] == "task-clock"]
        faults = [f for f in timed if f[3] == "page-faults"]
        self.assertEqual(len(clocks), len(faults))
        times = [float(f[0]) for f in clocks]
        self.assertEqual(times, sorted(times))
        for f in clocks:
            self.assertEqual(f[2], "msec")
            self.assertGreater(float(f[1]), 0)
        for f in faults:
            self.assertRegex(f[1], r"^\d+$")
        # Whatever is not an interval line is the final totals, tagged "summary" in the time
        # column so a reader of the stream can tell them apart.
        rest = [l for l in s.text.splitlines() if l and not re.match(TIME + ",", l)]
        t.log(f"csv: non-interval lines {rest}")
        self.assertEqual(len(rest), 2, s.text)
        for l in rest:
            self.assertTrue(l.startswith("summary,"), l)

    def test_text(self):
        s = t.stat(["-a", "-I", "100", "--timeout", "450", "-e", "task-clock"], fmt="text",
                   timeout=30)
        self.assertEqual(s.returncode, 0, s.stderr)
        lines = s.text.splitlines()
        header = [l for l in lines if l.startswith("#")]
        self.assertTrue(header and re.match(r"#\s+time\s+counts\s+unit\s+events", header[0]),
                        s.text)
        timed = [l for l in lines if re.match(r"\s*" + TIME + r"\s+[\d,.]+\s+msec\s+task-clock", l)]
        t.log(f"text: {len(timed)} timed lines, e.g. {timed[0].strip() if timed else None!r}")
        self.assertGreaterEqual(len(timed), 3, s.text)
        times = [float(l.split()[0]) for l in timed]
        self.assertEqual(times, sorted(times))


if __name__ == "__main__":
    sys.exit(t.main(requires=("root",), doc=__doc__))

#!/usr/bin/env python3
"""-I with --func: NDJSON interval records, then one summary; the intervals add up to it.

`pmcprof stat -e task-clock -I 200 -j --func func_workload:burn_cpu [--aggregate stream] --
func_workload burn 300 2000` (0.6 s of CPU in calls, 1 s or more on a loaded machine), with
kernel aggregation (interval = difference of the kernel sums) and with stream aggregation
(interval = the records of that interval):
- every line of the report is one JSON object; all but the last have "type": "interval", mode
  "function", strictly increasing "interval" seconds; the last is the "summary";
- at least 3 intervals;
- the summary counts every call: calls == 300;
- the intervals partition the run: sum of interval calls == summary calls, and sum of interval
  task-clock totals == the summary's total (to 1 ns per interval) -- the calls made between the
  last tick and the end of the run must be in some interval too, not only in the summary;
- the intervals' elapsed times add up to the summary's (the probes' teardown after the run is
  in none of them), and the last is no longer than the others.

Usage: test_func_intervals.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import json
import sys
import unittest

import pmcprof_testlib as t

N, USEC = 300, 2000


class IntervalsTest(unittest.TestCase):
    def run_intervals(self, aggregate):
        wl = t.workload("func_workload")
        func = f"{wl}:burn_cpu"
        s = t.func_stat(["-e", "task-clock", "-I", "200", "--aggregate", aggregate,
                         "--func", func], command=[wl, "burn", str(N), str(USEC)])
        self.assertEqual(s.returncode, 0, s.stderr)
        lines = [l for l in s.text.splitlines() if l.strip()]
        recs = [json.loads(l) for l in lines]  # NDJSON: one object per line
        self.assertEqual(recs[-1]["type"], "summary", "the summary comes last")
        intervals = recs[:-1]
        summary = recs[-1]
        for r in intervals:
            self.assertEqual(r["type"], "interval")
            self.assertEqual(r["mode"], "function")
            self.assertEqual(r["aggregation"], aggregate)
        times = [r["interval"] for r in intervals]
        self.assertEqual(times, sorted(times))
        self.assertEqual(len(set(times)), len(times))
        rows = [t.func_row(r, func) for r in intervals]
        calls = [r["calls"] for r in rows]
        totals = [t.func_event(r)["total"] or 0 for r in rows]
        srow = t.func_row(summary, func)
        t.log(f"[{aggregate}] {len(intervals)} intervals at {[round(x, 3) for x in times]}")
        t.log(f"[{aggregate}] interval calls {calls}: sum {sum(calls)}, summary {srow['calls']} "
              f"(summary elapsed {summary['elapsed_ns'] / 1e6:.1f} ms)")
        t.log(f"[{aggregate}] interval task-clock sum {sum(totals) / 1e6:.3f} ms, summary "
              f"{t.func_event(srow)['total'] / 1e6:.3f} ms")
        self.assertGreaterEqual(len(intervals), 3)
        self.assertEqual(srow["calls"], N)
        self.assertEqual(sum(calls), srow["calls"],
                         "calls after the last interval tick are missing from the intervals")
        t.assert_within(self, sum(totals), t.func_event(srow)["total"], 0, "task-clock",
                        abs_tol=len(intervals) + 1)
        # Issue 22 (12): the intervals cover the run, not the probes' teardown after it (the
        # last one read 631 ms for -I 500): their elapsed times add up to the summary's, to
        # the few microseconds between the run's end and the session's stop.
        spans = [r["elapsed_ns"] for r in intervals]
        t.log(f"[{aggregate}] interval elapsed ms {[round(x / 1e6, 1) for x in spans]}")
        t.assert_within(self, sum(spans), summary["elapsed_ns"], 0, "intervals vs elapsed",
                        abs_tol=2e6)
        self.assertLessEqual(spans[-1], max(spans[:-1]) + 2e6, "the last interval")

    def test_kernel(self):
        self.run_intervals("kernel")

    def test_stream(self):
        self.run_intervals("stream")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes"), doc=__doc__))

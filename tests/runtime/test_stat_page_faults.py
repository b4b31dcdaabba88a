#!/usr/bin/env python3
"""page-faults has a ground truth: `touch_pages 20000` maps 20000 fresh anonymous pages (huge
pages refused) and writes each once, so the process takes >= 20000 page faults.

- per task (`pmcprof stat -e page-faults -- touch_pages 20000`): N <= page-faults <= N + 1000
  (the rest is exec, the dynamic loader and libc: ~60 here) and status ok, unit "count";
- system-wide (-a): page-faults >= N, and <= the kernel's own global count (/proc/vmstat
  pgfault) over a window enclosing the run + 5% + 200 (other activity on the machine is counted
  too, so there is no tighter upper bound);
- text output prints the same count (thousands separators) and CSV the plain number.

Usage: test_stat_page_faults.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import re
import sys
import unittest

import pmcprof_testlib as t

N = 20000


class PageFaultsTest(unittest.TestCase):
    def cmd(self):
        return [t.workload("touch_pages"), str(N)]

    def check_workload_ran(self, s):
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(t.parse_kv(s.stdout, "touch_pages")["pages"], N)

    def test_per_task(self):
        s = t.stat(["-e", "page-faults,task-clock"], self.cmd())
        self.check_workload_ran(s)
        c = s.counter("page-faults")
        t.log(f"per-task: page-faults {c['value']} for {N} pages touched "
              f"(extra {c['value'] - N}), task-clock {s.value('task-clock') / 1e6:.2f} ms")
        self.assertEqual(c["status"], "ok")
        self.assertEqual(c["unit"], "count")
        self.assertEqual(c["raw_value"], c["value"], "a software counter is never scaled")
        self.assertGreaterEqual(c["value"], N)
        self.assertLessEqual(c["value"], N + 1000)
        self.assertEqual(s.json["exit_status"], 0)

    def test_system_wide(self):
        with t.KernelCounters() as k:
            s = t.stat(["-a", "-e", "page-faults"], self.cmd())
        self.check_workload_ran(s)
        v = s.value("page-faults")
        t.log(f"system-wide: page-faults {v} for {N} pages touched; kernel pgfault over the "
              f"run {k.page_faults}")
        self.assertEqual(s.json["target"], "system wide")
        self.assertGreaterEqual(v, N)
        self.assertLessEqual(v, 1.05 * k.page_faults + 200)

    def test_text_and_csv(self):
        text = t.stat(["-e", "page-faults"], self.cmd(), fmt="text")
        self.check_workload_ran(text)
        m = re.search(r"^\s*([\d,]+)\s+page-faults\b", text.text, re.M)
        self.assertIsNotNone(m, text.text)
        tv = int(m.group(1).replace(",", ""))
        csv = t.stat(["-e", "page-faults", "-x", ","], self.cmd(), fmt="csv")
        self.check_workload_ran(csv)
        rows = [l.split(",") for l in csv.text.splitlines() if ",page-faults," in l]
        self.assertEqual(len(rows), 1, csv.text)
        cv = int(rows[0][0])
        t.log(f"text: page-faults {tv}; csv: page-faults {cv}")
        self.assertGreaterEqual(tv, N)
        self.assertGreaterEqual(cv, N)
        self.assertLessEqual(tv, N + 1000)
        self.assertLessEqual(cv, N + 1000)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root",), doc=__doc__))

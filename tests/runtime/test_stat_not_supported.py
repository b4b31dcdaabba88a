#!/usr/bin/env python3
"""An event the machine cannot count is reported as not supported, never as 0, and does not
stop the others: `pmcprof stat -e cycles,task-clock -- true` exits 0 with
- JSON: cycles {"status": "not-supported", "value": null, "raw_value": null}, task-clock ok > 0;
- text: the cycles line shows `<not supported>` (like perf stat), no number;
- CSV: the cycles value field is `<not supported>`;
- the same per CPU with -a -A and averaged over -r 2.
The cycles assertions need a machine without a hardware PMU
(/sys/bus/event_source/devices/cpu absent); elsewhere they are skipped with a message and only
the task-clock half is checked.

Usage: test_stat_not_supported.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import re
import sys
import unittest

import pmcprof_testlib as t

EVENTS = "cycles,task-clock"


class NotSupportedTest(unittest.TestCase):
    def no_pmu(self):
        if t.has_hardware_pmu():
            t.log("this machine has a hardware PMU (/sys/bus/event_source/devices/cpu): "
                  "cycles is countable here, the not-supported assertions are skipped")
            return False
        return True

    def check_rows(self, counters, where):
        cycles = [c for c in counters if c["event"] == "cycles"]
        clocks = [c for c in counters if c["event"] == "task-clock"]
        self.assertTrue(cycles and clocks, f"{where}: rows {counters}")
        for c in clocks:
            self.assertEqual(c["status"], "ok", where)
            self.assertIsInstance(c["value"], (int, float), where)
            self.assertGreater(c["value"], 0, where)
        if self.no_pmu():
            for c in cycles:
                self.assertEqual(c["status"], "not-supported", f"{where}: {c}")
                self.assertIsNone(c["value"], f"{where}: not-supported must be null, not 0")
                self.assertIsNone(c["raw_value"], where)
                self.assertIsNone(c["running_pct"], where)
                self.assertIsNone(c["metric"], where)
        return cycles, clocks

    def test_json(self):
        s = t.stat(["-e", EVENTS], ["true"])
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(s.json["exit_status"], 0)
        cycles, clocks = self.check_rows(s.json["counters"], "per task")
        self.assertEqual([c["event"] for c in s.json["counters"]], ["cycles", "task-clock"],
                         "rows keep the order of -e")
        t.log(f"json: cycles status={cycles[0]['status']} value={cycles[0]['value']}; "
              f"task-clock {clocks[0]['value']} ns; stderr={s.stderr!r}")

    def test_text(self):
        s = t.stat(["-e", EVENTS], ["true"], fmt="text")
        self.assertEqual(s.returncode, 0, s.stderr)
        line = [l for l in s.text.splitlines() if re.search(r"\scycles\b", l)]
        self.assertEqual(len(line), 1, s.text)
        t.log(f"text: {line[0].strip()!r}")
        self.assertRegex(s.text, re.compile(r"^\s*[\d,.]+\s+msec\s+task-clock\b", re.M))
        if self.no_pmu():
            self.assertIn("<not supported>", line[0])
            self.assertNotRegex(line[0], r"^\s*\d", "cycles shown as a number")

    def test_csv(self):
        s = t.stat(["-e", EVENTS, "-x", ";"], ["true"], fmt="csv")
        self.assertEqual(s.returncode, 0, s.stderr)
        rows = {f[2]: f for f in (l.split(";") for l in s.text.splitlines() if l)}
        t.log(f"csv: {s.text.strip()!r}")
        self.assertIn("task-clock", rows)
        self.assertGreater(float(rows["task-clock"][0]), 0)
        if self.no_pmu():
            self.assertEqual(rows["cycles"][0], "<not supported>")

    def test_per_cpu(self):
        s = t.stat(["-a", "-A", "-e", EVENTS], ["true"])
        self.assertEqual(s.returncode, 0, s.stderr)
        cycles, clocks = self.check_rows(s.json["counters"], "-a -A")
        self.assertEqual(len(clocks), t.nproc_online())
        self.assertEqual(sorted(c["cpu"] for c in cycles), sorted(c["cpu"] for c in clocks))

    def test_repeat(self):
        s = t.stat(["-r", "2", "-e", EVENTS], ["true"])
        self.assertEqual(s.returncode, 0, s.stderr)
        self.check_rows(s.json["counters"], "-r 2")
        self.assertEqual(s.json["runs"], 2)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root",), doc=__doc__))

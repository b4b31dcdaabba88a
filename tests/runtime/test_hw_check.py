#!/usr/bin/env python3
"""scripts/hw-check on this machine, as a user runs it (with the build's pmcprof and
hw_workload, so it builds nothing):

- without a hardware PMU (pmcprof doctor's hardware_pmu check, and instructions:u reading
  <not supported>): exit 0 and two lines, the machine's and one saying there is no PMU here and
  nothing to check, with doctor's verdict; no table;
- with one: exit 0 and its table, every check `ok` or `skip` (the arm64 guest runs it there:
  guest.test_guest_arm64_hw_check);
- bad input: an unknown argument, a --workload that is not there: exit 2, one line naming what
  was wrong and a HINT.

Usage: test_hw_check.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import json
import os
import sys
import unittest

import pmcprof_testlib as t

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "hw-check")


def hw_check(*extra):
    return t.run(["sh", SCRIPT, "--pmcprof", t.pmcprof(), "--workload", t.workload("hw_workload"),
                  *extra], timeout=600)


class HwCheck(unittest.TestCase):
    def test_this_machine(self):
        doctor = json.loads(t.run_pmcprof(["doctor", "-j"]).stdout)
        pmu = any(c["name"] == "hardware_pmu" and c["available"] for c in doctor["capabilities"])
        p = hw_check()
        t.log(p.stdout + p.stderr)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        lines = p.stdout.strip().split("\n")
        self.assertRegex(lines[0], r"^hw-check: pmcprof \S+ on \S+, .+; Linux \S+; core PMUs: ")
        if not pmu:
            self.assertEqual(len(lines), 2, p.stdout)
            self.assertRegex(lines[1], r"^hw-check: no hardware PMU here \(instructions:u is "
                             r"<not supported>\): nothing to check\. pmcprof doctor: no PMU")
            self.assertIn(doctor["verdict"]["summary"], lines[1])
            return
        self.assertRegex(lines[1], r"^check\s+expected\s+measured\s+result")
        self.assertRegex(lines[-1], r"^\d+ checks: \d+ ok, 0 failed, \d+ skipped$")
        for line in lines[2:-1]:
            self.assertRegex(line, r"\s(ok|skip|note)\s", line)

    def test_bad_input(self):
        p = t.run(["sh", SCRIPT, "--frobnicate"], timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertRegex(p.stderr, r"^hw-check: unknown argument '--frobnicate'\nHINT: ")
        p = t.run(["sh", SCRIPT, "--pmcprof", t.pmcprof(), "--workload", "/nonexistent/hw"],
                  timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertRegex(p.stderr, r"^hw-check: no hw_workload at /nonexistent/hw\nHINT: ")
        self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "program:jq"), doc=__doc__))

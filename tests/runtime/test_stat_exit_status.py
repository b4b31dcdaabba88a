#!/usr/bin/env python3
"""pmcprof stat exits with its workload's status, like a shell (and perf stat):
`-- true` 0, `-- false` 1, `-- sh -c 'exit 7'` 7, a workload killed by signal N 128+N;
the JSON report's "exit_status" says the same, and the report is still written.
`-- /nonexistent/x` exits 127 with one "pmcprof:" line naming the command (+ optional HINT),
no report; a file that is not executable exits 126.

Usage: test_stat_exit_status.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import os
import stat as stat_mod
import sys
import tempfile
import unittest

import pmcprof_testlib as t


class ExitStatusTest(unittest.TestCase):
    def check(self, command, expected):
        s = t.stat(["-e", "task-clock"], command)
        t.log(f"{command!r}: exit {s.returncode} (expected {expected}), "
              f"report exit_status {s.json and s.json.get('exit_status')}")
        self.assertEqual(s.returncode, expected, s.stderr)
        self.assertIsNotNone(s.json, f"no report written: stderr={s.stderr!r}")
        self.assertEqual(s.json["exit_status"], expected)
        self.assertEqual(t.find_counter(s.json, "task-clock")["status"], "ok")
        self.assertNotIn("pmcprof:", s.stderr, "a failing workload is not pmcprof's error")
        return s

    def test_true(self):
        self.check(["true"], 0)

    def test_false(self):
        self.check(["false"], 1)

    def test_exit_7(self):
        self.check(["sh", "-c", "exit 7"], 7)

    def test_killed_by_signal(self):
        self.check(["sh", "-c", "kill -KILL $$"], 128 + 9)

    def test_text_output_keeps_status(self):
        s = t.stat(["-e", "task-clock"], ["sh", "-c", "exit 3"], fmt="text")
        self.assertEqual(s.returncode, 3, s.stderr)
        self.assertIn("Performance counter stats for 'sh -c exit 3'", s.text)

    def test_command_not_found(self):
        for fmt in ("json", "text"):
            s = t.stat(["-e", "task-clock"], ["/nonexistent/x", "arg"], fmt=fmt)
            t.log(f"not found ({fmt}): exit {s.returncode}, stderr {s.stderr!r}, "
                  f"report {len(s.text)} bytes")
            t.assert_clean_error(self, s.proc, exit_code=127, mentions=[r"/nonexistent/x"])
            errors = [l for l in s.stderr.splitlines() if l.startswith("pmcprof:")]
            self.assertEqual(len(errors), 1, s.stderr)
            self.assertNotIn("Performance counter stats", s.stderr + s.text)

    def test_not_executable(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "not-executable")
            with open(path, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(path, stat_mod.S_IRUSR | stat_mod.S_IWUSR)
            s = t.stat(["-e", "task-clock"], [path])
            t.log(f"not executable: exit {s.returncode}, stderr {s.stderr!r}")
            t.assert_clean_error(self, s.proc, exit_code=126, mentions=[r"not-executable"])


if __name__ == "__main__":
    sys.exit(t.main(requires=("root",), doc=__doc__))

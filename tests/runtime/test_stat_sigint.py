#!/usr/bin/env python3
"""Stopping pmcprof stat with a signal still produces the report.

pmcprof is started, the test waits until it is counting (it holds perf_event descriptors, and
a workload child exists when there is one; pmcprof blocks SIGINT and SIGTERM from its start, so
its signal mask no longer tells), lets it count ~0.5 s, then signals it:
- `stat -a -e task-clock -j -o F` with no command, SIGINT: exit 0, F holds one complete JSON
  report with "interrupted": true, task-clock > 0 (and task-clock/elapsed ~= nproc within 10%);
- the same with SIGTERM;
- `stat -a ... -- sleep 10`, SIGINT to pmcprof only: report written, interrupted, pmcprof exits
  within 3 s, not by a signal, with the status it reports as exit_status, and the sleep child
  is gone (pmcprof reaped it);
- `stat -e task-clock ... -- sleep 10` (per task), SIGTERM: the same;
- Ctrl-C as a terminal sends it: SIGINT to the whole process group (pmcprof and sleep): the same.

Usage: test_stat_sigint.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import pmcprof_testlib as t

SIGINT_BIT = 1 << (signal.SIGINT - 1)
SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def blocked_signals(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigBlk:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


class SignalTest(unittest.TestCase):
    def run_and_signal(self, args, sig, command=(), group=False):
        """Starts pmcprof stat ARGS -j -o F [-- COMMAND], waits until it counts, sends SIG
        (to its process group when GROUP) after 0.5 s; returns (proc, report, seconds from
        signal to exit, workload child pid or None)."""
        with tempfile.TemporaryDirectory(prefix="pmcprof-sig-") as tmp:
            out = os.path.join(tmp, "report.json")
            argv = [t.pmcprof(), "stat", *args, "-j", "-o", out]
            if command:
                argv += ["--", *command]
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True)
            try:
                ready = t.wait_for(lambda: blocked_signals(proc.pid) & SIGINT_BIT
                                   and blocked_signals(proc.pid) & SIGTERM_BIT
                                   and t.perf_event_fds(proc.pid) > 0, 10)
                self.assertTrue(ready, "pmcprof never blocked SIGINT/SIGTERM (not counting?)")
                child = None
                if command:
                    def find_child():
                        nonlocal child
                        kids = [k for k in t.children_of(proc.pid) if comm(k) == command[0]]
                        child = kids[0] if kids else None
                        return child is not None
                    self.assertTrue(t.wait_for(find_child, 10), "the workload never started")
                time.sleep(0.5)
                t0 = time.monotonic()
                if group:
                    os.killpg(proc.pid, sig)
                else:
                    proc.send_signal(sig)
                try:
                    stdout, stderr = proc.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    self.fail(f"pmcprof still running 10 s after {signal.Signals(sig).name}")
                took = time.monotonic() - t0
            finally:
                t.stop(proc)
            with open(out) as f:
                text = f.read()
        t.log(f"{' '.join(argv[1:])} + {signal.Signals(sig).name}"
              f"{' to the group' if group else ''}: exit {proc.returncode} after {took:.3f} s, "
              f"stderr {stderr!r}")
        self.assertGreaterEqual(proc.returncode, 0,
                                f"pmcprof died of signal {-proc.returncode}: {stderr!r}")
        for marker in t.CRASH_MARKERS:
            self.assertNotIn(marker, stderr)
        try:
            report = json.loads(text)
        except json.JSONDecodeError as e:
            self.fail(f"incomplete JSON report ({e}): {text!r}")
        return proc, report, took, child

    def check_report(self, report, system_wide):
        tc = t.find_counter(report, "task-clock")
        t.log(f"  report: interrupted={report['interrupted']} elapsed {report['elapsed_ns'] / 1e6:.1f} ms "
              f"task-clock {tc['value'] / 1e6 if tc['value'] else tc['value']} ms "
              f"exit_status {report['exit_status']}")
        self.assertEqual(report["type"], "report")
        self.assertIs(report["interrupted"], True)
        self.assertEqual(tc["status"], "ok")
        self.assertGreater(tc["value"], 0)
        self.assertGreaterEqual(report["elapsed_ns"], 0.4e9)
        if system_wide:
            t.assert_within(self, tc["value"] / report["elapsed_ns"], t.nproc_online(), 0.10,
                            "task-clock/elapsed vs nproc")

    def check_workload_case(self, proc, report, took, child):
        self.assertLess(took, 3.0, "pmcprof took too long to stop")
        self.assertEqual(report["exit_status"], proc.returncode)
        self.assertFalse(t.pid_alive(child), f"workload {child} survived pmcprof")
        self.assertFalse(os.path.exists(f"/proc/{child}"), f"workload {child} left unreaped")

    def test_sigint_no_command(self):
        proc, report, _, _ = self.run_and_signal(["-a", "-e", "task-clock"], signal.SIGINT)
        self.assertEqual(proc.returncode, 0)
        self.check_report(report, system_wide=True)
        self.assertIsNone(report["exit_status"])

    def test_sigterm_no_command(self):
        proc, report, _, _ = self.run_and_signal(["-a", "-e", "task-clock"], signal.SIGTERM)
        self.assertEqual(proc.returncode, 0)
        self.check_report(report, system_wide=True)

    def test_sigint_with_workload(self):
        r = self.run_and_signal(["-a", "-e", "task-clock"], signal.SIGINT, ["sleep", "10"])
        self.check_report(r[1], system_wide=True)
        self.check_workload_case(*r)

    def test_sigterm_with_workload_per_task(self):
        r = self.run_and_signal(["-e", "task-clock"], signal.SIGTERM, ["sleep", "10"])
        self.check_report(r[1], system_wide=False)
        self.check_workload_case(*r)

    def test_ctrl_c_to_process_group(self):
        r = self.run_and_signal(["-e", "task-clock"], signal.SIGINT, ["sleep", "10"], group=True)
        self.check_report(r[1], system_wide=False)
        self.check_workload_case(*r)


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


if __name__ == "__main__":
    sys.exit(t.main(requires=("root",), doc=__doc__))

#!/usr/bin/env python3
"""Bad input to pmcprof stat fails cleanly: a non-zero exit (129 for usage errors, as perf, 127 for a
command that does not exist, 1 for a refused perf_event_open), one stderr line starting
"pmcprof:" (+ at most one "HINT:" line), never a crash (no signal exit, no "terminate called",
no traceback). Cases: unknown event (named, with a close name suggested), malformed group
`{cycles`, empty `-e ''`, unknown modifier `cycles:x`, an offline CPU `-C 99`, `-p`/`-t` of a
task that does not exist, `-I 0`, a command not found, an unknown option, and running as
`nobody` (no capabilities, perf_event_paranoid 2): `-a` is refused with a message naming
CAP_PERFMON / perf_event_paranoid. As nobody, counting one's own command still works, like
perf stat (which falls back to user-space counting, task-clock:u, when paranoid is 2), and
`-e task-clock:u` works.

Also the -p/-t happy paths against live tasks: `-p PID --timeout 300` of a `sleep 5` exits 0
with a report (the sleeping task's counters are "not-counted", as perf stat says) and leaves
the task running; `-t TID` of a busy `burn` counts task-clock > 0 and <= elapsed (one thread);
`-p` of a task that exits ends the run at once.

A long message is cut only on a terminal without -v (it then says how to see the rest); with -v
or with standard error in a pipe it is whole.

Usage: test_stat_bad_input.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import pmcprof_testlib as t

EXIT_USAGE = 129  # perf stat's usage exit status


def free_pid():
    """A PID that no task has right now."""
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    for pid in range(pid_max - 1, 1, -1):
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    raise t.Skip("no free PID")


class BadInputTest(unittest.TestCase):
    def bad(self, args, exit_code=EXIT_USAGE, mentions=()):
        proc = t.run_pmcprof(["stat", *args], timeout=30)
        line = t.assert_clean_error(self, proc, exit_code=exit_code, mentions=mentions)
        t.log(f"stat {' '.join(repr(a) if not a or ' ' in a else a for a in args)}: "
              f"exit {proc.returncode}: {proc.stderr.strip()!r}")
        return proc, line

    def test_unknown_event(self):
        proc, _ = self.bad(["-e", "task-clok", "--", "true"], mentions=[r"task-clok"])
        self.assertIn("task-clock", proc.stderr, "no close name suggested")
        proc, _ = self.bad(["-e", "cyclez,task-clock", "--", "true"], mentions=[r"cyclez"])
        self.assertRegex(proc.stderr, r"\bcycles\b", "no close name suggested")

    def test_malformed_group(self):
        self.bad(["-e", "{cycles", "--", "true"], mentions=[r"\{cycles", r"group|\}"])
        self.bad(["-e", "cycles}", "--", "true"], mentions=[r"\}"])

    def test_empty_event_list(self):
        self.bad(["-e", "", "--", "true"], mentions=[r"empty"])
        self.bad(["-e", ",,", "--", "true"], mentions=[r"empty"])

    def test_unknown_modifier(self):
        self.bad(["-e", "cycles:x", "--", "true"], mentions=[r"modifier", r"'x'|\bx\b"])

    def test_offline_cpu(self):
        ncpu = t.nproc_online()
        self.assertLess(ncpu, 99)
        self.bad(["-C", "99", "-e", "task-clock", "--", "true"], mentions=[r"\b99\b"])
        self.bad(["-a", "-C", "99", "-e", "task-clock", "--", "true"], mentions=[r"\b99\b"])

    def test_missing_pid_and_tid(self):
        pid = free_pid()
        self.bad(["-p", str(pid), "-e", "task-clock"], mentions=[str(pid)])
        self.bad(["-t", str(pid), "-e", "task-clock"], mentions=[str(pid)])
        self.bad(["-p", "abc", "-e", "task-clock"])

    def test_bad_interval(self):
        self.bad(["-a", "-I", "0", "-e", "task-clock"], mentions=[r"-I", r"\b0\b"])
        self.bad(["-a", "-I", "abc", "-e", "task-clock"])

    def test_command_not_found(self):
        self.bad(["-e", "task-clock", "--", "pmcprof-no-such-command-xyz"], exit_code=127,
                 mentions=[r"pmcprof-no-such-command-xyz"])

    def test_unknown_option(self):
        # A mistyped option must not be run as the command: perf stat says "unknown option".
        proc, line = self.bad(["--bogus-option", "-a", "-e", "task-clock"],
                              mentions=[r"--bogus-option"])
        self.assertNotIn("command not found", line)

    def test_unknown_subcommand(self):
        # As perf ("'stats' is not a perf-command") and git: one line, the closest commands.
        for word, close in (("stats", "stat"), ("lsit", "list"), ("doctr", "doctor")):
            proc = t.run_pmcprof([word, "-a"], timeout=30)
            line = t.assert_clean_error(self, proc, exit_code=EXIT_USAGE,
                                        mentions=[re.escape(f"'{word}'"), r"not a pmcprof command"])
            t.log(f"{word} -a: exit {proc.returncode}: {proc.stderr.strip()!r}")
            self.assertIn(f"did you mean '{close}'", proc.stderr, line)
        proc = t.run_pmcprof(["xyzzy"], timeout=30)
        t.assert_clean_error(self, proc, exit_code=EXIT_USAGE, mentions=[r"'xyzzy'"])
        self.assertNotIn("did you mean", proc.stderr)

    def test_help_subcommand(self):
        # `pmcprof help` is --help, `pmcprof help stat` stat's (git's habit), exit 0.
        top = t.run_pmcprof(["help"], timeout=30)
        self.assertEqual(top.returncode, 0, top.stderr)
        self.assertIn("SUBCOMMAND", top.stdout)
        sub_help = t.run_pmcprof(["help", "stat"], timeout=30)
        self.assertEqual(sub_help.returncode, 0, sub_help.stderr)
        self.assertIn("--event", sub_help.stdout)

    def test_stat_usage_names_the_command(self):
        # perf stat's usage names the command; an option that takes one value each time must
        # not read "FUNC ..." (`--func a b` measures a in the command b).
        proc = t.run_pmcprof(["stat", "--help"], timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"Usage: pmcprof stat \[OPTIONS\] \[\[--\] COMMAND \[ARG\.\.\.\]\]")
        for flag, value in (("--func", "FUNC"), ("--region", "REGION"), ("-e,--event", "EVENTS"),
                            ("-G,--cgroup", "CGROUPS")):
            self.assertRegex(proc.stdout, rf"\n\s+{re.escape(flag)} {value}\s{{2,}}\S", flag)
        self.assertNotRegex(proc.stdout, r"[A-Z] \.\.\.", "an option reads as taking several values")
        self.assertIn("--func a --func b", proc.stdout)


def stderr_on_a_terminal(args, timeout=60):
    """Runs pmcprof with its standard error on a pseudo-terminal; returns (exit status, the
    text written there)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([t.pmcprof(), *args], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=slave, timeout=timeout)
    finally:
        os.close(slave)
    text = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other end is closed and read empty
            break
        if not chunk:
            break
        text += chunk
    os.close(master)
    return proc.returncode, text.decode().replace("\r\n", "\n")


class LongErrorTest(unittest.TestCase):
    """A long message (the kernel's reasons for refusing a kernel-function probe) is cut only on
    a terminal without -v, and then says how to see the rest; with -v, or with standard error
    in a file or a pipe, it is printed whole."""

    ARGS = ["stat", "--func", "vfs_read", "--", "true"]

    def test_cut_only_on_a_terminal_without_v(self):
        piped = t.run_pmcprof(self.ARGS, timeout=60)
        if piped.returncode == 0:
            raise t.Skip("kernel functions can be probed here: no long error to cut")
        whole = t.assert_clean_error(self, piped, mentions=[r"vfs_read"])
        t.log(f"stderr in a pipe: {len(whole)} characters")
        if len(whole) <= 320:
            raise t.Skip(f"the refusal is {len(whole)} characters here: nothing to cut")
        self.assertNotIn("\u2026", whole)
        self.assertNotRegex(whole, r"characters[;)]")

        status, text = stderr_on_a_terminal(self.ARGS)
        self.assertEqual(status, piped.returncode)
        cut = next(l for l in text.splitlines() if l.startswith("pmcprof: "))
        t.log(f"on a terminal: {cut!r}")
        self.assertLess(len(cut), len(whole))
        self.assertRegex(cut, rf"\u2026 \({len(whole) - len('pmcprof: '):,} characters; "
                              r"-v or 2>FILE prints it whole\)$")
        self.assertTrue(whole.startswith(cut[:cut.index("\u2026")]))

        status, text = stderr_on_a_terminal(["stat", "-v", *self.ARGS[1:]])
        self.assertEqual(status, piped.returncode)
        self.assertIn(whole, text.splitlines())


class UnprivilegedTest(unittest.TestCase):
    """pmcprof run as nobody with no capabilities (perf_event_paranoid stays as it is)."""

    @classmethod
    def setUpClass(cls):
        cls.setpriv = shutil.which("setpriv")
        cls.tmp = tempfile.mkdtemp(prefix="pmcprof-nobody-")
        os.chmod(cls.tmp, 0o755)
        cls.binary = os.path.join(cls.tmp, "pmcprof")
        shutil.copy(t.pmcprof(), cls.binary)
        os.chmod(cls.binary, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def as_nobody(self, args):
        t.require("program:setpriv")  # util-linux
        argv = [self.setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                "--inh-caps=-all", self.binary, "stat", *args]
        return t.run(argv, timeout=30, cwd=self.tmp)

    def paranoid(self):
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return int(f.read())

    def test_system_wide_refused(self):
        if self.paranoid() <= 0:
            self.skipTest("perf_event_paranoid <= 0 lets nobody count system-wide")
        proc = self.as_nobody(["-a", "-e", "task-clock", "--", "true"])
        t.log(f"nobody, -a: exit {proc.returncode}: {proc.stderr.strip()!r}")
        t.assert_clean_error(self, proc, exit_code=1,
                             mentions=[r"CAP_PERFMON|CAP_BPF|perf_event_paranoid"])

    def test_own_command_counts_user_space(self):
        # perf stat as nobody with paranoid 2 counts its own command by falling back to
        # user-space-only counting (task-clock:u); pmcprof should do the same (or count).
        if self.paranoid() > 2:
            self.skipTest("perf_event_paranoid > 2 forbids all unprivileged counting")
        with tempfile.NamedTemporaryFile(dir=self.tmp, suffix=".json") as f:
            os.chmod(f.name, 0o666)
            proc = self.as_nobody(["-e", "task-clock", "-j", "-o", f.name, "--", "true"])
            t.log(f"nobody, own command: exit {proc.returncode}: {proc.stderr.strip()!r}")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(f.name) as r:
                report = json.load(r)
        rows = [c for c in report["counters"] if c["event"].startswith("task-clock")]
        self.assertEqual(len(rows), 1, report["counters"])
        self.assertEqual(rows[0]["status"], "ok")
        self.assertGreater(rows[0]["value"], 0)

    def test_own_command_with_u_modifier(self):
        proc = self.as_nobody(["-e", "task-clock:u", "-x", ",", "--", "true"])
        t.log(f"nobody, task-clock:u: exit {proc.returncode}: {proc.stderr.strip()!r}")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stderr, r"^[\d.]+,msec,task-clock:u,")


class LiveTaskTest(unittest.TestCase):
    def test_pid_of_sleeping_process(self):
        sleeper = t.spawn(["sleep", "5"])
        try:
            s = t.stat(["-p", str(sleeper.pid), "--timeout", "300", "-e",
                        "task-clock,context-switches"], timeout=30)
            t.log(f"-p sleep: exit {s.returncode} after {s.wall_s:.3f} s; rows "
                  f"{[(c['event'], c['status'], c['value']) for c in s.json['counters']] if s.json else s.stderr}")
            self.assertEqual(s.returncode, 0, s.stderr)
            self.assertEqual(s.json["target"], f"process id {sleeper.pid}")
            for ev in ("task-clock", "context-switches"):
                c = s.counter(ev)
                self.assertIn(c["status"], ("ok", "not-counted"), c)
                if c["status"] == "not-counted":
                    self.assertIsNone(c["value"])
            t.assert_within(self, s.json["elapsed_ns"], 300e6, 0.2, "elapsed vs --timeout")
            self.assertIsNone(sleeper.poll(), "pmcprof -p killed the process it watched")
        finally:
            t.stop(sleeper)

    def test_tid_of_busy_thread(self):
        burner = t.spawn([t.workload("burn"), "5000"])

        def cpu_ns():  # the thread's own time on a CPU, from the scheduler (schedstat)
            with open(f"/proc/{burner.pid}/schedstat") as f:
                return int(f.read().split()[0])
        try:
            time.sleep(0.05)
            run0, wall0 = cpu_ns(), time.monotonic_ns()
            s = t.stat(["-t", str(burner.pid), "--timeout", "300", "-e",
                        "task-clock,context-switches"], timeout=30)
            share = (cpu_ns() - run0) / (time.monotonic_ns() - wall0)
            self.assertEqual(s.returncode, 0, s.stderr)
            tc = s.counter("task-clock")
            t.log(f"-t burn: task-clock {tc['value'] and tc['value'] / 1e6} ms over "
                  f"{s.json['elapsed_ns'] / 1e6:.1f} ms, context-switches "
                  f"{s.value('context-switches')}")
            self.assertEqual(s.json["target"], f"thread id {burner.pid}")
            self.assertEqual(tc["status"], "ok")
            # At least half of what the thread ran over the window around the run (its share
            # of a CPU: 0.19 with two busy loops beside it on this 2-CPU VM, 1 alone).
            t.log(f"the thread's own share of a CPU around the run: {share:.2f}")
            self.assertGreater(tc["value"], 0.5 * share * s.json["elapsed_ns"])
            self.assertLessEqual(tc["value"], 1.05 * s.json["elapsed_ns"], "one thread, one CPU")
            self.assertIsNone(burner.poll(), "pmcprof -t killed the thread it watched")
        finally:
            t.stop(burner)

    def test_pid_that_exits_ends_the_run(self):
        sleeper = t.spawn(["sleep", "0.4"])
        try:
            s = t.stat(["-p", str(sleeper.pid), "-e", "task-clock"], timeout=30)
            t.log(f"-p of a task that exits after 0.4 s: exit {s.returncode}, "
                  f"pmcprof ran {s.wall_s:.3f} s")
            self.assertEqual(s.returncode, 0, s.stderr)
            self.assertIsNotNone(s.json)
            self.assertLess(s.wall_s, 2.0)
        finally:
            t.stop(sleeper)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root",), doc=__doc__))

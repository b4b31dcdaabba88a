"""Progress and verbosity: long attaches show progress on a terminal only; -v says what was
opened and attached; -q prints nothing but the report."""
import os
import pty
import subprocess
import unittest

import pmcprof_testlib as t


def run_with_tty_stderr(argv, timeout=60):
    """Runs argv with stderr on a pseudo-terminal; returns (exit code, what the tty got)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks).decode(errors="replace")


class ProgressTest(unittest.TestCase):
    def funcs(self):
        w = t.workload("func_workload")
        names = ["burn_cpu", "burn_and_sleep", "burn_and_migrate", "tiny_function"]
        args = []
        for n in names:
            args += ["--func", f"{w}:{n}"]
        return w, args

    def test_progress_on_a_terminal_only(self):
        w, funcs = self.funcs()
        argv = [t.pmcprof(), "stat", "-e", "task-clock", *funcs, "--", w, "tiny", "10"]
        rc, tty = run_with_tty_stderr(argv)
        self.assertEqual(rc, 0, tty)
        self.assertIn("attaching 4/4", tty)
        self.assertIn("Function counter stats", tty)  # the report still follows
        piped = t.run(argv)
        self.assertEqual(piped.returncode, 0, piped.stderr)
        self.assertNotIn("attaching", piped.stderr)

    def test_quiet_on_a_terminal_shows_only_the_report(self):
        w, funcs = self.funcs()
        rc, tty = run_with_tty_stderr([t.pmcprof(), "stat", "-q", "-e", "task-clock", *funcs, "--",
                                       w, "tiny", "10"])
        self.assertEqual(rc, 0, tty)
        self.assertNotIn("attaching", tty)
        self.assertIn("Function counter stats", tty)

    def test_verbose_names_what_is_attached(self):
        w, funcs = self.funcs()
        p = t.run([t.pmcprof(), "stat", "-v", "-e", "task-clock", *funcs, "--", w, "tiny", "10"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"attaching {w}:burn_cpu with uprobe", p.stderr)
        c = t.run([t.pmcprof(), "stat", "-v", "-a", "-e", "task-clock", "--", "true"])
        self.assertIn("pmcprof: counting system wide", c.stderr)
        q = t.run([t.pmcprof(), "stat", "-v", "-q", "-a", "-e", "task-clock", "--", "true"])
        self.assertNotIn("pmcprof: counting", q.stderr)
        self.assertIn("Performance counter stats", q.stderr)


if __name__ == "__main__":
    raise SystemExit(t.main(requires=("root", "uprobes"), doc=__doc__))

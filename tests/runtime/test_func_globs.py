#!/usr/bin/env python3
"""--func wildcards (fnmatch globs in the function part), as bpftrace and funccount take them.

- `--func 'func_workload:burn_*' -- func_workload pair N ...` (--aggregate both): one row per
  function of the workload whose name starts burn_ (burn_a, burn_and_migrate, burn_and_sleep,
  burn_b, burn_cpu: the five the source defines), in that order, each with the exact calls the
  program made (pair: burn_a and burn_b N each, the others 0), backend uprobe; -v says what the
  glob matched.
- Overlap: `burn_[ab]`, then `burn_*`, then burn_a named: each function once (5 rows), the
  bracket's two first.
- `syscall:getppid*` -- func_workload getppid N: one row, syscall:getppid, N calls exactly;
  `syscall:getp[gp]id` beside a named syscall:getppid: getpgid's row (0 calls) and getppid's
  once, N calls.
- An alias: `libc:*getpid` matches getpid and __getpid, one function (one address): one row,
  libc:getpid, with the one getpid() the workload makes.
- `vfs_rea*` (kernel functions): -v lists vfs_read among the matches (this kernel cannot probe
  them: only the expansion is checked).
- Refused in one line (+ HINT), exit 129: a glob matching nothing (user, syscall, kernel: the
  hint has the closest names), one matching more than a run can measure (`syscall:*`: the count
  and the limit, 64, in the line, "narrow" in the hint), a malformed one, a glob in --region.

Usage: test_func_globs.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import re
import sys
import unittest

import pmcprof_testlib as t

BURNS = ["burn_a", "burn_and_migrate", "burn_and_sleep", "burn_b", "burn_cpu"]
MAX_FUNCS = 64  # PMCPROF_MAX_FUNCS, bpf/pmcprof.h


class GlobRowsTest(unittest.TestCase):
    def setUp(self):
        self.wl = t.workload("func_workload")

    def calls_by_row(self, s, agg):
        rep = t.report_of(s, agg)
        for row in rep["functions"]:
            t.log(f"[{agg}] {t.describe_func_row(row)}")
        return {r["function"]: r["calls"] for r in rep["functions"]}, rep

    def test_user_glob_rows_have_exact_calls(self):
        n = 40
        s = t.func_stat(["-v", "-e", "task-clock", "--aggregate", "both",
                         "--func", f"{self.wl}:burn_*"], command=[self.wl, "pair", str(n), "200", "300"])
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(s.workload[0]["calls"], n)
        expected = {f"{self.wl}:{b}": (n if b in ("burn_a", "burn_b") else 0) for b in BURNS}
        for agg in ("stream", "kernel"):
            calls, rep = self.calls_by_row(s, agg)
            self.assertEqual([r["function"] for r in rep["functions"]], list(expected),
                             "one row per match, in name order")
            self.assertEqual(calls, expected, agg)
            for row in rep["functions"]:
                self.assertEqual(row["backend"], "uprobe")
                self.assertEqual(row["lost"], 0)
        said = [l for l in s.stderr.splitlines() if "matched" in l]
        t.log(f"-v: {said}")
        self.assertEqual(len(said), 1, s.stderr)
        self.assertIn(f"--func '{self.wl}:burn_*' matched 5 functions: ", said[0])
        for b in BURNS:
            self.assertIn(f"{self.wl}:{b}", said[0])

    def test_overlapping_globs_and_a_named_match_appear_once(self):
        n = 25
        s = t.func_stat(["-e", "task-clock", "--func", f"{self.wl}:burn_[ab]",
                         "--func", f"{self.wl}:burn_*", "--func", f"{self.wl}:burn_a"],
                        command=[self.wl, "pair", str(n), "100", "100"])
        self.assertEqual(s.returncode, 0, s.stderr)
        order = ["burn_a", "burn_b", "burn_and_migrate", "burn_and_sleep", "burn_cpu"]
        rows = [r["function"] for r in s.json["functions"]]
        for r in s.json["functions"]:
            t.log(t.describe_func_row(r))
        self.assertEqual(rows, [f"{self.wl}:{b}" for b in order])
        calls = {r["function"]: r["calls"] for r in s.json["functions"]}
        self.assertEqual(calls[f"{self.wl}:burn_a"], n)
        self.assertEqual(calls[f"{self.wl}:burn_b"], n)
        self.assertEqual(calls[f"{self.wl}:burn_cpu"], 0)

    @t.requires("syscall-tracepoints")
    def test_syscall_glob(self):
        n = 3000
        s = t.func_stat(["-e", "task-clock", "--aggregate", "both", "--func", "syscall:getppid*"],
                        command=[self.wl, "getppid", str(n)])
        self.assertEqual(s.returncode, 0, s.stderr)
        for agg in ("stream", "kernel"):
            calls, rep = self.calls_by_row(s, agg)
            self.assertEqual(calls, {"syscall:getppid": n}, agg)
            self.assertEqual(rep["functions"][0]["backend"], "tracepoint")

    @t.requires("syscall-tracepoints")
    def test_syscall_bracket_beside_a_named_one(self):
        n = 2000
        s = t.func_stat(["-e", "task-clock", "--func", "syscall:getppid",
                         "--func", "syscall:getp[gp]id"], command=[self.wl, "getppid", str(n)])
        self.assertEqual(s.returncode, 0, s.stderr)
        rows = [(r["function"], r["calls"]) for r in s.json["functions"]]
        t.log(f"rows: {rows}")
        self.assertEqual(rows, [("syscall:getppid", n), ("syscall:getpgid", 0)])

    def test_aliases_are_one_row(self):
        # glibc exports getpid and __getpid at one address: one function, named by the plain
        # name. The workload calls getpid() once, for the pid it prints.
        s = t.func_stat(["-e", "task-clock", "--func", "libc:*getpid"],
                        command=[self.wl, "getppid", "10"])
        self.assertEqual(s.returncode, 0, s.stderr)
        rows = [(r["function"], r["calls"]) for r in s.json["functions"]]
        t.log(f"rows: {rows}")
        self.assertEqual(rows, [("libc:getpid", 1)])

    def test_kernel_glob_expands(self):
        proc = t.run_pmcprof(["stat", "-v", "-e", "task-clock", "--func", "vfs_rea*", "--",
                              self.wl, "burn", "1", "10"])
        said = [l for l in proc.stderr.splitlines() if "matched" in l]
        t.log(f"exit {proc.returncode}; -v: {[l[:160] for l in said]}")
        self.assertEqual(len(said), 1, proc.stderr)
        self.assertRegex(said[0], r"^pmcprof: --func 'vfs_rea\*' matched \d+ functions?: ")
        self.assertIn(" vfs_read", said[0].replace(",", " ") + " ")
        self.assertNotIn("__pfx_", said[0])


class GlobErrorTest(unittest.TestCase):
    def setUp(self):
        self.wl = t.workload("func_workload")
        self.cmd = [self.wl, "burn", "1", "10"]

    def error(self, args, mentions):
        proc = t.run_pmcprof(["stat", "-e", "task-clock", *args, "--", *self.cmd])
        line = t.assert_clean_error(self, proc, exit_code=129, mentions=mentions)
        hint = proc.stderr.strip().splitlines()[-1]
        t.log(f"{' '.join(args)} -> {line} / {hint}")
        self.assertTrue(hint.startswith("HINT: "), proc.stderr)
        return hint

    def test_user_glob_matching_nothing(self):
        hint = self.error(["--func", f"{self.wl}:burn_zz*"],
                          [r"--func '.*:burn_zz\*' matches no function in /"])
        self.assertRegex(hint, rf"did you mean [^?]*'{re.escape(self.wl)}:burn_")

    @t.requires("syscall-tracepoints")
    def test_syscall_glob_matching_nothing(self):
        hint = self.error(["--func", "syscall:reaq*"], [r"'syscall:reaq\*' matches no syscall"])
        self.assertRegex(hint, r"did you mean [^?]*'syscall:read'")

    def test_kernel_glob_matching_nothing(self):
        self.error(["--func", "pmcprof_no_such_fn*"],
                   [r"'pmcprof_no_such_fn\*' matches no kernel function pmcprof may probe"])

    @t.requires("syscall-tracepoints")
    def test_glob_matching_more_than_fit(self):
        hint = self.error(["--func", "syscall:*"],
                          [r"--func 'syscall:\*' matches (\d+) syscalls, more than the "
                           rf"{MAX_FUNCS} a run can measure"])
        self.assertIn("narrow the pattern", hint)
        # Beside another --func, the line counts it too.
        self.error(["--func", f"{self.wl}:burn_cpu", "--func", "syscall:*"],
                   [r"matches \d+ syscalls; with the run's other function or region that makes \d+, "
                    rf"more than the {MAX_FUNCS}"])

    def test_malformed_glob(self):
        self.error(["--func", f"{self.wl}:burn_["], [r"invalid wildcard pattern 'burn_\['"])

    def test_glob_in_a_region(self):
        self.error(["--region", f"{self.wl}:burn_*,{self.wl}:burn_cpu%return"],
                   [r"--region start '.*burn_\*': a --region point takes no wildcard"])


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes"), doc=__doc__))

#!/usr/bin/env python3
"""pmcprof diff A.json B.json: what changed between two saved runs, and whether beyond the noise.

Function mode (uprobes): `func_workload pair N USEC_A USEC_B` calls burn_a(USEC_A) and
burn_b(USEC_B) N times each; three runs with `--func burn_a --func burn_b -e task-clock`:
A (100 us, 100 us), B (200 us, 100 us) and C (A again).
- diff A B: burn_a's task-clock, wall and on-CPU time are "changed", up, with a shift near
  +100 %; burn_b's are compared and not flagged (their shift within the threshold); the text
  marks exactly burn_a's three rows with '*', says "slower" and states the rule; CSV: a header
  line, then one row per function and quantity, flagged 1 for burn_a's; exit status 0;
- diff A C (the same workload twice): nothing is flagged, in every quantity of both functions;
- `-` reads one side from standard input; --threshold 0 and --alpha are taken.
Counting mode: `stat -r 5 -e task-clock,page-faults -- func_workload burn 10 {1000,2000}`: the
doubled task-clock is flagged (Welch's t on the -r means), twice the same workload's is not;
a run without -r is shown and not tested.
Bad input, one line and a HINT each, non-zero exit: one file only, a counting and a function
report, a file that is not JSON, both sides from standard input, --alpha 0 and --threshold -1.

The rule's threshold is there for what the second comparison shows: with a few hundred calls
per function, two runs of the same workload differ significantly (p < 0.001) in about one
comparison in thirty, by 0.1-0.2 % (measured here beside a busy loop); 5 % is far above that.

Usage: test_diff.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import csv
import io
import json
import os
import sys
import tempfile
import unittest

import pmcprof_testlib as t

N = 300
QUANTITIES = ("task-clock", "wall time", "on-CPU time")


class DiffTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="pmcprof-diff-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def save(self, name, args, command):
        out = self.path(name)
        p = t.run_pmcprof(["stat", "-j", "-o", out, *args, "--", *command], timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return out

    def diff(self, *args, **kw):
        p = t.run_pmcprof(["diff", *args], **kw)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def pair(self, name, usec_a, usec_b):
        wl = t.workload("func_workload")
        return self.save(name, ["-e", "task-clock", "--func", f"{wl}:burn_a",
                                "--func", f"{wl}:burn_b"],
                         [wl, "pair", str(N), str(usec_a), str(usec_b)])

    @staticmethod
    def rows(diff_json, name):
        return {r["quantity"]: r for r in diff_json["rows"] if r["function"].endswith(name)}

    @t.requires("uprobes")
    def test_functions(self):
        a = self.pair("a.json", 100, 100)
        b = self.pair("b.json", 200, 100)
        c = self.pair("c.json", 100, 100)
        d = json.loads(self.diff(a, b, "-j"))
        self.assertEqual(d["type"], "diff")
        self.assertEqual(d["rule"], {"test": "mann-whitney-u", "shift": "hodges-lehmann",
                                     "alpha": 0.001, "threshold_pct": 5})
        slow, same = self.rows(d, ":burn_a"), self.rows(d, ":burn_b")
        for q in QUANTITIES:
            s, o = slow[q], same[q]
            t.log(f"A->B burn_a {q}: {s['status']} shift {s['test']['shift_pct']:+.2f}% "
                  f"p {s['test']['p_value']:.2g}; burn_b: {o['status']} shift "
                  f"{o['test']['shift_pct']:+.2f}% p {o['test']['p_value']:.2g}")
            self.assertEqual(s["status"], "changed", q)
            self.assertEqual(s["direction"], "up", q)
            self.assertGreater(s["test"]["shift_pct"], 80, q)
            self.assertLess(s["test"]["shift_pct"], 120, q)
            self.assertEqual(s["baseline"]["calls"], N)
            self.assertEqual(o["status"], "within-noise", q)
        self.assertEqual(d["changed"], 3)

        text = self.diff(a, b)
        t.log(text)
        marked = [l for l in text.splitlines() if l.startswith(" * ") and "baseline" in l]
        self.assertEqual(len(marked), 3, text)
        self.assertIn("slower: shift +", text)
        self.assertIn("Mann-Whitney U test", text)
        self.assertIn("3 of 6 tested quantities changed beyond the noise.", text)

        rows = list(csv.reader(io.StringIO(self.diff(a, b, "-x", ","))))
        header, body = rows[0], rows[1:]
        self.assertEqual(header[:7], ["function", "backend", "kind", "by", "quantity", "unit",
                                      "status"])
        self.assertEqual(len(body), 6)
        for r in body:
            self.assertEqual(len(r), len(header))
            flagged = r[header.index("flagged")] == "1"
            self.assertEqual(flagged, r[0].endswith(":burn_a"), r)

        # The same workload twice: nothing beyond the noise.
        same_run = json.loads(self.diff(a, c, "-j"))
        for r in same_run["rows"]:
            t.log(f"A->C {r['function'].rsplit(':', 1)[-1]} {r['quantity']}: {r['status']} "
                  f"shift {r['test']['shift_pct']:+.3f}% p {r['test']['p_value']:.2g}")
            self.assertEqual(r["status"], "within-noise", r)
        self.assertEqual(same_run["changed"], 0)

        with open(b) as f:
            from_stdin = json.loads(self.diff(a, "-", "-j", stdin=f))
        self.assertEqual(from_stdin["new"]["file"], "-")
        self.assertEqual(from_stdin["changed"], 3)
        loose = json.loads(self.diff(a, c, "-j", "--threshold", "0", "--alpha", "0.5"))
        self.assertEqual(loose["rule"]["threshold_pct"], 0)
        self.assertEqual(loose["rule"]["alpha"], 0.5)

    def test_counting(self):
        wl = t.workload("func_workload")
        events = ["-e", "task-clock,page-faults"]
        # 60 ms of CPU burnt by the thread's own clock, so task-clock varies only with the
        # program's start-up and exit (~1 ms, more on a loaded machine: seen -8.75 % between two
        # sets of five 10 ms runs), well below the 5 % threshold.
        one = self.save("c1.json", ["-r", "5", *events], [wl, "burn", "10", "6000"])
        two = self.save("c2.json", ["-r", "5", *events], [wl, "burn", "10", "12000"])
        again = self.save("c3.json", ["-r", "5", *events], [wl, "burn", "10", "6000"])
        single = self.save("c4.json", events, [wl, "burn", "10", "6000"])
        d = json.loads(self.diff(one, two, "-j"))
        tc = {r["event"]: r for r in d["rows"]}
        t.log(f"task-clock x2: {tc['task-clock']['status']} "
              f"{tc['task-clock']['change_pct']['value']:+.1f}% p {tc['task-clock']['test']['p_value']:.2g}")
        self.assertEqual(d["rule"]["test"], "welch-t")
        self.assertEqual(tc["task-clock"]["status"], "changed")
        self.assertEqual(tc["task-clock"]["direction"], "up")
        self.assertEqual(tc["task-clock"]["baseline"]["runs"], 5)
        same = {r["event"]: r for r in json.loads(self.diff(one, again, "-j"))["rows"]}
        t.log(f"task-clock again: {same['task-clock']['status']} "
              f"{same['task-clock']['change_pct']['value']:+.2f}%")
        self.assertNotEqual(same["task-clock"]["status"], "changed")
        self.assertNotEqual(same["page-faults"]["status"], "changed")
        untested = {r["event"]: r for r in json.loads(self.diff(single, two, "-j"))["rows"]}
        self.assertEqual(untested["task-clock"]["status"], "not-tested")
        self.assertIn("one run in", untested["task-clock"]["why_not_tested"])
        text = self.diff(one, two)
        self.assertRegex(text, r"\n \* +[\d.,]+ msec +[\d.,]+ msec +\+[\d.]+%  task-clock")

    def test_bad_input(self):
        wl = t.workload("func_workload")
        counting = self.save("k.json", ["-e", "task-clock"], [wl, "burn", "1", "100"])
        p = t.run_pmcprof(["diff", counting])
        t.assert_clean_error(self, p, mentions=[r"compares two saved runs"])
        bad = self.path("bad.json")
        with open(bad, "w") as f:
            f.write("not json\n")
        p = t.run_pmcprof(["diff", counting, bad])
        t.assert_clean_error(self, p, mentions=[r"bad\.json' is not JSON \(line 1, column 2"])
        p = t.run_pmcprof(["diff", "-", "-"], stdin=subprocess_devnull())
        t.assert_clean_error(self, p, mentions=[r"only one of the two runs"])
        p = t.run_pmcprof(["diff", counting, counting, "--alpha", "0"])
        t.assert_clean_error(self, p, mentions=[r"invalid --alpha '0': out of range"])
        p = t.run_pmcprof(["diff", counting, counting, "--threshold=-1"])
        t.assert_clean_error(self, p, mentions=[r"invalid --threshold '-1': not a decimal"])
        if t.missing("uprobes"):
            return
        func = self.save("f.json", ["-e", "task-clock", "--func", f"{wl}:burn_a"],
                         [wl, "pair", "3", "10", "10"])
        p = t.run_pmcprof(["diff", counting, func])
        t.assert_clean_error(self, p, mentions=[r"is a counting report and .* a function report"])


def subprocess_devnull():
    return open(os.devnull)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root",), doc=__doc__))

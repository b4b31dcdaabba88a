#!/usr/bin/env python3
"""--by: a function's keys sorted by their total, its total row, and --top folding.

- `func_workload ladder 10 200` calls burn_cpu(4000) 10 times, burn_cpu(200) 100 times,
  burn_cpu(1000) 10 times and burn_cpu(400) 10 times (us): task-clock totals of about 40, 20,
  10 and 4 ms, an order neither the calls (200 first) nor the argument (ascending or
  descending) give. `--by arg0 -e task-clock` lists the keys in that order, task-clock totals
  descending; each key has its exact calls; the total entry (JSON `totals`) has 130 calls, the
  program's own count, and the sums of the keys' calls and task-clock totals exactly.
- `--top 2`: the two largest keys, then one entry folding the other 2 (20 calls), and the
  entries still add up to the total, exactly.
- Text and CSV show the same rows in the same order, the total last; `pmcprof report` reads
  the saved JSON back with its total; `pmcprof diff` of a run against itself compares the total.
- Bad input: `--top 0`, and `--top` without `--by`, are refused in one line with a hint.

Usage: test_func_by_top.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import os
import re
import sys
import tempfile
import unittest

import pmcprof_testlib as t

USEC, ROUNDS = 200, 10
# arg0 -> calls; in the order of their task-clock totals (20, 1, 5, 2 times USEC per round).
EXPECTED = [(20 * USEC, ROUNDS), (USEC, 10 * ROUNDS), (5 * USEC, ROUNDS), (2 * USEC, ROUNDS)]
CALLS = sum(n for _, n in EXPECTED)


def keys_of(report):
    return [f for f in report["functions"] if f["function"].endswith(":burn_cpu")]


def total_of(tc, report):
    totals = [f for f in report.get("totals", []) if f["function"].endswith(":burn_cpu")]
    tc.assertEqual(len(totals), 1, f"one total entry for burn_cpu: {report.get('totals')}")
    tc.assertIs(totals[0]["total"], True)
    return totals[0]


def task_clock(row):
    return row["events"]["task-clock"]["total"]


class ByTopTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.wl = t.workload("func_workload")
        cls.args = ["-e", "task-clock", "--func", f"{cls.wl}:burn_cpu", "--by", "arg0"]
        cls.command = [cls.wl, "ladder", str(ROUNDS), str(USEC)]

    def run_json(self, extra=()):
        s = t.func_stat([*self.args, *extra], command=self.command)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertIsNotNone(s.json, s.text)
        self.assertEqual(s.workload[0]["burn_cpu_calls"], CALLS, "the program's own count")
        return s

    def test_sorted_by_total_with_a_total_row(self):
        rep = self.run_json().json
        keys = keys_of(rep)
        for k in keys:
            t.log(f"arg0={k['args']}: {t.describe_func_row(k)}")
        self.assertEqual([k["args"] for k in keys], [[a] for a, _ in EXPECTED])
        self.assertEqual([k["calls"] for k in keys], [n for _, n in EXPECTED])
        totals = [task_clock(k) for k in keys]
        self.assertEqual(totals, sorted(totals, reverse=True), "task-clock totals descending")
        total = total_of(self, rep)
        t.log(f"total: {t.describe_func_row(total)}")
        self.assertEqual(total["keys"], len(EXPECTED))
        self.assertEqual(total["sorted_by"], "task-clock")
        self.assertEqual(total["calls"], CALLS)
        self.assertEqual(total["calls"], sum(k["calls"] for k in keys))
        self.assertEqual(task_clock(total), sum(totals))
        self.assertEqual(total["wall"]["min"], min(k["wall"]["min"] for k in keys))
        self.assertEqual(total["wall"]["max"], max(k["wall"]["max"] for k in keys))
        # Counts kept per function: on the total entry, never on a key.
        for k in keys:
            self.assertNotIn("total", k)
            self.assertEqual((k["depth_overflow"], k["unmatched_exits"], k["abandoned"]), (0, 0, 0))

    def test_top_folds_the_rest_and_totals_add_up(self):
        rep = self.run_json(["--top", "2"]).json
        self.assertEqual(rep["top"], 2)
        keys = keys_of(rep)
        self.assertEqual(len(keys), 3, [k.get("args") for k in keys])
        self.assertEqual([k["args"] for k in keys[:2]], [[a] for a, _ in EXPECTED[:2]])
        folded = keys[2]
        self.assertEqual(folded["folded"], 2)
        self.assertIsNone(folded["args"])
        self.assertEqual(folded["calls"], sum(n for _, n in EXPECTED[2:]))
        self.assertNotIn("folded", keys[0])
        total = total_of(self, rep)
        self.assertEqual(total["keys"], len(EXPECTED))
        self.assertEqual(total["calls"], CALLS)
        self.assertEqual(sum(k["calls"] for k in keys), total["calls"])
        self.assertEqual(sum(task_clock(k) for k in keys), task_clock(total))
        self.assertGreaterEqual(task_clock(keys[1]), task_clock(folded) / 2,
                                "a folded key is smaller than every key shown")

    def test_text_and_csv_show_the_same_order(self):
        s = t.stat([*self.args, "--top", "3"], command=self.command, fmt="text")
        self.assertEqual(s.returncode, 0, s.stderr)
        headers = [l for l in s.text.splitlines() if ":burn_cpu  [uprobe]" in l]
        t.log("\n".join(headers))
        self.assertEqual(len(headers), 5, s.text)
        for line, (arg, _) in zip(headers, EXPECTED[:3]):
            self.assertTrue(line.endswith(f"  {arg}"), line)
        self.assertIn("other (1 key past --top 3)", headers[3])
        self.assertIn("total (4 keys, sorted by task-clock)", headers[4])
        after_total = s.text[s.text.index(headers[4]):]
        self.assertRegex(after_total, rf"^.*\n   {CALLS} calls, ")

        c = t.stat(["-x", ",", *self.args, "--top", "3"], command=self.command, fmt="csv")
        self.assertEqual(c.returncode, 0, c.stderr)
        rows = [l.split(",") for l in c.text.splitlines() if l.split(",")[6:7] == ["task-clock"]]
        self.assertEqual([r[2] for r in rows],
                         [str(a) for a, _ in EXPECTED[:3]] + ["(other 1 key)", "(total)"])
        self.assertEqual(int(rows[-1][3]), CALLS)
        self.assertEqual(sum(int(r[3]) for r in rows[:-1]), CALLS)
        self.assertEqual(sum(int(r[8]) for r in rows[:-1]), int(rows[-1][8]))

    def test_report_and_diff_read_the_total(self):
        with tempfile.TemporaryDirectory(prefix="pmcprof-test-") as tmp:
            path = os.path.join(tmp, "run.json")
            p = t.run_pmcprof(["stat", "-j", "-o", path, *self.args, "--top", "2", "--",
                               *self.command])
            self.assertEqual(p.returncode, 0, p.stderr)
            rep = t.run_pmcprof(["report", path])
            self.assertEqual(rep.returncode, 0, rep.stderr)
            self.assertIn("total (4 keys, sorted by task-clock)", rep.stdout)
            self.assertIn("other (2 keys past --top 2)", rep.stdout)
            self.assertRegex(rep.stdout, rf"total \(4 keys.*\n   {CALLS} calls, ")
            d = t.run_pmcprof(["diff", "-j", path, path])
            self.assertEqual(d.returncode, 0, d.stderr)
            self.assertIn('"(total)"', d.stdout)
            self.assertNotIn("(other 2 keys)", d.stdout, "folded rows are not compared")

    def test_bad_top_is_refused_with_a_hint(self):
        for args, mention in ((["--by", "arg0", "--top", "0"], r"--top"),
                              (["--top", "2"], r"--top.*--by")):
            p = t.run_pmcprof(["stat", "-e", "task-clock", "--func", f"{self.wl}:burn_cpu", *args,
                               "--", "true"])
            line = t.assert_clean_error(self, p, mentions=(mention,))
            t.log(line)
            self.assertIn("HINT:", p.stderr, "a hint on how to fix it")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes"), doc=__doc__))

#!/usr/bin/env python3
"""Per-Python-function counters from Debian's python3.11 and its USDT probes
(python:function__entry / function__return), against Python's own counts.

A script with known call counts: outer() called 40 times, each calling leaf() 25 times (1000
calls, nested one level); fib(12), recursive (465 calls, 12 levels); a generator consumed to
its end (its 30 yields and its return: 31 entries into its frame); rec(199), a recursion 200
levels deep (issue 22: 16 levels were measured per thread, now 256); a method and its class body;
a function that raises, caught by its caller 50 times; burn(), which spins 2 ms of thread CPU
time 10 times; and count(), called by each of them (1773 calls). The script counts its own calls, and cProfile (Python's profiler, the ground truth for
every function) counts them again.

- `pmcprof stat --python -- python3.11 -m cProfile -o PROF SCRIPT` (CPython 3.11 fires
  function__entry only while a profile function is set, CPython issue 98894: cProfile is one):
  for every function of the script, the calls of its row (keyed by file and function name)
  equal cProfile's call count and the script's own count; nothing too deep; <module> 1 call;
  burn's task-clock per call within 10% of 2 ms; main's task-clock holds every burn;
- the same as a general --region with --by arg1:str,arg2 (function name and the first line of
  its code, an integer) and --no-compensate: the same counts, the line numbers of the
  definitions, outer's task-clock total at least leaf's (nested: an outer call contains its
  leaf calls, probes included);
- without a profiler the entry probe does not fire: the returns are reported as ends without
  a start, with the note naming CPython issue 98894 (no made-up calls).

Skips when /usr/bin/python3.11 is missing or has no python:function__entry probe.

Usage: test_usdt_python.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import json
import os
import sys
import tempfile
import unittest

import pmcprof_testlib as t

PYTHON = "/usr/bin/python3.11"

SCRIPT = r'''
import json, sys, time

COUNTS = {}


def count(name):
    COUNTS[name] = COUNTS.get(name, 0) + 1


def leaf(x):
    count("leaf")
    return x + 1


def outer(k):
    count("outer")
    s = 0
    for i in range(k):
        s += leaf(i)
    return s


def fib(n):
    count("fib")
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def rec(n):
    count("rec")
    return rec(n - 1) + 1 if n > 0 else 0


def gen(n):
    count("gen")
    for i in range(n):
        yield i


class Meter:
    def tick(self):
        count("tick")


def boom(i):
    count("boom")
    raise ValueError(i)


def burn(ns):
    count("burn")
    end = time.thread_time_ns() + ns
    while time.thread_time_ns() < end:
        pass


def main():
    for _ in range(40):
        outer(25)
    fib(12)
    assert rec(199) == 199
    assert sum(gen(30)) == 435
    m = Meter()
    for _ in range(7):
        m.tick()
    for i in range(50):
        try:
            boom(i)
        except ValueError:
            pass
    for _ in range(10):
        burn(2_000_000)
    print(json.dumps(COUNTS), flush=True)


main()
'''

# Calls of each function: what the script's own counter says, except for the generator, whose
# frame is entered once to start and once per resumption (31 for 30 yields), as cProfile and
# the probes both count it.
EXPECTED = {"leaf": 1000, "outer": 40, "fib": 465, "rec": 200, "gen": 31, "tick": 7, "boom": 50,
            "burn": 10, "main": 1, "<module>": 1, "Meter": 1, "count": 1773}


@t.requires(f"program:{PYTHON}", f"usdt:{PYTHON}:python:function__entry")
class PythonTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="pmcprof-py-")
        cls.script = os.path.join(cls.tmp.name, "calls.py")
        with open(cls.script, "w") as f:
            f.write(SCRIPT)
        cls.prof = os.path.join(cls.tmp.name, "calls.prof")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def cprofile_counts(self):
        """cProfile's call count of every function of the script, by name."""
        code = ("import json, pstats, sys; s = pstats.Stats(sys.argv[1]).stats; "
                "print(json.dumps({k[2]: v[1] for k, v in s.items() if k[0] == sys.argv[2]}))")
        out = t.run([PYTHON, "-c", code, self.prof, self.script])
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def profiled(self):
        return [PYTHON, "-m", "cProfile", "-o", self.prof, self.script]

    def check_counts(self, rows, own, what, skip=()):
        cprof = self.cprofile_counts()
        t.log(f"{what}: pmcprof {dict(sorted((k, r['calls']) for k, r in rows.items()))}")
        t.log(f"{what}: cProfile {dict(sorted(cprof.items()))}; the script's own {own}")
        for name, want in EXPECTED.items():
            if name in skip:
                continue
            self.assertIn(name, rows, f"{what}: no row for {name}")
            self.assertEqual(cprof.get(name), want, f"cProfile's count of {name}")
            if name in own:
                self.assertEqual(own[name], 1 if name == "gen" else want, f"script's {name}")
            self.assertEqual(rows[name]["calls"], want, f"{what}: calls of {name}")

    def test_python_shortcut(self):
        s = t.func_stat(["-e", "task-clock", "--python"], command=self.profiled())
        self.assertEqual(s.returncode, 0, s.stderr)
        rep = s.json
        self.assertEqual(rep["by"], "arg0:str,arg1:str")
        self.assertEqual(rep["max_keys"], 256)
        rows = {}
        for r in t.func_rows(rep, "python"):
            self.assertEqual(r["kind"], "region")
            self.assertEqual(r["backend"], "usdt")
            if r["args"] and r["args"][0] == self.script:
                rows[r["args"][1]] = r
        first = t.func_total(rep, "python")
        # Counted per region, on its total entry: the interpreter's own deep stacks (imports)
        # may pass the 256 frames a thread keeps; the script's calls (rec: 200 deep) are all
        # within them.
        self.assertNotIn("backend_note", first, "profiled: no note about missing entries")
        t.log(f"ends without a start (frames entered before cProfile started): "
              f"{first['unmatched_exits']}; starts never ended: {first['open']}; too deep: "
              f"{first['depth_overflow']}")
        self.check_counts(rows, s.workload[0], "--python")
        burn = t.func_event(rows["burn"])
        t.log(f"burn: {t.describe_func_row(rows['burn'])}")
        # The median call: a call the hypervisor stalled (steal) cannot move it.
        t.assert_within(self, burn["p50"], 2e6, 0.10, "burn task-clock p50")
        # main holds ~3,600 probed calls, each of whose cost its compensation takes off: the
        # nested cost measured in pmcprof must not take off more than the probes added. Its
        # wall time is always measured; its task-clock only when no switch cut it (beside a
        # busy loop it may be preempted: the report says so, and there is no value to check).
        main = rows["main"]
        t.log(f"main: {t.describe_func_row(main)}")
        self.assertGreaterEqual(main["wall"]["total"], 10 * 2e6, "main's wall holds every burn")
        if main["not_counted"]:
            self.assertGreater(main["slept"] + main["migrated"] + main["not_counted_hidden_switch"],
                               0, "main not counted, and the report does not say why")
        else:
            self.assertGreaterEqual(t.func_event(main)["total"], 10 * 2e6,
                                    "main contains every burn")

    def test_general_region_with_integer_key(self):
        probes = f"usdt:{PYTHON}:python:function__"
        s = t.func_stat(["-e", "task-clock", "--region",
                         f"py={probes}entry,{probes}return", "--by", "arg1:str,arg2",
                         "--max-keys", "256", "--no-compensate"], command=self.profiled())
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertFalse(any(b["subtracted"] for b in s.json["probe_bias"]), "--no-compensate")
        rows, lines = {}, {}
        for r in t.func_rows(s.json, "py"):
            if r["args"] is None:
                continue
            name, line = r["args"]
            if name in EXPECTED and name != "<module>":
                # cProfile's own Python code has functions of these names too (main): the
                # script's are the ones at its lines
                lines.setdefault(name, []).append(line)
                if line == script_line(self.script, name):
                    rows[name] = r
        # A generator's frame is entered at its def line once, then at its yield at every
        # resumption: the probe reports the line the frame is at.
        resumed = [r for r in t.func_rows(s.json, "py")
                   if r["args"] == ["gen", script_line(self.script, "yield i")]]
        t.log(f"gen: {rows['gen']['calls']} at its def line, "
              f"{[r['calls'] for r in resumed]} at its yield")
        self.assertEqual(rows["gen"]["calls"], 1)
        self.assertEqual([r["calls"] for r in resumed], [EXPECTED["gen"] - 1])
        rows["gen"] = dict(rows["gen"], calls=rows["gen"]["calls"] + resumed[0]["calls"])
        # (<module>: every module imported under the profiler has one; its line is not its def)
        self.check_counts(rows, s.workload[0], "--region --by arg1:str,arg2", skip=("<module>",))
        self.assertEqual(rows["fib"]["args"], ["fib", script_line(self.script, "fib")])
        # Uncompensated, an outer call's counts hold its leaf calls' whole counts, probes
        # included: nothing but a misnested entry or return can make it less. (Compensated,
        # outer's own work, ~4 us a call, is within the calibration's error on the 51 probed
        # calls nested in each: beside busy loops outer fell below leaf.)
        outer, leaf = t.func_event(rows["outer"])["total"], t.func_event(rows["leaf"])["total"]
        t.log(f"uncompensated task-clock: outer {outer / 1e6:.3f} ms, leaf {leaf / 1e6:.3f} ms")
        self.assertGreaterEqual(outer, leaf, "outer contains its leaf calls")

    def test_without_profiler_entries_missing(self):
        s = t.func_stat(["-e", "task-clock", "--python"], command=[PYTHON, self.script])
        self.assertEqual(s.returncode, 0, s.stderr)
        first = t.func_total(s.json, "python")
        mine = [r for r in t.func_rows(s.json, "python")
                if r["args"] and r["args"][0] == self.script]
        t.log(f"no profiler: {first['unmatched_exits']} ends without a start, rows of the "
              f"script {[(r['args'][1], r['calls']) for r in mine]}; note: "
              f"{first.get('backend_note')}")
        self.assertGreater(first["unmatched_exits"], sum(EXPECTED.values()) - 100)
        self.assertEqual(sum(r["calls"] for r in mine), 0)
        self.assertIn("CPython issue 98894", first.get("backend_note", ""))


def script_line(path, name):
    """The line of `def NAME` in PATH (co_firstlineno), 1 for <module>; a NAME with a space is
    a statement ("yield i") whose line is wanted."""
    if name == "<module>":
        return 1
    wants = (name,) if " " in name else (f"def {name}(", f"class {name}:")
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if line.lstrip().startswith(wants):
                return i
    raise AssertionError(f"no {wants} in {path}")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes"), doc=__doc__))

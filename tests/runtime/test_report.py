#!/usr/bin/env python3
"""pmcprof report FILE: a saved run (stat -j) rendered again, by stat's own renderers.

Counting mode (`stat -j -o a.json -e task-clock,page-faults,context-switches -- func_workload
burn 20 1000`):
- `report a.json -j` is a.json byte for byte (the model read back is the model written);
- `report a.json` is stat's text layout of that model: the header naming the command, one line
  per counter holding the JSON's value as stat prints it (msec with 2 decimals for task-clock,
  grouped counts), the shadow metric stat derives (task-clock's "CPUs utilized", read from
  the event's saved attr), the elapsed seconds; `-x ,` CSV rows hold the same values;
- `report - < a.json` reads standard input; `-i a.json` is perf report's spelling;
- `--prometheus`: the /metrics text serve would serve for that run, without serve's own
  liveness gauges (pmcprof_up, pmcprof_scrapes_total).
Intervals (`stat -j -I 100 --summary`): `report -j` is the NDJSON again, line for line; text has
perf's interval header and the summary.
Function mode (`--func func_workload:burn_a,burn_b`, uprobes): `report -j` is the file again;
the text has both functions with their calls and the JSON's task-clock total as stat prints it;
`--prometheus` has their calls and wall-time histograms, and `--hist=wall` draws every call in
bcc's rows (both from the saved buckets); `--hist=wal` is refused with a did-you-mean.
Bad input, each one line and a HINT, non-zero exit, no crash: a missing file, a directory, an
empty file, not JSON (with its line), another tool's JSON (perf stat -j's lines), pmcprof's own
`list -j` and `doctor -j` output, a newer schema, a field of the wrong type (its path), and
--prometheus with -j, --hist of a counting report.

Usage: test_report.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import json
import os
import re
import sys
import tempfile
import unittest

import pmcprof_testlib as t


def grouped(v, decimals):
    return f"{v:,.{decimals}f}"


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="pmcprof-report-")
        cls.dir = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def save(self, name, args, command):
        out = self.path(name)
        p = t.run_pmcprof(["stat", "-j", "-o", out, *args, "--", *command])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            return f.read()

    def report(self, *args, **kw):
        p = t.run_pmcprof(["report", *args], **kw)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_counting(self):
        wl = t.workload("func_workload")
        saved = self.save("a.json", ["-e", "task-clock,page-faults,context-switches"],
                          [wl, "burn", "20", "1000"])
        a = self.path("a.json")
        self.assertEqual(self.report(a, "-j"), saved, "report -j rewrites the file it read")
        self.assertEqual(self.report("-i", a, "-j"), saved)
        with open(a) as f:
            self.assertEqual(self.report("-", "-j", stdin=f), saved)
        j = json.loads(saved)
        text = self.report(a)
        t.log(text)
        self.assertIn(f"Performance counter stats for '{wl} burn 20 1000':", text)
        tc = t.find_counter(j, "task-clock")
        pf = t.find_counter(j, "page-faults")
        cs = t.find_counter(j, "context-switches")
        self.assertRegex(text, rf"\n +{re.escape(grouped(tc['value'] / 1e6, 2))} msec task-clock "
                               rf"+# +{tc['metric']['value']:.3f} CPUs utilized\n")
        self.assertRegex(text, rf"\n +{re.escape(grouped(pf['value'], 0))}      page-faults ")
        self.assertRegex(text, rf"\n +{re.escape(grouped(cs['value'], 0))}      context-switches")
        self.assertIn(f"{j['elapsed_ns'] / 1e9:.9f} seconds time elapsed", text)
        csv = [l.split(",") for l in self.report(a, "-x", ",").splitlines() if l]
        self.assertEqual([r[2] for r in csv], ["task-clock", "page-faults", "context-switches"])
        self.assertEqual(csv[0][0], f"{tc['value'] / 1e6:.2f}")
        self.assertEqual(csv[1][0], str(pf["value"]))
        metrics = self.report(a, "--prometheus")
        self.assertIn(f'pmcprof_event_total{{event="page-faults"}} {pf["value"]}\n', metrics)
        self.assertIn('pmcprof_build_info{version="', metrics)
        self.assertNotIn("pmcprof_up", metrics)
        self.assertNotIn("pmcprof_scrapes_total", metrics)

    def test_intervals(self):
        wl = t.workload("func_workload")
        saved = self.save("i.ndjson", ["-I", "100", "--summary", "-e", "task-clock"],
                          [wl, "burn", "30", "10000"])
        i = self.path("i.ndjson")
        self.assertEqual(self.report(i, "-j"), saved)
        records = [json.loads(l) for l in saved.splitlines()]
        self.assertGreaterEqual(len(records), 3)
        text = self.report(i)
        self.assertTrue(text.startswith("#           time             counts unit events\n"), text)
        first = records[0]
        self.assertIn(f"{first['interval']:16.9f} ", text)
        self.assertIn("Performance counter stats for", text)

    @t.requires("uprobes")
    def test_function_mode(self):
        wl = t.workload("func_workload")
        saved = self.save("f.json", ["-e", "task-clock", "--func", f"{wl}:burn_a",
                                     "--func", f"{wl}:burn_b"], [wl, "pair", "50", "200", "400"])
        f = self.path("f.json")
        self.assertEqual(self.report(f, "-j"), saved)
        j = json.loads(saved)
        text = self.report(f)
        t.log(text)
        self.assertIn("Function counter stats for", text)
        for name in ("burn_a", "burn_b"):
            row = t.func_row(j, f":{name}")
            self.assertIn(f" {wl}:{name}  [uprobe]\n   {row['calls']} calls, ", text)
            total = t.func_event(row)["total"] / 1e6
            self.assertRegex(text, rf"\n   task-clock +{re.escape(f'{total:.2f}')} ms ")
        # --hist from the saved buckets: every call of each function in its wall-time rows.
        hist = self.report(f, "--hist=wall")
        counts = [int(m) for m in re.findall(r"-> \d+ +: (\d+) ", hist)]
        self.assertEqual(sum(counts), 100, hist)
        self.assertEqual(hist.count("wall time per call (50 calls):"), 2, hist)
        p = t.run_pmcprof(["report", f, "--hist=wal"])
        t.assert_clean_error(self, p, mentions=[r"--hist: 'wal' is not a quantity of this run"])
        self.assertIn("did you mean 'wall'?", p.stderr)
        # /metrics from the saved buckets: the wall-time histogram holds every call.
        metrics = self.report(f, "--prometheus")
        for name in ("burn_a", "burn_b"):
            label = f'function="{wl}:{name}"'
            self.assertIn(f"pmcprof_function_calls_total{{{label}}} 50\n", metrics)
            self.assertIn(f'pmcprof_function_wall_seconds_count{{{label}}} 50\n', metrics)

    def test_bad_input(self):
        missing = self.path("missing.json")
        p = t.run_pmcprof(["report", missing])
        t.assert_clean_error(self, p, mentions=[r"cannot read .*missing\.json.*No such file"])
        p = t.run_pmcprof(["report", self.dir])
        t.assert_clean_error(self, p, mentions=[r"cannot read .*Is a directory"])
        p = t.run_pmcprof(["report"])
        t.assert_clean_error(self, p, mentions=[r"needs the saved run"])

        def refused(content, *mentions, args=()):
            path = self.path("bad.json")
            with open(path, "w") as f:
                f.write(content)
            proc = t.run_pmcprof(["report", path, *args])
            line = t.assert_clean_error(self, proc, mentions=mentions)
            t.log(line)

        refused("", r"is empty")
        refused('{"schema": "pmcprof/1",\n "type": report}\n', r"is not JSON \(line 2, column")
        perf = ('{"counter-value" : "200.41", "unit" : "msec", "event" : "task-clock", '
                '"event-runtime" : 200406698, "pcnt-running" : 100.00}\n')
        refused(perf * 2, r"not a pmcprof report", r"perf stat -j")
        for sub in (["list", "-j"], ["doctor", "-j"]):
            out = t.run_pmcprof(sub).stdout
            refused(out, rf"output of 'pmcprof {sub[0]} -j', not a report")
        refused('{"schema": "pmcprof/2", "type": "report", "mode": "counting"}',
                r"newer than this pmcprof reads")
        j = json.loads(self.save("ok.json", ["-e", "task-clock"], ["true"]))
        j["counters"][0]["value"] = "fast"
        refused(json.dumps(j), r"counters\[0\]\.value: expected a number, found a string")
        p = t.run_pmcprof(["report", self.path("ok.json"), "-j", "--prometheus"])
        t.assert_clean_error(self, p, mentions=[r"one of -j, -x and --prometheus"])
        p = t.run_pmcprof(["report", self.path("ok.json"), "--hist"])
        t.assert_clean_error(self, p, mentions=[r"--hist draws the per-call histograms of a "
                                                r"function report; .* is a counting report"])


if __name__ == "__main__":
    sys.exit(t.main(requires=("root",), doc=__doc__))

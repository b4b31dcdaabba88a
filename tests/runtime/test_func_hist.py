#!/usr/bin/env python3
"""--hist, --hist-linear and the JSON buckets on a bimodal function: two modes, drawn and listed.

`func_workload bimodal 200 10 1000` calls burn_cpu 200 times, alternating 10 us and 1 ms of its
own CPU time (a call costs about 13 us with its clock reads): half the calls in a fast mode,
half in a slow one, nothing between. Probed with a uprobe, -e task-clock (the call's on-CPU
time: the modes hold whatever the machine's load does to wall time):
- text with --hist: a funclatency-style log2 drawing of wall time and of task-clock after the
  function's rows; for task-clock the rows below 256 us hold the fast calls, the rows from
  512 us the slow ones, the rows between (256-512 us) at most a few calls (preempted reads:
  noise), and the rows add up to the calls in the title, which are the calls measured; wall
  time shows both modes too (preemption may move a few calls up);
- JSON: every distribution carries buckets [lower, upper, count], ascending, non-empty, adding
  up to measured_calls; task-clock's buckets hold the same two modes and nothing between them
  beyond noise;
- CSV (-x , --hist): the hist rows of each quantity add up to the calls measured in its usual row;
- --hist-linear=0,1200us,100us --hist=task-clock: rows of 100 us (edges moved to the 2% buckets'
  bounds, which the drawing says), the fast calls in the first, the slow ones around 1 ms;
- -I 100 with --hist: each interval draws its own calls (its rows add up to its calls, and
  the intervals to the run); -j -I: each NDJSON interval record's buckets add up to its
  measured calls;
- bad input: an unknown quantity (named, with the run's quantities in the hint), a bare
  `--hist wall` (which would run wall(1)), a time range for a count, a malformed range: one
  line and a HINT, exit 129, before anything runs.

Usage: test_func_hist.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import re
import sys
import unittest

import pmcprof_testlib as t

N, FAST_US, SLOW_US = 200, 10, 1000
# ns: the fast calls' rows end below 256 us. (Below 64 us, 7 fast calls of 200 fell between the
# modes in a CI rehearsal with two builds beside it: interrupts and steal land in a call's
# on-CPU time; a quarter of a slow call is still far from both modes.)
FAST_BELOW = 262144
SLOW_FROM = 524288  # ns: the slow calls' rows start at 512 us
NOISE = 6  # calls allowed between the modes (a read preempted, an interrupt)

TITLE = re.compile(r"^   (.+) per call \(([\d,]+) calls?\)(, linear (\S+))?:$")
ROW = re.compile(r"^\s+(\d+) -> (\d+|\.\.\.)\s+: (\d+)\s+\|(\**)\s*\|$")


def parse_drawings(text):
    """The --hist drawings in TEXT: [{title, calls, linear, moved, rows: [(lo, hi, count)]}]."""
    drawings = []
    for line in text.splitlines():
        m = TITLE.match(line)
        if m:
            drawings.append({"title": m.group(1), "calls": int(m.group(2).replace(",", "")),
                             "linear": m.group(4), "moved": False, "rows": []})
            continue
        if not drawings:
            continue
        if line.startswith("   (edges moved"):
            drawings[-1]["moved"] = True
        r = ROW.match(line)
        if r:
            hi = None if r.group(2) == "..." else int(r.group(2))
            drawings[-1]["rows"].append((int(r.group(1)), hi, int(r.group(3))))
    return drawings


def min_mode(calls):
    """The fewest calls each mode holds of CALLS measured: N/2 less the calls the run did not
    count (a switch the kernel hid, under load: of either mode) and less the NOISE calls let
    fall between the modes (beside two busy loops: 94 fast, 6 between, 100 slow of 200)."""
    return N // 2 - (N - calls) - NOISE


def split_modes(rows):
    """(fast, between, slow) calls of [(lower, upper_inclusive, count)] rows in ns."""
    fast = sum(c for lo, hi, c in rows if hi is not None and hi < FAST_BELOW)
    slow = sum(c for lo, hi, c in rows if lo >= SLOW_FROM)
    return fast, sum(c for _, _, c in rows) - fast - slow, slow


class HistTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.wl = t.workload("func_workload")
        cls.func = f"{cls.wl}:burn_cpu"
        cls.cmd = [cls.wl, "bimodal", str(N), str(FAST_US), str(SLOW_US)]

    def run_text(self, args):
        s = t.stat(["-e", "task-clock", "--func", self.func, *args], command=self.cmd,
                   fmt="text")
        self.assertEqual(s.returncode, 0, s.stderr)
        return s.text

    def assert_two_modes(self, rows, calls, what):
        """CALLS: the calls measured. One the run did not count (a switch the kernel hid, under
        load) may have been of either mode (see min_mode)."""
        fast, between, slow = split_modes(rows)
        t.log(f"{what}: {fast} fast, {between} between, {slow} slow of {calls}; rows "
              + ", ".join(f"{lo}-{hi}: {c}" for lo, hi, c in rows if c))
        self.assertEqual(fast + between + slow, calls, f"{what}: rows add up to the calls")
        self.assertGreaterEqual(fast, min_mode(calls), f"{what}: the fast mode")
        self.assertGreaterEqual(slow, min_mode(calls), f"{what}: the slow mode")
        self.assertLessEqual(between, NOISE, f"{what}: calls between the modes")

    def test_text_draws_two_modes(self):
        text = self.run_text(["--hist"])
        drawings = {d["title"]: d for d in parse_drawings(text)}
        self.assertEqual(sorted(drawings), ["task-clock", "wall time"], text)
        self.assertIn("nsecs               : count     distribution", text)
        # After the function's rows, before the probe-bias lines.
        self.assertLess(text.index("on-CPU time"), text.index("wall time per call"), text)
        self.assertLess(text.index("task-clock per call"), text.index(" probe bias"), text)
        tc = drawings["task-clock"]
        calls = int(re.search(r"([\d,]+) calls?, ([\d,]+) not counted", text).group(1)
                    .replace(",", ""))
        self.assertEqual(calls, N)
        self.assert_two_modes(tc["rows"], tc["calls"], "text task-clock")
        self.assertGreaterEqual(tc["calls"], N - 5, "counted calls drawn")
        # bcc's rows: consecutive powers of two, the largest row a full bar of 40.
        for (lo, hi, _), (next_lo, _, _) in zip(tc["rows"], tc["rows"][1:]):
            self.assertEqual(hi + 1, next_lo)
        self.assertIn("|" + "*" * 40 + "|", text)
        wall = drawings["wall time"]
        self.assertEqual(wall["calls"], N)
        self.assertEqual(sum(c for _, _, c in wall["rows"]), N)
        fast, _, slow = split_modes(wall["rows"])
        self.assertGreaterEqual(fast, N // 2 - 20, "wall time: the fast mode")
        self.assertGreaterEqual(slow, N // 2, "wall time: the slow mode (never shorter)")

    def test_json_buckets(self):
        s = t.func_stat(["-e", "task-clock", "--func", self.func], command=self.cmd)
        self.assertEqual(s.returncode, 0, s.stderr)
        row = t.func_row(s.json, self.func)
        dists = {"wall": row["wall"], "oncpu": row["oncpu"], **row["events"]}
        for m in row["metrics"].values():
            if m["per_call"]:
                dists["metric"] = m["per_call"]
        for name, d in dists.items():
            buckets = d["buckets"]
            want = d["calls"] if name == "metric" else d["measured_calls"]
            self.assertEqual(sum(b[2] for b in buckets), want, f"{name} buckets: {buckets}")
            for b, nxt in zip(buckets, buckets[1:]):
                self.assertLess(b[0], b[1], name)
                self.assertLessEqual(b[1], nxt[0], f"{name}: ascending")
            self.assertTrue(all(b[2] > 0 for b in buckets), f"{name}: only non-empty buckets")
        tc = row["events"]["task-clock"]
        # Buckets as rows: [lower, upper) with upper exclusive.
        rows = [(lo, None if hi is None else hi - 1, c) for lo, hi, c in tc["buckets"]]
        self.assert_two_modes(rows, tc["measured_calls"], "JSON task-clock")
        # The buckets hold min and max.
        self.assertLessEqual(tc["buckets"][0][0], tc["min"])
        self.assertGreater(tc["buckets"][-1][1], tc["max"])

    def test_csv_rows_add_up_to_the_calls_measured(self):
        s = t.stat(["-x", ",", "--hist", "-e", "task-clock", "--func", self.func],
                   command=self.cmd, fmt="csv")
        self.assertEqual(s.returncode, 0, s.stderr)
        measured, sums, rows = {}, {}, {}
        for line in s.text.splitlines():
            cells = line.split(",")
            if len(cells) > 3 and cells[3] == "hist":
                self.assertEqual(len(cells), 9, line)
                q = cells[4]
                sums[q] = sums.get(q, 0) + int(cells[8])
                rows.setdefault(q, []).append(
                    (int(cells[6]), int(cells[7]) - 1 if cells[7] else None, int(cells[8])))
            elif len(cells) == 21:
                measured[cells[6]] = int(cells[15])  # the calls measured
        t.log(f"CSV hist sums {sums}, measured {measured}")
        self.assertEqual(sorted(sums), ["task-clock", "wall-time"])
        for q, n in sums.items():
            self.assertEqual(n, measured[q], q)
        self.assertEqual(sums["wall-time"], N)
        self.assert_two_modes(rows["task-clock"], sums["task-clock"], "CSV task-clock")

    def test_linear(self):
        text = self.run_text(["--hist=task-clock", "--hist-linear=0,1200us,100us"])
        drawings = parse_drawings(text)
        self.assertEqual(len(drawings), 1, text)
        d = drawings[0]
        self.assertEqual(d["linear"], "0,1200us,100us")
        self.assertTrue(d["moved"], "100 us is no bucket bound: the drawing says edges moved")
        rows = d["rows"]
        self.assertEqual(sum(c for _, _, c in rows), d["calls"])
        first = rows[0]
        self.assertEqual(first[0], 0)
        self.assertLess(abs(first[1] + 1 - 100000), 1000, "the first edge within 1% of 100 us")
        fast = sum(c for lo, hi, c in rows if hi is not None and hi < FAST_BELOW)
        self.assertGreaterEqual(fast, min_mode(d["calls"]), "the fast calls below 256 us")
        between = sum(c for lo, hi, c in rows if lo >= FAST_BELOW and hi is not None
                      and hi < 900000)
        self.assertLessEqual(between, NOISE, "calls between the modes")
        slow = sum(c for lo, hi, c in rows if lo >= 900000)
        self.assertGreaterEqual(slow, min_mode(d["calls"]), "the slow calls around 1 ms")
        for (lo, hi, _) in rows[:-1]:  # edges within 1% of a multiple of 100 us
            edge = hi + 1
            self.assertLessEqual(abs(edge - round(edge / 100000) * 100000), edge / 100, (lo, hi))

    def test_intervals_draw_their_own_calls(self):
        cmd = [self.wl, "bimodal", "400", str(FAST_US), str(SLOW_US)]
        s = t.stat(["-I", "100", "--hist=task-clock", "-e", "task-clock", "--func", self.func],
                   command=cmd, fmt="text")
        self.assertEqual(s.returncode, 0, s.stderr)
        ticks = re.split(r"^# [\d.]+ s$", s.text, flags=re.M)
        self.assertGreaterEqual(len(ticks), 3, s.text)  # at least two intervals
        drawn = 0
        for tick in ticks[1:]:
            body = tick.split("Function counter stats")[0]  # the summary comes after
            calls = int(re.search(r"([\d,]+) calls?, ([\d,]+) not counted", body).group(1)
                        .replace(",", ""))
            for d in parse_drawings(body):
                self.assertEqual(sum(c for _, _, c in d["rows"]), d["calls"])
                self.assertLessEqual(d["calls"], calls)
                drawn += d["calls"]
        final = parse_drawings(s.text.split("Function counter stats")[-1])
        self.assertEqual(len(final), 1)
        t.log(f"intervals drew {drawn} calls, the summary {final[0]['calls']}")
        self.assertEqual(drawn, final[0]["calls"], "the intervals add up to the run")

    def test_ndjson_intervals_carry_their_buckets(self):
        cmd = [self.wl, "bimodal", "400", str(FAST_US), str(SLOW_US)]
        s = t.func_stat(["-I", "100", "-e", "task-clock", "--func", self.func], command=cmd)
        self.assertEqual(s.returncode, 0, s.stderr)
        intervals = [r for r in s.records if r["type"] == "interval"]
        self.assertGreaterEqual(len(intervals), 2)
        total = 0
        for r in intervals:
            tc = t.func_row(r, self.func)["events"]["task-clock"]
            self.assertEqual(sum(b[2] for b in tc["buckets"]), tc["measured_calls"])
            total += tc["measured_calls"]
        summary = t.func_row(s.json, self.func)["events"]["task-clock"]
        self.assertEqual(sum(b[2] for b in summary["buckets"]), summary["measured_calls"])
        self.assertEqual(total, summary["measured_calls"])

    def test_bad_input(self):
        base = ["stat", "-e", "task-clock,page-faults", "--func", self.func]
        cases = [
            (["--hist=wall,task-clok"], ["task-clok"], "did you mean 'task-clock'"),
            (["--hist=wall,"], ["an empty name"], "it draws wall, oncpu"),
            (["--hist", "wall"], ["--hist", "'wall' as the command"], "--hist=wall"),
            (["--hist=page-faults", "--hist-linear=0,2ms,100us"], ["page-faults", "times"],
             "--hist=wall"),
            (["--hist-linear=0,2ms"], ["MIN,MAX,STEP"], "lhist"),
        ]
        for args, mentions, hint in cases:
            tail = [] if args[-1] == "wall" else ["--", *self.cmd]
            proc = t.run_pmcprof([*base, *args, *tail])
            line = t.assert_clean_error(self, proc, exit_code=129,
                                        mentions=[re.escape(m) for m in mentions])
            self.assertIn(hint, proc.stderr, args)
            self.assertNotIn('"mode"', proc.stdout, f"{args}: the workload ran")
            t.log(f"{' '.join(args)}: {line}")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes"), doc=__doc__))

#!/usr/bin/env python3
"""The per-thread frame stack of function mode (bpf/func.bpf.c) across regions, exec and signal
stacks, against tests/workloads/frames_workload.c, whose counts are known exactly. Every figure
asserted is a count (calls, depth_overflow "too deep", unmatched_exits "unmatched returns",
abandoned "never returned", open "starts never ended"), never a time.

- a region that ends inside a probed call (issue 22, defect 2): `region_end_inside 100`:
  region_begin(); g(), and g calls region_end() half-way. --region region_begin,region_end and
  --func g: g 100 calls and the region 100, nothing abandoned, unmatched or open, in the kernel
  and the stream aggregation. (Before the fix the region's end took g's live frame with it as
  abandoned: g 0 calls, 100 abandoned, 100 unmatched returns.)
- exec resets a thread's frames (defect 3): `exec_deep 20 100`: descend() recurses 20 levels
  (16 measured frames, 4 too deep) and at the bottom execs this program, whose new image calls
  leaf() 100 times: leaf 100 calls, none too deep; descend 0 calls, its 16 frames abandoned
  (the text report's "16 never returned"), 4 too deep, no unmatched return. `exec_regions 20
  100`: 20 regions started and never ended at exec (16 frames, 4 too deep): leaf 100 calls;
  the region 0 calls, 16 abandoned, 4 too deep, none open. (Before: the stale frames stayed, so
  every leaf call was too deep: 100 of 100; and until on_exec was attached, the same.)
- signal handlers on a sigaltstack (defect 6): `altstack 100 below`: f() signals its own thread
  100 times and the SA_ONSTACK handler calls h() on an alt stack below the thread's stack: f and
  h 100 calls each, nothing abandoned or unmatched. This does not tell the fix from the code
  before it, which only went wrong with the alt stack *above* the interrupted frame (h's stack
  pointer above f's: f popped as abandoned, its return unmatched). That layout (`altstack N
  above`) cannot be measured with uretprobes on both functions: the kernel's own uretprobe
  bookkeeping (x86 arch_uretprobe_is_alive: alive while sp < the instance's stack) drops f's
  return instance when h's uretprobe is armed above it, and f's return then dies of SIGILL
  (seen on Linux 6.18 with any pmcprof: exit 132 after one call of h). The test holds that the
  ordinary layout stays exact.

Usage: test_func_frames.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import unittest

import pmcprof_testlib as t

N = 100
DEPTH = 20  # deeper than the BPF stack of 16 frames
MAX_DEPTH = 16

NOT_MEASURED = ("depth_overflow", "unmatched_exits", "abandoned")

class FramesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.wl = t.workload("frames_workload")

    def sym(self, name):
        return f"{self.wl}:{name}"

    def region(self):
        return f"{self.sym('region_begin')},{self.sym('region_end')}"

    def stat(self, args, command, **kw):
        s = t.func_stat(["-e", "task-clock", *args], command=command, **kw)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertTrue(s.json, f"no report: {s.stderr}")
        self.assertEqual(s.json["lost"], 0)
        return s

    def counts(self, row):
        got = {key: row[key] for key in ("calls", *NOT_MEASURED)}
        if row["kind"] == "region":
            got["open"] = row["open"]
        return got

    def check(self, report, function, want, tag):
        row = t.func_row(report, function)
        got = self.counts(row)
        t.log(f"{tag} {function.rsplit('/', 1)[-1]}: {got}")
        self.assertEqual(got, want, f"{tag} {function}")
        self.assertEqual(row["lost"], 0)
        return row

    def test_region_ends_inside_a_probed_call(self):
        s = self.stat(["--aggregate", "both", "--region", self.region(), "--func", self.sym("g")],
                      [self.wl, "region_end_inside", str(N)])
        self.assertEqual(s.workload, [{"mode": "region_end_inside", "calls": N}])
        for agg in ("stream", "kernel"):
            rep = t.report_of(s, agg)
            self.check(rep, self.sym("g"), {"calls": N, "depth_overflow": 0,
                                            "unmatched_exits": 0, "abandoned": 0}, f"[{agg}]")
            self.check(rep, self.region(), {"calls": N, "depth_overflow": 0,
                                             "unmatched_exits": 0, "abandoned": 0, "open": 0},
                       f"[{agg}]")

    def test_exec_deep_in_a_probed_recursion(self):
        args = ["--func", self.sym("descend"), "--func", self.sym("leaf")]
        command = [self.wl, "exec_deep", str(DEPTH), str(N)]
        s = self.stat(args, command)
        # The new image prints the line: the exec happened.
        self.assertEqual(s.workload, [{"mode": "calls", "calls": N}])
        self.check(s.json, self.sym("leaf"), {"calls": N, "depth_overflow": 0,
                                              "unmatched_exits": 0, "abandoned": 0}, "[exec]")
        self.check(s.json, self.sym("descend"),
                   {"calls": 0, "depth_overflow": DEPTH - MAX_DEPTH, "unmatched_exits": 0,
                    "abandoned": MAX_DEPTH}, "[exec]")
        text = t.stat(["-e", "task-clock", *args], command=command, fmt="text").text
        self.assertRegex(text, rf"{DEPTH - MAX_DEPTH} too deep, 0 unmatched returns, "
                               rf"{MAX_DEPTH} never returned \(not measured\)")

    def test_exec_with_regions_never_ended(self):
        s = self.stat(["--region", self.region(), "--func", self.sym("leaf")],
                      [self.wl, "exec_regions", str(DEPTH), str(N)])
        self.assertEqual(s.workload, [{"mode": "calls", "calls": N}])
        self.check(s.json, self.sym("leaf"), {"calls": N, "depth_overflow": 0,
                                              "unmatched_exits": 0, "abandoned": 0},
                   "[exec regions]")
        self.check(s.json, self.region(),
                   {"calls": 0, "depth_overflow": DEPTH - MAX_DEPTH, "unmatched_exits": 0,
                    "abandoned": MAX_DEPTH, "open": 0}, "[exec regions]")

    def test_signal_handler_on_a_sigaltstack(self):
        s = self.stat(["--func", self.sym("f"), "--func", self.sym("h")],
                      [self.wl, "altstack", str(N), "below"])
        self.assertEqual(len(s.workload), 1, s.stdout)
        truth = s.workload[0]
        self.assertEqual((truth["handled"], truth["h_above_f"]), (N, False), truth)
        for name in ("f", "h"):
            self.check(s.json, self.sym(name), {"calls": N, "depth_overflow": 0,
                                                "unmatched_exits": 0, "abandoned": 0},
                       "[sigaltstack below]")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes"), doc=__doc__))

#!/usr/bin/env python3
"""Per-cgroup counting of nested cgroups: a parent's count includes its children's, in both backends.

Cgroups P, P/c1, P/c1/g (a grandchild) and P/c2 under the cgroup v2 mount. Two
`pmcprof stat -a -e task-clock -G P/c1/g,P,P/c2,P/c1` run side by side (fd and bpf backend;
the list is deliberately not in tree order). Once both count, three burns run at once:
150 ms in P/c1/g, 150 ms in P/c2 and 60 ms in P itself. Then, for each backend:
- g and c1 are each within 3% of the grandchild burn's CPU time (c1 runs nothing itself);
- c2 is within 3% of its burn's CPU time;
- P is within 3% of all three burns together, and P >= c1 + c2 (a parent includes its
  children, in the BPF backend by charging every watched ancestor);
- the bpf figures are within 3% of the fd ones.

Usage: test_cgroup_nested.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import unittest

import pmcprof_testlib as t


class NestedTest(unittest.TestCase):
    def test_parent_includes_children(self):
        burn = t.workload("burn")
        with t.TestCgroups("nested") as cg:
            P, c1, g, c2 = cg.make("P"), cg.make("P/c1"), cg.make("P/c1/g"), cg.make("P/c2")
            args = ["-a", "-e", "task-clock", "-G", f"{g},{P},{c2},{c1}"]
            runs = {}
            try:
                for be in ("fd", "bpf"):
                    runs[be] = t.BackgroundStat([*args, "--cgroup-backend", be], hold=True)
                for r in runs.values():
                    r.wait_ready()
                procs = {"g": cg.spawn_in("P/c1/g", [burn, "150"]),
                         "c2": cg.spawn_in("P/c2", [burn, "150"]),
                         "P": cg.spawn_in("P", [burn, "60"])}
                cpu = {}
                for k, p in procs.items():
                    out, err = p.communicate(timeout=30)
                    self.assertEqual(p.returncode, 0, err)
                    cpu[k] = t.parse_kv(out, "burn")["process_cpu_ns"]
                stats = {be: r.finish() for be, r in runs.items()}
            finally:
                for r in runs.values():
                    if r.proc.poll() is None:
                        r.kill()
            t.log("workload CPU: " + ", ".join(f"{k} {v / 1e6:.2f} ms" for k, v in cpu.items()))
            expect = {g: cpu["g"], c1: cpu["g"], c2: cpu["c2"], P: sum(cpu.values())}
            got = {}
            for be, s in stats.items():
                self.assertEqual(s.returncode, 0, f"{be}: {s.stderr}")
                self.assertEqual(s.json.get("cgroup_backend"), be)
                rows = t.cgroup_rows(s.json, "task-clock")
                self.assertEqual(set(rows), set(expect), f"{be}: rows")
                v = {name: t.cgroup_value(row) for name, row in rows.items()}
                got[be] = v
                t.log(f"[{be:3}] " + ", ".join(
                    f"{name.rsplit('/', 1)[-1] if name != P else 'P'} {v[name] / 1e6:.2f} ms "
                    f"({100 * (v[name] / expect[name] - 1):+.2f}%)" for name in (P, c1, g, c2)))
                for name, want in expect.items():
                    t.assert_within(self, v[name], want, 0.03, f"{be}: {name} task-clock")
                self.assertGreaterEqual(v[P], v[c1] + v[c2] - 1e5,
                                        f"{be}: parent below the sum of its children")
            for name in expect:
                t.assert_within(self, got["bpf"][name], got["fd"][name], 0.03,
                                f"bpf vs fd for {name}")


if __name__ == "__main__":
    sys.exit(t.main(requires_root=True, doc=__doc__))

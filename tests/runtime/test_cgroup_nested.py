#!/usr/bin/env python3
"""Per-cgroup counting of nested cgroups: a parent's count includes its children's, in both backends.

Cgroups P, P/c1, P/c1/g (a grandchild) and P/c2 under the cgroup v2 mount. Two
`pmcprof stat -a -e task-clock -G P/c1/g,P,P/c2,P/c1` run side by side (fd and bpf backend;
the list is deliberately not in tree order). Once both count, three burns run at once, each
born in its cgroup (TestCgroups.spawn_burn): 150 ms in P/c1/g, 150 ms in P/c2 and 60 ms in P
itself. Against each burn's own task-clock over its life (the reference and its bounds:
pmcprof_testlib, "the workload's own task-clock"), for each backend:
- g and c1 are each the grandchild burn's (c1 runs nothing itself);
- c2 is its burn's;
- P is all three burns' together (three burns' edges), and P >= c1 + c2 (a parent includes
  its children, in the BPF backend by charging every watched ancestor);
the bounds include the run's steal.

Usage: test_cgroup_nested.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import unittest

import pmcprof_testlib as t


class NestedTest(unittest.TestCase):
    def test_parent_includes_children(self):
        with t.TestCgroups("nested") as cg:
            P, c1, g, c2 = cg.make("P"), cg.make("P/c1"), cg.make("P/c1/g"), cg.make("P/c2")
            args = ["-a", "-e", "task-clock", "-G", f"{g},{P},{c2},{c1}"]
            runs = {}
            try:
                for be in ("fd", "bpf"):
                    runs[be] = t.BackgroundStat([*args, "--cgroup-backend", be], hold=True)
                for r in runs.values():
                    r.wait_ready()
                with t.Steal() as steal:
                    procs = {"g": cg.spawn_burn("P/c1/g", 150),
                             "c2": cg.spawn_burn("P/c2", 150),
                             "P": cg.spawn_burn("P", 60)}
                    life, burns, switches = {}, {}, {}
                    for k, p in procs.items():
                        out, err = p.communicate(timeout=30)
                        self.assertEqual(p.returncode, 0, err)
                        life[k], burns[k] = t.burn_life(out), t.parse_kv(out, "burn")
                        switches[k] = t.burn_switches(out)
                    stats = {be: r.finish() for be, r in runs.items()}
            finally:
                for r in runs.values():
                    if r.proc.poll() is None:
                        r.kill()
            for k in procs:
                t.log(f"burn in {k}: {t.describe_burn(burns[k], life[k])}")
            t.log(f"steal {steal.ns / 1e6:.0f} ms")
            expect = {g: life["g"], c1: life["g"], c2: life["c2"], P: sum(life.values())}
            burns_in = {g: 1, c1: 1, c2: 1, P: 3}
            switched = {g: switches["g"], c1: switches["g"], c2: switches["c2"],
                        P: sum(switches.values())}
            # A cgroup's clock follows its tasks' CPU time; a burn's whole-life counter fell
            # behind its own CPU time beside a busy emulator (150.25 ms against 158.10 ms: the
            # cgroup counted 160.03 ms), so each cgroup may hold its burns' CPU time beyond it.
            beyond = {k: t.cpu_beyond_ns(burns[k], life[k]) for k in procs}
            cpu_extra = {g: beyond["g"], c1: beyond["g"], c2: beyond["c2"],
                         P: sum(beyond.values())}
            for be, s in stats.items():
                self.assertEqual(s.returncode, 0, f"{be}: {s.stderr}")
                self.assertEqual(s.json.get("cgroup_backend"), be)
                rows = t.cgroup_rows(s.json, "task-clock")
                self.assertEqual(set(rows), set(expect), f"{be}: rows")
                v = {name: t.cgroup_value(row) for name, row in rows.items()}
                t.log(f"[{be:3}] " + ", ".join(
                    f"{name.rsplit('/', 1)[-1] if name != P else 'P'} {v[name] / 1e6:.2f} ms "
                    f"({(v[name] - expect[name]) / 1e6:+.3f})" for name in (P, c1, g, c2)) +
                    (f"; set aside {t.uncharged_ns(s.json) / 1e6:.2f} ms after "
                     f"{s.json['cgroup_uncharged']['unreported_switches']} unreported switch(es)"
                     if be == "bpf" else ""))
                for name, want in expect.items():
                    t.assert_task_clock(self, v[name], want, f"{be}: {name} task-clock",
                                        t.CGROUP_EDGES_NS, n=burns_in[name],
                                        extra_ns=t.cgroup_extra_ns(steal, switched[name])
                                        + cpu_extra[name], below_ns=t.uncharged_ns(s.json))
                self.assertGreaterEqual(v[P], v[c1] + v[c2] - 1e5,
                                        f"{be}: parent below the sum of its children")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "cgroup2"), doc=__doc__))

#!/usr/bin/env python3
"""Per-cgroup counting of deep cgroup trees: the BPF backend counts what the fd backend counts, or refuses clearly.

The BPF backend finds the watched cgroups of the task that leaves a CPU by walking its
ancestors in the kernel, which has fixed bounds. Two trees test both backends (run side by
side on the same `burn 100`, born in the deepest cgroup: TestCgroups.spawn_burn) against the
burn's own task-clock over its whole life (the reference and its bounds: pmcprof_testlib,
"the workload's own task-clock"):
- a chain of 10 nested cgroups, all watched (`--for-each-cgroup` on the directory above the
  chain), the burn in the deepest: every one of the 10 includes the burn (a parent includes
  its children), so each row must be the burn's task-clock;
- one cgroup 18 levels below the v2 root (`-G` on it alone), the burn in it.
The fd rows must be within those bounds; the bpf run either agrees (within the same bounds) or, if the backend cannot count such a tree, fails
cleanly (one 'pmcprof:' line, non-zero exit) instead of reporting 0 for cgroups that ran.

Usage: test_cgroup_deep.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import unittest

import pmcprof_testlib as t


class DeepTest(unittest.TestCase):
    def run_both(self, cg, chain, selection):
        runs = {}
        try:
            for be in ("fd", "bpf"):
                runs[be] = t.BackgroundStat(["-a", "-e", "task-clock", *selection,
                                             "--cgroup-backend", be], hold=True)
            for be, r in runs.items():
                try:
                    r.wait_ready()
                except AssertionError:
                    if be == "bpf":  # a clean refusal is allowed: checked below
                        continue
                    raise
            with t.Steal() as steal:
                p = cg.spawn_burn(chain, 100)
                out, err = p.communicate(timeout=30)
                self.assertEqual(p.returncode, 0, err)
                stats = {be: r.finish() for be, r in runs.items()}
        finally:
            for r in runs.values():
                if r.proc.poll() is None:
                    r.kill()
        t.log(f"burn: {t.describe_burn(t.parse_kv(out, 'burn'), t.burn_life(out))}; "
              f"steal {steal.ns / 1e6:.0f} ms")
        self.switches = t.burn_switches(out)
        return t.burn_life(out), steal, stats

    def check(self, life, steal, stats, expect_names):
        fd = stats["fd"]
        self.assertEqual(fd.returncode, 0, fd.stderr)
        fd_rows = {n: t.cgroup_value(r) for n, r in t.cgroup_rows(fd.json, "task-clock").items()}
        self.assertEqual(sorted(fd_rows), sorted(expect_names))
        for n, v in fd_rows.items():
            t.assert_task_clock(self, v, life, f"fd: {n}", t.CGROUP_EDGES_NS,
                                extra_ns=t.cgroup_extra_ns(steal, self.switches))
        bpf = stats["bpf"]
        if bpf.returncode != 0:
            line = t.assert_clean_error(self, bpf.proc)
            t.log(f"bpf refused: {line}")
            return
        rows = {n: t.cgroup_value(r) for n, r in t.cgroup_rows(bpf.json, "task-clock").items()}
        by_depth = sorted(rows, key=lambda n: n.count("/"))
        t.log("depth: fd ms / bpf ms: " + ", ".join(
            f"{n.count('/')}: {fd_rows[n] / 1e6:.1f}/{rows[n] / 1e6:.1f}" for n in by_depth))
        self.assertEqual(sorted(rows), sorted(expect_names))
        for n in by_depth:
            t.assert_task_clock(self, rows[n], life, f"bpf: {n} (level {n.count('/')})",
                                t.CGROUP_EDGES_NS,
                                extra_ns=t.cgroup_extra_ns(steal, self.switches),
                                below_ns=t.uncharged_ns(bpf.json))

    def test_ten_watched_ancestors(self):
        with t.TestCgroups("deep10") as cg:
            levels = [f"l{i}" for i in range(1, 11)]
            chain = "/".join(levels)
            cg.make(chain)
            names = [cg.rel("/".join(levels[:i])) for i in range(1, 11)]
            t.log("10 watched cgroups on one path")
            life, steal, stats = self.run_both(cg, chain,
                                               ["--for-each-cgroup", cg.base_rel.lstrip("/")])
            self.check(life, steal, stats, names)

    def test_cgroup_18_levels_down(self):
        with t.TestCgroups("deep18") as cg:
            # The private parent is level 1: 17 more levels below it.
            chain = "/".join(f"d{i}" for i in range(2, 19))
            name = cg.make(chain)
            self.assertEqual(name.count("/"), 18)
            t.log("-G on a cgroup at level 18")
            life, steal, stats = self.run_both(cg, chain, ["-G", name])
            self.check(life, steal, stats, [name])


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "cgroup2"), doc=__doc__))

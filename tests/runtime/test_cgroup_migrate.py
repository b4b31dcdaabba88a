#!/usr/bin/env python3
"""Per-cgroup counting when a running task is moved to another cgroup: both backends split its time alike.

Cgroups A and B under the cgroup v2 mount; `pmcprof stat -a -e task-clock,context-switches
-G A,B` with the fd and the bpf backend run side by side. `burn 400` starts in A (born there:
TestCgroups.spawn_burn), pinned to the last CPU and SCHED_FIFO, so nothing preempts it: it
makes (almost) no context switch while it runs. Once it has run 100 ms (its own schedstat: a
loaded machine may be slow to find it, so not a sleep) the test (on another CPU) writes its PID
into B's cgroup.procs; the burn keeps running there. The fd backend (the kernel switches perf cgroup events at the migration,
with an IPI to the task's CPU) splits its CPU time between A and B.

The BPF backend charges each on-CPU stretch when it ends (a context switch, or pmcprof's read)
to the cgroup the task is in then: BPF cannot read another CPU's counter at the moment of the
move, and no hook runs on the task's CPU at a move without a context switch (perf's own BPF
cgroup counting, bperf-cgroup, has the same limit). So the stretch that spans the move goes
to B. What must hold in both backends: A + B is the burn's own task-clock over its life (nothing
lost, nothing counted twice; the reference and its bounds, with the run's steal:
pmcprof_testlib, "the workload's own task-clock"); and in BPF nothing is charged to A after the move beyond that stretch,
i.e. A(bpf) <= A(fd) + 3 ms. The limitation is documented (man page, PER-CGROUP MODE).

Usage: test_cgroup_migrate.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import os
import sys
import unittest

import pmcprof_testlib as t


BURN_MS, MOVE_AT_MS = 400, 100


def oncpu_ms(pid):
    """PID's own CPU time so far (the first field of /proc/PID/schedstat, ns), in ms; 0 once it
    is gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e6
    except (OSError, ValueError, IndexError):
        return 0.0


class MigrateTest(unittest.TestCase):
    @t.requires("cpus:2")  # the burn has one to itself, the test moves it from another
    def test_running_task_moved(self):
        cpus = t.online_cpus()
        pin = cpus[-1]

        def realtime_pinned():
            os.sched_setaffinity(0, {pin})
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))

        with t.TestCgroups("migrate") as cg:
            A, B = cg.make("a"), cg.make("b")
            args = ["-a", "-e", "task-clock,context-switches", "-G", f"{A},{B}"]
            runs = {}
            try:
                for be in ("fd", "bpf"):
                    runs[be] = t.BackgroundStat([*args, "--cgroup-backend", be], hold=True)
                for r in runs.values():
                    r.wait_ready()
                os.sched_setaffinity(0, set(cpus) - {pin})
                try:
                    with t.Steal() as steal:
                        p = cg.spawn_burn("a", BURN_MS, setup=realtime_pinned)
                        # The burn runs in a worker born in A, the child of the process started
                        # (a scan of /proc, which takes a while on a busy machine: hence the move
                        # at the worker's own CPU time, not at a time after this scan).
                        worker = []

                        def found():
                            worker.extend(t.children_of(p.pid))
                            return bool(worker)

                        self.assertTrue(t.wait_for(found, 5, step=0.001),
                                        "burn's worker did not start")
                        t.wait_for(lambda: oncpu_ms(worker[0]) >= MOVE_AT_MS
                                   or not os.path.exists(f"/proc/{worker[0]}"), 5, step=0.001)
                        moved_at = oncpu_ms(worker[0])
                        t.move_to_cgroup(worker[0], cg.abs("b"))
                        out, err = p.communicate(timeout=30)
                        self.assertEqual(p.returncode, 0, err)
                        stats = {be: r.finish() for be, r in runs.items()}
                finally:
                    os.sched_setaffinity(0, set(cpus))
            finally:
                for r in runs.values():
                    if r.proc.poll() is None:
                        r.kill()
            w, life = t.parse_kv(out, "burn"), t.burn_life(out)
            t.log(f"burn: {t.describe_burn(w, life)}; steal {steal.ns / 1e6:.0f} ms; moved "
                  f"after {moved_at:.1f} ms of its CPU time")
            got = {}
            for be, s in stats.items():
                self.assertEqual(s.returncode, 0, f"{be}: {s.stderr}")
                tc = t.cgroup_rows(s.json, "task-clock")
                cs = t.cgroup_rows(s.json, "context-switches")
                got[be] = {n: t.cgroup_value(tc[n]) for n in (A, B)}
                t.log(f"[{be:3}] A {got[be][A] / 1e6:.2f} ms ({t.cgroup_value(cs[A]):.0f} "
                      f"switches), B {got[be][B] / 1e6:.2f} ms ({t.cgroup_value(cs[B]):.0f} "
                      f"switches)")
            for be in got:
                t.assert_task_clock(self, got[be][A] + got[be][B], life,
                                    f"{be}: A + B vs the burn's own task-clock",
                                    t.CGROUP_EDGES_NS,
                                    extra_ns=t.cgroup_extra_ns(steal),
                                    below_ns=t.uncharged_ns(stats[be].json))
            self.assertGreater(got["fd"][A], 20e6, "the move came too early to tell")
            self.assertGreater(got["fd"][B], 20e6, "the move came too late to tell")
            self.assertLessEqual(got["bpf"][A], got["fd"][A] + 3e6,
                                 "bpf charged A with time after the move")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "cgroup2"), doc=__doc__))

#!/usr/bin/env python3
"""Per-cgroup counting: a busy cgroup gets its workload's CPU time, an idle one ~0, in both backends.

The test makes two cgroups under the cgroup v2 mount (found in /proc/self/mountinfo), BUSY and
IDLE, and starts three `pmcprof stat -a -e task-clock,context-switches -G BUSY,IDLE -j` side by
side: `--cgroup-backend fd`, `--cgroup-backend bpf` and the automatic choice (2 cgroups: fd),
each with a command that holds it until the test lets it go (`cat FIFO`). Once all three count,
`burn 300` starts inside BUSY and `sleep 0.4` inside IDLE; when both are done, the three runs
are let go. Then:
- each backend's BUSY task-clock is the burn's own task-clock over its life (the burn is born
  in BUSY: TestCgroups.spawn_burn; the reference and its bounds, CGROUP_EDGES_NS and the run's
  steal: pmcprof_testlib, "the workload's own task-clock");
- IDLE is near 0 (< 5 ms: a sleep's exec; "not-counted" when it ran nothing counts as 0);
- each row names its cgroup (path relative to the mount) and its cgroup_id (the directory's
  inode), cgroup_removed is false, and the report's cgroup_backend is what was asked for.
A short CSV run then checks the cgroup column there.

Usage: test_cgroup_busy_idle.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import time
import unittest

import pmcprof_testlib as t

BURN_MS = 300


class BusyIdleTest(unittest.TestCase):
    def test_busy_and_idle_both_backends(self):
        with t.TestCgroups("busyidle") as cg:
            busy, idle = cg.make("busy"), cg.make("idle")
            args = ["-a", "-e", "task-clock,context-switches", "-G", f"{busy},{idle}"]
            runs = {}
            try:
                for be in ("fd", "bpf", "auto"):
                    runs[be] = t.BackgroundStat([*args, "--cgroup-backend", be], hold=True)
                for r in runs.values():
                    r.wait_ready()
                t0 = time.monotonic()
                with t.Steal() as steal:
                    pb = cg.spawn_burn("busy", BURN_MS)
                    pi = cg.spawn_in("idle", ["sleep", "0.4"], stdout=t.subprocess.DEVNULL,
                                     stderr=t.subprocess.DEVNULL)
                    out, err = pb.communicate(timeout=30)
                    idle_cpu = t.reap_cpu_ns(pi)
                    burn_done = time.monotonic() - t0
                    self.assertEqual(pb.returncode, 0, err)
                    stats = {be: r.finish() for be, r in runs.items()}
            finally:
                for r in runs.values():
                    if r.proc.poll() is None:
                        r.kill()
            w, life = t.parse_kv(out, "burn"), t.burn_life(out)
            t.log(f"burn in {busy}: {t.describe_burn(w, life)}, done {burn_done:.3f} s after "
                  f"start; steal {steal.ns / 1e6:.0f} ms")

            busy_tc = {}
            for be, s in stats.items():
                self.assertEqual(s.returncode, 0, f"{be}: {s.stderr}")
                self.assertIsNotNone(s.json, f"{be}: no JSON report: {s.stderr}")
                want_backend = "fd" if be == "auto" else be
                self.assertEqual(s.json.get("cgroup_backend"), want_backend,
                                 f"{be}: cgroup_backend")
                tc = t.cgroup_rows(s.json, "task-clock")
                cs = t.cgroup_rows(s.json, "context-switches")
                self.assertEqual(set(tc), {busy, idle}, f"{be}: task-clock rows")
                self.assertEqual(set(cs), {busy, idle}, f"{be}: context-switches rows")
                for name, key in ((busy, "busy"), (idle, "idle")):
                    self.assertEqual(tc[name]["cgroup_id"], t.cgroup_id(cg.abs(key)),
                                     f"{be}: cgroup_id of {name}")
                    self.assertFalse(tc[name]["cgroup_removed"], f"{be}: {name} marked removed")
                b, i = t.cgroup_value(tc[busy]), t.cgroup_value(tc[idle])
                t.log(f"[{be:4}] {busy}: task-clock {b / 1e6:.2f} ms "
                      f"({(b - life) / 1e6:+.3f} ms vs the burn's task-clock), "
                      f"{t.cgroup_value(cs[busy]):.0f} switches; {idle}: task-clock "
                      f"{i / 1e6:.3f} ms ({tc[idle]['status']}), "
                      f"{t.cgroup_value(cs[idle]):.0f} switches")
                t.assert_task_clock(self, b, life, f"{be}: busy cgroup's task-clock",
                                    t.CGROUP_EDGES_NS,
                                    extra_ns=t.cgroup_extra_ns(steal, t.cgroup_value(cs[busy])),
                                    below_ns=t.uncharged_ns(s.json))
                # The idle cgroup holds a sleep: its start (fork, exec, the loader) and nothing
                # else; at most its whole life's CPU time, and under 5 ms on a quiet machine.
                self.assertLessEqual(i, idle_cpu * (1 + t.CLOCK_REL) + t.cgroup_extra_ns(steal),
                                     f"{be}: idle cgroup's task-clock {i / 1e6:.3f} ms is more "
                                     f"than its sleep's whole life, {idle_cpu / 1e6:.3f} ms")
                busy_tc[be] = b
            t.log(f"bpf vs fd on the same run: {(busy_tc['bpf'] - busy_tc['fd']) / 1e6:+.3f} ms")

    def test_csv_has_cgroup_column(self):
        with t.TestCgroups("busyidle-csv") as cg:
            x = cg.make("x")
            s = t.stat(["-a", "-e", "task-clock", "-G", f"/,{x}", "-x,"], ["true"], fmt="csv")
            self.assertEqual(s.returncode, 0, s.stderr)
            rows = [l.split(",") for l in s.text.splitlines() if l and not l.startswith("#")]
            t.log(f"CSV rows: {rows}")
            self.assertEqual(sorted(r[3] for r in rows), sorted(["/", x]),
                             "the 4th CSV field is not the cgroup path")
            self.assertTrue(all(r[2] == "task-clock" for r in rows))
            ids = {r[3]: r[4] for r in rows}
            self.assertEqual(ids[x], str(t.cgroup_id(cg.abs("x"))), "cgroup_id CSV field")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "cgroup2"), doc=__doc__))

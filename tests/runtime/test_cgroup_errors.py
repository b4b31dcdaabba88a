#!/usr/bin/env python3
"""Per-cgroup bad input and a cgroup removed while counting.

- A cgroup that does not exist (given relative to the v2 mount, with and without a leading
  '/', in counting mode and as a --func filter): one 'pmcprof:' line naming the cgroup and the
  cgroup v2 mount searched (at most one HINT line), non-zero exit.
- A cgroup v1 path (the root of a v1 hierarchy, and a cgroup made inside it for the test;
  skipped where no v1 hierarchy is mounted): one clear line saying it is not cgroup v2.
- -G / --for-each-cgroup without -a: one clear line that asks for -a.
- A cgroup removed mid-run, for both backends at once: two `pmcprof stat -a -e task-clock
  -G X -I 400 --summary --timeout 2000` (fd, bpf) on an empty cgroup X; once both count, `burn 100` runs
  in X and a `sleep 30` goes in and is moved out again, then X is removed (rmdir) while both
  still count. Both end on their own: exit 0, no crash text, X's row is kept in every interval
  and the summary, with the summary's cgroup_removed true and its task-clock still the burn's
  own task-clock over its life (born in X: TestCgroups.spawn_burn; bounds as in
  pmcprof_testlib, "the workload's own task-clock"); no pmcprof BPF program is left loaded; and the interval
  records that end after the removal mark X removed too (those before do not).

Usage: test_cgroup_errors.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import os
import sys
import time
import unittest

import pmcprof_testlib as t


class CgroupErrorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mount = t.cgroup2_mount()  # main() requires cgroup2

    def test_missing_cgroup(self):
        name = f"pmcprof-test-missing-{os.getpid()}/nope"
        for given in (name, "/" + name):
            for extra in (["-e", "task-clock", "--", "true"],
                          ["-e", "task-clock", "--func", "syscall:getppid", "--timeout", "100"]):
                s = t.run_pmcprof(["stat", "-a", "-G", given, *extra])
                line = t.assert_clean_error(self, s, mentions=(
                    r"nope", "not exist|no such|missing|not found", self.mount))
                t.log(f"-G {given} {' '.join(extra[:3])}: {line}")

    @t.requires("cgroup1")  # a hybrid layout
    def test_v1_path(self):
        v1 = t.cgroup_v1_mounts()
        root = v1.get("cpu") or sorted(v1.values())[0]
        made = os.path.join(root, f"pmcprof-test-v1-{os.getpid()}")
        os.mkdir(made)
        try:
            for path in (root, made):
                s = t.run_pmcprof(["stat", "-a", "-e", "task-clock", "-G", path, "--", "true"])
                line = t.assert_clean_error(self, s, mentions=(re_escape(path), r"v1|v2"))
                t.log(f"-G {path}: {line}")
        finally:
            for _ in range(100):
                try:
                    os.rmdir(made)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)

    def test_needs_all_cpus(self):
        for args in (["-G", "/"], ["--for-each-cgroup", "/"]):
            s = t.run_pmcprof(["stat", "-e", "task-clock", *args, "--", "true"])
            line = t.assert_clean_error(self, s, mentions=(r"-a\b",))
            t.log(f"{' '.join(args)} without -a: {line}")

    def test_removed_mid_run(self):
        with t.TestCgroups("removed") as cg:
            X = cg.make("x")
            runs = {}
            try:
                for be in ("fd", "bpf"):
                    runs[be] = t.BackgroundStat(["-a", "-e", "task-clock", "-G", X, "-I", "400",
                                                 "--summary", "--timeout", "2000",
                                                 "--cgroup-backend", be])
                runs["fd"].wait_ready(perf_fds=t.nproc_online())
                runs["bpf"].wait_ready(bpf_links=1)
                steal = t.Steal()
                with steal:
                    p = cg.spawn_burn("x", 100)
                    out, err = p.communicate(timeout=30)
                self.assertEqual(p.returncode, 0, err)
                sleeper = cg.spawn_in("x", ["sleep", "30"], stdout=t.subprocess.DEVNULL,
                                      stderr=t.subprocess.DEVNULL)
                time.sleep(0.05)
                t.move_to_cgroup(sleeper.pid, cg.mount)
                cg.remove("x")
                removed_unix_ns = time.time_ns()
                removed_at = time.monotonic() - min(r.t0 for r in runs.values())
                self.assertFalse(os.path.exists(cg.abs("x")))
                for be, r in runs.items():
                    self.assertIsNone(r.proc.poll(), f"{be} run ended before X was removed")
                sleeper.kill()
                # The sleeper ran in X from its fork to its exec of sleep (its move out came
                # later): part of X's task-clock, at most its whole life's CPU time.
                sleeper_cpu = t.reap_cpu_ns(sleeper)
                stats = {be: r.finish() for be, r in runs.items()}
            finally:
                for r in runs.values():
                    if r.proc.poll() is None:
                        r.kill()
            w, life = t.parse_kv(out, "burn"), t.burn_life(out)
            t.log(f"X removed {removed_at:.2f} s after the runs started; burn "
                  f"{t.describe_burn(w, life)}; steal {steal.ns / 1e6:.0f} ms")
            for be, s in stats.items():
                for marker in t.CRASH_MARKERS:
                    self.assertNotIn(marker, s.stderr, f"{be}: crash text")
                self.assertEqual(s.returncode, 0, f"{be}: {s.stderr}")
                self.assertIsNotNone(s.json, f"{be}: no summary: {s.stderr}")
                self.assertEqual(s.json["type"], "summary")
                intervals = [r for r in s.records if r.get("type") == "interval"]
                self.assertTrue(intervals, f"{be}: no interval records")
                for rec in intervals:
                    self.assertIn(X, t.cgroup_rows(rec, "task-clock"), f"{be}: interval row")
                row = t.cgroup_rows(s.json, "task-clock").get(X)
                self.assertIsNotNone(row, f"{be}: the removed cgroup's row is gone")
                v = t.cgroup_value(row)
                t.log(f"[{be:3}] {len(intervals)} intervals; summary {X}: task-clock "
                      f"{v / 1e6:.2f} ms, cgroup_removed={row['cgroup_removed']}, "
                      f"interval flags {[t.cgroup_rows(r, 'task-clock')[X]['cgroup_removed'] for r in intervals]}")
                self.assertTrue(row["cgroup_removed"], f"{be}: not marked removed")
                t.assert_task_clock(self, v, life, f"{be}: removed cgroup's task-clock",
                                    t.CGROUP_EDGES_NS,
                                    extra_ns=t.cgroup_extra_ns(steal) + sleeper_cpu,
                                    below_ns=t.uncharged_ns(s.json))
            left = t.wait_no_pmcprof_orphans()
            self.assertEqual(left, [], "pmcprof BPF programs left loaded")
            # -I: an interval that ends after X is gone marks it too (X's row stays in each).
            for be, s in stats.items():
                for rec in s.records:
                    if rec.get("type") != "interval":
                        continue
                    flag = t.cgroup_rows(rec, "task-clock")[X]["cgroup_removed"]
                    after = rec["timestamp_unix_ns"] > removed_unix_ns + 20_000_000
                    before = rec["timestamp_unix_ns"] < removed_unix_ns - 20_000_000
                    if after:
                        self.assertTrue(flag, f"{be}: interval at {rec['interval']:.2f} s, after "
                                              f"X was removed, has cgroup_removed false")
                    if before:
                        self.assertFalse(flag, f"{be}: interval before the removal marks X")


def re_escape(text):
    import re
    return re.escape(text)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "cgroup2"), doc=__doc__))

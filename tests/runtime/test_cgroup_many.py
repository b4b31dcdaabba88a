#!/usr/bin/env python3
"""--for-each-cgroup over many cgroups: all reported, the BPF backend chosen automatically.

The test makes a directory D under the cgroup v2 mount with 50 cgroups D/cg00 .. D/cg49.
- `pmcprof stat -a -e task-clock --for-each-cgroup D -j` (D without a leading '/'; held open while `burn 200` runs in
  D/cg17): 50 rows, exactly D/cg00..D/cg49 (D itself is not one of them), each with its
  cgroup_id; "cgroup_backend" is "bpf" (50 > the automatic threshold of 16); cg17's task-clock
  is the burn's own task-clock over its life (born in cg17: TestCgroups.spawn_burn; bounds in
  pmcprof_testlib, "the workload's own task-clock") and every other row is 0 ("not-counted");
- the same directory given as D with a leading '/' (relative to the mount, as -G takes it and
  as reports print it) and as an absolute path works the same;
- the regex form: `^D/cg[12][0-9]$` picks exactly the 20 cgroups cg10..cg29 (bpf), and the
  threshold sits where documented: 16 cgroups run with "fd", 17 with "bpf";
- a pattern that matches nothing, and a directory with no cgroups below it: one clear
  'pmcprof:' line naming the pattern and the mount searched, non-zero exit;
- 1100 cgroups under a soft RLIMIT_NOFILE of 1024 (a common default): the BPF backend, whose
  perf fds do not grow with the cgroups, reports all 1100.

Usage: test_cgroup_many.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import sys
import unittest

import pmcprof_testlib as t

N = 50
BUSY = 17
THRESHOLD = 16  # kCgroupBpfThreshold in include/pmcprof/run/counting_run.hpp


class ManyCgroupsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cg = t.TestCgroups("many").__enter__()
        try:
            cls.names = [cls.cg.make(f"cg{i:02d}") for i in range(N)]
        except BaseException:
            cls.cg.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.cg.cleanup()

    def rows_of(self, s):
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertIsNotNone(s.json, s.stderr)
        return t.cgroup_rows(s.json, "task-clock")

    def test_directory_50_cgroups_bpf(self):
        cg = self.cg
        r = t.BackgroundStat(["-a", "-e", "task-clock", "--for-each-cgroup",
                              cg.base_rel.lstrip("/")], hold=True)
        try:
            r.wait_ready()
            with t.Steal() as steal:
                p = cg.spawn_burn(f"cg{BUSY:02d}", 200)
                out, err = p.communicate(timeout=30)
                self.assertEqual(p.returncode, 0, err)
                s = r.finish()
        finally:
            if r.proc.poll() is None:
                r.kill()
        w, life = t.parse_kv(out, "burn"), t.burn_life(out)
        rows = self.rows_of(s)
        busy = self.names[BUSY]
        t.log(f"--for-each-cgroup {cg.base_rel.lstrip('/')}: {len(rows)} rows, backend "
              f"{s.json.get('cgroup_backend')}; {busy}: {t.cgroup_value(rows[busy]) / 1e6:.2f} ms "
              f"task-clock; burn {t.describe_burn(w, life)}; steal {steal.ns / 1e6:.0f} ms")
        self.assertEqual(s.json.get("cgroup_backend"), "bpf")
        self.assertEqual(sorted(rows), self.names, "not exactly the 50 cgroups below D")
        for name, row in rows.items():
            self.assertEqual(row["cgroup_id"], t.cgroup_id(cg.mount + name), f"id of {name}")
            self.assertFalse(row["cgroup_removed"])
        t.assert_task_clock(self, t.cgroup_value(rows[busy]), life, "busy cgroup's task-clock",
                            t.CGROUP_EDGES_NS,
                            extra_ns=t.cgroup_extra_ns(steal),
                            below_ns=t.uncharged_ns(s.json))
        idle = {n: t.cgroup_value(r) for n, r in rows.items() if n != busy}
        self.assertEqual([n for n, v in idle.items() if v != 0], [],
                         "cgroups that ran nothing have a count")

    def test_directory_forms(self):
        # D relative to the mount without and with a leading '/' (the form -G accepts and the
        # reports print), and absolute: the same 50 cgroups below D, D itself not among them.
        for form in (self.cg.base_rel.lstrip("/"), self.cg.base_rel, self.cg.base_abs):
            s = t.stat(["-a", "-e", "task-clock", "--for-each-cgroup", form], ["true"])
            rows = self.rows_of(s)
            t.log(f"--for-each-cgroup {form}: {len(rows)} rows, backend "
                  f"{s.json.get('cgroup_backend')}")
            self.assertEqual(sorted(rows), self.names, f"--for-each-cgroup {form}")
            self.assertEqual(s.json.get("cgroup_backend"), "bpf")

    def test_regex_and_threshold(self):
        base = self.cg.base_rel
        cases = [(f"^{base}/cg[12][0-9]$", 20, "bpf"),
                 (f"^{base}/cg(0[0-9]|1[0-5])$", THRESHOLD, "fd"),
                 (f"^{base}/cg(0[0-9]|1[0-6])$", THRESHOLD + 1, "bpf")]
        for pattern, count, backend in cases:
            s = t.stat(["-a", "-e", "task-clock", "--for-each-cgroup", pattern], ["true"])
            rows = self.rows_of(s)
            t.log(f"--for-each-cgroup '{pattern}': {len(rows)} rows, "
                  f"backend {s.json.get('cgroup_backend')}")
            self.assertEqual(len(rows), count, pattern)
            self.assertTrue(all(n in self.names for n in rows), pattern)
            self.assertEqual(s.json.get("cgroup_backend"), backend, pattern)

    def test_nothing_matches(self):
        pattern = f"^{self.cg.base_rel}/no-such-cg[0-9]+$"
        s = t.run_pmcprof(["stat", "-a", "-e", "task-clock", "--for-each-cgroup", pattern,
                           "--", "true"])
        line = t.assert_clean_error(self, s, mentions=(r"match", r"no-such-cg",
                                                       self.cg.mount))
        t.log(f"no match: {line}")

        empty = self.cg.make("cg00").lstrip("/")  # exists, has no cgroups below it
        s = t.run_pmcprof(["stat", "-a", "-e", "task-clock", "--for-each-cgroup", empty,
                           "--", "true"])
        line = t.assert_clean_error(self, s, mentions=(r"cg00",))
        t.log(f"empty directory: {line}")

    def test_more_cgroups_than_the_fd_limit(self):
        # The BPF backend exists for many cgroups: its fds are CPUs x events, however many
        # cgroups. Under the common default soft RLIMIT_NOFILE of 1024, 1100 cgroups must work.
        import resource
        with t.TestCgroups("manyfd") as cg:
            names = [cg.make(f"c{i:04d}") for i in range(1100)]

            def low_fd_limit():
                _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))

            s = t.stat(["-a", "-e", "task-clock", "--for-each-cgroup", cg.base_rel.lstrip("/")],
                       ["true"], preexec_fn=low_fd_limit)
            t.log(f"1100 cgroups, RLIMIT_NOFILE 1024: exit {s.returncode}, "
                  f"{len(t.cgroup_rows(s.json, 'task-clock')) if s.json else 0} rows, "
                  f"stderr {s.stderr.strip()[:200]!r}")
            rows = self.rows_of(s)
            self.assertEqual(s.json.get("cgroup_backend"), "bpf")
            self.assertEqual(sorted(rows), names)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "cgroup2"), doc=__doc__))

#!/usr/bin/env python3
"""Runtime test of `pmcprof doctor`: runs it for real (root) and checks each verdict against
facts this script gathers on its own from /proc and /sys, so a probe that lies is caught; and
the verdict that ends its output (per job: counting, --func by kind, per cgroup, serve) against
what those checks allow.

Usage: test_doctor.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import unittest

import pmcprof_testlib as t

EVENT_SOURCES = "/sys/bus/event_source/devices"
REQUIRED_NAMES = [
    "btf", "cap_bpf", "cap_perfmon", "hardware_pmu", "software_events", "kprobes", "fentry",
    "uprobes", "uprobe_multi", "syscall_tracepoints", "cgroup_v2", "perf_event_paranoid",
    "attach_cookie", "task_storage",
]
CAP_PERFMON, CAP_BPF = 38, 39

ARGS = None


def kernel_has_symbol(name):
    """Whether /proc/kallsyms names a kernel function NAME (independent of doctor's checks)."""
    with open("/proc/kallsyms") as f:
        return any(line.split()[2:3] == [name] for line in f)


def unescape(field):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mountinfo():
    """(mount_point, fstype, super_options) of every mount, independently of pmcprof."""
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            mounts.append((unescape(fields[4]), fields[sep + 1],
                           fields[sep + 3] if len(fields) > sep + 3 else ""))
    return mounts


def expected_cgroup2():
    points = [m for m, fs, _ in mountinfo() if fs == "cgroup2"]
    for preferred in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if preferred in points:
            return preferred
    return points[0] if points else None


def expected_hybrid():
    generic = {"rw", "ro", "noprefix", "clone_children", "xattr", "cpuset_v2_mode", "favordynmods"}
    for _, fs, opts in mountinfo():
        if fs != "cgroup":
            continue
        for opt in opts.split(","):
            if opt and opt not in generic and not opt.startswith(("name=", "release_agent=")):
                return True
    return False


def effective_caps():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def has_cpu_pmu():
    return any(n == "cpu" or n.startswith(("cpu_", "armv")) for n in os.listdir(EVENT_SOURCES))


def run_doctor(*extra):
    proc = subprocess.run([ARGS.pmcprof, "doctor", *extra], capture_output=True, text=True,
                          timeout=60)
    return proc


class DoctorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        proc = run_doctor("--json")
        if proc.returncode != 0:
            raise AssertionError(f"doctor --json exited {proc.returncode}: {proc.stderr}")
        cls.doc = json.loads(proc.stdout)
        cls.caps = {c["name"]: c for c in cls.doc["capabilities"]}

    def cap(self, name):
        self.assertIn(name, self.caps)
        return self.caps[name]

    def test_schema(self):
        self.assertEqual(self.doc["schema"], "pmcprof/1")
        self.assertEqual(self.doc["type"], "doctor")
        names = [c["name"] for c in self.doc["capabilities"]]
        for name in REQUIRED_NAMES:
            self.assertIn(name, names)
        self.assertEqual(len(names), len(set(names)), "duplicate capability names")
        for c in self.doc["capabilities"]:
            self.assertRegex(c["name"], r"^[a-z0-9_]+$")
            self.assertIsInstance(c["available"], bool, c["name"])
            self.assertIsInstance(c["detail"], str, c["name"])
            self.assertTrue(c["detail"].strip(), f"{c['name']} has an empty detail")
            self.assertNotIn("\n", c["detail"], f"{c['name']}: detail must be one line")

    def test_btf(self):
        self.assertEqual(self.cap("btf")["available"], os.path.exists("/sys/kernel/btf/vmlinux"))

    def test_capabilities_match_capeff(self):
        caps = effective_caps()
        self.assertEqual(self.cap("cap_bpf")["available"], bool(caps >> CAP_BPF & 1))
        self.assertEqual(self.cap("cap_perfmon")["available"], bool(caps >> CAP_PERFMON & 1))

    def test_hardware_pmu(self):
        cap = self.cap("hardware_pmu")
        self.assertEqual(cap["available"], has_cpu_pmu(), cap["detail"])
        if not cap["available"]:
            self.assertRegex(cap["detail"], r"\bE[A-Z]+\b", "the failure names its errno")

    def test_software_events(self):
        present = os.path.isdir(os.path.join(EVENT_SOURCES, "software"))
        self.assertEqual(self.cap("software_events")["available"], present)

    def test_kprobes(self):
        cap = self.cap("kprobes")
        self.assertEqual(cap["available"], os.path.isdir(os.path.join(EVENT_SOURCES, "kprobe")),
                         cap["detail"])

    def test_uprobes(self):
        cap = self.cap("uprobes")
        uprobe = os.path.join(EVENT_SOURCES, "uprobe")
        self.assertEqual(cap["available"], os.path.isdir(uprobe), cap["detail"])
        if cap["available"]:
            with open(os.path.join(uprobe, "type")) as f:
                self.assertEqual(cap["pmu_type"], int(f.read()))

    def assert_as_symbol(self, name, symbol, says_when_missing=None):
        """Capability NAME is available exactly when the kernel has SYMBOL (independent of how
        doctor checks); when it is not, its detail says SAYS_WHEN_MISSING."""
        cap = self.cap(name)
        self.assertEqual(cap["available"], kernel_has_symbol(symbol), cap["detail"])
        if says_when_missing and not cap["available"]:
            self.assertIn(says_when_missing, cap["detail"])

    def test_uprobe_multi(self):
        # The kernel's own function for the link (Linux 6.6+).
        self.assert_as_symbol("uprobe_multi", "bpf_uprobe_multi_link_attach")

    def test_attach_cookie(self):
        # The helper's kprobe/uprobe flavour (Linux 5.15+); function mode needs it.
        self.assert_as_symbol("attach_cookie", "bpf_get_attach_cookie_trace", "5.15")

    def test_task_storage(self):
        # The map's helper (Linux 5.11+).
        self.assert_as_symbol("task_storage", "bpf_task_storage_get", "--thread-state hash")

    def test_fentry_explains_itself(self):
        cap = self.cap("fentry")
        self.assertIn("vfs_read", cap["detail"])
        if not cap["available"]:
            self.assertRegex(cap["detail"], r"\bE[A-Z]+\b", "the failure names its errno")

    def test_syscall_tracepoints(self):
        cap = self.cap("syscall_tracepoints")
        # Doctor mounts tracefs when it is missing, so it must be mounted by now.
        tracefs = [m for m, fs, _ in mountinfo() if fs == "tracefs"]
        self.assertTrue(tracefs, "no tracefs mounted after doctor ran")
        self.assertIn(cap["tracefs"], tracefs)
        present = os.path.exists(
            os.path.join(cap["tracefs"], "events/syscalls/sys_enter_getppid/id"))
        self.assertEqual(cap["available"], present, cap["detail"])

    def test_cgroup_v2(self):
        cap = self.cap("cgroup_v2")
        mount = expected_cgroup2()
        self.assertEqual(cap["available"], mount is not None, cap["detail"])
        if mount is not None:
            self.assertEqual(cap["mount_point"], mount)
            self.assertEqual(cap["hybrid"], expected_hybrid())
            self.assertIn(mount, cap["detail"])

    def test_perf_event_paranoid(self):
        cap = self.cap("perf_event_paranoid")
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            value = int(f.read())
        self.assertTrue(cap["available"])
        self.assertEqual(cap["value"], value)
        self.assertTrue(cap["detail"].startswith(f"{value}: "), cap["detail"])

    def test_text_table_agrees_with_json(self):
        proc = run_doctor()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.split("\n\n")[0].splitlines()  # the table, before the verdict
        self.assertEqual(lines[0].split(), ["CAPABILITY", "AVAILABLE", "WHY"])
        rows = {}
        for line in lines[1:]:
            name, available, _ = line.split(None, 2)
            rows[name] = available
            # aligned: the verdict column starts at the same offset on every line
            self.assertEqual(line.index(" " + available + " ") + 1, lines[0].index("AVAILABLE"))
        for name, c in self.caps.items():
            self.assertEqual(rows.get(name), "yes" if c["available"] else "no", name)

    def test_verdict_follows_from_the_checks(self):
        # Each job's verdict is what the checks say, decided here on the JSON's own checks;
        # a job that cannot be done says why in the words of the checks that failed.
        ok = {name: c["available"] for name, c in self.caps.items()}
        fm = ok["btf"] and ok["bpf_counter_read"]
        countable = ok["software_events"] or ok["hardware_pmu"]
        want = {
            "count_hardware": ok["hardware_pmu"],
            "count_software": ok["software_events"],
            "func_kernel": fm and (ok["kprobes"] or ok["fentry"]),
            "func_user": fm and ok["uprobes"],
            "func_syscall": fm and ok["syscall_tracepoints"],
            "func_usdt": fm and ok["uprobes"],
            "cgroup": ok["cgroup_v2"] and countable,
            "serve": countable,
        }
        jobs = {j["job"]: j for j in self.doc["verdict"]["jobs"]}
        self.assertEqual(sorted(jobs), sorted(want))
        for job, can in want.items():
            self.assertEqual(jobs[job]["available"], can, jobs[job])
            self.assertTrue(jobs[job]["detail"].strip(), job)
        if not ok["kprobes"] and not ok["fentry"]:
            self.assertRegex(jobs["func_kernel"]["detail"], r"kprobes.*; .*fentry")
        summary = self.doc["verdict"]["summary"]
        t.log(f"summary: {summary}")
        if jobs["func_syscall"]["available"]:
            self.assertRegex(summary, r"--func works for .*syscalls")
        if not jobs["func_kernel"]["available"]:
            self.assertRegex(summary, r"not .*kernel functions \(")
        if not ok["hardware_pmu"] and ok["software_events"]:
            self.assertIn("count software events (task-clock", summary)

        # The text output ends with the same verdict.
        proc = run_doctor()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        _, verdict = proc.stdout.split("\n\nVERDICT ", 1)
        rows = verdict.split("\n\n")[0].splitlines()[1:]
        self.assertEqual(len(rows), len(jobs))
        for row, j in zip(rows, self.doc["verdict"]["jobs"]):
            self.assertTrue(row.startswith(j["title"] + " "), row)
            self.assertIn(" yes " if j["available"] else " no ", row)
        self.assertTrue(proc.stdout.endswith(f"\n\nIn short: {summary}.\n"), proc.stdout[-300:])

    @t.requires("program:bpftool")  # to list loaded programs
    def test_nothing_stays_loaded(self):
        bpftool = t.bpftool_binary()
        # The kernel frees closed programs asynchronously: allow it a moment.
        deadline = time.monotonic() + 5
        while True:
            out = subprocess.run([bpftool, "-j", "prog", "show"], capture_output=True, text=True)
            left = [p.get("name", "") for p in json.loads(out.stdout or "[]")
                    if p.get("name", "").startswith("doctor_")]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(left, [], "doctor left BPF programs loaded")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--pmcprof", required=True)
    parser.add_argument("--workloads", required=False)
    ARGS, rest = parser.parse_known_args()
    t.exit_unless("root")  # it compares privileged probes
    result = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())

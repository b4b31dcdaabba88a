"""Shared helpers for pmcprof's runtime tests (Python 3 standard library only).

Every test script is run by ctest as
    /usr/bin/python3 tests/runtime/test_X.py --pmcprof PATH --workloads DIR
and exits 0 (pass), 1 (fail) or 77 (skipped, with a printed reason). A script calls
`testlib.main(requires_root=True)`; its unittest.TestCase classes use the helpers below.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

EXIT_SKIP = 77
ARGS = None  # argparse namespace: pmcprof, workloads

# Things a clean error path never prints.
CRASH_MARKERS = ("terminate called", "Traceback", "Segmentation fault", "core dumped",
                 "Assertion", "AddressSanitizer", "what():")


class Skip(unittest.SkipTest):
    """Raised inside a test when something it needs is missing: that test is skipped (and the
    script exits 77 when every test was)."""


def skip(reason):
    """Skips the whole script: prints the reason and exits 77."""
    print(f"skipped: {reason}", flush=True)
    sys.exit(EXIT_SKIP)


def log(msg):
    """Measured figures go to stdout so ctest logs (ctest -V / LastTest.log) show them."""
    print(msg, flush=True)


# ---------------------------------------------------------------- paths and environment

def pmcprof():
    return ARGS.pmcprof


def workload(name):
    """Absolute path of a compiled workload from tests/workloads/NAME.c."""
    path = os.path.join(ARGS.workloads, name)
    if not os.access(path, os.X_OK):
        raise Skip(f"workload {name} is not built at {path}")
    return path


def online_cpus():
    """The CPU numbers the kernel has online (what -a counts on)."""
    with open("/sys/devices/system/cpu/online") as f:
        return parse_cpu_list(f.read().strip())


def nproc_online():
    return len(online_cpus())


def parse_cpu_list(text):
    cpus = []
    for part in text.split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-")
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return cpus


def has_hardware_pmu():
    return os.path.exists("/sys/bus/event_source/devices/cpu")


def perf_binary():
    """Debian's perf, if it works (the /usr/bin/perf wrapper fails when no matching
    linux-perf-X.Y is installed)."""
    path = shutil.which("perf")
    if not path:
        return None
    try:
        ok = subprocess.run([path, "--version"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if ok else None


def vmstat(key):
    """A counter from /proc/vmstat (e.g. 'pgfault'), system-wide since boot."""
    with open("/proc/vmstat") as f:
        for line in f:
            name, value = line.split()
            if name == key:
                return int(value)
    raise KeyError(key)


def context_switches_since_boot():
    """The 'ctxt' line of /proc/stat: context switches on all CPUs since boot."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    raise KeyError("ctxt")


class KernelCounters:
    """Global page-fault and context-switch counts over a window (an independent ground truth
    for system-wide counters: whatever a tool counts with -a inside the window must fit)."""

    def __enter__(self):
        self.faults0, self.switches0 = vmstat("pgfault"), context_switches_since_boot()
        return self

    def __exit__(self, *exc):
        self.page_faults = vmstat("pgfault") - self.faults0
        self.context_switches = context_switches_since_boot() - self.switches0
        return False


# ---------------------------------------------------------------- running pmcprof

def run(argv, timeout=60, **kw):
    """subprocess.run with text capture; never raises on a non-zero exit."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run(argv, timeout=timeout, **kw)


def run_pmcprof(args, timeout=60, **kw):
    return run([pmcprof(), *args], timeout=timeout, **kw)


class Stat:
    """One finished `pmcprof stat` run: the process, its report text and (if JSON) the parsed
    report, plus wall-clock time seen from outside."""

    def __init__(self, proc, text, wall_s):
        self.proc = proc
        self.text = text
        self.wall_s = wall_s
        self.json = None
        self.records = []

    @property
    def returncode(self):
        return self.proc.returncode

    @property
    def stdout(self):
        return self.proc.stdout

    @property
    def stderr(self):
        return self.proc.stderr

    def counter(self, event, cpu=None):
        return find_counter(self.json, event, cpu)

    def value(self, event):
        c = self.counter(event)
        return c["value"]


def stat(args, command=(), timeout=60, fmt="json", **kw):
    """Runs `pmcprof stat ARGS -o FILE [-j] [-- COMMAND]` and returns a Stat. fmt: 'json'
    (adds -j and parses the report; NDJSON with -I goes to .records), 'csv' or 'text' (the
    report text is in .text; pass -x yourself for csv)."""
    with tempfile.TemporaryDirectory(prefix="pmcprof-test-") as tmp:
        out = os.path.join(tmp, "report")
        argv = ["stat", *args]
        if fmt == "json":
            argv.append("-j")
        argv += ["-o", out]
        if command:
            argv += ["--", *command]
        t0 = time.monotonic()
        proc = run_pmcprof(argv, timeout=timeout, **kw)
        wall = time.monotonic() - t0
        text = ""
        if os.path.exists(out):
            with open(out) as f:
                text = f.read()
    s = Stat(proc, text, wall)
    if fmt == "json":
        parse_json_report(s)
    return s


def parse_json_report(s):
    """Fills s.json (the final report or summary) and s.records (all NDJSON records)."""
    text = s.text.strip()
    if not text:
        return
    try:
        s.json = json.loads(text)
        s.records = [s.json]
        return
    except json.JSONDecodeError:
        pass
    s.records = [json.loads(line) for line in text.splitlines() if line.strip()]
    finals = [r for r in s.records if r.get("type") in ("summary", "report")]
    s.json = finals[-1] if finals else None


def find_counter(report, event, cpu=None):
    for c in report["counters"]:
        if c["event"] == event and (cpu is None or c.get("cpu") == cpu):
            return c
    raise AssertionError(f"no counter {event!r} (cpu={cpu}) in {[c['event'] for c in report['counters']]}")


def parse_kv(output, prefix):
    """Parses the 'PREFIX k=v k=v' line a workload prints into a dict of ints."""
    for line in output.splitlines():
        if line.startswith(prefix + " "):
            return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}
    raise AssertionError(f"no '{prefix}' line in workload output: {output!r}")


# ---------------------------------------------------------------- perf as a reference

def perf_stat_csv(args, command, timeout=60):
    """Runs `perf stat ARGS -x, -- COMMAND`; returns (proc, {event: row}, wall_s). A row is
    {'value': float|None, 'unit', 'metric': float|None, 'metric_unit'}; value None when perf
    printed <not supported>/<not counted>."""
    perf = perf_binary()
    if perf is None:
        raise Skip("perf is not installed (apt-get install linux-perf)")
    with tempfile.TemporaryDirectory(prefix="perf-test-") as tmp:
        out = os.path.join(tmp, "perf.csv")
        t0 = time.monotonic()
        proc = run([perf, "stat", *args, "-x,", "-o", out, "--", *command], timeout=timeout)
        wall = time.monotonic() - t0
        with open(out) as f:
            text = f.read()
    rows = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split(",")
        if len(f) < 3:
            continue
        value = None if f[0].startswith("<") else float(f[0])
        metric = None
        if len(f) >= 7 and f[5]:
            try:
                metric = float(f[5])
            except ValueError:
                metric = None
        rows[f[2]] = {"value": value, "unit": f[1], "metric": metric,
                      "metric_unit": f[6] if len(f) >= 7 else ""}
    return proc, rows, wall


def perf_value_ns_or_count(row):
    """perf -x prints clocks in msec: convert task-clock/cpu-clock to ns like pmcprof's JSON."""
    if row["value"] is None:
        return None
    return row["value"] * 1e6 if row["unit"] == "msec" else row["value"]


# ---------------------------------------------------------------- process helpers

def spawn(argv, **kw):
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.DEVNULL)
    return subprocess.Popen(argv, **kw)


def stop(proc, timeout=5):
    """Ends a process this test started (by its own handle, never by name)."""
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass


def pid_alive(pid):
    """True if PID exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


def children_of(pid):
    """PIDs whose parent is PID (from /proc/*/stat)."""
    kids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                kids.append(int(name))
        except (OSError, IndexError, ValueError):
            continue
    return kids


def wait_for(predicate, timeout, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


# ---------------------------------------------------------------- assertions

def assert_clean_error(tc, proc, *, exit_code=None, mentions=()):
    """An error path: non-zero exit (or exactly EXIT_CODE), not killed by a signal, a first
    stderr line starting 'pmcprof:', at most one more line and it starting 'HINT:', no crash
    text anywhere. MENTIONS: regexes the 'pmcprof:' line must match (case-insensitive)."""
    err = proc.stderr
    tc.assertGreaterEqual(proc.returncode, 0, f"killed by signal {-proc.returncode}: {err!r}")
    if exit_code is None:
        tc.assertNotEqual(proc.returncode, 0, f"expected a failure exit, stderr={err!r}")
    else:
        tc.assertEqual(proc.returncode, exit_code, f"stderr={err!r}")
    for marker in CRASH_MARKERS:
        tc.assertNotIn(marker, err + proc.stdout, f"crash text in output: {err!r}")
    lines = [l for l in err.splitlines() if l.strip()]
    tc.assertTrue(lines, "no error message on stderr")
    tc.assertTrue(lines[0].startswith("pmcprof: "), f"first line: {lines[0]!r}")
    tc.assertLessEqual(len(lines), 2, f"more than one error line (+HINT): {err!r}")
    if len(lines) == 2:
        tc.assertTrue(lines[1].startswith("HINT: "), f"second line: {lines[1]!r}")
    for rx in mentions:
        tc.assertRegex(lines[0], re.compile(rx, re.I))
    return lines[0]


def assert_within(tc, actual, expected, rel, what, abs_tol=0.0):
    """|actual - expected| <= rel*|expected| + abs_tol, with the figures in the message."""
    bound = rel * abs(expected) + abs_tol
    tc.assertLessEqual(abs(actual - expected), bound,
                       f"{what}: {actual} vs {expected} (allowed +-{bound:.4g})")


# ---------------------------------------------------------------- main

def parse_args():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--pmcprof", required=True)
    parser.add_argument("--workloads", required=True)
    ARGS, rest = parser.parse_known_args()
    ARGS.pmcprof = os.path.abspath(ARGS.pmcprof)
    ARGS.workloads = os.path.abspath(ARGS.workloads)
    return rest


def main(requires_root=True, requires_perf=False, doc=None):
    """Parses --pmcprof/--workloads, skips (77) when the environment cannot run the tests,
    runs the unittest cases of __main__ and maps the result: 0 ok, 1 failure, 77 if every test
    was skipped."""
    rest = parse_args()
    if doc:
        print(doc.strip().split("\n\n")[0], flush=True)
    if requires_root and os.geteuid() != 0:
        skip("needs root (system-wide and other tasks' counters)")
    if not os.access(ARGS.pmcprof, os.X_OK):
        print(f"pmcprof binary not found at {ARGS.pmcprof}")
        return 1
    if requires_perf and perf_binary() is None:
        skip("perf is not installed or does not run (apt-get install linux-perf)")
    if not os.path.isdir("/sys/bus/event_source/devices/software"):
        skip("this kernel has no software perf events")
    result = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2).result
    if not result.wasSuccessful():
        return 1
    if result.testsRun and len(result.skipped) == result.testsRun:
        print("skipped: every test case skipped itself")
        return EXIT_SKIP
    return 0

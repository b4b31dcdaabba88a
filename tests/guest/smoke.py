"""The smoke set every guest kernel runs (issue 19), inside the guest: counting, per-cgroup
counting with both backends, `serve` answering a scrape, and, where the kernel has function
mode, a syscall (and an ia32 program's syscalls counted for no 64-bit one) and a USDT region
with exact call counts. Used by test_guest_x86_510.py (Linux 5.10) and test_guest_kprobes.py
(Debian 12's 6.1 booted with preempt=full).

Each check records into a guest.Checks and logs what it read. The guest's root is the host's,
read-only: pmcprof and the workloads are the host build's, files go to a temporary directory.
"""
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(1, os.path.join(HERE, "..", "runtime"))
import pmcprof_testlib as t  # noqa: E402  (burn's output line and its start-up; JSON reports)

CGROUP = "/sys/fs/cgroup/smoke"


def log(msg=""):
    print(msg, flush=True)


class Smoke:
    def __init__(self, pmcprof, workloads, checks):
        self.pmcprof, self.workloads, self.F = pmcprof, workloads, checks

    def run(self, *args, timeout=300):
        return subprocess.run([self.pmcprof, *args], capture_output=True, text=True,
                              timeout=timeout)

    def workload(self, name):
        return os.path.join(self.workloads, name)

    def counting(self):
        """`stat -- burn 300`: task-clock is burn's own counter on itself, plus what burn ran
        before it opened (its exec and loading: slow under emulation, 63 ms seen)."""
        r = self.run("stat", "-j", "-e", "task-clock,context-switches", "--",
                     self.workload("burn"), "300")
        self.F.check(r.returncode == 0, "stat -- burn 300 exits 0", r.stderr[-500:])
        if r.returncode != 0:
            return
        rep = json.loads(r.stderr)  # like perf stat, the report goes to stderr (burn: stdout)
        values = {c["event"]: c for c in rep["counters"]}
        w = t.parse_kv(r.stdout, "burn")
        own, tc = t.own_task_clock(w), values.get("task-clock", {}).get("value")
        startup = t.startup_ns(w)
        log(f"  counting: task-clock {tc} ns, burn's own {own} ns (+{startup} ns before it), "
            f"context-switches {values.get('context-switches', {}).get('value')}")
        self.F.check(own is not None and tc is not None and
                     own * 0.95 <= tc <= own * 1.05 + startup + 10e6,
                     "task-clock is burn's own, and its start-up, within 5 % + 10 ms",
                     f"{tc} vs {own}")

    def cgroups(self):
        """`-a -G /smoke --cgroup-backend fd|bpf` around a burn that moves itself into the
        cgroup: the cgroup's task-clock is the burn's, from its own task-clock to its CPU time
        from the exec (+5 %, +20 ms); the JSON names the backend."""
        # As systemd does at boot: a controller enabled at the root. Until the root's
        # subtree_control is first written, Linux 5.10 gives a new cgroup no css of the
        # implicit perf_event controller, and perf_event_open on it fails with ENOENT.
        with open("/sys/fs/cgroup/cgroup.subtree_control", "w") as f:
            f.write("+pids")
        os.makedirs(CGROUP, exist_ok=True)
        command = ["sh", "-c",
                   f"echo $$ > {CGROUP}/cgroup.procs && exec {self.workload('burn')} 1000"]
        try:
            for backend in ("fd", "bpf"):
                r = self.run("stat", "-j", "-a", "-G", "/smoke", "--cgroup-backend", backend,
                             "-e", "task-clock", "--", *command)
                self.F.check(r.returncode == 0, f"-G --cgroup-backend {backend} exits 0",
                             r.stderr[-500:])
                if r.returncode != 0:
                    continue
                rep = json.loads(r.stderr)
                row = next((c for c in rep["counters"] if c.get("cgroup") == "/smoke"), {})
                w = t.parse_kv(r.stdout, "burn")
                tc, own, cpu = row.get("value"), t.own_task_clock(w), w.get("process_cpu_ns")
                log(f"  cgroup ({backend}): task-clock {tc} ns; the burn in it: its own "
                    f"task-clock {own} ns, CPU time from its exec {cpu} ns")
                self.F.check(rep.get("cgroup_backend") == backend,
                             f"JSON cgroup_backend {backend}")
                self.F.check(tc is not None and own is not None and cpu is not None and
                             own * 0.95 <= tc <= cpu * 1.05 + 20e6, f"{backend}: the cgroup's "
                             "task-clock is the burn's, from its exec", f"{tc} vs {own}..{cpu}")
        finally:
            os.rmdir(CGROUP)

    def serve(self, port=9477):
        """`serve` answers a scrape with pmcprof's metrics (once it says pmcprof_up 1) and ends
        cleanly on SIGINT."""
        srv = subprocess.Popen([self.pmcprof, "serve", "--listen", f"127.0.0.1:{port}", "-e",
                                "task-clock,context-switches"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        body, err, tries, t0 = "", "", 0, time.monotonic()
        try:
            while time.monotonic() < t0 + 120 and srv.poll() is None:
                tries += 1
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                                timeout=30) as u:
                        body = u.read().decode()
                    if re.search(r"^pmcprof_up 1$", body, re.M):
                        break
                    err = f"pmcprof_up is not 1 yet ({tries} tries)"  # still starting
                    time.sleep(0.5)
                except OSError as e:  # not listening yet
                    err = f"{e} ({tries} tries over {time.monotonic() - t0:.1f} s, serve's " \
                          f"status {srv.poll()})"
                    time.sleep(0.5)
        finally:
            srv.send_signal(signal.SIGINT)
            try:
                _, stderr = srv.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                srv.kill()
                _, stderr = srv.communicate()
        self.F.check("pmcprof_" in body and
                     "task-clock" in body.replace("task_clock", "task-clock"),
                     "serve answers a scrape with pmcprof's metrics",
                     f"{err or body[:300]}; serve's stderr: {stderr[-300:]!r}")
        self.F.check(srv.returncode == 0, "serve ends cleanly on SIGINT",
                     f"exit {srv.returncode}: {stderr[-300:]}")

    def func_report(self, what, args, command):
        """`stat -e task-clock -j -o FILE ARGS -- COMMAND`: its report, or None (failed)."""
        with tempfile.TemporaryDirectory(prefix="pmcprof-smoke-") as tmp:
            out = os.path.join(tmp, "report.json")
            r = self.run("stat", "-e", "task-clock", "-j", "-o", out, *args, "--", *command)
            self.F.check(r.returncode == 0, f"{what}: exits 0", r.stderr[-600:])
            if r.returncode != 0:
                return None
            with open(out) as f:
                docs = t.parse_json_documents(f.read())
        finals = [d for d in docs if d.get("type") in ("report", "summary")]
        self.F.check(len(finals) == 1, f"{what}: one report", str(len(finals)))
        return finals[0] if finals else None

    def check_calls(self, what, row, want):
        log(f"  {what}: {row['calls']} calls ({want} made), {row.get('not_counted')} not "
            f"counted, {row.get('lost')} lost, {row.get('unmatched_exits')} unmatched, "
            f"backend {row.get('backend')}")
        self.F.check(row["calls"] == want, f"{what}: every call, once", f"{row['calls']}")
        self.F.check(row.get("lost") == 0 and row.get("unmatched_exits") == 0,
                     f"{what}: none lost or unmatched", str(row))

    def syscall(self, n=2000):
        """--func syscall:getppid around func_workload's N getppid calls: exactly N."""
        rep = self.func_report("syscall:getppid", ["--func", "syscall:getppid"],
                               [self.workload("func_workload"), "getppid", str(n)])
        if rep:
            self.check_calls("syscall:getppid", t.func_row(rep, "syscall:getppid"), n)
        if platform.machine() == "x86_64":
            self.ia32_syscalls(n)

    def ia32_syscalls(self, n):
        """An ia32 program's N getppid calls (`int $0x80`, number 64: semget's on x86-64) count
        for neither syscall (the runtime test's check, on a kernel sure to run ia32 code)."""
        with tempfile.TemporaryDirectory(prefix="pmcprof-smoke-") as tmp:
            exe, why_not = t.ia32_getppid_program(tmp, n)
            if not exe:
                log(f"  ia32 syscalls: skipped: {why_not}")
                return
            rep = self.func_report("ia32 syscalls", ["--func", "syscall:semget", "--func",
                                                     "syscall:getppid"], [exe])
        for name in ("syscall:semget", "syscall:getppid") if rep else ():
            row = t.func_row(rep, name)
            log(f"  ia32 {name}: {row['calls']} calls, {row.get('unmatched_exits')} unmatched")
            self.F.check(row["calls"] == 0 and row.get("unmatched_exits") == 0,
                         f"ia32 syscalls: none of the program's {n} getppid calls is {name}",
                         str(row))

    def usdt(self, k=20, usec=200):
        """A region between two USDT probes of sdt_workload, which makes 6 K regions (alpha K,
        beta 2 K, gamma 3 K) of USEC us each: 6 K calls, none left open."""
        wl = self.workload("sdt_workload")
        if not os.access(wl, os.X_OK):
            log(f"  USDT: skipped: no {wl} (built without <sys/sdt.h>)")
            return
        probe = f"usdt:{wl}:pmcprof_test:"
        rep = self.func_report("USDT region", ["--region",
                                               f"r={probe}work__start,{probe}work__done"],
                               [wl, "regions", str(k), str(usec)])
        if rep:
            row = t.func_row(rep, "r")
            self.check_calls("USDT region", row, 6 * k)
            self.F.check(row.get("open", 0) == 0, "USDT region: none left open", str(row))

#!/usr/bin/env python3
"""Kernel-function probes for real: `pmcprof stat --func` with kprobes and fentry, run inside
Debian 12's own 6.1 kernel booted under qemu TCG (this machine's kernel has neither).

On the host (what ctest runs):
    test_guest_kprobes.py --pmcprof PATH --cache DIR [--timeout S]
builds the loopback TCP workload tests/guest/tcp_pair.c into DIR, boots the guest once
(guest.py: host root shared read-only, chroot, root) and runs this same file in it with
--in-guest. Exit 0 pass, 1 fail, 77 skipped (qemu missing or unable to start).

In the guest, pmcprof runs in phases; the runs inside one phase go in parallel (two
vCPUs: most of each run is the BPF verifier and kallsyms/BTF look-ups, emulated), and after every
phase, with no pmcprof left running, nothing of pmcprof may remain in the kernel:
  1. `--func tcp_sendmsg --backend kprobe --aggregate both` and `--backend fentry`, each while
     `tcp_pair send N` sends N messages over loopback TCP: calls == N for each backend and
     aggregation, task-clock per call > 0, JSON backend as asked; stream and kernel
     aggregation agree on the same run (calls and totals equal, p50/p90 within a bucket).
     The kprobe run also has `--region send=tcp_sendmsg,tcp_sendmsg%return` (a kprobe start,
     a kretprobe end): N regions in both aggregations, none unmatched or left open.
  2. a blocking function with `--backend auto -v`: `--func tcp_recvmsg` while the receiver
     waits DELAY ms for each of M messages: auto picks fentry (JSON backend, and -v says
     "with fentry"), wall time per call >= ~DELAY, on-CPU and task-clock per call a small
     fraction of it, every call slept; and a kprobe run stopped by SIGINT once attached: exit
     not by a signal, a report with "interrupted": true and calls > 0.
  3. a kprobe run killed by SIGKILL once attached; an unknown kernel function, one in the
     kprobe blacklist and a notrace one (in kallsyms, not in available_filter_functions: neither
     fentry nor, on Debian's kernel, kprobes can attach): a non-zero exit and one clear line
     (+ HINT) each, the line naming the function and the reason; `pmcprof doctor --json`:
     kprobes yes, fentry yes, hardware_pmu no.
  4. (beside phase 3) the kernel is booted with preempt=full: uprobe calls of a tiny function pinned to one
     CPU beside a competitor that takes page faults without end (so calls are preempted, some of
     them inside a probe program: issue 22, defect 4), both aggregations, events task-clock and
     page-faults: every call accounted, no on-CPU or task-clock time of a second or more (a
     wrapped sum), on-CPU never above wall, some calls seen preempted (slept > 0: the case was
     exercised), and the counted calls' page-faults total at most 2 (tiny() takes none after its
     first call: a call holding the competitor's faults was not flagged).
  5. the smoke set every guest kernel runs (smoke.py, as the 5.10 guest), on this preemptible
     kernel (issue 19): counting (`stat -- burn 300`: burn's own task-clock), per-cgroup
     counting with the fd and the bpf backends, `serve` answering a scrape, `--func
     syscall:getppid` (exactly the workload's 2,000 calls) and a USDT region (exactly its 120
     regions, none open).
Leftover check after each phase: /sys/kernel/tracing/kprobe_events empty, no kprobe on the
probed functions in /sys/kernel/debug/kprobes/list, no BPF program named like pmcprof's
(func_entry, func_exit, func_fentry, func_fexit, on_switch, on_fork, on_task_exit, ...) in
`bpftool prog show`, no BPF link to one in `bpftool link show`.
Times measured inside the emulator are not performance figures.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(HERE, "..", "runtime"))
import guest  # noqa: E402  (also in the guest: it runs this file from the host's tree)
import smoke  # noqa: E402  (the smoke set every guest kernel runs)
import pmcprof_testlib as t  # noqa: E402  (the requirements every test declares)
EXIT_SKIP = 77
N_SEND = 200
RECV_MSGS, RECV_DELAY_MS = 4, 300
PREEMPTED_CALLS = 20000
FALLBACK_FUNC = "do_mmap"  # 8 arguments: the 6.1 x86 fentry trampoline refuses it (ENOTSUPP)
EVENTS = "task-clock"  # one event: the verifier (emulated) dominates each run's time
PMCPROF_PROGS = {"func_entry", "func_exit", "func_fentry", "func_fexit", "on_switch", "on_fork",
                 "on_task_exit", "syscall_entry", "syscall_exit", "read_counters",
                 "cgroup_switch", "cgroup_flush"}
CRASH_MARKERS = ("terminate called", "Traceback", "Segmentation fault", "core dumped",
                 "Assertion", "AddressSanitizer", "what():")


def log(msg=""):
    print(msg, flush=True)


# ====================================================================== host side

def build_tcp_pair(cache):
    src = os.path.join(HERE, "tcp_pair.c")
    out_dir = os.path.join(cache, "bin")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "tcp_pair")
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(src):
        return out
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise RuntimeError("no C compiler (cc) to build tests/guest/tcp_pair.c")
    r = subprocess.run([cc, "-O2", "-Wall", "-o", out + ".tmp", src], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(f"building tcp_pair failed: {r.stderr}")
    os.replace(out + ".tmp", out)
    return out


def host_main(args):
    t0 = time.monotonic()
    pmcprof = os.path.abspath(args.pmcprof)
    if not os.access(pmcprof, os.X_OK):
        log(f"FAIL: no pmcprof at {pmcprof}")
        return 1
    cache = os.path.abspath(args.cache)
    try:
        prep = guest.prepare(cache)
        tcp_pair = build_tcp_pair(cache)
    except RuntimeError as e:
        raise guest.GuestError(f"cannot prepare the guest: {e}")
    t_prep = time.monotonic() - t0
    log(f"guest kernel {prep.package} ({prep.vmlinux}); prepared in {t_prep:.1f} s")
    argv = ["/usr/bin/python3", os.path.abspath(__file__), "--in-guest", "--pmcprof", pmcprof,
            "--tcp-pair", tcp_pair]
    if args.workloads:
        argv += ["--workloads", os.path.abspath(args.workloads)]
    res = guest.run_test_boot(cache, argv, args.timeout, cpus=2)
    sys.stdout.write(res.output)
    log(f"guest: qemu ran {res.boot_s:.1f} s (boot + tests + power-off); "
        f"whole test {time.monotonic() - t0:.1f} s")
    if res.status is None:
        log(f"FAIL: {guest.describe_failure(res, args.timeout)}")
        return 1
    return 0 if res.status == 0 else 1


# ====================================================================== guest side

F = guest.Checks()
ARGS = None
RUNS = []  # every pmcprof this test started: none may outlive its phase


def kill_run(run):
    """Kills a pmcprof run this test started and its workload children, by PID."""
    if run.proc.poll() is None:
        kids = children_of(run.proc.pid)
        run.proc.kill()
        run.wait(30)
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass


def reap_all():
    """Kills whatever a failed phase left running."""
    for run in RUNS:
        kill_run(run)
    RUNS.clear()


def pmcprof_argv(*args):
    return [ARGS.pmcprof, *args]


class Run:
    """A pmcprof process started in the background; stderr is read as it comes."""

    def __init__(self, name, argv, out_file=None):
        self.name, self.argv, self.out_file = name, argv, out_file
        self.stderr_lines = []
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        RUNS.append(self)
        self.stdout = ""
        self.seen = threading.Event()
        self.pattern = None
        self._t_err = threading.Thread(target=self._read_err, daemon=True)
        self._t_err.start()
        self._t_out = threading.Thread(target=self._read_out, daemon=True)
        self._t_out.start()

    def _read_err(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line)
            if self.pattern and re.search(self.pattern, line):
                self.seen.set()

    def _read_out(self):
        self.stdout = self.proc.stdout.read()

    def wait_for_stderr(self, pattern, timeout):
        self.pattern = pattern
        if any(re.search(pattern, l) for l in self.stderr_lines):
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.seen.wait(0.2):
                return True
            if self.proc.poll() is not None:
                return any(re.search(pattern, l) for l in self.stderr_lines)
        return False

    def wait(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.timed_out = True
        self._t_err.join(5)
        self._t_out.join(5)
        self.elapsed = time.monotonic() - self.started
        return self.proc.returncode

    @property
    def stderr(self):
        return "".join(self.stderr_lines)

    def reports(self):
        """The JSON reports pmcprof wrote: the document, and with --aggregate both the kernel's
        view of the same calls nested in it (kernel_view)."""
        text = ""
        if self.out_file and os.path.exists(self.out_file):
            with open(self.out_file) as f:
                text = f.read()
        docs, dec, i = [], json.JSONDecoder(), 0
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text):
                return docs
            doc, i = dec.raw_decode(text, i)
            docs.append(doc)
            if "kernel_view" in doc:
                docs.append(doc["kernel_view"])

    def summary(self):
        elapsed = getattr(self, "elapsed", time.monotonic() - self.started)
        return (f"{self.name}: exit {self.proc.poll()} after {elapsed:.1f} s; "
                f"stderr tail: {self.stderr.strip()[-600:]!r}")


def func_stat(name, func, workload, backend=None, extra=(), tmp=None, events=EVENTS):
    out = os.path.join(tmp, name + ".json")
    argv = ["stat", "-e", events, "--func", func, "-j", "-o", out]
    if backend:
        argv += ["--backend", backend]
    argv += list(extra) + ["--", *workload]
    return Run(name, pmcprof_argv(*argv), out)


def only_function(report, func):
    rows = [f for f in report.get("functions", []) if f.get("function") == func]
    return rows[0] if len(rows) == 1 else None


def check_send_report(run, report, backend, n, agg=None):
    what = f"{run.name}{' [' + agg + ']' if agg else ''}"
    row = only_function(report, "tcp_sendmsg")
    if not F.check(row is not None, f"{what}: one tcp_sendmsg row", json.dumps(report)[:400]):
        return None
    tc = row.get("events", {}).get("task-clock", {})
    per_call = tc.get("mean")
    log(f"  {what}: backend={row.get('backend')} calls={row.get('calls')} "
        f"lost={row.get('lost')} task-clock total={tc.get('total')} ns "
        f"mean/call={per_call} ns p50={tc.get('p50')} wall mean={row.get('wall', {}).get('mean')} ns "
        f"on-CPU mean={row.get('oncpu', {}).get('mean')} ns")
    F.check(row.get("backend") == backend, f"{what}: backend is {backend}",
            f"got {row.get('backend')!r}")
    F.check(row.get("calls") == n, f"{what}: calls == {n}", f"got {row.get('calls')}")
    F.check(tc.get("status") == "ok" and isinstance(per_call, (int, float)) and per_call > 0,
            f"{what}: task-clock per call > 0", f"task-clock {tc}")
    return row


def check_exit_ok(run, timeout):
    rc = run.wait(timeout)
    log(f"  {run.name}: exit {rc}, {run.elapsed:.1f} s in the emulator")
    ok = F.check(rc == 0 and not getattr(run, "timed_out", False), f"{run.name}: exits 0",
                 run.summary())
    return ok


# ------------------------------------------------------------------ leftovers

def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return f"<{e}>"


def bpftool_json(*args):
    r = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return None, r.stderr.strip()
    try:
        return json.loads(r.stdout or "[]"), ""
    except json.JSONDecodeError as e:
        return None, f"bad JSON from bpftool: {e}"


def check_no_leftovers(after, funcs=("tcp_sendmsg", "tcp_recvmsg")):
    kev = read("/sys/kernel/tracing/kprobe_events")
    F.check(kev.strip() == "", f"after {after}: kprobe_events empty", repr(kev[:300]))
    klist = read("/sys/kernel/debug/kprobes/list")
    stale = [l for l in klist.splitlines() if any(re.search(rf"\b{f}\+", l) for f in funcs)]
    F.check(not stale, f"after {after}: no kprobe on {'/'.join(funcs)} in debugfs kprobes/list",
            "; ".join(stale[:4]))
    progs, err = bpftool_json("prog", "show")
    if not F.check(progs is not None, f"after {after}: bpftool prog show works", err):
        return
    ours = [p for p in progs if p.get("name") in PMCPROF_PROGS]
    F.check(not ours, f"after {after}: no pmcprof BPF program loaded",
            ", ".join(f"{p.get('id')}:{p.get('name')}" for p in ours))
    links, err = bpftool_json("link", "show")
    if not F.check(links is not None, f"after {after}: bpftool link show works", err):
        return
    our_ids = {p.get("id") for p in ours}
    names = {p.get("id"): p.get("name") for p in progs}
    stale_links = [l for l in links if l.get("prog_id") in our_ids
                   or names.get(l.get("prog_id")) in PMCPROF_PROGS]
    F.check(not stale_links, f"after {after}: no BPF link to a pmcprof program",
            json.dumps(stale_links)[:400])
    log(f"  after {after}: {len(progs)} BPF programs and {len(links)} links in the kernel")


def kprobes_on(func):
    return [l for l in read("/sys/kernel/debug/kprobes/list").splitlines()
            if re.search(rf"\b{func}\+0x0", l)]


def wait_attached(run, func, backend, timeout=240):
    """True once pmcprof said it attaches FUNC and the probe is in place (kprobes/list shows
    both the entry and the return probe; for fentry, a loaded func_fexit program)."""
    if not run.wait_for_stderr(rf"attaching {func} with", timeout):
        return False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and run.proc.poll() is None:
        if backend == "kprobe":
            kinds = {l.split()[1] for l in kprobes_on(func) if len(l.split()) > 1}
            if {"k", "r"} <= kinds:
                return True
        else:
            progs, _ = bpftool_json("prog", "show")
            if progs and any(p.get("name") == "func_fexit" for p in progs):
                return True
        time.sleep(0.2)
    return False


def pid_alive(pid):
    """True if PID exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def children_of(pid):
    kids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        kids.append(int(name))
            except (OSError, IndexError, ValueError):
                pass
    return kids


def signal_run(name, backend, tmp):
    """pmcprof on a long workload, to be signalled once attached (finish_signal_run)."""
    return func_stat(name, "tcp_sendmsg", [ARGS.tcp_pair, "serve", "300"], backend=backend,
                     extra=["-v"], tmp=tmp)


def finish_signal_run(run, backend, sig):
    attached = wait_attached(run, "tcp_sendmsg", backend)
    if not F.check(attached, f"{run.name}: attached before the signal", run.summary()
                   if run.proc.poll() is not None else "no 'attaching' line / probe in time"):
        kill_run(run)
        run.wait(30)
        return
    time.sleep(1.0)  # some calls while attached
    workload = children_of(run.proc.pid)
    os.kill(run.proc.pid, sig)
    rc = run.wait(60)
    log(f"  {run.name}: {signal.Signals(sig).name} -> exit {rc} after {run.elapsed:.1f} s")
    if sig == signal.SIGKILL:
        F.check(rc == -signal.SIGKILL, f"{run.name}: died of SIGKILL", f"exit {rc}")
        alive = [p for p in workload if pid_alive(p)]
        log(f"  {run.name}: workload {workload} left running after pmcprof's SIGKILL: {alive}")
        for p in alive:  # the workload this test started, by its PID
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in alive:
            for _ in range(50):
                if not pid_alive(p):
                    break
                time.sleep(0.1)
        return
    F.check(rc is not None and rc >= 0, f"{run.name}: exits (not by a signal) after SIGINT",
            run.summary())
    reports = run.reports()
    rep = reports[0] if reports else {}
    row = only_function(rep, "tcp_sendmsg") or {}
    log(f"  {run.name}: interrupted={rep.get('interrupted')} calls={row.get('calls')} "
        f"exit_status={rep.get('exit_status')}")
    F.check(rep.get("interrupted") is True, f"{run.name}: report says interrupted",
            json.dumps(rep)[:300])
    F.check((row.get("calls") or 0) > 0, f"{run.name}: counted calls before the signal",
            f"calls={row.get('calls')}")


# ------------------------------------------------------------------ phases

def phase(title):
    log(f"\n== {title}")
    return time.monotonic()


def phase1(tmp):
    t = phase("phase 1: tcp_sendmsg with kprobe (--aggregate both) and fentry, "
              f"{N_SEND} loopback sends")
    send = [ARGS.tcp_pair, "send", str(N_SEND)]
    kp = func_stat("kprobe", "tcp_sendmsg", send, backend="kprobe",
                   extra=["--aggregate", "both", "--region",
                          "send=tcp_sendmsg,tcp_sendmsg%return"], tmp=tmp)
    fe = func_stat("fentry", "tcp_sendmsg", send, backend="fentry", tmp=tmp)
    if check_exit_ok(kp, 400):
        reps = kp.reports()
        aggs = [r.get("aggregation") for r in reps]
        log(f"  kprobe: {len(reps)} JSON reports, aggregations {aggs}")
        F.check(sorted(aggs) == ["kernel", "stream"],
                "kprobe: --aggregate both writes a stream and a kernel report", f"got {aggs}")
        rows = {}
        for r in reps:
            rows[r.get("aggregation")] = check_send_report(kp, r, "kprobe", N_SEND,
                                                           r.get("aggregation"))
            check_region_report(r, N_SEND)
        if rows.get("stream") and rows.get("kernel"):
            check_agreement(rows["stream"], rows["kernel"])
    if check_exit_ok(fe, 400):
        reps = fe.reports()
        if F.check(len(reps) == 1, "fentry: one JSON report", f"{len(reps)}"):
            check_send_report(fe, reps[0], "fentry", N_SEND)
    log(f"  phase 1 took {time.monotonic() - t:.1f} s in the emulator")
    check_no_leftovers("normal exits (kprobe, fentry)")


def check_region_report(report, n):
    """The region from tcp_sendmsg's entry (kprobe) to its return (kretprobe): one per send."""
    agg = report.get("aggregation")
    row = only_function(report, "send")
    if not F.check(row is not None, f"kprobe [{agg}]: one row for the region 'send'",
                   json.dumps(report)[:400]):
        return
    log(f"  region send [{agg}]: backend={row.get('backend')} kind={row.get('kind')} "
        f"calls={row.get('calls')} open={row.get('open')} unmatched={row.get('unmatched_exits')} "
        f"task-clock total={row.get('events', {}).get('task-clock', {}).get('total')} ns")
    F.check((row.get("backend"), row.get("kind")) == ("kprobe", "region"),
            f"region [{agg}]: kprobe region", f"{row.get('backend')} {row.get('kind')}")
    F.check(row.get("calls") == n, f"region [{agg}]: calls == {n}", f"got {row.get('calls')}")
    F.check(row.get("unmatched_exits") == 0 and row.get("open") == 0,
            f"region [{agg}]: no end without a start, no start left open",
            f"{row.get('unmatched_exits')} {row.get('open')}")


def check_agreement(s, k):
    log("  stream vs kernel aggregation of the same run:")
    for key in ("calls", "not_counted", "slept", "migrated", "wall_ns", "oncpu_ns"):
        log(f"    {key}: stream={s.get(key)} kernel={k.get(key)}")
        F.check(s.get(key) == k.get(key), f"aggregations agree on {key}",
                f"stream {s.get(key)} vs kernel {k.get(key)}")
    st, kt = s["events"]["task-clock"], k["events"]["task-clock"]
    log(f"    task-clock: stream total={st.get('total')} p50={st.get('p50')} p99={st.get('p99')}; "
        f"kernel total={kt.get('total')} p50={kt.get('p50')} p99={kt.get('p99')}")
    F.check(st.get("total") == kt.get("total"), "aggregations agree on the task-clock total",
            f"{st.get('total')} vs {kt.get('total')}")
    # Kernel percentiles come from log-linear buckets 25% wide: allow one bucket.
    for q in ("p50", "p90"):
        a, b = st.get(q), kt.get(q)
        ok = isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            abs(a - b) <= 0.25 * max(a, b) + 1
        F.check(ok, f"aggregations agree on task-clock {q} within a histogram bucket",
                f"{a} vs {b}")


def phase2(tmp):
    t = phase(f"phase 2: blocking tcp_recvmsg with --backend auto -v ({RECV_MSGS} messages, "
              f"{RECV_DELAY_MS} ms apart); a kprobe run stopped by SIGINT")
    recv = func_stat("recv", "tcp_recvmsg",
                     [ARGS.tcp_pair, "recv", str(RECV_MSGS), str(RECV_DELAY_MS)],
                     backend="auto", extra=["-v"], tmp=tmp)
    sigint = signal_run("sigint", "kprobe", tmp)
    if check_exit_ok(recv, 400):
        said = [l.strip() for l in recv.stderr_lines if "attaching" in l]
        log(f"  recv (auto): -v says {said}")
        F.check(any("tcp_recvmsg with fentry" in l for l in said),
                "auto: -v says it attaches with fentry", recv.stderr[-400:])
        reps = recv.reports()
        row = only_function(reps[0], "tcp_recvmsg") if len(reps) == 1 else None
        if F.check(row is not None, "recv: one report with one tcp_recvmsg row",
                   json.dumps(reps)[:300]):
            check_blocking(row)
    finish_signal_run(sigint, "kprobe", signal.SIGINT)
    log(f"  phase 2 took {time.monotonic() - t:.1f} s in the emulator")
    check_no_leftovers("normal exit (auto/fentry) and SIGINT (kprobe)")


def check_blocking(row):
    wall, oncpu = row["wall"], row["oncpu"]
    tc = row["events"]["task-clock"]
    log(f"  recv: backend={row['backend']} calls={row['calls']} slept={row['slept']} "
        f"wall mean={wall['mean']:.0f} ns p50={wall['p50']:.0f} ns; on-CPU mean={oncpu['mean']:.0f} ns; "
        f"task-clock mean={tc.get('mean')} ns")
    F.check(row["backend"] == "fentry", "auto: JSON backend is fentry", f"{row['backend']!r}")
    F.check(row["calls"] == RECV_MSGS, f"recv: calls == {RECV_MSGS}", f"{row['calls']}")
    F.check(row["slept"] == row["calls"], "recv: every call slept",
            f"slept {row['slept']} of {row['calls']}")
    F.check(wall["mean"] >= 0.8 * RECV_DELAY_MS * 1e6,
            f"recv: wall time per call includes the ~{RECV_DELAY_MS} ms wait",
            f"mean {wall['mean']} ns")
    F.check(oncpu["mean"] <= 0.25 * wall["mean"],
            "recv: on-CPU time per call excludes the wait (<= 25% of wall)",
            f"on-CPU {oncpu['mean']} vs wall {wall['mean']}")
    F.check(isinstance(tc.get("mean"), (int, float)) and 0 < tc["mean"] <= 0.25 * wall["mean"],
            "recv: task-clock per call > 0 and excludes the wait",
            f"task-clock {tc.get('mean')} vs wall {wall['mean']}")


def kernel_text_symbols():
    """Names of vmlinux text symbols that occur once in /proc/kallsyms."""
    seen, dup = set(), set()
    with open("/proc/kallsyms") as f:
        for line in f:
            p = line.split()
            if len(p) == 3 and p[1] in ("t", "T"):
                (dup if p[2] in seen else seen).add(p[2])
    return seen - dup


def blacklisted_function(text):
    """A text symbol in the kprobe blacklist, e.g. a kprobes internal."""
    bl = read("/sys/kernel/debug/kprobes/blacklist").split()
    names = [bl[i + 1] for i in range(0, len(bl) - 1, 2)]
    for preferred in ("kprobe_int3_handler", "do_int3", "notify_die", "kprobe_handler"):
        if preferred in names and preferred in text:
            return preferred
    return next((n for n in names if n in text and "." not in n), None)


def notrace_function(text):
    """A plain (non-inline, unique) text symbol that ftrace cannot trace: not in
    available_filter_functions and not blacklisted. Debian's kernel lacks
    CONFIG_KPROBE_EVENTS_ON_NOTRACE, so kprobe events refuse it too, and fentry needs ftrace."""
    with open("/sys/kernel/tracing/available_filter_functions") as f:
        traceable = {line.split()[0] for line in f if line.strip()}
    blacklist = set(read("/sys/kernel/debug/kprobes/blacklist").split()[1::2])
    for name in ("___ratelimit", "__add_hash_entry", "native_sched_clock"):
        if name in text and name not in traceable and name not in blacklist:
            return name
    return None


def clean_error(run, what, mentions):
    rc = run.wait(300)
    err = run.stderr
    lines = [l for l in err.splitlines() if l.strip()]
    log(f"  {what}: exit {rc}, stderr {err.strip()!r}")
    F.check(rc is not None and rc > 0, f"{what}: non-zero exit (not a signal)", f"exit {rc}")
    F.check(not any(m in err for m in CRASH_MARKERS), f"{what}: no crash text", err[-300:])
    ok = bool(lines) and lines[0].startswith("pmcprof: ") and len(lines) <= 2 and \
        (len(lines) == 1 or lines[1].startswith("HINT: "))
    F.check(ok, f"{what}: one 'pmcprof:' line (+ at most one HINT)", repr(err[-400:]))
    if lines:
        for rx in mentions:
            F.check(re.search(rx, lines[0], re.I) is not None,
                    f"{what}: the line matches /{rx}/", lines[0])


def phase3(tmp):
    t = phase("phase 3: a kprobe run killed by SIGKILL; unknown and unprobeable kernel "
              "functions; pmcprof doctor --json")
    preempted = start_preempted(tmp)
    sigkill = signal_run("sigkill", "kprobe", tmp)
    text = kernel_text_symbols()
    bad, notrace = blacklisted_function(text), notrace_function(text)
    log(f"  blacklisted function chosen: {bad}; notrace function chosen: {notrace}")
    nt = None
    if notrace:
        nt = Run("notrace", pmcprof_argv("stat", "-e", EVENTS, "--func", notrace, "--", "true"))
    else:
        log("  note: none of the known notrace functions is in this kernel: that case is not run")
    unknown = Run("unknown", pmcprof_argv("stat", "-e", EVENTS, "--func",
                                          "pmcprof_no_such_function", "--", "true"))
    black = None
    if F.check(bad is not None, "a blacklisted text symbol exists"):
        black = Run("blacklisted", pmcprof_argv("stat", "-e", EVENTS, "--func", bad,
                                                "--", "true"))
    doctor = Run("doctor", pmcprof_argv("doctor", "--json"))
    fallback = func_stat("fallback", FALLBACK_FUNC, ["true"], backend="auto", extra=["-v"],
                         tmp=tmp)
    modes = start_aggregation_modes(tmp)
    clean_error(unknown, "unknown function", [r"pmcprof_no_such_function", r"unknown"])
    if black:
        clean_error(black, f"blacklisted function {bad}", [re.escape(bad), r"blacklist|cannot"])
    if nt:
        clean_error(nt, f"notrace function {notrace}",
                    [re.escape(notrace), r"notrace|ftrace|trac(e|ed|ing)\b|available_filter"])
    rc = doctor.wait(300)
    try:
        caps = {c["name"]: c for c in json.loads(doctor.stdout)["capabilities"]}
    except (ValueError, KeyError) as e:
        caps = {}
        F.check(False, "doctor --json parses", f"{e}: exit {rc} {doctor.stdout[:300]!r}")
    for name, want in (("kprobes", True), ("fentry", True), ("hardware_pmu", False)):
        c = caps.get(name, {})
        log(f"  doctor: {name} available={c.get('available')} ({c.get('detail')})")
        F.check(c.get("available") is want, f"doctor: {name} {'yes' if want else 'no'}",
                f"{c}")
    check_fallback(fallback)
    check_aggregation_modes(modes)
    finish_signal_run(sigkill, "kprobe", signal.SIGKILL)
    phase4(preempted)
    log(f"  phases 3 and 4 took {time.monotonic() - t:.1f} s in the emulator")
    check_no_leftovers("SIGKILL (kprobe), error exits, doctor and the preempted uprobe run")


AGG_MODE_CALLS = 200
AGG_MODES = {"stream-only": ("--aggregate", "stream"),
             "kernel-by-cgroup": ("--aggregate", "kernel", "--by", "cgroup")}


def start_aggregation_modes(tmp):
    """Linux 6.1 verifies a BPF global function even where no call reaches it: a map that a
    mode does not create must sit in code its rodata makes dead, and a global function may not
    use its pointer argument as a map key. Both broke loads here that newer kernels take
    (--aggregate stream on every build before 2026-11-28; --by cgroup with the first
    byte-wide histograms): one uprobe run in each mode."""
    if not ARGS.workloads:
        return {}
    nest = os.path.join(ARGS.workloads, "func_nest")
    return {name: func_stat(f"agg-{name}", f"{nest}:tiny", [nest, "busy", str(AGG_MODE_CALLS)],
                            extra=extra, tmp=tmp)
            for name, extra in AGG_MODES.items()}


def check_aggregation_modes(runs):
    F.check(len(runs) == len(AGG_MODES), "aggregation modes: runs started (--workloads given)")
    for name, run in runs.items():
        if not check_exit_ok(run, 400):
            continue
        reps = run.reports()
        rows = [f for f in (reps[-1].get("functions", []) if reps else [])
                if f.get("function", "").endswith(":tiny")]
        calls = sum(r.get("calls", 0) for r in rows)
        log(f"  aggregation {name}: {len(rows)} row(s), {calls} calls")
        F.check(calls == AGG_MODE_CALLS, f"aggregation {name}: every call counted",
                f"{calls} of {AGG_MODE_CALLS}")


def check_fallback(run):
    """--backend auto on a function whose fentry attach the kernel refuses (6.1's x86
    trampoline takes at most 6 arguments; do_mmap has 8) falls back to a kprobe for that
    function alone, and says so with -v and in the report."""
    if not check_exit_ok(run, 400):
        return
    said = [l.strip() for l in run.stderr_lines if "fentry refused" in l]
    log(f"  fallback: -v says {said}")
    F.check(bool(said), f"fallback: -v says fentry was refused for {FALLBACK_FUNC}",
            run.stderr[-400:])
    reps = run.reports()
    row = only_function(reps[0], FALLBACK_FUNC) if len(reps) == 1 else None
    if not F.check(row is not None, f"fallback: one report with one {FALLBACK_FUNC} row",
                   json.dumps(reps)[:300]):
        return
    log(f"  fallback: backend {row.get('backend')}, calls {row.get('calls')}, "
        f"note {row.get('backend_note')!r}")
    F.check(row.get("backend") == "kprobe", "fallback: the report's backend is kprobe",
            f"{row.get('backend')}")
    F.check("fentry refused" in (row.get("backend_note") or "") and
            "ENOTSUPP" in row.get("backend_note", ""),
            "fallback: the report's backend note says fentry was refused (ENOTSUPP: too many "
            "arguments for the trampoline, not some other failure)", f"{row.get('backend_note')!r}")
    F.check((row.get("calls") or 0) > 0, f"fallback: {FALLBACK_FUNC} calls counted by the kprobe",
            f"{row.get('calls')}")


def preempt_model():
    try:
        text = read("/sys/kernel/debug/sched/preempt")
    except OSError:
        return None
    m = re.search(r"\((\w+)\)", text)
    return m.group(1) if m else None


def start_preempted(tmp):
    """Phase 4's run, started at the beginning of phase 3 and checked at its end (each run
    in the emulator is mostly pmcprof's start-up: the two phases' runs overlap)."""
    model = preempt_model()
    log(f"  preemption model: {model}")
    if not F.check(model == "full", "the kernel runs with preempt=full", f"got {model!r}"):
        return None
    if not ARGS.workloads:
        F.check(False, "--workloads given", "the host passes its workloads directory")
        return None
    nest, touch = (os.path.join(ARGS.workloads, w) for w in ("func_nest", "touch_pages"))
    # The competitor starts with the calls (not during pmcprof's emulated start-up, which it
    # would slow) and shares their CPU; it is killed when they are done. It takes page faults
    # all the time, which tiny() never does: faults in a counted call are the competitor's.
    script = (f'(while :; do "{touch}" 256 >/dev/null; done) & "{nest}" busy {PREEMPTED_CALLS}; '
              f'status=$?; kill $!; exit $status')
    return func_stat("preempted", f"{nest}:tiny", ["taskset", "-c", "0", "sh", "-c", script],
                     extra=("--aggregate", "both"), tmp=tmp, events="task-clock,page-faults")


def phase4(run):
    t = phase("phase 4: uprobe calls preempted on a fully preemptible kernel (run beside phase 3)")
    if run is None:
        return
    n = PREEMPTED_CALLS
    ok = check_exit_ok(run, 400)
    reports = run.reports() if ok else []
    if not F.check(len(reports) == 2, "preempted: a report with kernel_view", run.summary()):
        return
    for agg, report in zip(("stream", "kernel"), reports):
        rows = [f for f in report.get("functions", []) if f.get("function", "").endswith(":tiny")]
        if not F.check(len(rows) == 1, f"preempted [{agg}]: one tiny row"):
            continue
        row = rows[0]
        oncpu, wall = row.get("oncpu", {}), row.get("wall", {})
        tc = row.get("events", {}).get("task-clock", {})
        log(f"  [{agg}] calls={row.get('calls')} not_aggregated={row.get('not_aggregated')} "
            f"slept={row.get('slept')} on-CPU max={oncpu.get('max')} ns total={oncpu.get('total')} "
            f"wall max={wall.get('max')} ns total={wall.get('total')} task-clock max={tc.get('max')}")
        F.check(row.get("calls", 0) + row.get("not_aggregated", 0) == n,
                f"preempted [{agg}]: calls + not aggregated == {n}", json.dumps(row)[:300])
        F.check(isinstance(oncpu.get("max"), (int, float)) and oncpu["max"] < 10**9,
                f"preempted [{agg}]: on-CPU max under a second (no wrap)", f"{oncpu}")
        F.check(isinstance(tc.get("max"), (int, float)) and tc["max"] < 10**9,
                f"preempted [{agg}]: task-clock max under a second (no wrap)", f"{tc}")
        F.check(oncpu.get("total", 1) <= wall.get("total", 0),
                f"preempted [{agg}]: on-CPU total <= wall total", f"{oncpu} {wall}")
        F.check(row.get("slept", 0) > 0, f"preempted [{agg}]: some calls were preempted",
                f"slept {row.get('slept')}")
        pf = row.get("events", {}).get("page-faults", {})
        log(f"  [{agg}] page-faults over the counted calls: total={pf.get('total')} "
            f"max={pf.get('max')}; not counted={row.get('not_counted')} (at a switch the "
            f"kernel did not report: {row.get('not_counted_hidden_switch')})")
        # tiny() alone takes 1 fault in 2,000 calls here (its first call). Beside the faulting
        # competitor, counted calls held its faults: 316 (max 277 in one call) at 0dccc34, and
        # still 22 (max 21) on 2026-11-28 before calls were checked against the kernel's own
        # count of the thread's switches (kernel_switches in bpf/func.bpf.c): a round trip
        # through the competitor that sched_switch never reported. After: 1 (the first call),
        # in 3 of 3 runs.
        F.check(isinstance(pf.get("total"), (int, float)) and pf["total"] <= 2,
                f"preempted [{agg}]: no competitor's page faults in a counted call",
                f"page-faults {pf}")
    log(f"  phase 4's checks took {time.monotonic() - t:.1f} s in the emulator")


def phase5(tmp):
    phase("5. the smoke set (smoke.py) on a preemptible kernel")
    if not ARGS.workloads:
        F.check(False, "phase 5 needs --workloads")
        return
    t0 = time.monotonic()
    s = smoke.Smoke(ARGS.pmcprof, ARGS.workloads, F)
    for step in (s.counting, s.cgroups, s.serve, s.syscall, s.usdt):
        step()
    log(f"  phase 5 took {time.monotonic() - t0:.1f} s in the emulator")
    check_no_leftovers("the smoke set")


def guest_main(args):
    global ARGS
    ARGS = args
    t0 = time.monotonic()
    log(f"guest: {os.uname().release}, {os.cpu_count()} CPUs, pmcprof {args.pmcprof}")
    log("(times below are measured inside the emulator: not performance figures)")
    if not os.path.exists("/sys/bus/event_source/devices/kprobe"):
        log("FAIL: this guest kernel has no kprobe PMU")
        return 1
    with tempfile.TemporaryDirectory(prefix="pmcprof-guest-") as tmp:
        check_no_leftovers("boot (baseline)")
        for ph in (phase1, phase2, phase3, phase5):
            try:
                ph(tmp)
            except Exception:  # a bug in a phase must not hide the others
                F.check(False, f"{ph.__name__} ran", traceback.format_exc())
                reap_all()
                check_no_leftovers(f"the failed {ph.__name__}")
            RUNS.clear()
    return F.summary("guest suite", f"{time.monotonic() - t0:.1f} s in the emulator")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--cache", help="guest cache directory (host side)")
    ap.add_argument("--workloads", help="the build's workloads (phase 4 runs func_nest and burn)")
    ap.add_argument("--timeout", type=float, default=540,
                    help="seconds the whole guest run may take before it is killed")
    ap.add_argument("--in-guest", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tcp-pair", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.in_guest:
        return guest_main(args)
    if not args.cache:
        ap.error("--cache DIR is required")
    t.exit_unless("qemu:x86_64")  # with TCG; the guest's kernel brings kprobes and fentry
    return guest.host_test(lambda: host_main(args))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Prometheus endpoint cost: scrape latency, CPU and memory of `pmcprof serve` at 1 scrape/s.

    sudo python3 bench/bench_serve.py --pmcprof BUILD/pmcprof [--seconds 60] [--json OUT]

Setup: a private cgroup P under the cgroup v2 mount (found in /proc/self/mountinfo) with 10
children P/c0..P/c9; a small shell loop (a short busy loop, a `cat`, `sleep 0.2`) runs in
c0, c2, c4, c6 and c8, the odd ones stay empty. Everything is removed at the end, also on
failure or SIGINT/SIGTERM (cgroup.kill, then rmdir).

Configurations (one pmcprof process each, in turn; --configs picks a subset):
  a     serve -a -e EVENTS                                  (anchor: no cgroups)
  fd    serve -a -e EVENTS -G P/c0,...,P/c9 --cgroup-backend fd
  bpf   serve -a -e EVENTS -G P/c0,...,P/c9 --cgroup-backend bpf
  func  serve -a -e EVENTS --func syscall:read --func syscall:write
        (function mode: per-call histograms; function mode takes at most 8 -G cgroups, so
        it runs without -G)
EVENTS = task-clock,page-faults,context-switches,cpu-migrations; always --listen
127.0.0.1:PORT with a free port. The issue's setting is 4 events x 2 CPUs x 10 cgroups:
-A cannot be combined with -G, so the per-cgroup rows are summed over the CPUs.

Per configuration:
1. Start-up: from spawn until the first scrape that says `pmcprof_up 1` (unmeasured otherwise).
2. Window: SECONDS scrapes of GET /metrics at a fixed rate of one per second (scrape i starts
   at t0 + i s). Latency of a scrape = from before connect() until the last byte of the body
   (Content-Length) has arrived, measured in this script with a raw socket (HTTP/1.1,
   Connection: close). Reported: median, p90, p99, max; body bytes and samples (non-comment
   lines) of the last scrape; every body is checked (200, Content-Length, each sample line
   `name{labels} value`).
   pmcprof's CPU over the window: utime+stime from /proc/PID/stat (clock ticks, 10 ms here)
   and, at ns resolution, the sum of sum_exec_runtime over /proc/PID/task/*/schedstat; given
   as % of one CPU and as ms per scrape (window CPU / scrapes; pmcprof sleeps in poll() between
   scrapes, so nearly all of it is scrape work). RSS: VmRSS and VmHWM at the end of the window.
   Note: with the bpf backend, the sched_switch hook runs in the context of whatever task is
   switching, so its cost (see bench_cgroup.py) is not in pmcprof's own CPU.
3. Breakdown (unless --no-breakdown), after the window, same process:
   - the HTTP floor: 30 GET /404 at 10/s (accept, parse, answer, close; no counter read, no
     rendering);
   - pmcprof's own handler, profiled with pmcprof itself: `pmcprof stat -e task-clock --func
     BIN:SYMBOL ... -p PID -j` on HttpServer::Callbacks::access (a request on the serving
     thread), LiveFeed::answer (the measurement thread's share), the live report's read
     (RunCounters::read / read_func_stats + read_kernel_aggregates), RunCounters::rows and
     render_prometheus (mangled names from `nm`), over 30 scrapes at 10/s. Each uprobe costs
     a few µs per call (trap on entry and return), so these on-CPU means are upper bounds;
     the window figures above have no probe attached;
   - in counting mode, a second pass with `--func syscall:read` on the same process: how many
     read() calls a scrape makes (one per perf group per CPU per cgroup) and what each costs.

Idle connections (--idle 0,20,200; instead of the configurations above):
    sudo python3 bench/bench_serve.py --pmcprof BUILD/pmcprof --idle 0,20,200 [--calls 300000]
For each N, a fresh `pmcprof serve -q -e task-clock --func syscall:getppid --aggregate stream`
(the per-call stream: what a stalled run loop loses). Once it is up: N TCP connections that
connect and send nothing (held open), then `func_workload getppid CALLS` (tests/workloads, found
beside --pmcprof) while a scraper sends GET /metrics every 100 ms (10 s timeout each). The idle
connections are closed after the burst; a last scrape gives the calls counted and the records lost
(pmcprof_function_calls_total, pmcprof_lost_records_total, both as deltas over the burst).
Reported per N: calls counted, records lost, how many idle connections were established, the
scrape latencies during the burst (median, max; timeouts counted), and the time SIGTERM took.
Repeat with --repeat R: the figures of each run are listed.
"""
import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "runtime"))
import serve_testlib  # noqa: E402

EVENTS = "task-clock,page-faults,context-switches,cpu-migrations"
N_CGROUPS = 10
WORK_CGROUPS = (0, 2, 4, 6, 8)
# Light periodic work: a few ms of shell arithmetic, a fork+exec of cat (page faults, reads,
# migrations), then a sleep (context switches).
WORK_LOOP = ("while :; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; "
             "cat /proc/loadavg >/dev/null; sleep 0.2; done")
FUNCS = ["syscall:read", "syscall:write"]
CONFIGS = ("a", "fd", "bpf", "func")
SAMPLE_RE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^{}]*\})? (\S+)$')
# Mangled-name fragments of the functions a scrape runs through (RelWithDebInfo/Release keep
# them out of line); `.cold` parts are skipped.
PROBES = {
    "access": "HttpServer9Callbacks6access",  # the serving thread's whole request
    "answer": "8LiveFeed6answer",  # the measurement thread's share: build the live report
    "counters_read": "RunCounters4readEv",
    "rows": "RunCounters4rows",
    "read_func_stats": "15read_func_stats",
    "read_kernel_aggregates": "22read_kernel_aggregates",
    "render": "17render_prometheus",
}
PROBES_BY_MODE = {
    "counting": ["access", "answer", "counters_read", "rows", "render"],
    "function": ["access", "answer", "read_func_stats", "read_kernel_aggregates", "render"],
}


class Interrupted(Exception):
    pass


def on_signal(signum, _frame):
    raise Interrupted(f"signal {signum}")


def percentile(values, p):
    """Linear-interpolated percentile (p in 0..100)."""
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def dist(values):
    return {"median": statistics.median(values), "p90": percentile(values, 90),
            "p99": percentile(values, 99), "max": max(values), "min": min(values),
            "n": len(values)}


# ------------------------------------------------------------------------------ cgroups
def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split(" ", 1)[0] == "cgroup2":
                return left.split()[4]
    return None


class Cgroups:
    """P/c0..P/c9 under the cgroup v2 mount, with a work loop in some; close() removes all."""

    def __init__(self):
        self.mount = cgroup2_mount()
        if not self.mount:
            sys.exit("no cgroup v2 hierarchy in /proc/self/mountinfo")
        self.name = f"pmcprof-bench-serve-{os.getpid()}"
        self.parent = os.path.join(self.mount, self.name)
        self.children = [f"c{i}" for i in range(N_CGROUPS)]
        self.workers = []
        self.made = []

    def path(self, child):
        return os.path.join(self.parent, child)

    def rel(self, child):
        """The -G argument: a path under the mount."""
        return f"{self.name}/{child}"

    def open(self):
        os.mkdir(self.parent)
        self.made.append(self.parent)
        for c in self.children:
            os.mkdir(self.path(c))
            self.made.append(self.path(c))
        for i in WORK_CGROUPS:
            procs = os.path.join(self.path(self.children[i]), "cgroup.procs")

            def enter(procs=procs):
                with open(procs, "w") as f:
                    f.write(str(os.getpid()))
            self.workers.append(subprocess.Popen(
                ["sh", "-c", WORK_LOOP], preexec_fn=enter, start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return self

    def procs(self, path):
        try:
            with open(os.path.join(path, "cgroup.procs")) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def close(self):
        for w in self.workers:
            try:
                os.killpg(w.pid, signal.SIGKILL)
            except OSError:
                pass
        for path in reversed(self.made):
            deadline = time.monotonic() + 5
            while True:
                pids = self.procs(path)
                if not pids:
                    break
                kill_file = os.path.join(path, "cgroup.kill")
                try:
                    with open(kill_file, "w") as f:
                        f.write("1")
                except OSError:
                    for pid in pids:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except OSError:
                            pass
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
        for w in self.workers:
            try:
                w.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        left = []
        for path in reversed(self.made):
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
            else:
                left.append(path)
        self.made = []
        if left:
            print(f"warning: could not remove cgroups {left}", file=sys.stderr)


# ------------------------------------------------------------------------------ process stats
# cpu_ns: sum_exec_runtime (ns) over the process's threads (serve_testlib.process_cpu_ns).
cpu_ns = serve_testlib.process_cpu_ns


def stat_ticks(pid):
    """utime + stime from /proc/PID/stat, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5)


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


# ------------------------------------------------------------------------------ HTTP
def scrape(port, path="/metrics"):
    """One GET; returns (latency_s, status, body bytes). Latency: connect .. last body byte."""
    req = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    t0 = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(req)
        buf = b""
        head_end, length = -1, None
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
            if head_end < 0:
                head_end = buf.find(b"\r\n\r\n")
                if head_end >= 0:
                    m = re.search(rb"\r\ncontent-length: *(\d+)", buf[:head_end], re.I)
                    length = int(m.group(1)) if m else None
            if head_end >= 0 and length is not None and len(buf) - head_end - 4 >= length:
                break
        t1 = time.perf_counter()
    if head_end < 0:
        raise RuntimeError(f"no HTTP head in {buf[:200]!r}")
    status = int(buf.split(b" ", 2)[1])
    body = buf[head_end + 4:]
    if length is not None and len(body) != length:
        raise RuntimeError(f"body {len(body)} bytes, Content-Length {length}")
    return t1 - t0, status, body


def check_body(body):
    """(samples, bad lines, {metric{labels}: value}) of an exposition."""
    samples, bad, values = 0, [], {}
    for line in body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        samples += 1
        m = SAMPLE_RE.match(line)
        if not m:
            bad.append(line)
            continue
        values[line.rsplit(" ", 1)[0]] = float(m.group(2))
    return samples, bad, values


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------ one config
def serve_args(name, cg):
    if name == "a":
        return ["-a", "-e", EVENTS]
    if name in ("fd", "bpf"):
        return ["-a", "-e", EVENTS, "-G", ",".join(cg.rel(c) for c in cg.children),
                "--cgroup-backend", name]
    if name == "func":
        args = ["-a", "-e", EVENTS]
        for f in FUNCS:
            args += ["--func", f]
        return args
    raise ValueError(name)


def find_symbols(binary):
    nm = shutil.which("nm")
    if not nm:
        return {}
    out = subprocess.run([nm, "--defined-only", binary], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] not in "tTW" or ".cold" in parts[2]:
            continue
        for key, frag in PROBES.items():
            if frag in parts[2] and key not in found:
                found[key] = parts[2]
    return found


def profile(pmcprof, pid, port, funcs, n):
    """`pmcprof stat --func F... -p PID -j` around N scrapes at 10/s: {F: function object}."""
    out = tempfile.NamedTemporaryFile(prefix="bench_serve_bd_", suffix=".json", delete=False)
    out.close()
    argv = [pmcprof, "stat", "-q", "-e", "task-clock", "-p", str(pid), "-j", "-o", out.name]
    for f in funcs:
        argv += ["--func", f]
    err = tempfile.TemporaryFile()
    prof = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    try:
        time.sleep(1.5)  # load + attach (BPF object, probes)
        if prof.poll() is not None:
            err.seek(0)
            return {"error": err.read().decode().strip()[:500]}
        for _ in range(n):
            scrape(port)
            time.sleep(0.1)
        prof.send_signal(signal.SIGINT)
        prof.wait(timeout=15)
        with open(out.name) as f:
            report = json.load(f)
    finally:
        if prof.poll() is None:
            prof.kill()
            prof.wait()
        os.unlink(out.name)
    return {fn["function"]: fn for fn in report.get("functions", [])}


def breakdown(pmcprof, pid, port, mode, symbols, n):
    """Per-function on-CPU/wall means (µs per call) of pmcprof's scrape handler over N scrapes
    (uprobes), and, in counting mode, pmcprof's read() system calls (syscall tracepoint, a
    separate pass so it does not inflate the first)."""
    keys = [k for k in PROBES_BY_MODE[mode] if k in symbols]
    if not keys:
        return None
    funcs = {f"{pmcprof}:{symbols[k]}": k for k in keys}
    got = profile(pmcprof, pid, port, list(funcs), n)
    if "error" in got:
        return got
    result = {}
    for name, fn in got.items():
        calls = fn["calls"]
        result[funcs[name]] = {"calls": calls,
                               "oncpu_us": fn["oncpu_ns"] / calls / 1e3 if calls else None,
                               "wall_us": fn["wall_ns"] / calls / 1e3 if calls else None}
    if mode == "counting":
        got = profile(pmcprof, pid, port, ["syscall:read"], n)
        fn = got.get("syscall:read")
        if fn:
            calls = fn["calls"]
            result["read_syscalls"] = {
                "calls": calls, "per_scrape": calls / n,
                "wall_us": fn["wall_ns"] / calls / 1e3 if calls else 0,
                "oncpu_us": fn["oncpu_ns"] / calls / 1e3 if calls else 0,
                "p50_us": fn["wall"].get("p50") / 1e3 if calls else 0,
                "p90_us": fn["wall"].get("p90") / 1e3 if calls else 0,
                "per_scrape_us": fn["wall_ns"] / n / 1e3}
    return result


def run_config(name, opts, cg, symbols):
    port = free_port()
    mode = "function" if name == "func" else "counting"
    argv = [opts.pmcprof, "serve", *serve_args(name, cg), "--listen", f"127.0.0.1:{port}"]
    err = tempfile.TemporaryFile()
    t_spawn = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    res = {"config": name, "command": " ".join(["pmcprof", *argv[1:]])}

    def fail(why):
        err.seek(0)
        return RuntimeError(f"{name}: {why}; pmcprof stderr: {err.read().decode().strip()}")

    try:
        # 1. Ready: first scrape with pmcprof_up 1.
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise fail(f"pmcprof exited with {proc.returncode}")
            try:
                _, status, body = scrape(port)
                if status == 200 and b"\npmcprof_up 1\n" in b"\n" + body:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise fail("not up after 30 s")
            time.sleep(0.005)
        res["ready_ms"] = (time.perf_counter() - t_spawn) * 1e3
        time.sleep(0.5)

        # 2. The window: one scrape per second.
        lat, per_interval_cpu, bad_all = [], [], []
        body = b""
        t0 = time.monotonic()
        c0, k0 = cpu_ns(proc.pid), stat_ticks(proc.pid)
        prev_c = c0
        for i in range(opts.seconds):
            delay = t0 + i * opts.interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if i:
                c = cpu_ns(proc.pid)
                per_interval_cpu.append(c - prev_c)
                prev_c = c
            latency, status, body = scrape(port)
            if status != 200:
                raise fail(f"scrape {i}: HTTP {status}")
            samples, bad, _ = check_body(body)
            bad_all += bad
            lat.append(latency)
        delay = t0 + opts.seconds * opts.interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        t1 = time.monotonic()
        c1, k1 = cpu_ns(proc.pid), stat_ticks(proc.pid)
        per_interval_cpu.append(c1 - prev_c)
        window = t1 - t0
        hz = os.sysconf("SC_CLK_TCK")
        samples, _, values = check_body(body)
        res.update({
            "scrapes": len(lat),
            "window_s": window,
            "latency_ms": {k: v * 1e3 if k != "n" else v for k, v in dist(lat).items()},
            "body_bytes": len(body),
            "samples": samples,
            "bad_lines": bad_all[:5],
            "bad_line_count": len(bad_all),
            "cpu_ms_schedstat": (c1 - c0) / 1e6,
            "cpu_ms_stat_ticks": (k1 - k0) * 1e3 / hz,
            "cpu_pct_one_cpu": 100 * (c1 - c0) / 1e9 / window,
            "cpu_pct_one_cpu_ticks": 100 * (k1 - k0) / hz / window,
            "cpu_ms_per_scrape": (c1 - c0) / 1e6 / len(lat),
            "cpu_ms_per_interval": {k: v / 1e6 if k != "n" else v
                                    for k, v in dist(per_interval_cpu).items()},
            "rss_mb": status_kb(proc.pid, "VmRSS") / 1024,
            "hwm_mb": status_kb(proc.pid, "VmHWM") / 1024,
            "fds": len(os.listdir(f"/proc/{proc.pid}/fd")),
            "threads": len(os.listdir(f"/proc/{proc.pid}/task")),
        })
        if name in ("fd", "bpf"):
            tc = {}
            for key, v in values.items():
                m = re.match(r'pmcprof_event_seconds_total\{event="task-clock",cgroup="([^"]*)"\}',
                             key)
                if m:
                    tc[m.group(1).rsplit("/", 1)[1]] = v
            res["task_clock_s_by_cgroup"] = tc

        # 3. Breakdown: the HTTP floor, then pmcprof's handler profiled by pmcprof.
        if not opts.no_breakdown:
            floor = []
            for _ in range(30):
                latency, status, _ = scrape(port, "/no-such-page")
                floor.append(latency)
                time.sleep(0.1)
            res["floor_404_ms"] = {k: v * 1e3 if k != "n" else v for k, v in dist(floor).items()}
            res["breakdown"] = breakdown(opts.pmcprof, proc.pid, port, mode, symbols, 30)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        res["exit_code"] = proc.returncode
    return res


# ------------------------------------------------------------------------------ idle clients
def sample_value(values, name):
    return sum(v for k, v in values.items() if k == name or k.startswith(name + "{"))


def open_idle(port, n, timeout=0.5):
    """N connections that send nothing; returns (sockets, established)."""
    import select
    socks, established = [], 0
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
    deadline = time.monotonic() + timeout
    pending = list(socks)
    while pending and time.monotonic() < deadline:
        _, w, _ = select.select([], pending, [], max(0.0, deadline - time.monotonic()))
        for s in w:
            pending.remove(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                established += 1
    return socks, established


def run_idle(opts, n_idle):
    import threading
    port = free_port()
    workload = os.path.join(os.path.dirname(opts.pmcprof), "workloads", "func_workload")
    argv = [opts.pmcprof, "serve", "-q", "-e", "task-clock", "--func", "syscall:getppid",
            "--aggregate", "stream", "--listen", f"127.0.0.1:{port}"]
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    res = {"idle": n_idle, "command": " ".join(["pmcprof", *argv[1:]]), "calls_made": opts.calls}
    idle = []
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                err.seek(0)
                raise RuntimeError(f"pmcprof exited: {err.read().decode().strip()}")
            try:
                _, status, body = scrape(port)
                if status == 200 and b"\npmcprof_up 1\n" in b"\n" + body:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("not up after 30 s")
            time.sleep(0.01)
        _, _, before = check_body(body)
        idle, res["established"] = open_idle(port, n_idle)
        time.sleep(0.2)
        lat, timeouts = [], 0
        stop = threading.Event()

        def scraper():
            nonlocal timeouts
            while not stop.is_set():
                t0 = time.monotonic()
                try:
                    latency, status, _ = scrape_timeout(port, 10)
                    lat.append(latency)
                except OSError:
                    timeouts += 1
                stop.wait(max(0.0, 0.1 - (time.monotonic() - t0)))
        th = threading.Thread(target=scraper)
        th.start()
        t0 = time.monotonic()
        subprocess.run([workload, "getppid", str(opts.calls)], stdout=subprocess.DEVNULL,
                       check=True)
        res["burst_s"] = time.monotonic() - t0
        time.sleep(0.5)
        stop.set()
        th.join()
        for s in idle:
            s.close()
        idle = []
        # The last scrape: what the burst left in the totals.
        deadline = time.monotonic() + 60
        while True:
            try:
                _, status, body = scrape_timeout(port, 10)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
        _, _, after = check_body(body)
        res["calls_counted"] = (sample_value(after, "pmcprof_function_calls_total")
                                - sample_value(before, "pmcprof_function_calls_total"))
        res["lost"] = (sample_value(after, "pmcprof_lost_records_total")
                       - sample_value(before, "pmcprof_lost_records_total"))
        res["scrapes"] = len(lat)
        res["scrape_timeouts"] = timeouts
        if lat:
            res["latency_ms"] = {k: v * 1e3 if k != "n" else v for k, v in dist(lat).items()}
        # SIGTERM with the idle connections open again: how long until pmcprof has exited.
        idle, _ = open_idle(port, n_idle)
        time.sleep(0.2)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
            res["sigterm_s"] = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            res["sigterm_s"] = None
    finally:
        for s in idle:
            s.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        res["exit_code"] = proc.returncode
    return res


def scrape_timeout(port, timeout):
    """scrape() with a whole-request deadline: raises TimeoutError past it."""
    req = f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    t0 = time.perf_counter()
    deadline = time.monotonic() + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(req.encode())
        buf = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("scrape timed out")
            s.settimeout(left)
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
            head_end = buf.find(b"\r\n\r\n")
            if head_end >= 0:
                m = re.search(rb"\r\ncontent-length: *(\d+)", buf[:head_end], re.I)
                if m and len(buf) - head_end - 4 >= int(m.group(1)):
                    break
    t1 = time.perf_counter()
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        raise ConnectionError(f"no HTTP head in {buf[:200]!r}")
    return t1 - t0, int(buf.split(b" ", 2)[1]), buf[head_end + 4:]


def print_idle(results):
    print(f"{'idle':>5} {'estab':>5} {'calls counted':>13} {'lost':>9} {'scrapes':>7} "
          f"{'timeouts':>8} {'lat med':>9} {'max':>9} {'SIGTERM':>8} {'burst':>6}")
    for r in results:
        lat = r.get("latency_ms")
        med = f"{lat['median']:7.1f}ms" if lat else "-"
        mx = f"{lat['max']:7.1f}ms" if lat else "-"
        term = f"{r['sigterm_s']:6.2f}s" if r.get("sigterm_s") is not None else ">60s"
        print(f"{r['idle']:5d} {r['established']:5d} {r['calls_counted']:13.0f} {r['lost']:9.0f} "
              f"{r['scrapes']:7d} {r['scrape_timeouts']:8d} {med:>9} {mx:>9} {term:>8} "
              f"{r['burst_s']:5.2f}s")


# ------------------------------------------------------------------------------ main
def print_results(results):
    print(f"{'config':6} {'samples':>7} {'bytes':>7} {'lat med':>8} {'p90':>7} {'p99':>7} "
          f"{'max':>7} {'CPU %':>6} {'(ticks)':>7} {'ms/scr':>7} {'RSS MB':>6} {'ready':>8}")
    for r in results:
        lat = r["latency_ms"]
        print(f"{r['config']:6} {r['samples']:7d} {r['body_bytes']:7d} {lat['median']:6.3f}ms "
              f"{lat['p90']:7.3f} {lat['p99']:7.3f} {lat['max']:7.3f} "
              f"{r['cpu_pct_one_cpu']:6.3f} {r['cpu_pct_one_cpu_ticks']:7.3f} "
              f"{r['cpu_ms_per_scrape']:7.3f} {r['rss_mb']:6.1f} {r['ready_ms']:6.1f}ms")
    for r in results:
        extra = []
        if r["bad_line_count"]:
            extra.append(f"{r['bad_line_count']} malformed lines, e.g. {r['bad_lines'][:2]}")
        if "task_clock_s_by_cgroup" in r:
            extra.append("task-clock s by cgroup: " + ", ".join(
                f"{k}={v:.3f}" for k, v in sorted(r["task_clock_s_by_cgroup"].items(),
                                                 key=lambda kv: int(kv[0][1:]))))
        pi = r["cpu_ms_per_interval"]
        extra.append(f"CPU per 1-s interval: median {pi['median']:.3f} ms, p90 {pi['p90']:.3f}, "
                     f"max {pi['max']:.3f}; fds {r['fds']}, threads {r['threads']}, "
                     f"VmHWM {r['hwm_mb']:.1f} MB, exit {r['exit_code']}")
        if "floor_404_ms" in r:
            f = r["floor_404_ms"]
            extra.append(f"GET /404 floor: median {f['median']:.3f} ms, p90 {f['p90']:.3f}")
        bd = r.get("breakdown")
        if bd and "error" in bd:
            extra.append(f"breakdown failed: {bd['error']}")
        elif bd:
            extra.append("handler on-CPU µs/scrape (uprobes): " + ", ".join(
                f"{k} {v['oncpu_us']:.1f} (wall {v['wall_us']:.1f}, {v['calls']} calls)"
                for k, v in bd.items() if k != "read_syscalls" and v["oncpu_us"] is not None))
            rs = bd.get("read_syscalls")
            if rs:
                extra.append(f"read() syscalls: {rs['per_scrape']:.1f}/scrape, wall mean "
                             f"{rs['wall_us']:.2f} µs (p50 {rs['p50_us']:.2f}, p90 "
                             f"{rs['p90_us']:.2f}), {rs['per_scrape_us']:.1f} µs per scrape")
        print(f"  {r['config']}: " + "\n      ".join(extra))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--seconds", type=int, default=60, help="scrapes per configuration (1/s)")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between scrapes")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="comma list of %s (default: all)" % ",".join(CONFIGS))
    ap.add_argument("--no-breakdown", action="store_true",
                    help="skip the /404 floor and the uprobe profile of the handler")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--idle", help="comma list of idle-connection counts (e.g. 0,20,200): the "
                    "silent-client measurement instead of the configurations")
    ap.add_argument("--calls", type=int, default=300000, help="getppid calls of the burst (--idle)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per idle count (--idle)")
    opts = ap.parse_args()
    opts.pmcprof = os.path.abspath(opts.pmcprof)
    if opts.idle:
        signal.signal(signal.SIGTERM, on_signal)
        results = []
        for n in [int(x) for x in opts.idle.split(",") if x]:
            for _ in range(opts.repeat):
                print(f"... {n} idle connections", file=sys.stderr, flush=True)
                results.append(run_idle(opts, n))
        print(f"{opts.calls} getppid calls per run; nproc {os.cpu_count()}, kernel "
              f"{platform.release()}, loadavg {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print_idle(results)
        if opts.json:
            with open(opts.json, "w") as f:
                json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "calls": opts.calls,
                           "machine": {"nproc": os.cpu_count(), "kernel": platform.release(),
                                       "loadavg": os.getloadavg()},
                           "idle_results": results}, f, indent=2)
        return 0
    configs = [c for c in opts.configs.split(",") if c]
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"unknown config {c!r}; known: {', '.join(CONFIGS)}")
    if os.geteuid() != 0:
        print("warning: not root; -a, -G and BPF need privileges", file=sys.stderr)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    symbols = {} if opts.no_breakdown else find_symbols(opts.pmcprof)

    cg = Cgroups()
    results = []
    try:
        cg.open()
        time.sleep(1)  # let the work loops start
        for name in configs:
            print(f"... {name}", file=sys.stderr, flush=True)
            results.append(run_config(name, opts, cg, symbols))
    except Interrupted as e:
        print(f"interrupted ({e}); cleaning up", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cg.close()

    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": {"nproc": os.cpu_count(), "kernel": platform.release(),
                    "python": platform.python_version(), "loadavg": os.getloadavg()},
        "events": EVENTS, "cgroups": N_CGROUPS, "work_cgroups": list(WORK_CGROUPS),
        "seconds": opts.seconds, "interval_s": opts.interval,
        "results": results,
    }
    print(f"{opts.seconds} scrapes at 1/{opts.interval:g} s per config; events {EVENTS}; "
          f"nproc {os.cpu_count()}, kernel {platform.release()}, "
          f"loadavg {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print_results(results)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

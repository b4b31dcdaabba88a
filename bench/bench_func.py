#!/usr/bin/env python3
"""Per-call overhead of `pmcprof stat --func` against bpftrace, and the stream's sustained rate.

    sudo python3 bench/bench_func.py --pmcprof BUILD/pmcprof [--reps 7] [--parts abc]
                                     [--bpf-stats] [--json OUT]

The workload is the project's tests/workloads/func_workload (BUILD/workloads/func_workload by
default). It times its own loop with CLOCK_MONOTONIC and prints it as wall_ns, so tool start-up
and attach time are not part of any figure. Per-call overhead of a tool is

    (median wall_ns under the tool - median wall_ns without any tool) / N

and, as a cross-check, the median over rounds of the same difference taken within one round.
The same is computed from the workload's on-CPU time (first field of /proc/PID/schedstat, sampled
every 10 ms while it runs), which load from other processes disturbs much less than wall time.

(a) `syscall:getppid`, N = 1,000,000 getppid() calls (`func_workload getppid N`):
    pmcprof `stat -e task-clock,context-switches --func syscall:getppid -- W getppid N`
    bpftrace `tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @a = count(); }
              tracepoint:syscalls:sys_exit_getppid /pid == cpid/ { @b = count(); }` -c 'W ...'
(b) a uprobe/uretprobe pair on tiny_function, N = 200,000 (`func_workload tiny N`):
    pmcprof `--func W:tiny_function`, bpftrace `uprobe:W:tiny_function` / `uretprobe:...`.
pmcprof runs in --aggregate kernel and --aggregate stream, each with and without
--no-sched-hook. Every round runs every variant of a part once (bare workload, bpftrace, the
four pmcprof variants), the order rotated by one each round, so drift in machine load hits all
variants alike. Every run is checked: pmcprof's calls + lost == N, bpftrace's @a == @b == N.
--bpftrace-latency adds a bpftrace script doing the timing half of pmcprof's work (nsecs at entry,
hist at exit, per-tid hash) as a reference outside the goal ratios.

(c) the stream's sustained rate: `--aggregate stream --func syscall:getppid` over a getppid
    burst, for --buffer-pages 64..4096, with one workload or two in parallel
    (`sh -c 'W getppid N & W getppid N & wait'`). records/s = records received / pmcprof's
    elapsed_ns; reported per configuration (median over its runs) with the lost counts, and
    the highest rate among configurations that lost nothing in any run.

--bpf-stats: one more run per variant with `sysctl kernel.bpf_stats_enabled=1` (restored
afterwards), reading run_cnt / run_time_ns of the tool's own BPF programs from
/proc/TOOL_PID/fdinfo (polled while it runs; the last sample is kept), giving ns per program
run for func_entry/func_exit/syscall_entry/syscall_exit/on_switch and for bpftrace's
programs, plus the tool process's own CPU time (user+sys of its threads, i.e. the stream
consumer; the workload is a separate process). Stats add their own clock reads to every run,
so these runs are not used for the overhead figures.
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

WORKLOAD_LINE = re.compile(r'^\{"mode":.*\}$', re.M)
BPFTRACE_MAP = re.compile(r"^@(\w+): (\d+)$", re.M)
EVENTS = "task-clock,context-switches"


def percentile(values, p):
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


# ---------------------------------------------------------------- variants

class Variant:
    """One way of running the workload: bare, under bpftrace, or under pmcprof."""

    def __init__(self, name, kind, argv_fn, n):
        self.name, self.kind, self.argv_fn, self.n = name, kind, argv_fn, n


def workload_argv(opts, mode, n):
    return [opts.workload, mode, str(n)]


def pmcprof_argv(opts, target, mode, n, agg, extra=(), out=None, copies=1, binary=None):
    argv = [binary or opts.pmcprof, "stat", "-j", "-o", out or os.devnull, "-e", EVENTS, "--aggregate", agg,
            *extra, "--func", target, "--"]
    if copies == 1:
        return argv + workload_argv(opts, mode, n)
    one = " ".join(workload_argv(opts, mode, n))
    return argv + ["/bin/sh", "-c", " & ".join([one] * copies) + " & wait"]


def bpftrace_program(part, w):
    if part == "a":
        return ("tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @a = count(); } "
                "tracepoint:syscalls:sys_exit_getppid /pid == cpid/ { @b = count(); }")
    return (f"uprobe:{w}:tiny_function /pid == cpid/ {{ @a = count(); }} "
            f"uretprobe:{w}:tiny_function /pid == cpid/ {{ @b = count(); }}")


def bpftrace_latency_program(part, w):
    """A bpftrace script doing the timing half of pmcprof's work (two clock reads, a per-thread
    hash entry, a histogram), as a reference; not part of the goal ratios."""
    enter, exit_ = (("tracepoint:syscalls:sys_enter_getppid", "tracepoint:syscalls:sys_exit_getppid")
                    if part == "a" else (f"uprobe:{w}:tiny_function", f"uretprobe:{w}:tiny_function"))
    return (f"{enter} /pid == cpid/ {{ @s[tid] = nsecs; }} "
            f"{exit_} /pid == cpid/ {{ $s = @s[tid]; if ($s) {{ @h = hist(nsecs - $s); "
            f"delete(@s[tid]); }} }}")


def variants_for(part, opts):
    mode, n = ("getppid", opts.n_syscall) if part == "a" else ("tiny", opts.n_uprobe)
    target = "syscall:getppid" if part == "a" else f"{opts.workload}:tiny_function"
    prog = bpftrace_program(part, opts.workload)
    vs = [
        Variant("bare", "bare", lambda out: workload_argv(opts, mode, n), n),
        Variant("bpftrace", "bpftrace",
                lambda out: [opts.bpftrace, "-e", prog, "-c", " ".join(workload_argv(opts, mode, n))],
                n),
    ]
    if opts.bpftrace_latency:
        lat = bpftrace_latency_program(part, opts.workload)
        vs.append(Variant("bpftrace latency (reference)", "bpftrace-ref",
                          lambda out: [opts.bpftrace, "-e", lat, "-c",
                                       " ".join(workload_argv(opts, mode, n))], n))
    for agg in ("kernel", "stream"):
        for hook in (True, False):
            extra = () if hook else ("--no-sched-hook",)
            name = f"pmcprof {agg}" + ("" if hook else " no-sched-hook")
            vs.append(Variant(name, "pmcprof",
                              (lambda agg, extra: lambda out: pmcprof_argv(
                                  opts, target, mode, n, agg, extra, out))(agg, extra), n))
    if opts.pmcprof_old:
        vs.append(Variant("pmcprof-old kernel", "pmcprof", lambda out: pmcprof_argv(
            opts, target, mode, n, "kernel", (), out, binary=opts.pmcprof_old), n))
    return vs


def descendants(pid):
    """pid and all its descendants (via /proc/PID/task/TID/children)."""
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        out.append(q)
        try:
            for tid in os.listdir(f"/proc/{q}/task"):
                todo += [int(c) for c in open(f"/proc/{q}/task/{tid}/children").read().split()]
        except OSError:
            pass
    return out


class OnCpuSampler(threading.Thread):
    """Samples the on-CPU time (first field of /proc/PID/schedstat, ns) of every func_workload
    process below the tool every `period` s; the last sample per pid is kept. It misses the
    last < period of each workload's life (its loop's tail and exit), about period / 2 on
    average, the same for every variant."""

    def __init__(self, p, period=0.01):
        super().__init__(daemon=True)
        self.p, self.period, self.oncpu = p, period, {}

    def run(self):
        while self.p.poll() is None:
            for q in descendants(self.p.pid):
                try:
                    if open(f"/proc/{q}/comm").read().strip() != "func_workload":
                        continue
                    self.oncpu[q] = int(open(f"/proc/{q}/schedstat").read().split()[0])
                except (OSError, ValueError, IndexError):
                    pass
            time.sleep(self.period)


def run(argv, timeout=600, on_start=None, sample_oncpu=False):
    """Runs argv; returns (stdout+stderr text, exit code, poll result of on_start, wall s,
    {workload pid: on-CPU ns} or None)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sampler = OnCpuSampler(p) if sample_oncpu else None
    if sampler:
        sampler.start()
    polled = on_start(p) if on_start else None
    out, _ = p.communicate(timeout=timeout)
    if sampler:
        sampler.join()
    return out, p.returncode, polled, time.perf_counter() - t0, sampler and sampler.oncpu


def measure(v, tmpdir, on_start=None):
    """One run of a variant: dict with wall_ns (workload loop), checks, pmcprof/bpftrace figures."""
    out_json = os.path.join(tmpdir, "report.json")
    if os.path.exists(out_json):
        os.unlink(out_json)
    argv = v.argv_fn(out_json)
    text, code, polled, tool_wall, oncpu = run(argv, on_start=on_start, sample_oncpu=True)
    lines = [json.loads(m) for m in WORKLOAD_LINE.findall(text)]
    if code != 0 or not lines:
        raise RuntimeError(f"{v.name} failed (exit {code}): {' '.join(argv)}\n{text[-2000:]}")
    r = {"wall_ns": max(l["wall_ns"] for l in lines), "tool_wall_s": tool_wall, "polled": polled,
         "oncpu_ns": sum(oncpu.get(l["pid"], 0) for l in lines) or None}
    if v.kind == "bpftrace":
        maps = {k: int(x) for k, x in BPFTRACE_MAP.findall(text)}
        r["counted"] = maps
        if maps.get("a") != v.n or maps.get("b") != v.n:
            raise RuntimeError(f"bpftrace counted {maps}, expected {v.n} each")
    elif v.kind == "pmcprof":
        rep = json.load(open(out_json))
        f = rep["functions"][0]
        r.update(calls=f["calls"], lost=rep["lost"], elapsed_ns=rep["elapsed_ns"])
        if f["calls"] + rep["lost"] != v.n:
            raise RuntimeError(f"{v.name}: calls {f['calls']} + lost {rep['lost']} != {v.n}")
    return r


def bench_overhead(part, opts, tmpdir, log):
    vs = variants_for(part, opts)
    results = {v.name: [] for v in vs}
    for rnd in range(opts.warmup + opts.reps):
        k = rnd % len(vs)
        order = vs[k:] + vs[:k]
        for v in order:
            r = measure(v, tmpdir)
            if rnd >= opts.warmup:
                r["round"] = rnd - opts.warmup
                results[v.name].append(r)
        log(f"  ({part}) round {rnd + 1}/{opts.warmup + opts.reps}"
            + (" (warm-up)" if rnd < opts.warmup else "") + ": "
            + ", ".join(f"{v.name} {results[v.name][-1]['wall_ns'] / 1e6:.1f} ms"
                        for v in vs if results[v.name] and rnd >= opts.warmup))
    n = vs[0].n
    bare = [r["wall_ns"] for r in results["bare"]]
    bare_med = statistics.median(bare)
    summary = {"n": n, "variants": {}}
    for v in vs:
        walls = [r["wall_ns"] for r in results[v.name]]
        paired = [(r["wall_ns"] - results["bare"][i]["wall_ns"]) / n
                  for i, r in enumerate(results[v.name])]
        s = {"runs": len(walls), "wall_ms_median": statistics.median(walls) / 1e6,
             "wall_ms_p10": percentile(walls, 10) / 1e6, "wall_ms_p90": percentile(walls, 90) / 1e6,
             "ns_per_call_median": statistics.median(walls) / n,
             "overhead_ns_per_call": (statistics.median(walls) - bare_med) / n,
             "overhead_ns_per_call_paired_median": statistics.median(paired),
             "walls_ns": walls}
        cpus = [r["oncpu_ns"] for r in results[v.name] if r["oncpu_ns"]]
        bare_cpus = [r["oncpu_ns"] for r in results["bare"] if r["oncpu_ns"]]
        if cpus and bare_cpus:
            s["oncpu_ns_per_call_median"] = statistics.median(cpus) / n
            s["oncpu_overhead_ns_per_call"] = (statistics.median(cpus) - statistics.median(bare_cpus)) / n
            s["oncpu_ns"] = cpus
        if v.kind == "pmcprof":
            s["lost"] = [r["lost"] for r in results[v.name]]
        summary["variants"][v.name] = s
    bt = summary["variants"]["bpftrace"]["overhead_ns_per_call"]
    bt_p = summary["variants"]["bpftrace"]["overhead_ns_per_call_paired_median"]
    for name, s in summary["variants"].items():
        if name.startswith("pmcprof"):
            s["ratio_to_bpftrace"] = s["overhead_ns_per_call"] / bt if bt > 0 else None
            s["ratio_to_bpftrace_paired"] = s["overhead_ns_per_call_paired_median"] / bt_p if bt_p > 0 else None
            bt_c = summary["variants"]["bpftrace"].get("oncpu_overhead_ns_per_call")
            if bt_c and "oncpu_overhead_ns_per_call" in s:
                s["oncpu_ratio_to_bpftrace"] = s["oncpu_overhead_ns_per_call"] / bt_c
    goal = 1.2 if part == "a" else 1.1
    summary["goal_ratio_max"] = goal
    return summary


# ---------------------------------------------------------------- (c) stream throughput

def bare_burst(opts, copies):
    """getppid calls/s of `copies` parallel workloads without any tool (the producer's limit)."""
    one = " ".join(workload_argv(opts, "getppid", opts.n_burst))
    text, code, _, _, _ = run(["/bin/sh", "-c", " & ".join([one] * copies) + " & wait"])
    lines = [json.loads(m) for m in WORKLOAD_LINE.findall(text)]
    if code != 0 or len(lines) != copies:
        raise RuntimeError(f"bare burst failed (exit {code}): {text[-2000:]}")
    return copies * opts.n_burst / (max(l["wall_ns"] for l in lines) / 1e9)


def bench_stream(opts, tmpdir, log):
    configs = [(c, p) for c in opts.copies for p in opts.pages]
    runs = {cfg: [] for cfg in configs}
    bare = {c: [] for c in opts.copies}
    out = os.path.join(tmpdir, "stream.json")
    for rnd in range(opts.reps_stream):
        k = rnd % len(configs)
        for c in opts.copies:
            bare[c].append(bare_burst(opts, c))
        for copies, pages in configs[k:] + configs[:k]:
            argv = pmcprof_argv(opts, "syscall:getppid", "getppid", opts.n_burst, "stream",
                                ("--buffer-pages", str(pages)), out, copies)
            text, code, _, _, _ = run(argv)
            lines = [json.loads(m) for m in WORKLOAD_LINE.findall(text)]
            if code != 0 or len(lines) != copies:
                raise RuntimeError(f"stream run failed (exit {code}): {' '.join(argv)}\n{text[-2000:]}")
            rep = json.load(open(out))
            calls, lost = rep["functions"][0]["calls"], rep["lost"]
            total = copies * opts.n_burst
            # /bin/sh (dash) calls getppid() once itself at start-up: allow a few extra calls.
            if not 0 <= calls + lost - total <= 4:
                raise RuntimeError(f"stream: calls {calls} + lost {lost} != {total}")
            runs[(copies, pages)].append({
                "calls": calls, "lost": lost, "elapsed_ns": rep["elapsed_ns"],
                "rate": calls / (rep["elapsed_ns"] / 1e9),
                "loop_rate": total / (max(l["wall_ns"] for l in lines) / 1e9)})
        log(f"  (c) round {rnd + 1}/{opts.reps_stream}: " + ", ".join(
            f"{c}x{p}p {runs[(c, p)][-1]['rate'] / 1e6:.2f}M/s lost {runs[(c, p)][-1]['lost']}"
            for c, p in configs))
    table = []
    for (copies, pages), rs in runs.items():
        table.append({"copies": copies, "buffer_pages": pages, "runs": len(rs),
                      "rate_median": statistics.median(r["rate"] for r in rs),
                      "rate_max": max(r["rate"] for r in rs),
                      "loop_rate_median": statistics.median(r["loop_rate"] for r in rs),
                      "lost": [r["lost"] for r in rs],
                      "zero_lost_runs": sum(r["lost"] == 0 for r in rs)})
    clean = [t for t in table if t["zero_lost_runs"] == t["runs"]]
    best_cfg = max(clean, key=lambda t: t["rate_median"]) if clean else None
    zero_runs = [(r["rate"], c, p) for (c, p), rs in runs.items() for r in rs if r["lost"] == 0]
    best_run = max(zero_runs) if zero_runs else None
    return {"n_per_copy": opts.n_burst, "table": table,
            "bare_rate_median": {c: statistics.median(r) for c, r in bare.items()},
            "best_zero_lost_config": best_cfg,
            "best_zero_lost_run": None if not best_run else
            {"rate": best_run[0], "copies": best_run[1], "buffer_pages": best_run[2]},
            "goal_rate_min": 1e6}


# ---------------------------------------------------------------- BPF program statistics

def bpf_fdinfo(pid):
    """{prog_id: (run_cnt, run_time_ns)} of the BPF programs whose fds pid holds."""
    progs = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return progs
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-prog":
                continue
            info = dict(l.split(":", 1) for l in open(f"/proc/{pid}/fdinfo/{fd}").read().splitlines()
                        if ":" in l)
        except OSError:
            continue
        if "prog_id" in info and "run_cnt" in info:
            progs[int(info["prog_id"])] = (int(info["run_cnt"]), int(info["run_time_ns"]))
    return progs


def own_cpu_s(pid):
    """user + sys seconds of pid's own threads (not its children)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    except OSError:
        return None
    return total / tick


def poller(p):
    """Samples the tool's BPF program stats and CPU until it exits; returns the last samples."""
    last, names, cpu = {}, {}, None
    while p.poll() is None:
        progs = bpf_fdinfo(p.pid)
        c = own_cpu_s(p.pid)
        if c is not None:
            cpu = c
        for pid_, v in progs.items():
            last[pid_] = v
            if pid_ not in names:
                try:
                    names[pid_] = json.loads(subprocess.run(
                        ["bpftool", "prog", "show", "id", str(pid_), "-j"],
                        capture_output=True, text=True).stdout).get("name", "?")
                except (ValueError, OSError):
                    names[pid_] = "?"
        time.sleep(0.05)
    # communicate() needs the pipe drained; the output is small, so nothing blocks.
    return {"progs": {names.get(i, "?") + f"#{i}": {"run_cnt": c, "run_time_ns": t,
                                                     "ns_per_run": t / c if c else None}
                      for i, (c, t) in last.items() if c},
            "tool_cpu_s": cpu}


def bench_bpf_stats(opts, tmpdir, log):
    path = "/proc/sys/kernel/bpf_stats_enabled"
    before = open(path).read().strip()
    out = {}
    try:
        with open(path, "w") as f:
            f.write("1")
        for part in opts.parts:
            if part not in "ab":
                continue
            for v in variants_for(part, opts):
                if v.kind == "bare":
                    continue
                r = measure(v, tmpdir, on_start=poller)
                st = r["polled"]
                st["wall_ns"] = r["wall_ns"]
                st["n"] = v.n
                out[f"({part}) {v.name}"] = st
                log(f"  bpf stats ({part}) {v.name}: " + ", ".join(
                    f"{k} {x['run_cnt']} runs {x['ns_per_run']:.0f} ns" for k, x in st["progs"].items()))
    finally:
        with open(path, "w") as f:
            f.write(before)
    return out


# ---------------------------------------------------------------- report

def print_overhead(part, s):
    title = {"a": "(a) syscall:getppid", "b": "(b) uprobe pair on tiny_function"}[part]
    print(f"\n{title}, N = {s['n']:,}; goal pmcprof/bpftrace <= {s['goal_ratio_max']}")
    print(f"{'variant':30} {'wall med':>10} {'p10':>9} {'p90':>9} {'ns/call':>9} "
          f"{'overhead':>9} {'paired':>9} {'ratio':>6} {'cpu/call':>9} {'cpu ovh':>8} "
          f"{'ratio':>6} {'lost (max)':>10}")
    for name, v in s["variants"].items():
        ratio, cratio = v.get("ratio_to_bpftrace"), v.get("oncpu_ratio_to_bpftrace")
        print(f"{name:30} {v['wall_ms_median']:7.1f} ms {v['wall_ms_p10']:6.1f} ms "
              f"{v['wall_ms_p90']:6.1f} ms {v['ns_per_call_median']:9.1f} "
              f"{v['overhead_ns_per_call']:9.1f} {v['overhead_ns_per_call_paired_median']:9.1f} "
              + (f"{ratio:6.2f}" if ratio is not None else "     -")
              + (f" {v['oncpu_ns_per_call_median']:9.1f} {v['oncpu_overhead_ns_per_call']:8.1f}"
                 if "oncpu_ns_per_call_median" in v else f" {'-':>9} {'-':>8}")
              + (f" {cratio:6.2f}" if cratio is not None else "      -")
              + (f" {max(v['lost']):10}" if "lost" in v else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--pmcprof-old", help="another build, run with kernel aggregation beside "
                    "(an anchor in the same run for a change's effect)")
    ap.add_argument("--workload", help="func_workload (default: workloads/ beside --pmcprof)")
    ap.add_argument("--bpftrace", default=shutil.which("bpftrace") or "/usr/bin/bpftrace")
    ap.add_argument("--parts", default="abc", help="any of a, b, c (default abc)")
    ap.add_argument("--reps", type=int, default=7, help="rounds for (a) and (b) (default 7)")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first (default 1)")
    ap.add_argument("--n-syscall", type=int, default=1_000_000)
    ap.add_argument("--n-uprobe", type=int, default=200_000)
    ap.add_argument("--n-burst", type=int, default=2_000_000, help="getppid calls per copy in (c)")
    ap.add_argument("--reps-stream", type=int, default=3, help="rounds for (c) (default 3)")
    ap.add_argument("--pages", default="64,128,256,512,1024,2048,4096")
    ap.add_argument("--copies", default="1,2", help="workloads in parallel in (c)")
    ap.add_argument("--bpftrace-latency", action="store_true",
                    help="also run a bpftrace latency script (nsecs at entry, hist at exit) as a "
                         "reference for the same timing work without counter reads")
    ap.add_argument("--bpf-stats", action="store_true",
                    help="one more run per variant with kernel.bpf_stats_enabled=1")
    ap.add_argument("--json", help="also write the figures to this file")
    opts = ap.parse_args()
    opts.pmcprof = os.path.abspath(opts.pmcprof)
    if opts.pmcprof_old:
        opts.pmcprof_old = os.path.abspath(opts.pmcprof_old)
    opts.workload = os.path.abspath(opts.workload or os.path.join(
        os.path.dirname(opts.pmcprof), "workloads", "func_workload"))
    opts.pages = [int(x) for x in opts.pages.split(",")]
    opts.copies = [int(x) for x in opts.copies.split(",")]
    if os.geteuid() != 0:
        sys.exit("needs root (BPF, perf events)")
    for exe in (opts.pmcprof, opts.workload, opts.bpftrace):
        if not os.access(exe, os.X_OK):
            sys.exit(f"not executable: {exe}")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    bt_version = subprocess.run([opts.bpftrace, "--version"], capture_output=True,
                                text=True).stdout.strip()
    summary = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "machine": {"nproc": os.cpu_count(), "kernel": platform.release(),
                           "loadavg_start": open("/proc/loadavg").read().split()[:3]},
               "bpftrace": bt_version, "events": EVENTS, "reps": opts.reps,
               "warmup": opts.warmup}
    with tempfile.TemporaryDirectory(prefix="bench_func.") as tmpdir:
        for part in "ab":
            if part in opts.parts:
                log(f"part ({part}) ...")
                summary[part] = bench_overhead(part, opts, tmpdir, log)
        if "c" in opts.parts:
            log("part (c) ...")
            summary["c"] = bench_stream(opts, tmpdir, log)
        if opts.bpf_stats:
            log("BPF program statistics ...")
            summary["bpf_stats"] = bench_bpf_stats(opts, tmpdir, log)
    summary["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]

    print(f"date {summary['date']}; nproc {os.cpu_count()}, kernel {platform.release()}; "
          f"{bt_version}; load average {' '.join(summary['machine']['loadavg_start'])} at start, "
          f"{' '.join(summary['machine']['loadavg_end'])} at end")
    print(f"{opts.reps} interleaved rounds after {opts.warmup} warm-up; overhead = "
          "(median wall - median bare wall) / N; paired = median of per-round differences / N; "
          "ratio = overhead / bpftrace's; cpu = the workload's own on-CPU time (schedstat), "
          "same definitions")
    for part in "ab":
        if part in summary:
            print_overhead(part, summary[part])
    if "c" in summary:
        c = summary["c"]
        print(f"\n(c) stream records/s, syscall:getppid burst, {c['n_per_copy']:,} calls per copy, "
              f"--aggregate stream; goal >= 1 M/s with 0 lost")
        print(f"{'copies':>6} {'pages':>6} {'rate med':>10} {'rate max':>10} {'loop rate':>10}  lost per run")
        for copies, rate in c["bare_rate_median"].items():
            print(f"{copies:6} {'no tool':>6} {'':>10} {'':>10} {rate / 1e6:8.3f} M  (getppid calls/s without pmcprof)")
        for t in c["table"]:
            print(f"{t['copies']:6} {t['buffer_pages']:6} {t['rate_median'] / 1e6:8.3f} M "
                  f"{t['rate_max'] / 1e6:8.3f} M {t['loop_rate_median'] / 1e6:8.3f} M  {t['lost']}")
        b = c["best_zero_lost_config"]
        if b:
            print(f"best configuration with 0 lost in every run: {b['copies']} copies, "
                  f"{b['buffer_pages']} pages, {b['rate_median'] / 1e6:.3f} M records/s (median)")
        if c["best_zero_lost_run"]:
            r = c["best_zero_lost_run"]
            print(f"best single run with 0 lost: {r['rate'] / 1e6:.3f} M records/s "
                  f"({r['copies']} copies, {r['buffer_pages']} pages)")
    if "bpf_stats" in summary:
        print("\nBPF programs (kernel.bpf_stats_enabled=1; ns per run, runs per workload call)")
        for name, st in summary["bpf_stats"].items():
            cpu = st["tool_cpu_s"]
            print(f"{name}: workload {st['wall_ns'] / st['n']:.0f} ns/call, tool process CPU "
                  + (f"{cpu:.2f} s" if cpu is not None else "n/a"))
            for prog, x in sorted(st["progs"].items(), key=lambda kv: -kv[1]["run_time_ns"]):
                print(f"    {prog:40} {x['run_cnt']:>10} runs {x['ns_per_run']:8.1f} ns/run "
                      f"{x['run_cnt'] / st['n']:6.3f} runs/call {x['run_time_ns'] / st['n']:8.1f} ns/call")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

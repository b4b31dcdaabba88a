#!/usr/bin/env python3
"""Per-cgroup counting cost: file descriptors, workload slowdown, and the BPF backend's cost per context switch.

    sudo python3 bench/bench_cgroup.py --pmcprof BUILD/pmcprof --workloads BUILD/workloads \
        [--rounds 15] [--switch-rounds 21] [--json OUT]

Setup: a private cgroup D under the cgroup v2 mount with 100 children D/c000..D/c099 (removed
at the end, also on failure). The workload always runs in D/c000, which is always watched.
pmcprof runs as `pmcprof stat -a -e task-clock,context-switches -G D/c000,...,D/c(N-1)
--cgroup-backend fd|bpf -o /dev/null -- LAUNCHER`, N = 1, 10, 100.

1. fds: with the run held open (its command is `cat FIFO`) and the workload running, the
   entries of /proc/PID/fd of pmcprof: all of them, and the perf_event ones.
2. Overhead: the workload is `burn B` (CPU-bound) and `pingpong R` (context-switch heavy)
   started together in D/c000 by a small launcher that measures their wall time itself
   (spawn .. both reaped), so pmcprof's own start-up and exit are not in the figure. Each round
   runs the bare workload and every pmcprof configuration once, in a rotated order (paired,
   interleaved); reported: median, p10, p90 of the workload's wall time and the overhead of the
   medians and the median of the per-round ratios.
   The launcher pins the ping-pong pair to the last CPU (every switch is one of them handing
   over to the other: no idle, no IPI in the path) and the burn to the first one, so runs
   differ only in what pmcprof adds.
3. Cost per context switch of the BPF backend's sched_switch hook: `pingpong R` alone, bare
   vs under `-a -G D/c000[,...] --cgroup-backend bpf` with 1 and 100 cgroups (and, for
   comparison, the fd backend with 1 and 100, and plain -a without -G), interleaved; ns per switch = (median wall with - median wall without) / the switches the
   ping-pong pair made (getrusage of the pair: voluntary + involuntary); the same from the
   pair's CPU time (user + sys, less disturbed by other load on the machine: the hook runs
   in the switch, its time lands on the task switched in). Then, separately,
   with the kernel's BPF run-time statistics on (BPF_ENABLE_STATS, only while this script
   holds the fd), the hook's own run time per invocation (run_time_ns / run_cnt of pmcprof's
   cgroup_switch program, from its fdinfo).
4. Start-up: the whole-run wall time of `pmcprof stat -a -e ... -G (N cgroups) -- true` per
   backend (perf_event_open of N x CPUs x events fds against loading the BPF object).
"""
import argparse
import ctypes
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "runtime"))
import pmcprof_testlib as t  # noqa: E402

EVENTS = "task-clock,context-switches"
COUNTS = (1, 10, 100)

LAUNCHER = r'''
import json, os, resource, sys, time
procs, burn, burn_ms, pingpong, rt = sys.argv[1:6]
with open(procs, "w") as f:
    f.write(str(os.getpid()))
# Fixed placement: the ping-pong pair shares the last CPU (every switch is one task handing
# over to the other, no idle, no IPI), the burn has the first one.
cpus = sorted(os.sched_getaffinity(0))
pp_cpu, burn_cpu = cpus[-1], cpus[0]
def ctxt():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
c0 = ctxt()
t0 = time.perf_counter_ns()
kids = []
if int(burn_ms) > 0:
    os.sched_setaffinity(0, {burn_cpu})
    kids.append(os.posix_spawn(burn, [burn, burn_ms], os.environ,
                               file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)]))
os.sched_setaffinity(0, {pp_cpu})
pp = os.posix_spawn(pingpong, [pingpong, rt], os.environ,
                    file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)])
os.sched_setaffinity(0, set(cpus))
kids.append(pp)
sw = 0
for k in kids:
    _, st, ru = os.wait4(k, 0)
    if k == pp:
        pp_ru = ru
wall = time.perf_counter_ns() - t0
c1 = ctxt()
# pingpong's rusage covers the pair (it reaps its child before exiting).
print("LAUNCHER " + json.dumps({"wall_ns": wall, "pp_switches": pp_ru.ru_nvcsw + pp_ru.ru_nivcsw,
                                "pp_cpu_ns": int((pp_ru.ru_utime + pp_ru.ru_stime) * 1e9),
                                "system_switches": c1 - c0}), flush=True)
'''


def percentile(values, p):
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def parse_launcher(text):
    for line in text.splitlines():
        if line.startswith("LAUNCHER "):
            return json.loads(line[len("LAUNCHER "):])
    raise RuntimeError(f"no launcher line in {text!r}")


class Bench:
    def __init__(self, args):
        self.args = args
        self.pmcprof = os.path.abspath(args.pmcprof)
        self.burn = os.path.join(os.path.abspath(args.workloads), "burn")
        self.pingpong = os.path.join(os.path.abspath(args.workloads), "pingpong")
        t.ARGS = argparse.Namespace(pmcprof=self.pmcprof, workloads=os.path.abspath(args.workloads))
        self.tmp = tempfile.TemporaryDirectory(prefix="bench-cgroup-")
        self.launcher = os.path.join(self.tmp.name, "launcher.py")
        with open(self.launcher, "w") as f:
            f.write(LAUNCHER)
        self.cg = t.TestCgroups("bench")

    def names(self, n):
        return [self.cg.rel(f"c{i:03d}") for i in range(n)]

    def workload_argv(self, burn_ms, roundtrips):
        return [sys.executable, self.launcher, os.path.join(self.cg.abs("c000"), "cgroup.procs"),
                self.burn, str(burn_ms), self.pingpong, str(roundtrips)]

    def pmcprof_argv(self, config, workload):
        kind, n = config
        if kind == "bare":
            return workload
        argv = [self.pmcprof, "stat", "-a", "-e", EVENTS, "-o", "/dev/null"]
        if kind in ("fd", "bpf"):
            argv += ["-G", ",".join(self.names(n)), "--cgroup-backend", kind]
        return argv + ["--", *workload]

    def run_workload(self, config, burn_ms, roundtrips):
        argv = self.pmcprof_argv(config, self.workload_argv(burn_ms, roundtrips))
        out = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise RuntimeError(f"{config}: exit {out.returncode}: {out.stderr}")
        return parse_launcher(out.stdout)

    # -------------------------------------------------------------- 1. fds
    def fds(self):
        rows = []
        for kind in ("fd", "bpf"):
            for n in COUNTS:
                r = t.BackgroundStat(["-a", "-e", EVENTS, "-G", ",".join(self.names(n)),
                                      "--cgroup-backend", kind], hold=True)
                try:
                    r.wait_ready()
                    p = subprocess.Popen(self.workload_argv(0, 2000), stdout=subprocess.PIPE)
                    total, perf = t.open_fds(r.pid), t.perf_event_fds(r.pid)
                    p.communicate(timeout=60)
                    s = r.finish()
                finally:
                    if r.proc.poll() is None:
                        r.kill()
                if s.returncode != 0:
                    raise RuntimeError(s.stderr)
                rows.append({"backend": kind, "cgroups": n, "fds": total, "perf_event_fds": perf})
                print(f"fds: {kind:3} {n:3} cgroups: {total:4} open fds, {perf:4} perf_event",
                      flush=True)
        return rows

    # -------------------------------------------------------------- 2. overhead
    def interleaved(self, configs, rounds, burn_ms, roundtrips):
        walls = {c: [] for c in configs}
        switches = {c: [] for c in configs}
        self.cpu = {c: [] for c in configs}
        for r in range(rounds):
            order = configs[r % len(configs):] + configs[:r % len(configs)]
            for c in order:
                res = self.run_workload(c, burn_ms, roundtrips)
                walls[c].append(res["wall_ns"])
                switches[c].append(res["pp_switches"])
                self.cpu[c].append(res["pp_cpu_ns"])
            print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
        return walls, switches

    def overhead(self):
        configs = [("bare", 0)] + [(k, n) for k in ("fd", "bpf") for n in COUNTS]
        walls, _ = self.interleaved(configs, self.args.rounds, self.args.burn_ms,
                                    self.args.roundtrips)
        base = walls[("bare", 0)]
        rows = []
        for c in configs:
            w = walls[c]
            ratios = [a / b for a, b in zip(w, base)]
            row = {"config": f"{c[0]}" + (f" {c[1]}" if c[0] != "bare" else ""),
                   "median_ms": statistics.median(w) / 1e6, "p10_ms": percentile(w, 10) / 1e6,
                   "p90_ms": percentile(w, 90) / 1e6,
                   "overhead_pct": 100 * (statistics.median(w) / statistics.median(base) - 1),
                   "paired_overhead_pct": 100 * (statistics.median(ratios) - 1)}
            rows.append(row)
            print(f"overhead: {row['config']:8} median {row['median_ms']:8.2f} ms "
                  f"(p10 {row['p10_ms']:.2f}, p90 {row['p90_ms']:.2f}); "
                  f"{row['overhead_pct']:+.1f}% (paired {row['paired_overhead_pct']:+.1f}%)",
                  flush=True)
        return rows

    # -------------------------------------------------------------- 3. per switch
    def per_switch(self):
        configs = [("bare", 0), ("bpf", 1), ("bpf", 100), ("fd", 1), ("fd", 100), ("plain", 0)]
        walls, sw = self.interleaved(configs, self.args.switch_rounds, 0,
                                     self.args.switch_roundtrips)
        base = statistics.median(walls[("bare", 0)])
        switches = statistics.median(sw[("bare", 0)])
        cpu_base = statistics.median(self.cpu[("bare", 0)])
        rows = []
        for c in configs:
            m = statistics.median(walls[c])
            paired = statistics.median(a - b for a, b in zip(walls[c], walls[("bare", 0)]))
            cpu = statistics.median(self.cpu[c])
            row = {"config": {"bare": "bare", "plain": "-a (no -G)"}.get(
                       c[0], f"-a -G {c[1]} {c[0]}"),
                   "median_ms": m / 1e6, "p10_ms": percentile(walls[c], 10) / 1e6,
                   "p90_ms": percentile(walls[c], 90) / 1e6,
                   "switches": statistics.median(sw[c]),
                   "ns_per_switch": (m - base) / switches,
                   "paired_ns_per_switch": paired / switches,
                   "pp_cpu_ms": cpu / 1e6,
                   "cpu_ns_per_switch": (cpu - cpu_base) / switches}
            rows.append(row)
            print(f"per switch: {row['config']:12} median {m / 1e6:8.2f} ms "
                  f"(p10 {row['p10_ms']:.2f}, p90 {row['p90_ms']:.2f}), "
                  f"{row['switches']:.0f} switches: {row['ns_per_switch']:+.0f} ns/switch "
                  f"(paired {row['paired_ns_per_switch']:+.0f}); pair CPU {cpu / 1e6:.2f} ms: "
                  f"{row['cpu_ns_per_switch']:+.0f} ns/switch", flush=True)
        return rows

    def hook_runtime(self):
        """run_time_ns / run_cnt of pmcprof's cgroup_switch program over a ping-pong run, with
        BPF run-time statistics enabled only while this process holds the stats fd."""
        stats_fd = enable_bpf_stats()
        if stats_fd < 0:
            print("hook run time: BPF_ENABLE_STATS failed", flush=True)
            return None
        out = []
        try:
            for n in (1, 100):
                r = t.BackgroundStat(["-a", "-e", EVENTS, "-G", ",".join(self.names(n)),
                                      "--cgroup-backend", "bpf"], hold=True)
                try:
                    r.wait_ready(bpf_links=1)
                    before = prog_stats(r.pid, "cgroup_switch")
                    res = self.run_workload(("bare", 0), 0, self.args.switch_roundtrips)
                    after = prog_stats(r.pid, "cgroup_switch")
                    r.finish()
                finally:
                    if r.proc.poll() is None:
                        r.kill()
                cnt = after["run_cnt"] - before["run_cnt"]
                ns = after["run_time_ns"] - before["run_time_ns"]
                row = {"cgroups": n, "invocations": cnt, "run_time_ns": ns,
                       "ns_per_invocation": ns / cnt if cnt else None,
                       "pp_switches": res["pp_switches"], "system_switches": res["system_switches"]}
                out.append(row)
                print(f"hook run time ({n} cgroups): {cnt} runs of cgroup_switch during the "
                      f"ping-pong ({res['pp_switches']} workload switches, "
                      f"{res['system_switches']} system-wide), {row['ns_per_invocation']:.0f} ns "
                      f"per run", flush=True)
        finally:
            os.close(stats_fd)
        return out

    # -------------------------------------------------------------- 4. start-up
    def startup(self):
        """Whole-run wall time of `pmcprof stat -a -G ... -- true`: opening N x CPUs x events
        perf fds (fd) against loading and attaching the BPF object (bpf)."""
        configs = [(k, n) for k in ("fd", "bpf") for n in COUNTS]
        walls = {c: [] for c in configs}
        for r in range(self.args.rounds):
            order = configs[r % len(configs):] + configs[:r % len(configs)]
            for c in order:
                argv = self.pmcprof_argv(c, ["true"])
                t0 = time.perf_counter_ns()
                subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
                walls[c].append(time.perf_counter_ns() - t0)
        rows = []
        for c in configs:
            row = {"backend": c[0], "cgroups": c[1], "median_ms": statistics.median(walls[c]) / 1e6,
                   "p10_ms": percentile(walls[c], 10) / 1e6, "p90_ms": percentile(walls[c], 90) / 1e6}
            rows.append(row)
            print(f"start-up: {c[0]:3} {c[1]:3} cgroups: median {row['median_ms']:.1f} ms "
                  f"(p10 {row['p10_ms']:.1f}, p90 {row['p90_ms']:.1f})", flush=True)
        return rows

    def run(self):
        env = {"kernel": platform.release(), "nproc": os.cpu_count(),
               "loadavg_start": os.getloadavg()}
        with self.cg:
            for i in range(100):
                self.cg.make(f"c{i:03d}")
            result = {"env": env, "fds": self.fds(), "overhead": self.overhead(),
                      "per_switch": self.per_switch(), "hook": self.hook_runtime(),
                      "startup": self.startup()}
        env["loadavg_end"] = os.getloadavg()
        print(f"load average at start {env['loadavg_start']}, at end {env['loadavg_end']}")
        return result


# ---------------------------------------------------------------- BPF run-time statistics

BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0
SYS_bpf = 321  # x86-64


def enable_bpf_stats():
    """bpf(BPF_ENABLE_STATS, {type = BPF_STATS_RUN_TIME}): statistics stay on while the
    returned fd is open (and for everyone: the kernel keeps one global switch)."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint8 * 128)()
    ctypes.c_uint32.from_buffer(attr, 0).value = BPF_STATS_RUN_TIME
    fd = libc.syscall(SYS_bpf, BPF_ENABLE_STATS, ctypes.byref(attr), 128)
    return fd


def prog_stats(pid, name):
    """run_time_ns and run_cnt of the BPF program NAME that process PID holds (fdinfo)."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("anon_inode:bpf-prog"):
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = f.read()
        except OSError:
            continue
        prog_id = re.search(r"^prog_id:\s*(\d+)", info, re.M)
        if not prog_id:
            continue
        show = subprocess.run([t.bpftool_binary() or "bpftool", "-j", "prog", "show", "id",
                               prog_id.group(1)], capture_output=True, text=True)
        try:
            meta = json.loads(show.stdout)
        except json.JSONDecodeError:
            meta = {}
        if meta.get("name") != name:
            continue
        vals = dict(re.findall(r"^(run_time_ns|run_cnt):\s*(\d+)", info, re.M))
        return {k: int(vals.get(k, 0)) for k in ("run_time_ns", "run_cnt")}
    raise RuntimeError(f"process {pid} holds no BPF program named {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--workloads", required=True)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--burn-ms", type=int, default=100)
    ap.add_argument("--roundtrips", type=int, default=40000)
    ap.add_argument("--switch-rounds", type=int, default=21)
    ap.add_argument("--switch-roundtrips", type=int, default=50000)
    ap.add_argument("--json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root")
    result = Bench(args).run()
    result["args"] = vars(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Function-mode start-up: from pmcprof's exec to the first call it counts.

Each round runs, in a rotated order:
  pmcprof   pmcprof stat -j -o FILE -e task-clock,context-switches --func syscall:getppid
                -- func_workload getppid 1000
  perf      perf stat -e task-clock,context-switches -- func_workload getppid 1000
            (the anchor: a counting tool with no BPF, same machine, same moment)
  bpftrace  bpftrace -e 'tracepoint:syscalls:sys_enter_getppid { @ = count(); }'
                -c 'func_workload getppid 1000'
The workload prints CLOCK_MONOTONIC right before its first call (start_ns); the bench takes
CLOCK_MONOTONIC right before starting the tool. start-up = start_ns - that time: exec,
libraries, event resolution, BPF load and verification, attach and calibration, until the
held workload is released and makes its first call. Each run also checks that the tool saw
the 1000 calls (pmcprof's JSON, bpftrace's @), so a fast broken run cannot count.

    sudo python3 bench/bench_func_startup.py --pmcprof build/pmcprof [--runs 20] [--json F]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

N = 1000


def workload_line(text):
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"start_ns"' in line:
            return json.loads(line)
    raise RuntimeError(f"no workload line in {text[-400:]!r}")


def run_pmcprof(args, tmp):
    out = os.path.join(tmp, "r.json")
    argv = [args.pmcprof, "stat", "-j", "-o", out, "-e", "task-clock,context-switches",
            "--func", "syscall:getppid", "--", args.workload, "getppid", str(N)]
    t0 = time.monotonic_ns()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    t1 = time.monotonic_ns()
    if p.returncode != 0:
        raise RuntimeError(f"pmcprof exit {p.returncode}: {p.stderr.strip()[-300:]}")
    w = workload_line(p.stdout)
    with open(out) as f:
        calls = json.load(f)["functions"][0]["calls"]
    if calls != N:
        raise RuntimeError(f"pmcprof counted {calls} calls, not {N}")
    return w["start_ns"] - t0, t1 - t0


def run_perf(args, _tmp):
    argv = [args.perf, "stat", "-e", "task-clock,context-switches", "--",
            args.workload, "getppid", str(N)]
    t0 = time.monotonic_ns()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    t1 = time.monotonic_ns()
    if p.returncode != 0:
        raise RuntimeError(f"perf exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return workload_line(p.stdout)["start_ns"] - t0, t1 - t0


def run_bpftrace(args, _tmp):
    prog = "tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @ = count(); }"
    argv = [args.bpftrace, "-e", prog, "-c", f"{args.workload} getppid {N}"]
    t0 = time.monotonic_ns()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    t1 = time.monotonic_ns()
    if p.returncode != 0:
        raise RuntimeError(f"bpftrace exit {p.returncode}: {p.stderr.strip()[-300:]}")
    m = re.search(r"^@: (\d+)", p.stdout, re.M)
    if not m or int(m.group(1)) != N:
        raise RuntimeError(f"bpftrace counted {m.group(1) if m else None}, not {N}")
    return workload_line(p.stdout)["start_ns"] - t0, t1 - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--workload", help="func_workload (default: workloads/ beside --pmcprof)")
    ap.add_argument("--perf", default=shutil.which("perf") or "/usr/bin/perf")
    ap.add_argument("--bpftrace", default=shutil.which("bpftrace") or "/usr/bin/bpftrace")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    args.pmcprof = os.path.abspath(args.pmcprof)
    if not args.workload:
        args.workload = os.path.join(os.path.dirname(args.pmcprof), "workloads", "func_workload")
    tools = [("pmcprof", run_pmcprof)]
    if os.access(args.perf, os.X_OK):
        tools.append(("perf stat", run_perf))
    if os.access(args.bpftrace, os.X_OK):
        tools.append(("bpftrace", run_bpftrace))
    res = {name: {"startup": [], "whole": []} for name, _ in tools}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.warmup + args.runs):
            order = tools[r % len(tools):] + tools[:r % len(tools)]
            for name, fn in order:
                s, w = fn(args, tmp)
                if r >= args.warmup:
                    res[name]["startup"].append(s)
                    res[name]["whole"].append(w)
    print(f"{args.runs} rounds (+{args.warmup} warm-up), getppid x{N}; ms")
    print(f"{'tool':<10} {'start-up median':>16} {'p10':>7} {'p90':>7} {'whole run median':>17}")
    summary = {}
    for name, v in res.items():
        q = statistics.quantiles(v["startup"], n=10)
        row = {"startup_median_ms": statistics.median(v["startup"]) / 1e6,
               "startup_p10_ms": q[0] / 1e6, "startup_p90_ms": q[-1] / 1e6,
               "whole_median_ms": statistics.median(v["whole"]) / 1e6}
        summary[name] = row
        print(f"{name:<10} {row['startup_median_ms']:>16.1f} {row['startup_p10_ms']:>7.1f} "
              f"{row['startup_p90_ms']:>7.1f} {row['whole_median_ms']:>17.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": args.runs, "n": N, "tools": summary}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A whole short function-mode run, start to end: `--func syscall:getppid -- /bin/true`.

Each round runs every tool once, in an order rotated by one per round (load drift hits all):
  pmcprof      pmcprof stat -o /dev/null -e task-clock,context-switches
                   --func syscall:getppid -- /bin/true
  pmcprof-old  the same with another build (--pmcprof-old: the anchor for "x times faster")
  bpftrace     bpftrace -e 'tracepoint:syscalls:sys_enter_getppid { @ = count(); }' -c /bin/true
  perf         perf stat -e task-clock,context-switches -- /bin/true (counting, no BPF)
Wall time from spawn to reap (posix_spawn, wait4), the tool's output to /dev/null. Reported: the
median and range per tool, and each tool's median over pmcprof-old's and bpftrace's.

    sudo python3 bench/bench_func_wholerun.py --pmcprof build/pmcprof \\
        [--pmcprof-old OLD/pmcprof] [--rounds 10] [--json F]
"""
import argparse
import json
import os
import shutil
import statistics
import sys

import bench_startup  # run_once: one spawn..wait4

EVENTS = "task-clock,context-switches"


def run_once(argv, devnull):
    wall, _, _, code = bench_startup.run_once(argv, devnull)
    if code != 0:
        sys.exit(f"{' '.join(argv)}: exit {code}")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--pmcprof-old")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--json")
    opts = ap.parse_args()
    true = "/bin/true"
    if not os.access(true, os.X_OK):
        sys.exit(f"no {true}")
    func = ["stat", "-o", "/dev/null", "-e", EVENTS, "--func", "syscall:getppid", "--", true]
    tools = {"pmcprof": [os.path.abspath(opts.pmcprof), *func]}
    if opts.pmcprof_old:
        tools["pmcprof-old"] = [os.path.abspath(opts.pmcprof_old), *func]
    if shutil.which("bpftrace"):
        tools["bpftrace"] = [shutil.which("bpftrace"), "-e",
                             "tracepoint:syscalls:sys_enter_getppid { @ = count(); }", "-c", true]
    if shutil.which("perf"):
        tools["perf"] = [shutil.which("perf"), "stat", "-e", EVENTS, "--", true]
    names = list(tools)
    walls = {n: [] for n in names}
    devnull = os.open(os.devnull, os.O_WRONLY)
    for r in range(opts.warmup + opts.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            w = run_once(tools[n], devnull)
            if r >= opts.warmup:
                walls[n].append(w)
    med = {n: statistics.median(v) for n, v in walls.items()}
    print(f"{opts.rounds} rounds, {len(names)} tools rotated; wall time of a whole run (s)")
    for n in names:
        ratios = "".join(f", {med[n] / med[a]:.2f}x {a}" for a in ("pmcprof-old", "bpftrace")
                         if a in med and a != n)
        print(f"  {n:12s} median {med[n]:.3f}  range {min(walls[n]):.3f}-{max(walls[n]):.3f}"
              f"{ratios}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"walls": walls, "median": med, "argv": tools}, f, indent=1)


if __name__ == "__main__":
    main()

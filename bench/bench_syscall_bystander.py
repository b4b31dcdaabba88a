#!/usr/bin/env python3
"""What probing one syscall costs every other syscall on the machine.

A workload that is not measured (`func_workload getppid N`: its own loop time, wall_ns) runs
while a tool probes another syscall (getpid) on every CPU, and alone. Each round runs, in an
order rotated by one per round:
  bare      the workload alone
  pmcprof   beside `pmcprof stat -a -o /dev/null -e task-clock --func syscall:getpid -- sleep S`
  pmcprof-old  the same with another build (--pmcprof-old)
  bpftrace  beside `bpftrace -e 'tracepoint:syscalls:sys_enter_getpid,
                tracepoint:syscalls:sys_exit_getpid { @ = count(); }' -c 'sleep S'`
The workload starts `--settle` seconds after the tool (attached by then) and ends before it.
Reported: per variant the median ns per getppid call, and its excess over bare.

    sudo python3 bench/bench_syscall_bystander.py --pmcprof build/pmcprof \\
        [--pmcprof-old OLD/pmcprof] [--rounds 7] [--n 1000000]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

WORKLOAD_LINE = re.compile(r"^\{.*\"wall_ns\".*\}$", re.M)


def workload_ns(workload, n):
    out = subprocess.run([workload, "getppid", str(n)], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(WORKLOAD_LINE.findall(out)[-1])["wall_ns"] / n


def beside(tool_argv, workload, n, settle):
    tool = subprocess.Popen(tool_argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(settle)
        if tool.poll() is not None:
            sys.exit(f"{tool_argv[0]} ended early: {tool.stderr.read().decode()[-500:]}")
        return workload_ns(workload, n)
    finally:
        if tool.wait(timeout=60) != 0:
            sys.exit(f"{' '.join(tool_argv)}: exit {tool.returncode}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--pmcprof-old")
    ap.add_argument("--workload", help="func_workload (default: workloads/ beside --pmcprof)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--settle", type=float, default=1.5)
    ap.add_argument("--json")
    opts = ap.parse_args()
    workload = opts.workload or os.path.join(os.path.dirname(os.path.abspath(opts.pmcprof)),
                                             "workloads", "func_workload")
    span = f"{opts.settle + 2.5:g}"
    variants = {"bare": None}
    for name, binary in (("pmcprof", opts.pmcprof), ("pmcprof-old", opts.pmcprof_old)):
        if binary:
            variants[name] = [os.path.abspath(binary), "stat", "-a", "-o", "/dev/null", "-e",
                              "task-clock", "--func", "syscall:getpid", "--", "/bin/sleep", span]
    if shutil.which("bpftrace"):
        variants["bpftrace"] = [shutil.which("bpftrace"), "-e",
                                "tracepoint:syscalls:sys_enter_getpid,"
                                "tracepoint:syscalls:sys_exit_getpid { @ = count(); }",
                                "-c", f"/bin/sleep {span}"]
    names = list(variants)
    per_call = {n: [] for n in names}
    for r in range(1 + opts.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            argv = variants[name]
            ns = workload_ns(workload, opts.n) if argv is None else \
                beside(argv, workload, opts.n, opts.settle)
            if r > 0:
                per_call[name].append(ns)
    med = {n: statistics.median(v) for n, v in per_call.items()}
    print(f"{opts.rounds} rounds: ns per unprobed getppid() while getpid is probed system-wide")
    for n in names:
        print(f"  {n:12s} median {med[n]:7.1f}  range {min(per_call[n]):.1f}-"
              f"{max(per_call[n]):.1f}  excess over bare {med[n] - med['bare']:+.1f}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"ns_per_call": per_call, "median": med}, f, indent=1)


if __name__ == "__main__":
    main()

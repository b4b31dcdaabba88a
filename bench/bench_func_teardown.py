#!/usr/bin/env python3
"""Function-mode teardown: from the end of the measured command to the tool's exit, with N
user functions (uprobe + uretprobe each) on libc.

Each round runs, in a rotated order, for each N:
  pmcprof   pmcprof stat -o /dev/null -e task-clock --func libc:F1 ... --func libc:FN -- CMD
  before    the same with another pmcprof binary (--before, e.g. a build of an older commit)
  bpftrace  bpftrace -e 'uprobe:LIBC:F1,... { @e = count(); } uretprobe:LIBC:F1,... { @r =
            count(); }' -c CMD   (the anchor: the same probes, same machine, same moment)
CMD prints CLOCK_MONOTONIC as its last act (a python3 script); teardown = the tool's exit (taken by
this script, same clock) - that time: reading and reporting what was counted, detaching every
probe and unloading. N functions are the first N global libc functions by name, one per
address (as tests/runtime/test_faults.py picks them).

    sudo python3 bench/bench_func_teardown.py --pmcprof build/pmcprof [--before OLD/pmcprof]
        [--counts 1,16,64] [--runs 3] [--json F]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
# A script file, not -c: bpftrace -c splits its command at spaces, quotes or not.
END_SCRIPT = os.path.join(tempfile.gettempdir(), "pmcprof_bench_end.py")
CMD = ["/usr/bin/python3", END_SCRIPT]


def libc_functions(n):
    out = subprocess.run(["readelf", "-W", "--dyn-syms", LIBC], capture_output=True,
                         text=True, check=True).stdout
    by_address = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[4] == "GLOBAL" and f[6] != "UND":
            name = f[7].split("@")[0]
            if name[:1].isalpha():
                by_address.setdefault(f[1], name)
    return sorted(set(by_address.values()))[:n]


def teardown(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    t_exit = time.monotonic_ns()
    if p.returncode != 0:
        raise RuntimeError(f"{argv[0]} exit {p.returncode}: {p.stderr.strip()[-300:]}")
    ends = [int(w.split()[1]) for w in p.stdout.splitlines() if w.startswith("end_ns ")]
    if not ends:
        raise RuntimeError(f"no end_ns from the command: {p.stdout[-300:]!r}")
    return t_exit - ends[-1]


def pmcprof_argv(binary, funcs):
    argv = [binary, "stat", "-o", "/dev/null", "-e", "task-clock"]
    for f in funcs:
        argv += ["--func", f"libc:{f}"]
    return argv + ["--", *CMD]


def bpftrace_argv(binary, funcs):
    entries = ",".join(f"uprobe:{LIBC}:{f}" for f in funcs)
    returns = ",".join(f"uretprobe:{LIBC}:{f}" for f in funcs)
    prog = f"{entries} {{ @e = count(); }} {returns} {{ @r = count(); }}"
    return [binary, "-e", prog, "-c", " ".join(CMD)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--before", help="another pmcprof binary to compare with")
    ap.add_argument("--bpftrace", default=shutil.which("bpftrace") or "/usr/bin/bpftrace")
    ap.add_argument("--counts", default="1,16,64")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    tools = [("pmcprof", lambda f: pmcprof_argv(os.path.abspath(args.pmcprof), f))]
    if args.before:
        tools.append(("before", lambda f: pmcprof_argv(os.path.abspath(args.before), f)))
    if os.access(args.bpftrace, os.X_OK):
        tools.append(("bpftrace", lambda f: bpftrace_argv(args.bpftrace, f)))
    counts = [int(c) for c in args.counts.split(",")]
    with open(END_SCRIPT, "w") as f:
        f.write("import time\nprint('end_ns', time.monotonic_ns())\n")
    res = {(name, n): [] for name, _ in tools for n in counts}
    for r in range(args.runs):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for n in counts:
            funcs = libc_functions(n)
            for name, argv in order:
                res[(name, n)].append(teardown(argv(funcs)) / 1e6)
    print(f"{args.runs} rounds; teardown (command's end to the tool's exit), median ms")
    print(f"{'functions':>9} " + " ".join(f"{name:>10}" for name, _ in tools))
    summary = {}
    for n in counts:
        row = {name: statistics.median(res[(name, n)]) for name, _ in tools}
        summary[n] = row
        print(f"{n:>9} " + " ".join(f"{row[name]:>10.0f}" for name, _ in tools))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": args.runs, "teardown_median_ms": summary}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Kernel memory of pmcprof's BPF maps per mode, split into what grows with CPUs and what does
not, extrapolated to 256 CPUs.

    sudo python3 bench/bench_memory.py --pmcprof BUILD/pmcprof [--pmcprof-old OLD] [--json OUT]

For each mode, pmcprof runs for ~1.5 s; while it runs, `bpftool map show -j` lists the maps its
process holds (the `pids` field) with bytes_memlock (the kernel's own accounting). Per-CPU maps
(percpu_array, percpu_hash) and the perf event arrays (counters: events x CPUs slots; records:
one per CPU) grow with the number of possible CPUs; everything else is fixed. Extrapolation:
fixed + per_cpu_bytes / ncpus * 256. The per-call stream's ring (--buffer-pages, 1 MiB per CPU
by default, only with --aggregate stream/both) is locked kernel memory too but not a map: it is
shown on its own line. --pmcprof-old measures another build the same way (the "before" column).
"""
import argparse
import json
import os
import subprocess
import sys
import time

# enum bpf_map_type: perf_event_array 4, percpu_hash 5, percpu_array 6, lru_percpu_hash 10,
# percpu_cgroup_storage 21.
PER_CPU_TYPES = {4, 5, 6, 10, 21}
# Eight events this machine has (software ones: the PMU ones say <not supported> and are not
# read from BPF). Two clock events (task-clock, cpu-clock) and six counters.
EVENTS8 = ("task-clock,context-switches,cpu-migrations,page-faults,minor-faults,major-faults,"
           "cgroup-switches,cpu-clock")


def modes(workdir):
    cg = "pmcprof-bench-mem"
    return [
        ("counting (-a, 4 events)", ["stat", "-a", "-e",
                                      "task-clock,context-switches,cpu-migrations,page-faults"]),
        ("cgroup, bpf backend (2 cgroups, 2 events)",
         ["stat", "-a", "-G", f"{cg}/a,{cg}/b", "--cgroup-backend", "bpf", "-e",
          "task-clock,context-switches"]),
        ("function, 1 event (kernel aggregation)",
         ["stat", "-e", "task-clock", "--func", "syscall:getppid"]),
        ("function, 8 events (kernel aggregation)",
         ["stat", "-e", EVENTS8, "--func", "syscall:getppid"]),
        ("function, 8 events, 8 functions",
         ["stat", "-e", EVENTS8] + sum((["--func", f"syscall:{s}"] for s in
                                        ("getppid", "getpid", "gettid", "getuid", "getgid",
                                         "geteuid", "getegid", "getpgrp")), [])),
        ("function, 1 event, --by cgroup (kernel)",
         ["stat", "-e", "task-clock", "--func", "syscall:getppid", "--by", "cgroup"]),
        ("function, 1 event, --aggregate stream",
         ["stat", "-e", "task-clock", "--func", "syscall:getppid", "--aggregate", "stream"]),
    ]


def cgroup_root():
    for line in open("/proc/self/mountinfo"):
        parts = line.split()
        sep = parts.index("-")
        if parts[sep + 1] == "cgroup2":
            return parts[4]
    return None


def maps_of(pid):
    """The BPF maps process PID holds, from its fds' fdinfo (memlock is the kernel's own
    accounting), named through bpftool."""
    maps = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-map":
                continue
            info = dict(line.split(":", 1) for line in open(f"/proc/{pid}/fdinfo/{fd}")
                        if ":" in line)
        except OSError:
            continue
        map_id = int(info["map_id"])
        if map_id in maps:
            continue
        show = subprocess.run(["bpftool", "map", "show", "id", str(map_id), "-j"],
                              capture_output=True, text=True)
        name = json.loads(show.stdout).get("name", "?") if show.returncode == 0 else "?"
        maps[map_id] = {"name": name, "type": int(info["map_type"]),
                        "max_entries": int(info["max_entries"]),
                        "bytes_memlock": int(info["memlock"])}
    return list(maps.values())


def measure(binary, argv):
    p = subprocess.Popen([binary, *argv, "-q", "--timeout", "3000", "-o", "/dev/null"],
                         stderr=subprocess.PIPE, text=True)
    best = []
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.3)
        found = maps_of(p.pid)
        if len(found) > len(best):
            best = found
    err = p.communicate()[1]
    if p.returncode not in (0, None) and not best:
        return {"error": err.strip().splitlines()[-1] if err.strip() else f"exit {p.returncode}"}
    per_cpu = sum(m.get("bytes_memlock", 0) for m in best if m.get("type") in PER_CPU_TYPES)
    fixed = sum(m.get("bytes_memlock", 0) for m in best if m.get("type") not in PER_CPU_TYPES)
    return {"maps": [(m.get("name"), m.get("type"), m.get("max_entries"), m.get("bytes_memlock"))
                     for m in best], "per_cpu": per_cpu, "fixed": fixed}


def kib(b):
    return f"{b / 1024:,.1f} KiB"


def mib(b):
    return f"{b / 1048576:,.2f} MiB"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--pmcprof-old")
    ap.add_argument("--json")
    a = ap.parse_args()
    ncpus = os.sysconf("SC_NPROCESSORS_CONF")
    root = cgroup_root()
    for sub in ("pmcprof-bench-mem/a", "pmcprof-bench-mem/b"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    builds = [("new", a.pmcprof)] + ([("old", a.pmcprof_old)] if a.pmcprof_old else [])
    results = {}
    try:
        for name, argv in modes(root):
            for label, binary in builds:
                results[(name, label)] = measure(binary, argv)
    finally:
        for sub in ("pmcprof-bench-mem/a", "pmcprof-bench-mem/b", "pmcprof-bench-mem"):
            try:
                os.rmdir(os.path.join(root, sub))
            except OSError:
                pass
    print(f"possible CPUs here: {ncpus}; extrapolated to 256 CPUs\n")
    print("| mode | build | per CPU | fixed | at 256 CPUs | maps |")
    print("|---|---|---|---|---|---|")
    for name, _ in modes(root):
        for label, _ in builds:
            r = results[(name, label)]
            if "error" in r:
                print(f"| {name} | {label} | - | - | - | {r['error']} |")
                continue
            per = r["per_cpu"] / ncpus
            total256 = r["fixed"] + per * 256
            maps = ", ".join(f"{n} {kib(b)}" for n, _, _, b in r["maps"])
            print(f"| {name} | {label} | {kib(per)} | {mib(r['fixed'])} | {mib(total256)} | {maps} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({f"{k[0]} [{k[1]}]": v for k, v in results.items()}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())

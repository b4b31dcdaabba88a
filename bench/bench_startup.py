#!/usr/bin/env python3
"""Start-up / whole-run cost of `pmcprof stat` against `perf stat` on a trivial command.

    sudo python3 bench/bench_startup.py --pmcprof BUILD/pmcprof [--runs 30] [--json OUT]

Each round runs both tools once on the same command line, in alternating order (A B, B A, ...),
so drift in machine load hits both alike (paired, interleaved). Every run is a direct child
started with posix_spawn and reaped with wait4, which gives that run's own CPU (user + sys);
wall time is measured around spawn..wait4. Output of the tools goes to /dev/null.
Peak RSS is measured separately with GNU time (/usr/bin/time -f %M, `apt-get install time`):
ru_maxrss of a child that Python spawns is useless here, because the kernel carries the
pre-exec address space's high-water mark (vfork: Python's own ~15 MB) over execve; GNU time
forks from a ~2 MB process, so its figure is the tool's own (an upper bound by ~2 MB). Reported: median, p10, p90 of wall time per tool, the ratio of the
medians and the median of the per-round ratios, CPU medians, peak RSS. Goal: ratio <= 1.5,
pmcprof RSS <= 30 MB.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

DEFAULT_ARGS = ["stat", "-a", "-e", "task-clock", "--", "true"]


def percentile(values, p):
    """Linear-interpolated percentile (p in 0..100)."""
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def run_once(argv, devnull):
    """One run; returns (wall_s, cpu_s, maxrss_kb, exit_code)."""
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, os.waitstatus_to_exitcode(status)


def peak_rss_kb(argv, n):
    """Max over N runs of GNU time's %M (KB), or None without /usr/bin/time."""
    gnu_time = "/usr/bin/time"
    if not os.access(gnu_time, os.X_OK):
        return None
    peaks = []
    for _ in range(n):
        out = subprocess.run([gnu_time, "-f", "PEAK_RSS_KB=%M", *argv], capture_output=True,
                             text=True)
        for line in out.stderr.splitlines():
            if line.startswith("PEAK_RSS_KB="):
                peaks.append(int(line.split("=")[1]))
    return max(peaks) if peaks else None


def summarize(name, runs, rss_kb):
    wall = [r[0] for r in runs]
    cpu = [r[1] for r in runs]
    return {
        "tool": name,
        "runs": len(runs),
        "wall_ms": {"median": 1e3 * statistics.median(wall), "p10": 1e3 * percentile(wall, 10),
                    "p90": 1e3 * percentile(wall, 90), "min": 1e3 * min(wall),
                    "max": 1e3 * max(wall)},
        "cpu_ms": {"median": 1e3 * statistics.median(cpu), "p10": 1e3 * percentile(cpu, 10),
                   "p90": 1e3 * percentile(cpu, 90)},
        "peak_rss_mb": None if rss_kb is None else rss_kb / 1024,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--perf", default=shutil.which("perf") or "/usr/bin/perf")
    ap.add_argument("--runs", type=int, default=30, help="paired rounds (default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="unmeasured rounds first")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("args", nargs="*", help="stat arguments (default: %s)" % " ".join(DEFAULT_ARGS))
    opts = ap.parse_args()
    stat_args = opts.args or DEFAULT_ARGS
    pmcprof = os.path.abspath(opts.pmcprof)
    tools = {"pmcprof": [pmcprof, *stat_args], "perf": [opts.perf, *stat_args]}
    if os.geteuid() != 0:
        print("warning: not root; -a needs CAP_PERFMON", file=sys.stderr)

    devnull = os.open(os.devnull, os.O_WRONLY)
    for name, argv in tools.items():
        wall, _, _, code = run_once(argv, devnull)
        if code != 0:
            out = subprocess.run(argv, capture_output=True, text=True)
            sys.exit(f"{name} failed (exit {code}): {out.stderr.strip()}")
    for _ in range(opts.warmup):
        for argv in tools.values():
            run_once(argv, devnull)

    results = {name: [] for name in tools}
    ratios = []
    order = list(tools)
    for i in range(opts.runs):
        this_round = {}
        for name in (order if i % 2 == 0 else order[::-1]):
            this_round[name] = run_once(tools[name], devnull)
            results[name].append(this_round[name])
        ratios.append(this_round["pmcprof"][0] / this_round["perf"][0])
    os.close(devnull)

    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": {"nproc": os.cpu_count(), "kernel": platform.release(),
                    "python": platform.python_version()},
        "command": " ".join(stat_args),
        "tools": {name: summarize(name, runs, peak_rss_kb(tools[name], 5))
                  for name, runs in results.items()},
    }
    pm, pf = summary["tools"]["pmcprof"], summary["tools"]["perf"]
    summary["ratio_of_medians"] = pm["wall_ms"]["median"] / pf["wall_ms"]["median"]
    summary["median_paired_ratio"] = statistics.median(ratios)
    summary["goal"] = {"ratio_max": 1.5, "rss_max_mb": 30,
                       "met": summary["ratio_of_medians"] <= 1.5 and
                       (pm["peak_rss_mb"] or 0) <= 30}

    print(f"command: <tool> {summary['command']}   ({opts.runs} paired rounds, "
          f"{opts.warmup} warm-up; nproc {os.cpu_count()}, kernel {platform.release()})")
    print(f"{'tool':8} {'wall median':>12} {'p10':>8} {'p90':>8} {'cpu median':>11} {'peak RSS':>9}")
    for s in (pm, pf):
        print(f"{s['tool']:8} {s['wall_ms']['median']:9.2f} ms {s['wall_ms']['p10']:5.2f} ms "
              f"{s['wall_ms']['p90']:5.2f} ms {s['cpu_ms']['median']:8.2f} ms "
              + (f"{s['peak_rss_mb']:6.1f} MB" if s["peak_rss_mb"] is not None else "     n/a"))
    print(f"ratio pmcprof/perf: {summary['ratio_of_medians']:.3f} (of medians), "
          f"{summary['median_paired_ratio']:.3f} (median of paired rounds); goal <= 1.5: "
          f"{'met' if summary['goal']['met'] else 'MISSED'}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

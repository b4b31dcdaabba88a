#!/usr/bin/env python3
"""Per-call truth for kernel functions (issue 22, item 8): pmcprof's per-call `instructions`
(kernel mode counted: the whole call runs in the kernel) with --backend kprobe and --backend
fentry, held against the instruction oracle (tests/guest/oracle/insn_oracle.c, a qemu TCG plugin)
and against each other, in the arm64 guest (tests/guest/guest.py --arch arm64: bookworm-backports'
6.12 kernel, qemu-system-aarch64 -M virt -cpu cortex-a57 -icount shift=0, one vCPU, nokaslr).

The workload (tests/workloads/aarch64/kfunc_workload.c, static) makes N + 1 rounds (one warm-up)
of four kernel functions of different shapes:
  __arm64_sys_umask      a leaf: no call, 14 instructions (an ldxr/stlxr loop that never retries)
  __arm64_sys_newuname   calls (down_read, copy_to_user, up_read): ~460 instructions
  tcp_sendmsg            a loopback send: the receive path runs inside it (softirq at
                         local_bh_enable): ~8,200 instructions
  do_nanosleep           sleeps (schedule(): the idle task runs, a timer wakes it)
Every one of them starts, as every function with an ftrace site in this kernel does, with the
patch site's `nop`, which 6.12's arm64 kprobes single-step out of line (no simulate_nop yet), as
they do the calibration target's (__arm64_sys_ni_syscall). The test reads and prints each first
instruction from the kernel Image.

On the host (what ctest runs):
    test_guest_arm64_kfuncs.py --cache DIR --source SRC --cross-build DIR [--runs R] [--timeout S]
builds the oracle plugin and the workload, cross-builds pmcprof, then boots the guest twice:
  1. WITHOUT the plugin: /proc/kallsyms (addresses, and each function's end: the next symbol),
     then R runs per backend of
       pmcprof stat -e instructions --func F... --backend B -j -- kfunc_workload N
     every other run with --no-compensate (its compensated figures: raw - the printed bias).
  2. WITH the plugin (the four functions, all kernel instructions counted, followed per task
     across context switches: switch= cpu_switch_to) and without pmcprof: the same workload once.
Checked (fatal):
  * every run: exit 0, each function exactly N + 1 calls, the backend's bias calibrated (and
    subtracted unless --no-compensate); the oracle: every function reported and followed, at
    least N + 1 calls, the leaf one count in every call;
  * kprobe against fentry: per function, the median over runs of the per-call min, and of the
    p50, within 1 % of each other (held today: the kprobe pair's cost does not depend on the
    function here, every target's first instruction being of the calibration target's class);
  * against the oracle (not the sleeper): pmcprof's per-call min is the oracle's min plus one
    offset d, the same for every function and both backends (medians over runs, within 1 % of
    the oracle's min): d is read on the leaf, where both are exact. The target's own 13
    instructions (nop, nop, paciasp, stp, mov, bl; sys_ni_syscall: nop, nop, mov, ret; ldp,
    autiasp, ret) are counted from /proc/kcore and taken off the bias since 90ac9ac (d was -13
    before); d should be 0. At 90ac9ac it reads +10: the raw per-call cost of a measured
    function's probe pair grew by 12 since 6e2fbfe (the nested-probe accounting of 8a8dc52 /
    fb255bf), the calibration target's by 2.
Known defects, issue 22 item 8 (printed as KNOWN, not fatal, until fixed):
  * the acceptance: each run's per-call min and p50 within 1 % of the oracle's, per function
    and backend: misses while d != 0 (the leaf reads 1 instead of 14, newuname 449 instead of
    462), and in runs where a backend reads a whole run off (the ~8,600 instructions per call
    the issue saw once in 18 kprobe runs);
  * per run, kprobe and fentry within 1 % of each other;
  * do_nanosleep against the oracle (which, given switch=, keeps its call state per task across
    schedule(): the sleeping task's own instructions): pmcprof reads ~450 to ~930 more per call
    (one sleep each). The oracle's own figure varies from boot to boot, min 2,395 to 2,881 in 5
    boots (boots with ~1,600 or ~6,200 context switches: -icount lets idle time follow the host's
    clock), pmcprof's hardly at all (min 3,276-3,326 in 102 runs). pmcprof counts on per-CPU
    counters and suspends a call at the sched_switch tracepoint; at the switch back in, what
    runs after its hook's counter read (the rest of the hook's BPF program, the switch's tail in
    the idle task) lands in the call and no calibration covers it.
Cost: each pmcprof run is ~10 s of emulator time (start-up, BPF load and verification,
calibration; the workload itself is ~30 ms of guest time). R = 2 (default) keeps the test near
60 s warm; the acceptance's R = 20 takes ~7 min (--runs 20 or PMCPROF_KFUNC_RUNS=20).
Exit 0 pass, 1 fail, 77 skipped (qemu, the cross compiler or a host C compiler missing).
"""
import bisect
import json
import os
import shlex
import shutil
import statistics
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guest  # noqa: E402

N = 50                       # kfunc_workload N: N + 1 calls of each function
SLEEP_US = 200
LEAF = "__arm64_sys_umask"
SLEEPER = "do_nanosleep"
# The sleeper's calls the oracle may lose across a context switch (its defect, not pmcprof's).
ORACLE_SLEEPER_LOSS = 2
FUNCS = {                    # name: shape
    "tcp_sendmsg": "loopback send, the receive path inside",
    LEAF: "leaf",
    "__arm64_sys_newuname": "calls (rwsem, copy_to_user)",
    SLEEPER: "sleeps",
}
CALIBRATION_TARGET = "__arm64_sys_ni_syscall"
SWITCH = "cpu_switch_to"     # the oracle's switch=: where the kernel changes tasks
BACKENDS = ("kprobe", "fentry")
TOLERANCE = 0.01             # the acceptance's 1 %
WORKLOAD_SRC = os.path.join("tests", "workloads", "aarch64", "kfunc_workload.c")
KNOWN = "KNOWN (issue 22 item 8, not fatal)"


def log(msg=""):
    print(msg, flush=True)


def build_workload(out_dir):
    """The static workload, from this test's own tree (rebuilt when the source is newer)."""
    return guest.build_static_arm64(os.path.join(HERE, "..", "..", WORKLOAD_SRC),
                                    os.path.join(out_dir, "kfunc_workload"))


def within(a, b, ref):
    return abs(a - b) <= TOLERANCE * abs(ref)


def kallsyms_ranges(text, names):
    """{name: (start, end)} of the text symbols NAMES, end the next text symbol's address."""
    syms, addrs = {}, set()
    for line in text.splitlines():
        p = line.split()
        if len(p) < 3 or p[1] not in "tTwW":
            continue
        a = int(p[0], 16)
        addrs.add(a)
        if p[2] in names and len(p) == 3:
            syms.setdefault(p[2], a)
        if p[2] == "_text":
            syms["_text"] = a
    addrs = sorted(addrs)
    out = {}
    for n, a in syms.items():
        i = bisect.bisect_right(addrs, a)
        out[n] = (a, addrs[i] if i < len(addrs) else a + 4)
    return out


def first_instruction(image, text_base, addr):
    off = addr - text_base
    if not 0 <= off <= len(image) - 4:
        return None
    return struct.unpack_from("<I", image, off)[0]


def describe_insn(w):
    if w is None:
        return "?"
    if w == 0xd503201f:
        return "nop (single-stepped out of line: this kernel simulates no nop)"
    if w & 0x7c000000 == 0x14000000:
        return f"{w:#010x} b/bl (simulated)"
    return f"{w:#010x}"


# ====================================================================== pmcprof's runs

def collect_runs(C, files, runs):
    """{backend: [ {run, raw, bias, rows: {fn: (min, p50, max, calls)}} ]}: compensated figures
    (a --no-compensate run's minus its printed bias)."""
    out = {b: [] for b in BACKENDS}
    for b in BACKENDS:
        for i in range(runs):
            key = f"{b}{i}"
            raw = i % 2 == 1
            rc = files.get(f"{key}.rc", b"").decode().strip()
            try:
                rep = json.loads(files.get(f"{key}.json", b"{}") or b"{}")
            except ValueError:
                rep = {}
            if not C.check(rc == "0" and rep.get("functions"),
                           f"{key}{' (--no-compensate)' if raw else ''}: ran, JSON report",
                           f"rc {rc!r}: {files.get(key + '.err', b'').decode()[-800:]}"):
                continue
            pb = [p for p in rep.get("probe_bias", []) if p.get("backend") == b]
            bias = (pb[0].get("events") or {}).get("instructions") if pb else None
            C.check(bool(pb) and pb[0].get("calibrated") and isinstance(bias, int) and
                    bool(pb[0].get("subtracted")) == (not raw),
                    f"{key}: the {b} bias calibrated ({bias}), "
                    f"{'not ' if raw else ''}subtracted", str(pb))
            run = {"run": i, "raw": raw, "bias": bias or 0, "rows": {}}
            for fn in FUNCS:
                row = guest.function_row(rep, fn)
                ev = (row or {}).get("events", {}).get("instructions", {})
                ok = C.check(row is not None and row.get("calls") == N + 1 and
                             isinstance(ev.get("min"), (int, float)),
                             f"{key}: {fn}: {N + 1} calls measured",
                             json.dumps(row)[:600] if row else "no row")
                if ok:
                    shift = run["bias"] if raw else 0
                    run["rows"][fn] = (ev["min"] - shift, ev["p50"] - shift, ev["max"] - shift,
                                       row["calls"], ev["min"], ev["p50"])
            out[b].append(run)
    return out


# ====================================================================== main

def host_main(args):
    t0 = time.monotonic()
    build = os.path.abspath(args.cross_build)
    gp = guest.ARM64.guest_path
    prep = guest.prepare(args.cache, guest.ARM64)
    so = guest.prepare_oracle(args.cache)
    guest.cross_build(args.source, build, args.cache, ["pmcprof"])
    exe = build_workload(os.path.join(build, "kfuncs"))
    log(f"prepared in {time.monotonic() - t0:.1f} s: plugin {so}, workload {exe}, "
        f"{args.runs} run(s) per backend")
    wl = [gp(exe), str(N), str(SLEEP_US)]
    pmcprof = gp(os.path.join(build, "pmcprof"))
    C = guest.Checks()

    # 1. pmcprof's boot (no plugin): kallsyms, then the runs.
    lines = ["OUT=$PMCPROF_GUEST_OUT", "echo 0 > /proc/sys/kernel/kptr_restrict",
             "cat /proc/kallsyms > $OUT/kallsyms"]
    funcs_args = [a for f in FUNCS for a in ("--func", f)]
    for b in BACKENDS:
        for i in range(args.runs):
            key = f"{b}{i}"
            argv = [pmcprof, "stat", "-e", "instructions", *funcs_args, "--backend", b,
                    *(["--no-compensate"] if i % 2 else []), "-j"]
            lines.append(f"{shlex.join(argv)} -o $OUT/{key}.json -- {shlex.join(wl)} "
                         f"> $OUT/{key}.out 2> $OUT/{key}.err; echo $? > $OUT/{key}.rc")
    t1 = time.monotonic()
    res = guest.run_test_boot(args.cache, ["/bin/sh", "-c", "\n".join(lines) + "\n"],
                              args.timeout * 0.8, arch=guest.ARM64)
    log(f"guest with pmcprof: qemu ran {res.boot_s:.1f} s ({2 * args.runs} runs)")
    if res.status is None:
        log(f"FAIL: {guest.describe_failure(res, args.timeout * 0.8)}")
        return 1
    ks = res.files.get("kallsyms", b"").decode("utf-8", "replace")
    ranges = kallsyms_ranges(ks, set(FUNCS) | {CALIBRATION_TARGET, SWITCH})
    if not C.check(all(f in ranges for f in [*FUNCS, SWITCH]) and "_text" in ranges,
                   "kallsyms: every function found", str(sorted(ranges))):
        return C.summary("arm64 kernel functions")
    with open(prep.kernel, "rb") as f:
        image = f.read()
    log("\n== the functions (first instruction read from the kernel Image)")
    for fn in [*FUNCS, CALIBRATION_TARGET]:
        if fn in ranges:
            s, e = ranges[fn]
            w = first_instruction(image, ranges["_text"][0], s)
            log(f"  {fn}: {s:#x}-{e:#x} ({e - s} bytes), {FUNCS.get(fn, 'calibration target')}; "
                f"first instruction {describe_insn(w)}")
    runs = collect_runs(C, res.files, args.runs)
    log(f"  (pmcprof boot {time.monotonic() - t1:.1f} s)")

    # 2. the oracle's boot: the workload alone, the plugin watching.
    tmp = tempfile.mkdtemp(prefix="oracle-", dir=guest.arch_cache(args.cache, guest.ARM64))
    try:
        out = os.path.join(tmp, "oracle.json")
        plugin = guest.oracle_plugin(so, {f: ranges[f] for f in FUNCS}, out) + \
            ",switch={:#x}:{:#x}".format(*ranges[SWITCH])
        script = f"{shlex.join(wl)}; echo $? > $PMCPROF_GUEST_OUT/run.rc\n"
        oracle_rep = guest.run_under_oracle(C, args.cache, script, args.timeout * 0.2, plugin,
                                            out)
        if oracle_rep is None:
            return C.summary("arm64 kernel functions")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # The oracle sees every process's calls; the workload's are the last N + 1 (nothing after it
    # in the guest calls these functions; boot and the shell make a few before it).
    oracle = {}
    log("\n== the oracle (every kernel instruction counted; the workload's calls: the last "
        f"{N + 1})")
    for f in oracle_rep.get("functions", []):
        per = [c for c, _ in f["per_call"]][-(N + 1):]
        if not per:
            continue
        oracle[f["name"]] = (min(per), guest.nearest_rank(per, 0.5), max(per), len(per))
        log(f"  {f['name']}: {f['calls']} calls in all; the workload's: min {min(per)}, p50 "
            f"{guest.nearest_rank(per, 0.5)}, max {max(per)}; not followed {f['stack_overflow']}, "
            f"open {f['open']}")
    C.check(oracle_rep.get("switches", 0) > N and oracle_rep.get("switch_dropped") == 0,
            f"oracle: followed per task across {oracle_rep.get('switches')} context switches, "
            "none dropped", str({k: oracle_rep.get(k) for k in ("switches", "switch_dropped")}))
    for fn in FUNCS:
        o = next((f for f in oracle_rep.get("functions", []) if f["name"] == fn), None)
        if fn == SLEEPER and o is not None and N + 1 - ORACLE_SLEEPER_LOSS <= o["calls"] < N + 1:
            # Seen once in 4 boots: one call that slept never closed and is not open at exit
            # (the oracle missed the task's return through cpu_switch_to); the oracle's defect.
            # Two in one boot on 2026-12-02, three guests sharing 2 host CPUs.
            log(f"  note: oracle: {fn}: {o['calls']} calls, {N + 1 - o['calls']} fewer than the "
                "workload made (calls lost across a context switch by the oracle), not fatal")
            continue
        C.check(o is not None and o["calls"] >= N + 1 and o["stack_overflow"] == 0,
                f"oracle: {fn}: at least {N + 1} calls, every one followed", str(o)[:300])
    if LEAF in oracle:
        C.check(oracle[LEAF][0] == oracle[LEAF][2], f"oracle: {LEAF} (a leaf): one count in "
                f"every call ({oracle[LEAF][0]})", str(oracle[LEAF]))

    # 3. the figures.
    log(f"\n== per call, instructions (compensated; --no-compensate runs: raw - bias); "
        f"{args.runs} run(s) per backend")
    best, p50c = {}, {}   # (backend, fn): min over runs of the per-call min; compensated runs' p50s
    for b in BACKENDS:
        biases = sorted({r["bias"] for r in runs[b]})
        log(f"  {b}: calibrated bias on {CALIBRATION_TARGET}: {biases}")
        for fn in FUNCS:
            got = [(r, r["rows"][fn]) for r in runs[b] if fn in r["rows"]]
            if not got:
                continue
            mins = [g[0] for _, g in got]
            best[(b, fn)] = min(mins)
            p50c[(b, fn)] = [g[1] for r, g in got if not r["raw"]]
            raws = [(g[4], g[5]) for r, g in got if r["raw"]]
            o = oracle.get(fn)
            log(f"  {b:6} {fn:22} min {sorted(set(mins))} p50 "
                f"{sorted(set(g[1] for _, g in got))} max {max(g[2] for _, g in got)}"
                + (f"; --no-compensate (min, p50) {sorted(set(raws))}" if raws else "")
                + (f"; oracle min {o[0]} p50 {o[1]} max {o[2]}" if o else ""))

    def spread(fn):
        """How far a function's own per-call count spreads from its min to its median: where it
        passes 1 %, a run's p50 depends on that run's mix of calls, not on the probe."""
        if fn in oracle and fn != SLEEPER:
            return (oracle[fn][1] - oracle[fn][0]) / oracle[fn][0]
        vals = [(statistics.median(p50c[(b, fn)]) - best[(b, fn)]) / best[(b, fn)]
                for b in BACKENDS if p50c.get((b, fn)) and best.get((b, fn))]
        return max(vals) if vals else 1.0

    log("\n== kprobe against fentry")
    for fn in FUNCS:
        if ("kprobe", fn) not in best or ("fentry", fn) not in best:
            continue
        km, fm = best[("kprobe", fn)], best[("fentry", fn)]
        what = f"{fn}: per-call min (over runs), kprobe {km} and fentry {fm}, within 1 %"
        if fn != SLEEPER:
            C.check(within(km, fm, fm), what, f"{km} vs {fm}")
        else:
            # The sleeper's own wake-up path varies from run to run (one backend's two runs
            # read 3,294 and 3,431): with a few runs, the best of each is not comparable.
            log(f"  {'ok' if within(km, fm, fm) else KNOWN + ' (the wake-up path varies)'}: {what}")
        kp, fp = p50c.get(("kprobe", fn)), p50c.get(("fentry", fn))
        if kp and fp:
            ok = all(within(a, c, c) for a in kp for c in fp)
            what = (f"{fn}: p50 of every compensated run, kprobe {sorted(set(kp))} and fentry "
                    f"{sorted(set(fp))}, within 1 % of each other")
            if spread(fn) <= TOLERANCE:
                C.check(ok, what)
            else:
                log(f"  {'ok' if ok else 'varies'} (not checked: its own calls spread "
                    f"{spread(fn):.1%} from min to median): {what}")
        worst = [(r["run"], r["rows"][fn][0]) for b in BACKENDS for r in runs[b]
                 if fn in r["rows"] and not within(r["rows"][fn][0], best[(b, fn)],
                                                   best[(b, fn)])]
        if worst:
            log(f"  {KNOWN if fn != SLEEPER else 'varies (its wake-up path), not fatal'}: {fn}: "
                f"runs whose per-call min is more than 1 % above the best run's: {worst}")

    log("\n== against the oracle")
    offsets = {b: best[(b, LEAF)] - oracle[LEAF][0] for b in BACKENDS
               if (b, LEAF) in best and LEAF in oracle}
    # Exactly the oracle's: the calibration target's own instructions are not bias (counted
    # from the kernel text), and a real call's window holds the same probe work as the
    # calibration's (issue 22 item 8: it read -13, then +10).
    if C.check(len(offsets) == 2 and set(offsets.values()) == {0},
               f"the leaf {LEAF}: both backends read exactly the oracle's count "
               f"(offsets {offsets})", str(offsets)):
        d = offsets["kprobe"]
        if d:
            log(f"  {KNOWN}: every call reads {d:+g} instructions against the oracle: the bias "
                f"calibrated on {CALIBRATION_TARGET} (its own instructions taken off) is not what "
                "a measured function's probe pair costs")
        for b in BACKENDS:
            for fn in FUNCS:
                if fn == SLEEPER or (b, fn) not in best or fn not in oracle:
                    continue
                om, op = oracle[fn][0], oracle[fn][1]
                C.check(within(best[(b, fn)], om + d, om),
                        f"{b}: {fn}: per-call min {best[(b, fn)]} is the oracle's {om} {d:+g} "
                        "within 1 %", str(best[(b, fn)]))
                what = (f"{b}: {fn}: p50 of every compensated run {sorted(set(p50c[(b, fn)]))} is "
                        f"the oracle's {op} {d:+g} within 1 %")
                ok = all(within(p, op + d, op) for p in p50c[(b, fn)])
                if spread(fn) <= TOLERANCE:
                    C.check(ok, what)
                else:
                    log(f"  {'ok' if ok else 'no'} (not checked: its own calls spread "
                        f"{spread(fn):.1%} from min to median): {what}")
    misses, total = [], 0
    for b in BACKENDS:
        for fn in FUNCS:
            if fn not in oracle:
                continue
            om, op = oracle[fn][0], oracle[fn][1]
            bad = []
            for r in runs[b]:
                g = r["rows"].get(fn)
                if g:
                    total += 1
                    # A --no-compensate run's p50 is its histogram's bucket for the raw value
                    # (bias + the call: within 1 % of that, +-12 here), less the bias: not a
                    # figure of the call's own 1 %. Its min is exact, and held.
                    if not (within(g[0], om, om) and (r["raw"] or within(g[1], op, op))):
                        bad.append((r["run"], g[0], g[1]))
            if bad:
                misses.append(len(bad))
                log(f"  {KNOWN}: {b}: {fn}: {len(bad)} of {len(runs[b])} runs not within 1 % of "
                    f"the oracle's min {om} and p50 {op}; (run, min, p50): {bad[:4]}"
                    f"{' ...' if len(bad) > 4 else ''}")
    log(f"  the acceptance (each run's min, and each compensated run's p50, within 1 % of the "
        "oracle's): "
        f"{total - sum(misses)} of {total} function-runs hold"
        + (f"; {sum(misses)} do not: {KNOWN}" if misses else ""))
    if SLEEPER in oracle and offsets:
        d = offsets.get("kprobe", 0)
        for b in BACKENDS:
            if (b, SLEEPER) in best:
                extra_min = best[(b, SLEEPER)] - d - oracle[SLEEPER][0]
                extra_p50 = statistics.median(p50c[(b, SLEEPER)]) - d - oracle[SLEEPER][1] \
                    if p50c.get((b, SLEEPER)) else float("nan")
                log(f"  {KNOWN}: {b}: {SLEEPER} (one sleep a call): min {best[(b, SLEEPER)]}, "
                    f"oracle {oracle[SLEEPER][0]}: {extra_min:+g} beyond the offset {d:+g} "
                    f"(p50 {extra_p50:+g}): what runs after the sched_switch hook's counter read "
                    "at the switch back in lands in the call, uncalibrated")
    return C.summary("arm64 kernel functions", f"whole test {time.monotonic() - t0:.1f} s")


def main():
    ap = guest.arm64_test_args(__doc__, None,
                               "seconds the two boots may run together (default 400 + 100 per run)")
    ap.add_argument("--runs", type=int, default=int(os.environ.get("PMCPROF_KFUNC_RUNS", "2")),
                    help="pmcprof runs per backend (every other one --no-compensate)")
    args = ap.parse_args()
    args.runs = max(1, args.runs)
    if args.timeout is None:
        # Generous: scripts/test runs the guests beside clang-tidy on 2 CPUs, where the boot
        # with the oracle (every kernel instruction instrumented) took over 216 s once.
        args.timeout = 400 + 100 * args.runs
    return guest.run_arm64_test(args, host_main)


if __name__ == "__main__":
    sys.exit(main())

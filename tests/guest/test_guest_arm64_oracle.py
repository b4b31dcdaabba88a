#!/usr/bin/env python3
"""Per-call truth (issue 22): pmcprof's per-call instructions:u held against an instruction-exact
oracle, a qemu TCG plugin (tests/guest/oracle/insn_oracle.c) in the arm64 guest
(tests/guest/guest.py --arch arm64: qemu-system-aarch64 -M virt -cpu cortex-a57 -icount shift=0,
one vCPU).

The oracle counts, per call, the user instructions a function executes from its entry instruction
up to and including its return, callees included, following calls and returns by decoding
bl/blr/ret (a stack per vCPU; nested and recursive calls each their own call). It reads no register
and puts nothing in the guest; it cannot tell processes apart, so the workload
(tests/workloads/aarch64/oracle_workload.c) is built static at a text address nothing else in the
guest uses (-Wl,-Ttext-segment=0x5000000) and the oracle counts that text only.

On the host (what ctest runs):
    test_guest_arm64_oracle.py --cache DIR --source SRC --cross-build DIR [--timeout S]
fetches qemu's plugin header (Debian's qemu source package, once: CACHE/oracle) and builds the
plugin, cross-builds pmcprof into the cross-build dir and the static workload into its oracle/,
then boots the guest twice:
  1. WITH the plugin and without pmcprof: `oracle_workload run N R D` once. Checked: the oracle
     itself. leaf_fn (assembly, 102 instructions) reads exactly 102 in every call and is called
     N + sum(i % 4) times; branch_leaf_fn (the same behind a `b`) 103; outer_fn (C, calls leaf_fn
     i % 4 times in its i-th call) reads 102 k + a + b k, one a and one b for every call;
     rec_fn (recursing D deep: D + 1 nested calls) reads c0 + s m for a call with m calls below
     it, nothing left open, nothing it could not follow.
  2. WITHOUT the plugin (a uprobe's BRK replaces a function's first instruction, which a plugin
     would count), the same workload under the cross-built pmcprof:
       all:   stat -e instructions:u --func leaf_fn --func branch_leaf_fn --func outer_fn
              --func rec_fn -j
       outer: stat -e instructions:u --func outer_fn -j            (outer_fn's callee unprobed)
     Checked against the oracle's calls of the same functions:
       * leaf_fn and outer_fn probed alone: calls, total, mean, min, max exactly the oracle's;
         p50 the oracle's median to the histogram's resolution (1 %);
       * branch_leaf_fn: a first instruction that the arm64 uprobe code simulates (a branch) is
         its own calibration class (pmcprof calibrates on `b .+4; ret`): exactly the oracle's
         (before issue 22's fix one instruction short: the bias of a single-stepped one);
       * outer_fn with leaf_fn probed too: pmcprof takes its probed callees' cost off (the
         calibrated cost of a nested uprobe pair: 2 instructions each, the BRK at the callee's
         entry and the return trampoline's BRK); checked: exactly the oracle's total, min and
         max (issue 22 defect 10: it read 2 more per probed callee);
       * rec_fn, nested D + 1 deep: pmcprof keeps PMCPROF_MAX_DEPTH (16) frames per thread, so
         calls + depth_overflow == the oracle's calls, the measured calls are the outermost ones
         (calls / R per recursion), and their instructions are the oracle's for those same calls
         up to the probes' own per-call cost (solved from pmcprof's max and min: e per call plus c
         per probed call below it; -1 and 1 today), which then gives pmcprof's total exactly.
Exit 0 pass, 1 fail, 77 skipped (qemu, the cross compiler or a host C compiler missing).
"""
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guest  # noqa: E402

N, R, D = 1000, 10, 40            # oracle_workload run N R D
LEAF_INSNS = 102                  # oracle_workload.c: mov, 50 x (subs, b.ne), ret
BRANCH_LEAF_INSNS = 103           # b, then the same
TEXT_ADDRESS = 0x5000000          # the workload's text: no other program in the guest uses it
FUNCS = ["leaf_fn", "branch_leaf_fn", "outer_fn", "rec_fn"]
WORKLOAD_SRC = os.path.join("tests", "workloads", "aarch64", "oracle_workload.c")
P50_TOLERANCE = 0.01


def log(msg=""):
    print(msg, flush=True)


def build_workload(source, out_dir):
    """The static workload at TEXT_ADDRESS (rebuilt when the source is newer)."""
    return guest.build_static_arm64(os.path.join(source, WORKLOAD_SRC),
                                    os.path.join(out_dir, "oracle_workload"),
                                    [f"-Wl,-Ttext-segment={TEXT_ADDRESS:#x}"])


# ====================================================================== the oracle's own checks

def check_oracle(C, rep):
    """The oracle against what the workload's code makes certain; returns {name: function}."""
    fns = {f["name"]: f for f in rep.get("functions", [])}
    log(f"\n== the oracle (instructions counted in the workload's text: {rep.get('instructions')})")
    for name in FUNCS:
        f = fns.get(name)
        if not C.check(f is not None, f"oracle: {name} reported", str(list(fns))):
            return None
        log(f"  {name}: {f['calls']} calls, {f['total']} instructions, min {f['min']}, max "
            f"{f['max']}, deepest level {f['max_level']}, not followed {f['stack_overflow']}, "
            f"open {f['open']}")
        C.check(f["stack_overflow"] == 0 and f["open"] == 0 and f["list_dropped"] == 0,
                f"oracle: {name}: every call followed to its return and listed", str(f))
    ks = [i % 4 for i in range(N)]
    leaf, bleaf, outer, rec = (fns[n] for n in FUNCS)
    for f, insns, calls in ((leaf, LEAF_INSNS, N + sum(ks)), (bleaf, BRANCH_LEAF_INSNS, N)):
        C.check(f["calls"] == calls, f"oracle: {f['name']} called {calls} times", str(f["calls"]))
        C.check(all(c == [insns, 0] for c in f["per_call"]) and f["total"] == insns * calls,
                f"oracle: {f['name']} is exactly {insns} instructions in every call",
                f"min {f['min']} max {f['max']} total {f['total']}")
    # outer_fn(k): k leaf calls (102 each) + a + b*k of its own, the same a and b in every call.
    per = [c for c, _ in outer["per_call"]]
    if C.check(outer["calls"] == N and len(per) == N, f"oracle: outer_fn called {N} times",
               str(outer["calls"])):
        a = per[0] - 0
        b = per[1] - LEAF_INSNS - a
        own = [p - LEAF_INSNS * k for p, k in zip(per, ks)]
        C.check(all(o == a + b * k for o, k in zip(own, ks)),
                f"oracle: outer_fn(k) is 102 k (its leaf_fn calls) + {a} + {b} k in every call",
                str(sorted(set(zip(ks, per)))))
        log(f"  outer_fn(k) = {LEAF_INSNS} k + {a} + {b} k: {sorted(set(per))}")
    # rec_fn: a call with m calls below it (m = D - level) reads c0 + s*m, every call.
    per = rec["per_call"]
    if C.check(rec["calls"] == R * (D + 1) and rec["max_level"] == D,
               f"oracle: rec_fn called {R * (D + 1)} times, {D + 1} deep",
               f"{rec['calls']} calls, deepest level {rec['max_level']}"):
        c0 = next(c for c, lv in per if lv == D)
        s = next(c for c, lv in per if lv == D - 1) - c0
        C.check(all(c == c0 + s * (D - lv) for c, lv in per),
                f"oracle: rec_fn with m calls below it reads {c0} + {s} m in every call",
                str(per[:D + 1]))
        log(f"  rec_fn: {c0} + {s} m, m calls below it; outermost call {c0 + s * D}")
    return fns


# ====================================================================== pmcprof against it

def describe(row):
    e = guest.event_of(row)
    return (f"{row.get('calls')} calls (+{row.get('depth_overflow')} too deep), instructions:u "
            f"total {e.get('total')} mean {e.get('mean')} min {e.get('min')} max {e.get('max')} "
            f"p50 {e.get('p50')}")


def check_exact(C, step, row, oracle):
    """pmcprof reads exactly the oracle's calls and per-call instructions."""
    name = oracle["name"]
    e = guest.event_of(row)
    per = [c for c, _ in oracle["per_call"]]
    want = (oracle["calls"], oracle["total"], oracle["total"] / oracle["calls"], oracle["min"],
            oracle["max"])
    got = (row.get("calls"), e.get("total"), e.get("mean"), e.get("min"), e.get("max"))
    log(f"  {step} {name}: pmcprof {describe(row)}; oracle {oracle['calls']} calls, total "
        f"{oracle['total']}, min {oracle['min']}, max {oracle['max']}, "
        f"p50 {guest.nearest_rank(per, 0.5)}")
    C.check(got == want, f"{step}: {name}: calls, total, mean, min, max are the oracle's",
            f"{got} vs {want}")
    p50, want50 = e.get("p50"), guest.nearest_rank(per, 0.5)
    C.check(isinstance(p50, (int, float)) and abs(p50 - want50) <= P50_TOLERANCE * want50,
            f"{step}: {name}: p50 the oracle's median ({want50}) within {P50_TOLERANCE:.0%}",
            str(p50))


def check_pmcprof(C, files, fns):
    reps = {}
    for step in ("all", "outer"):
        rc = files.get(f"{step}.rc", b"").decode().strip()
        try:
            reps[step] = json.loads(files.get(f"{step}.json", b"{}"))
        except ValueError:
            reps[step] = {}
        C.check(rc == "0" and reps[step].get("functions"), f"pmcprof {step}: ran, JSON report",
                f"rc {rc!r}: {files.get(step + '.err', b'').decode()[-800:]}")
    bias = [(b.get("first_instruction"), b.get("events")) for b in
            reps["all"].get("probe_bias", []) if b.get("backend") == "uprobe"]
    log(f"\n== pmcprof against the oracle (uprobe bias: {bias})")
    leaf, bleaf, outer, rec = (fns[n] for n in FUNCS)

    row = guest.function_row(reps["all"], "leaf_fn")
    if C.check(row is not None, "all: leaf_fn row"):
        check_exact(C, "all", row, leaf)
    row = guest.function_row(reps["outer"], "outer_fn")
    if C.check(row is not None, "outer: outer_fn row (probed alone)"):
        check_exact(C, "outer", row, outer)

    # branch_leaf_fn: a simulated first instruction; the bias pmcprof takes off assumes a
    # single-stepped one.
    row = guest.function_row(reps["all"], "branch_leaf_fn")
    bias_error = None
    if C.check(row is not None, "all: branch_leaf_fn row"):
        e = guest.event_of(row)
        log(f"  all branch_leaf_fn: pmcprof {describe(row)}; oracle {bleaf['calls']} calls of "
            f"{BRANCH_LEAF_INSNS}")
        C.check(row.get("calls") == bleaf["calls"], "all: branch_leaf_fn: the oracle's calls",
                str(row.get("calls")))
        same = e.get("min") == e.get("max") and \
            e.get("total") == (e.get("min") or 0) * bleaf["calls"]
        if C.check(same, "all: branch_leaf_fn: one count in every call", describe(row)):
            bias_error = e["min"] - BRANCH_LEAF_INSNS
            C.check(bias_error == 0,
                    f"all: branch_leaf_fn reads {e['min']}, the oracle {BRANCH_LEAF_INSNS}: "
                    "exact (a simulated first instruction is calibrated as such)", str(bias_error))

    # outer_fn with its callee probed too: a whole number of instructions per probed callee.
    row = guest.function_row(reps["all"], "outer_fn")
    if C.check(row is not None, "all: outer_fn row (leaf_fn probed too)"):
        e = guest.event_of(row)
        nested = sum(i % 4 for i in range(N))
        diff = (e.get("total") or 0) - outer["total"]
        per_callee = diff / nested
        log(f"  all outer_fn: pmcprof {describe(row)}; oracle total {outer['total']}: "
            f"{diff} more over {nested} probed leaf_fn calls inside = {per_callee:g} per callee")
        C.check(row.get("calls") == outer["calls"], "all: outer_fn: the oracle's calls",
                str(row.get("calls")))
        C.check(diff == 0 and e.get("min") == outer["min"] and e.get("max") == outer["max"],
                "all: outer_fn reads exactly the oracle's count with its callees probed too "
                "(their probes' cost taken off)", describe(row))

    # rec_fn: 16 frames per thread.
    row = guest.function_row(reps["all"], "rec_fn")
    if not C.check(row is not None, "all: rec_fn row"):
        return
    e = guest.event_of(row)
    calls, deep = row.get("calls", 0), row.get("depth_overflow", 0)
    log(f"  all rec_fn: pmcprof {describe(row)}; oracle {rec['calls']} calls, "
        f"{D + 1} nested per recursion")
    C.check(calls + deep == rec["calls"],
            f"all: rec_fn: calls ({calls}) + depth_overflow ({deep}) == the oracle's calls "
            f"({rec['calls']})")
    levels = calls // R
    if not C.check(calls == levels * R and 0 < levels <= D + 1,
                   f"all: rec_fn: the same number of calls measured in every recursion "
                   f"({levels} of {D + 1})", str(calls)):
        return
    # The oracle's count of the call at each level, and pmcprof's model of it if it measured the
    # outermost LEVELS calls: oracle + e + c * (calls below it, each probed).
    at = {lv: c for c, lv in rec["per_call"]}
    below = {lv: D - lv for lv in at}
    top, last = 0, levels - 1
    c = ((e.get("max") - at[top]) - (e.get("min") - at[last])) / (below[top] - below[last]) \
        if below[top] != below[last] else 0
    err = e.get("max") - at[top] - c * below[top]
    model = R * sum(at[lv] + err + c * below[lv] for lv in range(levels))
    log(f"  rec_fn: measured levels 0..{last} (outermost): pmcprof = oracle {err:+g} per call "
        f"{c:+g} per probed call below it; the model's total {model:g}, pmcprof's "
        f"{e.get('total')}")
    C.check(c == int(c) and err == int(err) and model == e.get("total"),
            "all: rec_fn: the measured calls are the outermost ones of each recursion, and read "
            "the oracle's instructions for those calls up to a whole per-call probe cost",
            f"c {c}, e {err}, model {model} vs {e.get('total')}")
    if bias_error is not None:
        C.check(err == bias_error,
                f"all: rec_fn's per-call error ({err:+g}) is branch_leaf_fn's ({bias_error:+d}): "
                "its first instruction (cbnz) is simulated too", f"{err} vs {bias_error}")


# ====================================================================== main

def host_main(args):
    t0 = time.monotonic()
    build = os.path.abspath(args.cross_build)
    gp = guest.ARM64.guest_path
    guest.prepare(args.cache, guest.ARM64)
    so = guest.prepare_oracle(args.cache)
    guest.cross_build(args.source, build, args.cache, ["pmcprof"])
    exe = build_workload(os.path.abspath(args.source), os.path.join(build, "oracle"))
    funcs, text = guest.elf_functions(exe)
    missing = [f for f in FUNCS if f not in funcs]
    if missing:
        raise guest.GuestError(f"{exe} lacks {', '.join(missing)}")
    log(f"prepared in {time.monotonic() - t0:.1f} s: plugin {so}, workload {exe} (text "
        f"{', '.join(f'{lo:#x}-{hi:#x}' for lo, hi in text)})")
    wl = gp(exe)
    run = [wl, "run", str(N), str(R), str(D)]
    C = guest.Checks()

    # 1. the oracle's boot: the workload alone, the plugin watching.
    tmp = tempfile.mkdtemp(prefix="oracle-", dir=guest.arch_cache(args.cache, guest.ARM64))
    try:
        out = os.path.join(tmp, "oracle.json")
        plugin = guest.oracle_plugin(so, {f: funcs[f] for f in FUNCS}, out, text)
        script = ("echo 0 > /proc/sys/kernel/randomize_va_space\n"
                  f"{shlex.join(run)}; echo $? > $PMCPROF_GUEST_OUT/run.rc\n")
        oracle = guest.run_under_oracle(C, args.cache, script, args.timeout / 2, plugin, out)
        if oracle is None:
            return C.summary("arm64 oracle")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    fns = check_oracle(C, oracle)
    if fns is None:
        return C.summary("arm64 oracle")

    # 2. pmcprof's boot: no plugin.
    pmcprof = gp(os.path.join(build, "pmcprof"))
    steps = {"all": [a for f in FUNCS for a in ("--func", f"{wl}:{f}")],
             "outer": ["--func", f"{wl}:outer_fn"]}
    lines = ["OUT=$PMCPROF_GUEST_OUT", "echo 0 > /proc/sys/kernel/randomize_va_space"]
    for step, funcs_args in steps.items():
        argv = [pmcprof, "stat", "-e", "instructions:u", *funcs_args, "-j"]
        lines.append(f"{shlex.join(argv)} -o $OUT/{step}.json -- {shlex.join(run)} "
                     f"> $OUT/{step}.out 2> $OUT/{step}.err; echo $? > $OUT/{step}.rc")
    res = guest.run_test_boot(args.cache, ["/bin/sh", "-c", "\n".join(lines) + "\n"],
                              args.timeout / 2, arch=guest.ARM64)
    log(f"guest with pmcprof: qemu ran {res.boot_s:.1f} s")
    if res.status is None:
        log(f"FAIL: {guest.describe_failure(res, args.timeout / 2)}")
        return 1
    check_pmcprof(C, res.files, fns)
    return C.summary("arm64 instruction oracle", f"whole test {time.monotonic() - t0:.1f} s")


def main():
    ap = guest.arm64_test_args(__doc__, 400, "seconds the two boots may run together")
    return guest.run_arm64_test(ap.parse_args(), host_main)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The documentation's examples that need a real PMU or kernel probes, run where they were
captured: the arm64 guest (tests/guest/guest.py --arch arm64: bookworm-backports' 6.12 kernel
with kprobes and fentry, qemu's emulated Arm PMUv3 under -icount shift=0, one vCPU).

tests/doc_examples.py finds every example of README.md, docs/*.md and man/pmcprof.1 (```console
blocks; .EX blocks) and, on the host, runs those this machine can run
(tests/runtime/test_doc_examples.py). The ones marked `<!-- doc-test: guest=arm64 -->` (roff:
`.\\" doc-test: guest=arm64`) were captured in this guest; here they run there again, all in one
boot, each block in a fresh directory of its own holding the cross-built workloads under their
own names (`./pmu_workload`, `./tcp_pair`, ...) with the cross-built pmcprof first in PATH, and
their output is held to the shape each example shows (row and column labels, JSON keys, CSV
fields; never the numbers), as on the host.

    test_guest_arm64_doc_examples.py --cache DIR --source SRC --cross-build DIR [--only TEXT] [--show]

--show prints what each command printed instead of checking it; --update pastes it into the
examples' blocks (a block trimmed with `...` keeps its trim: doc_examples.refresh_trimmed).
Exit 0 pass, 1 fail, 77 skipped (qemu or the cross compiler missing, or no example marked).
Cost: each function-mode run is 10-25 s of emulator time (BPF verification and calibration
under TCG); counting-mode runs 1-3 s.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import doc_examples as D  # noqa: E402
import guest  # noqa: E402

GUEST = "arm64"
# The arm64 workloads an example may name (tests/workloads/aarch64 and the guests' TCP pair).
TARGETS = ["pmcprof", "pmu_workload", "tcp_pair", "func_workload", "burn"]
# Tools the guest's busybox root lacks: their commands run here, on the files the block wrote.
HOST_ONLY = ("jq",)


def log(msg=""):
    print(msg, flush=True)


def run_deferred(ex, results, files, prefix):
    """The block's jq commands, run here on the files its pmcprof commands wrote in the guest."""
    if not any(c.text.split()[0] in HOST_ONLY for c, _ in results):
        return results
    with tempfile.TemporaryDirectory(prefix="doc-guest-") as tmp:
        for name, data in files.items():
            if name.startswith(prefix):
                with open(os.path.join(tmp, name[len(prefix):]), "wb") as f:
                    f.write(data)
        out = []
        for cmd, actual in results:
            if cmd.text.split()[0] in HOST_ONLY:
                p = subprocess.run(["bash", "-c", cmd.text], cwd=tmp, capture_output=True,
                                   text=True, timeout=60)
                actual = (p.stdout + p.stderr).rstrip("\n").split("\n")
            out.append((cmd, actual))
        return out


def block_seconds(files, i):
    """'N.N s': the guest's time for block I, from the uptimes around it ('? s' if missing)."""
    try:
        start, end = (float(x) for x in files[f"t{i}"].split())
        return f"{end - start:5.1f} s"
    except (KeyError, ValueError):
        return "    ? s"


def host_main(args):
    t0 = time.monotonic()
    source = os.path.abspath(args.source)
    examples = [e for e in D.select(D.extract_all(source), args.only)
                if D.disposition(e, None, f"guest-{GUEST}")[0]]
    if not examples:
        log(f"skipped: no example marked guest={GUEST}" + (f" matching {args.only!r}" if args.only else ""))
        return guest.EXIT_SKIP
    build = os.path.abspath(args.cross_build)
    guest.prepare(args.cache, guest.ARM64)
    guest.cross_build(source, build, args.cache, TARGETS)
    gp = guest.ARM64.guest_path
    scripts = os.path.join(build, "doc-examples")
    shutil.rmtree(scripts, ignore_errors=True)
    os.makedirs(scripts)
    main = []
    for i, ex in enumerate(examples):
        scratch = f"/run/tmp/doc{i}"
        text = D.block_script(ex, scratch, f"{scratch}/.bin", gp(os.path.join(build, "workloads")),
                              gp(os.path.join(build, "pmcprof")), "/sys/fs/cgroup",
                              debian_path=False, source=gp(source), deferred=HOST_ONLY,
                              keep=f"$PMCPROF_GUEST_OUT/files{i}")
        path = os.path.join(scripts, f"block{i}.sh")
        with open(path, "w") as f:
            f.write(text)
        # Each block's emulator time (the guest's uptime around it), logged with its result.
        main.append(f"echo '== {ex.name}' >&2; cut -d' ' -f1 /proc/uptime > $PMCPROF_GUEST_OUT/t{i}; "
                    f"sh {gp(path)} > $PMCPROF_GUEST_OUT/block{i}.out 2>&1; "
                    f"cut -d' ' -f1 /proc/uptime >> $PMCPROF_GUEST_OUT/t{i}")
    # Exact, repeatable user-mode counts (tests/guest/README.md): no address-space randomisation.
    script = "echo 0 > /proc/sys/kernel/randomize_va_space\n" + "\n".join(main) + "\n"
    log(f"{len(examples)} example(s) for the {GUEST} guest; prepared in {time.monotonic() - t0:.1f} s")
    res = guest.run_test_boot(args.cache, ["/bin/sh", "-c", script], args.timeout, arch=guest.ARM64)
    log(f"guest: qemu ran {res.boot_s:.1f} s")
    if res.status is None:
        log(f"FAIL: {guest.describe_failure(res, args.timeout)}")
        return 1
    failed = 0
    updates = []
    for i, ex in enumerate(examples):
        out = res.files.get(f"block{i}.out", b"").decode("utf-8", "replace")
        results = run_deferred(ex, D.split_output(ex, out), res.files, f"files{i}/")
        if args.show or args.update:
            log(f"== {ex.name}")
            for cmd, actual in results:
                log(f"$ {cmd.text}")
                log("\n".join(actual))
            if args.update:
                updates.append((ex, results))
            continue
        problems = []
        for cmd, actual in results:
            why = D.compare(cmd, actual, unordered=bool(ex.markers.get("unordered")))
            if why:
                problems.append(f"  $ {cmd.text}\n" + "\n".join("    " + x for x in why.split("\n")))
        if problems:
            failed += 1
            log(f"FAIL {ex.name}\n" + "\n".join(problems))
            log("  output:\n" + "\n".join("    | " + x for x in out.split("\n")[-60:]))
        else:
            log(f"ok   {ex.name}  {block_seconds(res.files, i)}  {ex.commands[0].text[:60]}")
    for ex, results in sorted(updates, key=lambda u: (u[0].path, u[0].line), reverse=True):
        D.update(source, ex, results)
    if not (args.show or args.update):
        log(f"{len(examples) - failed} of {len(examples)} example(s) have the shape shown")
    return 1 if failed else 0


def main():
    ap = guest.arm64_test_args(__doc__, 900, "the guest's time limit (s), two tries")
    ap.add_argument("--only", help="the examples whose file:line or a command contains this")
    ap.add_argument("--show", action="store_true", help="print the outputs, check nothing")
    ap.add_argument("--update", action="store_true",
                    help="paste the outputs into the examples' blocks, check nothing")
    return guest.run_arm64_test(ap.parse_args(), host_main, host_cc=False)


if __name__ == "__main__":
    sys.exit(main())

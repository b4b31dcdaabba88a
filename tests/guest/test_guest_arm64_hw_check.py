#!/usr/bin/env python3
"""scripts/hw-check where there is a PMU: the arm64 guest (tests/guest/guest.py --arch arm64:
bookworm-backports' 6.12 kernel with kprobes and fentry, qemu's emulated Arm PMUv3 under
-icount shift=0, one vCPU). The script is what a user runs on a real machine with a PMU; here it
runs unchanged under the guest's busybox sh, with the cross-built pmcprof and hw_workload and
Debian's arm64 jq.

Checked: the script exits 0; its table has no FAIL row; the checks this guest can make ran (not
skipped): the loop's exact instructions:u and its IPC, the Arm model event INST_RETIRED through
libpfm4, multiplexing past the 6 counters, the user function's calls and exact 202 instructions
a call, the kernel function's calls and values with both kprobe and fentry; and the ones it
cannot make are skipped with their reason (no perf in the guest; no TopdownL1 on qemu's PMU).
The script's own no-PMU answer (exit 0, one line) is a runtime test (test_hw_check).

    test_guest_arm64_hw_check.py --cache DIR --source SRC --cross-build DIR [--timeout S]

Exit 0 pass, 1 fail, 77 skipped (qemu or the cross compiler missing). Cost: ~8 pmcprof runs,
10-25 s of emulator time each.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guest  # noqa: E402

# The rows this guest must run (a prefix of the check's name), and those it must skip (with
# what their reason says).
MUST_RUN = ["loop: instructions:u", "loop: IPC", "model event INST_RETIRED:u",
            "multiplexing: ", "user function hw_fn: calls",
            "user function hw_fn: instructions:u p50", "user function hw_fn: cycles:u p50",
            "kernel function __arm64_sys_getppid (kprobe): calls",
            "kernel function __arm64_sys_getppid (fentry): calls",
            "kernel function: kprobe = fentry"]
MUST_SKIP = {"perf stat": "perf", "TopdownL1": "not on this model"}


def host_main(args):
    source = os.path.abspath(args.source)
    build = os.path.abspath(args.cross_build)
    guest.prepare(args.cache, guest.ARM64)
    guest.cross_build(source, build, args.cache, ["pmcprof", "hw_workload"])
    script = guest.hw_check_script(source, build)
    res = guest.run_test_boot(args.cache, ["/bin/sh", "-c", script], args.timeout,
                              arch=guest.ARM64)
    print(f"guest: qemu ran {res.boot_s:.1f} s", flush=True)
    checks = guest.Checks()
    if not checks.check(res.status is not None, "the guest finished",
                        guest.describe_failure(res, args.timeout)):
        return checks.summary("scripts/hw-check in the arm64 guest")
    guest.check_hw_check(checks, res, MUST_RUN, MUST_SKIP)
    return checks.summary("scripts/hw-check in the arm64 guest")


def main():
    ap = guest.arm64_test_args(__doc__, 900, "the guest's time limit (s), two tries")
    return guest.run_arm64_test(ap.parse_args(), host_main, host_cc=False)


if __name__ == "__main__":
    sys.exit(main())

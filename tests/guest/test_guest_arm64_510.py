#!/usr/bin/env python3
"""pmcprof on Linux 5.10 with a hardware PMU (issue 19): Debian 11's own arm64 kernel
(linux-image-5.10.0-N-arm64, bullseye's point release) booted under qemu with the same machine,
emulated Arm PMUv3 (-icount shift=0: exact instruction counts) and root file system as the
6.12 arm64 guest (tests/guest/guest.py --arch arm64-5.10), running the cross-built pmcprof.

    test_guest_arm64_510.py --cache DIR --source SRC --cross-build DIR [--timeout S]

Checked, in one boot:
  - `pmcprof doctor --json`: the kernel is 5.10, the hardware PMU is there, and
    bpf_get_attach_cookie is not (naming Linux 5.15);
  - scripts/hw-check, as a user on such a machine runs it: exit 0 and no FAIL row; its counting
    checks ran and held (the loop's exact instructions:u and its IPC, the model event
    INST_RETIRED through libpfm4, multiplexing past the 6 counters), and its per-call checks
    are skipped naming Linux 5.15 (function mode needs the attach cookie);
  - per-cgroup counting with both backends (`-a -G /smoke --cgroup-backend fd|bpf -e
    instructions:u` around a shell that moves itself into the cgroup and execs `hw_workload loop
    N`): exit 0, the JSON names the backend, the cgroup's instructions:u hold the loop's 2N and
    at most what the same command counts whole (the fd backend counts from the move, the bpf
    one charges the move's time slice: docs/cgroups.md);
  - `serve` answers a scrape (busybox wget) with pmcprof_up 1 and an instructions metric, and
    ends cleanly on SIGINT;
  - function mode is refused in one line naming bpf_get_attach_cookie and Linux 5.15, and a
    HINT, with a non-zero exit.
Exit 0 pass, 1 fail, 77 skipped (qemu or the cross compiler missing). Cost: ~8 pmcprof runs.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guest  # noqa: E402

ARCH = guest.ARM64_510
LOOP_N = 5_000_000
# hw-check's rows this kernel must run (a prefix of the check's name), and those it must skip
# with the reason given.
MUST_RUN = ["loop: instructions:u", "loop: IPC", "model event INST_RETIRED:u", "multiplexing: "]
MUST_SKIP = {"user function hw_fn": "Linux 5.15", "kernel function": "Linux 5.15"}


def guest_script(pmcprof, workload):
    """What the guest runs after scripts/hw-check (guest.hw_check_script)."""
    return f"""
out=$PMCPROF_GUEST_OUT
P={pmcprof}
W={workload}
uname -r > $out/uname
$P doctor --json > $out/doctor.json 2>$out/doctor.err
# As systemd does at boot (5.10 gives a cgroup no perf_event state before): a controller at
# the root.
echo +pids > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/smoke
for b in fd bpf; do
  $P stat -j -a -G /smoke --cgroup-backend $b -e instructions:u -- \\
    sh -c "echo \\$\\$ > /sys/fs/cgroup/smoke/cgroup.procs && exec $W loop {LOOP_N}" \\
    > $out/cg_$b.out 2> $out/cg_$b.json
  echo $? > $out/cg_$b.rc
done
rmdir /sys/fs/cgroup/smoke
# The same command counted whole, in no cgroup: what either backend may hold at most.
$P stat -j -e instructions:u -- sh -c "echo \$\$ > /dev/null && exec $W loop {LOOP_N}" \
  > $out/whole.out 2> $out/whole.json
echo $? > $out/whole.rc
$P serve --listen 127.0.0.1:9477 -e instructions > $out/serve.out 2> $out/serve.err &
spid=$!
i=0
while [ $i -lt 120 ]; do
  if wget -q -O $out/metrics http://127.0.0.1:9477/metrics 2>/dev/null &&
     grep -q '^pmcprof_up 1$' $out/metrics; then break; fi
  i=$((i + 1))
  sleep 1
done
kill -INT $spid
wait $spid
echo $? > $out/serve.rc
$P stat -e instructions:u --func $W:hw_fn -- $W calls 10 > /dev/null 2> $out/func.err
echo $? > $out/func.rc
"""


def host_main(args):
    source = os.path.abspath(args.source)
    build = os.path.abspath(args.cross_build)
    prep = guest.prepare(args.cache, ARCH)
    print(f"guest kernel {prep.package}", flush=True)
    guest.cross_build(source, build, args.cache, ["pmcprof", "hw_workload"])
    gp = ARCH.guest_path
    script = guest.hw_check_script(source, build) + guest_script(
        gp(os.path.join(build, "pmcprof")), gp(os.path.join(build, "workloads/hw_workload")))
    res = guest.run_test_boot(args.cache, ["/bin/sh", "-c", script], args.timeout, arch=ARCH)
    print(f"guest: qemu ran {res.boot_s:.1f} s", flush=True)
    F = guest.Checks()
    if not F.check(res.status is not None, "the guest finished",
                   guest.describe_failure(res, args.timeout)):
        return F.summary("pmcprof on arm64 Linux 5.10")

    def text(name):
        return res.files.get(name, b"").decode("utf-8", "replace")

    def rc(name):
        return text(name).strip()

    release = text("uname").strip()
    F.check(release.startswith("5.10."), f"the guest runs 5.10 ({release})")
    try:
        caps = {c["name"]: c for c in json.loads(text("doctor.json"))["capabilities"]}
    except (ValueError, KeyError) as e:
        caps = {}
        F.check(False, "doctor --json parses", f"{e}: {text('doctor.err')[-300:]}")
    F.check(caps.get("hardware_pmu", {}).get("available") is True, "doctor: hardware PMU",
            str(caps.get("hardware_pmu")))
    cookie = caps.get("attach_cookie", {})
    F.check(cookie.get("available") is False and "5.15" in cookie.get("detail", ""),
            "doctor: no bpf_get_attach_cookie, naming Linux 5.15", str(cookie))

    guest.check_hw_check(F, res, MUST_RUN, MUST_SKIP)

    try:
        whole = json.loads(text("whole.json"))["counters"][0]["value"]
    except (ValueError, KeyError, IndexError):
        whole = None
    F.check(rc("whole.rc") == "0" and whole, "the command counted whole",
            text("whole.json")[-300:])
    whole = whole or 0
    for b in ("fd", "bpf"):
        F.check(rc(f"cg_{b}.rc") == "0", f"-G --cgroup-backend {b} exits 0",
                text(f"cg_{b}.json")[-400:])
        try:
            rep = json.loads(text(f"cg_{b}.json"))
        except ValueError:
            continue
        row = next((c for c in rep.get("counters", []) if c.get("cgroup") == "/smoke"), {})
        value = row.get("value")
        print(f"  cgroup ({b}): instructions:u {value} (the loop: {2 * LOOP_N:,}; the whole "
              f"command: {whole:,})", flush=True)
        F.check(rep.get("cgroup_backend") == b, f"JSON cgroup_backend {b}")
        # The fd backend counts from the move into the cgroup, the bpf one charges the time
        # slice the move falls in to the cgroup (docs/cgroups.md): each holds the loop, and no
        # more than the whole command (+0.1 %: the cgroup.procs write is the kernel's).
        F.check(value is not None and 2 * LOOP_N <= value <= whole * 1.001,
                f"{b}: the cgroup's instructions:u hold the loop's 2N, and at most the whole "
                "command's", f"{value} vs {2 * LOOP_N}..{whole}")

    metrics = text("metrics")
    F.check(re.search(r"^pmcprof_up 1$", metrics, re.M) and "instructions" in metrics,
            "serve answers a scrape with pmcprof_up 1 and instructions",
            metrics[:300] + text("serve.err")[-300:])
    F.check(rc("serve.rc") == "0", "serve ends cleanly on SIGINT",
            f"{rc('serve.rc')}: {text('serve.err')[-300:]}")

    lines = [x for x in text("func.err").splitlines() if x.strip()]
    print(f"  function mode: exit {rc('func.rc')}: {lines}", flush=True)
    F.check(rc("func.rc") not in ("", "0") and len(lines) == 2 and
            "bpf_get_attach_cookie" in lines[0] and "5.15" in lines[0] and
            lines[1].startswith("HINT: "), "function mode refused in one line naming "
            "bpf_get_attach_cookie (Linux 5.15), and a HINT", text("func.err")[-500:])
    return F.summary("pmcprof on arm64 Linux 5.10")


def main():
    ap = guest.arm64_test_args(__doc__, 900, "the guest's time limit (s), two tries")
    return guest.run_arm64_test(ap.parse_args(), host_main, host_cc=False)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""pmcprof on Linux 5.10, the oldest kernel it supports (issue 19: Debian 11 and Amazon Linux 2
run it): Debian 11's own linux-image-5.10.0-N-amd64 booted under qemu TCG (guest.py --arch
x86_64-5.10: the host's root shared read-only, so the host's build runs there unchanged).

On the host (what ctest runs):
    test_guest_x86_510.py --pmcprof PATH --workloads DIR --cache DIR [--timeout S]
boots the guest once and runs this same file in it with --in-guest. Exit 0 pass, 1 fail, 77
skipped (qemu missing, or the kernel cannot be had).

The smoke set, in the guest (two vCPUs, no PMU: software events; counting, cgroups and serve
are smoke.py's, which the 6.1 preempt=full guest of test_guest_kprobes.py runs too):
  - `pmcprof doctor --json`: the kernel is 5.10; kprobes, fentry, uprobes, syscall
    tracepoints, cgroup v2 and the counter read from BPF are there; bpf_get_attach_cookie (5.15)
    and task local storage (5.11) are not, each named with the version that has it;
  - counting: `stat -e task-clock,context-switches -- burn 300`: task-clock is burn's own
    task-clock counter on itself plus what burn ran before it opened (its exec and loading),
    within 5 % + 10 ms (an emulator's timing);
  - per-cgroup counting with both backends (`-a -G /smoke --cgroup-backend fd|bpf -e task-clock
    -- sh -c 'echo $$ > /sys/fs/cgroup/smoke/cgroup.procs && exec burn 1000'`): the cgroup's
    task-clock is the burn's, from its own task-clock to its CPU time from the exec (+5 %,
    +20 ms); the JSON names the backend. (The BPF backend reads the ancestors' cgroup ids from
    the task's cgroup there: tracing programs cannot call bpf_get_current_ancestor_cgroup_id.)
    Before that, with no controller enabled at the root yet (5.10 then gives a new cgroup no
    perf_event state), the fd backend is refused in one line naming the cgroup, and a HINT;
  - `serve` answers a scrape with pmcprof's metrics and ends cleanly on SIGINT;
  - function mode, which carries each probed point's id in the BPF attach cookie (5.15): a
    kernel function, a user function, a syscall and a USDT region are each refused with one
    line naming bpf_get_attach_cookie and Linux 5.15 and a HINT, a non-zero exit, no crash, and
    nothing of pmcprof left in the kernel (no BPF program, no kprobe).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(HERE, "..", "runtime"))
import guest  # noqa: E402  (also in the guest: it runs this file from the host's tree)
import smoke  # noqa: E402  (the smoke set every guest kernel runs)

ARCH = guest.X86_64_510
F = guest.Checks()
PORT = 9477


def log(msg=""):
    print(msg, flush=True)


def host_main(args):
    t0 = time.monotonic()
    pmcprof = os.path.abspath(args.pmcprof)
    cache = os.path.abspath(args.cache)
    prep = guest.prepare(cache, ARCH)
    log(f"guest kernel {prep.package}; prepared in {time.monotonic() - t0:.1f} s")
    argv = ["/usr/bin/python3", os.path.abspath(__file__), "--in-guest", "--pmcprof", pmcprof,
            "--workloads", os.path.abspath(args.workloads)]
    res = guest.run_test_boot(cache, argv, args.timeout, arch=ARCH, cpus=2)
    sys.stdout.write(res.output)
    log(f"guest: qemu ran {res.boot_s:.1f} s; whole test {time.monotonic() - t0:.1f} s")
    if res.status is None:
        log(f"FAIL: {guest.describe_failure(res, args.timeout)}")
        return 1
    return 0 if res.status == 0 else 1


# ====================================================================== guest side

def run(argv, timeout=300):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def pmcprof(args, *rest, timeout=300):
    return run([args.pmcprof, *rest], timeout=timeout)


def check_doctor(args):
    r = pmcprof(args, "doctor", "--json")
    F.check(r.returncode == 0, "doctor --json exits 0", r.stderr)
    caps = {c["name"]: c for c in json.loads(r.stdout or "{}").get("capabilities", [])}
    release = os.uname().release
    F.check(release.startswith("5.10."), f"the guest runs 5.10 ({release})")
    for name in ("kprobes", "fentry", "uprobes", "syscall_tracepoints", "cgroup_v2",
                 "bpf_counter_read", "software_events"):
        c = caps.get(name, {})
        F.check(c.get("available") is True, f"doctor: {name} available", c.get("detail", "missing"))
    for name, version in (("attach_cookie", "5.15"), ("task_storage", "5.11")):
        c = caps.get(name, {})
        F.check(c.get("available") is False and version in c.get("detail", ""),
                f"doctor: {name} missing, naming Linux {version}", c.get("detail", "missing"))


def check_counting(args):
    smoke.Smoke(args.pmcprof, args.workloads, F).counting()


def check_cgroup_without_perf_state(args):
    """Before any controller is enabled at the root, 5.10 gives a new cgroup no perf_event
    state: the fd backend cannot count it, and says so in one line with a HINT (it printed
    <not supported> for every event before)."""
    with open("/sys/fs/cgroup/cgroup.subtree_control") as f:
        if f.read().strip():
            log("  skipped: a controller is already enabled at the root (run it first)")
            return
    path = "/sys/fs/cgroup/nocss"
    os.makedirs(path, exist_ok=True)
    try:
        r = pmcprof(args, "stat", "-a", "-G", "/nocss", "--cgroup-backend", "fd", "-e",
                    "task-clock", "--", "true")
    finally:
        os.rmdir(path)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    log(f"  exit {r.returncode}: {lines}")
    F.check(r.returncode == 1 and len(lines) == 2 and
            lines[0].startswith("pmcprof: cgroup /nocss: the kernel keeps no perf_event state for this cgroup") and
            lines[1].startswith("HINT: ") and "cgroup.subtree_control" in lines[1],
            "a cgroup without perf_event state: one line naming it, a HINT, exit 1",
            r.stderr[-500:])


def check_cgroups(args):
    smoke.Smoke(args.pmcprof, args.workloads, F).cgroups()


def check_serve(args):
    smoke.Smoke(args.pmcprof, args.workloads, F).serve(PORT)


def check_refused(args, what, extra):
    """Function mode is refused in one line naming the helper and the version, with a HINT."""
    r = pmcprof(args, "stat", "-e", "task-clock", *extra, "--", "true")
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    log(f"  {what}: exit {r.returncode}: {lines}")
    F.check(r.returncode not in (0,) and r.returncode > 0, f"{what}: refused (non-zero exit, "
            "no signal)", str(r.returncode))
    F.check(len(lines) == 2 and lines[0].startswith("pmcprof: ") and
            "bpf_get_attach_cookie" in lines[0] and "5.15" in lines[0] and
            lines[1].startswith("HINT: "), f"{what}: one line naming bpf_get_attach_cookie "
            "(Linux 5.15), and a HINT", r.stderr[-600:])


def pmcprof_left_in_kernel():
    """Names of BPF programs pmcprof loads that are still loaded, and kprobes still set."""
    left = []
    r = run(["bpftool", "-j", "prog", "show"])
    if r.returncode == 0:
        names = {"func_entry", "func_exit", "func_fentry", "func_fexit", "on_switch", "on_fork",
                 "on_exec", "on_task_exit", "syscall_entry", "syscall_exit", "probe_hit"}
        left += [p.get("name") for p in json.loads(r.stdout or "[]") if p.get("name") in names]
    try:
        with open("/sys/kernel/tracing/kprobe_events") as f:
            left += [x for x in f.read().splitlines() if x.strip()]
    except OSError:
        pass
    return left


def check_function_mode(args):
    wl = args.workloads
    usdt = f"usdt:{wl}/sdt_workload:pmcprof_test:"
    for what, extra in (
            ("a kernel function", ["--func", "vfs_read"]),
            ("a user function", ["--func", f"{wl}/func_workload:burn_cpu"]),
            ("a syscall", ["--func", "syscall:getppid"]),
            ("a USDT region", ["--region", f"r={usdt}work__start,{usdt}work__done"])):
        check_refused(args, what, extra)
    left = pmcprof_left_in_kernel()
    F.check(not left, "nothing of pmcprof left in the kernel", str(left))


def guest_main(args):
    log(f"== pmcprof on {os.uname().release}")
    for step in (check_doctor, check_counting, check_cgroup_without_perf_state, check_cgroups,
                 check_serve, check_function_mode):
        if args.only and args.only not in step.__name__:
            continue
        log(f"-- {step.__name__}")
        try:
            step(args)
        except Exception as e:  # noqa: BLE001  (a step that raises fails, the others still run)
            F.check(False, f"{step.__name__} ran", repr(e))
    return F.summary("pmcprof on Linux 5.10")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pmcprof", required=True)
    ap.add_argument("--workloads", required=True)
    ap.add_argument("--cache")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--in-guest", action="store_true")
    ap.add_argument("--only", help="run only the checks whose name contains this (in the guest)")
    args = ap.parse_args()
    if args.in_guest:
        return guest_main(args)
    if not args.cache:
        ap.error("--cache DIR is required")
    return guest.host_test(lambda: host_main(args))


if __name__ == "__main__":
    sys.exit(main())

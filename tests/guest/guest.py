#!/usr/bin/env python3
"""Boots Debian 12's own kernel under qemu (TCG) and runs a script in it as root.

Why: this machine's kernel has neither kprobes nor fentry; Debian's 6.1 kernel has both, and
boots in seconds under software emulation. The guest sees the host's root file system read-only
over 9p and chroots into it, so binaries built on the host run there unchanged.

    guest.py --cache DIR prepare                 fetch + cache kernel and initramfs, print paths
    guest.py --cache DIR run [--timeout S] -- CMD [ARG...]
                                                 boot, run CMD (host paths) as root in the
                                                 chroot, print its output, exit with its status

Library use (tests/guest/test_*.py): `prepare(cache)` then `run_in_guest(cache, argv, ...)`,
which returns a GuestResult(status, output, console, boot_s).

What it does, once per cache (under a lock, so concurrent tests share it):
  * `apt-get download` the kernel image package that linux-image-amd64 depends on (never
    installed), reads vmlinuz plus the 9p/virtio modules out of it with `dpkg-deb --fsys-tarfile`,
    and decompresses vmlinuz's xz payload into an ELF vmlinux (qemu boots it directly, skipping
    minutes of emulated decompression);
  * writes a newc initramfs (no cpio tool needed) with a static busybox and those modules.
Every boot:
  * `qemu-system-x86_64 -accel tcg -kernel vmlinux -initrd initramfs` with the host root shared
    read-only over 9p and a fresh host directory shared writable for the results;
  * the guest's /init loads the modules, mounts the shares, puts proc, sysfs, devtmpfs, tracefs,
    debugfs, bpffs, cgroup2 and a tmpfs /run (scratch: /run/tmp, TMPDIR) into the shared root, chroots into it and
    runs CMD with its output going both to the results share and to the serial console;
  * has a timeout: a hung guest is killed and reported with the tail of its console.
Exit 77 (skip) when qemu itself is missing or cannot start; any other failure is an error.
"""
import argparse
import fcntl
import hashlib
import io
import lzma
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time

EXIT_SKIP = 77
QEMU = "qemu-system-x86_64"
META_PACKAGE = "linux-image-amd64"
# insmod order: each after what it depends on (from TESTBED.md, checked against modinfo depends).
MODULES = ["virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
           "9pnet", "9pnet_virtio", "netfs", "fscache", "9p"]
XZ_MAGIC = b"\xfd7zXZ\x00"
HOST_TAG = "hostroot"
RESULTS_TAG = "results"
GUEST_RESULTS = "/run/guest-results"  # where the writable share appears inside the chroot


class GuestError(Exception):
    """Preparing or booting the guest failed (not the script in it)."""


class GuestSkip(Exception):
    """qemu cannot run here: the caller should skip (exit 77) with this reason."""


class GuestResult:
    def __init__(self, status, output, console, boot_s, timed_out=False):
        self.status = status      # the script's exit status; None when it never reported one
        self.output = output      # the script's stdout+stderr
        self.console = console    # the whole serial console (kernel messages, init, output)
        self.boot_s = boot_s      # seconds from qemu start to qemu exit
        self.timed_out = timed_out

    def console_tail(self, lines=40):
        return "\n".join(self.console.splitlines()[-lines:])


def log(msg):
    print(f"guest: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ qemu availability

def qemu_path():
    if "PMCPROF_GUEST_QEMU" in os.environ:  # another qemu (or a missing one, to test the skip)
        p = os.environ["PMCPROF_GUEST_QEMU"]
        return p if os.access(p, os.X_OK) else None
    return shutil.which(QEMU) or next(
        (p for p in ("/usr/bin/" + QEMU, "/usr/local/bin/" + QEMU) if os.access(p, os.X_OK)), None)


def check_qemu():
    """Raises GuestSkip when qemu is not installed or does not start."""
    path = qemu_path()
    if not path:
        raise GuestSkip(f"{QEMU} is not installed (Debian package qemu-system-x86)")
    try:
        r = subprocess.run([path, "-accel", "help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise GuestSkip(f"{path} does not start: {e}")
    if r.returncode != 0 or "tcg" not in r.stdout:
        raise GuestSkip(f"{path} does not start or lacks TCG: {(r.stdout + r.stderr).strip()[-300:]}")
    return path


# ------------------------------------------------------------------ kernel package

def run_cmd(argv, cwd=None, timeout=600):
    try:
        r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise GuestError(f"{argv[0]} is not installed")
    except subprocess.TimeoutExpired:
        raise GuestError(f"{' '.join(argv)} timed out after {timeout} s")
    return r


def kernel_package_name():
    """The versioned image package linux-image-amd64 depends on (e.g. linux-image-6.1.0-56-amd64)."""
    def depends():
        r = run_cmd(["apt-cache", "depends", "--no-recommends", "--no-suggests", META_PACKAGE])
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith("Depends:") and "linux-image-" in line:
                return line.split(":", 1)[1].strip().strip("<>")
        return None
    name = depends()
    if not name and os.geteuid() == 0:
        log("apt lists do not know linux-image-amd64; running apt-get update once")
        run_cmd(["apt-get", "update", "-qq"], timeout=600)
        name = depends()
    if not name:
        raise GuestError(f"apt-cache does not know {META_PACKAGE}'s image package "
                         "(run apt-get update; Debian's main archive must be in sources)")
    return name


def download_package(name, dest):
    """`apt-get download NAME` into dest; returns the .deb path. Never installs anything."""
    os.makedirs(dest, exist_ok=True)
    for old in os.listdir(dest):
        if old.endswith(".deb"):
            os.unlink(os.path.join(dest, old))
    # The _apt sandbox user cannot write to a root-only build dir; apt then downloads as root
    # with a warning. Make the directory world-writable for the download to avoid the noise.
    os.chmod(dest, 0o777)
    r = run_cmd(["apt-get", "download", "-q", name], cwd=dest, timeout=900)
    debs = [f for f in os.listdir(dest) if f.endswith(".deb")]
    if r.returncode != 0 or not debs:
        raise GuestError(f"apt-get download {name} failed: {(r.stdout + r.stderr).strip()[-500:]}")
    return os.path.join(dest, debs[0])


def xz_payload_to_elf(vmlinuz_bytes):
    """Decompresses the xz stream inside a bzImage; the result must be an ELF vmlinux."""
    start = 0
    while True:
        at = vmlinuz_bytes.find(XZ_MAGIC, start)
        if at < 0:
            raise GuestError("no xz payload in vmlinuz (magic \\xfd7zXZ\\x00 not found)")
        try:
            d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
            out = d.decompress(vmlinuz_bytes[at:])
            if out.startswith(b"\x7fELF"):
                return out
        except lzma.LZMAError:
            pass
        start = at + 1


def extract_kernel(deb, kdir):
    """Writes kdir/vmlinux, kdir/config and kdir/modules/NAME.ko from the kernel .deb."""
    os.makedirs(os.path.join(kdir, "modules"), exist_ok=True)
    wanted = {m + ".ko" for m in MODULES} | {m + ".ko.xz" for m in MODULES}
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
    vmlinuz = None
    found = {}
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for m in tar:
                if not m.isfile():
                    continue
                base = os.path.basename(m.name)
                if m.name.startswith("./boot/vmlinuz-"):
                    vmlinuz = tar.extractfile(m).read()
                elif m.name.startswith("./boot/config-"):
                    with open(os.path.join(kdir, "config"), "wb") as f:
                        f.write(tar.extractfile(m).read())
                elif base in wanted and "/kernel/" in m.name:
                    data = tar.extractfile(m).read()
                    name = base
                    if name.endswith(".xz"):
                        data, name = lzma.decompress(data), name[:-3]
                    found[name[:-3]] = True
                    with open(os.path.join(kdir, "modules", name), "wb") as f:
                        f.write(data)
    finally:
        proc.stdout.close()
        if proc.wait() != 0:
            raise GuestError(f"dpkg-deb --fsys-tarfile {deb} failed")
    if vmlinuz is None:
        raise GuestError(f"no boot/vmlinuz-* in {deb}")
    missing = [m for m in MODULES if m not in found]
    if missing:
        raise GuestError(f"modules missing from {deb}: {', '.join(missing)} (built in? then drop "
                         "them from MODULES)")
    elf = xz_payload_to_elf(vmlinuz)
    tmp = os.path.join(kdir, "vmlinux.tmp")
    with open(tmp, "wb") as f:
        f.write(elf)
    os.replace(tmp, os.path.join(kdir, "vmlinux"))


# ------------------------------------------------------------------ initramfs

INIT_SCRIPT = r"""#!/bin/busybox sh
/bin/busybox mkdir -p /bin /sbin /proc /sys /dev /host
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "guest-init: $*"; }
fail() { say "$*"; echo 1 > /proc/sys/kernel/sysrq; echo o > /proc/sysrq-trigger; sleep 5; poweroff -f; }
for m in __MODULES__; do
  insmod /lib/modules/$m.ko || fail "insmod $m failed"
done
O=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $O,ro __HOST_TAG__ /host || fail "mounting the host root over 9p failed"
H=/host
mount -t proc proc $H/proc
mount -t sysfs sysfs $H/sys
mount -t devtmpfs devtmpfs $H/dev
mount -t devpts devpts $H/dev/pts 2>/dev/null
mount -t tmpfs -o mode=755 tmpfs $H/run
mkdir -m 1777 $H/run/tmp
mount -t tmpfs -o mode=1777 tmpfs $H/dev/shm 2>/dev/null
mount -t tracefs tracefs $H/sys/kernel/tracing
mount -t debugfs debugfs $H/sys/kernel/debug
mount -t bpf bpf $H/sys/fs/bpf
mount -t cgroup2 cgroup2 $H/sys/fs/cgroup
mkdir -p $H__GUEST_RESULTS__
mount -t 9p -o $O __RESULTS_TAG__ $H__GUEST_RESULTS__ || fail "mounting the results share failed"
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
hostname pmcprof-guest
say "running"
set -o pipefail
chroot $H /bin/sh __GUEST_RESULTS__/cmd.sh 2>&1 | tee $H__GUEST_RESULTS__/output > /dev/console
echo $? > $H__GUEST_RESULTS__/status.tmp && mv $H__GUEST_RESULTS__/status.tmp $H__GUEST_RESULTS__/status
sync
umount $H__GUEST_RESULTS__
say "done"
poweroff -f
"""


def init_script():
    return (INIT_SCRIPT.replace("__MODULES__", " ".join(MODULES))
            .replace("__HOST_TAG__", HOST_TAG).replace("__RESULTS_TAG__", RESULTS_TAG)
            .replace("__GUEST_RESULTS__", GUEST_RESULTS))


def is_static_elf(path):
    """True for an ELF with no PT_INTERP program header (no dynamic loader needed)."""
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 16)
    except OSError:
        return False
    if not data.startswith(b"\x7fELF") or data[4] != 2:
        return False
    phoff = int.from_bytes(data[0x20:0x28], "little")
    phentsize = int.from_bytes(data[0x36:0x38], "little")
    phnum = int.from_bytes(data[0x38:0x3a], "little")
    for i in range(phnum):
        off = phoff + i * phentsize
        if int.from_bytes(data[off:off + 4], "little") == 3:  # PT_INTERP
            return False
    return True


def find_busybox(cache):
    """A static busybox: the host's (busybox-static), else one downloaded into the cache."""
    for p in ("/bin/busybox", "/usr/bin/busybox"):
        if is_static_elf(p):
            return p
    bdir = os.path.join(cache, "busybox")
    target = os.path.join(bdir, "busybox")
    if is_static_elf(target):
        return target
    log("no static busybox on the host; fetching busybox-static with apt-get download")
    deb = download_package("busybox-static", os.path.join(bdir, "deb"))
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
    with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
        for m in tar:
            if m.isfile() and m.name in ("./bin/busybox", "./usr/bin/busybox"):
                with open(target, "wb") as f:
                    f.write(tar.extractfile(m).read())
                os.chmod(target, 0o755)
    proc.stdout.close()
    proc.wait()
    shutil.rmtree(os.path.join(bdir, "deb"), ignore_errors=True)
    if not is_static_elf(target):
        raise GuestError("no static busybox: install busybox-static")
    return target


def newc_archive(entries):
    """A newc cpio archive. entries: (name, mode, data bytes or None[, (rdev major, minor)])."""
    out = io.BytesIO()

    def pad(n):
        out.write(b"\0" * ((4 - n % 4) % 4))

    ino = 1
    for name, mode, data, *rdev in entries + [("TRAILER!!!", 0, b"")]:
        data = data or b""
        major, minor = rdev[0] if rdev else (0, 0)
        nb = name.encode() + b"\0"
        nlink = 2 if stat.S_ISDIR(mode) else 1
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            ino, mode, 0, 0, nlink, 0, len(data), 0, 0, major, minor, len(nb), 0))
        out.write(hdr.encode() + nb)
        pad(110 + len(nb))
        out.write(data)
        pad(len(data))
        ino += 1
    return out.getvalue()


def build_initramfs(kdir, busybox, path):
    def read(p):
        with open(p, "rb") as f:
            return f.read()
    d, x, r = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o755, stat.S_IFREG | 0o644
    entries = [("bin", d, None), ("sbin", d, None), ("dev", d, None), ("proc", d, None),
               ("sys", d, None), ("host", d, None), ("lib", d, None), ("lib/modules", d, None),
               ("dev/console", stat.S_IFCHR | 0o600, None, (5, 1)),
               ("bin/busybox", x, read(busybox)), ("init", x, init_script().encode())]
    for m in MODULES:
        entries.append((f"lib/modules/{m}.ko", r, read(os.path.join(kdir, "modules", m + ".ko"))))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(newc_archive(entries))
    os.replace(tmp, path)


# ------------------------------------------------------------------ cache

class Prepared:
    def __init__(self, vmlinux, initramfs, package):
        self.vmlinux, self.initramfs, self.package = vmlinux, initramfs, package


def prepare(cache):
    """Returns Prepared(vmlinux, initramfs, package); fetches and builds only what is missing.
    Raises GuestSkip when qemu cannot run, GuestError when the kernel cannot be had."""
    check_qemu()
    cache = os.path.abspath(cache)
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # The package name pins the kernel: when the archive moves on, the next run fetches it.
        # Without apt lists (or offline), an already cached kernel is used as it is.
        try:
            package = kernel_package_name()
        except GuestError:
            cached = sorted(e for e in os.listdir(cache) if e.startswith("linux-image-"))
            if not cached:
                raise
            package = cached[-1]
        kdir = os.path.join(cache, package)
        vmlinux = os.path.join(kdir, "vmlinux")
        if not os.path.exists(vmlinux):
            t0 = time.monotonic()
            log(f"fetching {package} (apt-get download; not installed)")
            deb_dir = os.path.join(cache, "download")
            try:
                deb = download_package(package, deb_dir)
            except GuestError:
                if os.geteuid() != 0:
                    raise
                log("apt-get download failed; running apt-get update once and retrying")
                run_cmd(["apt-get", "update", "-qq"], timeout=600)
                deb = download_package(package, deb_dir)
            shutil.rmtree(os.path.join(kdir, "modules"), ignore_errors=True)
            extract_kernel(deb, kdir)
            shutil.rmtree(deb_dir, ignore_errors=True)
            for other in os.listdir(cache):  # older kernels: not needed any more
                if other.startswith("linux-image-") and other != package:
                    shutil.rmtree(os.path.join(cache, other), ignore_errors=True)
            log(f"kernel ready in {time.monotonic() - t0:.1f} s: {vmlinux}")
        for entry in os.listdir(cache):  # results dirs of runs killed hours ago
            path = os.path.join(cache, entry)
            if entry.startswith("run-") and time.time() - os.path.getmtime(path) > 6 * 3600:
                shutil.rmtree(path, ignore_errors=True)
        # Named by what it holds: a changed /init (or module list) builds a new one.
        digest = hashlib.sha256((init_script() + " ".join(MODULES)).encode()).hexdigest()[:12]
        initramfs = os.path.join(kdir, f"initramfs-{digest}.cpio")
        if not os.path.exists(initramfs):
            build_initramfs(kdir, find_busybox(cache), initramfs)
        return Prepared(vmlinux, initramfs, package)


# ------------------------------------------------------------------ boot

def die_with_parent():
    """In the qemu child: SIGKILL when the harness dies (say ctest kills it), so no emulator
    outlives its test."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass


def run_in_guest(cache, argv, timeout=120, cpus=2, memory_mb=2048, env=None, echo=False):
    """Boots the guest, runs argv (paths as on the host) as root in the chroot; GuestResult.
    Raises GuestSkip/GuestError when the guest cannot be prepared or qemu fails to start."""
    prep = prepare(cache)
    qemu = qemu_path()
    rundir = tempfile.mkdtemp(prefix="run-", dir=os.path.abspath(cache))
    os.chmod(rundir, 0o755)
    try:
        # The host's /tmp stays visible (read-only) in the guest: the checkout or build under
        # test may live there (CI clones anywhere). Scratch space is a tmpfs at /run/tmp.
        lines = ["cd /run/tmp", "export TMPDIR=/run/tmp",
                 "export HOME=/root LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1",
                 "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in (env or {}).items()]
        lines.append(f"exec {shlex.join(argv)}")
        with open(os.path.join(rundir, "cmd.sh"), "w") as f:
            f.write("\n".join(lines) + "\n")
        console_path = os.path.join(rundir, "console.log")
        # Single-threaded TCG: multi-threaded TCG was seen to stall a vCPU for minutes (guest
        # "soft lockup" in code that waits on the other CPU); one host thread runs both vCPUs.
        cmd = [qemu, "-accel", "tcg,thread=single", "-machine", "q35", "-cpu", "max",
               "-smp", str(cpus), "-m", str(memory_mb), "-nodefaults", "-no-reboot", "-display", "none",
               "-serial", "stdio", "-monitor", "none", "-nic", "none",
               "-kernel", prep.vmlinux, "-initrd", prep.initramfs,
               "-append", "console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init "
                          "nokaslr mitigations=off no_timer_check",
               "-virtfs", f"local,path=/,mount_tag={HOST_TAG},security_model=none,readonly=on,"
                          "multidevs=remap",
               "-virtfs", f"local,path={rundir},mount_tag={RESULTS_TAG},security_model=none"]
        t0 = time.monotonic()
        timed_out = False
        with open(console_path, "wb") as console:
            try:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=console,
                                        stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
            except OSError as e:
                raise GuestSkip(f"{qemu} cannot start: {e}")
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                proc.kill()
                proc.wait()
        boot_s = time.monotonic() - t0
        with open(console_path, "rb") as f:
            console_text = f.read().decode("utf-8", "replace").replace("\r\n", "\n")
        if echo:
            sys.stderr.write(console_text)
        status = None
        try:
            with open(os.path.join(rundir, "status")) as f:
                status = int(f.read().strip())
        except (OSError, ValueError):
            pass
        try:
            with open(os.path.join(rundir, "output"), "rb") as f:
                output = f.read().decode("utf-8", "replace")
        except OSError:
            output = ""
        if status is None and "guest-init: running" not in console_text and not timed_out \
                and boot_s < 5 and proc.returncode != 0:
            # qemu refused to start (bad option, no memory, ...): nothing ran in a guest.
            raise GuestSkip(f"{qemu} exited with {proc.returncode} at once: "
                            f"{console_text.strip()[-500:]}")
        return GuestResult(status, output, console_text, boot_s, timed_out)
    finally:
        shutil.rmtree(rundir, ignore_errors=True)


def describe_failure(result, timeout):
    """One paragraph for a guest that did not report a status: why, and its console tail."""
    why = (f"the guest did not finish within {timeout} s (killed)" if result.timed_out
           else "the guest stopped without reporting the script's exit status")
    return f"{why}; console tail:\n{result.console_tail()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", required=True, help="cache directory, e.g. build/guest-cache")
    sub = ap.add_subparsers(dest="what", required=True)
    sub.add_parser("prepare")
    r = sub.add_parser("run")
    r.add_argument("--timeout", type=float, default=120)
    r.add_argument("--cpus", type=int, default=2)
    r.add_argument("--console", action="store_true", help="print the whole console to stderr")
    r.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    try:
        if a.what == "prepare":
            p = prepare(a.cache)
            print(f"package {p.package}\nvmlinux {p.vmlinux}\ninitramfs {p.initramfs}")
            return 0
        argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
        if not argv:
            ap.error("run needs a command")
        res = run_in_guest(a.cache, argv, timeout=a.timeout, cpus=a.cpus, echo=a.console)
    except GuestSkip as e:
        print(f"skipped: {e}", flush=True)
        return EXIT_SKIP
    except GuestError as e:
        print(f"guest: error: {e}", file=sys.stderr, flush=True)
        return 2
    sys.stdout.write(res.output)
    log(f"qemu ran {res.boot_s:.1f} s")
    if res.status is None:
        print(f"guest: error: {describe_failure(res, a.timeout)}", file=sys.stderr, flush=True)
        return 2
    return res.status


if __name__ == "__main__":
    sys.exit(main())

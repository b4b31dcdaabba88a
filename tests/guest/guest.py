#!/usr/bin/env python3
"""Boots a Debian kernel under qemu (TCG) and runs a command in it as root: one harness for the
guest architectures the tests use.

  x86_64  Debian 12's own kernel (linux-image-amd64, 6.1) on qemu-system-x86_64: kprobes and
          fentry, which this machine's kernel lacks. The guest sees the host's root read-only over
          9p and chroots into it, so binaries built on the host run there unchanged.
  arm64   bookworm's 6.12 kernel (linux-image-6.12.N+deb12-arm64) on qemu-system-aarch64
          -M virt -cpu cortex-a57 -icount shift=0, one vCPU: a real PMU (the kernel's armv8_pmuv3
          driver on qemu's emulated PMUv3) whose instruction count is exact. The guest chroots
          into an arm64 root file system unpacked from Debian packages (dpkg -x), with the
          host's root mounted read-only at /host in it: cross-built binaries run from there
          (guest_path() maps a host path).

    guest.py [--arch A] --cache DIR prepare       fetch + cache kernel, initramfs (and rootfs)
    guest.py [--arch A] --cache DIR run [--timeout S] -- CMD [ARG...]
                                                  boot, run CMD as root in the chroot, print
                                                  its output, exit with its status
    guest.py --arch arm64 --cache DIR cross-build --source SRC --build DIR [TARGET...]
                                                  cross-build pmcprof (cmake/aarch64-linux-gnu.cmake)

Library use (tests/guest/test_*.py): `prepare(cache, arch)` then `run_in_guest(cache, argv, ...,
arch=...)`, which returns a GuestResult(status, output, console, boot_s, files): `files` holds
what the command wrote below $PMCPROF_GUEST_OUT (a writable share), read back on the host.

What it does, once per cache and architecture (under a lock, so concurrent tests share it):
  * downloads the kernel package with `apt-get download` (never installed): x86_64 the image
    package linux-image-amd64 depends on, with the host's apt configuration; arm64 through a
    private apt configuration (sources naming the host's Debian mirrors for arm64, its own lists
    and cache dirs under the cache: the machine's sources are never touched);
  * reads the kernel image plus the 9p/virtio modules out of it with `dpkg-deb --fsys-tarfile`
    (x86_64: decompresses vmlinuz's xz payload into an ELF vmlinux, which qemu boots directly,
    skipping minutes of emulated decompression; arm64: the Image is uncompressed already);
  * arm64: unpacks ROOTFS_PACKAGES (:arm64) with `dpkg -x` into rootfs-KEY, KEY a hash of the
    package versions, so a changed list or a new version builds a new one;
  * writes a newc initramfs (no cpio tool needed) with a static busybox and those modules, named
    by its content.
Every boot:
  * qemu -kernel -initrd, the root share read-only over 9p and a fresh host directory shared
    writable for the results;
  * the guest's /init loads the modules, mounts the shares, puts proc, sysfs, devtmpfs, tracefs,
    debugfs, bpffs, cgroup2 and a tmpfs /run (scratch: /run/tmp, TMPDIR) into the root, chroots
    into it and runs CMD with its output going both to the results share and to the serial console;
  * has a timeout: a hung guest is killed and reported with the tail of its console.
Exit 77 (skip) when qemu itself is missing or cannot start; any other failure is an error.
"""
import argparse
import fcntl
import hashlib
import io
import json
import lzma
import math
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

EXIT_SKIP = 77
XZ_MAGIC = b"\xfd7zXZ\x00"
ROOT_TAG = "hostroot"       # the guest's root: the host's / (x86_64) or the arm64 rootfs
HOSTFS_TAG = "hostfs"       # arm64: the host's / again, at /host in the rootfs
RESULTS_TAG = "results"
GUEST_RESULTS = "/run/guest-results"  # where the writable share appears inside the chroot
GUEST_OUT = GUEST_RESULTS + "/out"    # $PMCPROF_GUEST_OUT: files the host reads back
EM_X86_64, EM_AARCH64 = 62, 183       # ELF e_machine


class GuestError(Exception):
    """Preparing or booting the guest failed (not the script in it)."""


class GuestSkip(Exception):
    """qemu (or a cross tool) cannot run here: the caller should skip (exit 77) with this reason."""


class GuestResult:
    def __init__(self, status, output, console, boot_s, timed_out=False, files=None):
        self.status = status      # the script's exit status; None when it never reported one
        self.output = output      # the script's stdout+stderr
        self.console = console    # the whole serial console (kernel messages, init, output)
        self.boot_s = boot_s      # seconds from qemu start to qemu exit
        self.timed_out = timed_out
        self.files = files or {}  # name -> bytes: what the command left in $PMCPROF_GUEST_OUT

    def console_tail(self, lines=40):
        return "\n".join(self.console.splitlines()[-lines:])


def log(msg):
    print(f"guest: {msg}", file=sys.stderr, flush=True)


class Checks:
    """A guest test's checks: each logged as it is made, the failures listed at the end."""

    def __init__(self):
        self.checks = 0
        self.failed = []
        self.lock = threading.Lock()

    def check(self, ok, what, detail=""):
        with self.lock:
            self.checks += 1
            if ok:
                print(f"  ok: {what}", flush=True)
            else:
                self.failed.append(what)
                print(f"  FAIL: {what}" + (f": {detail}" if detail else ""), flush=True)
        return ok

    def summary(self, title, tail=""):
        """Prints the verdict; returns the exit status (0 pass, 1 fail)."""
        print(f"\n{title}: {self.checks - len(self.failed)} checks passed, {len(self.failed)} "
              f"failed{', ' + tail if tail else ''}", flush=True)
        for f in self.failed:
            print(f"  failed: {f}", flush=True)
        return 1 if self.failed else 0


def run_cmd(argv, cwd=None, timeout=600):
    try:
        r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise GuestError(f"{argv[0]} is not installed")
    except subprocess.TimeoutExpired:
        raise GuestError(f"{' '.join(argv)} timed out after {timeout} s")
    return r


# ------------------------------------------------------------------ apt: host or private

def debian_codename():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("VERSION_CODENAME="):
                    return line.split("=", 1)[1].strip().strip('"') or "bookworm"
    except OSError:
        pass
    return "bookworm"


def host_debian_sources():
    """(uri, suites, signed_by) of the host's Debian apt sources, one-line and deb822 style."""
    entries = []
    files = ["/etc/apt/sources.list"]
    parts = "/etc/apt/sources.list.d"
    if os.path.isdir(parts):
        files += sorted(os.path.join(parts, f) for f in os.listdir(parts)
                        if f.endswith((".list", ".sources")))
    for path in files:
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        if path.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                fields = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line:
                        continue
                    k, v = line.split(":", 1)
                    fields[k.strip().lower()] = v.strip()
                if "deb" in fields.get("types", "").split() and \
                        fields.get("enabled", "yes").lower() != "no":
                    for uri in fields.get("uris", "").split():
                        entries.append((uri, fields.get("suites", "").split(),
                                        fields.get("signed-by")))
        else:
            for line in text.splitlines():
                m = re.match(r"\s*deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
                if m:
                    sb = re.search(r"signed-by=(\S+?)[\s\]]", m.group(1) or "")
                    entries.append((m.group(2), [m.group(3)], sb.group(1) if sb else None))
    return [e for e in entries if "debian" in e[0]]


def private_sources_list(arch, release=None, point_release=False):
    """A sources.list for ARCH naming the host's Debian mirrors: the release, its updates and
    security suites as the host has them, plus the release's backports. RELEASE (a codename,
    e.g. bullseye): that release's suites on the same mirrors instead, without backports; with
    POINT_RELEASE, its main suite only."""
    code = debian_codename()
    lines, seen = [], set()
    for uri, suites, signed_by in host_debian_sources() or \
            [("http://deb.debian.org/debian", [code, code + "-updates"], None),
             ("http://deb.debian.org/debian-security", [code + "-security"], None)]:
        if release:
            suites = [release + s[len(code):] for s in suites
                      if s.startswith(code) and (s == code or not point_release)]
        elif code in suites:
            suites = suites + [code + "-backports"]
        opts = f"arch={arch}" + (f" signed-by={signed_by}" if signed_by else "")
        for s in suites:
            if (uri, s) not in seen:
                seen.add((uri, s))
                lines.append(f"deb [{opts}] {uri} {s} main")
    return "\n".join(lines) + "\n"


class Apt:
    """apt-get / apt-cache, with the host's configuration (root=None) or a private one for a
    foreign architecture in ROOT (sources.list, lists, cache: the machine's apt is untouched)."""

    def __init__(self, arch=None, root=None, release=None, point_release=False):
        self.arch, self.root, self.release = arch, root, release
        self.point_release = point_release
        self.opts = []
        if root:
            self.opts = ["-o", f"Dir::Etc::SourceList={root}/sources.list",
                         "-o", "Dir::Etc::SourceParts=-", "-o", f"Dir::State::Lists={root}/lists",
                         "-o", f"Dir::Cache={root}/cache", "-o", "Dir::State::status=/dev/null",
                         "-o", f"APT::Architecture={arch}", "-o", f"APT::Architectures={arch}",
                         "-o", "APT::Sandbox::User=root", "-o", "Debug::NoLocking=1"]

    def ready(self):
        """Private lists exist (host lists are the host's business)."""
        lists = os.path.join(self.root, "lists") if self.root else None
        return not lists or (os.path.isdir(lists) and
                             any("_Packages" in f for f in os.listdir(lists)))

    def update(self):
        if self.root:
            for d in ("lists/partial", "cache/archives/partial"):
                os.makedirs(os.path.join(self.root, d), exist_ok=True)
            with open(os.path.join(self.root, "sources.list"), "w") as f:
                f.write(private_sources_list(self.arch, self.release, self.point_release))
        elif os.geteuid() != 0:
            return
        log(f"apt-get update ({'private ' + self.arch + ' lists' if self.root else 'host'})")
        r = run_cmd(["apt-get", *self.opts, "update", "-qq"], timeout=600)
        if r.returncode != 0:
            raise GuestError(f"apt-get update failed: {(r.stdout + r.stderr).strip()[-500:]}")

    def ensure_lists(self):
        if not self.ready():
            self.update()

    def cache(self, *args):
        return run_cmd(["apt-cache", *self.opts, *args]).stdout

    def candidates(self, *names):
        """{name: the version apt would download, or None}, from one apt-cache call."""
        found, current = {}, None
        for line in self.cache("policy", *names).splitlines():
            if line and not line[0].isspace() and line.rstrip().endswith(":"):
                current = line.rstrip()[:-1].split(":")[0]  # "libc6:" or "libc6:arm64:"
            m = re.match(r"\s+Candidate:\s*(\S+)", line)
            if m and current and m.group(1) != "(none)":
                found[current] = m.group(1)
        return {n: found.get(n) for n in names}

    def closure(self, names):
        """NAMES and everything they depend on (Depends, Pre-Depends), each once, in order."""
        out = self.cache("depends", "--recurse", "--important", "--no-recommends",
                         "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
                         "--no-enhances", *names)
        found = [line.strip() for line in out.splitlines()
                 if line and not line[0].isspace() and not line.startswith("<")]
        return list(dict.fromkeys(found)) or list(names)

    def download(self, names, dest):
        """`apt-get download NAMES` into dest (emptied first); returns the .deb paths."""
        os.makedirs(dest, exist_ok=True)
        for old in os.listdir(dest):
            if old.endswith(".deb"):
                os.unlink(os.path.join(dest, old))
        # The _apt sandbox user cannot write to a root-only build dir; apt then downloads as
        # root with a warning. Make the directory world-writable for the download to avoid it.
        os.chmod(dest, 0o777)
        r = run_cmd(["apt-get", *self.opts, "download", "-q", *names], cwd=dest, timeout=900)
        debs = sorted(os.path.join(dest, f) for f in os.listdir(dest) if f.endswith(".deb"))
        if r.returncode != 0 or len(debs) < len(names):
            raise GuestError(f"apt-get download {' '.join(names)} failed: "
                             f"{(r.stdout + r.stderr).strip()[-500:]}")
        return debs

    def download_retrying(self, names, dest):
        """download(); on failure (lists older than the archive) one update and a retry."""
        try:
            return self.download(names, dest)
        except GuestError:
            if os.geteuid() != 0 and not self.root:
                raise
            log("apt-get download failed; updating the package lists once and retrying")
            self.update()
            return self.download(names, dest)


# ------------------------------------------------------------------ kernel package

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


def arm64_image(vmlinuz_bytes):
    """Debian's arm64 vmlinuz is an uncompressed Image (magic "ARM\\x64" at 0x38): as is."""
    if vmlinuz_bytes[0x38:0x3c] != b"ARM\x64":
        raise GuestError("boot/vmlinuz-* is not an uncompressed arm64 Image")
    return vmlinuz_bytes


def deb_members(deb):
    """Yields (tar member, file object) of the files in a .deb's data archive."""
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for m in tar:
                if m.isfile():
                    yield m, tar.extractfile(m)
    finally:
        proc.stdout.close()
        if proc.wait() != 0:
            raise GuestError(f"dpkg-deb --fsys-tarfile {deb} failed")


def extract_kernel(arch, deb, kdir):
    """Writes kdir/KERNEL_FILE, kdir/config and kdir/modules/NAME.ko from the kernel .deb."""
    os.makedirs(os.path.join(kdir, "modules"), exist_ok=True)
    wanted = {m + ".ko" for m in arch.modules} | {m + ".ko.xz" for m in arch.modules}
    vmlinuz = None
    found = {}
    for m, f in deb_members(deb):
        base = os.path.basename(m.name)
        if m.name.startswith("./boot/vmlinuz-"):
            vmlinuz = f.read()
        elif m.name.startswith("./boot/config-"):
            with open(os.path.join(kdir, "config"), "wb") as out:
                out.write(f.read())
        elif base in wanted and "/kernel/" in m.name:
            data, name = f.read(), base
            if name.endswith(".xz"):
                data, name = lzma.decompress(data), name[:-3]
            found[name[:-3]] = True
            with open(os.path.join(kdir, "modules", name), "wb") as out:
                out.write(data)
    if vmlinuz is None:
        raise GuestError(f"no boot/vmlinuz-* in {deb}")
    missing = [m for m in arch.modules if m not in found]
    if missing:
        raise GuestError(f"modules missing from {deb}: {', '.join(missing)} (built in? then drop "
                         "them from the architecture's modules)")
    tmp = os.path.join(kdir, arch.kernel_file + ".tmp")
    with open(tmp, "wb") as out:
        out.write(arch.boot_image(vmlinuz))
    os.replace(tmp, os.path.join(kdir, arch.kernel_file))


def x86_kernel_package(apt):
    """The versioned image package linux-image-amd64 depends on (e.g. linux-image-6.1.0-56-amd64)."""
    def depends():
        for line in apt.cache("depends", "--no-recommends", "--no-suggests",
                              "linux-image-amd64").splitlines():
            line = line.strip()
            if line.startswith("Depends:") and "linux-image-" in line:
                return line.split(":", 1)[1].strip().strip("<>")
        return None
    name = depends()
    if not name and os.geteuid() == 0:
        log("apt lists do not know linux-image-amd64; running apt-get update once")
        apt.update()
        name = depends()
    return name


def newest_kernel_package(prefix, pattern):
    """A kernel_package: the packages whose names start with PREFIX and match PATTERN (a regex
    whose group 1 is the number that orders them) that apt knows a version of, newest first."""
    rx = re.compile(pattern)

    def find(apt):
        apt.ensure_lists()
        names = [n for n in apt.cache("pkgnames", prefix).split() if rx.match(n)]
        names.sort(key=lambda n: int(rx.match(n).group(1)), reverse=True)
        available = apt.candidates(*names) if names else {}
        return [n for n in names if available[n]]
    return find


# The newest linux-image-6.12.N+deb12-arm64 (bookworm-backports, or -security once the release
# carries 6.12), not the -rt, -16k or -cloud flavour.
arm64_kernel_package = newest_kernel_package("linux-image-6.12.",
                                             r"^linux-image-6\.12\.(\d+)\+deb12-arm64$")


def bullseye_kernel_package(deb_arch):
    """A kernel_package for Debian 11's newest linux-image-5.10.0-N-DEB_ARCH (not -rt, -cloud)."""
    return newest_kernel_package("linux-image-5.10.0-",
                                 rf"^linux-image-5\.10\.0-(\d+)-{deb_arch}$")


# ------------------------------------------------------------------ architectures

class Arch:
    """What differs between the guest architectures; everything else is shared."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def apt(self, cache_dir):
        if not self.private_apt:
            return Apt()
        return Apt(self.deb_arch, os.path.join(cache_dir, "apt"), self.release)

    def kernel_apt(self, cache_dir):
        """The apt the kernel comes from: the architecture's own, or, with kernel_release, that
        release's suites (the root file system still from the architecture's)."""
        if not self.kernel_release:
            return self.apt(cache_dir)
        return Apt(self.deb_arch, os.path.join(cache_dir, "apt-" + self.kernel_release),
                   self.kernel_release, point_release=True)

    def guest_path(self, host_path):
        """Where a host path appears inside the guest's chroot."""
        p = os.path.abspath(host_path)
        return "/host" + p if self.rootfs_packages else p


X86_64 = Arch(
    name="x86_64", deb_arch="amd64", qemu="qemu-system-x86_64", qemu_package="qemu-system-x86",
    machine=["-machine", "q35", "-cpu", "max"], console="ttyS0",
    # preempt=full (Debian's 6.1 is PREEMPT_DYNAMIC): uprobe programs can then be preempted
    # mid-call, which the function-mode test's phase 4 needs.
    append="mitigations=off no_timer_check preempt=full", default_cpus=2, max_cpus=None,
    # insmod order: each after what it depends on (from TESTBED.md, checked against modinfo).
    modules=["virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev",
             "virtio_pci", "9pnet", "9pnet_virtio", "netfs", "fscache", "9p"],
    kernel_package=x86_kernel_package, kernel_file="vmlinux", boot_image=xz_payload_to_elf,
    elf_machine=EM_X86_64, private_apt=False, rootfs_packages=None, subdir="", release=None,
    kernel_release=None)

# Debian 11's 5.10 on the same machine and root as X86_64 (issue 19: the oldest kernel pmcprof
# supports, as Debian 11 and Amazon Linux 2 run it): no bpf_get_attach_cookie (5.15), no task
# local storage for tracing programs (5.11), no multi-probe links. Its kernel through a private
# apt configuration naming bullseye's suites on the host's mirrors. 5.10 is not PREEMPT_DYNAMIC
# (preempt= is ignored) and has neither netfs nor the split virtio_pci modules.
# Debian 11's 5.10 builds virtio and fscache as modules, on amd64 and arm64 alike.
BULLSEYE_MODULES = ["virtio_ring", "virtio", "virtio_pci", "9pnet", "9pnet_virtio", "fscache",
                    "9p"]
X86_64_510 = Arch(**{**X86_64.__dict__, **dict(
    name="x86_64-5.10", append="mitigations=off no_timer_check", modules=BULLSEYE_MODULES,
    kernel_package=bullseye_kernel_package("amd64"), private_apt=True, subdir="x86_64-5.10",
    release="bullseye")})

# The arm64 root file system: a static busybox and the run-time libraries of a cross-built
# pmcprof (with what they depend on, resolved by apt); libc-bin brings ldconfig (the guest builds
# /etc/ld.so.cache at boot, as a Debian system has one); jq for scripts/hw-check.
ROOTFS_PACKAGES = ["busybox-static", "libc6", "libc-bin", "libstdc++6", "libgcc-s1", "libbpf1",
                   "libelf1", "zlib1g", "libpfm4", "libmicrohttpd12", "libgnutls30",
                   "libyaml-cpp0.7", "libcrypt1", "libre2-9", "jq"]
ROOTFS_LAYOUT = "2"  # bump when finish_rootfs() changes what it adds

ARM64 = Arch(
    name="arm64", deb_arch="arm64", qemu="qemu-system-aarch64", qemu_package="qemu-system-arm",
    # icount shift=0: instructions exist and are exact (1 instruction = 1 ns = 1 cycle). One vCPU:
    # with two, qemu's instruction counter is shared and counts leak between them (TESTBED.md).
    machine=["-machine", "virt", "-cpu", "cortex-a57", "-icount", "shift=0"], console="ttyAMA0",
    append="", default_cpus=1, max_cpus=1,
    modules=["netfs", "9pnet", "9pnet_virtio", "9p"],  # virtio_pci is built in
    kernel_package=arm64_kernel_package, kernel_file="Image", boot_image=arm64_image,
    elf_machine=EM_AARCH64, private_apt=True, rootfs_packages=ROOTFS_PACKAGES, subdir="arm64",
    release=None, kernel_release=None)

# Debian 11's 5.10 on the same machine, PMU and root file system as ARM64 (issue 19): the
# kernel from bullseye's point release (its -security pool of arm64 kernels is not on every
# mirror: this machine's answers 404), the root file system (the cross-built pmcprof's
# libraries) from the host's release as ARM64's.
ARM64_510 = Arch(**{**ARM64.__dict__, **dict(
    name="arm64-5.10", modules=BULLSEYE_MODULES,
    kernel_package=bullseye_kernel_package("arm64"), subdir="arm64-5.10",
    kernel_release="bullseye")})

ARCHES = {"x86_64": X86_64, "amd64": X86_64, "x86_64-5.10": X86_64_510, "arm64": ARM64,
          "aarch64": ARM64, "arm64-5.10": ARM64_510}


def arch_of(arch):
    if isinstance(arch, Arch):
        return arch
    if arch not in ARCHES:
        raise GuestError(f"unknown guest architecture {arch!r} (one of {', '.join(sorted(ARCHES))})")
    return ARCHES[arch]


# ------------------------------------------------------------------ qemu availability

def qemu_path(arch):
    env = "PMCPROF_GUEST_QEMU" + ("" if arch.qemu == X86_64.qemu else "_" + arch.name.upper())
    if env in os.environ:  # another qemu (or a missing one, to test the skip)
        p = os.environ[env]
        return p if os.access(p, os.X_OK) else None
    return shutil.which(arch.qemu) or next(
        (p for p in ("/usr/bin/" + arch.qemu, "/usr/local/bin/" + arch.qemu)
         if os.access(p, os.X_OK)), None)


def check_qemu(arch):
    """Raises GuestSkip when qemu is not installed or does not start."""
    path = qemu_path(arch)
    if not path:
        raise GuestSkip(f"{arch.qemu} is not installed (Debian package {arch.qemu_package})")
    try:
        r = subprocess.run([path, "-accel", "help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise GuestSkip(f"{path} does not start: {e}")
    if r.returncode != 0 or "tcg" not in r.stdout:
        raise GuestSkip(f"{path} does not start or lacks TCG: {(r.stdout + r.stderr).strip()[-300:]}")
    return path


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
mount -t 9p -o $O,ro __ROOT_TAG__ /host || fail "mounting the root over 9p failed"
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
mkdir -p $H__GUEST_OUT__
__ROOTFS_SETUP__
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

# A root file system of unpacked packages (arm64): the host's root at /host, busybox's applets
# in /run/bin (on PATH), and /etc/ld.so.cache built by the guest's own ldconfig.
ROOTFS_SETUP = r"""mount -t 9p -o $O,ro __HOSTFS_TAG__ $H/host || fail "mounting the host root over 9p failed"
mkdir -p $H/run/bin
chroot $H /bin/busybox --install -s /run/bin
chroot $H /sbin/ldconfig -C /run/ld.so.cache && mount --bind $H/run/ld.so.cache $H/etc/ld.so.cache
"""


def init_script(arch):
    setup = ROOTFS_SETUP.replace("__HOSTFS_TAG__", HOSTFS_TAG) if arch.rootfs_packages else ""
    return (INIT_SCRIPT.replace("__ROOTFS_SETUP__", setup.rstrip("\n"))
            .replace("__MODULES__", " ".join(arch.modules))
            .replace("__ROOT_TAG__", ROOT_TAG).replace("__RESULTS_TAG__", RESULTS_TAG)
            .replace("__GUEST_RESULTS__", GUEST_RESULTS).replace("__GUEST_OUT__", GUEST_OUT))


def is_static_elf(path, machine=None):
    """True for a 64-bit ELF with no PT_INTERP program header (no dynamic loader needed), of
    e_machine MACHINE when given."""
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 16)
    except OSError:
        return False
    if not data.startswith(b"\x7fELF") or data[4] != 2:
        return False
    if machine is not None and int.from_bytes(data[0x12:0x14], "little") != machine:
        return False
    phoff = int.from_bytes(data[0x20:0x28], "little")
    phentsize = int.from_bytes(data[0x36:0x38], "little")
    phnum = int.from_bytes(data[0x38:0x3a], "little")
    for i in range(phnum):
        off = phoff + i * phentsize
        if int.from_bytes(data[off:off + 4], "little") == 3:  # PT_INTERP
            return False
    return True


def find_busybox(arch, cache_dir, rootfs=None):
    """A static busybox of the guest's architecture: the rootfs's, the host's (busybox-static),
    else one downloaded into the cache."""
    candidates = [os.path.join(rootfs, "bin/busybox")] if rootfs else []
    candidates += ["/bin/busybox", "/usr/bin/busybox"]
    for p in candidates:
        if is_static_elf(p, arch.elf_machine):
            return p
    bdir = os.path.join(cache_dir, "busybox")
    target = os.path.join(bdir, "busybox")
    if is_static_elf(target, arch.elf_machine):
        return target
    log(f"no static {arch.name} busybox; fetching busybox-static with apt-get download")
    deb = arch.apt(cache_dir).download_retrying(["busybox-static"], os.path.join(bdir, "deb"))[0]
    for m, f in deb_members(deb):
        if m.name in ("./bin/busybox", "./usr/bin/busybox"):
            with open(target, "wb") as out:
                out.write(f.read())
            os.chmod(target, 0o755)
    shutil.rmtree(os.path.join(bdir, "deb"), ignore_errors=True)
    if not is_static_elf(target, arch.elf_machine):
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


def build_initramfs(arch, kdir, busybox, path):
    def read(p):
        with open(p, "rb") as f:
            return f.read()
    d, x, r = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o755, stat.S_IFREG | 0o644
    entries = [("bin", d, None), ("sbin", d, None), ("dev", d, None), ("proc", d, None),
               ("sys", d, None), ("host", d, None), ("lib", d, None), ("lib/modules", d, None),
               ("dev/console", stat.S_IFCHR | 0o600, None, (5, 1)),
               ("bin/busybox", x, read(busybox)), ("init", x, init_script(arch).encode())]
    for m in arch.modules:
        entries.append((f"lib/modules/{m}.ko", r, read(os.path.join(kdir, "modules", m + ".ko"))))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(newc_archive(entries))
    os.replace(tmp, path)


# ------------------------------------------------------------------ arm64 root file system

def finish_rootfs(root):
    """What dpkg -x leaves out: mount points, /bin/sh, a placeholder for the guest-built
    /etc/ld.so.cache."""
    for d in ("proc", "sys", "dev", "run", "tmp", "host", "root", "etc"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    sh = os.path.join(root, "bin/sh")
    if not os.path.lexists(sh):
        os.symlink("busybox", sh)
    open(os.path.join(root, "etc/ld.so.cache"), "a").close()


def prepare_rootfs(arch, cache_dir, apt):
    """cache_dir/rootfs-KEY, unpacked from the architecture's ROOTFS packages; KEY hashes the
    package versions (and ROOTFS_LAYOUT). Without apt lists, a cached rootfs is used as it is."""
    versions = list(apt.candidates(*apt.closure(arch.rootfs_packages)).items())
    cached = sorted(e for e in os.listdir(cache_dir) if e.startswith("rootfs-"))
    if any(v is None for _, v in versions):
        if cached:
            return os.path.join(cache_dir, cached[-1])
        missing = [p for p, v in versions if v is None]
        raise GuestError(f"apt does not know {', '.join(missing)} for {arch.deb_arch}")
    spec = ROOTFS_LAYOUT + "\n" + "\n".join(f"{p}={v}" for p, v in versions)
    key = hashlib.sha256(spec.encode()).hexdigest()[:12]
    root = os.path.join(cache_dir, f"rootfs-{key}")
    if os.path.isdir(root):
        return root
    t0 = time.monotonic()
    log(f"building the {arch.name} rootfs from {len(versions)} packages (apt-get download, dpkg -x)")
    deb_dir = os.path.join(cache_dir, "download")
    debs = apt.download_retrying([f"{p}={v}" for p, v in versions], deb_dir)
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for deb in debs:
        r = run_cmd(["dpkg", "-x", deb, tmp])
        if r.returncode != 0:
            raise GuestError(f"dpkg -x {deb} failed: {r.stderr.strip()[-300:]}")
    finish_rootfs(tmp)
    with open(os.path.join(tmp, "PACKAGES"), "w") as f:
        f.write(spec + "\n")
    os.replace(tmp, root)
    shutil.rmtree(deb_dir, ignore_errors=True)
    for other in cached:  # older package sets: not needed any more
        shutil.rmtree(os.path.join(cache_dir, other), ignore_errors=True)
    log(f"rootfs ready in {time.monotonic() - t0:.1f} s: {root}")
    return root


# ------------------------------------------------------------------ cache

class Prepared:
    def __init__(self, arch, kernel, initramfs, package, rootfs=None):
        self.arch, self.kernel, self.initramfs, self.package = arch, kernel, initramfs, package
        self.rootfs = rootfs  # None: the guest's root is the host's /

    @property
    def vmlinux(self):
        return self.kernel


def prepare_kernel(arch, cache_dir, apt):
    """cache_dir/PACKAGE/KERNEL_FILE (+ modules), fetched when missing. The package name pins
    the kernel. Of the packages the architecture's kernel_package offers (one name, or a list,
    newest first), a cached one is used; else the newest the mirror serves is fetched (the
    security pool of bullseye's arm64 kernels is not on every mirror: 404, the next older).
    Without apt lists (or offline), an already cached kernel is used as it is."""
    try:
        found = arch.kernel_package(apt)
    except GuestError:
        found = None
    packages = [found] if isinstance(found, str) else list(found or [])
    # Offline (apt knows none): the newest cached kernel.
    candidates = packages or sorted(e for e in os.listdir(cache_dir)
                                    if e.startswith("linux-image-"))[-1:]
    if not candidates:
        raise GuestError(f"apt does not know the {arch.name} kernel package (run apt-get "
                         "update; Debian's main archive must be in sources)")
    for package in candidates:
        kdir = os.path.join(cache_dir, package)
        kernel = os.path.join(kdir, arch.kernel_file)
        if os.path.exists(kernel):
            return package, kdir, kernel
    t0 = time.monotonic()
    deb_dir = os.path.join(cache_dir, "download")
    deb, failures = None, []
    for i, package in enumerate(packages):
        log(f"fetching {package} (apt-get download; not installed)")
        try:
            deb = (apt.download_retrying if i == 0 else apt.download)([package], deb_dir)[0]
            break
        except GuestError as e:
            failures.append(f"{package}: {str(e).strip().splitlines()[-1][:200]}")
    if deb is None:
        raise GuestError(f"no {arch.name} kernel package could be downloaded: "
                         + "; ".join(failures[:3]))
    kdir = os.path.join(cache_dir, package)
    kernel = os.path.join(kdir, arch.kernel_file)
    shutil.rmtree(os.path.join(kdir, "modules"), ignore_errors=True)
    extract_kernel(arch, deb, kdir)
    shutil.rmtree(deb_dir, ignore_errors=True)
    for other in os.listdir(cache_dir):  # older kernels: not needed any more
        if other.startswith("linux-image-") and other != package:
            shutil.rmtree(os.path.join(cache_dir, other), ignore_errors=True)
    log(f"kernel ready in {time.monotonic() - t0:.1f} s: {kernel}")
    return package, kdir, kernel


def arch_cache(cache, arch):
    d = os.path.join(os.path.abspath(cache), arch.subdir)
    os.makedirs(d, exist_ok=True)
    return d


def prepare(cache, arch=X86_64):
    """Returns Prepared(arch, kernel, initramfs, package, rootfs); fetches and builds only what
    is missing. Raises GuestSkip when qemu cannot run, GuestError when the kernel cannot be had."""
    arch = arch_of(arch)
    check_qemu(arch)
    cache_dir = arch_cache(cache, arch)
    with open(os.path.join(cache_dir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        apt = arch.apt(cache_dir)
        package, kdir, kernel = prepare_kernel(arch, cache_dir, arch.kernel_apt(cache_dir))
        rootfs = None
        if arch.rootfs_packages:
            apt.ensure_lists()  # (the kernel's apt may be another: kernel_release)
            rootfs = prepare_rootfs(arch, cache_dir, apt)
        for entry in os.listdir(cache_dir):  # results dirs of runs killed hours ago
            path = os.path.join(cache_dir, entry)
            if entry.startswith("run-") and time.time() - os.path.getmtime(path) > 6 * 3600:
                shutil.rmtree(path, ignore_errors=True)
        # Named by what it holds: a changed /init, module list or busybox builds a new one.
        busybox = find_busybox(arch, cache_dir, rootfs)
        with open(busybox, "rb") as f:
            bb_digest = hashlib.sha256(f.read()).hexdigest()
        digest = hashlib.sha256((init_script(arch) + " ".join(arch.modules) + bb_digest)
                                .encode()).hexdigest()[:12]
        initramfs = os.path.join(kdir, f"initramfs-{digest}.cpio")
        if not os.path.exists(initramfs):
            build_initramfs(arch, kdir, busybox, initramfs)
        return Prepared(arch, kernel, initramfs, package, rootfs)


# ------------------------------------------------------------------ cross build

CROSS_TOOLCHAIN = "cmake/aarch64-linux-gnu.cmake"
# arm64 build dependencies that cannot be installed beside their amd64 versions (the -dev package
# is not multi-arch: installing libyaml-cpp-dev:arm64 removes libyaml-cpp-dev): unpacked with
# dpkg -x into BUILD/extra-root, which the toolchain file adds to pkg-config's search.
CROSS_EXTRA_PACKAGES = ["libyaml-cpp-dev", "libyaml-cpp0.7"]


def unpack_with_pc_files(debs, root):
    """dpkg -x DEBS into ROOT; pkg-config files rewritten to point into ROOT (prefix=/usr ->
    prefix=ROOT/usr)."""
    for deb in debs:
        r = run_cmd(["dpkg", "-x", deb, root])
        if r.returncode != 0:
            raise GuestError(f"dpkg -x {deb} failed: {r.stderr.strip()[-300:]}")
    for dirpath, _, names in os.walk(root):
        for n in names:
            if n.endswith(".pc"):
                path = os.path.join(dirpath, n)
                with open(path) as f:
                    text = f.read()
                with open(path, "w") as f:
                    f.write(re.sub(r"^prefix=/usr$", f"prefix={root}/usr", text, flags=re.M))


def cross_extra_root(cache, build):
    """BUILD/extra-root holding CROSS_EXTRA_PACKAGES for arm64 (fetched once per version set
    through the arm64 guest's private apt configuration)."""
    cache_dir = arch_cache(cache, ARM64)
    root = os.path.join(build, "extra-root")
    with open(os.path.join(cache_dir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        apt = ARM64.apt(cache_dir)
        apt.ensure_lists()
        versions = apt.candidates(*CROSS_EXTRA_PACKAGES)
        spec = "\n".join(f"{p}={v}" for p, v in versions.items())
        stamp = os.path.join(root, "PACKAGES")
        try:
            with open(stamp) as f:
                if f.read() == spec or None in versions.values():
                    return root  # up to date, or apt knows nothing now: keep what is there
        except OSError:
            if None in versions.values():
                raise GuestError(f"apt does not know {', '.join(CROSS_EXTRA_PACKAGES)} for arm64")
        debs = apt.download_retrying([f"{p}={v}" for p, v in versions.items()],
                                     os.path.join(cache_dir, "download-cross"))
        shutil.rmtree(root, ignore_errors=True)
        unpack_with_pc_files(debs, root)
        shutil.rmtree(os.path.join(cache_dir, "download-cross"), ignore_errors=True)
        with open(stamp, "w") as f:
            f.write(spec)
        return root


def cross_build(source, build, cache, targets=("pmcprof",)):
    """Cross-builds TARGETS for arm64 from the source tree into BUILD (incremental: a second
    call rebuilds only what changed). -O1 without debug information: the guest tests need the
    code, not symbols, and it compiles 3-4x faster than -O2 -g. Raises GuestSkip when the cross
    compiler is missing."""
    gxx = "aarch64-linux-gnu-g++"
    if not shutil.which(gxx):
        raise GuestSkip(f"{gxx} is not installed (scripts/install-deps.sh installs "
                        "g++-aarch64-linux-gnu and the :arm64 -dev packages)")
    source, build = os.path.abspath(source), os.path.abspath(build)
    os.makedirs(build, exist_ok=True)
    # Two arm64 tests (ctest -j) share one cross-build directory: one builds at a time.
    with open(os.path.join(build, ".cross-build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _cross_build(source, build, cache, targets)


def _cross_build(source, build, cache, targets):
    t0 = time.monotonic()
    extra = cross_extra_root(cache, build)
    config = [f"-DCMAKE_TOOLCHAIN_FILE={os.path.join(source, CROSS_TOOLCHAIN)}",
              f"-DPMCPROF_ARM64_EXTRA_ROOT={extra}",
              "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG",
              "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG", "-DPMCPROF_BUILD_TESTS=ON"]
    # Configured when new or when these settings changed; otherwise `cmake --build` re-runs the
    # configuration itself when a CMakeLists.txt changed.
    stamp = os.path.join(build, "pmcprof-cross-config")
    try:
        with open(stamp) as f:
            configured = f.read() == "\n".join(config)
    except OSError:
        configured = False
    if not configured:
        r = run_cmd(["cmake", "-S", source, "-B", build, *config], timeout=600)
        if r.returncode != 0:
            raise GuestError(f"configuring the arm64 cross build in {build} failed:\n"
                             f"{(r.stdout + r.stderr).strip()[-2000:]}")
        with open(stamp, "w") as f:
            f.write("\n".join(config))
    r = run_cmd(["cmake", "--build", build, "-j2", "--target", *targets], timeout=1800)
    if r.returncode != 0:
        raise GuestError(f"the arm64 cross build failed:\n{(r.stdout + r.stderr).strip()[-3000:]}")
    log(f"arm64 cross build ({' '.join(targets)}) up to date in {time.monotonic() - t0:.1f} s")
    return build


# ------------------------------------------------------------------ the instruction oracle

ORACLE_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "oracle", "insn_oracle.c")
PLUGIN_HEADER = "include/qemu/qemu-plugin.h"


def qemu_source_version():
    """The Debian source version of the installed qemu-system-arm (e.g. 1:7.2+dfsg-7+deb12u18),
    or None."""
    r = run_cmd(["dpkg-query", "-W", "-f", "${source:Version}", "qemu-system-arm"])
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def private_source_list():
    """A sources.list of deb-src lines for the host's Debian release suites (the same mirrors)."""
    code = debian_codename()
    lines = []
    for uri, suites, signed_by in host_debian_sources() or \
            [("http://deb.debian.org/debian", [code, code + "-updates"], None),
             ("http://deb.debian.org/debian-security", [code + "-security"], None)]:
        opts = f" [signed-by={signed_by}]" if signed_by else ""
        for s in suites:
            if s.startswith(code):
                line = f"deb-src{opts} {uri} {s} main"
                if line not in lines:
                    lines.append(line)
    return "\n".join(lines) + "\n"


def fetch_plugin_header(odir):
    """ODIR/qemu-plugin.h from Debian's qemu source package (the installed qemu's version when
    the archive still has it): apt-get source --download-only through a private sources list,
    lists and cache (the machine's apt configuration is untouched); only the header is kept."""
    header = os.path.join(odir, "qemu-plugin.h")
    if os.path.exists(header):
        return header
    t0 = time.monotonic()
    apt_root = os.path.join(odir, "apt")
    for d in ("lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(apt_root, d), exist_ok=True)
    sources = os.path.join(apt_root, "sources.list")
    with open(sources, "w") as f:
        f.write(private_source_list())
    opts = ["-o", f"Dir::Etc::SourceList={sources}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={apt_root}/lists", "-o", f"Dir::Cache={apt_root}/cache",
            "-o", "Dir::State::status=/dev/null", "-o", "APT::Sandbox::User=root",
            "-o", "Debug::NoLocking=1"]
    log("fetching qemu's source package for include/qemu/qemu-plugin.h (apt-get source "
        "--download-only, private deb-src lists)")
    r = run_cmd(["apt-get", *opts, "update", "-qq"], timeout=600)
    if r.returncode != 0:
        raise GuestError(f"apt-get update (deb-src) failed: {(r.stdout + r.stderr).strip()[-500:]}")
    dl = os.path.join(odir, "download")
    shutil.rmtree(dl, ignore_errors=True)
    os.makedirs(dl)
    version = qemu_source_version()
    for spec in ([f"qemu={version}"] if version else []) + ["qemu"]:
        r = run_cmd(["apt-get", *opts, "source", "--download-only", "-q", spec], cwd=dl,
                    timeout=900)
        if r.returncode == 0:
            break
    if r.returncode != 0:
        raise GuestError(f"apt-get source --download-only qemu failed: "
                         f"{(r.stdout + r.stderr).strip()[-500:]}")
    tars = [f for f in os.listdir(dl) if re.match(r"qemu_.*\.orig\.tar\.(xz|gz|bz2)$", f)]
    if not tars:
        raise GuestError(f"no qemu_*.orig.tar.* among {sorted(os.listdir(dl))}")
    found = None
    with tarfile.open(os.path.join(dl, tars[0])) as tar:
        for m in tar:
            if m.isfile() and m.name.endswith("/" + PLUGIN_HEADER):
                with open(header + ".tmp", "wb") as out:
                    out.write(tar.extractfile(m).read())
                found = m.name
                break
    if not found:
        raise GuestError(f"{tars[0]} has no {PLUGIN_HEADER}")
    os.replace(header + ".tmp", header)
    with open(os.path.join(odir, "SOURCE"), "w") as f:
        f.write(f"{tars[0]}: {found}\n")
    shutil.rmtree(dl, ignore_errors=True)
    shutil.rmtree(os.path.join(apt_root, "lists"), ignore_errors=True)  # 20 MB of Sources
    log(f"qemu-plugin.h ready in {time.monotonic() - t0:.1f} s (from {tars[0]})")
    return header


def prepare_oracle(cache, source=ORACLE_SOURCE):
    """Builds the instruction oracle, a qemu TCG plugin (tests/guest/oracle/insn_oracle.c), against
    the installed qemu's plugin header; returns the .so path (CACHE/oracle/insn_oracle-HASH.so,
    HASH of the source and the header: rebuilt only when either changes). Raises GuestSkip when
    the host has no C compiler."""
    cc = os.environ.get("CC", "gcc")
    if not shutil.which(cc):
        raise GuestSkip(f"{cc} is not installed: the instruction oracle is a qemu plugin built on "
                        "the host")
    odir = os.path.join(os.path.abspath(cache), "oracle")
    os.makedirs(odir, exist_ok=True)
    with open(os.path.join(odir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        header = fetch_plugin_header(odir)
        with open(source, "rb") as f, open(header, "rb") as h:
            digest = hashlib.sha256(f.read() + h.read()).hexdigest()[:12]
        so = os.path.join(odir, f"insn_oracle-{digest}.so")
        if os.path.exists(so):
            return so
        r = run_cmd([cc, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-I", odir, "-o",
                     so + ".tmp", source, "-lpthread"])
        if r.returncode != 0:
            raise GuestError(f"building the instruction oracle failed:\n"
                             f"{(r.stdout + r.stderr).strip()[-2000:]}")
        os.replace(so + ".tmp", so)
        for old in os.listdir(odir):
            if old.startswith("insn_oracle-") and old.endswith(".so") and \
                    os.path.join(odir, old) != so:
                os.unlink(os.path.join(odir, old))
        log(f"instruction oracle built: {so}")
        return so


def oracle_plugin(so, functions, out, count=(), list_cap=None):
    """The `-plugin` argument for the oracle: FUNCTIONS {name: (start, end)} watched, COUNT
    [(lo, hi)] the address ranges counted, the report written to the host path OUT."""
    args = [f"file={so}", f"out={out}"]
    args += [f"fn={name}:{start:#x}:{end:#x}" for name, (start, end) in functions.items()]
    args += [f"count={lo:#x}:{hi:#x}" for lo, hi in count]
    if list_cap is not None:
        args.append(f"list={list_cap}")
    return ",".join(a.replace(",", ",,") for a in args)  # qemu's option syntax escapes ','


def elf_functions(path):
    """{name: (start, end)} of the FUNC symbols of a 64-bit little-endian ELF's .symtab (with a
    size), and the executable PT_LOAD ranges [(lo, hi)]: what the oracle needs, without tools."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise GuestError(f"{path} is not a 64-bit little-endian ELF")
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    text = []
    for i in range(phnum):
        p_type, p_flags, _, p_vaddr, _, _, p_memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_flags & 1:  # PT_LOAD, PF_X
            text.append((p_vaddr, p_vaddr + p_memsz))
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    funcs = {}
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], sh[9] or 24):
            st_name, st_info, _, st_shndx, st_value, st_size = struct.unpack_from(
                "<IBBHQQ", data, off)
            if st_info & 0xf == 2 and st_size and st_shndx:  # STT_FUNC, defined
                s = strtab[4] + st_name
                name = data[s:data.index(b"\0", s)].decode()
                funcs.setdefault(name, (st_value, st_value + st_size))
    return funcs, text


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


def read_files(top):
    files = {}
    for dirpath, _, names in os.walk(top):
        for n in names:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as f:
                files[os.path.relpath(p, top)] = f.read()
    return files


def qemu_command(prep, qemu, rundir, cpus, memory_mb, plugin=None):
    """PLUGIN: a TCG plugin's -plugin argument (file=SO[,ARG=VALUE...], see oracle_plugin())."""
    arch = prep.arch
    # Single-threaded TCG: multi-threaded TCG was seen to stall a vCPU for minutes (guest
    # "soft lockup" in code that waits on the other CPU); one host thread runs every vCPU.
    cmd = [qemu, "-accel", "tcg,thread=single", *arch.machine,
           "-smp", str(cpus), "-m", str(memory_mb), "-nodefaults", "-no-reboot", "-display", "none",
           "-serial", "stdio", "-monitor", "none", "-nic", "none",
           "-kernel", prep.kernel, "-initrd", prep.initramfs,
           "-append", f"console={arch.console} quiet loglevel=4 panic=-1 rdinit=/init nokaslr "
                      f"{arch.append}".strip(),
           "-virtfs", f"local,path={prep.rootfs or '/'},mount_tag={ROOT_TAG},"
                      "security_model=none,readonly=on,multidevs=remap",
           "-virtfs", f"local,path={rundir},mount_tag={RESULTS_TAG},security_model=none"]
    if prep.rootfs:
        cmd += ["-virtfs", f"local,path=/,mount_tag={HOSTFS_TAG},security_model=none,"
                           "readonly=on,multidevs=remap"]
    if plugin:
        cmd += ["-plugin", plugin]
    return cmd


def run_in_guest(cache, argv, timeout=120, cpus=None, memory_mb=2048, env=None, echo=False,
                 arch=X86_64, plugin=None):
    """Boots the guest, runs argv (paths as in the guest: arch.guest_path()) as root in the
    chroot; GuestResult. PLUGIN: a qemu TCG plugin to load (its -plugin argument, e.g.
    oracle_plugin()); it sees the whole boot. Raises GuestSkip/GuestError when the guest cannot
    be prepared or qemu fails to start."""
    arch = arch_of(arch)
    cpus = cpus or arch.default_cpus
    if arch.max_cpus and cpus > arch.max_cpus:
        raise GuestError(f"the {arch.name} guest runs {arch.max_cpus} vCPU(s) at most")
    prep = prepare(cache, arch)
    qemu = qemu_path(arch)
    rundir = tempfile.mkdtemp(prefix="run-", dir=arch_cache(cache, arch))
    os.chmod(rundir, 0o755)
    try:
        # The host's /tmp stays visible (read-only) in the guest: the checkout or build under
        # test may live there (CI clones anywhere). Scratch space is a tmpfs at /run/tmp.
        lines = ["cd /run/tmp", "export TMPDIR=/run/tmp",
                 f"export HOME=/root LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PMCPROF_GUEST_OUT={GUEST_OUT}",
                 "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/run/bin"]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in (env or {}).items()]
        lines.append(f"exec {shlex.join(argv)}")
        with open(os.path.join(rundir, "cmd.sh"), "w") as f:
            f.write("\n".join(lines) + "\n")
        console_path = os.path.join(rundir, "console.log")
        cmd = qemu_command(prep, qemu, rundir, cpus, memory_mb, plugin)
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
        files = read_files(os.path.join(rundir, "out"))
        return GuestResult(status, output, console_text, boot_s, timed_out, files)
    finally:
        shutil.rmtree(rundir, ignore_errors=True)


def run_test_boot(cache, argv, timeout, arch=X86_64, cpus=None, plugin=None):
    """run_in_guest() for a test: the emulator itself sometimes stalls a vCPU (the guest kernel
    then reports "soft lockup" long before anything of the test runs slowly on a real machine).
    Such a boot gets one more try, shown in the log; any other failure, or a second stall, is
    the caller's to report. TIMEOUT is split between the attempts."""
    attempts = 2
    per_attempt = timeout / attempts
    for attempt in range(1, attempts + 1):
        res = run_in_guest(cache, argv, timeout=per_attempt, cpus=cpus, arch=arch, plugin=plugin)
        stalled = res.status is None and ("soft lockup" in res.console or
                                          "blocked for more than" in res.console)
        if not stalled or attempt == attempts:
            return res
        print(f"guest attempt {attempt}: the emulator stalled (soft lockup) and the run timed "
              f"out after {per_attempt:.0f} s; console tail:\n{res.console[-1500:]}\nretrying once",
              flush=True)


def build_static_arm64(src, exe, flags=()):
    """A static arm64 workload EXE from the single C file SRC (aarch64-linux-gnu-gcc -O1, with
    FLAGS), rebuilt only when the source is newer. Returns EXE."""
    if os.path.exists(exe) and os.path.getmtime(exe) >= os.path.getmtime(src):
        return exe
    os.makedirs(os.path.dirname(exe), exist_ok=True)
    cmd = ["aarch64-linux-gnu-gcc", "-O1", "-Wall", "-Wextra", "-static", *flags, "-o",
           exe + ".tmp", src]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise GuestError(f"{' '.join(cmd)} failed:\n{(r.stdout + r.stderr).strip()[-2000:]}")
    os.replace(exe + ".tmp", exe)
    return exe


def function_row(rep, name):
    """The row of function NAME (its full name, or SYMBOL of a PATH:SYMBOL) in a pmcprof JSON
    report, or None."""
    for f in (rep or {}).get("functions", []):
        if f.get("function") == name or f.get("function", "").endswith(":" + name):
            return f
    return None


def event_of(row, event="instructions:u"):
    """EVENT's figures in a function row ({} when absent)."""
    return (row or {}).get("events", {}).get(event, {})


def nearest_rank(values, q):
    """The nearest-rank q-quantile of VALUES (as pmcprof's percentiles rank calls)."""
    s = sorted(values)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def arm64_test_args(doc, timeout, timeout_help):
    """The arguments every arm64 guest test takes (ctest passes them; tests/CMakeLists.txt):
    add a test's own, then parse_args()."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--cache", required=True, help="guest cache directory (build/guest-cache)")
    ap.add_argument("--source", default=os.path.join(here, "..", ".."), help="source tree")
    ap.add_argument("--cross-build", required=True, help="arm64 build directory (build/arm64)")
    ap.add_argument("--pmcprof", help="ignored: the guest runs the cross-built pmcprof")
    ap.add_argument("--timeout", type=float, default=timeout, help=timeout_help)
    return ap


def run_arm64_test(args, host_main, host_cc=True):
    """An arm64 guest test's main: skipped (exit 77, the reason printed) unless qemu-system-aarch64
    and the cross compilers are here (and the host's gcc, which builds the oracle plugin, when
    HOST_CC); else host_test(host_main(args))."""
    sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
    import pmcprof_testlib as t  # noqa: E402  (the requirements every test declares)
    t.exit_unless("qemu:aarch64", "program:aarch64-linux-gnu-g++", "program:aarch64-linux-gnu-gcc",
                  *(["program:gcc"] if host_cc else []))
    return host_test(lambda: host_main(args))


def hw_check_script(source, build):
    """Shell lines that run scripts/hw-check in an arm64 guest on the cross-built pmcprof and
    hw_workload, leaving its output (hw.out), exit status (hw.rc) and table in the results."""
    gp = ARM64.guest_path
    return (
        # Exact, repeatable user-mode counts (tests/guest/README.md): no address randomisation.
        "echo 0 > /proc/sys/kernel/randomize_va_space\n"
        f"sh {gp(os.path.join(source, 'scripts/hw-check'))} "
        f"--pmcprof {gp(os.path.join(build, 'pmcprof'))} "
        f"--workload {gp(os.path.join(build, 'workloads/hw_workload'))} "
        "--keep /run/tmp/hw > $PMCPROF_GUEST_OUT/hw.out 2>&1\n"
        "echo $? > $PMCPROF_GUEST_OUT/hw.rc\n"
        "cp /run/tmp/hw/table $PMCPROF_GUEST_OUT/table 2>/dev/null\n")


def check_hw_check(checks, res, must_run, must_skip):
    """What hw_check_script() left in RES: exit 0, its table kept with no FAIL row, every row
    whose name starts with one of MUST_RUN ran and held, every row starting with a key of
    MUST_SKIP was skipped, its reason holding that key's text."""
    out = res.files.get("hw.out", b"").decode("utf-8", "replace")
    print(out, flush=True)
    checks.check(res.files.get("hw.rc", b"").strip() == b"0", "hw-check exited 0",
                 res.files.get("hw.rc", b"(no status)").decode().strip())
    rows = [line.split("\t") for line in
            res.files.get("table", b"").decode("utf-8", "replace").splitlines()]
    # (check, result, why) of each row of its table: CHECK EXPECTED MEASURED RESULT [WHY]
    rows = [(r[0], r[3], r[4] if len(r) > 4 else "") for r in rows if len(r) >= 4]
    checks.check(rows, "hw-check kept its table", out[-800:])
    checks.check(all(r != "FAIL" for _, r, _ in rows), "hw-check: no FAIL row",
                 "; ".join(c for c, r, _ in rows if r == "FAIL"))
    for want in must_run:
        ran = [r for c, r, _ in rows if c.startswith(want)]
        checks.check(ran and all(r == "ok" for r in ran), f"hw-check ran and held: {want}",
                     str(ran))
    for want, reason in must_skip.items():
        got = [(r, why) for c, r, why in rows if c.startswith(want)]
        checks.check(got and all(r == "skip" and reason in why for r, why in got),
                     f"hw-check skipped with its reason ({reason!r}): {want}", str(got))


def run_under_oracle(checks, cache, script, timeout, plugin, out):
    """Boots the arm64 guest with the oracle PLUGIN (writing its report to OUT) to run SCRIPT,
    a shell script that leaves its workload's exit status in $PMCPROF_GUEST_OUT/run.rc.
    Returns the oracle's report, or None when the boot or the report failed (said in CHECKS
    or the log)."""
    res = run_test_boot(cache, ["/bin/sh", "-c", script], timeout, arch=ARM64, plugin=plugin)
    print(f"guest with the oracle: qemu ran {res.boot_s:.1f} s", flush=True)
    if res.status is None:
        checks.check(False, "the guest with the oracle finished", describe_failure(res, timeout))
        return None
    checks.check(res.files.get("run.rc", b"").strip() == b"0", "the workload ran under the oracle",
                 res.output[-500:])
    try:
        with open(out) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        checks.check(False, "the oracle wrote its report", f"{e}; console:\n{res.console_tail()}")
        return None


def host_test(body):
    """Runs a guest test's host side: GuestSkip is a skip (exit 77, the reason printed),
    GuestError a failure (exit 1); else body()'s exit status."""
    try:
        return body()
    except GuestSkip as e:
        print(f"skipped: {e}", flush=True)
        return EXIT_SKIP
    except GuestError as e:
        print(f"FAIL: {e}", flush=True)
        return 1


def describe_failure(result, timeout):
    """One paragraph for a guest that did not report a status: why, and its console tail."""
    why = (f"the guest did not finish within {timeout} s (killed)" if result.timed_out
           else "the guest stopped without reporting the script's exit status")
    return f"{why}; console tail:\n{result.console_tail()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="x86_64", choices=sorted(ARCHES),
                    help="guest architecture (default x86_64)")
    ap.add_argument("--cache", help="cache directory, e.g. build/guest-cache")
    sub = ap.add_subparsers(dest="what", required=True)
    sub.add_parser("prepare")
    r = sub.add_parser("run")
    r.add_argument("--timeout", type=float, default=120)
    r.add_argument("--cpus", type=int, default=None)
    r.add_argument("--console", action="store_true", help="print the whole console to stderr")
    r.add_argument("--plugin", help="a qemu TCG plugin: -plugin's argument, file=SO[,ARG=V...]")
    r.add_argument("argv", nargs=argparse.REMAINDER)
    b = sub.add_parser("cross-build", help="arm64: cross-build pmcprof (and TARGETs)")
    b.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    b.add_argument("--build", required=True, help="build directory, e.g. build/arm64")
    b.add_argument("targets", nargs="*", default=["pmcprof"])
    sub.add_parser("oracle", help="fetch qemu-plugin.h and build the instruction oracle plugin; "
                   "prints the .so path")
    a = ap.parse_args()
    arch = arch_of(a.arch)
    try:
        if not a.cache:
            ap.error("--cache DIR is required")
        if a.what == "cross-build":
            print(cross_build(a.source, a.build, a.cache, a.targets))
            return 0
        if a.what == "oracle":
            print(prepare_oracle(a.cache))
            return 0
        if a.what == "prepare":
            p = prepare(a.cache, arch)
            print(f"package {p.package}\nkernel {p.kernel}\ninitramfs {p.initramfs}")
            if p.rootfs:
                print(f"rootfs {p.rootfs} (the host's / is at /host in it)")
            return 0
        argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
        if not argv:
            ap.error("run needs a command")
        res = run_in_guest(a.cache, argv, timeout=a.timeout, cpus=a.cpus, echo=a.console,
                           arch=arch, plugin=a.plugin)
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

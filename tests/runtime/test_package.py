#!/usr/bin/env python3
"""The Debian package: built with CPack, installed with dpkg -i, used, removed with dpkg -r.

Builds the .deb from the build directory ctest runs in (the directory of the --pmcprof binary,
configured with cmake/Packaging.cmake) into a temporary directory, checks its control fields
(Depends from dpkg-shlibdeps) and contents, installs it, runs the installed /usr/bin/pmcprof
(--version, a short count), `man -w pmcprof`, loads the installed bash completion, and removes
the package again whatever happened. See packaging/README.md.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcprof_testlib as t  # noqa: E402

PACKAGE = "pmcprof"
BIN = "/usr/bin/pmcprof"
MAN = "/usr/share/man/man1/pmcprof.1.gz"
COMPLETION = "/usr/share/bash-completion/completions/pmcprof"
# What dpkg-shlibdeps must find in the binary's NEEDED entries. (zlib1g is not among them: the
# binary does not call zlib itself, libelf1 and libbpf1 depend on it.)
WANT_DEPENDS = ("libbpf1", "libpfm4", "libelf1", "libstdc++6", "libc6")


def package_installed(name=PACKAGE):
    p = t.run(["dpkg-query", "-W", "-f=${Status}", name], timeout=30)
    return p.returncode == 0 and "install ok installed" in p.stdout


def dpkg_excludes(path):
    """The path-exclude patterns of /etc/dpkg/dpkg.cfg.d/ that would drop PATH."""
    import fnmatch
    pats = []
    d = "/etc/dpkg/dpkg.cfg.d"
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        try:
            with open(os.path.join(d, name)) as f:
                for line in f:
                    m = re.match(r"\s*path-exclude[ =](\S+)", line)
                    if m and fnmatch.fnmatch(path, m.group(1)):
                        pats.append(f"{name}: {m.group(1)}")
        except OSError:
            pass
    return pats


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.build_dir = os.path.dirname(t.pmcprof())
        cls.config = os.path.join(cls.build_dir, "CPackConfig.cmake")
        cls.tmp = tempfile.mkdtemp(prefix="pmcprof-deb-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def build_deb(self):
        self.assertTrue(os.path.exists(self.config),
                        f"{self.config} is missing: the build is not configured with "
                        "include(cmake/Packaging.cmake) in CMakeLists.txt")
        # cpack first builds the "preinstall" target, which depends on "all": instant after
        # `cmake --build`, a rebuild when the sources changed since.
        try:
            p = t.run(["cpack", "-G", "DEB", "--config", self.config, "-B", self.tmp],
                      timeout=55, cwd=self.build_dir)
        except subprocess.TimeoutExpired:
            self.fail("cpack took more than 55 s: it rebuilds the project first (its preinstall "
                      f"target depends on all), so {self.build_dir} was not up to date; "
                      "run cmake --build first")
        self.assertEqual(p.returncode, 0, f"cpack failed:\n{p.stdout}\n{p.stderr}")
        debs = [f for f in os.listdir(self.tmp) if f.endswith(".deb")]
        self.assertEqual(len(debs), 1, f"cpack made {debs}: {p.stdout}")
        return os.path.join(self.tmp, debs[0])

    def test_build_install_use_remove(self):
        deb = self.build_deb()
        t.log(f"built {os.path.basename(deb)} ({os.path.getsize(deb)} bytes)")

        # Control fields.
        fields = {}
        for key in ("Package", "Version", "Architecture", "Depends", "Maintainer", "Description"):
            p = t.run(["dpkg-deb", "-f", deb, key], timeout=30)
            fields[key] = p.stdout.strip()
        t.log(f"Depends: {fields['Depends']}")
        self.assertEqual(fields["Package"], PACKAGE)
        want_version = t.run_pmcprof(["--version"]).stdout.split()[-1]
        self.assertTrue(fields["Version"].startswith(want_version), fields)
        arch = t.run(["dpkg", "--print-architecture"]).stdout.strip()
        self.assertEqual(fields["Architecture"], arch)
        depends = {d.strip().split()[0] for d in fields["Depends"].split(",") if d.strip()}
        for lib in WANT_DEPENDS:
            self.assertIn(lib, depends, f"Depends lacks {lib}: {fields['Depends']}")
        self.assertTrue(fields["Maintainer"] and fields["Description"], fields)

        # Contents.
        listing = t.run(["dpkg-deb", "-c", deb], timeout=30).stdout
        files = {line.split()[-1].lstrip(".") for line in listing.splitlines() if line.split()}
        for path in (BIN, MAN, COMPLETION):
            self.assertIn(path, files, f"{path} not in the package:\n{listing}")
        self.assertNotIn("/usr/share/man/man1/pmcprof.1", files, "uncompressed man page too")
        for line in listing.splitlines():
            if line.split()[-1].lstrip(".") == BIN:
                self.assertTrue(line.startswith("-rwxr-xr-x"), line)
                self.assertIn("root/root", line)

        # Install, use, and always remove.
        try:
            p = t.run(["dpkg", "-i", deb], timeout=60)
            self.assertEqual(p.returncode, 0, f"dpkg -i failed:\n{p.stdout}\n{p.stderr}")
            self.assertTrue(package_installed(), "dpkg -i succeeded but the package is not installed")

            p = t.run([BIN, "--version"])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.strip(), f"pmcprof {want_version}")
            t.log(f"{BIN} --version: {p.stdout.strip()}")

            # The installed binary works on its own (BPF objects embedded, libraries found).
            p = t.run([BIN, "stat", "-j", "-o", "-", "-e", "task-clock", "--", "true"])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('"task-clock"', p.stdout)

            man = shutil.which("man")
            self.assertIsNotNone(man, "man is not installed (apt-get install man-db)")
            p = t.run([man, "-w", "pmcprof"])
            excluded = dpkg_excludes(MAN)
            self.assertEqual(p.returncode, 0,
                             f"man -w pmcprof: {p.stderr.strip()}" +
                             (f"; dpkg excludes the man page here: {excluded}" if excluded else ""))
            self.assertEqual(p.stdout.strip(), MAN)
            t.log(f"man -w pmcprof: {p.stdout.strip()}")
            if shutil.which("groff") or shutil.which("nroff"):
                p = t.run([man, "-P", "cat", "pmcprof"], env=dict(os.environ, MANWIDTH="80"))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("pmcprof", p.stdout)

            self.assertTrue(os.path.isfile(COMPLETION), f"{COMPLETION} missing after dpkg -i")
            p = t.run(["bash", "-c", f"source {COMPLETION} && complete -p pmcprof"])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("-F _pmcprof", p.stdout)
            # Through bash-completion's loader, as an interactive shell finds it.
            loader = "/usr/share/bash-completion/bash_completion"
            if os.path.exists(loader):
                p = t.run(["bash", "-c", f"source {loader}; __load_completion pmcprof && "
                           "complete -p pmcprof"])
                self.assertIn("-F _pmcprof", p.stdout, p.stderr)
        finally:
            p = t.run(["dpkg", "-r", PACKAGE], timeout=60)
            if p.returncode != 0:
                t.log(f"dpkg -r {PACKAGE} failed: {p.stdout} {p.stderr}")
        self.assertEqual(p.returncode, 0, f"dpkg -r failed: {p.stderr}")
        self.assertFalse(package_installed(), "still installed after dpkg -r")
        for path in (BIN, MAN, COMPLETION):
            self.assertFalse(os.path.exists(path), f"{path} left behind by dpkg -r")


if __name__ == "__main__":
    t.parse_args()
    if os.geteuid() != 0:
        t.skip("needs root (dpkg -i installs into the machine)")
    for tool in ("dpkg", "dpkg-deb", "dpkg-shlibdeps", "cpack"):
        if not shutil.which(tool):
            t.skip(f"{tool} is not installed (dpkg-dev, cmake)")
    if package_installed():
        t.skip(f"a {PACKAGE} package is already installed: not replacing it (dpkg -r {PACKAGE})")
    if os.path.exists(BIN):
        t.skip(f"{BIN} exists and is not from the {PACKAGE} package: not overwriting it")
    sys.exit(t.main(requires_root=True, doc=__doc__))

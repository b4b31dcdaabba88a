#!/usr/bin/env python3
"""The Debian package: built with CPack, installed with dpkg -i, used, removed, purged.

Builds the .deb from the build directory ctest runs in (the directory of the --pmcprof binary,
configured with cmake/Packaging.cmake) into a temporary directory, checks its control fields
(Depends from dpkg-shlibdeps, plus adduser) and contents, installs it, runs the installed
/usr/bin/pmcprof (--version, a short count), `man -w pmcprof`, loads the installed bash
completion, checks json.md, the JSON Schema and perf-json.jq are installed as in docs/ and that
`stat --help` names the installed json.md. The service: `systemd-analyze verify` passes on the installed unit (no warning),
`systemd-analyze security --offline` rates it, the system user pmcprof and /etc/pmcprof
(root:pmcprof 0750) exist, /etc/default/pmcprof is a conffile, the unit is neither enabled nor
running; the unit's ExecStart with /etc/default/pmcprof's arguments, run as its User= with
exactly its AmbientCapabilities= (setpriv: systemd is not PID 1 here), serves pmcprof_up 1.
Then dpkg -r (the user and the conffile stay) and dpkg -P (both go), whatever happened.

The unit's SystemCallFilter= is checked without systemd: every system call pmcprof makes
under strace, serving and scraped, in counting, per-cgroup (BPF) and --func syscall modes
(with and without TLS), is in the set systemd-analyze expands the filter to.
See packaging/README.md.
"""
import json
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
SERVICE_USER = "pmcprof"
UNIT = "/lib/systemd/system/pmcprof.service"
DEFAULTS = "/etc/default/pmcprof"
SOURCE_UNIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "packaging",
                           "pmcprof.service")
BIN = "/usr/bin/pmcprof"
MAN = "/usr/share/man/man1/pmcprof.1.gz"
COMPLETION = "/usr/share/bash-completion/completions/pmcprof"
# The JSON reference `stat --help` and the man page point to, and the schema and jq mapping.
JSON_DOC = "/usr/share/doc/pmcprof/json.md"
JSON_SCHEMA = "/usr/share/pmcprof/schema/pmcprof-1.schema.json"
PERF_JQ = "/usr/share/pmcprof/perf-json.jq"
SOURCE_DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")
# What dpkg-shlibdeps must find in the binary's NEEDED entries (zlib1g: serve's gzip), and
# adduser for postinst.
WANT_DEPENDS = ("libbpf1", "libpfm4", "libelf1", "libstdc++6", "libc6", "libmicrohttpd12",
                "libgnutls30", "libyaml-cpp0.7", "libcrypt1", "zlib1g", "adduser")
CAP_NUMBERS = {"CAP_PERFMON": 38, "CAP_BPF": 39, "CAP_DAC_READ_SEARCH": 2, "CAP_SYS_ADMIN": 21}


def package_installed(name=PACKAGE):
    p = t.run(["dpkg-query", "-W", "-f=${Status}", name], timeout=30)
    return p.returncode == 0 and "install ok installed" in p.stdout


def parse_unit(path):
    """{key: [values]} of a unit file's [Service] section (later lines append)."""
    out, section = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                section = line
                continue
            if section == "[Service]" and "=" in line:
                k, _, v = line.partition("=")
                out.setdefault(k.strip(), []).append(v.strip())
    return out


def default_args(path):
    """PMCPROF_ARGS of /etc/default/pmcprof, split as systemd splits $VAR (on whitespace)."""
    import shlex
    with open(path) as f:
        for line in f:
            if line.startswith("PMCPROF_ARGS="):
                return shlex.split(line.split("=", 1)[1])[0].split()
    return []


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
        for path in (BIN, MAN, COMPLETION, JSON_DOC, JSON_SCHEMA, PERF_JQ):
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

            self.check_json_docs()
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
            self.check_service(deb)
        finally:
            p = t.run(["dpkg", "-r", PACKAGE], timeout=60)
            if p.returncode != 0:
                t.log(f"dpkg -r {PACKAGE} failed: {p.stdout} {p.stderr}")
            removed = p
            user_after_remove = user_exists(SERVICE_USER)
            conffile_after_remove = os.path.exists(DEFAULTS)
            p = t.run(["dpkg", "-P", PACKAGE], timeout=60)
            if p.returncode != 0:
                t.log(f"dpkg -P {PACKAGE} failed: {p.stdout} {p.stderr}")
        self.assertEqual(removed.returncode, 0, f"dpkg -r failed: {removed.stderr}")
        self.assertEqual(p.returncode, 0, f"dpkg -P failed: {p.stderr}")
        self.assertFalse(package_installed(), "still installed after dpkg -r")
        for path in (BIN, MAN, COMPLETION, UNIT):
            self.assertFalse(os.path.exists(path), f"{path} left behind by dpkg -r")
        self.assertTrue(user_after_remove, "dpkg -r removed the system user (purge should)")
        self.assertTrue(conffile_after_remove, "dpkg -r removed the conffile (purge should)")
        for path in (DEFAULTS, "/etc/pmcprof"):
            self.assertFalse(os.path.exists(path), f"{path} left behind by dpkg -P")
        self.assertFalse(user_exists(SERVICE_USER), "dpkg -P left the system user")
        p = t.run(["getent", "group", SERVICE_USER])
        self.assertNotEqual(p.returncode, 0, "dpkg -P left the system group")
        t.log("dpkg -r kept the user and the conffile; dpkg -P removed both and /etc/pmcprof")

    def check_json_docs(self):
        """json.md, the schema and the jq mapping are installed as they are in the source, and
        the installed binary's --help names the json.md that is there."""
        for path, source in ((JSON_DOC, "json.md"), (JSON_SCHEMA, "schema/pmcprof-1.schema.json"),
                             (PERF_JQ, "perf-json.jq")):
            excluded = dpkg_excludes(path)
            if excluded:
                t.log(f"dpkg excludes {path} here ({excluded}): not checked")
                continue
            self.assertTrue(os.path.isfile(path), f"{path} missing after dpkg -i")
            with open(path, "rb") as got, open(os.path.join(SOURCE_DOCS, source), "rb") as want:
                self.assertEqual(got.read(), want.read(), f"{path} differs from docs/{source}")
        with open(JSON_SCHEMA) as f:
            self.assertEqual(json.load(f)["$defs"]["doctor"]["properties"]["type"]["const"],
                             "doctor")
        p = t.run([BIN, "stat", "--help"])
        self.assertEqual(p.returncode, 0, p.stderr)
        want = "docs/json.md" if dpkg_excludes(JSON_DOC) else JSON_DOC
        self.assertRegex(p.stdout, rf"-j,--json\S*\s+JSON output.*; {re.escape(want)}\)")
        t.log(f"installed: {JSON_DOC}, {JSON_SCHEMA}, {PERF_JQ}; --help names {want}")

    def check_service(self, deb):
        """The unit, its user and configuration, installed by dpkg -i."""
        import grp
        import pwd
        p = t.run(["dpkg-deb", "-I", deb, "conffiles"], timeout=30)
        self.assertEqual(p.stdout.split(), [DEFAULTS], "conffiles")
        for path in (UNIT, DEFAULTS, "/usr/share/doc/pmcprof/examples/web-config.yml",
                     "/usr/share/pmcprof/grafana/pmcprof-dashboard.json",
                     "/usr/share/pmcprof/prometheus/pmcprof-rules.yml"):
            self.assertTrue(os.path.isfile(path), f"{path} missing after dpkg -i")

        analyze = shutil.which("systemd-analyze")
        if analyze:
            p = t.run([analyze, "verify", UNIT], timeout=60)
            self.assertEqual(p.returncode, 0, f"systemd-analyze verify: {p.stdout}{p.stderr}")
            self.assertEqual((p.stdout + p.stderr).strip(), "",
                             f"systemd-analyze verify warned: {p.stdout}{p.stderr}")
            t.log(f"systemd-analyze verify {UNIT}: clean")
            p = t.run([analyze, "security", "--offline=true", "--no-pager", UNIT], timeout=60)
            m = re.search(r"Overall exposure level for pmcprof.service: ([0-9.]+) (\w+)",
                          p.stdout + p.stderr)
            self.assertIsNotNone(m, p.stdout + p.stderr)
            t.log(f"systemd-analyze security --offline: exposure {m.group(1)} {m.group(2)}")
            self.assertLessEqual(float(m.group(1)), 2.5, p.stdout)
        else:
            t.log("systemd-analyze is not installed: unit not verified (apt-get install systemd)")

        pw = pwd.getpwnam(SERVICE_USER)
        self.assertLess(pw.pw_uid, 1000, "not a system user")
        self.assertEqual(pw.pw_dir, "/nonexistent")
        self.assertIn(pw.pw_shell, ("/usr/sbin/nologin", "/bin/false"))
        self.assertEqual(grp.getgrgid(pw.pw_gid).gr_name, SERVICE_USER)
        st = os.stat("/etc/pmcprof")
        self.assertEqual((st.st_uid, st.st_gid, st.st_mode & 0o777), (0, pw.pw_gid, 0o750))
        t.log(f"user {SERVICE_USER}: uid {pw.pw_uid}, shell {pw.pw_shell}; /etc/pmcprof "
              "root:pmcprof 0750")

        # Not enabled, not started.
        wants = "/etc/systemd/system/multi-user.target.wants/pmcprof.service"
        self.assertFalse(os.path.lexists(wants), "dpkg -i enabled the unit")
        if shutil.which("systemctl"):
            p = t.run(["systemctl", "is-enabled", "pmcprof.service"], timeout=30)
            t.log(f"systemctl is-enabled pmcprof.service: {p.stdout.strip() or p.stderr.strip()}")
            self.assertNotEqual(p.stdout.strip(), "enabled")
        running = [pid for pid in os.listdir("/proc") if pid.isdigit()
                   and self.owner_of(pid) == pw.pw_uid]
        self.assertEqual(running, [], "something runs as pmcprof after dpkg -i")

        # The unit's command, as the unit runs it (User=, AmbientCapabilities=, bounding set).
        unit = parse_unit(UNIT)
        self.assertEqual(unit["User"], [SERVICE_USER])
        self.assertEqual(unit["EnvironmentFile"], ["-" + DEFAULTS])
        exec_start = unit["ExecStart"][0].split()
        self.assertEqual(exec_start[:2], [BIN, "serve"])
        self.assertEqual(exec_start[2:], ["$PMCPROF_ARGS"])
        caps = unit["AmbientCapabilities"][0].split()
        self.assertEqual(caps, unit["CapabilityBoundingSet"][0].split())
        self.assertEqual(unit["NoNewPrivileges"], ["yes"])
        args = default_args(DEFAULTS)
        self.assertIn("--listen", args)
        port = free_port()
        args[args.index("--listen") + 1] = f"127.0.0.1:{port}"
        spec = ",".join(["-all"] + ["+" + c[4:].lower() for c in caps])
        argv = ["setpriv", f"--reuid={SERVICE_USER}", f"--regid={SERVICE_USER}", "--init-groups",
                f"--inh-caps={spec}", f"--ambient-caps={spec}", f"--bounding-set={spec}",
                "--no-new-privs", "--", BIN, "serve", *args]
        err = tempfile.TemporaryFile()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)

        def stderr():
            return t.child_output(err)
        try:
            body = ""

            def up():
                nonlocal body
                if proc.poll() is not None:
                    return True
                try:
                    import urllib.request
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                                timeout=2) as r:
                        body = r.read().decode()
                    return "\npmcprof_up 1\n" in body and "task-clock" in body
                except OSError:
                    return False
            t.wait_for(up, 20, step=0.1)
            self.assertIsNone(proc.poll(), f"serve exited: {stderr()}")
            self.assertIn("\npmcprof_up 1\n", body)
            with open(f"/proc/{proc.pid}/status") as f:
                status = f.read()
            eff = int(re.search(r"CapEff:\s+(\w+)", status).group(1), 16)
            self.assertEqual(eff, sum(1 << CAP_NUMBERS[c] for c in caps))
            t.log(f"ExecStart with {DEFAULTS} as {SERVICE_USER} with {' '.join(caps)}: "
                  f"pmcprof_up 1 on port {port}")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 0, stderr())
        err.close()

    @staticmethod
    def owner_of(pid):
        try:
            return os.stat(f"/proc/{pid}").st_uid
        except OSError:
            return None

    @t.requires("program:systemd-analyze", "program:strace")  # apt-get install systemd strace
    def test_unit_system_call_filter_allows_pmcprof(self):
        analyze, strace = shutil.which("systemd-analyze"), shutil.which("strace")
        unit = parse_unit(SOURCE_UNIT)
        allowed = expand_syscall_filter(analyze, unit["SystemCallFilter"][0].split())
        self.assertIn("perf_event_open", allowed)
        self.assertGreater(len(allowed), 300)
        modes = {
            "counting": ["-e", "task-clock,context-switches"],
            "--func syscall": ["-e", "task-clock", "--func", "syscall:getppid"],
        }
        # Per cgroup, a cgroup of the test's own (a machine without systemd may have none
        # under the v2 mount); without a writable cgroup v2, that mode alone is left out.
        try:
            cg = self.enterContext(t.TestCgroups("scf"))
            modes["per cgroup (BPF)"] = ["-e", "task-clock", "--for-each-cgroup",
                                         f"^{cg.make('scf')}$", "--cgroup-backend", "bpf"]
        except t.Skip as e:
            t.log(f"per cgroup (BPF) mode not run: {e}")
        import tempfile
        import serve_testlib
        tmp = tempfile.mkdtemp(prefix="pmcprof-scf-")
        certs = serve_testlib.make_certs(tmp)
        config = os.path.join(tmp, "web.yml")
        with open(config, "w") as f:
            f.write(f"tls_server_config:\n  cert_file: {certs['server.crt']}\n"
                    f"  key_file: {certs['server.key']}\nbasic_auth_users:\n"
                    f"  prometheus: '{serve_testlib.bcrypt_hash('pw', cost=4)}'\n")
        modes["counting, TLS and basic auth"] = ["-e", "task-clock", "--web.config.file", config]
        tls = (certs["ca.crt"], "prometheus", "pw")
        self.addCleanup(shutil.rmtree, tmp, True)
        for name, args in modes.items():
            with self.subTest(mode=name):
                used = syscalls_of_serve(strace, args, gzip=name.startswith("counting"),
                                         tls=tls if "TLS" in name else None)
                self.assertGreater(len(used), 20, name)
                # The kernel's uretprobe trampoline (x86-64, Linux 6.11+) makes the uretprobe
                # system call (335: strace 6.1 names it syscall_0x14f) when a function of
                # pmcprof's own that its calibration probes returns; seccomp passes it through
                # unfiltered (Linux 6.11: "seccomp: passthrough uretprobe systemcall without
                # filtering"), so the unit needs no entry for it (systemd 252 has no name for it).
                self.assertEqual(sorted(used - allowed - {"uretprobe", "syscall_0x14f"}), [],
                                 f"{name}: system calls outside SystemCallFilter=")
                t.log(f"{name}: {len(used)} distinct system calls, all in SystemCallFilter=")


def user_exists(name):
    import pwd
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def expand_syscall_filter(analyze, items, seen=None):
    """The system calls a SystemCallFilter= allow list names (groups expanded with
    systemd-analyze syscall-filter)."""
    seen = set() if seen is None else seen
    out = set()
    for item in items:
        if not item.startswith("@"):
            out.add(item)
            continue
        if item in seen:
            continue
        seen.add(item)
        p = t.run([analyze, "syscall-filter", "--no-pager", item], timeout=30)
        for line in p.stdout.splitlines()[1:]:
            word = line.strip()
            if not word or word.startswith("#"):
                continue
            out |= expand_syscall_filter(analyze, [word], seen)
    return out


def syscalls_of_serve(strace, args, gzip=False, tls=None):
    """Every system call name `pmcprof serve ARGS` makes (all threads) while it starts, serves
    a few scrapes (gzip too) and a /-/healthy, and ends on SIGTERM. TLS: (CA file, user,
    password) when ARGS name a web config with TLS and basic auth."""
    import base64
    import signal
    import ssl
    import tempfile
    import time
    import urllib.request
    port = free_port()
    scheme, ctx, auth = "http", None, {}
    if tls:
        scheme, ctx = "https", ssl.create_default_context(cafile=tls[0])
        token = base64.b64encode(f"{tls[1]}:{tls[2]}".encode()).decode()
        auth = {"Authorization": f"Basic {token}"}

    def get(path, headers=None):
        req = urllib.request.Request(f"{scheme}://127.0.0.1:{port}{path}",
                                     headers={**auth, **(headers or {})})
        with urllib.request.urlopen(req, timeout=5, context=ctx) as r:
            return r.read()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "strace")
        proc = subprocess.Popen([strace, "-f", "-qq", "-o", out, t.pmcprof(), "serve", "-q",
                                 "--listen", f"127.0.0.1:{port}", *args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def up():
                try:
                    return b"\npmcprof_up 1\n" in get("/metrics")
                except OSError:
                    return proc.poll() is not None
            t.wait_for(up, 30, step=0.2)
            for headers in ({}, {"Accept-Encoding": "gzip"} if gzip else {}):
                get("/metrics", headers)
            get("/-/healthy")
            subprocess.run(["true"])
            time.sleep(0.2)
        finally:
            # SIGTERM to pmcprof itself (strace's child), as systemd would send it.
            for child in t.children_of(proc.pid):
                os.kill(child, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        names = set()
        with open(out) as f:
            for line in f:
                m = re.match(r"\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]", line)
                if m and "resumed>" not in line.split(" ", 2)[1]:
                    names.add(m.group(1))
        # strace's own exec of pmcprof is the service manager's job.
        names.discard("execve")
        return names


if __name__ == "__main__":
    # root: dpkg -i installs into the machine; dpkg-dev and cmake build the package. What the
    # machine already holds is checked first: the test never replaces what it did not install.
    t.parse_args()
    t.exit_unless("root", "program:dpkg", "program:dpkg-deb", "program:dpkg-shlibdeps",
                  "program:cpack", "program:setpriv")
    if package_installed():
        t.skip(f"a {PACKAGE} package is already installed: not replacing it (dpkg -r {PACKAGE})")
    if os.path.exists(BIN):
        t.skip(f"{BIN} exists and is not from the {PACKAGE} package: not overwriting it")
    if user_exists(SERVICE_USER):
        t.skip(f"a user {SERVICE_USER} exists without the package: not touching it")
    sys.exit(t.main(requires=("root",), doc=__doc__))

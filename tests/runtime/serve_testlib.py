"""Helpers for the `pmcprof serve` runtime tests: a served pmcprof, raw HTTP with deadlines,
a real Prometheus (Debian's 2.42), test certificates (openssl) and bcrypt hashes (libcrypt
through Python's crypt module). Standard library only.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
import warnings

import pmcprof_testlib as t


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.status, resp.headers, resp.read().decode()


def raw_get(port, path="/metrics", timeout=10, method="GET", extra=""):
    """One request on a fresh connection with a whole-request deadline; (seconds, status,
    headers dict (lower-case names), body bytes). Raises TimeoutError past the deadline."""
    req = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}"
           "Connection: close\r\n\r\n").encode()
    t0 = time.monotonic()
    deadline = t0 + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(req)
        buf = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no whole answer to {path} within {timeout} s")
            s.settimeout(left)
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                m = re.search(rb"\r\ncontent-length: *(\d+)", buf[:end], re.I)
                if method == "HEAD" or (m and len(buf) - end - 4 >= int(m.group(1))):
                    break
    took = time.monotonic() - t0
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        raise ConnectionError(f"no HTTP head in {buf[:200]!r}")
    lines = buf[:end].decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return took, int(lines[0].split()[1]), headers, buf[end + 4:]


def parse_metrics(text):
    """{'name{labels}': value} for every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        out[key] = float(value)
    return out


def metric_sum(values, name):
    return sum(v for k, v in values.items() if k == name or k.startswith(name + "{"))


class Serve:
    """`pmcprof serve --listen 127.0.0.1:PORT ARGS` in the background (stderr kept); PREFIX
    runs it through another program (e.g. setpriv ... --)."""

    def __init__(self, args, port=None, scheme="http", binary=None, prefix=()):
        self.port = port or free_port()
        self.scheme = scheme
        self.base = f"{scheme}://127.0.0.1:{self.port}"
        self.url = self.base + "/metrics"
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [*prefix, binary or t.pmcprof(), "serve", "--listen", f"127.0.0.1:{self.port}", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)

    def stderr(self):
        return t.child_output(self.err)

    def wait_up(self, timeout=20, ready=None):
        """Until /metrics says pmcprof_up 1 (plain HTTP), or READY() is true."""
        def up():
            if self.proc.poll() is not None:
                raise AssertionError(f"pmcprof serve exited {self.proc.returncode}: "
                                     f"{self.stderr()}")
            if ready:
                return ready()
            try:
                _, status, _, body = raw_get(self.port, timeout=2)
                return status == 200 and b"\npmcprof_up 1\n" in b"\n" + body
            except OSError:
                return False
        if not t.wait_for(up, timeout, step=0.05):
            raise AssertionError(f"pmcprof serve not up within {timeout} s: {self.stderr()}")

    def metrics(self, timeout=10):
        _, status, _, body = raw_get(self.port, timeout=timeout)
        assert status == 200, status
        return parse_metrics(body.decode())

    def close(self, timeout=10):
        """SIGTERM; (exit code, seconds until exit, stderr)."""
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
            took = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            took = None
        err = self.stderr() if not self.err.closed else ""
        self.err.close()
        return (self.proc.returncode if took is not None else None), took, err


def serve_up(args, ready, **kw):
    """A Serve of ARGS, waited on until READY(serve) is true (an OSError: not yet); closed
    when it never comes up, so no test leaves one running."""
    srv = Serve(args, **kw)

    def ok():
        try:
            return ready(srv)
        except OSError:
            return False
    try:
        srv.wait_up(ready=ok)
    except BaseException:
        srv.close()
        raise
    return srv


class Prometheus:
    """Debian's prometheus with CONFIG (YAML text) on a free loopback port, in a temporary
    directory; stop() always. Skips when prometheus is not installed."""

    def __init__(self, config, files=None):
        t.require("program:prometheus")  # Debian's prometheus (apt-get install prometheus)
        self.binary = shutil.which("prometheus")
        self.tmp = tempfile.mkdtemp(prefix="pmcprof-prom-")
        for name, text in (files or {}).items():
            with open(os.path.join(self.tmp, name), "w") as f:
                f.write(text)
        with open(os.path.join(self.tmp, "prometheus.yml"), "w") as f:
            f.write(config.replace("@DIR@", self.tmp))
        self.port = free_port()
        self.log = open(os.path.join(self.tmp, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={self.tmp}/prometheus.yml",
             f"--storage.tsdb.path={self.tmp}/data", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, path, **params):
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?" + urllib.parse.urlencode(params)
        try:
            _, _, body = http_get(url, timeout=5)
        except urllib.error.HTTPError as e:
            return json.loads(e.read().decode())
        return json.loads(body)

    def query(self, expr):
        """The result list of an instant query (raises on a PromQL error)."""
        data = self.api("query", query=expr)
        if data.get("status") != "success":
            raise AssertionError(f"query {expr!r}: {data.get('errorType')}: {data.get('error')}")
        return data["data"]["result"]

    def targets(self):
        try:
            return self.api("targets")["data"]["activeTargets"]
        except (OSError, KeyError, ValueError):
            return []

    def wait_target_health(self, health, timeout=60):
        """Until every active target has HEALTH ('up'/'down'); returns the targets."""
        found = []

        def ok():
            found[:] = self.targets()
            return bool(found) and all(x.get("health") == health for x in found)
        if not t.wait_for(ok, timeout, step=0.5):
            raise AssertionError(f"targets not {health} within {timeout} s: "
                                 f"{[(x.get('scrapeUrl'), x.get('health'), x.get('lastError')) for x in found]}")
        return found

    def log_tail(self):
        self.log.flush()
        with open(os.path.join(self.tmp, "prometheus.log")) as f:
            return f.read()[-3000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def make_certs(directory):
    """A CA, a server certificate for 127.0.0.1/localhost signed by it, a client certificate
    signed by it and a self-signed 'rogue' client certificate (EC P-256, openssl). Returns
    {name: path}. Skips when openssl is missing."""
    t.require("program:openssl")
    openssl = shutil.which("openssl")
    p = {n: os.path.join(directory, n) for n in
         ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key",
          "rogue.crt", "rogue.key")}
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]

    def run(*argv):
        r = subprocess.run([openssl, *argv], capture_output=True, text=True, cwd=directory)
        if r.returncode != 0:
            raise AssertionError(f"openssl {' '.join(argv)}: {r.stderr}")
    run("req", "-x509", *ec, "-keyout", p["ca.key"], "-out", p["ca.crt"], "-days", "2",
        "-subj", "/CN=pmcprof test CA")
    ext = os.path.join(directory, "san.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for who, subj in (("server", "/CN=localhost"), ("client", "/CN=scraper")):
        csr = os.path.join(directory, f"{who}.csr")
        run("req", *ec, "-keyout", p[f"{who}.key"], "-out", csr, "-subj", subj)
        extra = ["-extfile", ext] if who == "server" else []
        run("x509", "-req", "-in", csr, "-CA", p["ca.crt"], "-CAkey", p["ca.key"],
            "-CAcreateserial", "-out", p[f"{who}.crt"], "-days", "2", *extra)
    run("req", "-x509", *ec, "-keyout", p["rogue.key"], "-out", p["rogue.crt"], "-days", "2",
        "-subj", "/CN=rogue")
    return p


def bcrypt_hash(password, prefix="$2b$", cost=10):
    """A bcrypt hash made by libcrypt (Python's crypt module, Debian 12's Python 3.11)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        t.require("python:crypt")  # bcrypt hashes from libcrypt
        import crypt
    h = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << cost))
    if not h or not h.startswith("$2b$"):
        raise t.Skip(f"libcrypt made no bcrypt hash here ({h!r})")
    return prefix + h[4:]


def curl(args, timeout=15):
    """curl -s -S ... -w '%{http_code}': (curl's exit code, the HTTP status or None when there
    was no answer, the body, curl's stderr)."""
    t.require("program:curl")
    exe = shutil.which("curl")
    r = subprocess.run([exe, "-s", "-S", "-w", "%{http_code}", *args], capture_output=True,
                       timeout=timeout)
    out = r.stdout.decode(errors="replace")
    code = out[-3:]
    return r.returncode, (int(code) if code.isdigit() and code != "000" else None), out[:-3], \
        r.stderr.decode(errors="replace")


def sign_cert(directory, certs, name, subj, ext="", key="ec"):
    """A certificate NAME.crt/NAME.key signed by make_certs' CA, with the openssl extension
    lines EXT (e.g. 'extendedKeyUsage=serverAuth'); KEY 'ec' (P-256) or 'rsa' (2048). Returns
    (crt, key) paths."""
    openssl = shutil.which("openssl")
    crt, keyf, csr = (os.path.join(directory, name + x) for x in (".crt", ".key", ".csr"))
    newkey = (["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"] if key == "ec"
              else ["-newkey", "rsa:2048"])

    def run(*argv):
        r = subprocess.run([openssl, *argv], capture_output=True, text=True, cwd=directory)
        if r.returncode != 0:
            raise AssertionError(f"openssl {' '.join(argv)}: {r.stderr}")
    run("req", *newkey, "-nodes", "-keyout", keyf, "-out", csr, "-subj", subj)
    extra = []
    if ext:
        extfile = os.path.join(directory, name + ".ext")
        with open(extfile, "w") as f:
            f.write(ext + "\n")
        extra = ["-extfile", extfile]
    run("x509", "-req", "-in", csr, "-CA", certs["ca.crt"], "-CAkey", certs["ca.key"],
        "-CAcreateserial", "-out", crt, "-days", "2", *extra)
    return crt, keyf


def timed_get(port, path="/metrics", source="127.0.0.1", auth=None, timeout=5):
    """One GET from SOURCE (a loopback address) with basic auth AUTH=(user, password):
    (seconds, status)."""
    import base64
    extra = ""
    if auth:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        extra = f"Authorization: Basic {token}\r\n"
    req = (f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n").encode()
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                  source_address=(source, 0)) as c:
        c.sendall(req)
        buf = b""
        while True:
            chunk = c.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
    took = time.monotonic() - t0
    if not buf.startswith(b"HTTP/"):
        raise ConnectionError(f"no HTTP answer: {buf[:100]!r}")
    return took, int(buf.split(b" ", 2)[1])


def process_cpu_ns(pid):
    """The CPU time every thread of PID has run so far, in ns (/proc/PID/task/*/schedstat): the
    work requests made it do, however long a loaded machine kept it waiting for a CPU. (serve's
    threads live as long as it does, so none takes its time away with it.)"""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")

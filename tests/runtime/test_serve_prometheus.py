"""pmcprof serve: /metrics in the Prometheus text format, scraped by a real Prometheus server.

Starts `pmcprof serve` on a free loopback port, starts Debian's prometheus with a scrape config
pointing at it, and queries Prometheus's HTTP API until a pmcprof series with a non-zero value
appears (bounded wait); then stops both. Also: a scrape right after start-up gets a whole page,
function-mode series, a port in use and an unparsable --listen are one clear line each; HTTP
done right (HEAD, Content-Length, keep-alive, gzip when asked for, /, /-/healthy, /-/ready,
405 with Allow, 404) and a client trickling its request does not delay a scrape.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

import pmcprof_testlib as t


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.headers, resp.read().decode()


def parse_metrics(text):
    """{'name{labels}': value} for every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        out[key] = float(value)
    return out


class Serve:
    def __init__(self, args):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        self.proc = t.spawn([t.pmcprof(), "serve", "--listen", f"127.0.0.1:{self.port}", *args])

    def wait_ready(self, timeout=15):
        # Answered at once with pmcprof_up 0 while counters open and probes attach; 1 once live.
        def ok():
            try:
                status, _, body = http_get(self.url, timeout=1)
                return status == 200 and "\npmcprof_up 1\n" in "\n" + body
            except OSError:
                return False
        if not t.wait_for(ok, timeout):
            raise AssertionError("pmcprof serve did not answer /metrics with pmcprof_up 1")

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.proc.returncode, err


class ServeTest(unittest.TestCase):
    @t.requires("program:prometheus")  # Debian's (apt-get install prometheus)
    def test_prometheus_scrapes_pmcprof(self):
        prom = shutil.which("prometheus")
        serve = Serve(["-e", "task-clock,page-faults,cycles"])
        tmp = tempfile.mkdtemp(prefix="pmcprof-prom-")
        prom_port = free_port()
        proc = None
        try:
            serve.wait_ready()
            with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                        "scrape_configs:\n  - job_name: pmcprof\n    static_configs:\n"
                        f"      - targets: ['127.0.0.1:{serve.port}']\n")
            proc = subprocess.Popen(
                [prom, f"--config.file={tmp}/prometheus.yml", f"--storage.tsdb.path={tmp}/data",
                 f"--web.listen-address=127.0.0.1:{prom_port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            query = (f"http://127.0.0.1:{prom_port}/api/v1/query?query="
                     "pmcprof_event_seconds_total%7Bevent%3D%22task-clock%22%7D")
            found = {}

            def series_nonzero():
                try:
                    _, _, body = http_get(query, timeout=2)
                except OSError:
                    return False
                data = json.loads(body)
                for r in data.get("data", {}).get("result", []):
                    if float(r["value"][1]) > 0:
                        found.update(r)
                        return True
                return False

            ok = t.wait_for(series_nonzero, 60, step=0.5)
            self.assertTrue(ok, "Prometheus never stored a non-zero pmcprof task-clock series")
            t.log(f"prometheus stored {found['metric']} = {found['value'][1]} s")
            self.assertEqual(found["metric"].get("job"), "pmcprof")
            # pmcprof's own health is scraped too.
            _, _, body = http_get(f"http://127.0.0.1:{prom_port}/api/v1/query?query=pmcprof_up")
            up = json.loads(body)["data"]["result"]
            self.assertTrue(up and float(up[0]["value"][1]) == 1.0, up)
        finally:
            if proc:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
            rc, err = serve.close()
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(rc, 0, err)

    def test_metrics_page_is_whole_and_named_by_convention(self):
        serve = Serve(["-e", "task-clock,page-faults,cycles"])
        try:
            serve.wait_ready()
            status, headers, body = http_get(serve.url)
            self.assertEqual(status, 200)
            self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"))
            self.assertEqual(int(headers["Content-Length"]), len(body.encode()))
            m = parse_metrics(body)
            self.assertEqual(m["pmcprof_up"], 1)
            self.assertGreater(m['pmcprof_event_seconds_total{event="task-clock"}'], 0)
            self.assertIn('pmcprof_event_total{event="page-faults"}', m)
            if not t.has_hardware_pmu():
                self.assertEqual(m['pmcprof_event_supported{event="cycles"}'], 0)
                self.assertNotIn('pmcprof_event_total{event="cycles"}', m)
            # Every metric has HELP and TYPE, counters end in _total.
            for line in body.splitlines():
                if line.startswith("# TYPE ") and line.endswith(" counter"):
                    self.assertTrue(line.split()[2].endswith("_total"), line)
            second = parse_metrics(http_get(serve.url)[2])
            self.assertEqual(second["pmcprof_scrapes_total"], m["pmcprof_scrapes_total"] + 1)
            self.assertEqual(http_get(serve.url.replace("/metrics", "/"))[0], 200)
            with self.assertRaises(urllib.error.HTTPError) as ctx:
                http_get(serve.url.replace("/metrics", "/nope"))
            self.assertEqual(ctx.exception.code, 404)
        finally:
            rc, err = serve.close()
        self.assertEqual(rc, 0, err)

    def test_scrape_during_start_up_gets_a_whole_page(self):
        # Connect while pmcprof is still opening counters: the connection is answered with a
        # complete page (pmcprof_up 0 until counting is live, then 1).
        port = free_port()
        proc = t.spawn([t.pmcprof(), "serve", "--listen", f"127.0.0.1:{port}", "-e", "task-clock"])
        try:
            deadline = time.time() + 10
            sock = None
            while time.time() < deadline:
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                    break
                except OSError:
                    time.sleep(0.005)
            self.assertIsNotNone(sock, "could not connect")
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            sock.close()
            head, _, body = data.partition(b"\r\n\r\n")
            length = int([h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0]
                         .split(b":")[1])
            self.assertEqual(length, len(body))
            self.assertTrue(body.decode().rstrip().endswith(tuple("0123456789")), body[-200:])
            self.assertIn(b"pmcprof_up", body)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=10)

    def test_http_done_right(self):
        import gzip
        import http.client
        serve = Serve(["-e", "task-clock"])
        try:
            serve.wait_ready()
            conn = http.client.HTTPConnection("127.0.0.1", serve.port, timeout=5)
            # Keep-alive: several requests on one connection.
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            plain = r.read()
            self.assertEqual(r.status, 200)
            self.assertEqual(int(r.getheader("Content-Length")), len(plain))
            self.assertFalse(r.will_close, "HTTP/1.1 keep-alive expected")
            conn.request("HEAD", "/metrics")
            r = conn.getresponse()
            self.assertEqual(r.status, 200)
            self.assertEqual(r.read(), b"")
            head_len = int(r.getheader("Content-Length"))
            self.assertGreater(head_len, 100)
            conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
            r = conn.getresponse()
            body = r.read()
            self.assertEqual(r.getheader("Content-Encoding"), "gzip")
            self.assertEqual(int(r.getheader("Content-Length")), len(body))
            text = gzip.decompress(body).decode()
            self.assertIn("pmcprof_up 1", text)
            self.assertLess(len(body), len(text))
            conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip;q=0, identity"})
            r = conn.getresponse()
            self.assertIsNone(r.getheader("Content-Encoding"))
            self.assertIn(b"pmcprof_up 1", r.read())
            for path, status, text in (("/-/healthy", 200, "Healthy"), ("/-/ready", 200, "Ready"),
                                       ("/", 200, "/metrics"), ("/nope", 404, "not found")):
                conn.request("GET", path)
                r = conn.getresponse()
                self.assertEqual(r.status, status, path)
                self.assertIn(text, r.read().decode(), path)
            conn.request("POST", "/metrics", body=b"x=1")
            r = conn.getresponse()
            r.read()
            self.assertEqual(r.status, 405)
            self.assertEqual(r.getheader("Allow"), "GET, HEAD")
            conn.close()
            t.log(f"keep-alive, HEAD ({head_len} bytes announced), gzip ({len(body)} of "
                  f"{len(text)} bytes), /-/healthy, /-/ready, 404, 405: as expected")
        finally:
            rc, err = serve.close()
        self.assertEqual(rc, 0, err)

    def test_slow_client_cannot_stall_scrapes(self):
        # A client that trickles its request one byte at a time is one connection of the
        # serving threads among others: a scrape beside it is answered at once.
        import threading
        serve = Serve(["-e", "task-clock"])
        try:
            serve.wait_ready()
            slow = socket.create_connection(("127.0.0.1", serve.port))

            def trickle():
                for ch in b"GET /metrics HTTP/1.1\r\nHost: x\r\n":
                    try:
                        slow.send(bytes([ch]))
                        time.sleep(0.25)
                    except OSError:
                        return
            threading.Thread(target=trickle, daemon=True).start()
            time.sleep(0.1)
            t0 = time.monotonic()
            status, _, body = http_get(serve.url, timeout=10)
            took = time.monotonic() - t0
            t.log(f"scrape beside a trickling client took {took * 1e3:.1f} ms")
            self.assertEqual(status, 200)
            self.assertIn("pmcprof_up 1", body)
            self.assertLess(took, 0.1)
            slow.close()
        finally:
            rc, err = serve.close()
        self.assertEqual(rc, 0, err)

    def test_function_mode_series(self):
        serve = Serve(["-e", "task-clock", "--func", "syscall:getppid"])
        try:
            serve.wait_ready()
            t.run([t.workload("func_workload"), "getppid", "2000"])
            m = parse_metrics(http_get(serve.url)[2])
            calls = m['pmcprof_function_calls_total{function="syscall:getppid"}']
            self.assertGreaterEqual(calls, 2000)
            self.assertEqual(m['pmcprof_probe_info{function="syscall:getppid",backend="tracepoint",kind="function"}'], 1)
            # The on-CPU histogram holds the counted calls (a call flagged not counted is in
            # calls_total only).
            counted = calls - m['pmcprof_function_not_counted_calls_total{function="syscall:getppid"}']
            hidden = m['pmcprof_function_hidden_switch_calls_total{function="syscall:getppid"}']
            self.assertGreaterEqual(counted, t.min_counted(calls, hidden))
            self.assertEqual(m['pmcprof_function_oncpu_seconds_count{function="syscall:getppid"}'],
                             counted)
            self.assertEqual(
                m['pmcprof_function_oncpu_seconds_bucket{function="syscall:getppid",le="+Inf"}'],
                counted)
            t.log(f"getppid calls scraped: {calls:.0f}")
        finally:
            rc, err = serve.close()
        self.assertEqual(rc, 0, err)

    def test_port_in_use_and_bad_listen(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            p = t.run_pmcprof(["serve", "--listen", f"127.0.0.1:{port}", "-e", "task-clock"])
            t.assert_clean_error(self, p, exit_code=1, mentions=("in use",))
        for bad in ("127.0.0.1:notaport", "1.2.3:80", "127.0.0.1:70000", "[::1"):
            p = t.run_pmcprof(["serve", "--listen", bad, "-e", "task-clock"])
            t.assert_clean_error(self, p, exit_code=129, mentions=("--listen",))


if __name__ == "__main__":
    raise SystemExit(t.main(requires=("root", "syscall-tracepoints"), doc=__doc__))

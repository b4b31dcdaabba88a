"""pmcprof serve reloads its web config without downtime (issue 20, defect 5).

The config and certificate were read once: a removed user still got 200, a new one 401, a
replaced certificate was not served, and SIGHUP ended serve (status 129, no line). Now, with a
scraper (user alice, in every config) scraping over HTTPS every 30 ms throughout:

- A new config (bob removed, carol added, a new certificate and key under new names) takes
  effect by itself, as the exporter-toolkit's does (the files are checked before each request
  and handshake): bob gets 401, carol 200, and new handshakes get the new certificate.
- SIGHUP reads the config again ("reloaded ... (SIGHUP)") and never ends serve, three in a row
  neither.
- A broken config (a duplicate key) is refused in one line per attempt and the last good one
  keeps serving (carol 200, bob 401); fixing it takes effect again.
- The scraper never failed, and SIGTERM still ends serve with status 0.
- A config refused after it parsed (it turns TLS off) is logged once, not once per request;
  one naming a certificate not there yet is taken once the certificate arrives.
- A keep-alive connection opened before a reload from passwords to client certificates is
  closed, not served without credentials.
- packaging/pmcprof.service reloads with `ExecReload=/bin/kill -HUP $MAINPID`.
"""
import base64
import http.client
import os
import shutil
import signal
import ssl
import tempfile
import threading
import time
import unittest

import pmcprof_testlib as t
import serve_testlib as s

PASSWORDS = {"alice": "alice's", "bob": "bob's", "carol": "carol's"}


class ReloadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pmcprof-reload-")
        cls.certs = s.make_certs(cls.tmp)
        cls.cert_b = s.sign_cert(cls.tmp, cls.certs, "server-b", "/CN=localhost",
                                 "subjectAltName=DNS:localhost,IP:127.0.0.1")
        cls.hashes = {u: s.bcrypt_hash(p, cost=4) for u, p in PASSWORDS.items()}
        cls.config = os.path.join(cls.tmp, "web.yml")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def write_config(self, cert, users, extra=""):
        text = (f"tls_server_config:\n  cert_file: {os.path.basename(cert[0])}\n"
                f"  key_file: {os.path.basename(cert[1])}\n{extra}basic_auth_users:\n"
                + "".join(f"  {u}: '{self.hashes[u]}'\n" for u in users))
        tmp = self.config + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.config)  # as an editor or a config manager does: whole

    def get(self, port, user):
        """(status, the served certificate, DER) of one scrape as USER on a new connection."""
        ctx = ssl.create_default_context(cafile=self.certs["ca.crt"])
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
        try:
            token = base64.b64encode(f"{user}:{PASSWORDS[user]}".encode()).decode()
            conn.request("GET", "/metrics", headers={"Authorization": f"Basic {token}"})
            resp = conn.getresponse()
            resp.read()
            return resp.status, conn.sock.getpeercert(binary_form=True)
        finally:
            conn.close()

    def test_reload(self):
        der = {}
        for name, path in (("a", self.certs["server.crt"]), ("b", self.cert_b[0])):
            with open(path) as f:
                der[name] = ssl.PEM_cert_to_DER_cert(f.read())
        self.write_config((self.certs["server.crt"], self.certs["server.key"]),
                          ["alice", "bob"])
        srv = s.serve_up(["-e", "task-clock", "--web.config.file", self.config],
                         lambda srv: self.get(srv.port, "alice")[0] == 200, scheme="https")
        failures, scrapes = [], [0]
        stop = threading.Event()

        def scraper():
            while not stop.is_set():
                try:
                    status, _ = self.get(srv.port, "alice")
                    if status != 200:
                        failures.append(f"HTTP {status}")
                except (OSError, ssl.SSLError, http.client.HTTPException) as e:
                    failures.append(repr(e))
                scrapes[0] += 1
                stop.wait(0.03)
        th = threading.Thread(target=scraper)
        th.start()
        try:
            self.assertEqual(self.get(srv.port, "bob"), (200, der["a"]))
            self.assertEqual(self.get(srv.port, "carol")[0], 401)

            # A new config: bob out, carol in, another certificate. No signal.
            self.write_config(self.cert_b, ["alice", "carol"])
            self.assertTrue(t.wait_for(lambda: self.get(srv.port, "carol")[0] == 200, 5,
                                       step=0.05), srv.stderr())
            self.assertEqual(self.get(srv.port, "bob")[0], 401)
            self.assertEqual(self.get(srv.port, "carol"), (200, der["b"]),
                             "the new certificate is served")

            # SIGHUP: read again, serve goes on; three in a row too.
            srv.proc.send_signal(signal.SIGHUP)
            self.assertTrue(t.wait_for(lambda: "(SIGHUP)" in srv.stderr(), 5, step=0.05),
                            srv.stderr())
            for _ in range(3):
                srv.proc.send_signal(signal.SIGHUP)
            time.sleep(0.3)
            self.assertIsNone(srv.proc.poll(), f"SIGHUP ended serve: {srv.stderr()}")
            self.assertEqual(self.get(srv.port, "carol")[0], 200)

            # A broken config: refused, one line each time; the last good one serves on.
            with open(self.config) as f:
                good_text = f.read()
            self.write_config(self.cert_b, ["alice", "carol"],
                              extra="basic_auth_users:\n")  # a duplicate key
            self.assertTrue(t.wait_for(lambda: "failed" in srv.stderr(), 5, step=0.05),
                            srv.stderr())
            srv.proc.send_signal(signal.SIGHUP)
            self.assertTrue(t.wait_for(lambda: srv.stderr().count("failed") >= 2, 5, step=0.05),
                            srv.stderr())
            self.assertEqual(self.get(srv.port, "carol"), (200, der["b"]))
            self.assertEqual(self.get(srv.port, "bob")[0], 401)
            # Fixed: in effect again (bob back).
            self.write_config(self.cert_b, ["alice", "bob", "carol"])
            self.assertTrue(t.wait_for(lambda: self.get(srv.port, "bob")[0] == 200, 5,
                                       step=0.05), srv.stderr())
            self.assertNotEqual(good_text, "")
        finally:
            stop.set()
            th.join()
            rc, _, err = srv.close()
        lines = [line for line in err.splitlines() if line.strip()]
        for line in lines:
            t.log(f"  stderr: {line}")
        failed = [line for line in lines if "failed" in line]
        self.assertGreaterEqual(len(failed), 2)
        for line in failed:
            self.assertRegex(line, r"^pmcprof: reload \((SIGHUP|a changed file)\) failed, still "
                                   r"serving the previous web config: web config .*given twice")
        self.assertTrue(all(line.startswith("pmcprof: ") for line in lines), lines)
        self.assertEqual(rc, 0, err)
        t.log(f"{scrapes[0]} scrapes during the reloads, {len(failures)} failed")
        self.assertFalse(failures, failures[:5])

    def alice_served(self, port):
        try:
            return self.get(port, "alice")[0] == 200
        except OSError:
            return False

    def test_refused_config_is_read_once(self):
        """A config refused after it parsed, naming other files than the serving one (it turns
        TLS off: no cert_file, no key_file), was read again on every request and handshake, one
        line each: now once, then again on SIGHUP or when one of the files changes."""
        self.write_config((self.certs["server.crt"], self.certs["server.key"]), ["alice"])
        srv = s.Serve(["-e", "task-clock", "--web.config.file", self.config], scheme="https")
        try:
            srv.wait_up(ready=lambda: self.alice_served(srv.port))
            with open(self.config + ".new", "w") as f:
                f.write(f"basic_auth_users:\n  alice: '{self.hashes['alice']}'\n")
            os.replace(self.config + ".new", self.config)
            for _ in range(10):
                self.assertEqual(self.get(srv.port, "alice")[0], 200)
            refused = srv.stderr().count("turns TLS off")
            srv.proc.send_signal(signal.SIGHUP)
            self.assertTrue(t.wait_for(lambda: "(SIGHUP) failed" in srv.stderr(), 5, step=0.05),
                            srv.stderr())
            for _ in range(5):
                self.assertEqual(self.get(srv.port, "alice")[0], 200)
            after_hup = srv.stderr().count("turns TLS off")
            # Fixed (TLS again, bob added) but naming a certificate not there yet: refused,
            # then taken at the first request after the certificate and key arrive.
            late = tuple(os.path.join(self.tmp, "late" + x) for x in (".crt", ".key"))
            for path in late:
                if os.path.exists(path):
                    os.unlink(path)
            self.write_config(late, ["alice", "bob"])
            self.assertEqual(self.get(srv.port, "bob")[0], 401)
            self.assertIn("cannot read cert_file", srv.stderr())
            for src, dst in zip(self.cert_b, late):
                shutil.copyfile(src, dst + ".new")
            os.replace(late[1] + ".new", late[1])
            os.replace(late[0] + ".new", late[0])
            self.assertTrue(t.wait_for(lambda: self.get(srv.port, "bob")[0] == 200, 5,
                                       step=0.05), srv.stderr())
        finally:
            rc, _, err = srv.close()
        t.log(f"a config turning TLS off: {refused} line(s) for 11 requests, {after_hup} after "
              "SIGHUP and 5 more")
        self.assertEqual(refused, 1, err)
        self.assertEqual(after_hup, 2, err)
        self.assertEqual(rc, 0, err)

    def test_open_connection_under_new_client_rules(self):
        """From passwords to client certificates: a keep-alive connection opened (without a
        certificate) before the reload got 200 with no credentials at all after it (the new
        config's empty user list, its handshake never asked for a certificate). Now it is
        closed unanswered; a new connection needs the certificate."""
        self.write_config((self.certs["server.crt"], self.certs["server.key"]), ["alice"])
        srv = s.Serve(["-e", "task-clock", "--web.config.file", self.config], scheme="https")
        try:
            srv.wait_up(ready=lambda: self.alice_served(srv.port))
            ctx = ssl.create_default_context(cafile=self.certs["ca.crt"])
            conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx, timeout=5)
            try:
                conn.request("GET", "/metrics")
                resp = conn.getresponse()
                resp.read()
                self.assertEqual(resp.status, 401)
                with open(self.config + ".new", "w") as f:
                    f.write("tls_server_config:\n  cert_file: server.crt\n"
                            "  key_file: server.key\n  client_ca_file: ca.crt\n"
                            "  client_auth_type: RequireAndVerifyClientCert\n")
                os.replace(self.config + ".new", self.config)
                try:
                    conn.request("GET", "/metrics")
                    resp = conn.getresponse()
                    resp.read()
                    after = resp.status
                except (OSError, http.client.HTTPException) as e:
                    after = repr(e)
            finally:
                conn.close()
            client = ["--cert", self.certs["client.crt"], "--key", self.certs["client.key"]]
            with_cert = s.curl(["--cacert", self.certs["ca.crt"], *client, srv.url])[1]
            without = s.curl(["--cacert", self.certs["ca.crt"], srv.url])[1]
        finally:
            rc, _, err = srv.close()
        t.log(f"the open connection after the reload: {after}; new ones: with the client "
              f"certificate HTTP {with_cert}, without {without}")
        self.assertNotEqual(after, 200, "served with no credentials on an older connection")
        self.assertEqual(with_cert, 200, err)
        self.assertIsNone(without, err)
        self.assertIn("reloaded the web config", err)
        self.assertEqual(rc, 0, err)

    def test_unit_reloads_with_sighup(self):
        unit = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "packaging",
                            "pmcprof.service")
        with open(unit) as f:
            text = f.read()
        self.assertRegex(text, r"(?m)^ExecReload=/bin/kill -HUP \$MAINPID$")


if __name__ == "__main__":
    raise SystemExit(t.main(requires=("root", "program:openssl", "program:curl", "python:crypt"),
                            doc=__doc__))

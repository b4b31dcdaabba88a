"""pmcprof serve --web.config.file: TLS, client certificates and basic auth, with real clients.

Certificates are made with openssl for the test (a CA; a server certificate for 127.0.0.1
signed by it; a client certificate signed by it; a self-signed 'rogue' client certificate),
bcrypt hashes with libcrypt (Python's crypt module). The web config is the Prometheus
exporter-toolkit's format.

- curl over HTTPS with basic auth: the right password gets the page (gzip too), a wrong one,
  an unknown user and no credentials get 401 with a WWW-Authenticate challenge, a `$2y$`
  hash (htpasswd's prefix) works like `$2b$`; plain HTTP to the TLS port fails without an
  HTTP answer and pmcprof keeps serving; min_version is enforced (TLS 1.1 refused by
  default, TLS 1.2 refused with min_version TLS13).
- client_auth_type, each of the five: with no client certificate, the CA-signed one and the
  self-signed one, the handshake succeeds or fails as Go's tls.ClientAuthType says.
- A real Prometheus 2.42 (Debian's) scrapes pmcprof over HTTPS (`scheme: https`, `tls_config:
  ca_file`, `basic_auth`): its target is up and pmcprof_up is 1; a second job with a wrong
  password is down with a 401.
- Bad web configs are one 'pmcprof:' line and a HINT, exit 2, before anything is opened: the
  file missing, YAML that does not parse, a missing cert_file, an unknown key, a password
  that is not a bcrypt hash, a key that is not the certificate's.
"""
import os
import shutil
import socket
import tempfile
import unittest

import pmcprof_testlib as t
import serve_testlib as s

PASSWORD = "correct horse"


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pmcprof-tls-")
        cls.certs = s.make_certs(cls.tmp)
        cls.hash_b = s.bcrypt_hash(PASSWORD)
        cls.hash_y = s.bcrypt_hash(PASSWORD, prefix="$2y$")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def web_config(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def tls_config(self, name, extra_tls="", users=True):
        text = (f"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                f"{extra_tls}")
        if users:
            text += (f"basic_auth_users:\n  alice: '{self.hash_b}'\n"
                     f"  bob: '{self.hash_y}'\n")
        return self.web_config(name, text)

    def serve(self, config):
        srv = s.Serve(["-e", "task-clock", "--web.config.file", config], scheme="https")

        def ready():
            rc, status, body, _ = s.curl(["--cacert", self.certs["ca.crt"], "-u",
                                          f"alice:{PASSWORD}", srv.url])
            return status == 200 and "\npmcprof_up 1\n" in "\n" + body
        srv.wait_up(ready=ready)
        return srv

    def test_https_with_basic_auth(self):
        srv = self.serve(self.tls_config("web-auth.yml"))
        ca = ["--cacert", self.certs["ca.crt"]]
        try:
            rc, status, body, _ = s.curl([*ca, "-u", f"alice:{PASSWORD}", srv.url])
            self.assertEqual(status, 200)
            self.assertIn("pmcprof_event_seconds_total", body)
            rc, status, body, _ = s.curl([*ca, "-u", f"bob:{PASSWORD}", srv.url])
            self.assertEqual(status, 200, "a $2y$ hash (htpasswd -B) must work")
            rc, status, body, _ = s.curl([*ca, "--compressed", "-D", "-", "-u",
                                          f"alice:{PASSWORD}", srv.url])
            self.assertEqual(status, 200)
            self.assertRegex(body, r"(?i)content-encoding: gzip")
            self.assertIn("pmcprof_up 1", body)
            for who, creds in (("wrong password", ["-u", "alice:wrong"]),
                               ("unknown user", ["-u", f"mallory:{PASSWORD}"]),
                               ("no credentials", [])):
                rc, status, body, _ = s.curl([*ca, "-D", "-", *creds, srv.url])
                self.assertEqual(status, 401, who)
                self.assertRegex(body, r'(?i)www-authenticate: basic realm="pmcprof"', who)
                self.assertNotIn("pmcprof_up", body, who)
            rc, status, _, _ = s.curl([*ca, "-u", "alice:wrong", srv.base + "/-/healthy"])
            self.assertEqual(status, 401, "every path needs the password")
            # Plain HTTP to the TLS port: no HTTP answer at all, and pmcprof keeps serving.
            rc, status, _, err = s.curl(["-m", "5", f"http://127.0.0.1:{srv.port}/metrics"])
            self.assertIsNone(status)
            self.assertNotEqual(rc, 0)
            t.log(f"plain HTTP to the TLS port: curl exit {rc} ({err.strip()})")
            with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as c:
                c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                data = c.recv(4096)
                self.assertFalse(data.startswith(b"HTTP/"), data[:100])
            # TLS versions: 1.2 and 1.3 by default, not 1.1.
            rc, status, _, _ = s.curl([*ca, "--tls-max", "1.2", "-u", f"alice:{PASSWORD}",
                                       srv.url])
            self.assertEqual(status, 200, "TLS 1.2")
            rc, status, _, err = s.curl([*ca, "--tlsv1.1", "--tls-max", "1.1", "-u",
                                         f"alice:{PASSWORD}", srv.url])
            self.assertIsNone(status, "TLS 1.1 must be refused")
            rc, status, _, _ = s.curl([*ca, "-u", f"alice:{PASSWORD}", srv.url])
            self.assertEqual(status, 200, "still serving after the refused clients")
        finally:
            rc, _, err = srv.close()
        self.assertEqual(rc, 0, err)
        self.assertIn(f"serving https://127.0.0.1:{srv.port}/metrics", err)

    def test_min_version_tls13(self):
        srv = self.serve(self.tls_config("web-tls13.yml", "  min_version: TLS13\n"))
        ca = ["--cacert", self.certs["ca.crt"], "-u", f"alice:{PASSWORD}"]
        try:
            rc, status, _, _ = s.curl([*ca, "--tls-max", "1.2", srv.url])
            self.assertIsNone(status, "TLS 1.2 must be refused with min_version TLS13")
            rc, status, _, _ = s.curl([*ca, "--tlsv1.3", srv.url])
            self.assertEqual(status, 200)
        finally:
            srv.close()

    def test_client_certificates(self):
        ok, no = True, False
        # client_auth_type: (no certificate, CA-signed certificate, self-signed certificate)
        table = {
            "NoClientCert": (ok, ok, ok),
            "RequestClientCert": (ok, ok, ok),
            "RequireAnyClientCert": (no, ok, ok),
            "VerifyClientCertIfGiven": (ok, ok, no),
            "RequireAndVerifyClientCert": (no, ok, no),
        }
        c = self.certs
        clients = {"none": [], "CA-signed": ["--cert", c["client.crt"], "--key", c["client.key"]],
                   "self-signed": ["--cert", c["rogue.crt"], "--key", c["rogue.key"]]}
        for mode, want in table.items():
            ca = "" if mode == "NoClientCert" else "  client_ca_file: ca.crt\n"
            config = self.tls_config(f"web-{mode}.yml",
                                     f"{ca}  client_auth_type: {mode}\n", users=False)
            srv = s.Serve(["-e", "task-clock", "--web.config.file", config], scheme="https")
            try:
                srv.wait_up(ready=lambda: s.curl(
                    ["--cacert", c["ca.crt"], *clients["CA-signed"], srv.base + "/-/ready"])[1]
                    == 200)
                got = []
                for (who, args), expected in zip(clients.items(), want):
                    rc, status, _, _ = s.curl(["--cacert", c["ca.crt"], *args, srv.url])
                    got.append(status == 200)
                    self.assertEqual(status == 200, expected,
                                     f"{mode} with {who} client certificate: curl exit {rc}, "
                                     f"HTTP {status}")
                t.log(f"{mode:27s} none/CA-signed/self-signed: "
                      + "/".join("ok" if g else "refused" for g in got))
            finally:
                srv.close()

    def test_prometheus_scrapes_over_https_with_basic_auth(self):
        srv = self.serve(self.tls_config("web-prom.yml"))
        prom = None
        try:
            target = f"127.0.0.1:{srv.port}"
            config = (
                # A wrong password's check (bcrypt) runs on serve's nice-10 thread: beside two
                # busy loops it took more than 1 s, and the scrape timed out unanswered.
                "global:\n  scrape_interval: 5s\n  scrape_timeout: 5s\n"
                "scrape_configs:\n"
                "  - job_name: pmcprof\n    scheme: https\n"
                f"    tls_config:\n      ca_file: {self.certs['ca.crt']}\n"
                f"    basic_auth:\n      username: alice\n      password: '{PASSWORD}'\n"
                f"    static_configs:\n      - targets: ['{target}']\n"
                "  - job_name: wrong-password\n    scheme: https\n"
                f"    tls_config:\n      ca_file: {self.certs['ca.crt']}\n"
                "    basic_auth:\n      username: alice\n      password: nope\n"
                f"    static_configs:\n      - targets: ['{target}']\n")
            prom = s.Prometheus(config)

            def both_scraped():
                tg = {x["labels"]["job"]: x for x in prom.targets()}
                return (tg.get("pmcprof", {}).get("health") == "up"
                        and tg.get("wrong-password", {}).get("health") == "down")
            self.assertTrue(t.wait_for(both_scraped, 60, step=0.5),
                            f"targets: {prom.targets()}\n{prom.log_tail()}")
            tg = {x["labels"]["job"]: x for x in prom.targets()}
            t.log(f"prometheus: {tg['pmcprof']['scrapeUrl']} up; wrong password: "
                  f"{tg['wrong-password']['lastError']}")
            self.assertIn("401", tg["wrong-password"]["lastError"])
            self.assertTrue(t.wait_for(lambda: prom.query('pmcprof_up{job="pmcprof"} == 1'),
                                       30, step=0.5))
            r = prom.query('pmcprof_event_seconds_total{job="pmcprof",event="task-clock"}')
            self.assertTrue(r and float(r[0]["value"][1]) > 0, r)
        finally:
            if prom:
                prom.stop()
            srv.close()

    def test_bad_web_configs(self):
        cases = {
            "missing file": (os.path.join(self.tmp, "nope.yml"), ("cannot read",)),
            "YAML syntax": (self.web_config("bad-yaml.yml", "tls_server_config: [x\n"),
                            ("not valid YAML", "line")),
            "missing cert_file": (self.web_config(
                "bad-cert.yml", "tls_server_config:\n  cert_file: gone.crt\n  key_file: server.key\n"),
                ("cannot read cert_file", "gone.crt")),
            "unknown key": (self.web_config("bad-key.yml", "tls_server_config:\n  certfile: x\n"),
                            ("unknown key",)),
            "not bcrypt": (self.web_config("bad-hash.yml", "basic_auth_users:\n  alice: secret\n"),
                           ("not a bcrypt hash",)),
            "key mismatch": (self.web_config(
                "bad-pair.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n"),
                ("not a PEM certificate and its unencrypted private key",)),
        }
        port = s.free_port()
        for what, (path, mentions) in cases.items():
            p = t.run_pmcprof(["serve", "--listen", f"127.0.0.1:{port}", "-e", "task-clock",
                               "--web.config.file", path], timeout=30)
            line = t.assert_clean_error(self, p, exit_code=129, mentions=mentions)
            t.log(f"{what}: {line}")


if __name__ == "__main__":
    raise SystemExit(t.main(requires=("root", "program:openssl", "program:curl"), doc=__doc__))

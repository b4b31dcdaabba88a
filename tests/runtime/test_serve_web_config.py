"""pmcprof serve --web.config.file: what the exporter-toolkit refuses or requires, refused or
required here too, with real clients (issue 20, defects 2, 7 and 8).

- A key given twice is refused at start, one line naming it and both lines, exit 129: an
  empty `basic_auth_users:` before the real one (it served /metrics with no password), an
  empty `tls_server_config:` before the real one (it served plain HTTP), a user twice.
- A bcrypt hash of cost 31 (days of CPU per login) is refused at once, one line, exit 129,
  before any bcrypt runs (it held start-up for hours with SIGTERM blocked).
- Header values: X-Frame-Options other than Deny/SameOrigin (`ALLOW-FROM ...`),
  X-Content-Type-Options other than nosniff and a value with CR/LF are refused at start.
- TLS defaults: TLS 1.2 with a static-RSA suite (no forward secrecy) and TLS 1.3 with the
  ffdhe8192 group (468 ms of server CPU per handshake) are refused; ECDHE and X25519 work.
- cipher_suites, curve_preferences and client_allowed_sans are accepted as the toolkit takes
  them and enforced: an unlisted suite, an unlisted group and a client certificate without an
  allowed SAN fail the handshake; the listed ones work.
"""
import os
import shutil
import tempfile
import time
import unittest

import pmcprof_testlib as t
import serve_testlib as s

PASSWORD = "correct horse"


class WebConfigTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pmcprof-webcfg-")
        cls.certs = s.make_certs(cls.tmp)
        # An RSA server certificate: static-RSA key exchange needs one.
        cls.rsa = s.sign_cert(cls.tmp, cls.certs, "rsa-server", "/CN=localhost",
                              "subjectAltName=DNS:localhost,IP:127.0.0.1", key="rsa")
        cls.hash = s.bcrypt_hash(PASSWORD, cost=4)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def refused(self, what, text, mentions, max_s=None):
        path = self.write(what.replace(" ", "-") + ".yml", text)
        t0 = time.monotonic()
        p = t.run_pmcprof(["serve", "--listen", f"127.0.0.1:{s.free_port()}", "-e", "task-clock",
                           "--web.config.file", path], timeout=30)
        took = time.monotonic() - t0
        line = t.assert_clean_error(self, p, exit_code=129, mentions=mentions)
        t.log(f"{what}: {line} ({took:.2f} s)")
        if max_s is not None:
            self.assertLess(took, max_s, what)

    def test_duplicate_keys_refused(self):
        users = f"basic_auth_users:\n  alice: '{self.hash}'\n"
        tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        self.refused("empty users first", "basic_auth_users:\n" + users,
                     ("'basic_auth_users' is given twice", "lines 1 and 2"))
        self.refused("empty tls first", "tls_server_config:\n" + tls + users,
                     ("'tls_server_config' is given twice",))
        self.refused("user twice", users + f"  alice: '{self.hash}'\n",
                     ("'basic_auth_users.alice' is given twice",))
        self.refused("cert_file twice", tls + "  cert_file: other.crt\n",
                     ("'tls_server_config.cert_file' is given twice",))

    def test_bcrypt_cost_limit(self):
        # The shape of a real hash, cost 31: refused before bcrypt runs, so at once.
        hash31 = "$2b$31$" + self.hash[7:]
        self.refused("cost 31", f"basic_auth_users:\n  alice: '{hash31}'\n",
                     ("bcrypt cost 31, above the limit of 16",), max_s=5)

    def test_header_values(self):
        for what, header, mention in (
                ("frame allow-from", "X-Frame-Options: ALLOW-FROM https://evil.example",
                 "is not one of: deny, sameorigin"),
                ("content-type-options", "X-Content-Type-Options: sniff", "one of: nosniff"),
                ("header with CRLF", 'Content-Security-Policy: "a\\r\\nSet-Cookie: x=1"',
                 "has a control character")):
            self.refused(what, f"http_server_config:\n  headers:\n    {header}\n", (mention,))
        # The allowed values still work, in any case.
        srv = s.Serve(["-e", "task-clock", "--web.config.file", self.write(
            "headers-ok.yml", "http_server_config:\n  headers:\n    X-Frame-Options: SameOrigin\n"
            "    X-Content-Type-Options: nosniff\n")])
        try:
            srv.wait_up()
            _, status, headers, _ = s.raw_get(srv.port)
            self.assertEqual(status, 200)
            self.assertEqual(headers.get("x-frame-options"), "SameOrigin")
        finally:
            srv.close()

    def serve_tls(self, name, extra="", cert=None, client=()):
        crt, key = cert or (self.certs["server.crt"], self.certs["server.key"])
        path = self.write(name, f"tls_server_config:\n  cert_file: {crt}\n  key_file: {key}\n"
                          + extra)
        srv = s.Serve(["-e", "task-clock", "--web.config.file", path], scheme="https")
        try:
            srv.wait_up(ready=lambda: s.curl(["--cacert", self.certs["ca.crt"], *client,
                                              srv.url])[1] == 200)
        except BaseException:
            srv.close()
            raise
        return srv

    def handshake(self, srv, args, want, what):
        """curl with ARGS (--ciphers, --curves, TLS versions): WANT an HTTP answer or none."""
        rc, status, _, err = s.curl(["--cacert", self.certs["ca.crt"], *args, srv.url])
        self.assertEqual(status == 200, want, f"{what}: curl exit {rc}, HTTP {status}: {err}")
        t.log(f"{what}: {'served' if status == 200 else 'refused: ' + err.strip()[:80]}")

    def test_forward_secret_defaults(self):
        srv = self.serve_tls("fs-rsa.yml", cert=self.rsa)
        try:
            self.handshake(srv, ["--tls-max", "1.2", "--ciphers", "AES128-GCM-SHA256"], False,
                           "TLS 1.2 static RSA (AES128-GCM-SHA256)")
            self.handshake(srv, ["--tls-max", "1.2", "--ciphers", "ECDHE-RSA-AES128-GCM-SHA256"], True,
                           "TLS 1.2 ECDHE-RSA-AES128-GCM-SHA256")
            self.handshake(srv, ["--tls-max", "1.2", "--ciphers", "DHE-RSA-AES128-GCM-SHA256"], False,
                           "TLS 1.2 DHE-RSA (finite field)")
            self.handshake(srv, ["--tlsv1.3", "--curves", "ffdhe8192"], False, "TLS 1.3 ffdhe8192")
            self.handshake(srv, ["--tlsv1.3", "--curves", "X25519"], True, "TLS 1.3 X25519")
        finally:
            srv.close()

    def test_cipher_suites_curves_and_sans(self):
        srv = self.serve_tls("suites.yml", "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,"
                             " TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA]\n"
                             "  curve_preferences: [CurveP384]\n")
        try:
            self.handshake(srv, ["--tls-max", "1.2", "--ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256"], True,
                           "listed suite")
            self.handshake(srv, ["--tls-max", "1.2", "--ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384"], False,
                           "unlisted suite (AES-256-GCM)")
            self.handshake(srv, ["--tls-max", "1.2", "--ciphers", "ECDHE-ECDSA-AES128-SHA"], False,
                           "unlisted suite made of listed parts (AES-128-CBC, SHA1)")
            self.handshake(srv, ["--tlsv1.3", "--curves", "X25519"], False, "unlisted group X25519")
            self.handshake(srv, ["--tlsv1.3", "--curves", "P-384"], True, "listed group P-384")
        finally:
            srv.close()
        good = s.sign_cert(self.tmp, self.certs, "san-good", "/CN=scraper",
                           "subjectAltName=DNS:scraper.example")
        other = s.sign_cert(self.tmp, self.certs, "san-other", "/CN=other",
                            "subjectAltName=DNS:other.example")
        srv = self.serve_tls("sans.yml", "  client_ca_file: ca.crt\n"
                             "  client_auth_type: RequireAndVerifyClientCert\n"
                             "  client_allowed_sans: [scraper.example]\n",
                             client=["--cert", good[0], "--key", good[1]])
        try:
            for (crt, key), want in ((good, 200), (other, None)):
                rc, status, _, err = s.curl(["--cacert", self.certs["ca.crt"], "--cert", crt,
                                             "--key", key, srv.url])
                self.assertEqual(status, want, f"{crt}: curl exit {rc} {err}")
        finally:
            srv.close()


if __name__ == "__main__":
    raise SystemExit(t.main(requires=("root", "program:openssl", "program:curl"), doc=__doc__))

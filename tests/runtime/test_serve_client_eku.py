"""pmcprof serve: a client certificate must be meant for TLS clients (issue 20, defect 1).

Where one CA signs every host, any host's server certificate chains to client_ca_file: with
client_auth_type RequireAndVerifyClientCert or VerifyClientCertIfGiven, a certificate from
the trusted CA whose extended key usage is serverAuth only was accepted (200). As Go's
crypto/tls (and so the exporter-toolkit) does, its extended key usage must now allow
clientAuth when it names any usage: curl with it gets no answer; with EKU clientAuth, or no
EKU at all, it gets 200.
"""
import os
import shutil
import tempfile
import unittest

import pmcprof_testlib as t
import serve_testlib as s


class ClientEkuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pmcprof-eku-")
        cls.certs = s.make_certs(cls.tmp)  # its client.crt has no EKU at all
        cls.server_only = s.sign_cert(cls.tmp, cls.certs, "host-server", "/CN=web1",
                                      "extendedKeyUsage=serverAuth")
        cls.client_eku = s.sign_cert(cls.tmp, cls.certs, "scraper-eku", "/CN=scraper",
                                     "extendedKeyUsage=clientAuth")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_server_only_certificate_is_no_login(self):
        c = self.certs
        clients = {
            "EKU serverAuth only": (self.server_only, None),
            "EKU clientAuth": (self.client_eku, 200),
            "no EKU": ((c["client.crt"], c["client.key"]), 200),
        }
        for mode in ("RequireAndVerifyClientCert", "VerifyClientCertIfGiven"):
            path = os.path.join(self.tmp, f"{mode}.yml")
            with open(path, "w") as f:
                f.write("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                        f"  client_ca_file: ca.crt\n  client_auth_type: {mode}\n")
            srv = s.Serve(["-e", "task-clock", "--web.config.file", path], scheme="https")
            try:
                good = ["--cert", self.client_eku[0], "--key", self.client_eku[1]]
                srv.wait_up(ready=lambda: s.curl(["--cacert", c["ca.crt"], *good,
                                                  srv.base + "/-/ready"])[1] == 200)
                for who, ((crt, key), want) in clients.items():
                    rc, status, _, err = s.curl(["--cacert", c["ca.crt"], "--cert", crt,
                                                 "--key", key, srv.url])
                    t.log(f"{mode}, {who}: curl exit {rc}, HTTP {status}")
                    self.assertEqual(status, want, f"{mode}, {who}: curl exit {rc} {err}")
            finally:
                srv.close()


if __name__ == "__main__":
    raise SystemExit(t.main(requires=("root", "program:openssl", "program:curl"), doc=__doc__))

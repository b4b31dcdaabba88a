// run/web_config.hpp: the exporter-toolkit web config (YAML), bcrypt checks, basic auth cache.
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>

#include "pmcprof/run/web_config.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

namespace {

// bcrypt of "pmcprof" at cost 4 (libcrypt), fast enough for unit tests.
constexpr const char* kHash = "$2b$04$vLya7ADKHl4SxdJpwDspjO6UDv.LVqYCm5O5PrS0pCzLBkcKt/52S";

std::string export_pem(int (*fn)(void*, gnutls_x509_crt_fmt_t, void*, size_t*), void* obj) {
  std::string out(16384, '\0');
  size_t size = out.size();
  EXPECT_EQ(fn(obj, GNUTLS_X509_FMT_PEM, out.data(), &size), 0);
  out.resize(size);
  return out;
}

// A self-signed certificate and its key, made with GnuTLS (no openssl needed here).
struct KeyPair {
  std::string cert, key;
};
KeyPair make_key_pair() {
  gnutls_x509_privkey_t key;
  gnutls_x509_crt_t crt;
  gnutls_x509_privkey_init(&key);
  EXPECT_EQ(gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                         GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
            0);
  gnutls_x509_crt_init(&crt);
  gnutls_x509_crt_set_version(crt, 3);
  const unsigned char serial[] = {1};
  gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
  gnutls_x509_crt_set_activation_time(crt, std::time(nullptr) - 60);
  gnutls_x509_crt_set_expiration_time(crt, std::time(nullptr) + 3600);
  gnutls_x509_crt_set_dn(crt, "CN=pmcprof unit test", nullptr);
  gnutls_x509_crt_set_key(crt, key);
  EXPECT_EQ(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
  KeyPair kp;
  kp.cert = export_pem(reinterpret_cast<int (*)(void*, gnutls_x509_crt_fmt_t, void*, size_t*)>(
                           &gnutls_x509_crt_export),
                       crt);
  kp.key = export_pem(reinterpret_cast<int (*)(void*, gnutls_x509_crt_fmt_t, void*, size_t*)>(
                          &gnutls_x509_privkey_export),
                      key);
  gnutls_x509_crt_deinit(crt);
  gnutls_x509_privkey_deinit(key);
  return kp;
}

// A private directory with files, removed at the end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/pmcprof-webcfg-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    for (const auto& f : files_) std::remove(f.c_str());
    rmdir(path_.c_str());
  }
  std::string write(const std::string& name, const std::string& text) {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    files_.push_back(p);
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

std::string error_of(const std::string& yaml, const std::string& dir = "/nonexistent") {
  try {
    parse_web_config(yaml, "web.yml", dir);
  } catch (const UserError& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    EXPECT_FALSE(e.hint().empty());
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << yaml;
  return {};
}

}  // namespace

TEST(WebConfig, EmptyMeansPlainHttpWithoutAuth) {
  for (const char* text : {"", "# nothing\n", "---\n"}) {
    WebConfig c = parse_web_config(text, "web.yml", "/x");
    EXPECT_FALSE(c.tls);
    EXPECT_TRUE(c.basic_auth_users.empty());
  }
  // tls_server_config without certificate or client settings: still plain HTTP (toolkit rule).
  EXPECT_FALSE(parse_web_config("tls_server_config:\n  min_version: TLS13\n", "w", "/x").tls);
}

TEST(WebConfig, BasicAuthUsersOnly) {
  WebConfig c = parse_web_config(
      std::string("basic_auth_users:\n  alice: ") + kHash + "\n" + "  bob: '" + kHash + "'\n",
      "web.yml", "/x");
  EXPECT_FALSE(c.tls);
  ASSERT_EQ(c.basic_auth_users.size(), 2u);
  EXPECT_EQ(c.basic_auth_users.at("alice"), kHash);
}

TEST(WebConfig, RefusesWhatItDoesNotUnderstand) {
  EXPECT_NE(error_of("tls_server_config: [unclosed\n")
                .find("not valid YAML: line 2, column 1: end of sequence flow not found"),
            std::string::npos);
  EXPECT_NE(error_of("- a\n- b\n").find("top level must be a mapping"), std::string::npos);
  EXPECT_NE(error_of("basic_auth_user:\n  a: b\n").find("unknown key 'basic_auth_user'"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_fil: x\n")
                .find("unknown key 'tls_server_config.cert_fil'"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: "
                     "[TLS_RSA_WITH_RC4_128_SHA]\n")
                .find("cipher_suites: 'TLS_RSA_WITH_RC4_128_SHA' is not a TLS 1.2 cipher suite"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  curve_preferences: "
                     "[ffdhe8192]\n")
                .find("'ffdhe8192' is not one of X25519"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_allowed_sans: "
                     "[scraper]\n")
                .find("client_allowed_sans needs client_auth_type RequireAndVerifyClientCert"),
            std::string::npos);
  // A key given twice: refused, never the first (or last) silently taken.
  EXPECT_NE(error_of(std::string("basic_auth_users:\nbasic_auth_users:\n  alice: ") + kHash + "\n")
                .find("'basic_auth_users' is given twice (lines 1 and 2)"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\ntls_server_config:\n  cert_file: a\n  key_file: b\n")
                .find("'tls_server_config' is given twice"),
            std::string::npos);
  EXPECT_NE(
      error_of(std::string("basic_auth_users:\n  alice: ") + kHash + "\n  alice: " + kHash + "\n")
          .find("'basic_auth_users.alice' is given twice"),
      std::string::npos);
  EXPECT_NE(error_of("http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
                     "    x-frame-options: sameorigin\n")
                .find("is given twice"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  cert_file: b\n")
                .find("'tls_server_config.cert_file' is given twice"),
            std::string::npos);
  // Header values: the toolkit's rules, one line.
  EXPECT_NE(error_of("http_server_config:\n  headers:\n    X-Frame-Options: ALLOW-FROM x\n")
                .find("'ALLOW-FROM x' is not one of: deny, sameorigin"),
            std::string::npos);
  EXPECT_NE(error_of("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n")
                .find("is not one of: nosniff"),
            std::string::npos);
  EXPECT_NE(error_of("http_server_config:\n  headers:\n    Content-Security-Policy: "
                     "\"a\\r\\nSet-Cookie: x\"\n")
                .find("has a control character"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a.crt\n").find("missing key_file"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  key_file: a.key\n").find("missing cert_file"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: "
                     "Sometimes\n")
                .find("client_auth_type 'Sometimes'"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: "
                     "RequireAndVerifyClientCert\n")
                .find("needs a client_ca_file"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n")
                .find("client_auth_type is NoClientCert"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: SSL3\n")
                .find("min_version 'SSL3'"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n"
                     "  max_version: TLS12\n")
                .find("max_version is older"),
            std::string::npos);
  EXPECT_NE(error_of("basic_auth_users:\n  alice: secret\n").find("not a bcrypt hash"),
            std::string::npos);
  // The right shape, a cost above the limit (refused without running bcrypt), a cost libcrypt
  // refuses (3).
  EXPECT_NE(error_of("basic_auth_users:\n  alice: '$2b$31$vLya7ADKHl4SxdJpwDspjO6UDv.LVqYCm5O5P"
                     "rS0pCzLBkcKt/52S'\n")
                .find("has bcrypt cost 31, above the limit of 16"),
            std::string::npos);
  EXPECT_NE(error_of("basic_auth_users:\n  alice: '$2b$03$vLya7ADKHl4SxdJpwDspjO6UDv.LVqYCm5O5P"
                     "rS0pCzLBkcKt/52S'\n")
                .find("libcrypt does not accept"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("basic_auth_users:\n  'a:b': ") + kHash + "\n")
                .find("is not a user name"),
            std::string::npos);
  EXPECT_NE(error_of("basic_auth_users: [alice]\n").find("map user names"), std::string::npos);
  EXPECT_NE(error_of("http_server_config:\n  headers:\n    Server: pmcprof\n")
                .find("'Server' is not one of"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: [a]\n  key_file: b\n")
                .find("cert_file must be a string"),
            std::string::npos);
}

TEST(WebConfig, NamesTheFileItCannotRead) {
  const std::string e =
      error_of("tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n", "/nope");
  EXPECT_NE(e.find("cannot read cert_file '/nope/missing.crt'"), std::string::npos) << e;
  EXPECT_NE(e.find("No such file"), std::string::npos) << e;
  try {
    load_web_config("/nonexistent/web.yml");
    ADD_FAILURE();
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("cannot read --web.config.file '/nonexistent/web.yml'"),
              std::string::npos);
  }
  // What it tried to read is named though it threw: a reload watches the missing file.
  TempDir dir;
  const std::string path =
      dir.write("web.yml", "tls_server_config:\n  cert_file: late.crt\n  key_file: late.key\n");
  std::vector<std::string> named;
  EXPECT_THROW(load_web_config(path, &named), UserError);
  EXPECT_EQ(named, (std::vector<std::string>{path, dir.path() + "/late.crt"}));
}

TEST(WebConfig, LoadsAKeyPairRelativeToTheConfigFile) {
  TempDir dir;
  const KeyPair kp = make_key_pair();
  dir.write("server.crt", kp.cert);
  dir.write("server.key", kp.key);
  dir.write("ca.crt", kp.cert);
  const std::string path =
      dir.write("web.yml",
                "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                "  client_ca_file: ca.crt\n  client_auth_type: RequireAndVerifyClientCert\n"
                "  min_version: TLS13\nhttp_server_config:\n  http2: false\n  headers:\n"
                "    X-Frame-Options: deny\nbasic_auth_users:\n  alice: " +
                    std::string(kHash) + "\n");
  WebConfig c = load_web_config(path);
  ASSERT_TRUE(c.tls);
  EXPECT_EQ(c.tls->cert_file, dir.path() + "/server.crt");
  EXPECT_EQ(c.tls->cert_pem, kp.cert);
  EXPECT_EQ(c.tls->key_pem, kp.key);
  EXPECT_EQ(c.tls->client_ca_pem, kp.cert);
  EXPECT_EQ(c.tls->client_auth, ClientAuth::require_and_verify_client_cert);
  EXPECT_EQ(c.tls->gnutls_priorities().rfind("NORMAL:-VERS-ALL:+VERS-TLS1.3:-KX-ALL:", 0), 0u);
  ASSERT_EQ(c.headers.size(), 1u);
  EXPECT_EQ(c.headers[0].first, "X-Frame-Options");
  EXPECT_EQ(c.basic_auth_users.size(), 1u);

  // A key that is not the certificate's, and a CA file without a certificate.
  const KeyPair other = make_key_pair();
  dir.write("other.key", other.key);
  dir.write("junk.crt", "not a certificate\n");
  auto err = [&](const std::string& yaml) {
    try {
      parse_web_config(yaml, "web.yml", dir.path());
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err("tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n")
                .find("are not a PEM certificate and its unencrypted private key"),
            std::string::npos);
  EXPECT_NE(err("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                "  client_ca_file: junk.crt\n  client_auth_type: VerifyClientCertIfGiven\n")
                .find("holds no PEM certificate"),
            std::string::npos);
}

TEST(WebConfig, TlsVersionRangeToGnutlsPriorities) {
  // Forward-secret key exchanges and ECDHE groups only, by default.
  const std::string fs =
      ":-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-GROUP-ALL:+GROUP-X25519:"
      "+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1";
  TlsServerConfig t;
  EXPECT_EQ(t.gnutls_priorities(), "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2" + fs);
  t.min_version = "TLS10";
  t.max_version = "TLS11";
  EXPECT_EQ(t.gnutls_priorities(), "NORMAL:-VERS-ALL:+VERS-TLS1.1:+VERS-TLS1.0" + fs);
  t.min_version = "TLS12";
  t.max_version = "TLS12";
  EXPECT_EQ(t.gnutls_priorities(), "NORMAL:-VERS-ALL:+VERS-TLS1.2" + fs);
  t.cipher_suites = {find_cipher_suite("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
                     find_cipher_suite("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA")};
  t.groups = {"GROUP-X25519"};
  EXPECT_EQ(t.gnutls_priorities(),
            "NORMAL:-VERS-ALL:+VERS-TLS1.2:-KX-ALL:+ECDHE-RSA:+ECDHE-ECDSA:-CIPHER-ALL:-MAC-ALL:"
            "+AES-128-CBC:+SHA1:-GROUP-ALL:+GROUP-X25519");
}

TEST(Bcrypt, LibcryptChecksEveryBcryptPrefix) {
  EXPECT_TRUE(bcrypt_matches("pmcprof", kHash));
  std::string y = kHash, a = kHash;
  y[2] = 'y';
  a[2] = 'a';
  EXPECT_TRUE(bcrypt_matches("pmcprof", y));  // htpasswd -B writes $2y$
  EXPECT_TRUE(bcrypt_matches("pmcprof", a));  // Go's bcrypt writes $2a$
  EXPECT_FALSE(bcrypt_matches("pmcprof ", kHash));
  EXPECT_FALSE(bcrypt_matches("", kHash));
  EXPECT_FALSE(bcrypt_matches("pmcprof", "pmcprof"));
  EXPECT_FALSE(bcrypt_matches("pmcprof", "$1$abc$def"));
  EXPECT_EQ(bcrypt_cost(kHash), 4);
  EXPECT_EQ(bcrypt_cost("$2b$1x$"), -1);
}

TEST(BasicAuth, CachesVerdictsAndChecksUnknownUsersToo) {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kHash}});
  EXPECT_TRUE(auth.enabled());
  EXPECT_TRUE(auth.check("alice", "pmcprof"));
  EXPECT_TRUE(auth.check("alice", "pmcprof"));
  EXPECT_EQ(auth.bcrypt_runs(), 1u);
  EXPECT_FALSE(auth.check("alice", "wrong"));
  EXPECT_FALSE(auth.check("alice", "wrong"));
  EXPECT_EQ(auth.bcrypt_runs(), 2u);
  EXPECT_FALSE(auth.check("mallory", "pmcprof"));  // a bcrypt all the same (timing)
  EXPECT_EQ(auth.bcrypt_runs(), 3u);
  EXPECT_FALSE(auth.check("alice", std::string("pmcprof\0x", 9)));
  EXPECT_FALSE(BasicAuth(std::map<std::string, std::string>{}).enabled());
  EXPECT_EQ(auth.cached("alice", "pmcprof"), BasicAuth::Verdict::allow);
  EXPECT_EQ(auth.cached("alice", "wrong"), BasicAuth::Verdict::deny);
  EXPECT_EQ(auth.cached("alice", "never tried"), BasicAuth::Verdict::unknown);
  // 1,030 distinct wrong guesses (past the cache's 1,024) cannot evict a right verdict.
  for (int i = 0; i < 1030; ++i) EXPECT_FALSE(auth.verify("alice", "guess" + std::to_string(i)));
  EXPECT_EQ(auth.cached("alice", "pmcprof"), BasicAuth::Verdict::allow);
}

TEST(BasicAuth, AReloadKeepsRightVerdictsOfUnchangedHashesOnly) {
  BasicAuth before(std::map<std::string, std::string>{{"alice", kHash}, {"bob", kHash}});
  EXPECT_TRUE(before.check("alice", "pmcprof"));
  EXPECT_TRUE(before.check("bob", "pmcprof"));
  EXPECT_FALSE(before.check("alice", "wrong"));
  // Same hash for alice: kept. bob's hash changed: his old password's verdict is not. Wrong
  // verdicts are not carried (they would be refused again anyway).
  std::string other = kHash;
  other.back() = other.back() == 'S' ? 'T' : 'S';
  BasicAuth after(std::map<std::string, std::string>{{"alice", kHash}, {"bob", other}});
  after.keep_verdicts_of(before);
  EXPECT_EQ(after.cached("alice", "pmcprof"), BasicAuth::Verdict::allow);
  EXPECT_EQ(after.cached("bob", "pmcprof"), BasicAuth::Verdict::unknown);
  EXPECT_EQ(after.cached("alice", "wrong"), BasicAuth::Verdict::unknown);
  // A removed user: not kept.
  BasicAuth without_alice(std::map<std::string, std::string>{{"bob", kHash}});
  without_alice.keep_verdicts_of(before);
  EXPECT_EQ(without_alice.cached("alice", "pmcprof"), BasicAuth::Verdict::unknown);
  EXPECT_EQ(without_alice.cached("bob", "pmcprof"), BasicAuth::Verdict::allow);
  EXPECT_EQ(without_alice.bcrypt_runs(), 0u);
}

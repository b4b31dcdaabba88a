#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pmcprof {

// TLS client certificates, with the names (and meaning) of Go's tls.ClientAuthType that the
// Prometheus exporter-toolkit's web config uses.
enum class ClientAuth {
  no_client_cert,                 // NoClientCert (the default)
  request_client_cert,            // RequestClientCert: asked for, not checked
  require_any_client_cert,        // RequireAnyClientCert: one must be sent, not checked
  verify_client_cert_if_given,    // VerifyClientCertIfGiven: checked against client_ca_file
  require_and_verify_client_cert  // RequireAndVerifyClientCert: must be sent and check out
};
const char* to_string(ClientAuth auth);

// The highest bcrypt cost accepted in basic_auth_users. One check at cost 16 takes ~4 s here
// (each step doubles it); cost 31 would take days per login and held start-up that long.
inline constexpr int kMaxBcryptCost = 16;

// A TLS 1.2 cipher suite by its Go name (as the exporter-toolkit's cipher_suites lists them)
// and the GnuTLS key exchange, cipher and MAC it is made of.
struct CipherSuite {
  const char* go_name;
  const char* kx;
  const char* cipher;
  const char* mac;
};
// The suite of that Go name, or nullptr when GnuTLS has none such.
const CipherSuite* find_cipher_suite(const std::string& go_name);

struct TlsServerConfig {
  std::string cert_file, key_file, client_ca_file;  // resolved paths
  std::string cert_pem, key_pem, client_ca_pem;     // their contents, checked to load
  ClientAuth client_auth = ClientAuth::no_client_cert;
  std::string min_version = "TLS12";  // TLS10 .. TLS13, as in the exporter-toolkit
  std::string max_version;            // empty: the newest GnuTLS has (TLS13)
  // cipher_suites: TLS 1.2 and older suites by Go name; empty: every forward-secret (ECDHE)
  // suite of GnuTLS's NORMAL set. As in Go, TLS 1.3's own suites are not configurable.
  std::vector<const CipherSuite*> cipher_suites;
  // curve_preferences as GnuTLS groups ("GROUP-X25519"); empty: X25519, P-256, P-384, P-521
  // (Go's defaults; never the finite-field groups, whose handshakes cost up to 0.5 s of CPU).
  std::vector<std::string> groups;
  // client_allowed_sans: a verified client certificate must carry one of these subject
  // alternative names (DNS, e-mail, IP or URI, compared as text). Empty: any.
  std::vector<std::string> client_allowed_sans;
  // The GnuTLS priority string: the version range, forward-secret key exchanges only (unless
  // cipher_suites names others), the groups, e.g.
  // "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-GROUP-ALL:...".
  std::string gnutls_priorities() const;
};

// The web configuration file of `serve --web.config.file`, in the format of the Prometheus
// exporter-toolkit (docs: https://prometheus.io/docs/prometheus/latest/configuration/https/):
//
//   tls_server_config:     cert_file, key_file, client_ca_file, client_auth_type,
//                          min_version, max_version, cipher_suites, curve_preferences,
//                          prefer_server_cipher_suites, client_allowed_sans
//   http_server_config:    headers (the security headers the toolkit allows, with its rules
//                          for their values), http2 (ignored: pmcprof serves HTTP/1.1)
//   basic_auth_users:      USER: BCRYPT_HASH (cost 4 .. kMaxBcryptCost)
//
// An empty file, or no cert_file/key_file/client settings: plain HTTP. Unknown keys, a key
// given twice in one mapping (YAML would let the first win silently), and inline cert / key /
// client_ca are refused by name rather than ignored.
struct WebConfig {
  std::string path;  // the file it came from ("" when there is none)
  std::optional<TlsServerConfig> tls;
  std::map<std::string, std::string> basic_auth_users;       // user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;  // added to every response
  // Every file read for it (the config itself, certificate, key, CA): what a reload watches.
  std::vector<std::string> files;
};

// Parses the YAML `text`; relative file names in it are relative to `base_dir` (the config
// file's directory, as in the toolkit). Reads and checks every file it names (the key pair
// loads and matches, the CA file holds certificates, the hashes are bcrypt). Throws UserError
// naming `source` and the key at fault. `named`, when given, gets every file it read or tried
// to read (for load_web_config the config itself first), also when it throws: what a reload
// of a refused config watches (a certificate it names may not be there yet).
WebConfig parse_web_config(const std::string& text, const std::string& source,
                           const std::string& base_dir, std::vector<std::string>* named = nullptr);
WebConfig load_web_config(const std::string& path, std::vector<std::string>* named = nullptr);

// Whether `password` matches a bcrypt `hash` ($2a$, $2b$ or $2y$), checked by libcrypt's
// crypt_r and compared in constant time. False for anything that is not a bcrypt hash.
bool bcrypt_matches(const std::string& password, const std::string& hash);
// The cost of a bcrypt hash ("$2b$10$..." -> 10), or -1 when it has none.
int bcrypt_cost(const std::string& hash);

// HTTP basic authentication against basic_auth_users. bcrypt is slow on purpose (~60 ms at
// cost 10 here), so verdicts are cached by SHA-256 of user and password (as the toolkit caches
// them; no password is kept): right ones and wrong ones apart, so a flood of wrong guesses
// evicts only wrong ones. Every check, of a known user or an unknown one, runs one bcrypt at
// each distinct cost configured (the user's own hash at its cost, a stand-in at the others),
// so timing does not tell which users exist, even when their costs differ. Thread-safe.
class BasicAuth {
 public:
  enum class Verdict { unknown, allow, deny };
  explicit BasicAuth(std::map<std::string, std::string> users);
  bool enabled() const { return !users_.empty(); }
  // The cached verdict: never runs bcrypt (fast, for the serving threads).
  Verdict cached(const std::string& user, const std::string& password) const;
  // Runs bcrypt (slow) and caches the verdict.
  bool verify(const std::string& user, const std::string& password);
  // cached(), else verify().
  bool check(const std::string& user, const std::string& password);
  // Takes the right verdicts of `previous` (the config before a reload) for the users whose
  // hash is unchanged: a reload costs scrapers no bcrypt, nor a wait behind a flood of checks.
  void keep_verdicts_of(const BasicAuth& previous);
  std::uint64_t bcrypt_runs() const;

 private:
  static std::string key_of(const std::string& user, const std::string& password);
  std::map<std::string, std::string> users_;
  // One configured hash of each distinct cost: a check runs each cost once.
  std::map<int, std::string> hash_of_cost_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> allowed_;  // SHA-256 of user NUL password (binary) -> user
  std::map<std::string, bool> denied_;
  std::uint64_t bcrypt_runs_ = 0;
};

}  // namespace pmcprof

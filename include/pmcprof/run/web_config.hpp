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

struct TlsServerConfig {
  std::string cert_file, key_file, client_ca_file;  // resolved paths
  std::string cert_pem, key_pem, client_ca_pem;     // their contents, checked to load
  ClientAuth client_auth = ClientAuth::no_client_cert;
  std::string min_version = "TLS12";  // TLS10 .. TLS13, as in the exporter-toolkit
  std::string max_version;            // empty: the newest GnuTLS has (TLS13)
  // The GnuTLS priority string for the version range, e.g.
  // "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2".
  std::string gnutls_priorities() const;
};

// The web configuration file of `serve --web.config.file`, in the format of the Prometheus
// exporter-toolkit (docs: https://prometheus.io/docs/prometheus/latest/configuration/https/):
//
//   tls_server_config:     cert_file, key_file, client_ca_file, client_auth_type,
//                          min_version, max_version
//   http_server_config:    headers (the security headers the toolkit allows), http2 (ignored:
//                          pmcprof serves HTTP/1.1)
//   basic_auth_users:      USER: BCRYPT_HASH
//
// An empty file, or no cert_file/key_file/client settings: plain HTTP. Unknown keys, and the
// toolkit's cipher_suites / curve_preferences / prefer_server_cipher_suites /
// client_allowed_sans, are refused by name rather than ignored.
struct WebConfig {
  std::string path;  // the file it came from ("" when there is none)
  std::optional<TlsServerConfig> tls;
  std::map<std::string, std::string> basic_auth_users;       // user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;  // added to every response
};

// Parses the YAML `text`; relative file names in it are relative to `base_dir` (the config
// file's directory, as in the toolkit). Reads and checks every file it names (the key pair
// loads and matches, the CA file holds certificates, the hashes are bcrypt). Throws UserError
// naming `source` and the key at fault.
WebConfig parse_web_config(const std::string& text, const std::string& source,
                           const std::string& base_dir);
WebConfig load_web_config(const std::string& path);

// Whether `password` matches a bcrypt `hash` ($2a$, $2b$ or $2y$), checked by libcrypt's
// crypt_r. False for anything that is not a bcrypt hash.
bool bcrypt_matches(const std::string& password, const std::string& hash);

// HTTP basic authentication against basic_auth_users. bcrypt is slow on purpose (~60 ms at
// cost 10 here), so verdicts are cached by SHA-256 of user and password (as the toolkit caches
// them; no password is kept); an unknown user costs a bcrypt too, so timing does not tell
// which users exist. Thread-safe.
class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);
  bool enabled() const { return !users_.empty(); }
  bool check(const std::string& user, const std::string& password);
  std::uint64_t bcrypt_runs() const;

 private:
  std::map<std::string, std::string> users_;
  mutable std::mutex mu_;
  std::map<std::string, bool> verdicts_;  // key: SHA-256 of user NUL password (binary)
  std::uint64_t bcrypt_runs_ = 0;
};

}  // namespace pmcprof

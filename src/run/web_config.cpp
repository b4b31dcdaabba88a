#include "pmcprof/run/web_config.hpp"

#include <crypt.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"

namespace pmcprof {

namespace {

constexpr const char* kHint =
    "the web config format is the Prometheus exporter-toolkit's: see WEB CONFIGURATION in "
    "man pmcprof";

// Security headers the exporter-toolkit allows in http_server_config.headers.
constexpr std::array<const char*, 5> kAllowedHeaders = {
    "Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options", "X-XSS-Protection",
    "Content-Security-Policy"};

class Parser {
 public:
  Parser(std::string source, std::string base_dir)
      : source_(std::move(source)), base_dir_(std::move(base_dir)) {}

  [[noreturn]] void fail(const std::string& what, const YAML::Node* at = nullptr) const {
    std::string where;
    if (at && at->Mark().line >= 0) where = " (line " + std::to_string(at->Mark().line + 1) + ")";
    throw UserError("web config " + source_ + ": " + what + where, kHint);
  }

  // A missing key (an invalid node in yaml-cpp) or null: empty.
  std::string scalar(const YAML::Node& node, const std::string& key) const {
    if (!node.IsDefined() || node.IsNull()) return {};
    if (!node.IsScalar()) fail(key + " must be a string", &node);
    return node.Scalar();
  }

  // The keys of a mapping, each checked against `known`; refused ones say why.
  void check_keys(const YAML::Node& map, const std::string& section,
                  const std::vector<std::string>& known,
                  const std::map<std::string, std::string>& refused = {}) const {
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      if (auto it = refused.find(key); it != refused.end())
        fail(section + key + " is not supported: " + it->second, &kv.first);
      bool ok = false;
      for (const auto& k : known) ok = ok || k == key;
      if (!ok) fail("unknown key '" + section + key + "'", &kv.first);
    }
  }

  std::string resolve(const std::string& file) const {
    if (file.empty() || file.front() == '/' || base_dir_.empty()) return file;
    return base_dir_ + "/" + file;
  }

  std::string read(const std::string& key, const std::string& path) const {
    errno = 0;
    auto text = read_file(path);
    if (!text) {
      const int err = errno;
      throw UserError("web config " + source_ + ": cannot read " + key + " '" + path +
                          "': " + errno_string(err ? err : ENOENT),
                      "the file must exist and be readable by the user pmcprof runs as");
    }
    return *text;
  }

  WebConfig parse(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      const std::string where = e.mark.line >= 0
                                    ? "line " + std::to_string(e.mark.line + 1) + ", column " +
                                          std::to_string(e.mark.column + 1) + ": "
                                    : "";
      throw UserError("web config " + source_ + " is not valid YAML: " + where + e.msg, kHint);
    }
    WebConfig config;
    config.path = source_;
    if (root.IsNull()) return config;
    if (!root.IsMap()) fail("the top level must be a mapping (tls_server_config: ...)", &root);
    check_keys(root, "", {"tls_server_config", "http_server_config", "basic_auth_users"});
    if (auto tls = root["tls_server_config"]; tls.IsDefined() && !tls.IsNull())
      config.tls = parse_tls(tls);
    if (auto http = root["http_server_config"]; http.IsDefined() && !http.IsNull())
      parse_http(http, config);
    if (auto users = root["basic_auth_users"]; users.IsDefined() && !users.IsNull()) {
      if (!users.IsMap()) fail("basic_auth_users must map user names to bcrypt hashes", &users);
      for (const auto& kv : users) {
        const std::string user = kv.first.as<std::string>();
        const std::string hash = scalar(kv.second, "basic_auth_users." + user);
        if (user.empty() || user.find(':') != std::string::npos)
          fail("basic_auth_users: '" + user + "' is not a user name (empty, or has ':')",
               &kv.first);
        check_bcrypt(user, hash, kv.second);
        config.basic_auth_users[user] = hash;
      }
    }
    return config;
  }

 private:
  void check_bcrypt(const std::string& user, const std::string& hash,
                    const YAML::Node& node) const {
    const bool prefix =
        hash.rfind("$2a$", 0) == 0 || hash.rfind("$2b$", 0) == 0 || hash.rfind("$2y$", 0) == 0;
    if (!prefix || hash.size() != 60)
      fail("basic_auth_users." + user +
               " is not a bcrypt hash ($2b$/$2y$/$2a$, 60 characters): make one with "
               "'mkpasswd -m bcrypt -R 10' (package whois) or 'htpasswd -nBC 10 USER' "
               "(apache2-utils)",
           &node);
    // libcrypt must accept the setting (cost 4..31, valid salt): crypt_r returns the hash
    // itself for the right password and a string starting with '*' for a bad setting.
    crypt_data data{};
    const char* out = crypt_r("", hash.c_str(), &data);
    if (!out || out[0] == '*')
      fail("basic_auth_users." + user + ": libcrypt does not accept this bcrypt hash", &node);
  }

  ClientAuth client_auth(const std::string& auth, const YAML::Node& node) const {
    if (auth.empty() || auth == "NoClientCert") return ClientAuth::no_client_cert;
    if (auth == "RequestClientCert") return ClientAuth::request_client_cert;
    if (auth == "RequireAnyClientCert" || auth == "RequireClientCert")
      return ClientAuth::require_any_client_cert;
    if (auth == "VerifyClientCertIfGiven") return ClientAuth::verify_client_cert_if_given;
    if (auth == "RequireAndVerifyClientCert") return ClientAuth::require_and_verify_client_cert;
    fail("tls_server_config.client_auth_type '" + auth +
             "' is not one of NoClientCert, RequestClientCert, RequireAnyClientCert, "
             "VerifyClientCertIfGiven, RequireAndVerifyClientCert",
         &node);
  }

  std::optional<TlsServerConfig> parse_tls(const YAML::Node& node) const {
    if (!node.IsMap()) fail("tls_server_config must be a mapping", &node);
    const std::string not_here = "pmcprof's TLS (GnuTLS) uses its own NORMAL priorities";
    check_keys(node, "tls_server_config.",
               {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version",
                "max_version"},
               {{"cipher_suites", not_here},
                {"curve_preferences", not_here},
                {"prefer_server_cipher_suites", not_here},
                {"client_allowed_sans", "client certificates are checked against the CA only"},
                {"cert", "give the certificate as cert_file"},
                {"key", "give the key as key_file"},
                {"client_ca", "give the CA as client_ca_file"}});
    TlsServerConfig tls;
    tls.cert_file = resolve(scalar(node["cert_file"], "tls_server_config.cert_file"));
    tls.key_file = resolve(scalar(node["key_file"], "tls_server_config.key_file"));
    tls.client_ca_file =
        resolve(scalar(node["client_ca_file"], "tls_server_config.client_ca_file"));
    const std::string auth = scalar(node["client_auth_type"], "tls_server_config.client_auth_type");
    if (tls.cert_file.empty() && tls.key_file.empty() && tls.client_ca_file.empty() && auth.empty())
      return std::nullopt;  // the toolkit's rule: nothing about TLS given, plain HTTP
    if (tls.cert_file.empty()) fail("tls_server_config: missing cert_file", &node);
    if (tls.key_file.empty()) fail("tls_server_config: missing key_file", &node);
    tls.client_auth = client_auth(auth, node);
    const bool verifies = tls.client_auth == ClientAuth::verify_client_cert_if_given ||
                          tls.client_auth == ClientAuth::require_and_verify_client_cert;
    if (verifies && tls.client_ca_file.empty())
      fail("tls_server_config: client_auth_type " + auth + " needs a client_ca_file", &node);
    if (!tls.client_ca_file.empty() && tls.client_auth == ClientAuth::no_client_cert)
      fail("tls_server_config: client_ca_file is set but client_auth_type is NoClientCert", &node);
    for (const char* key : {"min_version", "max_version"}) {
      const std::string v = scalar(node[key], std::string("tls_server_config.") + key);
      if (v.empty()) continue;
      if (v != "TLS10" && v != "TLS11" && v != "TLS12" && v != "TLS13")
        fail(std::string("tls_server_config.") + key + " '" + v +
                 "' is not one of TLS10, TLS11, TLS12, TLS13",
             &node);
      (std::string(key) == "min_version" ? tls.min_version : tls.max_version) = v;
    }
    if (!tls.max_version.empty() && tls.max_version < tls.min_version)
      fail("tls_server_config: max_version is older than min_version", &node);

    tls.cert_pem = read("cert_file", tls.cert_file);
    tls.key_pem = read("key_file", tls.key_file);
    if (!tls.client_ca_file.empty()) tls.client_ca_pem = read("client_ca_file", tls.client_ca_file);
    check_credentials(tls);
    return tls;
  }

  // The key pair loads and matches, and the CA file holds at least one certificate: the
  // daemon would otherwise fail later with a message only in its log.
  void check_credentials(const TlsServerConfig& tls) const {
    gnutls_certificate_credentials_t raw = nullptr;
    if (gnutls_certificate_allocate_credentials(&raw) != GNUTLS_E_SUCCESS)
      throw SystemError("gnutls_certificate_allocate_credentials failed");
    std::unique_ptr<gnutls_certificate_credentials_st, void (*)(gnutls_certificate_credentials_t)>
        cred(raw, gnutls_certificate_free_credentials);
    auto datum = [](const std::string& s) {
      return gnutls_datum_t{reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())),
                            static_cast<unsigned>(s.size())};
    };
    const gnutls_datum_t cert = datum(tls.cert_pem), key = datum(tls.key_pem);
    int rc = gnutls_certificate_set_x509_key_mem2(cred.get(), &cert, &key, GNUTLS_X509_FMT_PEM,
                                                  nullptr, 0);
    if (rc < 0)
      throw UserError(
          "web config " + source_ + ": cert_file '" + tls.cert_file + "' and key_file '" +
              tls.key_file +
              "' are not a PEM certificate and its unencrypted private key: " + gnutls_strerror(rc),
          kHint);
    if (!tls.client_ca_file.empty()) {
      const gnutls_datum_t ca = datum(tls.client_ca_pem);
      rc = gnutls_certificate_set_x509_trust_mem(cred.get(), &ca, GNUTLS_X509_FMT_PEM);
      if (rc <= 0)
        throw UserError("web config " + source_ + ": client_ca_file '" + tls.client_ca_file +
                            "' holds no PEM certificate" +
                            (rc < 0 ? std::string(": ") + gnutls_strerror(rc) : ""),
                        kHint);
    }
  }

  void parse_http(const YAML::Node& node, WebConfig& config) const {
    if (!node.IsMap()) fail("http_server_config must be a mapping", &node);
    check_keys(node, "http_server_config.", {"http2", "headers"});
    if (auto h2 = node["http2"]; h2.IsDefined() && !h2.IsNull()) {
      const std::string v = scalar(h2, "http_server_config.http2");
      if (v != "true" && v != "false") fail("http_server_config.http2 must be true or false", &h2);
    }
    auto headers = node["headers"];
    if (!headers.IsDefined() || headers.IsNull()) return;
    if (!headers.IsMap()) fail("http_server_config.headers must be a mapping", &headers);
    for (const auto& kv : headers) {
      const std::string name = kv.first.as<std::string>();
      bool allowed = false;
      for (const char* a : kAllowedHeaders) allowed = allowed || strcasecmp(a, name.c_str()) == 0;
      if (!allowed)
        fail("http_server_config.headers: '" + name +
                 "' is not one of Strict-Transport-Security, X-Content-Type-Options, "
                 "X-Frame-Options, X-XSS-Protection, Content-Security-Policy",
             &kv.first);
      const std::string value = scalar(kv.second, "http_server_config.headers." + name);
      if (value.find_first_of("\r\n") != std::string::npos)
        fail("http_server_config.headers." + name + " has a line break", &kv.second);
      config.headers.emplace_back(name, value);
    }
  }

  std::string source_;
  std::string base_dir_;
};

std::string sha256(const std::string& data) {
  unsigned char digest[32];
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data.data(), data.size(), digest) != 0)
    throw SystemError("gnutls_hash_fast(SHA-256) failed");
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

// A valid bcrypt hash no password matches in practice: unknown users pay one bcrypt too.
constexpr const char* kDummyHash = "$2b$10$k6nT/XKbsHgPxHRVauJEI.wNEKfzMKZtKaTc8Qca/W/aMOoVlCsBm";

}  // namespace

const char* to_string(ClientAuth auth) {
  switch (auth) {
    case ClientAuth::no_client_cert:
      return "NoClientCert";
    case ClientAuth::request_client_cert:
      return "RequestClientCert";
    case ClientAuth::require_any_client_cert:
      return "RequireAnyClientCert";
    case ClientAuth::verify_client_cert_if_given:
      return "VerifyClientCertIfGiven";
    case ClientAuth::require_and_verify_client_cert:
      return "RequireAndVerifyClientCert";
  }
  return "?";
}

std::string TlsServerConfig::gnutls_priorities() const {
  static const std::array<std::pair<const char*, const char*>, 4> versions = {{
      {"TLS10", "+VERS-TLS1.0"},
      {"TLS11", "+VERS-TLS1.1"},
      {"TLS12", "+VERS-TLS1.2"},
      {"TLS13", "+VERS-TLS1.3"},
  }};
  const std::string lo = min_version.empty() ? "TLS12" : min_version;
  const std::string hi = max_version.empty() ? "TLS13" : max_version;
  std::string out = "NORMAL:-VERS-ALL";
  for (auto it = versions.rbegin(); it != versions.rend(); ++it)
    if (it->first >= lo && it->first <= hi) out += std::string(":") + it->second;
  return out;
}

WebConfig parse_web_config(const std::string& text, const std::string& source,
                           const std::string& base_dir) {
  try {
    return Parser(source, base_dir).parse(text);
  } catch (const YAML::Exception& e) {  // e.g. a key that is a list, a value of the wrong type
    throw UserError("web config " + source + ": " + e.what(), kHint);
  }
}

WebConfig load_web_config(const std::string& path) {
  errno = 0;
  auto text = read_file(path);
  if (!text) {
    const int err = errno;
    throw UserError(
        "cannot read --web.config.file '" + path + "': " + errno_string(err ? err : ENOENT),
        "give the path of an exporter-toolkit web config (YAML) readable by pmcprof");
  }
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
  return parse_web_config(*text, path, dir);
}

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  if (hash.size() != 60 || hash.rfind("$2", 0) != 0) return false;
  auto data = std::make_unique<crypt_data>();  // ~32 KB: not on the stack
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  return out && out[0] != '*' && hash == out;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

bool BasicAuth::check(const std::string& user, const std::string& password) {
  if (password.find('\0') != std::string::npos) return false;
  const std::string key = sha256(user + std::string(1, '\0') + password);
  {
    std::lock_guard lock(mu_);
    if (auto it = verdicts_.find(key); it != verdicts_.end()) return it->second;
  }
  const auto it = users_.find(user);
  const bool ok =
      bcrypt_matches(password, it == users_.end() ? kDummyHash : it->second) && it != users_.end();
  std::lock_guard lock(mu_);
  ++bcrypt_runs_;
  if (verdicts_.size() >= 1024) verdicts_.clear();  // bounded: a flood of guesses cannot grow it
  verdicts_[key] = ok;
  return ok;
}

std::uint64_t BasicAuth::bcrypt_runs() const {
  std::lock_guard lock(mu_);
  return bcrypt_runs_;
}

}  // namespace pmcprof

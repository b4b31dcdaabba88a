#include "pmcprof/run/web_config.hpp"

#include <crypt.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

std::string bcrypt_duration(int cost);

constexpr const char* kHint =
    "the web config format is the Prometheus exporter-toolkit's: see WEB CONFIGURATION in "
    "man pmcprof";

// Security headers the exporter-toolkit allows in http_server_config.headers, and the values
// it allows for each (case-insensitive; nullptr: any value on one line).
struct AllowedHeader {
  const char* name;
  std::array<const char*, 2> values;
};
constexpr std::array<AllowedHeader, 5> kAllowedHeaders = {{
    {"Strict-Transport-Security", {nullptr, nullptr}},
    {"X-Content-Type-Options", {"nosniff", nullptr}},
    {"X-Frame-Options", {"deny", "sameorigin"}},
    {"X-XSS-Protection", {nullptr, nullptr}},
    {"Content-Security-Policy", {nullptr, nullptr}},
}};

// The TLS 1.2 suites of Go's crypto/tls that GnuTLS has too (Go's names, as the toolkit's
// cipher_suites takes them). RC4 and 3DES are not offered by GnuTLS's NORMAL set here.
constexpr std::array<CipherSuite, 19> kCipherSuites = {{
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "RSA", "AES-128-CBC", "SHA1"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "RSA", "AES-256-CBC", "SHA1"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA256", "RSA", "AES-128-CBC", "SHA256"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "AES-128-GCM", "AEAD"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "RSA", "AES-256-GCM", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA", "AES-128-CBC", "SHA1"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA", "AES-256-CBC", "SHA1"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA", "AES-128-CBC", "SHA1"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA", "AES-256-CBC", "SHA1"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA", "AES-128-CBC", "SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA", "AES-128-CBC", "SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA", "AES-128-GCM", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA", "AES-256-GCM", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
    // Go's older names for the two above.
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
}};
// TLS 1.3's suites: accepted in cipher_suites and not applied, as Go does.
constexpr std::array<const char*, 3> kTls13Suites = {
    "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"};

// curve_preferences: Go's names -> GnuTLS groups.
constexpr std::array<std::pair<const char*, const char*>, 4> kCurves = {{
    {"X25519", "GROUP-X25519"},
    {"CurveP256", "GROUP-SECP256R1"},
    {"CurveP384", "GROUP-SECP384R1"},
    {"CurveP521", "GROUP-SECP521R1"},
}};

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

  // A key given twice in one mapping: yaml-cpp keeps both and a lookup finds the first, so
  // an empty `basic_auth_users:` before the real one would turn authentication off. The
  // toolkit (Go's yaml.v2 in strict mode) refuses them; so does pmcprof, in every mapping.
  void check_unique(const YAML::Node& map, const std::string& section,
                    bool ignore_case = false) const {
    std::map<std::string, int> seen;  // key -> its line
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) fail("the keys of " + section + " must be strings", &kv.first);
      std::string key = kv.first.Scalar();
      if (ignore_case) key = to_lower(key);
      const int line = kv.first.Mark().line + 1;
      if (auto [it, fresh] = seen.emplace(key, line); !fresh)
        fail("'" + section + kv.first.Scalar() + "' is given twice (lines " +
             std::to_string(it->second) + " and " + std::to_string(line) +
             "): a duplicate key is refused rather than one of them ignored");
    }
  }

  // The keys of a mapping, each checked against `known`; refused ones say why.
  void check_keys(const YAML::Node& map, const std::string& section,
                  const std::vector<std::string>& known,
                  const std::map<std::string, std::string>& refused = {}) const {
    check_unique(map, section);
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

  // A list of strings (a missing key or null: empty).
  std::vector<std::string> scalars(const YAML::Node& node, const std::string& key) const {
    std::vector<std::string> out;
    if (!node.IsDefined() || node.IsNull()) return out;
    if (!node.IsSequence()) fail(key + " must be a list", &node);
    for (const auto& item : node) out.push_back(scalar(item, key));
    return out;
  }

  std::string read(const std::string& key, const std::string& path) {
    files_.push_back(path);
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
      check_unique(users, "basic_auth_users.");
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
    config.files = files_;
    return config;
  }

  // Every file read or tried so far (a parse that threw too).
  const std::vector<std::string>& files() const { return files_; }

 private:
  void check_bcrypt(const std::string& user, const std::string& hash,
                    const YAML::Node& node) const {
    const bool prefix =
        hash.rfind("$2a$", 0) == 0 || hash.rfind("$2b$", 0) == 0 || hash.rfind("$2y$", 0) == 0;
    const int cost = bcrypt_cost(hash);
    if (!prefix || hash.size() != 60 || cost < 0)
      fail("basic_auth_users." + user +
               " is not a bcrypt hash ($2b$/$2y$/$2a$, 60 characters): make one with "
               "'mkpasswd -m bcrypt -R 10' (package whois) or 'htpasswd -nBC 10 USER' "
               "(apache2-utils)",
           &node);
    // Checked before anything runs bcrypt: at cost 31 one check takes days.
    if (cost > kMaxBcryptCost)
      throw UserError("web config " + source_ + ": basic_auth_users." + user + " has bcrypt cost " +
                          std::to_string(cost) + ", above the limit of " +
                          std::to_string(kMaxBcryptCost) + " (one login would take " +
                          bcrypt_duration(cost) + " of CPU here)",
                      "make the hash with cost 10 to 12: mkpasswd -m bcrypt -R 10, or "
                      "htpasswd -nBC 10 USER");
    // libcrypt must accept the setting (cost 4..31, valid salt): crypt_r returns the hash
    // itself for the right password and a string starting with '*' for a bad setting. The
    // salt is tried at cost 4 (~1 ms) rather than the hash's own cost.
    std::string setting = hash;
    if (cost >= 4) setting.replace(4, 2, "04");
    auto data = std::make_unique<crypt_data>();  // ~32 KB: not on the stack
    const char* out = crypt_r("", setting.c_str(), data.get());
    if (cost < 4 || !out || out[0] == '*')
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

  std::optional<TlsServerConfig> parse_tls(const YAML::Node& node) {
    if (!node.IsMap()) fail("tls_server_config must be a mapping", &node);
    check_keys(node, "tls_server_config.",
               {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version",
                "max_version", "cipher_suites", "curve_preferences", "prefer_server_cipher_suites",
                "client_allowed_sans"},
               {{"cert", "give the certificate as cert_file"},
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
    parse_tls_choices(node, tls, auth);

    tls.cert_pem = read("cert_file", tls.cert_file);
    tls.key_pem = read("key_file", tls.key_file);
    if (!tls.client_ca_file.empty()) tls.client_ca_pem = read("client_ca_file", tls.client_ca_file);
    check_credentials(tls);
    return tls;
  }

  // cipher_suites, curve_preferences, prefer_server_cipher_suites, client_allowed_sans, with
  // the toolkit's names and meaning.
  void parse_tls_choices(const YAML::Node& node, TlsServerConfig& tls,
                         const std::string& auth) const {
    for (const auto& name : scalars(node["cipher_suites"], "tls_server_config.cipher_suites")) {
      bool tls13 = false;
      for (const char* s : kTls13Suites) tls13 = tls13 || name == s;
      if (tls13) continue;  // as in Go: TLS 1.3's suites are not configurable
      const CipherSuite* suite = find_cipher_suite(name);
      if (!suite)
        fail("tls_server_config.cipher_suites: '" + name +
                 "' is not a TLS 1.2 cipher suite pmcprof (GnuTLS) offers; use Go's names, e.g. "
                 "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
             &node);
      tls.cipher_suites.push_back(suite);
    }
    for (const auto& name :
         scalars(node["curve_preferences"], "tls_server_config.curve_preferences")) {
      const char* group = nullptr;
      for (const auto& [go, gnutls] : kCurves)
        if (name == go) group = gnutls;
      if (!group)
        fail("tls_server_config.curve_preferences: '" + name +
                 "' is not one of X25519, CurveP256, CurveP384, CurveP521",
             &node);
      tls.groups.emplace_back(group);
    }
    // Go ignores it since 1.18 (the server's order is taken when it matters): accepted, as
    // the toolkit does, and checked to be a boolean.
    if (auto p = node["prefer_server_cipher_suites"]; p.IsDefined() && !p.IsNull()) {
      const std::string v = scalar(p, "tls_server_config.prefer_server_cipher_suites");
      if (v != "true" && v != "false")
        fail("tls_server_config.prefer_server_cipher_suites must be true or false", &p);
    }
    tls.client_allowed_sans =
        scalars(node["client_allowed_sans"], "tls_server_config.client_allowed_sans");
    const bool verifies = tls.client_auth == ClientAuth::verify_client_cert_if_given ||
                          tls.client_auth == ClientAuth::require_and_verify_client_cert;
    if (!tls.client_allowed_sans.empty() && !verifies)
      fail(
          "tls_server_config: client_allowed_sans needs client_auth_type "
          "RequireAndVerifyClientCert (or VerifyClientCertIfGiven), not " +
              (auth.empty() ? std::string("NoClientCert") : auth),
          &node);
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
    // The priority string made of min/max_version, cipher_suites and curve_preferences must
    // leave GnuTLS something to negotiate with.
    gnutls_priority_t prio = nullptr;
    const char* err_pos = nullptr;
    const std::string priorities = tls.gnutls_priorities();
    rc = gnutls_priority_init(&prio, priorities.c_str(), &err_pos);
    if (rc < 0)
      throw UserError("web config " + source_ + ": GnuTLS refuses the TLS settings (" + priorities +
                          "): " + gnutls_strerror(rc),
                      kHint);
    gnutls_priority_deinit(prio);
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
    check_unique(headers, "http_server_config.headers.", true);
    for (const auto& kv : headers) {
      const std::string name = kv.first.as<std::string>();
      const AllowedHeader* allowed = nullptr;
      for (const auto& a : kAllowedHeaders)
        if (strcasecmp(a.name, name.c_str()) == 0) allowed = &a;
      if (!allowed)
        fail("http_server_config.headers: '" + name +
                 "' is not one of Strict-Transport-Security, X-Content-Type-Options, "
                 "X-Frame-Options, X-XSS-Protection, Content-Security-Policy",
             &kv.first);
      const std::string value = scalar(kv.second, "http_server_config.headers." + name);
      // A line break would split the answer's head (a header of the file's choosing, or a
      // body); other control characters are no header value either (RFC 9110 field-value).
      for (const char ch : value)
        if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f)
          fail("http_server_config.headers." + name +
                   " has a control character (a line break?): a header value is one line",
               &kv.second);
      if (allowed->values[0]) {
        bool ok = false;
        for (const char* v : allowed->values) ok = ok || (v && strcasecmp(v, value.c_str()) == 0);
        if (!ok)
          fail("http_server_config.headers." + name + " '" + value +
                   "' is not one of: " + allowed->values[0] +
                   (allowed->values[1] ? std::string(", ") + allowed->values[1] : ""),
               &kv.second);
      }
      config.headers.emplace_back(allowed->name, value);
    }
  }

  std::string source_;
  std::string base_dir_;
  std::vector<std::string> files_;  // every file read, for the reload's watch
};

// About how long one bcrypt of `cost` takes here (~60 ms at cost 10, doubling per step).
std::string bcrypt_duration(int cost) {
  const double s = 0.06 * static_cast<double>(1ULL << cost) / 1024.0;
  if (s < 120) return std::to_string(std::llround(s)) + " s";
  if (s < 7200) return std::to_string(std::llround(s / 60)) + " min";
  if (s < 172800) return std::to_string(std::llround(s / 3600)) + " h";
  return std::to_string(std::llround(s / 86400)) + " days";
}

std::string sha256(const std::string& data) {
  unsigned char digest[32];
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data.data(), data.size(), digest) != 0)
    throw SystemError("gnutls_hash_fast(SHA-256) failed");
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

// Compares in time that depends on the length only (the length of a bcrypt hash is public):
// a plain compare stops at the first difference, which a timing attacker can measure.
bool equal_constant_time(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

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

const CipherSuite* find_cipher_suite(const std::string& go_name) {
  for (const auto& s : kCipherSuites)
    if (go_name == s.go_name) return &s;
  return nullptr;
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
  // Key exchanges: forward-secret ones only (ECDHE; not static RSA, whose recorded traffic a
  // later stolen key decrypts, nor finite-field DHE, whose big groups cost the server up to
  // 0.5 s of CPU per handshake), unless cipher_suites names the suites. These keywords apply
  // to TLS 1.2 and older; TLS 1.3 is always forward-secret.
  auto add_unique = [&out](const std::string& item) {
    if (out.find(":" + item + ":") == std::string::npos &&
        (out.size() < item.size() + 1 ||
         out.compare(out.size() - item.size() - 1, item.size() + 1, ":" + item) != 0))
      out += ":" + item;
  };
  out += ":-KX-ALL";
  if (cipher_suites.empty()) {
    out += ":+ECDHE-ECDSA:+ECDHE-RSA";
  } else {
    // GnuTLS takes key exchanges, ciphers and MACs apart: the union of the suites' parts,
    // plus TLS 1.3's AEAD ciphers (not configurable, as in Go). The server checks each
    // TLS 1.2 handshake's suite against the list itself (HttpServer), so a combination of
    // those parts that is not listed is refused.
    for (const auto* s : cipher_suites) add_unique(std::string("+") + s->kx);
    out += ":-CIPHER-ALL:-MAC-ALL";
    for (const auto* s : cipher_suites) add_unique(std::string("+") + s->cipher);
    for (const auto* s : cipher_suites) add_unique(std::string("+") + s->mac);
    if (hi >= "TLS13")
      for (const char* c : {"+AES-256-GCM", "+CHACHA20-POLY1305", "+AES-128-GCM", "+AEAD"})
        add_unique(c);
  }
  out += ":-GROUP-ALL";
  if (groups.empty()) {
    out += ":+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1";
  } else {
    for (const auto& g : groups) add_unique("+" + g);
  }
  return out;
}

WebConfig parse_web_config(const std::string& text, const std::string& source,
                           const std::string& base_dir, std::vector<std::string>* named) {
  Parser parser(source, base_dir);
  auto note = [&] {
    if (named) named->insert(named->end(), parser.files().begin(), parser.files().end());
  };
  try {
    WebConfig config = parser.parse(text);
    note();
    return config;
  } catch (const YAML::Exception& e) {  // e.g. a key that is a list, a value of the wrong type
    note();
    throw UserError("web config " + source + ": " + e.what(), kHint);
  } catch (...) {
    note();
    throw;
  }
}

WebConfig load_web_config(const std::string& path, std::vector<std::string>* named) {
  if (named) named->push_back(path);
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
  WebConfig config = parse_web_config(*text, path, dir, named);
  config.files.insert(config.files.begin(), path);
  return config;
}

int bcrypt_cost(const std::string& hash) {
  // "$2b$NN$": two digits between the third and fourth '$'.
  if (hash.size() < 7 || hash[0] != '$' || hash[1] != '2' || hash[3] != '$' || hash[6] != '$')
    return -1;
  if (hash[4] < '0' || hash[4] > '9' || hash[5] < '0' || hash[5] > '9') return -1;
  return (hash[4] - '0') * 10 + (hash[5] - '0');
}

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  if (hash.size() != 60 || hash.rfind("$2", 0) != 0) return false;
  const int cost = bcrypt_cost(hash);
  if (cost < 4 || cost > kMaxBcryptCost) return false;  // never hours of CPU for one check
  auto data = std::make_unique<crypt_data>();           // ~32 KB: not on the stack
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  return out && out[0] != '*' && equal_constant_time(hash, out);
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {
  // A check costs one bcrypt at every distinct configured cost, whoever the user: a single
  // stand-in of the highest cost for unknown users still left a cheaper user's check faster
  // (cost 4 beside cost 10: 1.4 ms against 51 ms), which told that the name exists.
  for (const auto& [user, hash] : users_) hash_of_cost_.emplace(bcrypt_cost(hash), hash);
}

std::string BasicAuth::key_of(const std::string& user, const std::string& password) {
  return sha256(user + std::string(1, '\0') + password);
}

BasicAuth::Verdict BasicAuth::cached(const std::string& user, const std::string& password) const {
  if (password.find('\0') != std::string::npos) return Verdict::deny;
  const std::string key = key_of(user, password);
  std::lock_guard lock(mu_);
  if (allowed_.count(key)) return Verdict::allow;
  if (denied_.count(key)) return Verdict::deny;
  return Verdict::unknown;
}

bool BasicAuth::verify(const std::string& user, const std::string& password) {
  if (password.find('\0') != std::string::npos) return false;
  const auto it = users_.find(user);
  const bool known = it != users_.end();
  const int own_cost = known ? bcrypt_cost(it->second) : -1;
  bool ok = false;
  // The user's own hash at its cost; at every other cost (all of them for an unknown user) a
  // stand-in whose verdict is dropped: the time is the same sum for every name.
  for (const auto& [cost, stand_in] : hash_of_cost_) {
    if (cost == own_cost)
      ok = bcrypt_matches(password, it->second);
    else
      (void)bcrypt_matches(password, stand_in);
  }
  const std::string key = key_of(user, password);
  std::lock_guard lock(mu_);
  ++bcrypt_runs_;
  // Bounded both: a flood of wrong guesses empties only the wrong ones, never a scraper's
  // right verdict (right ones can only be made with a right password).
  if (ok) {
    if (allowed_.size() >= 1024) allowed_.clear();
    allowed_[key] = user;
  } else {
    if (denied_.size() >= 1024) denied_.clear();
    denied_[key] = false;
  }
  return ok;
}

void BasicAuth::keep_verdicts_of(const BasicAuth& previous) {
  if (&previous == this) return;
  std::scoped_lock lock(mu_, previous.mu_);
  for (const auto& [key, user] : previous.allowed_) {
    const auto now = users_.find(user);
    const auto then = previous.users_.find(user);
    if (now != users_.end() && then != previous.users_.end() && now->second == then->second &&
        allowed_.size() < 1024)
      allowed_.emplace(key, user);
  }
}

bool BasicAuth::check(const std::string& user, const std::string& password) {
  switch (cached(user, password)) {
    case Verdict::allow:
      return true;
    case Verdict::deny:
      return false;
    case Verdict::unknown:
      break;
  }
  return verify(user, password);
}

std::uint64_t BasicAuth::bcrypt_runs() const {
  std::lock_guard lock(mu_);
  return bcrypt_runs_;
}

}  // namespace pmcprof

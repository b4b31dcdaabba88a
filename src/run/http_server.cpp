#include "pmcprof/run/http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <set>
#include <stop_token>
#include <thread>

#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr const char* kListenHint = "write --listen ADDR:PORT, e.g. --listen 127.0.0.1:9464";

Fd bind_listener(const ListenAddress& address) {
  Fd listen_fd;

  const int family = address.ipv6 ? AF_INET6 : AF_INET;
  listen_fd.reset(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_fd) throw SystemError("socket: " + errno_string(errno));
  int one = 1;
  setsockopt(listen_fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (address.ipv6) {
    auto* sa = reinterpret_cast<sockaddr_in6*>(&ss);
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons(address.port);
    inet_pton(AF_INET6, address.host.c_str(), &sa->sin6_addr);
    len = sizeof(*sa);
  } else {
    auto* sa = reinterpret_cast<sockaddr_in*>(&ss);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(address.port);
    inet_pton(AF_INET, address.host.c_str(), &sa->sin_addr);
    len = sizeof(*sa);
  }
  if (::bind(listen_fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    const int err = errno;
    if (err == EADDRINUSE)
      throw UserError("cannot listen on " + address.text() + ": the address is already in use",
                      "pick another port with --listen, or stop what holds it (ss -ltnp)",
                      kExitFailure);
    throw UserError("cannot listen on " + address.text() + ": " + errno_string(err), kListenHint,
                    kExitFailure);
  }
  if (::listen(listen_fd.get(), 511) != 0)
    throw SystemError("listen on " + address.text() + ": " + errno_string(errno));
  return listen_fd;
}

// MHD responses are reference-counted: ours is released once queued.
struct ResponseDeleter {
  void operator()(MHD_Response* r) const { MHD_destroy_response(r); }
};
using ResponsePtr = std::unique_ptr<MHD_Response, ResponseDeleter>;

}  // namespace

std::string ListenAddress::text() const {
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ListenAddress parse_listen_address(std::string_view raw) {
  std::string_view text = trim(raw);
  ListenAddress a;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw UserError("cannot parse --listen " + quote(raw), kListenHint);
    a.host = std::string(text.substr(1, close - 1));
    a.ipv6 = true;
    port_text = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      a.host = "127.0.0.1";
      port_text = text;
    } else {
      a.host = colon == 0 ? "127.0.0.1" : std::string(text.substr(0, colon));
      port_text = text.substr(colon + 1);
    }
    if (a.host == "localhost") a.host = "127.0.0.1";
  }
  unsigned long long port = 0;
  if (!parse_u64(port_text, port) || port == 0 || port > 65535)
    throw UserError("cannot parse --listen " + quote(raw) + ": " + quote(port_text) +
                        " is not a port (1-65535)",
                    kListenHint);
  a.port = static_cast<std::uint16_t>(port);
  unsigned char buf[sizeof(in6_addr)];
  if (inet_pton(a.ipv6 ? AF_INET6 : AF_INET, a.host.c_str(), buf) != 1)
    throw UserError(
        "cannot parse --listen " + quote(raw) + ": " + quote(a.host) + " is not an IP address",
        kListenHint);
  return a;
}

bool accepts_gzip(std::string_view accept_encoding) {
  for (const auto& part : split(accept_encoding, ',')) {
    const auto fields = split(part, ';');
    const std::string coding = to_lower(trim(fields.empty() ? "" : fields[0]));
    if (coding != "gzip" && coding != "*") continue;
    bool refused = false;
    for (std::size_t i = 1; i < fields.size(); ++i) {
      const std::string param = to_lower(trim(fields[i]));
      if (param.rfind("q=", 0) != 0) continue;
      const std::string q = param.substr(2);
      // q=0, q=0.0, q=0.000: refused; any other weight accepts.
      refused = q.find_first_not_of("0.") == std::string::npos;
    }
    if (!refused) return true;
  }
  return false;
}

std::string gzip_compress(std::string_view data) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw SystemError("deflateInit2 failed");
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw SystemError("deflate failed");
  return out;
}

// What a reload compares: a file replaced, rewritten or touched changes one of these.
struct HttpServer::FileStamp {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

struct HttpServer::Watch {
  std::vector<std::string> files;
  std::vector<FileStamp> stamps;  // one per file
};

std::vector<HttpServer::FileStamp> HttpServer::stamps_of(const std::vector<std::string>& files) {
  std::vector<HttpServer::FileStamp> out;
  for (const auto& f : files) {
    struct stat st {};
    HttpServer::FileStamp stamp;
    if (::stat(f.c_str(), &st) == 0) {
      stamp =
          HttpServer::FileStamp{true,
                                st.st_dev,
                                st.st_ino,
                                st.st_size,
                                std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                                std::int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec};
    }
    out.push_back(stamp);
  }
  return out;
}

namespace {

std::string client_address(MHD_Connection* c) {
  const auto* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!info || !info->client_addr) return "?";
  char buf[INET6_ADDRSTRLEN] = "?";
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof(buf));
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof(buf));
  return buf;
}

void log_line(const std::string& line) {
  std::cerr << "pmcprof: " + line + "\n" << std::flush;
}

}  // namespace

// One loaded web config. Connections and requests hold it (shared) for their lifetime, so a
// reload never frees credentials a TLS session still uses.
struct HttpServer::State {
  WebConfig web;
  BasicAuth auth;
  gnutls_certificate_credentials_t cred = nullptr;
  gnutls_priority_t priority = nullptr;

  explicit State(WebConfig w) : web(std::move(w)), auth(web.basic_auth_users) {
    if (!web.tls) return;
    const TlsServerConfig& tls = *web.tls;
    if (gnutls_certificate_allocate_credentials(&cred) != GNUTLS_E_SUCCESS)
      throw SystemError("gnutls_certificate_allocate_credentials failed");
    auto datum = [](const std::string& text) {
      return gnutls_datum_t{reinterpret_cast<unsigned char*>(const_cast<char*>(text.data())),
                            static_cast<unsigned>(text.size())};
    };
    const gnutls_datum_t cert = datum(tls.cert_pem), key = datum(tls.key_pem);
    int rc =
        gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, nullptr, 0);
    if (rc < 0) throw SystemError(std::string("loading the key pair: ") + gnutls_strerror(rc));
    if (!tls.client_ca_pem.empty()) {
      const gnutls_datum_t ca = datum(tls.client_ca_pem);
      rc = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
      if (rc <= 0) throw SystemError("loading client_ca_file: no certificate");
    }
    const std::string priorities = tls.gnutls_priorities();
    rc = gnutls_priority_init(&priority, priorities.c_str(), nullptr);
    if (rc < 0) throw SystemError("GnuTLS refuses " + priorities + ": " + gnutls_strerror(rc));
  }
  ~State() {
    if (priority) gnutls_priority_deinit(priority);
    if (cred) gnutls_certificate_free_credentials(cred);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

// A connection (libmicrohttpd's socket context): its config, and the deadline of its head.
struct HttpServer::Conn {
  std::shared_ptr<State> state;
  gnutls_session_t session = nullptr;
  int fd = -1;
  std::string address;
  std::chrono::steady_clock::time_point waiting_since;  // for a request's head
  bool head_seen = false;
  bool cut = false;  // shut down by the reaper
};

// A request (libmicrohttpd's con_cls): its verdict, reached on a serving thread or, for a
// password that must be checked, on an auth thread while the connection is suspended.
struct HttpServer::Request {
  enum class Verdict { pending, allow, deny, busy, limited };
  std::shared_ptr<State> state;
  std::atomic<Verdict> verdict{Verdict::pending};
  bool suspended = false;
  bool waited = false;  // one call passed since the verdict (see Callbacks::access)
};

// Cuts connections whose request head is not whole by the deadline. Connections are
// registered by the serving threads (started, a head seen, an answer queued, closed); the
// reaper shuts a late one's socket down, so that its own serving thread sees the end and closes
// it. The registry's lock is held from the look-up to the shutdown, and a connection leaves the
// registry (under the same lock) before libmicrohttpd closes its descriptor: never another's.
class HttpServer::Reaper {
 public:
  explicit Reaper(std::chrono::seconds deadline)
      : deadline_(deadline), thread_([this](const std::stop_token& stop) { run(stop); }) {}
  ~Reaper() {
    {
      // Under the lock the thread checks for a stop under: the wake-up is not lost (it
      // slept another 250 ms).
      std::lock_guard lock(mu_);
      thread_.request_stop();
    }
    cv_.notify_all();
  }
  void add(Conn* c) {
    std::lock_guard lock(mu_);
    conns_.insert(c);
  }
  void remove(Conn* c) {
    std::lock_guard lock(mu_);
    conns_.erase(c);
  }
  void head_seen(Conn* c, bool seen) {
    std::lock_guard lock(mu_);
    c->head_seen = seen;
    if (!seen) c->waiting_since = std::chrono::steady_clock::now();
  }
  std::uint64_t cut() const { return cut_.load(); }

 private:
  void run(const std::stop_token& stop) {
    std::unique_lock lock(mu_);
    while (!stop.stop_requested()) {
      cv_.wait_for(lock, std::chrono::milliseconds(250));
      const auto now = std::chrono::steady_clock::now();
      for (Conn* c : conns_) {
        if (c->head_seen || c->cut || now - c->waiting_since < deadline_) continue;
        c->cut = true;
        if (c->fd >= 0 && ::shutdown(c->fd, SHUT_RDWR) == 0) ++cut_;
      }
    }
  }
  std::chrono::seconds deadline_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<Conn*> conns_;
  std::atomic<std::uint64_t> cut_{0};
  std::jthread thread_;  // last: started once the rest is built, joined first
};

// Password checks off the serving threads: a bounded queue, a few threads at a lower CPU
// priority, a bound per client address and a budget of failures per client address. A check's
// connection is suspended meanwhile and resumed with the verdict.
class HttpServer::AuthPool {
 public:
  enum class Admit { queued, busy, limited };
  struct Job {
    MHD_Connection* connection;
    Request* request;
    std::string user, password, address;
  };

  explicit AuthPool(const HttpLimits& limits) : limits_(limits) {
    for (unsigned i = 0; i < std::max(1u, limits_.auth_threads); ++i)
      threads_.emplace_back([this] { work(); });
  }
  ~AuthPool() { stop(); }

  // Before libmicrohttpd stops: every waiting check is answered (denied, unchecked) and its
  // connection resumed, since libmicrohttpd must not stop with a connection suspended.
  void stop() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    for (auto& job : queue_) finish(job, Request::Verdict::deny);
    queue_.clear();
  }

  // Whether the address may have an uncached password checked now; `queued` means the job
  // was taken and the caller must suspend the connection.
  Admit submit(Job job) {
    std::lock_guard lock(mu_);
    const Admit admit = admit_of(job.address);
    if (admit != Admit::queued) {
      std::fill(job.password.begin(), job.password.end(), '\0');
      return admit;
    }
    Budget& b = budget(job.address);
    ++b.in_flight;
    // Suspended before a thread can take it: the caller suspends right after this returns,
    // still under the serving thread, and libmicrohttpd allows a resume that comes first.
    queue_.push_back(std::move(job));
    cv_.notify_one();
    return Admit::queued;
  }

  // Called under mu_.
  Admit admit_of(const std::string& address) {
    if (stopping_ || queue_.size() >= limits_.auth_queue) return Admit::busy;
    const Budget& b = budget(address);
    if (b.tokens < 1 || b.in_flight >= limits_.auth_per_address) return Admit::limited;
    return Admit::queued;
  }

 private:
  struct Budget {
    double tokens;
    std::chrono::steady_clock::time_point refilled;
    unsigned in_flight = 0;
  };

  // The address's budget, refilled for the time passed (a token bucket). Called under mu_.
  Budget& budget(const std::string& address) {
    const auto now = std::chrono::steady_clock::now();
    const double cap = limits_.auth_failures;
    auto it = budgets_.find(address);
    if (it == budgets_.end()) {
      if (budgets_.size() >= 4096) prune(now);
      it = budgets_.emplace(address, Budget{cap, now}).first;
    }
    Budget& b = it->second;
    const double elapsed = std::chrono::duration<double>(now - b.refilled).count();
    b.tokens = std::min(cap, b.tokens + elapsed / limits_.auth_refill_s);
    b.refilled = now;
    return b;
  }

  // Bounded memory: addresses whose budget is whole again and that have nothing waiting
  // are forgotten (they would start whole anyway).
  void prune(std::chrono::steady_clock::time_point now) {
    for (auto it = budgets_.begin(); it != budgets_.end();) {
      const double elapsed = std::chrono::duration<double>(now - it->second.refilled).count();
      const bool whole =
          it->second.tokens + elapsed / limits_.auth_refill_s >= limits_.auth_failures;
      it = whole && it->second.in_flight == 0 ? budgets_.erase(it) : std::next(it);
    }
  }

  void finish(Job& job, Request::Verdict verdict) {
    std::fill(job.password.begin(), job.password.end(), '\0');
    job.request->verdict = verdict;
    MHD_resume_connection(job.connection);
  }

  void work() {
    // bcrypt is CPU-bound on purpose: below the serving and measurement threads' priority, so
    // a flood of checks takes idle CPU, not theirs.
    if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10) != 0) {
      // Not fatal: checks then compete as equals, still bounded in number.
    }
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      Job job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      bool ok = false;
      try {
        ok = job.request->state->auth.verify(job.user, job.password);
      } catch (const std::exception& e) {
        // Denied, and the connection resumed all the same (never left suspended).
        log_line(std::string("password check failed: ") + e.what());
      }
      lock.lock();
      Budget& b = budget(job.address);
      --b.in_flight;
      if (!ok) b.tokens = std::max(0.0, b.tokens - 1);
      lock.unlock();
      finish(job, ok ? Request::Verdict::allow : Request::Verdict::deny);
      lock.lock();
    }
  }

  HttpLimits limits_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::map<std::string, Budget> budgets_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

namespace {

// The TLS session -> its connection, for GnuTLS's callbacks (which carry no user pointer).
std::mutex g_sessions_mu;
std::map<gnutls_session_t, std::shared_ptr<const TlsServerConfig>> g_sessions;

std::shared_ptr<const TlsServerConfig> tls_of(gnutls_session_t session) {
  std::lock_guard lock(g_sessions_mu);
  auto it = g_sessions.find(session);
  return it == g_sessions.end() ? nullptr : it->second;
}

// The subject alternative names of a DER certificate, as text (DNS, e-mail, URI, IP).
std::vector<std::string> subject_alt_names(const gnutls_datum_t& der) {
  std::vector<std::string> out;
  gnutls_x509_crt_t crt = nullptr;
  if (gnutls_x509_crt_init(&crt) < 0) return out;
  std::unique_ptr<gnutls_x509_crt_int, void (*)(gnutls_x509_crt_t)> guard(crt,
                                                                          gnutls_x509_crt_deinit);
  if (gnutls_x509_crt_import(crt, &der, GNUTLS_X509_FMT_DER) < 0) return out;
  for (unsigned i = 0;; ++i) {
    char buf[1024];
    size_t size = sizeof(buf);
    unsigned critical = 0;
    const int type = gnutls_x509_crt_get_subject_alt_name(crt, i, buf, &size, &critical);
    if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) break;
    if (type < 0) continue;  // too long or unreadable: no match from it
    if (type == GNUTLS_SAN_IPADDRESS) {
      char ip[INET6_ADDRSTRLEN];
      if ((size == 4 && inet_ntop(AF_INET, buf, ip, sizeof(ip))) ||
          (size == 16 && inet_ntop(AF_INET6, buf, ip, sizeof(ip))))
        out.emplace_back(ip);
    } else if (type == GNUTLS_SAN_DNSNAME || type == GNUTLS_SAN_RFC822NAME ||
               type == GNUTLS_SAN_URI) {
      out.emplace_back(buf, size);
    }
  }
  return out;
}

}  // namespace

// libmicrohttpd calls these on its threads; `cls` is the HttpServer.
struct HttpServer::Callbacks {
  // An unsent body: freed by libmicrohttpd once the response is sent or the client is gone.
  struct Body {
    HttpServer* server;
    std::string data;
  };

  static void free_body(void* cls) {
    auto* body = static_cast<Body*>(cls);
    body->server->bytes_in_flight_ -= body->data.size();
    delete body;
  }

  static MHD_Result queue(HttpServer& self, const State& st, MHD_Connection* c, int status,
                          const std::string& type, std::string data, bool gzip,
                          bool unauthorized = false) {
    bool compressed = false;
    if (gzip && data.size() >= 1024) {
      data = gzip_compress(data);
      compressed = true;
    }
    // Bounded memory: bodies still being sent to slow readers count against one budget.
    const std::size_t size = data.size();
    if (self.bytes_in_flight_.fetch_add(size) + size > self.limits_.max_bytes_in_flight &&
        status == 200) {
      self.bytes_in_flight_ -= size;
      return queue(self, st, c, 503, "text/plain; charset=utf-8",
                   "too many responses still being sent; try again\n", false);
    }
    auto* body = new Body{&self, std::move(data)};
    ResponsePtr r(MHD_create_response_from_buffer_with_free_callback_cls(
        body->data.size(), body->data.data(), &free_body, body));
    if (!r) {
      free_body(body);
      return MHD_NO;
    }
    MHD_add_response_header(r.get(), MHD_HTTP_HEADER_CONTENT_TYPE, type.c_str());
    MHD_add_response_header(r.get(), MHD_HTTP_HEADER_VARY, "Accept-Encoding");
    if (compressed) MHD_add_response_header(r.get(), MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    if (status == 405) MHD_add_response_header(r.get(), MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (status == 429 || status == 503)
      MHD_add_response_header(r.get(), MHD_HTTP_HEADER_RETRY_AFTER, "10");
    for (const auto& [name, value] : st.web.headers)
      MHD_add_response_header(r.get(), name.c_str(), value.c_str());
    if (unauthorized) return MHD_queue_basic_auth_fail_response(c, "pmcprof", r.get());
    return MHD_queue_response(c, static_cast<unsigned>(status), r.get());
  }

  // Whether a handshake made under config `a` checked the client as `b` would.
  static bool same_client_rules(const State& a, const State& b) {
    if (&a == &b) return true;
    if (!a.web.tls || !b.web.tls) return a.web.tls.has_value() == b.web.tls.has_value();
    const TlsServerConfig &x = *a.web.tls, &y = *b.web.tls;
    return x.client_auth == y.client_auth && x.client_ca_pem == y.client_ca_pem &&
           x.client_allowed_sans == y.client_allowed_sans;
  }

  static Conn* conn_of(MHD_Connection* c) {
    const auto* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? static_cast<Conn*>(info->socket_context) : nullptr;
  }

  // The first call for a request comes when its head is whole: its verdict comes from the head
  // alone. A password not in the cache is checked on an auth thread meanwhile, the connection
  // suspended; the call after the resume has the verdict. A request with a body is answered
  // then, before any of the body is read (libmicrohttpd then discards it and closes the
  // connection); one without is answered on the next call, libmicrohttpd's "request
  // complete" one, where an answer keeps the connection alive.
  static MHD_Result access(void* cls, MHD_Connection* c, const char* url, const char* method,
                           const char* /*version*/, const char* /*upload_data*/,
                           size_t* upload_data_size, void** con_cls) {
    auto& self = *static_cast<HttpServer*>(cls);
    auto* req = static_cast<Request*>(*con_cls);
    if (req == nullptr) {
      if (Conn* conn = conn_of(c); conn && self.reaper_) self.reaper_->head_seen(conn, true);
      self.reload_if_changed();
      req = new Request;
      *con_cls = req;
      req->state = self.state();
      // A connection's handshake was judged by the config of its start: when a reload has
      // changed the client certificate rules since (say NoClientCert with passwords to
      // RequireAndVerifyClientCert without), a request on it would be judged by the new
      // config's passwords alone, with no certificate checked: closed instead, so the client
      // connects again under the new rules.
      if (const Conn* conn = conn_of(c); conn && !same_client_rules(*conn->state, *req->state))
        return MHD_NO;
      decide(self, c, *req);
      if (req->suspended) return MHD_YES;
    }
    if (req->verdict == Request::Verdict::pending) {  // not expected: nothing answers twice
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (!req->waited && !has_body(c)) {
      req->waited = true;
      return MHD_YES;
    }
    *upload_data_size = 0;
    const State& st = *req->state;
    switch (req->verdict.load()) {
      case Request::Verdict::deny:
        return queue(self, st, c, 401, "text/plain; charset=utf-8", "Unauthorized\n", false, true);
      case Request::Verdict::busy:
        return queue(self, st, c, 503, "text/plain; charset=utf-8",
                     "too many password checks waiting; try again\n", false);
      case Request::Verdict::limited:
        return queue(self, st, c, 429, "text/plain; charset=utf-8",
                     "too many failed or waiting password checks from this address; try "
                     "again later\n",
                     false);
      case Request::Verdict::pending:
      case Request::Verdict::allow:
        break;
    }
    const char* ae =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    const bool gzip = ae && accepts_gzip(ae);
    const std::string m = method;
    if (m != "GET" && m != "HEAD")
      return queue(self, st, c, 405, "text/plain; charset=utf-8", "only GET and HEAD\n", false);
    HttpResponse resp;
    try {
      resp = self.handler_(HttpRequest{m, url});
    } catch (const std::exception& e) {
      resp = HttpResponse{500, "text/plain; charset=utf-8", std::string(e.what()) + "\n"};
    }
    return queue(self, st, c, resp.status, resp.content_type, std::move(resp.body), gzip);
  }

  static bool has_body(MHD_Connection* c) {
    const char* length =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
           (length && std::strspn(length, " 0") != std::strlen(length));
  }

  // The verdict from the cache, the budget, or (suspending the connection) an auth thread.
  static void decide(HttpServer& self, MHD_Connection* c, Request& req) {
    if (!req.state->auth.enabled()) {
      req.verdict = Request::Verdict::allow;
      return;
    }
    char* password = nullptr;
    char* user = MHD_basic_auth_get_username_password(c, &password);
    std::string u = user ? user : "", p = password ? password : "";
    const bool given = user && password;
    if (user) MHD_free(user);
    if (password) {
      std::memset(password, 0, std::strlen(password));
      MHD_free(password);
    }
    if (!given) {
      req.verdict = Request::Verdict::deny;
      return;
    }
    const auto cached = req.state->auth.cached(u, p);
    if (cached != BasicAuth::Verdict::unknown) {
      req.verdict =
          cached == BasicAuth::Verdict::allow ? Request::Verdict::allow : Request::Verdict::deny;
      std::fill(p.begin(), p.end(), '\0');
      return;
    }
    // Suspended before the job is queued: libmicrohttpd must see the suspension before an
    // auth thread can resume it.
    MHD_suspend_connection(c);
    req.suspended = true;
    const auto admit = self.auth_pool_->submit(
        AuthPool::Job{c, &req, std::move(u), std::move(p), client_address(c)});
    if (admit != AuthPool::Admit::queued) {
      req.verdict =
          admit == AuthPool::Admit::busy ? Request::Verdict::busy : Request::Verdict::limited;
      req.suspended = false;
      MHD_resume_connection(c);
    }
  }

  // A request done (answered, or its client gone): its state is freed and the connection
  // waits, under the head deadline, for the next request.
  static void completed(void* cls, MHD_Connection* c, void** con_cls,
                        enum MHD_RequestTerminationCode /*toe*/) {
    auto& self = *static_cast<HttpServer*>(cls);
    delete static_cast<Request*>(*con_cls);
    *con_cls = nullptr;
    if (Conn* conn = conn_of(c); conn && self.reaper_) self.reaper_->head_seen(conn, false);
  }

  // A new connection (before its TLS handshake) and a closed one.
  static void notify(void* cls, MHD_Connection* c, void** socket_context,
                     enum MHD_ConnectionNotificationCode code) {
    auto& self = *static_cast<HttpServer*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      auto* conn = static_cast<Conn*>(*socket_context);
      if (!conn) return;
      if (self.reaper_) self.reaper_->remove(conn);
      if (conn->session) {
        std::lock_guard lock(g_sessions_mu);
        g_sessions.erase(conn->session);
      }
      delete conn;
      *socket_context = nullptr;
      return;
    }
    if (code != MHD_CONNECTION_NOTIFY_STARTED) return;
    self.reload_if_changed();
    auto conn = std::make_unique<Conn>();
    conn->state = self.state();
    conn->waiting_since = std::chrono::steady_clock::now();
    if (const auto* fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD))
      conn->fd = fd->connect_fd;
    if (self.tls_) start_tls(c, *conn);
    if (self.reaper_) self.reaper_->add(conn.get());
    *socket_context = conn.release();
  }

  // The session takes the current config's credentials, priorities and client certificate
  // rules (a reload changes them for the next handshake).
  static void start_tls(MHD_Connection* c, Conn& conn) {
    const auto* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!info || !info->tls_session || !conn.state->web.tls) return;
    auto session = static_cast<gnutls_session_t>(info->tls_session);
    conn.session = session;
    const State& st = *conn.state;
    // Aliasing: the TLS settings live as long as the state that holds them.
    std::shared_ptr<const TlsServerConfig> tls(conn.state, &*st.web.tls);
    {
      std::lock_guard lock(g_sessions_mu);
      g_sessions[session] = tls;
    }
    if (gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, st.cred) < 0 ||
        gnutls_priority_set(session, st.priority) < 0) {
      // The session would keep the first config's certificate and priorities (perhaps
      // replaced for a reason): no handshake at all instead (the rules below still set).
      log_line(
          "TLS: cannot give a new connection the current certificate and priorities; "
          "closed");
      if (conn.fd >= 0) ::shutdown(conn.fd, SHUT_RDWR);
    }
    switch (tls->client_auth) {
      case ClientAuth::no_client_cert:
        gnutls_certificate_server_set_request(session, GNUTLS_CERT_IGNORE);
        break;
      case ClientAuth::request_client_cert:
        gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUEST);
        break;
      case ClientAuth::require_any_client_cert:
        gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
        break;
      case ClientAuth::verify_client_cert_if_given:
        gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUEST);
        gnutls_session_set_verify_function(session, &verify_peer);
        break;
      case ClientAuth::require_and_verify_client_cert:
        gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
        gnutls_session_set_verify_function(session, &verify_peer);
        break;
    }
    if (!tls->cipher_suites.empty())
      gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_FINISHED, GNUTLS_HOOK_PRE,
                                         &check_suite);
  }

  // During the handshake: a client certificate, when one is sent, must chain to
  // client_ca_file, be valid now, be meant for TLS clients (extended key usage clientAuth,
  // when it names any usage: a server-only certificate from the same CA is no login), and
  // carry one of client_allowed_sans when those are given. Non-zero fails the handshake.
  static int verify_peer(gnutls_session_t session) {
    unsigned int n = 0;
    const gnutls_datum_t* certs = gnutls_certificate_get_peers(session, &n);
    if (!certs || n == 0) return 0;  // none: REQUIRE decides
    const auto tls = tls_of(session);
    if (!tls) return -1;
    gnutls_typed_vdata_st purpose{};
    purpose.type = GNUTLS_DT_KEY_PURPOSE_OID;
    purpose.data = reinterpret_cast<unsigned char*>(const_cast<char*>(GNUTLS_KP_TLS_WWW_CLIENT));
    unsigned int status = 0;
    if (gnutls_certificate_verify_peers(session, &purpose, 1, &status) < 0) return -1;
    if (status != 0) return -1;
    if (tls->client_allowed_sans.empty()) return 0;
    for (const auto& san : subject_alt_names(certs[0]))
      for (const auto& allowed : tls->client_allowed_sans)
        if (san == allowed) return 0;
    return -1;
  }

  // Before a Finished message (the suite chosen and in use, no request read yet): with
  // cipher_suites given, a TLS 1.2 (or older) suite must be one listed, not merely made of
  // listed parts (GnuTLS combines key exchanges, ciphers and MACs freely). Non-zero fails the
  // handshake.
  static int check_suite(gnutls_session_t session, unsigned /*htype*/, unsigned /*when*/,
                         unsigned /*incoming*/, const gnutls_datum_t* /*msg*/) {
    if (gnutls_protocol_get_version(session) == GNUTLS_TLS1_3) return 0;
    const auto tls = tls_of(session);
    const char* kx = gnutls_kx_get_name(gnutls_kx_get(session));
    const char* cipher = gnutls_cipher_get_name(gnutls_cipher_get(session));
    const char* mac = gnutls_mac_get_name(gnutls_mac_get(session));
    if (!tls || !kx || !cipher || !mac) return GNUTLS_E_UNWANTED_ALGORITHM;
    for (const auto* s : tls->cipher_suites)
      if (std::strcmp(s->kx, kx) == 0 && std::strcmp(s->cipher, cipher) == 0 &&
          std::strcmp(s->mac, mac) == 0)
        return 0;
    return GNUTLS_E_UNWANTED_ALGORITHM;
  }

  static void log(void* /*cls*/, const char* fmt, va_list ap) {
    char buf[512];
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    std::string line = buf;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    std::cerr << "pmcprof: http: " << line << "\n";
  }
};

HttpServer::HttpServer(const ListenAddress& address, const WebConfig& web, Handler handler,
                       const HttpLimits& limits, bool verbose)
    : address_(address),
      handler_(std::move(handler)),
      limits_(limits),
      tls_(web.tls.has_value()),
      state_(std::make_shared<State>(web)),
      seen_(std::make_shared<const Watch>(Watch{web.files, stamps_of(web.files)})),
      auth_pool_(std::make_unique<AuthPool>(limits)),
      reaper_(std::make_unique<Reaper>(std::chrono::seconds(limits.head_deadline_s))),
      listen_fd_(bind_listener(address)) {
  // libmicrohttpd closes the socket it is given when it stops, and when it fails to start:
  // it gets its own copy, which is its from here on.
  const int daemon_fd = ::fcntl(listen_fd_.get(), F_DUPFD_CLOEXEC, 3);
  if (daemon_fd < 0) throw SystemError("fcntl(F_DUPFD_CLOEXEC): " + errno_string(errno));
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
  if (verbose) flags |= MHD_USE_ERROR_LOG;
  std::vector<MHD_OptionItem> opts;
  auto add = [&](MHD_OPTION o, intptr_t value, void* ptr = nullptr) {
    opts.push_back(MHD_OptionItem{o, value, ptr});
  };
  add(MHD_OPTION_LISTEN_SOCKET, daemon_fd);
  add(MHD_OPTION_THREAD_POOL_SIZE, limits_.threads);
  add(MHD_OPTION_CONNECTION_LIMIT, limits_.max_connections);
  add(MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits_.max_per_address);
  add(MHD_OPTION_CONNECTION_TIMEOUT, limits_.idle_timeout_s);
  add(MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&Callbacks::log), this);
  add(MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&Callbacks::notify), this);
  add(MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Callbacks::completed), this);
  std::string priorities;
  if (tls_) {
    // The first config's certificate and priorities start the daemon; each session then
    // takes the current config's (Callbacks::start_tls).
    flags |= MHD_USE_TLS;
    priorities = web.tls->gnutls_priorities();
    add(MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(state_->web.tls->cert_pem.c_str()));
    add(MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(state_->web.tls->key_pem.c_str()));
    add(MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(priorities.c_str()));
  }
  add(MHD_OPTION_END, 0);

  // The serving threads inherit this thread's signal mask: all blocked, so SIGINT/SIGTERM
  // are only ever taken by the run loop's signalfd.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &Callbacks::access, this, MHD_OPTION_ARRAY,
                             opts.data(), MHD_OPTION_END);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (!daemon_)
    throw SystemError("cannot start the HTTP server on " + address.text() +
                          " (libmicrohttpd refused its settings)",
                      "run with -v to see libmicrohttpd's messages");
}

HttpServer::~HttpServer() {
  // Waiting password checks are answered and their connections resumed first (libmicrohttpd
  // must not stop with one suspended); then every connection is closed (slow readers
  // included) and the serving threads joined; the reaper last, which only shuts sockets down.
  if (auth_pool_) auth_pool_->stop();
  if (daemon_) MHD_stop_daemon(daemon_);
  reaper_.reset();
}

std::shared_ptr<HttpServer::State> HttpServer::state() const {
  std::lock_guard lock(state_mu_);
  return state_;
}

void HttpServer::reload_if_changed() {
  std::shared_ptr<const Watch> seen;
  {
    std::lock_guard lock(state_mu_);
    seen = seen_;
  }
  if (seen->files.empty() || stamps_of(seen->files) == seen->stamps) return;
  // Another thread reloading already: this request keeps the config it has.
  std::unique_lock lock(reload_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  {
    std::lock_guard state_lock(state_mu_);
    if (seen_ != seen) return;  // read again meanwhile (taken or refused)
  }
  lock.unlock();
  reload("a changed file");
}

bool HttpServer::reload(const char* why) {
  std::lock_guard lock(reload_mu_);
  const auto current = state();
  const std::string& path = current->web.path;
  if (path.empty()) {
    log_line(std::string("reload (") + why + "): no --web.config.file to read");
    return false;
  }
  // Stamped before reading, so that a change made while it is read is seen next time.
  const Watch before{current->web.files, stamps_of(current->web.files)};
  // The stamps of `files`: taken before reading for the files watched already, now for others.
  auto watch_of = [&before](const std::vector<std::string>& files) {
    Watch w{files, {}};
    for (const auto& f : files) {
      const auto it = std::find(before.files.begin(), before.files.end(), f);
      w.stamps.push_back(it != before.files.end()
                             ? before.stamps[static_cast<std::size_t>(it - before.files.begin())]
                             : stamps_of({f}).front());
    }
    return w;
  };
  std::vector<std::string> named;  // the files the new config names (as far as it was read)
  std::shared_ptr<State> next;
  try {
    WebConfig web = load_web_config(path, &named);
    if (web.tls.has_value() != tls_)
      throw UserError(std::string("it turns TLS ") + (tls_ ? "off" : "on") +
                      ", which takes a restart of pmcprof serve");
    next = std::make_shared<State>(std::move(web));
    next->auth.keep_verdicts_of(current->auth);
  } catch (const std::exception& e) {
    // Kept: a half-written or wrong file must not take the service down or open it up.
    // Watched: the serving config's files and those the refused one names, as they are now,
    // so that it is read again once one of them changes, and not before (a watch of files
    // other than the stamped ones read it again on every request, one line each).
    std::vector<std::string> files = before.files;
    for (const auto& f : named)
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
    auto seen = std::make_shared<const Watch>(watch_of(files));
    {
      std::lock_guard state_lock(state_mu_);
      seen_ = std::move(seen);
    }
    log_line(std::string("reload (") + why +
             ") failed, still serving the previous web config: " + e.what());
    return false;
  }
  auto seen = std::make_shared<const Watch>(watch_of(named));
  {
    std::lock_guard state_lock(state_mu_);
    state_ = next;
    seen_ = std::move(seen);
  }
  log_line(std::string("reloaded the web config ") + path + " (" + why + ")");
  return true;
}

std::string HttpServer::url() const {
  return std::string(tls_ ? "https://" : "http://") + address_.text();
}

}  // namespace pmcprof

#include "pmcprof/run/http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iostream>

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

int kRequestSeen;  // the address marks a request whose headers were seen (con_cls)

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

  static MHD_Result queue(HttpServer& self, MHD_Connection* c, int status, const std::string& type,
                          std::string data, bool gzip, bool unauthorized = false) {
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
      return queue(self, c, 503, "text/plain; charset=utf-8",
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
    for (const auto& [name, value] : self.web_.headers)
      MHD_add_response_header(r.get(), name.c_str(), value.c_str());
    if (unauthorized) return MHD_queue_basic_auth_fail_response(c, "pmcprof", r.get());
    return MHD_queue_response(c, static_cast<unsigned>(status), r.get());
  }

  static MHD_Result access(void* cls, MHD_Connection* c, const char* url, const char* method,
                           const char* /*version*/, const char* /*upload_data*/,
                           size_t* upload_data_size, void** con_cls) {
    auto& self = *static_cast<HttpServer*>(cls);
    if (*con_cls == nullptr) {
      *con_cls = &kRequestSeen;  // the headers are in; answer on the next call
      return MHD_YES;
    }
    if (*upload_data_size != 0) {  // a request body: nothing here takes one
      *upload_data_size = 0;
      return MHD_YES;
    }
    const char* ae =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    const bool gzip = ae && accepts_gzip(ae);
    if (self.auth_.enabled()) {
      char* password = nullptr;
      char* user = MHD_basic_auth_get_username_password(c, &password);
      const bool ok = user && password && self.auth_.check(user, password);
      if (user) MHD_free(user);
      if (password) {
        std::memset(password, 0, std::strlen(password));
        MHD_free(password);
      }
      if (!ok)
        return queue(self, c, 401, "text/plain; charset=utf-8", "Unauthorized\n", false, true);
    }
    const std::string m = method;
    if (m != "GET" && m != "HEAD")
      return queue(self, c, 405, "text/plain; charset=utf-8", "only GET and HEAD\n", false);
    HttpResponse resp;
    try {
      resp = self.handler_(HttpRequest{m, url});
    } catch (const std::exception& e) {
      resp = HttpResponse{500, "text/plain; charset=utf-8", std::string(e.what()) + "\n"};
    }
    return queue(self, c, resp.status, resp.content_type, std::move(resp.body), gzip);
  }

  // A new connection, before its TLS handshake: client certificates as the web config says.
  // (libmicrohttpd itself only asks for one, and only when a client CA is given.)
  static void notify(void* cls, MHD_Connection* c, void** /*socket_context*/,
                     enum MHD_ConnectionNotificationCode code) {
    auto& self = *static_cast<HttpServer*>(cls);
    if (code != MHD_CONNECTION_NOTIFY_STARTED || !self.web_.tls) return;
    const auto* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!info || !info->tls_session) return;
    auto session = static_cast<gnutls_session_t>(info->tls_session);
    switch (self.web_.tls->client_auth) {
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
  }

  // During the handshake: a client certificate, when one is sent, must chain to
  // client_ca_file (and be valid now); non-zero fails the handshake.
  static int verify_peer(gnutls_session_t session) {
    unsigned int n = 0;
    if (!gnutls_certificate_get_peers(session, &n) || n == 0) return 0;  // none: REQUIRE decides
    unsigned int status = 0;
    if (gnutls_certificate_verify_peers2(session, &status) < 0) return -1;
    return status == 0 ? 0 : -1;
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
      web_(web),
      handler_(std::move(handler)),
      limits_(limits),
      auth_(web.basic_auth_users),
      listen_fd_(bind_listener(address)) {
  // libmicrohttpd closes the socket it is given when it stops, and when it fails to start:
  // it gets its own copy, which is its from here on.
  const int daemon_fd = ::fcntl(listen_fd_.get(), F_DUPFD_CLOEXEC, 3);
  if (daemon_fd < 0) throw SystemError("fcntl(F_DUPFD_CLOEXEC): " + errno_string(errno));
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
  if (verbose) flags |= MHD_USE_ERROR_LOG;
  std::vector<MHD_OptionItem> opts;
  auto add = [&](MHD_OPTION o, intptr_t value, void* ptr = nullptr) {
    opts.push_back(MHD_OptionItem{o, value, ptr});
  };
  add(MHD_OPTION_LISTEN_SOCKET, daemon_fd);
  add(MHD_OPTION_THREAD_POOL_SIZE, limits_.threads);
  add(MHD_OPTION_CONNECTION_LIMIT, limits_.max_connections);
  add(MHD_OPTION_CONNECTION_TIMEOUT, limits_.idle_timeout_s);
  add(MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&Callbacks::log), this);
  if (web_.tls) {
    flags |= MHD_USE_TLS;
    priorities_ = web_.tls->gnutls_priorities();
    add(MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(web_.tls->cert_pem.c_str()));
    add(MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(web_.tls->key_pem.c_str()));
    add(MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(priorities_.c_str()));
    if (!web_.tls->client_ca_pem.empty())
      add(MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(web_.tls->client_ca_pem.c_str()));
    add(MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&Callbacks::notify), this);
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
  // Closes every connection (slow readers included) and joins the serving threads.
  if (daemon_) MHD_stop_daemon(daemon_);
}

std::string HttpServer::url() const {
  return std::string(web_.tls ? "https://" : "http://") + address_.text();
}

}  // namespace pmcprof

#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pmcprof/run/web_config.hpp"
#include "pmcprof/util/fd.hpp"

struct MHD_Daemon;

namespace pmcprof {

struct ListenAddress {
  std::string host;  // "127.0.0.1", "0.0.0.0", "::1", "::"
  std::uint16_t port = 0;
  bool ipv6 = false;
  std::string text() const;  // "127.0.0.1:9464" / "[::1]:9464"
};

// Parses --listen: "ADDR:PORT", "[V6ADDR]:PORT", ":PORT" or "PORT" (both loopback: any other
// address must be written out). Throws UserError with one line on junk.
ListenAddress parse_listen_address(std::string_view raw);

struct HttpRequest {
  std::string method;  // GET or HEAD (others are answered 405 before the handler)
  std::string path;    // without the query string
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
};

// Whether an Accept-Encoding value accepts gzip ("gzip", "gzip;q=0.5", "*"; not "gzip;q=0").
bool accepts_gzip(std::string_view accept_encoding);
// gzip of `data` (zlib, fastest level: metrics text shrinks ~10x at it).
std::string gzip_compress(std::string_view data);

// Limits that keep slow, silent or hostile clients from costing more than a bounded share.
struct HttpLimits {
  unsigned threads = 2;            // serving threads (epoll each; never the measurement's)
  unsigned max_connections = 512;  // more are accepted and closed at once
  unsigned idle_timeout_s = 10;    // a connection with no progress this long is closed
  std::size_t max_bytes_in_flight = std::size_t{256} << 20;  // unsent bodies; past it: 503
};

// The HTTP(S) server of `serve`: libmicrohttpd (Debian's libmicrohttpd12, with GnuTLS) on its
// own threads, never on the measurement thread. HTTP/1.1 with keep-alive, Content-Length, HEAD
// (the GET head without the body), gzip when asked for; TLS, client certificates and basic
// authentication from the web config; every connection non-blocking with an idle timeout.
// The handler runs on a serving thread and may block briefly (it waits for the live report).
class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  // Binds and listens (throws UserError when the address is in use or cannot be bound; exit
  // 1), then starts serving. Signals stay blocked in the serving threads: SIGINT/SIGTERM go
  // to the run loop's signalfd.
  HttpServer(const ListenAddress& address, const WebConfig& web, Handler handler,
             const HttpLimits& limits = {}, bool verbose = false);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::string url() const;  // "https://127.0.0.1:9464"
  std::size_t bytes_in_flight() const { return bytes_in_flight_.load(); }

 private:
  struct Callbacks;
  friend struct Callbacks;

  ListenAddress address_;
  WebConfig web_;
  Handler handler_;
  HttpLimits limits_;
  BasicAuth auth_;
  std::string priorities_;
  std::atomic<std::size_t> bytes_in_flight_{0};
  Fd listen_fd_;
  MHD_Daemon* daemon_ = nullptr;
};

}  // namespace pmcprof

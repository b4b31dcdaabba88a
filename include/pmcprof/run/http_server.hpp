#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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
  unsigned max_per_address = 16;   // connections from one client address; more: closed at once
  unsigned idle_timeout_s = 10;    // a connection with no progress this long is closed
  // A request's head (and a TLS handshake before it) must be whole this long after the
  // connection opened or its previous answer was queued, however it trickles: the idle timeout
  // alone restarts on every byte.
  unsigned head_deadline_s = 10;
  // Password checks (bcrypt, ~60 ms of CPU each at cost 10) run on their own threads, never on
  // the serving ones: this many at a time, at a lower CPU priority...
  unsigned auth_threads = 1;
  unsigned auth_queue = 64;       // ...this many waiting at most (more: 503 at once)...
  unsigned auth_per_address = 4;  // ...this many waiting or running per client address (429)
  // ...and a budget of failed checks per client address: a burst of this many, then one more
  // every auth_refill_s seconds; past it, uncached credentials from that address get 429
  // without a check (cached verdicts are still answered).
  unsigned auth_failures = 10;
  double auth_refill_s = 6;
  std::size_t max_bytes_in_flight = std::size_t{256} << 20;  // unsent bodies; past it: 503
};

// The HTTP(S) server of `serve`: libmicrohttpd (Debian's libmicrohttpd12, with GnuTLS) on its
// own threads, never on the measurement thread. HTTP/1.1 with keep-alive, Content-Length, HEAD
// (the GET head without the body), gzip when asked for; TLS, client certificates and basic
// authentication from the web config; every connection non-blocking with an idle timeout, a
// deadline for its request's head and a per-address limit; every request answered from its
// head (a body is never read). The handler runs on a serving thread and may block briefly (it
// waits for the live report). The web config is read again on reload() and whenever one of
// its files changed (checked before each request and handshake, as the exporter-toolkit does).
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

  // Reads the web config file again (`why`: "SIGHUP", "a changed file"): users, hashes,
  // certificate, key, client CA and TLS settings take effect for the next request or
  // handshake; connections already open keep theirs. A config that fails to load (or turns
  // TLS on or off, which needs a restart) leaves the current one serving and logs one line.
  // Thread-safe; false when the config was kept.
  bool reload(const char* why);

 private:
  struct State;  // one loaded web config: basic auth, TLS credentials and priorities
  struct FileStamp;
  struct Watch;  // the files a reload watches and their stamps when last read
  struct Conn;
  struct Request;
  class AuthPool;
  class Reaper;
  struct Callbacks;
  friend struct Callbacks;

  std::shared_ptr<State> state() const;
  static std::vector<FileStamp> stamps_of(const std::vector<std::string>& files);
  void reload_if_changed();

  ListenAddress address_;
  Handler handler_;
  HttpLimits limits_;
  bool tls_ = false;
  mutable std::mutex state_mu_;
  std::shared_ptr<State> state_;
  std::shared_ptr<const Watch> seen_;  // what reload_if_changed compares against
  std::mutex reload_mu_;               // one reload at a time
  std::atomic<std::size_t> bytes_in_flight_{0};
  std::unique_ptr<AuthPool> auth_pool_;
  std::unique_ptr<Reaper> reaper_;
  Fd listen_fd_;
  MHD_Daemon* daemon_ = nullptr;
};

}  // namespace pmcprof

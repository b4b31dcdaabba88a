#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "pmcprof/util/fd.hpp"

namespace pmcprof {

struct ListenAddress {
  std::string host;  // "127.0.0.1", "0.0.0.0", "::1", "::"
  std::uint16_t port = 0;
  bool ipv6 = false;
  std::string text() const;  // "127.0.0.1:9464" / "[::1]:9464"
};

// Parses --listen: "ADDR:PORT", "[V6ADDR]:PORT", ":PORT" or "PORT" (both loopback: any other
// address must be written out). Throws UserError with one line on junk.
ListenAddress parse_listen_address(std::string_view text);

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
};

// A minimal HTTP/1.1 server for /metrics: one request per connection, answered in full (the
// page is built before the first byte is written, so a scraper never sees half a page).
// Driven by the run loop: fd() becomes readable when a client connects.
class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const std::string& method, const std::string& path)>;

  // Binds and listens; throws UserError when the address is in use or cannot be bound.
  explicit HttpServer(const ListenAddress& address);
  int fd() const { return listen_fd_.get(); }
  // Accepts one pending connection (if any), reads its request (bounded in time and size),
  // answers it and closes it.
  void serve_one(const Handler& handler);

 private:
  Fd listen_fd_;
};

}  // namespace pmcprof

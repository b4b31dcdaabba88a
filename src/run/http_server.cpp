#include "pmcprof/run/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr const char* kListenHint = "write --listen ADDR:PORT, e.g. --listen 127.0.0.1:9464";

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    default:
      return "Error";
  }
}

void write_all(int fd, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away: nothing to do
    off += static_cast<std::size_t>(n);
  }
}

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
      throw UserError("cannot parse --listen '" + std::string(raw) + "'", kListenHint);
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
    throw UserError("cannot parse --listen '" + std::string(raw) + "': '" + std::string(port_text) +
                        "' is not a port (1-65535)",
                    kListenHint);
  a.port = static_cast<std::uint16_t>(port);
  unsigned char buf[sizeof(in6_addr)];
  if (inet_pton(a.ipv6 ? AF_INET6 : AF_INET, a.host.c_str(), buf) != 1)
    throw UserError(
        "cannot parse --listen '" + std::string(raw) + "': '" + a.host + "' is not an IP address",
        kListenHint);
  return a;
}

HttpServer::HttpServer(const ListenAddress& address) {
  const int family = address.ipv6 ? AF_INET6 : AF_INET;
  listen_fd_.reset(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_fd_) throw SystemError("socket: " + errno_string(errno));
  int one = 1;
  setsockopt(listen_fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
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
  if (::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    const int err = errno;
    if (err == EADDRINUSE)
      throw UserError("cannot listen on " + address.text() + ": the address is already in use",
                      "pick another port with --listen, or stop what holds it (ss -ltnp)",
                      kExitFailure);
    throw UserError("cannot listen on " + address.text() + ": " + errno_string(err), kListenHint,
                    kExitFailure);
  }
  if (::listen(listen_fd_.get(), 64) != 0)
    throw SystemError("listen on " + address.text() + ": " + errno_string(errno));
}

void HttpServer::serve_one(const Handler& handler) {
  Fd client(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!client) return;
  // Read the request head: at most 8 KiB within one deadline for the whole request (not per
  // chunk), so a slow or silent client holds the run loop for 1 s at the most.
  constexpr std::uint64_t kRequestDeadlineMs = 1000;
  const std::uint64_t deadline = monotonic_ns() + kRequestDeadlineMs * 1000000;
  std::string request;
  char buf[2048];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 8192) {
    const std::uint64_t now = monotonic_ns();
    if (now >= deadline) break;
    pollfd p{client.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>((deadline - now) / 1000000) + 1) <= 0) break;
    ssize_t n = ::recv(client.get(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    request.append(buf, static_cast<std::size_t>(n));
  }
  HttpResponse resp;
  const auto line_end = request.find("\r\n");
  const auto parts = split(request.substr(0, line_end), ' ');
  if (line_end == std::string::npos || parts.size() < 3) {
    resp.status = 400;
    resp.body = "bad request\n";
  } else {
    std::string path = parts[1].substr(0, parts[1].find('?'));
    resp = handler(parts[0], path);
  }
  std::string head = "HTTP/1.1 " + std::to_string(resp.status) + " " + reason(resp.status) +
                     "\r\nContent-Type: " + resp.content_type +
                     "\r\nContent-Length: " + std::to_string(resp.body.size()) +
                     "\r\nConnection: close\r\n\r\n";
  // HEAD: the same head (Content-Length of the page), no body.
  write_all(client.get(), parts.size() >= 1 && parts[0] == "HEAD" ? head : head + resp.body);
}

}  // namespace pmcprof

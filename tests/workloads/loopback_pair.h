/* A connected TCP pair over 127.0.0.1, for the workloads that send on loopback (tests/guest/
 * tcp_pair.c, tests/workloads/aarch64/kfunc_workload.c). The including file defines
 * `static void die(const char* what)` first: it reports errno and exits. */
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

/* *client: the connecting socket (TCP_NODELAY: each send goes out at once); returns the
 * accepted one. */
static int loopback_pair(int* client) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  if (ls < 0) die("socket");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  if (bind(ls, (struct sockaddr*)&a, sizeof(a)) != 0) die("bind");
  if (listen(ls, 1) != 0) die("listen");
  if (getsockname(ls, (struct sockaddr*)&a, &len) != 0) die("getsockname");
  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (c < 0) die("socket");
  if (connect(c, (struct sockaddr*)&a, sizeof(a)) != 0) die("connect");
  int s = accept(ls, NULL, NULL);
  if (s < 0) die("accept");
  close(ls);
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  *client = c;
  return s;
}

/* Loopback TCP workload for the guest tests: exact, known numbers of send and receive calls.
 *
 *   tcp_pair send N [SIZE]        this process sends N messages of SIZE bytes (default 64) with
 *                                 one send() each: N tcp_sendmsg calls. A forked child receives.
 *   tcp_pair recv N DELAY_MS      this process receives N messages with one recv(MSG_WAITALL)
 *                                 each: N tcp_recvmsg calls, each blocked ~DELAY_MS waiting for
 *                                 a forked child that sleeps DELAY_MS before each send.
 *   tcp_pair serve SECONDS        sends a message every 10 ms for SECONDS (for signal tests).
 *
 * Prints one line "tcp_pair: MODE n=N ..." on success; exits non-zero on any error. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char* what) {
  fprintf(stderr, "tcp_pair: %s: %s\n", what, strerror(errno));
  exit(2);
}

#include "../workloads/loopback_pair.h"

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* A connected pair over 127.0.0.1: *mine stays here, the returned fd is for the child (which
 * sends too: TCP_NODELAY on both). */
static int connected_pair(int* mine) {
  int s = loopback_pair(mine);
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return s;
}

static void read_all(int fd, size_t total) {
  char buf[4096];
  size_t got = 0;
  while (got < total) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die("child read");
    got += (size_t)n;
  }
}

static int wait_child(pid_t pid) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: tcp_pair send N [SIZE] | recv N DELAY_MS | serve SECONDS\n");
    return 2;
  }
  const char* mode = argv[1];
  long n = atol(argv[2]);
  int mine = -1;
  int theirs = connected_pair(&mine);

  if (strcmp(mode, "send") == 0) {
    size_t size = argc > 3 ? (size_t)atol(argv[3]) : 64;
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      close(mine);
      read_all(theirs, (size_t)n * size);
      _exit(0);
    }
    close(theirs);
    char* msg = calloc(1, size);
    for (long i = 0; i < n; i++) {
      ssize_t w = send(mine, msg, size, 0);
      if (w != (ssize_t)size) die("send");
    }
    close(mine);
    int rc = wait_child(pid);
    printf("tcp_pair: send n=%ld size=%zu child=%d\n", n, size, rc);
    return rc;
  }
  if (strcmp(mode, "recv") == 0) {
    long delay = argc > 3 ? atol(argv[3]) : 100;
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      close(mine);
      char b[8] = {0};
      for (long i = 0; i < n; i++) {
        sleep_ms(delay);
        if (write(theirs, b, sizeof(b)) != (ssize_t)sizeof(b)) die("child write");
      }
      _exit(0);
    }
    close(theirs);
    char b[8];
    for (long i = 0; i < n; i++) {
      ssize_t r = recv(mine, b, sizeof(b), MSG_WAITALL);
      if (r != (ssize_t)sizeof(b)) die("recv");
    }
    close(mine);
    int rc = wait_child(pid);
    printf("tcp_pair: recv n=%ld delay_ms=%ld child=%d\n", n, delay, rc);
    return rc;
  }
  if (strcmp(mode, "serve") == 0) {
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      close(mine);
      char buf[4096];
      while (read(theirs, buf, sizeof(buf)) > 0) {
      }
      _exit(0);
    }
    close(theirs);
    signal(SIGPIPE, SIG_IGN);
    char b[16] = {0};
    for (long i = 0; i < n * 100; i++) {
      if (send(mine, b, sizeof(b), 0) < 0) break;
      sleep_ms(10);
    }
    close(mine);
    return wait_child(pid);
  }
  fprintf(stderr, "tcp_pair: unknown mode %s\n", mode);
  return 2;
}

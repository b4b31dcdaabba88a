/* Kernel functions of different shapes, called a known number of times, for the arm64 kernel
 * function oracle test (tests/guest/test_guest_arm64_kfuncs.py).
 *
 *   kfunc_workload N [SLEEP_US]
 *
 * One process, no threads, no child: N rounds of
 *   umask(022)                    __arm64_sys_umask: a leaf (no call; an ldxr/stlxr loop)
 *   uname(&u)                     __arm64_sys_newuname: rwsem down/up, copy_to_user
 *   send(c, 64 bytes)             tcp_sendmsg: a loopback TCP send to a socket of this same
 *                                 process, read back at once (recv) so no buffer ever fills
 *   nanosleep(SLEEP_US)           do_nanosleep: sleeps (schedule(): the idle task runs meanwhile)
 * after one warm-up round (first touches of the stack, the buffers and the socket's memory).
 * Built static by the test (aarch64-linux-gnu-gcc -static). Prints "kfunc_workload: n=N" on
 * success; exits 2 on any error. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static void die(const char* what) {
  fprintf(stderr, "kfunc_workload: %s: %s\n", what, strerror(errno));
  exit(2);
}

#include "../loopback_pair.h"

static void pair(int* tx, int* rx) {
  *rx = loopback_pair(tx);
}

static void round_trip(int tx, int rx, char* buf, size_t size) {
  if (send(tx, buf, size, 0) != (ssize_t)size) die("send");
  size_t got = 0;
  while (got < size) {
    ssize_t r = recv(rx, buf + got, size - got, 0);
    if (r <= 0) die("recv");
    got += (size_t)r;
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: kfunc_workload N [SLEEP_US]\n");
    return 2;
  }
  long n = atol(argv[1]);
  long sleep_us = argc > 2 ? atol(argv[2]) : 200;
  static char buf[64];
  struct utsname u;
  memset(&u, 0, sizeof(u));
  memset(buf, 'x', sizeof(buf));
  int tx, rx;
  pair(&tx, &rx);
  struct timespec ts = {0, sleep_us * 1000L};
  for (long i = -1; i < n; i++) { /* i == -1: the warm-up round */
    umask(022);
    if (uname(&u) != 0) die("uname");
    round_trip(tx, rx, buf, sizeof(buf));
    if (nanosleep(&ts, NULL) != 0) die("nanosleep");
  }
  printf("kfunc_workload: n=%ld\n", n);
  return 0;
}

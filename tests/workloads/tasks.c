// Task shapes for the -p/-t end-detection and thread-name tests (issue 14):
//   tasks leader-exits MS      the first thread exits at once, a second thread lives MS ms
//                              (prints "tid TID" of the second thread, then ends the process)
//   tasks thread-exits A B     a second thread lives A ms, the process B ms
//                              (prints "tid TID" of the second thread)
//   tasks rename NAME N        sets its thread name (comm) to NAME and calls getppid N times
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long thread_ms;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void* worker(void* arg) {
  (void)arg;
  printf("tid %ld\n", (long)syscall(SYS_gettid));
  fflush(stdout);
  sleep_ms(thread_ms);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc >= 3 && !strcmp(argv[1], "leader-exits")) {
    thread_ms = atol(argv[2]);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_exit(NULL);  // the process ends when the worker returns
  }
  if (argc >= 4 && !strcmp(argv[1], "thread-exits")) {
    thread_ms = atol(argv[2]);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    sleep_ms(atol(argv[3]) - thread_ms);
    return 0;
  }
  if (argc >= 4 && !strcmp(argv[1], "rename")) {
    prctl(PR_SET_NAME, argv[2]);
    long n = atol(argv[3]);
    for (long i = 0; i < n; i++) syscall(SYS_getppid);
    return 0;
  }
  fprintf(stderr, "usage: %s leader-exits MS | thread-exits A B | rename NAME N\n", argv[0]);
  return 2;
}

/* pingpong N: a parent and a forked child pass one byte back and forth over two pipes, N round
 * trips. Each side blocks in read() for every byte, so the pair makes about 2N voluntary context
 * switches (at least N). Prints
 *   pingpong round_trips=N */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pingpong N\n");
    return 2;
  }
  const long n = atol(argv[1]);
  int ping[2], pong[2];
  if (pipe(ping) != 0 || pipe(pong) != 0) {
    perror("pipe");
    return 1;
  }
  fflush(stdout);
  pid_t child = fork();
  if (child < 0) {
    perror("fork");
    return 1;
  }
  char c = 0;
  if (child == 0) {
    for (long i = 0; i < n; ++i) {
      if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1) _exit(1);
    }
    _exit(0);
  }
  for (long i = 0; i < n; ++i) {
    if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) return 1;
  }
  int st;
  waitpid(child, &st, 0);
  printf("pingpong round_trips=%ld\n", n);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

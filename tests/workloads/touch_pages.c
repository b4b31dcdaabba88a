/* touch_pages N: maps N fresh anonymous pages (huge pages refused with MADV_NOHUGEPAGE, so
 * every page is its own fault) and writes one byte to each, once. Prints
 *   touch_pages pages=N page_size=BYTES
 * The process therefore takes at least N page faults. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: touch_pages N\n");
    return 2;
  }
  const long n = atol(argv[1]);
  const long page = sysconf(_SC_PAGESIZE);
  if (n <= 0) {
    fprintf(stderr, "touch_pages: N must be positive\n");
    return 2;
  }
  size_t len = (size_t)n * (size_t)page;
  volatile char* mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
#ifdef MADV_NOHUGEPAGE
  madvise((void*)mem, len, MADV_NOHUGEPAGE);
#endif
  for (long i = 0; i < n; ++i) mem[(size_t)i * (size_t)page] = 1;
  printf("touch_pages pages=%ld page_size=%ld\n", n, page);
  return 0;
}

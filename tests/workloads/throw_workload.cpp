// C++ exceptions, through libstdc++'s own USDT probes (provider libstdcxx: throw, catch): a
// shared library's probes. Prints one JSON line with what it did.
//
//   throw_workload N   throws and catches N exceptions (each thrown two calls deep)
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace {

__attribute__((noinline)) void deep(long i) {
  if (i >= 0) throw std::runtime_error("pmcprof");
}

__attribute__((noinline)) void middle(long i) {
  deep(i);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: throw_workload N\n");
    return 2;
  }
  const long n = std::atol(argv[1]);
  long caught = 0;
  for (long i = 0; i < n; i++) {
    try {
      middle(i);
    } catch (const std::runtime_error&) {
      caught++;
    }
  }
  std::printf("{\"thrown\": %ld, \"caught\": %ld}\n", n, caught);
  return 0;
}

// serve --listen: ADDR:PORT, [V6]:PORT, :PORT, PORT.
#include "fuzz_common.hpp"
#include "pmcprof/run/http_server.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = pmcprof_fuzz::text(data, size);
  pmcprof_fuzz::run([&] {
    const auto a = pmcprof::parse_listen_address(s);
    if (a.port == 0 || a.host.empty() || a.text().empty()) std::abort();
  });
  return 0;
}

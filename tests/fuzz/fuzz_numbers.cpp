// Numeric options: the one strict parser. A value it accepts is exactly a decimal number in
// range; everything else is an Error naming the option.
#include <string>

#include "fuzz_common.hpp"
#include "pmcprof/util/number.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = pmcprof_fuzz::text(data, size);
  pmcprof_fuzz::run([&] {
    const std::uint64_t v = pmcprof::parse_option_number(s, "-I", 10, 31536000000ull, "ms");
    std::size_t i = 0;
    while (i + 1 < s.size() && s[i] == '0') ++i;
    if (v < 10 || v > 31536000000ull || std::to_string(v) != s.substr(i)) std::abort();
  });
  try {
    pmcprof::parse_option_number(s, "-p", 1, 4194304);
  } catch (const pmcprof::Error& e) {
    if (std::string(e.what()).find("-p") == std::string::npos) std::abort();
  }
  return 0;
}

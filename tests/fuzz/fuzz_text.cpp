// Names from outside in every renderer: whatever the bytes, escaping gives valid UTF-8, a CSV
// field holds no line break, a Prometheus label value is valid, a quote stays short.
#include "fuzz_common.hpp"
#include "pmcprof/report/number_format.hpp"
#include "pmcprof/report/prometheus.hpp"
#include "pmcprof/util/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = pmcprof_fuzz::text(data, size);
  using namespace pmcprof;
  if (!is_valid_utf8(escape_bytes(s)) || !is_valid_utf8(escape_bytes(s, false))) std::abort();
  const std::string csv = csv_field(s, ",");
  if (!is_valid_utf8(csv) || csv.find('\n') != std::string::npos) std::abort();
  const std::string label = prometheus_escape(s);
  if (!is_valid_utf8(label) || label.find('\n') != std::string::npos) std::abort();
  if (quote(s).size() > 64 * 4 + 40) std::abort();
  if (is_valid_utf8(s) &&
      s.find_first_of(
          std::string("\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13"
                      "\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f",
                      33)) == std::string::npos &&
      escape_bytes(s) != s)
    std::abort();
  return 0;
}

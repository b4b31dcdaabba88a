// USDT and regions: --region values (one per line, both ends), --by argN, the stapsdt
// argument specs (x86-64 and arm64 syntax), an NT_STAPSDT descriptor made of the raw bytes,
// and a tracepoint format file.
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "pmcprof/probes/func_targets.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/probes/usdt.hpp"
#include "pmcprof/util/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = pmcprof_fuzz::text(data, size);
  int lines = 0;
  for (const auto& line : pmcprof::split(s, '\n')) {
    if (++lines > 8) break;
    pmcprof_fuzz::run([&] {
      const pmcprof::RegionSpec r = pmcprof::parse_region(line);
      if (r.label().empty() || r.start.text.empty() || r.end.text.empty()) std::abort();
    });
    pmcprof_fuzz::run([&] { pmcprof::parse_key_args(line); });
  }
  for (const auto& spec : pmcprof::split_usdt_args(s)) {
    if (spec.empty()) std::abort();
    for (auto arch : {pmcprof::SdtArch::x86_64, pmcprof::SdtArch::aarch64})
      pmcprof_fuzz::run([&] {
        const pmcprof::UsdtArg a = pmcprof::parse_usdt_arg(spec, arch);
        if (a.size != 1 && a.size != 2 && a.size != 4 && a.size != 8) std::abort();
      });
  }
  for (std::size_t width : {4, 8}) {
    if (auto n = pmcprof::parse_stapsdt_desc(data, size, width))
      if (n->provider.empty() || n->name.empty()) std::abort();
  }
  for (const auto& f : pmcprof::parse_tracepoint_format(s))
    if (f.name.empty()) std::abort();
  return 0;
}

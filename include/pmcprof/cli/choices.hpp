#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/run/function_session.hpp"
#include "pmcprof/stream/func_stats.hpp"

namespace pmcprof {

// The function-mode flags' values, each refused in one line naming the flag (UserError).
AggregateChoice parse_aggregate_choice(const std::string& text);  // --aggregate
Breakdown parse_breakdown(const std::string& text);               // --by
BackendRequest parse_backend_request(std::string_view text);      // --backend
ThreadStore parse_thread_store(const std::string& text);          // --thread-state
// --buffer-pages: a power of two, 1..65536.
std::size_t validate_buffer_pages(long long pages);
// --hist-linear=MIN,MAX,STEP: decimal numbers >= 0, MIN < MAX, STEP > 0, at most
// kMaxHistLinearRows rows; all with a time unit (ns, us, ms, s; a bare 0 too) for a range of
// times in ns, or none.
inline constexpr std::uint64_t kMaxHistLinearRows = 1000;
HistLinear parse_hist_linear(std::string_view text);

// A decimal option (diff's --threshold PCT, --alpha P): digits with at most one '.', no sign or
// exponent, within [min, max] (exclusive of `min` when `above_min`). UserError names the option.
double parse_decimal_option(std::string_view text, std::string_view option, double min, double max,
                            const std::string& hint, bool above_min = false);

// What --hist can draw in a run: wall and on-CPU time, each event, each metric.
struct HistName {
  std::string name;
  bool time = false;
};
// --hist[=QUANTITIES] (`quantities`: its comma list, "" for the default) and --hist-linear
// checked against the quantities of a run (stat's, or a saved one for report): an unknown
// name is refused with the closest ones and the list, a range of times for a count too.
HistOptions hist_choice(bool hist, const std::string& quantities,
                        const std::optional<std::string>& linear,
                        const std::vector<HistName>& names);

}  // namespace pmcprof

#pragma once

#include <cstddef>
#include <string>
#include <string_view>

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

}  // namespace pmcprof

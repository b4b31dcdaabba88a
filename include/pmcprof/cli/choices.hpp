#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/probes/target_spec.hpp"
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

}  // namespace pmcprof

#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pmcprof {

// Parses a CPU list like "0,2-3" (the kernel's and perf's -C syntax) into sorted unique ids.
// Throws UserError on malformed input.
std::vector<int> parse_cpu_list(std::string_view text);

// Checks that every requested CPU is online; throws UserError naming the first that is not.
void check_cpus_online(const std::vector<int>& requested, const std::vector<int>& online);

// Formats ids back into the compact "0-3,5" form.
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace pmcprof

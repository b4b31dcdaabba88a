#include "pmcprof/platform/libbpf_support.hpp"

#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <vector>

#include "pmcprof/util/strings.hpp"

namespace pmcprof {

void BpfLinkDeleter::operator()(bpf_link* link) const {
  bpf_link__destroy(link);
}

namespace {

// libbpf reports through one process-wide callback with no user context, so the verifier's
// verdict is kept here (per thread) for the one-line error pmcprof prints.
thread_local std::string last_verifier_verdict;

int quiet_print(enum libbpf_print_level, const char* fmt, va_list args) {
  std::vector<char> buf(1 << 20);
  vsnprintf(buf.data(), buf.size(), fmt, args);
  if (auto v = verifier_verdict(buf.data()); !v.empty()) last_verifier_verdict = v;
  return 0;
}

}  // namespace

std::string verifier_verdict(const std::string& log) {
  if (log.find("-- END PROG LOAD LOG --") == std::string::npos) return {};
  const auto lines = split(log, '\n');
  std::string verdict;
  for (std::size_t i = 1; i < lines.size() && verdict.empty(); ++i)
    if (starts_with(lines[i], "processed ")) verdict = std::string(trim(lines[i - 1]));
  if (verdict.empty()) return {};
  std::string prog;
  if (auto q = log.find("prog '"); q != std::string::npos)
    prog = log.substr(q + 6, log.find('\'', q + 6) - (q + 6));
  return (prog.empty() ? "" : "program " + prog + ": ") + verdict;
}

LibbpfQuiet::LibbpfQuiet(bool verbose) {
  // libbpf_set_print returns the previous printer; put it straight back when verbose.
  previous_ = reinterpret_cast<void*>(libbpf_set_print(quiet_print));
  if (verbose) libbpf_set_print(reinterpret_cast<libbpf_print_fn_t>(previous_));
}

LibbpfQuiet::~LibbpfQuiet() {
  libbpf_set_print(reinterpret_cast<libbpf_print_fn_t>(previous_));
}

std::string LibbpfQuiet::last_verdict() {
  return last_verifier_verdict;
}

void LibbpfQuiet::clear_verdict() {
  last_verifier_verdict.clear();
}

}  // namespace pmcprof

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

int quiet_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  // Only warnings carry a verifier log; libbpf's debug chatter is many lines per load.
  if (level == LIBBPF_DEBUG) return 0;
  va_list sized;
  va_copy(sized, args);
  const int n = vsnprintf(nullptr, 0, fmt, sized);
  va_end(sized);
  if (n <= 0) return 0;
  std::string text(static_cast<std::size_t>(n), '\0');
  vsnprintf(text.data(), text.size() + 1, fmt, args);
  if (auto v = verifier_verdict(text); !v.empty()) last_verifier_verdict = v;
  return 0;
}

}  // namespace

void destroy_links(std::vector<BpfLink> links, std::vector<std::shared_ptr<void>> owners) {
  if (links.size() > 1) {
    // Up to 16 at a time: each thread mostly sleeps in the kernel.
    const std::size_t n_threads = std::min<std::size_t>(16, links.size());
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < n_threads; ++t)
      threads.emplace_back([&links, t, n_threads] {
        for (std::size_t i = t; i < links.size(); i += n_threads) links[i].reset();
      });
    for (auto& th : threads) th.join();
  }
  links.clear();
  owners.clear();
}

LinkReaper::~LinkReaper() {
  join();
}

void LinkReaper::reap(std::vector<BpfLink> links, std::vector<std::shared_ptr<void>> owners) {
  threads_.emplace_back([l = std::move(links), o = std::move(owners)]() mutable {
    destroy_links(std::move(l), std::move(o));
  });
}

void LinkReaper::join() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

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

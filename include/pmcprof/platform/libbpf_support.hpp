#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

struct bpf_link;

namespace pmcprof {

// Owns one attachment; destroying it detaches.
struct BpfLinkDeleter {
  void operator()(bpf_link* link) const;
};
using BpfLink = std::unique_ptr<bpf_link, BpfLinkDeleter>;

// Destroys links concurrently and returns when all are gone: detaching a perf-event probe
// (kprobe, uprobe, tracepoint) waits for an RCU grace period, tens of ms each, and the waits
// overlap. `owners` (objects whose programs the links run) are released after their links.
void destroy_links(std::vector<BpfLink> links, std::vector<std::shared_ptr<void>> owners = {});

// Destroys links on background threads (destroy_links), so a caller that no longer needs them
// does not wait; the destructor joins what is still running.
class LinkReaper {
 public:
  LinkReaper() = default;
  LinkReaper(const LinkReaper&) = delete;
  LinkReaper& operator=(const LinkReaper&) = delete;
  ~LinkReaper();
  void reap(std::vector<BpfLink> links, std::vector<std::shared_ptr<void>> owners = {});
  void join();

 private:
  std::vector<std::thread> threads_;
};

// The verifier's verdict in a libbpf load log: "program NAME: <the line before 'processed N
// insns'>", or "" when the text is not a whole log.
std::string verifier_verdict(const std::string& log);

// Silences libbpf's own stderr chatter for the lifetime of the object (pmcprof explains
// failures itself in one line), unless verbose. While it is alive, the verifier's verdict of
// the last failed load is kept (last_verdict()). libbpf's printer is process-wide: one at a time.
class LibbpfQuiet {
 public:
  explicit LibbpfQuiet(bool verbose = false);
  ~LibbpfQuiet();
  LibbpfQuiet(const LibbpfQuiet&) = delete;
  LibbpfQuiet& operator=(const LibbpfQuiet&) = delete;

  // The verdict of the last load that failed since construction (or clear()), "" if none.
  static std::string last_verdict();
  static void clear_verdict();

 private:
  void* previous_ = nullptr;
};

}  // namespace pmcprof

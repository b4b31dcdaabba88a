#pragma once

#include <memory>
#include <string>

struct bpf_link;

namespace pmcprof {

// Owns one attachment; destroying it detaches.
struct BpfLinkDeleter {
  void operator()(bpf_link* link) const;
};
using BpfLink = std::unique_ptr<bpf_link, BpfLinkDeleter>;

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

#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/probes/func_calibration.hpp"
#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/probes/target_spec.hpp"

namespace pmcprof {

// One --func, resolved to how it attaches.
struct AttachPoint {
  std::uint32_t func_id = 0;
  FuncTarget target;
  ProbeBackend backend = ProbeBackend::uprobe;
  std::string binary;             // uprobe: resolved path
  std::uint64_t file_offset = 0;  // uprobe
  UprobeStart start = UprobeStart::stepped;  // uprobe: how its first instruction is run
  // fentry chosen by --backend auto: kprobes are the fallback when this target refuses it.
  bool kprobe_fallback = false;
  std::string fallback_why;  // why a fentry target went to kprobes (-v, JSON)
};

// Resolves every --func (binaries, ELF offsets, kallsyms/BTF, tracepoints, the kprobe
// blacklist and pmcprof's own denylist) before anything is loaded: a bad target fails the
// run in one line. Throws UserError.
std::vector<AttachPoint> resolve_targets(const std::vector<FuncTarget>& targets,
                                         BackendRequest backend, std::optional<pid_t> pid);

// Kernel functions pmcprof's own probes run through (the counter reads, the output, the
// clock, the probe machinery, task storage): a probe on one would fire inside pmcprof's
// programs. Returns why `name` is refused, or "" when it is not.
std::string denied_kernel_function(const std::string& name);

// The live attachments of one run. Attaching is interruptible: `keep_going` is asked
// between targets (a SIGINT during a long attach stops it).
class FuncAttachments {
 public:
  // Attaches every point; a fentry target the kernel refuses falls back to kprobes when the
  // backend was chosen automatically (the point's backend and fallback_why are updated).
  // Returns false when keep_going() said stop. Throws UserError / SystemError.
  bool attach(const FuncObject& object, std::vector<AttachPoint>& points,
              const std::function<bool(const AttachPoint&)>& keep_going);
  void detach();

 private:
  std::vector<BpfLink> links_;
  std::vector<std::shared_ptr<void>> twins_;  // fentry twins: after their links
};

}  // namespace pmcprof

#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pmcprof/probes/func_calibration.hpp"
#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/probes/target_spec.hpp"

namespace pmcprof {

// Where one program attaches: one end of a region, or a single probe, resolved.
struct ProbeSite {
  ProbeBackend backend = ProbeBackend::uprobe;  // uprobe, usdt, kprobe or tracepoint
  bool retprobe = false;                        // a uretprobe / kretprobe (a %return point)
  std::string binary;                           // uprobe, usdt: the file
  struct Location {
    std::uint64_t file_offset = 0;
    std::uint64_t semaphore_offset = 0;   // usdt: the file offset of its semaphore (0: none)
    std::optional<std::size_t> key_slot;  // --by argN: the key spec read here
  };
  std::vector<Location> locations;           // uprobe, kprobe, tracepoint: one; usdt: every site
  std::string function;                      // kprobe
  std::string category, event;               // tracepoint
  UprobeStart start = UprobeStart::stepped;  // uprobe: how its first instruction is run
  // The nested-cost class of its way (set after calibration; 0: none): each hit costs the
  // calls in flight half a probe pair of it (a whole one for a return probe).
  std::uint32_t cost_class = 0;
  std::string text() const;  // for -v
};

// What one row of the report measures.
enum class MeasureShape {
  function,  // --func: a call, from a function's entry to its return
  region,    // --region: from a start probe to an end probe
  probe,     // --func usdt:... or tracepoint:...: hits of a single probe
};
const char* to_string(MeasureShape shape);

// One --func or --region, resolved to how it attaches.
struct AttachPoint {
  std::uint32_t func_id = 0;
  MeasureShape shape = MeasureShape::function;
  FuncTarget target;  // the --func (a region: its start)
  std::string label;  // its name in reports: the --func as written, the region's name or text
  ProbeBackend backend = ProbeBackend::uprobe;
  // Functions:
  std::string binary;                        // uprobe: resolved path
  std::uint64_t file_offset = 0;             // uprobe
  UprobeStart start = UprobeStart::stepped;  // uprobe: how its first instruction is run
  // fentry chosen by --backend auto: kprobes are the fallback when this target refuses it.
  bool kprobe_fallback = false;
  std::string fallback_why;                      // why a fentry target went to kprobes (-v, JSON)
  std::optional<std::size_t> key_slot;           // --by argN read at its entry
  std::optional<std::size_t> fallback_key_slot;  // ... by kprobes, when fentry falls back
  // Regions (begin and end) and single probes (begin):
  std::optional<ProbeSite> begin, end;
  // The backend(s) in reports: "uprobe"; a region's "usdt", or "uprobe/usdt" for two kinds.
  std::string backend_text() const;
};

struct ResolvedTargets {
  std::vector<AttachPoint> points;  // func ids 0..: the --func, then the --region
  // --by argN: per key slot, where each argument is at that start point.
  std::vector<KeySpec> key_specs;
  // --by argN: per argument, whether it is signed at any start point (how integers print).
  std::vector<bool> key_signed;
};

// Resolves every --func and --region (binaries, ELF offsets, SDT notes and their argument
// specs, kallsyms/BTF, tracepoints, the kprobe blacklist and pmcprof's own denylist) before
// anything is loaded: a bad target fails the run in one line. A --func glob stands for a row
// per function it matches (probes/func_globs.hpp); `verbose` is told what each matched.
// Throws UserError.
ResolvedTargets resolve_targets(const std::vector<FuncTarget>& targets,
                                const std::vector<RegionSpec>& regions,
                                const std::vector<KeyArg>& key_args, BackendRequest backend,
                                std::optional<pid_t> pid, std::ostream* verbose = nullptr);

// The fields of a tracepoint's record a --by argN can name (its format file, without the
// common_ fields and a syscall's __syscall_nr), in order: name, offset, size, signed. Pure.
struct TracepointField {
  std::string name;
  std::string type;
  int offset = 0;
  int size = 0;
  bool is_signed = false;
};
std::vector<TracepointField> parse_tracepoint_format(const std::string& format_text);

// The calling convention's argument registers at a function's entry (x86-64: rdi, rsi, rdx,
// rcx, r8, r9; arm64: x0-x7), as offsets in struct pt_regs. nullopt past the last one.
std::optional<int> abi_arg_offset(unsigned index);

// Kernel functions pmcprof's own probes run through (the counter reads, the output, the
// clock, the probe machinery, task storage): a probe on one would fire inside pmcprof's
// programs. Returns why `symbol` is refused, or "" when it is not.
std::string denied_kernel_function(const std::string& symbol);

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
  void attach_site(const FuncObject& object, const AttachPoint& p, const ProbeSite& site,
                   ProbeRole role);
  // Uprobes wait here to be attached per binary, one multi-uprobe link per program
  // (FuncObject::uprobe_multi()); a region's starts after everything else.
  struct UserGroup {
    bool start = false;  // a region's start (detached first, attached last)
    ProbeRole role = ProbeRole::entry;
    bool retprobe = false;
    std::string binary;
    auto operator<=>(const UserGroup&) const = default;
  };
  void attach_user_groups(const FuncObject& object);
  std::map<UserGroup, std::vector<UprobeSpot>> pending_;
  std::vector<BpfLink> links_;
  std::vector<std::shared_ptr<void>> twins_;  // fentry twins: after their links
  std::vector<BpfLink> starts_;               // regions' starts: detached first (declared last)
};

}  // namespace pmcprof

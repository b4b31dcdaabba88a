#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/probes/bpf_object.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/util/fd.hpp"

struct func_bpf;
struct pmcprof_agg;

namespace pmcprof {

// Where per-call results are summed (PMCPROF_AGG_* in bpf/pmcprof.h).
inline constexpr std::uint32_t kAggStream = 0x1;
inline constexpr std::uint32_t kAggKernel = 0x2;

// What happened to a function's calls outside the sums (struct pmcprof_func_stats).
struct FuncProbeStats {
  std::uint64_t lost = 0;            // records the stream's ring refused
  std::uint64_t depth_overflow = 0;  // nested deeper than the per-thread stack
  std::uint64_t unmatched_exit = 0;  // returns without an entry
  std::uint64_t abandoned = 0;       // entries whose return never came
  std::uint64_t reentered = 0;       // probe hits inside pmcprof's own BPF code
  std::uint64_t state_failed = 0;    // no per-thread state could be made
  std::uint64_t agg_collisions = 0;  // kernel aggregation busy on the CPU (preempted)
  std::uint64_t agg_full = 0;        // no room for another --by cgroup key
  std::uint64_t entered = 0;         // runs with regions: starts measured ...
  std::uint64_t ended = 0;           // ... and the ends that matched one
};

// Where per-thread state lives: task local storage (freed with the task), or a preallocated
// hash keyed by thread id for kernels without BPF_MAP_TYPE_TASK_STORAGE (Linux < 5.11).
enum class ThreadStore { automatic, task_storage, hash };

// A per-call metric as the kernel computes it (struct pmcprof_metric): the ratio of two of a
// call's quantities, each a BPF event index or kOperandWall (the call's wall time).
inline constexpr std::size_t kMaxCallMetrics = 8;  // PMCPROF_MAX_METRICS
inline constexpr std::uint8_t kOperandWall = 8;    // PMCPROF_OPERAND_WALL
inline constexpr unsigned kMetricFracBits = 20;    // PMCPROF_METRIC_FRAC_BITS
struct CallMetricOperands {
  std::uint8_t num = 0;
  std::uint8_t den = 0;
  bool operator==(const CallMetricOperands&) const = default;
};

// How the function-mode BPF object is configured (rodata) and sized (max_entries) before
// load. Only the maps a run needs are created, each sized to the run.
struct FuncObjectConfig {
  std::size_t n_funcs = 0;         // --func targets; id n_funcs is pmcprof's calibration target
  std::uint32_t agg_mode = 0;      // kAggStream | kAggKernel
  bool follow_tgids = false;       // count only tracked processes and their descendants
  bool sched_hook = true;          // suspend/resume in-flight calls at sched_switch
  bool by_cgroup = false;          // records carry the cgroup; kernel sums are keyed by it
  bool need_comm = false;          // records carry the command name
  bool send_caller = false;        // the stream's records carry pid, tid, cpu, cgroup, comm
  std::uint32_t clock_events = 0;  // bit i: BPF event i is the on-CPU time (task-clock)
  // bit i: BPF event i is counted by the sched_switch hook (context-switches, cpu-migrations)
  std::uint32_t switch_events = 0;
  std::uint32_t migration_events = 0;
  // -G filter: (cgroup id, level below the v2 root).
  std::vector<std::pair<std::uint64_t, std::uint32_t>> filter_cgroups;
  ThreadStore thread_store = ThreadStore::automatic;
  std::size_t max_threads = 8192;  // hash store: threads with state at once
  std::size_t max_tracked = 4096;  // processes followed at once (-- CMD, -p)
  // Frames nested deeper than PMCPROF_INLINE_FRAMES, over every thread at once (made as a
  // thread first goes that deep: no memory until then).
  std::size_t max_deep_frames = 16384;
  std::size_t max_cgroup_keys = 16;  // --by cgroup: cgroups kept per function in the kernel
  // --by argN: the arguments read at each start (1 or 2), the keys a function keeps in the
  // kernel's sums (the rest are summed as its "other"), and the start points' key specs (a
  // point's cookie carries its slot + 1).
  std::size_t n_key_args = 0;
  std::size_t max_keys = 64;
  std::size_t key_slots = 0;
  bool count_entries = false;  // regions: starts and matched ends counted
  bool compensate = true;      // subtract the calibrated probe bias from every call
  // Uprobes through multi-uprobe links where the kernel makes them: one link per binary and
  // program, attached and detached at once (a perf-event uprobe takes ~0.1 s to detach, 64
  // functions 14 s). The kernel runs their programs preemptible, though (perf-event uprobe
  // programs run with preemption off), and a call whose entry or exit program is preempted is
  // not counted: runs with up to kUprobeMultiAbove user points keep perf-event uprobes.
  bool uprobe_multi = false;
  bool probe_programs = false;    // func_entry/func_exit: kprobes and uprobes
  bool syscall_programs = false;  // syscall_entry/syscall_exit: any tracepoint
  // syscall_entry_raw/syscall_exit_raw: syscalls by number (FuncObject::raw_syscall_number),
  // at the raw sys_enter/sys_exit tracepoints, attached with the object.
  bool raw_syscalls = false;
  bool hit_programs = false;            // probe_hit: single USDT probes, uprobes, kprobes
  bool tracepoint_hit_program = false;  // tracepoint_hit: single tracepoints
  // Per-call metrics the kernel aggregation computes (at most kMaxCallMetrics).
  std::vector<CallMetricOperands> metrics;
};

// Which of the object's programs an attach point runs: a call's (or region's) start or end,
// or a single probe's hit.
enum class ProbeRole { entry, exit, hit };

// The BPF cookie of an attach point (bpf/pmcprof.h): the function id, the key spec slot
// (--by argN, nullopt: none read here), and whether it starts a region.
std::uint64_t probe_cookie(std::uint32_t func_id, std::optional<std::size_t> key_slot = {},
                           bool region = false);
// The cookie bits of a region's end or start, or a single probe, whose hits cost the calls in
// flight on their thread half a probe pair of cost class `cost_class` (0: none), or a whole
// one for a return probe (`whole_pair`).
std::uint64_t cost_cookie(std::uint32_t cost_class, bool whole_pair);

// The kernel's sums of one function (and cgroup), merged over CPUs.
struct KernelAggregate {
  std::uint32_t func_id = 0;
  std::uint64_t cgroup_id = 0;
  std::string key;     // --by argN: the key's PMCPROF_KEY_SIZE bytes
  bool other = false;  // --by argN: the calls of keys past the function's max_keys
  std::shared_ptr<const pmcprof_agg> agg;
  // [histogram index (PMCPROF_HIST_*)][bucket]; empty where a histogram is not kept.
  std::vector<std::vector<std::uint64_t>> hists;
  // [per-call metric][bucket]: the fixed-point values' histograms.
  std::vector<std::vector<std::uint64_t>> metric_hists;
};

// One BPF map's kernel memory, from /proc/self/fdinfo (bench and -v).
struct MapMemory {
  std::string name;
  std::string type;
  std::uint64_t memlock = 0;
  bool per_cpu = false;
};

// The loaded function-mode BPF object (bpf/func.bpf.c) with the counter fds in place.
class FuncObject {
 public:
  static FuncObject load(const CounterSet& counters, const FuncObjectConfig& config);
  FuncObject(FuncObject&&) noexcept;
  FuncObject& operator=(FuncObject&&) = delete;
  ~FuncObject();

  const BpfEventMap& events() const { return events_; }
  ThreadStore thread_store() const { return store_; }
  // Whether uprobes go through multi-uprobe links (kernel_has_uprobe_multi()): attach_uprobe
  // and attach_user then make one each, and attach_user_multi attaches a whole binary's.
  bool uprobe_multi() const { return uprobe_multi_; }
  std::uint32_t calibration_id() const { return static_cast<std::uint32_t>(config_.n_funcs); }
  // The calibration's outer function (it calls the calibration target): nested probes' cost.
  std::uint32_t calibration_outer_id() const {
    return static_cast<std::uint32_t>(config_.n_funcs + 1);
  }

  // Attach pairs (entry, exit) for one function; `id` is the entry's cookie (probe_cookie:
  // the function id, and the --by argN key slot). Throw UserError (exit 1) on failure.
  std::vector<BpfLink> attach_uprobe(std::uint64_t id, const std::string& binary,
                                     std::uint64_t offset, pid_t pid = -1) const;
  std::vector<BpfLink> attach_kprobe(std::uint64_t id, const std::string& function) const;
  // A syscall: by its number where the object has raw_syscalls and raw_syscall_number() gives
  // one (an entry of syscall_ids), else its two tracepoints.
  std::vector<BpfLink> attach_syscall(std::uint64_t id, const std::string& syscall) const;
  // Detaches the raw sys_enter/sys_exit programs and returns once none can still be running
  // (one RCU grace period): zeroing a syscall's entry does not wait, as detaching a perf
  // tracepoint does, and a run's end must not read sums a program is still adding to.
  void detach_raw_syscalls();
  // The number by which an object with raw_syscalls takes `syscall` at a point of cookie
  // `id`: known (syscall_number), and no argument read there (a tracepoint's fields are read
  // from its own record). nullopt: its two tracepoints instead.
  static std::optional<std::uint32_t> raw_syscall_number(std::uint64_t id,
                                                         const std::string& syscall);
  // One program at one point (regions, single probes, USDT): a uprobe (retprobe: a
  // uretprobe) at a file offset, with a USDT semaphore (its file offset, 0: none) that the
  // kernel raises while it is attached; a kprobe (kretprobe); a tracepoint. Throw UserError.
  BpfLink attach_user(ProbeRole role, std::uint64_t cookie, const std::string& binary,
                      std::uint64_t offset, std::uint64_t semaphore_offset, bool retprobe,
                      pid_t pid = -1) const;
  // Every spot of `binary` behind one multi-uprobe link (only if uprobe_multi()).
  BpfLink attach_user_multi(ProbeRole role, const std::string& binary,
                            const std::vector<UprobeSpot>& spots, bool retprobe,
                            pid_t pid = -1) const;
  BpfLink attach_kernel(ProbeRole role, std::uint64_t cookie, const std::string& function,
                        bool retprobe) const;
  BpfLink attach_tracepoint(ProbeRole role, std::uint64_t cookie, const std::string& category,
                            const std::string& name) const;
  // --by argN: where a start point's arguments are (before it is attached).
  void set_key_spec(std::size_t slot, const KeySpec& args) const;
  // fentry/fexit on `function`: a twin object sharing every map, loaded against that
  // function's BTF (the kernel verifies tracing programs per target). Returns the links and
  // the twin that owns the programs; throws SystemError when the kernel refuses, so the
  // caller can fall back to kprobes for that target.
  struct FentryAttachment {
    std::vector<BpfLink> links;
    std::shared_ptr<void> twin;
  };
  FentryAttachment attach_fentry(std::uint64_t id, const std::string& function) const;
  // sched_switch (if configured), fork (if following) and exit hooks.
  std::vector<BpfLink> attach_scheduler_hooks() const;

  void track(pid_t tgid) const;  // adds a process to the filter; throws SystemError
  int records_fd() const;

  // Not const: histogram reads keep the state that makes 32-bit kernel buckets 64-bit.
  // The scalars and histograms of a moment no call was summed in, when one came in a few
  // tries (inconsistent_reads() counts the reads where none did).
  std::vector<KernelAggregate> read_aggregates();
  std::uint64_t inconsistent_reads() const { return inconsistent_reads_; }
  // [func id] summed over CPUs, calibration id included.
  std::vector<FuncProbeStats> read_func_stats() const;
  std::uint64_t untracked() const;  // processes the fork hook could not add to the filter

  std::vector<MapMemory> map_memory() const;

  // Calibration (func_calibration.hpp): the samples of calls made under calibration_id()
  // since the last reset, and the bias to subtract from a function's calls.
  struct CalibrationSample {
    std::vector<std::uint64_t> delta;  // per BPF event
    std::uint32_t measured = 0;        // bit i: event i ran through the call
    std::uint64_t wall_ns = 0;
    std::uint64_t oncpu_ns = 0;
    bool not_counted = false;
  };
  void reset_calibration() const;
  // Of calibration_id(), or (outer) of calibration_outer_id().
  std::vector<CalibrationSample> calibration_samples(bool outer = false) const;
  // values and noise floors: per BPF event, then wall, then on-CPU (ns).
  void set_bias(std::uint32_t func_id, const std::vector<std::uint64_t>& values,
                const std::vector<std::uint64_t>& noise) const;
  static constexpr std::uint32_t kCostClasses = 4;  // PMCPROF_COST_CLASSES
  // Cost class `cost_class` (1..kCostClasses): its probe pair costs an enclosing call
  // `enclosed`, give or take `noise` and `tail` (per BPF event, then wall, then on-CPU: see
  // ProbeBias::enclosed_noise), taken off every call once per probed call of that class
  // entered inside it (half per single probe hit: cost_cookie).
  void set_class_cost(std::uint32_t cost_class, const std::vector<std::uint64_t>& enclosed,
                      const std::vector<std::uint64_t>& noise,
                      const std::vector<std::uint64_t>& tail) const;
  // Puts func_id's calls in a cost class (set_class_cost first).
  void set_cost_class(std::uint32_t func_id, std::uint32_t cost_class) const;

 private:
  static void destroy(func_bpf* skel);
  FuncObject(BpfEventMap events, FuncObjectConfig config)
      : events_(std::move(events)), config_(std::move(config)) {}
  std::vector<KernelAggregate> read_scalars() const;  // histograms left empty
  void read_histograms(KernelAggregate& ka);
  std::vector<std::uint64_t> read_hist(int map_fd, int carry_fd, const void* key,
                                       std::size_t key_size);
  struct HistState {
    std::vector<std::uint64_t> carried;     // the carries, unwrapped (x 256 calls)
    std::vector<std::uint32_t> carry_last;  // as last read
    std::vector<std::uint64_t> total;       // never below what a read saw
  };
  std::map<std::string, HistState> hist_state_;  // by map key bytes
  std::uint64_t inconsistent_reads_ = 0;         // read_aggregates gave up on a quiet moment
  BpfEventMap events_;
  FuncObjectConfig config_;
  ThreadStore store_ = ThreadStore::task_storage;
  bool uprobe_multi_ = false;
  Skeleton<func_bpf, destroy> skel_;
  std::shared_ptr<const Fd> syscall_ids_;  // syscall_ids, held by each syscall's entry
  std::vector<BpfLink> raw_links_;         // detached before the skeleton goes
};

// The memory of every BPF map in fdinfo text ("memlock:" and "map_type:"), for unit tests.
std::uint64_t fdinfo_memlock(const std::string& fdinfo_text);

}  // namespace pmcprof

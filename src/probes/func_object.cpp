#include "pmcprof/probes/func_object.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

// clang-format off
#include "pmcprof.h"
#include "func.skel.h"  // after pmcprof.h: it names its types
// clang-format on
#include "pmcprof/platform/system.hpp"
#include "pmcprof/probes/percpu_map.hpp"
#include "pmcprof/probes/syscall_numbers.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

static_assert(kAggStream == PMCPROF_AGG_STREAM && kAggKernel == PMCPROF_AGG_KERNEL);
static_assert(sizeof(FuncProbeStats) == sizeof(pmcprof_func_stats));
static_assert(kMaxCallMetrics == PMCPROF_MAX_METRICS && kOperandWall == PMCPROF_OPERAND_WALL &&
              kMetricFracBits == PMCPROF_METRIC_FRAC_BITS);
static_assert(sizeof(CallMetricOperands) == sizeof(pmcprof_metric));

namespace {

struct Hist {  // struct hist in bpf/func.bpf.c: one byte a bucket per CPU
  __u8 bucket[PMCPROF_HIST_BUCKETS];
};

struct HistCarry {  // struct hist_carry: the buckets' wraps, 256 calls each, for every CPU
  __u32 bucket[PMCPROF_HIST_BUCKETS];
};

std::size_t at_least_one(std::size_t n) {
  return n ? n : 1;
}

// Creates `map` sized to `entries`, or (entries == 0) not at all: its code is dead for the
// verifier under this run's rodata.
void create_map(bpf_map* map, std::size_t entries) {
  if (entries == 0) {
    bpf_map__set_autocreate(map, false);
    return;
  }
  size_map(map, entries);
}

// Whether the run's programs keep call frames (entry/exit pairs), which exec and a thread's
// exit must clean up.
bool has_frames(const FuncObjectConfig& c) {
  return c.probe_programs || c.syscall_programs || c.raw_syscalls;
}

// The twin of a loaded object for one fentry target: same programs, every map shared.
struct FentryTwinDeleter {
  void operator()(func_bpf* skel) const { func_bpf__destroy(skel); }
};

}  // namespace

void FuncObject::destroy(func_bpf* skel) {
  func_bpf__destroy(skel);
}

FuncObject::FuncObject(FuncObject&&) noexcept = default;
FuncObject::~FuncObject() = default;

FuncObject FuncObject::load(const CounterSet& counters, const FuncObjectConfig& config) {
  if (config.n_funcs > PMCPROF_MAX_FUNCS)
    throw UserError("too many --func (" + std::to_string(config.n_funcs) + "), at most " +
                    std::to_string(PMCPROF_MAX_FUNCS));
  if (config.metrics.size() > PMCPROF_MAX_METRICS)
    throw UserError("at most " + std::to_string(PMCPROF_MAX_METRICS) +
                    " per-call metrics in one run, got " + std::to_string(config.metrics.size()));
  if (config.filter_cgroups.size() > PMCPROF_MAX_FILTER_CGROUPS)
    throw UserError("at most " + std::to_string(PMCPROF_MAX_FILTER_CGROUPS) +
                    " cgroups can filter function mode (-G), got " +
                    std::to_string(config.filter_cgroups.size()));
  FuncObject obj(BpfEventMap::of(counters), config);
  obj.store_ = config.thread_store;
  if (obj.store_ == ThreadStore::automatic)
    obj.store_ = kernel_has_task_storage() ? ThreadStore::task_storage : ThreadStore::hash;

  obj.skel_.reset(func_bpf__open());
  if (!obj.skel_) throw SystemError("cannot open the func BPF object: " + errno_string(errno));
  auto* skel = obj.skel_.get();
  const std::size_t n_events = obj.events_.size();
  const std::size_t n_ids = config.n_funcs + 2;  // + the calibration target and its caller
  auto* ro = skel->rodata;
  ro->n_events = static_cast<__u32>(n_events);
  ro->n_cpus = static_cast<__u32>(obj.events_.n_cpus());
  ro->agg_mode = config.agg_mode;
  ro->use_task_storage = obj.store_ == ThreadStore::task_storage;
  ro->follow_tgids = config.follow_tgids;
  ro->sched_hook = config.sched_hook;
  const bool kernel_agg = config.agg_mode & PMCPROF_AGG_KERNEL;
  if (config.n_key_args > PMCPROF_MAX_KEY_ARGS)
    throw UserError("--by takes at most " + std::to_string(PMCPROF_MAX_KEY_ARGS) + " arguments");
  if (config.key_slots > PMCPROF_MAX_KEY_SLOTS)
    throw UserError("too many probe locations read --by arguments (" +
                    std::to_string(config.key_slots) + ", at most " +
                    std::to_string(PMCPROF_MAX_KEY_SLOTS) + ")");
  const bool by_args = config.n_key_args > 0;
  const bool keyed = kernel_agg && (config.by_cgroup || by_args);
  ro->agg_keyed = keyed;
  ro->agg_by_cgroup = config.by_cgroup && kernel_agg;
  ro->n_key_args = static_cast<__u32>(config.n_key_args);
  ro->max_keys = by_args ? static_cast<__u32>(config.max_keys) : 0;
  ro->count_entries = config.count_entries;
  ro->need_cgroup_id = config.by_cgroup;
  ro->need_comm = config.need_comm;
  ro->send_caller = config.send_caller;
  ro->clock_events = config.clock_events;
  ro->switch_events = config.switch_events;
  ro->migration_events = config.migration_events;
  ro->unread_events = config.clock_events | config.switch_events | config.migration_events;
  ro->self_tgid = static_cast<__u32>(::getpid());
  ro->calibration_id = static_cast<__u32>(config.n_funcs);
  ro->calibration_outer_id = static_cast<__u32>(config.n_funcs + 1);
  ro->compensate = config.compensate;
  __u32 n_hists = PMCPROF_HIST_EVENT0;
  for (std::size_t i = 0; i < n_events; ++i)
    ro->event_hist[i] = (config.clock_events >> i) & 1 ? PMCPROF_HIST_ONCPU : n_hists++;
  // Per-call metrics: only where the kernel aggregates (the stream computes its own).
  const bool kernel_metrics = config.agg_mode & PMCPROF_AGG_KERNEL;
  ro->n_metrics = kernel_metrics ? static_cast<__u32>(config.metrics.size()) : 0;
  for (std::size_t m = 0; m < ro->n_metrics; ++m) {
    const auto& op = config.metrics[m];
    for (std::uint8_t o : {op.num, op.den})
      if (o != PMCPROF_OPERAND_WALL && o >= n_events)
        throw std::logic_error("per-call metric operand beyond the events");
    ro->metrics[m].num = op.num;
    ro->metrics[m].den = op.den;
    ro->metric_hist[m] = n_hists++;
  }
  ro->n_hists = n_hists;
  ro->n_filter_cgroups = static_cast<__u32>(config.filter_cgroups.size());
  for (std::size_t i = 0; i < config.filter_cgroups.size(); ++i) {
    ro->filter_cgroup_ids[i] = config.filter_cgroups[i].first;
    ro->filter_cgroup_levels[i] = config.filter_cgroups[i].second;
  }

  size_map(skel->maps.counters, obj.events_.slots());
  size_map(skel->maps.records, static_cast<std::size_t>(obj.events_.n_cpus()));
  const bool hash_store = obj.store_ == ThreadStore::hash;
  if (!hash_store) bpf_map__set_autocreate(skel->maps.threads_hash, false);
  if (hash_store) bpf_map__set_autocreate(skel->maps.threads, false);
  create_map(skel->maps.threads_hash, hash_store ? config.max_threads : 0);
  create_map(skel->maps.zero_state, hash_store ? 1 : 0);
  create_map(skel->maps.tracked, config.follow_tgids ? config.max_tracked : 0);
  size_map(skel->maps.deep_frames, config.max_deep_frames);
  // Keyed sums: per function, its cgroups (--by cgroup), or its max_keys argument keys, its
  // "other" key and room for the keys two CPUs add at once (--by argN).
  const std::size_t keys =
      config.n_funcs * (by_args ? config.max_keys + 1 : config.max_cgroup_keys) +
      (by_args ? std::min<std::size_t>(config.n_funcs * config.max_keys, std::size_t{2} * 64) : 0);
  // The calibration id never reaches the aggregation (its calls go to `calib`).
  create_map(skel->maps.aggs, kernel_agg && !keyed ? at_least_one(config.n_funcs) : 0);
  create_map(skel->maps.hists, kernel_agg && !keyed ? at_least_one(config.n_funcs) * n_hists : 0);
  create_map(skel->maps.hist_carry,
             kernel_agg && !keyed ? at_least_one(config.n_funcs) * n_hists : 0);
  create_map(skel->maps.aggs_keyed, keyed ? at_least_one(keys) : 0);
  create_map(skel->maps.hists_keyed, keyed ? at_least_one(keys * n_hists) : 0);
  create_map(skel->maps.hists_keyed_carry, keyed ? at_least_one(keys * n_hists) : 0);
  create_map(skel->maps.zero_carry, keyed ? 1 : 0);
  create_map(skel->maps.agg_key, keyed ? 1 : 0);
  create_map(skel->maps.zero_hist, keyed ? 1 : 0);
  create_map(skel->maps.zero_agg, keyed ? 1 : 0);
  create_map(skel->maps.key_specs, by_args ? at_least_one(config.key_slots) : 0);
  create_map(skel->maps.guard, kernel_agg ? 1 : 0);
  size_map(skel->maps.func_stats, n_ids);
  create_map(skel->maps.syscall_ids, config.raw_syscalls ? PMCPROF_MAX_SYSCALL_NR : 0);

  bpf_program__set_autoload(skel->progs.func_entry, config.probe_programs);
  bpf_program__set_autoload(skel->progs.func_exit, config.probe_programs);
  bpf_program__set_autoload(skel->progs.syscall_entry, config.syscall_programs);
  bpf_program__set_autoload(skel->progs.syscall_exit, config.syscall_programs);
  bpf_program__set_autoload(skel->progs.syscall_entry_raw, config.raw_syscalls);
  bpf_program__set_autoload(skel->progs.syscall_exit_raw, config.raw_syscalls);
  bpf_program__set_autoload(skel->progs.probe_hit, config.hit_programs);
  // Uprobes through multi-uprobe links (config.uprobe_multi) where the kernel makes them:
  // their programs are loaded for that attach type, beside those for kprobes.
  obj.uprobe_multi_ = config.uprobe_multi && (config.probe_programs || config.hit_programs) &&
                      kernel_has_uprobe_multi();
  for (auto [prog, wanted] : {std::pair{skel->progs.func_entry_multi, config.probe_programs},
                              std::pair{skel->progs.func_exit_multi, config.probe_programs},
                              std::pair{skel->progs.probe_hit_multi, config.hit_programs}}) {
    bpf_program__set_autoload(prog, obj.uprobe_multi_ && wanted);
    bpf_program__set_expected_attach_type(prog, static_cast<bpf_attach_type>(kAttachUprobeMulti));
  }
  bpf_program__set_autoload(skel->progs.tracepoint_hit, config.tracepoint_hit_program);
  // fentry/fexit are loaded per target, in twins (attach_fentry).
  bpf_program__set_autoload(skel->progs.func_fentry, false);
  bpf_program__set_autoload(skel->progs.func_fexit, false);
  bpf_program__set_autoload(skel->progs.on_switch, config.sched_hook);
  bpf_program__set_autoload(skel->progs.on_fork, config.follow_tgids);
  // A thread's exit frees its deep frames (and, with the hash store, its state).
  const bool frames = has_frames(config);
  bpf_program__set_autoload(skel->progs.on_task_exit, hash_store || config.follow_tgids || frames);
  // exec ends the old image's calls and regions (frames exist only with entry/exit programs).
  bpf_program__set_autoload(skel->progs.on_exec, frames);
  LibbpfQuiet::clear_verdict();
  const int err = func_bpf__load(skel);
  // Asked only when the load failed (no probe program at every start): without the helper the
  // verifier's refusal says nothing a user can act on.
  if (err != 0 && !kernel_has_attach_cookie())
    throw UserError(
        "--func and --region need bpf_get_attach_cookie (Linux 5.15), which this kernel lacks: "
        "each probed point's id travels in its attach cookie",
        "count without --func (pmcprof stat -e EVENTS -- COMMAND), or run Linux 5.15 or later; "
        "pmcprof doctor lists what this kernel has");
  check_bpf_load(err, "function-mode");
  obj.events_.fill(bpf_map__fd(skel->maps.counters), counters);
  if (config.raw_syscalls) {
    // Every syscall of the machine runs these from now on, finding no number until one is
    // probed (attach_syscall).
    Fd ids(::fcntl(bpf_map__fd(skel->maps.syscall_ids), F_DUPFD_CLOEXEC, 0));
    if (!ids) throw SystemError("cannot hold the syscall_ids map: " + errno_string(errno));
    obj.syscall_ids_ = std::make_shared<const Fd>(std::move(ids));
    for (bpf_program* prog : {skel->progs.syscall_entry_raw, skel->progs.syscall_exit_raw})
      obj.raw_links_.push_back(check_link(
          bpf_program__attach(prog), std::string("raw tracepoint ") + bpf_program__name(prog)));
  }
  return obj;
}

std::vector<BpfLink> FuncObject::attach_uprobe(std::uint64_t id, const std::string& binary,
                                               std::uint64_t offset, pid_t pid) const {
  std::vector<BpfLink> links;
  if (uprobe_multi_) {
    links.push_back(attach_user_multi(ProbeRole::entry, binary, {{offset, 0, id}}, false, pid));
    links.push_back(attach_user_multi(ProbeRole::exit, binary, {{offset, 0, id}}, true, pid));
    return links;
  }
  LIBBPF_OPTS(bpf_uprobe_opts, entry, .bpf_cookie = id, .retprobe = false);
  links.push_back(check_link(
      bpf_program__attach_uprobe_opts(skel_->progs.func_entry, pid, binary.c_str(), offset, &entry),
      "a uprobe on " + binary));
  LIBBPF_OPTS(bpf_uprobe_opts, exit, .bpf_cookie = id, .retprobe = true);
  links.push_back(check_link(
      bpf_program__attach_uprobe_opts(skel_->progs.func_exit, pid, binary.c_str(), offset, &exit),
      "a uretprobe on " + binary));
  return links;
}

std::vector<BpfLink> FuncObject::attach_kprobe(std::uint64_t id,
                                               const std::string& function) const {
  std::vector<BpfLink> links;
  LIBBPF_OPTS(bpf_kprobe_opts, entry, .bpf_cookie = id, .retprobe = false);
  links.push_back(
      check_link(bpf_program__attach_kprobe_opts(skel_->progs.func_entry, function.c_str(), &entry),
                 "kprobe " + function));
  LIBBPF_OPTS(bpf_kprobe_opts, exit, .bpf_cookie = id, .retprobe = true);
  links.push_back(
      check_link(bpf_program__attach_kprobe_opts(skel_->progs.func_exit, function.c_str(), &exit),
                 "kretprobe " + function));
  return links;
}

std::optional<std::uint32_t> FuncObject::raw_syscall_number(std::uint64_t id,
                                                            const std::string& syscall) {
  const std::uint64_t spec = (id >> PMCPROF_COOKIE_SPEC_SHIFT) & PMCPROF_COOKIE_SPEC_MASK;
  const auto nr = syscall_number(syscall);
  if (spec != 0 || !nr || *nr < 0 || *nr >= PMCPROF_MAX_SYSCALL_NR) return std::nullopt;
  return static_cast<std::uint32_t>(*nr);
}

void FuncObject::detach_raw_syscalls() {
  if (raw_links_.empty()) return;
  raw_links_.clear();
  // The programs run under rcu_read_lock(): membarrier's global command is synchronize_rcu().
  // It is refused on nohz_full kernels; a grace period there is a few ms.
  if (::syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

std::vector<BpfLink> FuncObject::attach_syscall(std::uint64_t id,
                                                const std::string& syscall) const {
  std::vector<BpfLink> links;
  if (const auto nr = raw_syscall_number(id, syscall); nr && syscall_ids_) {
    links.emplace_back(syscall_ids_, *nr, id | PMCPROF_COOKIE_SET);
    return links;
  }
  LIBBPF_OPTS(bpf_tracepoint_opts, opts, .bpf_cookie = id);
  const std::string enter = "sys_enter_" + syscall, exit = "sys_exit_" + syscall;
  links.push_back(check_link(bpf_program__attach_tracepoint_opts(skel_->progs.syscall_entry,
                                                                 "syscalls", enter.c_str(), &opts),
                             "tracepoint syscalls:" + enter));
  links.push_back(check_link(bpf_program__attach_tracepoint_opts(skel_->progs.syscall_exit,
                                                                 "syscalls", exit.c_str(), &opts),
                             "tracepoint syscalls:" + exit));
  return links;
}

namespace {

bpf_program* multi_program_for(func_bpf* skel, ProbeRole role) {
  switch (role) {
    case ProbeRole::entry:
      return skel->progs.func_entry_multi;
    case ProbeRole::exit:
      return skel->progs.func_exit_multi;
    case ProbeRole::hit:
      break;
  }
  return skel->progs.probe_hit_multi;
}

bpf_program* program_for(func_bpf* skel, ProbeRole role, bool tracepoint) {
  switch (role) {
    case ProbeRole::entry:
      return tracepoint ? skel->progs.syscall_entry : skel->progs.func_entry;
    case ProbeRole::exit:
      return tracepoint ? skel->progs.syscall_exit : skel->progs.func_exit;
    case ProbeRole::hit:
      break;
  }
  return tracepoint ? skel->progs.tracepoint_hit : skel->progs.probe_hit;
}

const char* role_name(ProbeRole role) {
  switch (role) {
    case ProbeRole::entry:
      return "start";
    case ProbeRole::exit:
      return "end";
    case ProbeRole::hit:
      break;
  }
  return "probe";
}

}  // namespace

std::uint64_t probe_cookie(std::uint32_t func_id, std::optional<std::size_t> key_slot,
                           bool region) {
  std::uint64_t c = func_id;
  if (key_slot) c |= (static_cast<std::uint64_t>(*key_slot) + 1) << PMCPROF_COOKIE_SPEC_SHIFT;
  if (region) c |= PMCPROF_COOKIE_REGION;
  return c;
}

std::uint64_t cost_cookie(std::uint32_t cost_class, bool whole_pair) {
  if (cost_class < 1 || cost_class > PMCPROF_COST_CLASSES) return 0;
  return (static_cast<std::uint64_t>(cost_class) << PMCPROF_COOKIE_HIT_SHIFT) |
         (whole_pair ? PMCPROF_COOKIE_HIT_PAIR : 0);
}

BpfLink FuncObject::attach_user(ProbeRole role, std::uint64_t cookie, const std::string& binary,
                                std::uint64_t offset, std::uint64_t semaphore_offset, bool retprobe,
                                pid_t pid) const {
  if (uprobe_multi_)
    return attach_user_multi(role, binary, {{offset, semaphore_offset, cookie}}, retprobe, pid);
  LIBBPF_OPTS(bpf_uprobe_opts, opts, .ref_ctr_offset = semaphore_offset, .bpf_cookie = cookie,
              .retprobe = retprobe);
  char where[64];
  std::snprintf(where, sizeof(where), "+0x%llx", static_cast<unsigned long long>(offset));
  return check_link(bpf_program__attach_uprobe_opts(program_for(skel_.get(), role, false), pid,
                                                    binary.c_str(), offset, &opts),
                    std::string("a ") + (retprobe ? "uretprobe" : "uprobe") + " (" +
                        role_name(role) + ") on " + binary + where);
}

BpfLink FuncObject::attach_user_multi(ProbeRole role, const std::string& binary,
                                      const std::vector<UprobeSpot>& spots, bool retprobe,
                                      pid_t pid) const {
  int error = 0;
  BpfLink link = create_uprobe_multi_link(bpf_program__fd(multi_program_for(skel_.get(), role)),
                                          binary, spots, retprobe, pid, error);
  if (!link) {
    char where[64];
    std::snprintf(
        where, sizeof(where), spots.size() == 1 ? "+0x%llx" : " (%llu points)",
        static_cast<unsigned long long>(spots.size() == 1 ? spots[0].offset : spots.size()));
    throw UserError(std::string("cannot attach a ") + (retprobe ? "uretprobe" : "uprobe") + " (" +
                        role_name(role) + ") on " + binary + where + ": " + errno_string(error),
                    "'pmcprof doctor' shows what this kernel allows", kExitFailure);
  }
  return link;
}

BpfLink FuncObject::attach_kernel(ProbeRole role, std::uint64_t cookie, const std::string& function,
                                  bool retprobe) const {
  LIBBPF_OPTS(bpf_kprobe_opts, opts, .bpf_cookie = cookie, .retprobe = retprobe);
  return check_link(
      bpf_program__attach_kprobe_opts(program_for(skel_.get(), role, false), function.c_str(),
                                      &opts),
      std::string(retprobe ? "kretprobe " : "kprobe ") + function + " (" + role_name(role) + ")");
}

BpfLink FuncObject::attach_tracepoint(ProbeRole role, std::uint64_t cookie,
                                      const std::string& category, const std::string& name) const {
  LIBBPF_OPTS(bpf_tracepoint_opts, opts, .bpf_cookie = cookie);
  return check_link(bpf_program__attach_tracepoint_opts(program_for(skel_.get(), role, true),
                                                        category.c_str(), name.c_str(), &opts),
                    "tracepoint " + category + ":" + name + " (" + role_name(role) + ")");
}

void FuncObject::set_key_spec(std::size_t slot, const KeySpec& args) const {
  pmcprof_key_spec spec{};
  for (std::size_t i = 0; i < args.size() && i < PMCPROF_MAX_KEY_ARGS; ++i) {
    const ArgSpec& a = args[i];
    pmcprof_arg_spec& s = spec.arg[i];
    s.kind = a.kind == ArgSpec::Kind::constant ? PMCPROF_ARG_CONST
             : a.kind == ArgSpec::Kind::reg    ? PMCPROF_ARG_REG
                                               : PMCPROF_ARG_DEREF;
    s.val = a.val;
    s.reg_off = static_cast<__s16>(a.reg_off);
    s.idx_off = static_cast<__s16>(a.idx_off);
    s.scale = static_cast<__u8>(a.scale);
    s.size = static_cast<__u8>(a.size);
    s.is_signed = a.is_signed;
    s.is_string = a.is_string;
    s.user = a.user;
  }
  const __u32 key = static_cast<__u32>(slot);
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.key_specs), &key, &spec, BPF_ANY) != 0)
    throw SystemError("cannot store the --by argument spec of a probe: " + errno_string(errno));
}

FuncObject::FentryAttachment FuncObject::attach_fentry(std::uint64_t id,
                                                       const std::string& function) const {
  std::shared_ptr<func_bpf> twin(func_bpf__open(), FentryTwinDeleter{});
  if (!twin) throw SystemError("cannot open a fentry twin object: " + errno_string(errno));
  // Every map is the primary's: same rodata, same per-thread state, same sums.
  bpf_map* m = nullptr;
  bpf_object__for_each_map(m, twin->obj) {
    bpf_map* primary = bpf_object__find_map_by_name(skel_->obj, bpf_map__name(m));
    const int fd = primary ? bpf_map__fd(primary) : -1;
    if (fd < 0) {
      bpf_map__set_autocreate(m, false);
      continue;
    }
    if (int err = bpf_map__reuse_fd(m, fd); err != 0)
      throw SystemError(std::string("cannot share BPF map ") + bpf_map__name(m) +
                        " with a fentry twin: " + errno_string(-err));
  }
  bpf_program* p = nullptr;
  bpf_object__for_each_program(p, twin->obj) {
    bpf_program__set_autoload(p, p == twin->progs.func_fentry || p == twin->progs.func_fexit);
  }
  bpf_program__set_attach_target(twin->progs.func_fentry, 0, function.c_str());
  bpf_program__set_attach_target(twin->progs.func_fexit, 0, function.c_str());
  LibbpfQuiet::clear_verdict();
  if (int err = func_bpf__load(twin.get()); err != 0) {
    std::string why = errno_string(-err);
    if (const auto verdict = LibbpfQuiet::last_verdict(); !verdict.empty())
      why += " (the verifier says: " + verdict + ")";
    throw SystemError("fentry/fexit on " + function + " do not load: " + why);
  }
  FentryAttachment out;
  LIBBPF_OPTS(bpf_trace_opts, opts, .cookie = id);
  for (bpf_program* prog : {twin->progs.func_fentry, twin->progs.func_fexit}) {
    bpf_link* link = bpf_program__attach_trace_opts(prog, &opts);
    if (!link)
      throw SystemError(std::string(bpf_program__name(prog)) + " on " + function +
                        " does not attach: " + errno_string(errno));
    out.links.emplace_back(link);
  }
  out.twin = std::move(twin);
  return out;
}

std::vector<BpfLink> FuncObject::attach_scheduler_hooks() const {
  std::vector<BpfLink> links;
  if (config_.sched_hook)
    links.push_back(check_link(bpf_program__attach(skel_->progs.on_switch), "sched_switch"));
  if (config_.follow_tgids)
    links.push_back(check_link(bpf_program__attach(skel_->progs.on_fork), "sched_process_fork"));
  const bool frames = has_frames(config_);
  if (store_ == ThreadStore::hash || config_.follow_tgids || frames)
    links.push_back(
        check_link(bpf_program__attach(skel_->progs.on_task_exit), "sched_process_exit"));
  if (frames)
    links.push_back(check_link(bpf_program__attach(skel_->progs.on_exec), "sched_process_exec"));
  return links;
}

void FuncObject::track(pid_t tgid) const {
  const __u32 key = static_cast<__u32>(tgid);
  const __u8 one = 1;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.tracked), &key, &one, BPF_ANY) != 0)
    throw SystemError("cannot add process " + std::to_string(tgid) +
                      " to the BPF process filter: " + errno_string(errno));
}

int FuncObject::records_fd() const {
  return bpf_map__fd(skel_->maps.records);
}

std::uint64_t FuncObject::untracked() const {
  return skel_->bss->untracked;
}

std::vector<std::uint64_t> FuncObject::read_hist(int map_fd, int carry_fd, const void* key,
                                                 std::size_t key_size) {
  // A bucket's calls: 256 x its carry (shared by the CPUs) + its byte on each CPU. BPF adds a
  // carry after the byte wrapped, and the carries are read first, so a read running beside
  // the probes can come out low (a wrap seen, its carry not yet), never high; the total is
  // therefore never taken back below what an earlier read saw, and a read after the probes
  // stopped is exact. The 32-bit carries wrap after 2^32 x 256 calls in one bucket: each read
  // adds what a carry grew since the last one, modulo 2^32 (the session reads at least once a
  // minute).
  HistState& st = hist_state_[std::string(static_cast<const char*>(key), key_size)];
  if (st.total.empty()) {
    st.total.assign(PMCPROF_HIST_BUCKETS, 0);
    st.carried.assign(PMCPROF_HIST_BUCKETS, 0);
    st.carry_last.assign(PMCPROF_HIST_BUCKETS, 0);
  }
  HistCarry carry{};
  if (bpf_map_lookup_elem(carry_fd, key, &carry) != 0 && errno != ENOENT)
    throw SystemError("cannot read a histogram's carries: " + errno_string(errno));
  for (std::uint32_t b = 0; b < PMCPROF_HIST_BUCKETS; ++b) {
    st.carried[b] += static_cast<std::uint32_t>(carry.bucket[b] - st.carry_last[b]);
    st.carry_last[b] = carry.bucket[b];
  }
  std::vector<std::uint64_t> now(PMCPROF_HIST_BUCKETS);
  for (std::uint32_t b = 0; b < PMCPROF_HIST_BUCKETS; ++b) now[b] = st.carried[b] * 256;
  for_each_cpu_value<Hist>(map_fd, key, [&](const Hist& h) {
    for (std::uint32_t b = 0; b < PMCPROF_HIST_BUCKETS; ++b) now[b] += h.bucket[b];
  });
  for (std::uint32_t b = 0; b < PMCPROF_HIST_BUCKETS; ++b)
    st.total[b] = std::max(st.total[b], now[b]);
  return st.total;
}

std::vector<KernelAggregate> FuncObject::read_scalars() const {
  std::vector<KernelAggregate> out;
  auto merged = [](int fd, const void* key) {
    auto total = std::make_shared<pmcprof_agg>();
    std::memset(total.get(), 0, sizeof(pmcprof_agg));
    for_each_cpu_value<pmcprof_agg>(
        fd, key, [&](const pmcprof_agg& a) { pmcprof_agg_merge(total.get(), &a); });
    return total;
  };
  if (!skel_->rodata->agg_keyed) {
    const int agg_fd = bpf_map__fd(skel_->maps.aggs);
    for (__u32 f = 0; f < config_.n_funcs; ++f) {
      KernelAggregate ka;
      ka.func_id = f;
      ka.agg = merged(agg_fd, &f);
      out.push_back(std::move(ka));
    }
    return out;
  }
  const int agg_fd = bpf_map__fd(skel_->maps.aggs_keyed);
  pmcprof_agg_key key{}, next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(agg_fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    KernelAggregate ka;
    ka.func_id = key.func_id;
    ka.cgroup_id = key.cgroup_id;
    if (config_.n_key_args)
      ka.key.assign(reinterpret_cast<const char*>(key.key.b), sizeof(key.key.b));
    ka.other = key.other != 0;
    ka.agg = merged(agg_fd, &key);
    out.push_back(std::move(ka));
  }
  return out;
}

void FuncObject::read_histograms(KernelAggregate& ka) {
  const auto* ro = skel_->rodata;
  // Keyed, the histograms sit under the scalars' key with its `hist` set.
  pmcprof_agg_key keyed{};
  keyed.func_id = ka.func_id;
  keyed.cgroup_id = ka.cgroup_id;
  std::memcpy(keyed.key.b, ka.key.data(), std::min(ka.key.size(), sizeof(keyed.key.b)));
  keyed.other = ka.other ? 1 : 0;
  auto read = [&](__u32 h) {
    if (!ro->agg_keyed) {
      const __u32 key = ka.func_id * ro->n_hists + h;
      return read_hist(bpf_map__fd(skel_->maps.hists), bpf_map__fd(skel_->maps.hist_carry), &key,
                       sizeof(key));
    }
    keyed.hist = static_cast<__u16>(h);
    return read_hist(bpf_map__fd(skel_->maps.hists_keyed),
                     bpf_map__fd(skel_->maps.hists_keyed_carry), &keyed, sizeof(keyed));
  };
  // Histograms as [wall, on-CPU, event 0, ...]; a clock event's is the on-CPU one.
  const std::size_t n_events = events_.size();
  ka.hists.assign(PMCPROF_HIST_EVENT0 + n_events, {});
  ka.hists[PMCPROF_HIST_WALL] = read(PMCPROF_HIST_WALL);
  ka.hists[PMCPROF_HIST_ONCPU] = read(PMCPROF_HIST_ONCPU);
  for (std::size_t i = 0; i < n_events; ++i)
    ka.hists[PMCPROF_HIST_EVENT0 + i] =
        (config_.clock_events >> i) & 1 ? ka.hists[PMCPROF_HIST_ONCPU] : read(ro->event_hist[i]);
  ka.metric_hists.clear();
  for (std::size_t m = 0; m < ro->n_metrics; ++m)
    ka.metric_hists.push_back(read(ro->metric_hist[m]));
}

std::vector<KernelAggregate> FuncObject::read_aggregates() {
  if (!(config_.agg_mode & PMCPROF_AGG_KERNEL)) return {};
  // The scalars and the histograms are separate maps: a call summed between the two reads
  // would be in one and not the other (an interval whose buckets hold more calls than its
  // measured_calls). So the scalars are read again after the histograms, and the read taken
  // only when no call was summed in between. A function called faster than one read takes
  // (tens of microseconds) may never give such a moment: after kConsistentTries the last read
  // stands, its histograms ahead of its scalars by the calls summed during it (the run's
  // totals are exact all the same: the next read takes them in).
  constexpr int kConsistentTries = 16;
  auto calls = [](const std::vector<KernelAggregate>& v) {
    std::uint64_t n = 0;
    for (const auto& ka : v) n += ka.agg->calls;
    return std::pair{v.size(), n};
  };
  std::vector<KernelAggregate> out = read_scalars();
  for (int attempt = 1;; ++attempt) {
    for (auto& ka : out) read_histograms(ka);
    auto after = read_scalars();
    const bool quiet = calls(after) == calls(out);
    if (quiet || attempt == kConsistentTries) {
      if (!quiet) ++inconsistent_reads_;
      return out;
    }
    out = std::move(after);
  }
}

std::vector<FuncProbeStats> FuncObject::read_func_stats() const {
  std::vector<FuncProbeStats> out(config_.n_funcs + 1);
  const int fd = bpf_map__fd(skel_->maps.func_stats);
  for (__u32 f = 0; f < out.size(); ++f) {
    for_each_cpu_value<pmcprof_func_stats>(fd, &f, [&](const pmcprof_func_stats& s) {
      out[f].lost += s.lost;
      out[f].depth_overflow += s.depth_overflow;
      out[f].unmatched_exit += s.unmatched_exit;
      out[f].abandoned += s.abandoned;
      out[f].reentered += s.reentered;
      out[f].state_failed += s.state_failed;
      out[f].agg_collisions += s.agg_collisions;
      out[f].agg_full += s.agg_full;
      out[f].entered += s.entered;
      out[f].ended += s.ended;
    });
  }
  return out;
}

void FuncObject::reset_calibration() const {
  __atomic_store_n(&skel_->bss->calib_count, 0u, __ATOMIC_SEQ_CST);
  __atomic_store_n(&skel_->bss->calib_outer_count, 0u, __ATOMIC_SEQ_CST);
}

std::vector<FuncObject::CalibrationSample> FuncObject::calibration_samples(bool outer) const {
  std::vector<CalibrationSample> out;
  auto* count = outer ? &skel_->bss->calib_outer_count : &skel_->bss->calib_count;
  const pmcprof_calib_sample* samples = outer ? skel_->bss->calib_outer : skel_->bss->calib;
  const __u32 n = std::min<__u32>(__atomic_load_n(count, __ATOMIC_SEQ_CST), PMCPROF_CALIB_CALLS);
  for (__u32 k = 0; k < n; ++k) {
    const pmcprof_calib_sample& c = samples[k];
    CalibrationSample s;
    s.delta.assign(c.delta, c.delta + events_.size());
    s.measured = c.measured;
    s.wall_ns = c.wall_ns;
    s.oncpu_ns = c.oncpu_ns;
    s.not_counted = c.flags & PMCPROF_REC_NOT_COUNTED;
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// Writes per-event values (the first n of v), then wall and on-CPU (v[n], v[n + 1]), into a
// row of PMCPROF_BIAS_SLOTS slots the BPF programs read while running: each slot becomes
// combine(its value, v's).
template <class Combine>
void update_slots(__u64* slots, std::size_t n, const std::vector<std::uint64_t>& v,
                  Combine combine) {
  auto put = [&](std::size_t slot, std::uint64_t x) {
    const std::uint64_t old = __atomic_load_n(&slots[slot], __ATOMIC_RELAXED);
    __atomic_store_n(&slots[slot], combine(old, x), __ATOMIC_RELAXED);
  };
  for (std::size_t i = 0; i < n && i < v.size(); ++i) put(i, v[i]);
  if (v.size() >= n + 2) {
    put(PMCPROF_BIAS_WALL, v[n]);
    put(PMCPROF_BIAS_ONCPU, v[n + 1]);
  }
}

void store_slots(__u64* slots, std::size_t n, const std::vector<std::uint64_t>& v) {
  update_slots(slots, n, v, [](std::uint64_t, std::uint64_t x) { return x; });
}

}  // namespace

void FuncObject::set_bias(std::uint32_t func_id, const std::vector<std::uint64_t>& values,
                          const std::vector<std::uint64_t>& noise) const {
  if (func_id > PMCPROF_MAX_FUNCS) return;
  // The floor first: a call that sees the new bias sees its floor.
  store_slots(skel_->bss->noise[func_id], events_.size(), noise);
  store_slots(skel_->bss->bias[func_id], events_.size(), values);
}

static_assert(FuncObject::kCostClasses == PMCPROF_COST_CLASSES);

void FuncObject::set_class_cost(std::uint32_t cost_class,
                                const std::vector<std::uint64_t>& enclosed,
                                const std::vector<std::uint64_t>& noise,
                                const std::vector<std::uint64_t>& tail) const {
  if (cost_class < 1 || cost_class > PMCPROF_COST_CLASSES) return;
  // The BPF side takes one spread per slot for every class (the largest: see nested_noise).
  update_slots(skel_->bss->enclosed_noise_max, events_.size(), noise,
               [](std::uint64_t old, std::uint64_t x) { return std::max(old, x); });
  store_slots(skel_->bss->enclosed_tail[cost_class - 1], events_.size(), tail);
  store_slots(skel_->bss->enclosed[cost_class - 1], events_.size(), enclosed);
}

void FuncObject::set_cost_class(std::uint32_t func_id, std::uint32_t cost_class) const {
  if (func_id > PMCPROF_MAX_FUNCS + 1 || cost_class < 1 || cost_class > PMCPROF_COST_CLASSES)
    return;
  __atomic_store_n(&skel_->bss->cost_class[func_id], cost_class, __ATOMIC_RELAXED);
}

std::uint64_t fdinfo_memlock(const std::string& text) {
  for (const auto& line : split(text, '\n'))
    if (starts_with(line, "memlock:"))
      return std::strtoull(std::string(trim(line.substr(8))).c_str(), nullptr, 10);
  return 0;
}

std::vector<MapMemory> FuncObject::map_memory() const {
  std::vector<MapMemory> out;
  bpf_map* m = nullptr;
  bpf_object__for_each_map(m, skel_->obj) {
    const int fd = bpf_map__fd(m);
    if (fd < 0) continue;
    MapMemory mm;
    mm.name = bpf_map__name(m);
    const auto type = bpf_map__type(m);
    mm.type = libbpf_bpf_map_type_str(type);
    mm.per_cpu = type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_PERCPU_HASH ||
                 type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
    if (auto text = read_file("/proc/self/fdinfo/" + std::to_string(fd)))
      mm.memlock = fdinfo_memlock(*text);
    out.push_back(std::move(mm));
  }
  return out;
}

}  // namespace pmcprof

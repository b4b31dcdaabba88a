#include "pmcprof/run/function_run.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <iostream>

#include "pmcprof.h"
#include "pmcprof.skel.h"
#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/platform/tracefs.hpp"
#include "pmcprof/probes/elf_symbols.hpp"
#include "pmcprof/probes/kernel_functions.hpp"
#include "pmcprof/probes/percpu_map.hpp"
#include "pmcprof/probes/pmcprof_object.hpp"
#include "pmcprof/run/counting_run.hpp"
#include "pmcprof/run/run_loop.hpp"
#include "pmcprof/run/workload.hpp"
#include "pmcprof/stream/record_stream.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/progress.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

// One --func, resolved to how it attaches.
struct AttachPoint {
  std::uint32_t func_id = 0;
  FuncTarget target;
  ProbeBackend backend = ProbeBackend::uprobe;
  std::string binary;             // uprobe: resolved path
  std::uint64_t file_offset = 0;  // uprobe
};

std::vector<AttachPoint> resolve_targets(const FunctionPlan& plan) {
  if (plan.targets.size() > PMCPROF_MAX_FUNCS)
    throw UserError("too many --func (" + std::to_string(plan.targets.size()) + "), at most " +
                    std::to_string(PMCPROF_MAX_FUNCS));
  std::optional<KernelProbeSupport> kernel_support;
  std::vector<AttachPoint> points;
  std::size_t fentry_targets = 0;
  for (std::size_t i = 0; i < plan.targets.size(); ++i) {
    AttachPoint p;
    p.func_id = static_cast<std::uint32_t>(i);
    p.target = plan.targets[i];
    switch (p.target.kind) {
      case FuncTarget::Kind::kernel: {
        if (!kernel_support) kernel_support = probe_kernel_probe_support(plan.backend);
        p.backend = choose_kernel_backend(p.target.name, plan.backend, *kernel_support,
                                          lookup_kernel_function(p.target.name));
        // One fentry target per BPF load (no cookies on older kernels): the rest use kprobes.
        if (p.backend == ProbeBackend::fentry && ++fentry_targets > 1) {
          if (plan.backend == BackendRequest::fentry)
            throw UserError("--backend fentry probes one kernel function per run",
                            "use --backend kprobe (or auto) for several kernel functions");
          p.backend = ProbeBackend::kprobe;
        }
        break;
      }
      case FuncTarget::Kind::user: {
        p.backend = ProbeBackend::uprobe;
        p.binary = resolve_binary(p.target.binary, plan.pid);
        ElfFunction fn = find_elf_function(p.binary, p.target.name);
        p.file_offset = fn.file_offset;
        break;
      }
      case FuncTarget::Kind::syscall: {
        p.backend = ProbeBackend::tracepoint;
        const std::string tracefs = ensure_tracefs_mounted();
        const std::string dir = tracefs + "/events/syscalls/sys_enter_" + p.target.name;
        if (!std::filesystem::exists(dir))
          throw UserError("unknown syscall '" + p.target.name + "': no tracepoint " + dir,
                          "list them with: ls " + tracefs + "/events/syscalls");
        break;
      }
    }
    points.push_back(std::move(p));
  }
  // Two --func naming one function through different names (libc:getppid and c:getppid,
  // ./w:f and /abs/w:f) would share one probe address and report 0 calls each: refused.
  for (std::size_t i = 0; i < points.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const AttachPoint &a = points[j], &b = points[i];
      std::error_code ec;
      const bool same = a.backend == ProbeBackend::uprobe && b.backend == ProbeBackend::uprobe
                            ? a.file_offset == b.file_offset &&
                                  std::filesystem::equivalent(a.binary, b.binary, ec)
                            : a.target.kind == b.target.kind && a.target.name == b.target.name;
      if (same)
        throw UserError("--func " + quote(a.target.text) + " and " + quote(b.target.text) +
                            " name the same function",
                        "give each function once");
    }
  return points;
}

BpfLink check_link(bpf_link* link, const std::string& what, const std::string& hint = {}) {
  if (!link) {
    const int err = errno;
    throw UserError("cannot attach " + what + ": " + errno_string(err),
                    hint.empty() ? "'pmcprof doctor' shows what this kernel allows" : hint,
                    kExitFailure);
  }
  return BpfLink(link);
}

std::vector<BpfLink> attach_function(pmcprof_bpf* skel, const AttachPoint& p) {
  std::vector<BpfLink> links;
  const std::uint64_t cookie = p.func_id;
  switch (p.backend) {
    case ProbeBackend::uprobe: {
      LIBBPF_OPTS(bpf_uprobe_opts, entry, .bpf_cookie = cookie, .retprobe = false);
      links.push_back(
          check_link(bpf_program__attach_uprobe_opts(skel->progs.func_entry, -1, p.binary.c_str(),
                                                     p.file_offset, &entry),
                     "uprobe " + p.target.text));
      LIBBPF_OPTS(bpf_uprobe_opts, exit, .bpf_cookie = cookie, .retprobe = true);
      links.push_back(
          check_link(bpf_program__attach_uprobe_opts(skel->progs.func_exit, -1, p.binary.c_str(),
                                                     p.file_offset, &exit),
                     "uretprobe " + p.target.text));
      break;
    }
    case ProbeBackend::kprobe: {
      LIBBPF_OPTS(bpf_kprobe_opts, entry, .bpf_cookie = cookie, .retprobe = false);
      links.push_back(check_link(
          bpf_program__attach_kprobe_opts(skel->progs.func_entry, p.target.name.c_str(), &entry),
          "kprobe " + p.target.name));
      LIBBPF_OPTS(bpf_kprobe_opts, exit, .bpf_cookie = cookie, .retprobe = true);
      links.push_back(check_link(
          bpf_program__attach_kprobe_opts(skel->progs.func_exit, p.target.name.c_str(), &exit),
          "kretprobe " + p.target.name));
      break;
    }
    case ProbeBackend::tracepoint: {
      LIBBPF_OPTS(bpf_tracepoint_opts, opts, .bpf_cookie = cookie);
      const std::string enter = "sys_enter_" + p.target.name, exit = "sys_exit_" + p.target.name;
      links.push_back(check_link(bpf_program__attach_tracepoint_opts(
                                     skel->progs.syscall_entry, "syscalls", enter.c_str(), &opts),
                                 "tracepoint syscalls:" + enter));
      links.push_back(check_link(bpf_program__attach_tracepoint_opts(
                                     skel->progs.syscall_exit, "syscalls", exit.c_str(), &opts),
                                 "tracepoint syscalls:" + exit));
      break;
    }
    case ProbeBackend::fentry: {
      links.push_back(
          check_link(bpf_program__attach(skel->progs.func_fentry), "fentry " + p.target.name));
      links.push_back(
          check_link(bpf_program__attach(skel->progs.func_fexit), "fexit " + p.target.name));
      break;
    }
  }
  return links;
}

std::map<FuncKey, FuncStats> read_kernel_aggregates(pmcprof_bpf* skel, std::size_t n_events,
                                                    Breakdown by) {
  std::map<FuncKey, FuncStats> out;
  const int fd = bpf_map__fd(skel->maps.aggregates);
  pmcprof_agg_key key{}, next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    FuncKey fk{key.func_id, by == Breakdown::cgroup ? std::to_string(key.cgroup_id) : ""};
    auto it = out.find(fk);
    if (it == out.end()) it = out.emplace(fk, FuncStats(n_events)).first;
    for_each_cpu_value<pmcprof_agg>(fd, &key,
                                    [&](const pmcprof_agg& a) { it->second.add_kernel(a); });
  }
  return out;
}

std::vector<pmcprof_func_stats> read_func_stats(pmcprof_bpf* skel, std::size_t n_funcs) {
  std::vector<pmcprof_func_stats> out(n_funcs);
  const int fd = bpf_map__fd(skel->maps.func_stats);
  for (std::uint32_t f = 0; f < n_funcs; ++f) {
    for_each_cpu_value<pmcprof_func_stats>(fd, &f, [&](const pmcprof_func_stats& s) {
      out[f].emitted += s.emitted;
      out[f].lost += s.lost;
      out[f].depth_overflow += s.depth_overflow;
      out[f].unmatched_exit += s.unmatched_exit;
    });
  }
  return out;
}

std::vector<FuncEventInfo> event_infos(const CounterSet& counters, const PmcprofObject& obj) {
  std::vector<FuncEventInfo> out;
  for (std::size_t e = 0; e < counters.event_count(); ++e) {
    FuncEventInfo info;
    info.event = counters.event(e).display_name();
    info.kind = {counters.event(e).attr.type, counters.event(e).attr.config};
    info.unit = counters.event(e).unit;
    for (std::size_t b = 0; b < obj.bpf_event_count(); ++b)
      if (obj.counter_event(b) == e) info.bpf_index = b;
    out.push_back(std::move(info));
  }
  return out;
}

std::string describe_function_target(const FunctionPlan& plan) {
  if (plan.system_wide || (plan.command.empty() && !plan.pid)) return "system wide";
  CountingPlan cp;
  cp.command = plan.command;
  cp.pid = plan.pid;
  return describe_target(cp);
}

}  // namespace

AggregateChoice parse_aggregate_choice(const std::string& text) {
  if (text == "auto") return AggregateChoice::automatic;
  if (text == "stream") return AggregateChoice::stream;
  if (text == "kernel") return AggregateChoice::kernel;
  if (text == "both") return AggregateChoice::both;
  throw UserError("unknown --aggregate '" + text + "'", "use auto, kernel, stream or both");
}

AggregateChoice resolve_aggregate(AggregateChoice requested, Breakdown by) {
  if (requested != AggregateChoice::automatic) return requested;
  // pid/comm/cpu are only in the per-call records; cgroup is a kernel map key too.
  if (by == Breakdown::pid || by == Breakdown::comm || by == Breakdown::cpu)
    return AggregateChoice::stream;
  return AggregateChoice::kernel;
}

FunctionOutcome run_function_mode(const FunctionPlan& plan, FuncReportRenderer* intervals) {
  const AggregateChoice agg = resolve_aggregate(plan.aggregate, plan.by);
  if (agg == AggregateChoice::kernel &&
      (plan.by == Breakdown::pid || plan.by == Breakdown::comm || plan.by == Breakdown::cpu))
    throw UserError(std::string("--by ") + to_string(plan.by) +
                        " needs the per-call stream; kernel aggregation keys only by cgroup",
                    "use --aggregate stream (or auto)");
  LibbpfQuiet quiet(plan.verbose);
  std::vector<AttachPoint> points = resolve_targets(plan);

  SignalBlocker signals;
  std::optional<Workload> workload;
  if (!plan.command.empty()) workload.emplace(Workload::prepare(plan.command, signals.previous()));

  // Function mode reads counters from BPF on the CPU a call runs on: always one per CPU.
  CounterSet counters = CounterSet::open(plan.groups, CounterTarget::system_wide(online_cpus()));

  BpfConfig config;
  config.agg_mode = (agg == AggregateChoice::stream ? 0u : PMCPROF_AGG_KERNEL) |
                    (agg == AggregateChoice::kernel ? 0u : PMCPROF_AGG_STREAM);
  config.follow_tgids = !plan.system_wide && (workload || plan.pid);
  config.sched_hook = plan.sched_hook;
  config.agg_by_cgroup = plan.by == Breakdown::cgroup;
  config.need_cgroup_id = plan.by == Breakdown::cgroup;
  config.need_comm = plan.by == Breakdown::comm;
  for (const auto& cg : plan.filter_cgroups) config.filter_cgroups.emplace_back(cg.id, cg.level);
  std::optional<CgroupNames> cgroup_names;
  if (plan.by == Breakdown::cgroup) cgroup_names.emplace(cgroup2_mount_point());
  config.function_mode = true;
  for (const auto& p : points) {
    config.probe_programs |= p.backend == ProbeBackend::uprobe || p.backend == ProbeBackend::kprobe;
    config.syscall_programs |= p.backend == ProbeBackend::tracepoint;
  }
  for (const auto& p : points)
    if (p.backend == ProbeBackend::fentry) {
      config.fentry_target = p.target.name;
      config.fentry_func_id = p.func_id;
    }
  PmcprofObject obj = PmcprofObject::load(counters, config);
  pmcprof_bpf* skel = obj.skel();

  if (config.follow_tgids) {
    const __u32 tgid = static_cast<__u32>(workload ? workload->pid() : *plan.pid);
    const __u8 one = 1;
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.tracked), &tgid, &one, BPF_ANY) != 0)
      throw SystemError("cannot add process " + std::to_string(tgid) +
                        " to the BPF process filter: " + errno_string(errno));
  }

  std::vector<BpfLink> links;
  links.push_back(check_link(bpf_program__attach(skel->progs.on_task_exit), "sched_process_exit"));
  if (config.sched_hook)
    links.push_back(check_link(bpf_program__attach(skel->progs.on_switch), "sched_switch"));
  if (config.follow_tgids)
    links.push_back(check_link(bpf_program__attach(skel->progs.on_fork), "sched_process_fork"));
  Progress progress("attaching", points.size(), plan.quiet);
  for (const auto& p : points) {
    stop_if_interrupted("attaching");
    progress.step(p.func_id + 1);
    if (plan.verbose && !plan.quiet)
      std::cerr << "pmcprof: attaching " << p.target.text << " with " << to_string(p.backend)
                << (p.binary.empty() ? "" : " (" + p.binary + ")") << "\n";
    for (auto& l : attach_function(skel, p)) links.push_back(std::move(l));
  }

  const std::size_t n_events = obj.bpf_event_count();
  StreamAggregator stream_total(n_events, plan.by);
  StreamAggregator stream_interval(n_events, plan.by);
  std::optional<RecordStream> stream;
  if (config.agg_mode & PMCPROF_AGG_STREAM) {
    stream.emplace(bpf_map__fd(skel->maps.records), plan.buffer_pages, [&](const CallRecord& r) {
      stream_total.add(r);
      if (intervals) stream_interval.add(r);
    });
  }

  const auto infos = event_infos(counters, obj);
  // Stream reports carry what the stream lost (per function from the kernel's failed
  // bpf_perf_event_output count, in total from PERF_RECORD_LOST); kernel sums lose nothing.
  auto build_report = [&](const std::map<FuncKey, FuncStats>& stats,
                          const std::vector<pmcprof_func_stats>& fstats, const char* aggregation,
                          std::uint64_t lost_total) {
    const bool stream_view = std::string(aggregation) == "stream";
    auto lost_of = [&](std::uint32_t id) { return stream_view ? fstats[id].lost : 0; };
    FunctionReport r;
    r.target = describe_function_target(plan);
    r.aggregation = aggregation;
    r.by = plan.by == Breakdown::none ? "" : to_string(plan.by);
    r.lost = lost_total;
    for (const auto& p : points) {
      bool any = false;
      for (const auto& [key, s] : stats) {
        if (key.first != p.func_id) continue;
        any = true;
        std::string by_value = key.second;
        std::optional<std::uint64_t> cgroup_id;
        if (cgroup_names) {
          // Ids come from the kernel; the path is resolved now (or the last known one if the
          // cgroup has gone since).
          cgroup_id = std::stoull(key.second);
          by_value = cgroup_names->name_of(*cgroup_id);
        }
        r.functions.push_back(make_func_row(p.target.text, to_string(p.backend), by_value, s,
                                            plan.by == Breakdown::none ? lost_of(p.func_id) : 0,
                                            infos));
        r.functions.back().cgroup_id = cgroup_id;
        r.functions.back().depth_overflow = fstats[p.func_id].depth_overflow;
        r.functions.back().unmatched_exits = fstats[p.func_id].unmatched_exit;
      }
      if (!any)
        r.functions.push_back(make_func_row(p.target.text, to_string(p.backend), "",
                                            FuncStats(n_events), lost_of(p.func_id), infos));
    }
    std::uint64_t kernel_lost = 0;
    for (const auto& f : fstats) kernel_lost += f.lost;
    if (stream_view) r.lost = std::max(lost_total, kernel_lost);
    r.partial = r.lost > 0;
    return r;
  };

  counters.enable();
  const std::uint64_t start = monotonic_ns();
  if (workload) workload->start();

  RunLoopOptions loop_opts;
  loop_opts.interval_ms = plan.interval_ms;
  loop_opts.timeout_ms = plan.timeout_ms;
  loop_opts.workload_pidfd = workload ? workload->pidfd() : -1;
  Fd target_pidfd;
  if (plan.pid) target_pidfd = open_pidfd(*plan.pid);
  loop_opts.target_pidfd = target_pidfd.get();
  if (stream) loop_opts.readers.push_back({stream->epoll_fd(), [&] { stream->drain(); }});
  for (const auto& r : plan.readers) loop_opts.readers.push_back(r);
  RunLoop loop(signals, loop_opts);

  std::map<FuncKey, FuncStats> kernel_prev;
  std::vector<pmcprof_func_stats> fstats_prev(points.size());
  // Per-interval view of the kernel's per-function bookkeeping.
  auto fstats_delta = [](std::vector<pmcprof_func_stats> now,
                         const std::vector<pmcprof_func_stats>& before) {
    for (std::size_t i = 0; i < now.size() && i < before.size(); ++i) {
      now[i].emitted -= std::min(now[i].emitted, before[i].emitted);
      now[i].lost -= std::min(now[i].lost, before[i].lost);
      now[i].depth_overflow -= std::min(now[i].depth_overflow, before[i].depth_overflow);
      now[i].unmatched_exit -= std::min(now[i].unmatched_exit, before[i].unmatched_exit);
    }
    return now;
  };
  std::uint64_t stream_lost_prev = 0;
  std::uint64_t previous_ns = start;
  auto on_interval = [&] {
    const std::uint64_t now_ns = monotonic_ns();
    FunctionReport r;
    auto fstats_now = read_func_stats(skel, points.size());
    auto fstats = fstats_delta(fstats_now, fstats_prev);
    fstats_prev = std::move(fstats_now);
    if (stream) {
      stream->drain();
      r = build_report(stream_interval.stats(), fstats, "stream",
                       stream->lost() - stream_lost_prev);
      stream_lost_prev = stream->lost();
      stream_interval = StreamAggregator(n_events, plan.by);
    } else {
      auto now = read_kernel_aggregates(skel, n_events, plan.by);
      auto delta = now;
      for (auto& [k, s] : delta)
        if (auto it = kernel_prev.find(k); it != kernel_prev.end()) s.subtract(it->second);
      r = build_report(delta, fstats, "kernel", 0);
      kernel_prev = std::move(now);
    }
    r.elapsed_ns = now_ns - previous_ns;
    r.interval_s = static_cast<double>(now_ns - start) / 1e9;
    r.timestamp_unix_ns = realtime_ns();
    if (intervals) intervals->interval(r);
    previous_ns = now_ns;
  };
  // Cumulative views of the calls so far: from the stream (drained first), or the kernel's sums.
  auto stream_view = [&](const std::vector<pmcprof_func_stats>& fstats) {
    stream->drain();
    return build_report(stream_total.stats(), fstats, "stream", stream->lost());
  };
  auto kernel_view = [&](const std::vector<pmcprof_func_stats>& fstats) {
    return build_report(read_kernel_aggregates(skel, n_events, plan.by), fstats, "kernel", 0);
  };
  auto main_view = [&](const std::vector<pmcprof_func_stats>& fstats) {
    return stream ? stream_view(fstats) : kernel_view(fstats);
  };
  if (plan.on_live)
    plan.on_live([&] {
      FunctionReport r = main_view(read_func_stats(skel, points.size()));
      r.elapsed_ns = monotonic_ns() - start;
      r.timestamp_unix_ns = realtime_ns();
      return r;
    });
  // A -p target that is already gone: nothing to wait for (its pidfd could not be opened).
  StopReason why = plan.pid && !target_pidfd ? StopReason::target_exited : loop.run(on_interval);
  // The stretch since the last tick is an interval too: the intervals then add up to the total.
  if (plan.interval_ms && monotonic_ns() > previous_ns) on_interval();
  if (plan.on_live) plan.on_live({});
  const std::uint64_t end = monotonic_ns();

  // Detach first so no call is half-recorded, then read what the kernel holds.
  links.clear();
  counters.disable();

  FunctionOutcome outcome;
  if (workload)
    outcome.exit_code = workload->finish(why == StopReason::workload_exited, loop.stop_signal());
  const auto fstats = read_func_stats(skel, points.size());
  auto finish = [&](FunctionReport r) {
    r.elapsed_ns = end - start;
    r.timestamp_unix_ns = realtime_ns();
    r.interrupted = why == StopReason::signal;
    if (workload) r.exit_status = outcome.exit_code;
    return r;
  };
  outcome.report = finish(main_view(fstats));
  // --aggregate both: the stream's report first, then the kernel's view of the same calls.
  if (stream && (config.agg_mode & PMCPROF_AGG_KERNEL))
    outcome.kernel_report = finish(kernel_view(fstats));
  return outcome;
}

}  // namespace pmcprof

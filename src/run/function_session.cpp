#include "pmcprof/run/function_session.hpp"

#include <linux/perf_event.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <iostream>
#include <map>

#include "pmcprof/counters/counter_set.hpp"
#include "pmcprof/platform/libbpf_support.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/probes/func_calibration.hpp"
#include "pmcprof/probes/func_targets.hpp"
#include "pmcprof/run/counting_run.hpp"
#include "pmcprof/stream/record_stream.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/progress.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

FunctionMetricPlan plan_function_metrics(const std::vector<MetricBinding>& bindings,
                                         const CounterSet& counters) {
  FunctionMetricPlan plan;
  const BpfEventMap events = BpfEventMap::of(counters);
  auto bpf_index = [&](std::size_t e) -> std::optional<std::size_t> {
    for (std::size_t b = 0; b < events.size(); ++b)
      if (events.counter_event(b) == e) return b;
    return std::nullopt;
  };
  for (const auto& binding : bindings) {
    FuncMetricInfo info;
    info.metric = binding.metric;
    info.requested = binding.requested;
    info.inputs = binding.inputs;
    const auto ratio = binding.metric.formula ? binding.metric.formula->ratio() : std::nullopt;
    auto operand = [&](const std::string& input) -> std::optional<std::uint8_t> {
      if (input == "duration_time") return kOperandWall;
      auto it = binding.inputs.find(input);
      if (it == binding.inputs.end()) return std::nullopt;
      auto b = bpf_index(it->second);
      if (!b) return std::nullopt;
      return static_cast<std::uint8_t>(*b);
    };
    if (!ratio) {
      info.no_slot_reason = "not a ratio of two events: only the ratio of totals";
    } else if (auto num = operand(ratio->numerator), den = operand(ratio->denominator);
               !num || !den) {
      info.no_slot_reason = "its events were not opened";
    } else if (plan.per_call.size() >= kMaxCallMetrics) {
      info.no_slot_reason =
          "at most " + std::to_string(kMaxCallMetrics) + " metrics per call in one run";
    } else {
      info.slot = plan.per_call.size();
      plan.per_call.push_back({*num, *den});
    }
    plan.infos.push_back(std::move(info));
  }
  return plan;
}

AggregateChoice resolve_aggregate(AggregateChoice requested, Breakdown by) {
  if (requested != AggregateChoice::automatic) return requested;
  // pid/comm/cpu are only in the per-call records; cgroup is a kernel map key too.
  if (by == Breakdown::pid || by == Breakdown::comm || by == Breakdown::cpu)
    return AggregateChoice::stream;
  return AggregateChoice::kernel;
}

namespace {

AggregateChoice checked_aggregate(const FunctionPlan& plan) {
  const AggregateChoice agg = resolve_aggregate(plan.aggregate, plan.by);
  const Breakdown by = plan.by;
  if (agg == AggregateChoice::kernel &&
      (by == Breakdown::pid || by == Breakdown::comm || by == Breakdown::cpu))
    throw UserError(std::string("--by ") + to_string(by) +
                        " needs the per-call stream; kernel aggregation keys only by cgroup",
                    "use --aggregate stream (or auto)");
  return agg;
}

// BPF events (a bit each) that BPF takes from its own figures instead of a counter read: those
// `own` picks, for all privilege levels, outside a group with hardware events (a hardware-led
// group is multiplexed, and then the event must follow its group). Task-clock and cpu-clock are
// the thread's on-CPU time; context-switches and cpu-migrations the sched_switch hook's counts.
template <class Pick>
std::uint32_t own_events(const std::vector<ResolvedGroup>& groups, const CounterSet& counters,
                         const BpfEventMap& events, Pick own) {
  std::vector<bool> picked;
  for (const auto& g : groups) {
    bool hardware = false;
    for (const auto& e : g.events) hardware |= !e.is_software();
    for (const auto& e : g.events)
      picked.push_back(own(e) && !(g.grouped && hardware) && !e.attr.exclude_user &&
                       !e.attr.exclude_kernel);
  }
  std::uint32_t mask = 0;
  for (std::size_t b = 0; b < events.size(); ++b) {
    const std::size_t e = events.counter_event(b);
    if (e < picked.size() && picked[e] && counters.supported(e)) mask |= 1u << b;
  }
  return mask;
}

// A syscall:NAME target (a function measured between its tracepoints).
bool is_syscall_target(const AttachPoint& p) {
  return p.shape == MeasureShape::function && p.backend == ProbeBackend::tracepoint;
}

// The number by which a syscall target is probed at the raw sys_enter/sys_exit tracepoints;
// nullopt for its own tracepoints (or any other point).
std::optional<std::uint32_t> raw_syscall_number(const AttachPoint& p, const FunctionPlan& plan) {
  if (!is_syscall_target(p) || plan.syscall_tracepoints) return std::nullopt;
  return FuncObject::raw_syscall_number(probe_cookie(p.func_id, p.key_slot), p.target.name);
}

// -v: how a syscall target is probed.
std::string syscall_how(const AttachPoint& p, const FunctionPlan& plan) {
  if (!is_syscall_target(p)) return "";
  if (const auto nr = raw_syscall_number(p, plan))
    return " (syscall " + std::to_string(*nr) + " at the raw sys_enter/sys_exit tracepoints)";
  return " (syscalls:sys_enter_" + p.target.name + " and sys_exit_" + p.target.name + ")";
}

bool is_software_event(const ResolvedEvent& e, std::uint64_t config) {
  return e.is_software() && e.attr.config == config;
}

std::vector<FuncEventInfo> event_infos(const CounterSet& counters, const BpfEventMap& events) {
  std::vector<FuncEventInfo> out;
  for (std::size_t e = 0; e < counters.event_count(); ++e) {
    FuncEventInfo info;
    info.event = counters.event(e).display_name();
    info.kind = {counters.event(e).attr.type, counters.event(e).attr.config};
    info.unit = counters.event(e).unit;
    for (std::size_t b = 0; b < events.size(); ++b)
      if (events.counter_event(b) == e) info.bpf_index = b;
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

using KeyedStats = std::map<FuncKey, FuncStats>;

std::vector<FuncProbeStats> minus(std::vector<FuncProbeStats> now,
                                  const std::vector<FuncProbeStats>& before) {
  auto sub = [](std::uint64_t& a, std::uint64_t b) { a -= std::min(a, b); };
  for (std::size_t i = 0; i < now.size() && i < before.size(); ++i) {
    sub(now[i].lost, before[i].lost);
    sub(now[i].depth_overflow, before[i].depth_overflow);
    sub(now[i].unmatched_exit, before[i].unmatched_exit);
    sub(now[i].abandoned, before[i].abandoned);
    sub(now[i].reentered, before[i].reentered);
    sub(now[i].state_failed, before[i].state_failed);
    sub(now[i].agg_collisions, before[i].agg_collisions);
    sub(now[i].agg_full, before[i].agg_full);
    sub(now[i].entered, before[i].entered);
    sub(now[i].ended, before[i].ended);
  }
  return now;
}

}  // namespace

struct FunctionSession::State {
  const FunctionPlan& plan;
  Workload* workload;
  FuncReportRenderer* intervals;
  LibbpfQuiet quiet;
  AggregateChoice agg;
  ResolvedTargets resolved;
  std::vector<AttachPoint>& points;
  CounterSet counters;
  FunctionMetricPlan metrics;
  FuncObject object;
  FuncAttachments attachments;
  std::vector<BpfLink> hooks;
  std::optional<RecordStream> stream;
  StreamAggregator stream_total;
  StreamAggregator stream_interval;
  std::optional<CgroupNames> cgroup_names;
  std::vector<FuncEventInfo> infos;
  KeyedStats kernel_prev;
  std::vector<FuncProbeStats> fstats_prev;
  std::uint64_t stream_lost_prev = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t previous_ns = 0;
  bool live = false;
  std::vector<ProbeBias> biases;
  std::map<std::uint32_t, std::size_t> bias_of;        // function id -> the bias subtracted from it
  std::map<std::size_t, std::uint32_t> cost_class_of;  // bias -> its nested-cost class (1..)
  LinkReaper reaper;  // detaches calibration probes while the run goes on
  Fd keep_reading;    // kernel aggregation: a read a minute keeps 32-bit buckets exact

  State(const FunctionPlan& p, Workload* w, FuncReportRenderer* r)
      : plan(p),
        workload(w),
        intervals(r),
        quiet(p.verbose),
        agg(checked_aggregate(p)),
        resolved(resolve_targets(p.targets, p.regions, p.key_args, p.backend, p.pid,
                                 p.verbose && !p.quiet ? &std::cerr : nullptr)),
        points(resolved.points),
        // BPF reads counters on the CPU a call runs on: always one per CPU.
        counters(CounterSet::open(p.groups, CounterTarget::system_wide(online_cpus()))),
        metrics(plan_function_metrics(p.metrics, counters)),
        object(FuncObject::load(counters, object_config())),
        stream_total(object.events().size(), p.by, p.max_keys, metrics.per_call),
        stream_interval(object.events().size(), p.by, p.max_keys, metrics.per_call),
        infos(event_infos(counters, object.events())),
        fstats_prev(points.size() + 1) {
    for (std::size_t slot = 0; slot < resolved.key_specs.size(); ++slot)
      object.set_key_spec(slot, resolved.key_specs[slot]);
    if (follow_tgids()) object.track(workload ? workload->pid() : *plan.pid);
    if (plan.by == Breakdown::cgroup) cgroup_names.emplace(cgroup2_mount_point());
    if (agg != AggregateChoice::kernel) {
      stream.emplace(object.records_fd(), plan.buffer_pages, record_shape(),
                     [this](const CallRecord& rec) {
                       stream_total.add(rec);
                       if (intervals) stream_interval.add(rec);
                     });
    }
  }

  bool follow_tgids() const { return !plan.system_wide && (workload || plan.pid); }

  // What the stream's records carry: the caller only for a --by that splits on it.
  RecordShape record_shape() const {
    if (!plan.key_args.empty()) return RecordShape::keyed;
    return plan.by == Breakdown::none ? RecordShape::call : RecordShape::caller;
  }

  FuncObjectConfig object_config() const {
    FuncObjectConfig c;
    c.n_funcs = points.size();
    c.agg_mode = (agg == AggregateChoice::stream ? 0u : kAggKernel) |
                 (agg == AggregateChoice::kernel ? 0u : kAggStream);
    c.follow_tgids = follow_tgids();
    c.sched_hook = plan.sched_hook;
    c.by_cgroup = plan.by == Breakdown::cgroup;
    c.need_comm = plan.by == Breakdown::comm;
    c.send_caller = record_shape() == RecordShape::caller;
    const BpfEventMap bpf_events = BpfEventMap::of(counters);
    c.clock_events = own_events(plan.groups, counters, bpf_events,
                                [](const ResolvedEvent& e) { return e.is_clock(); });
    if (plan.sched_hook) {  // the hook's counts exist only with the hook
      c.switch_events = own_events(plan.groups, counters, bpf_events, [](const ResolvedEvent& e) {
        return is_software_event(e, PERF_COUNT_SW_CONTEXT_SWITCHES);
      });
      c.migration_events =
          own_events(plan.groups, counters, bpf_events, [](const ResolvedEvent& e) {
            return is_software_event(e, PERF_COUNT_SW_CPU_MIGRATIONS);
          });
    }
    for (const auto& cg : plan.filter_cgroups) c.filter_cgroups.emplace_back(cg.id, cg.level);
    c.metrics = metrics.per_call;
    c.thread_store = plan.thread_store;
    c.compensate = plan.compensate;
    c.n_key_args = plan.key_args.size();
    c.max_keys = plan.max_keys;
    c.key_slots = resolved.key_specs.size();
    // Many user-space points go through multi-uprobe links, a few through perf-event uprobes
    // (FuncObjectConfig::uprobe_multi).
    std::size_t user_points = 0;
    for (const auto& p : points)
      user_points += p.backend == ProbeBackend::uprobe || p.backend == ProbeBackend::usdt;
    c.uprobe_multi = user_points > kUprobeMultiAbove;
    // Every run with a region calibrates one (usdt), so the programs of both ends load.
    for (const auto& p : points) {
      const bool region = p.shape == MeasureShape::region;
      c.count_entries |= region;
      if (p.shape == MeasureShape::function) {
        c.probe_programs |= p.backend == ProbeBackend::uprobe ||
                            p.backend == ProbeBackend::kprobe || p.kprobe_fallback;
        if (is_syscall_target(p))
          (raw_syscall_number(p, plan) ? c.raw_syscalls : c.syscall_programs) = true;
        continue;
      }
      for (const ProbeSite* site : {p.begin ? &*p.begin : nullptr, p.end ? &*p.end : nullptr}) {
        if (!site) continue;
        const bool tp = site->backend == ProbeBackend::tracepoint;
        if (p.shape == MeasureShape::probe) {
          c.hit_programs |= !tp;
          c.tracepoint_hit_program |= tp;
        } else {
          c.probe_programs |= !tp;
          c.syscall_programs |= tp;
        }
      }
      if (region && is_usdt_region(p)) c.probe_programs = true;
    }
    // Compensating, a calibration also measures what a nested probed call costs, on an outer
    // function in pmcprof probed with a uprobe: its programs load whatever the run's own
    // backends are.
    if (plan.compensate && calls_can_nest()) c.probe_programs = true;
    return c;
  }

  // Whether a probed call of this run can run inside another: not when every target is a
  // syscall (syscalls do not nest) or a single probe (its hit is no frame).
  bool calls_can_nest() const {
    return std::any_of(points.begin(), points.end(), [](const AttachPoint& p) {
      return p.shape != MeasureShape::probe && !is_syscall_target(p);
    });
  }

  // A region from Python's function__entry whose ends found hardly any start: the interpreter
  // did not fire the entry probe (CPython 3.11 without a profiler), which the report says. (A
  // profiled run has as many matched ends as starts, beside the returns of the frames entered
  // before the profiler started.)
  static bool python_entry_missing(const AttachPoint& p, const FuncProbeStats& fs) {
    return p.shape == MeasureShape::region && p.begin && p.begin->backend == ProbeBackend::usdt &&
           p.target.provider == "python" && p.target.name == "function__entry" &&
           fs.unmatched_exit >= 100 && fs.ended * 100 < fs.unmatched_exit;
  }

  static bool is_usdt_region(const AttachPoint& p) {
    return p.shape == MeasureShape::region && p.begin && p.end &&
           p.begin->backend == ProbeBackend::usdt && p.end->backend == ProbeBackend::usdt;
  }

  // --by argN: the keys of point `func_id` with an argument BPF could not read (those folded
  // by --top too), said once on its total row, with why.
  void note_unreadable_keys(FuncRow& total, const KeyedStats& stats, std::uint32_t func_id) const {
    if (plan.by != Breakdown::args) return;
    std::size_t n = 0;
    for (const auto& [key, s] : stats) {
      if (key.func_id != func_id || key.other) continue;
      const auto args = key_values(key.text);
      n += std::any_of(args.begin(), args.end(),
                       [](const KeyValue& a) { return a.type == KeyValue::Type::unreadable; });
    }
    if (n == 0) return;
    std::string& note = total.backend_note;
    note += (note.empty() ? "" : "; ") + std::to_string(n) +
            (n == 1 ? " key holds" : " keys hold") +
            " an argument BPF could not read, shown as <unreadable at ADDRESS>: its memory was not "
            "paged in when the probe fired and BPF cannot fault it in (a string the program "
            "never reads itself, such as a literal, is the usual case), or the pointer was bad";
  }

  // --by argN: a key's arguments, as the BPF side wrote them (bpf/pmcprof.h).
  std::vector<KeyValue> key_values(const std::string& bytes) const {
    std::vector<KeyValue> out;
    const std::size_t n = plan.key_args.size();
    if (n == 0 || bytes.size() < kKeySize) return out;
    const std::size_t room = kKeySize / n;
    for (std::size_t i = 0; i < n; ++i) {
      const char* slot = bytes.data() + i * room;
      KeyValue v;
      if (const auto address = unreadable_key_arg({slot, room})) {
        v.type = KeyValue::Type::unreadable;
        v.bits = *address;
      } else if (plan.key_args[i].string) {
        v.type = KeyValue::Type::string;
        v.text.assign(slot, strnlen(slot, room));
      } else {
        std::memcpy(&v.bits, slot, sizeof(v.bits));
        const bool is_signed = i < resolved.key_signed.size() && resolved.key_signed[i];
        v.type = is_signed ? KeyValue::Type::signed_int : KeyValue::Type::unsigned_int;
      }
      out.push_back(std::move(v));
    }
    return out;
  }

  std::string by_value(const FuncKey& key, std::optional<std::uint64_t>& cgroup_id) {
    switch (plan.by) {
      case Breakdown::none:
        return {};
      case Breakdown::comm:
        return key.text;
      case Breakdown::pid:
      case Breakdown::cpu:
        return std::to_string(key.number);
      case Breakdown::cgroup:
        // Ids come from the kernel; the path is resolved now (or the last known one if the
        // cgroup has gone since).
        cgroup_id = key.number;
        return cgroup_names->name_of(key.number);
      case Breakdown::args: {
        if (key.other) return "(other)";
        std::string out;
        for (const auto& v : key_values(key.text)) out += (out.empty() ? "" : ", ") + v.display();
        return out;
      }
    }
    return {};
  }

  // Per BPF event: does it count instructions or cycles (whose calibration subtracts the empty
  // function's own instructions)?
  std::vector<bool> own_work_events() const {
    std::vector<bool> out;
    for (std::size_t b = 0; b < object.events().size(); ++b)
      out.push_back(
          counters.event(object.events().counter_event(b)).counts_instructions_or_cycles());
    return out;
  }

  // Calibrates the way point `p` is probed (once per backend and, for uprobes, per kind of
  // first instruction) and sets the bias of every function probed that way. A region's and a
  // single probe's points get the nested-cost class of their own way: their hits cost the
  // calls around them.
  void calibrate(AttachPoint& p) {
    // A single probe's hits have no length; a region is calibrated when both its ends are
    // USDT probes (the usdt backend), and otherwise stated as not calibrated.
    if (p.shape == MeasureShape::region && !is_usdt_region(p)) state_not_calibrated(p);
    if (p.shape != MeasureShape::function && !is_usdt_region(p)) {
      for (ProbeSite* site : {p.begin ? &*p.begin : nullptr, p.end ? &*p.end : nullptr})
        if (site && plan.compensate && calls_can_nest())
          site->cost_class = cost_class(way_bias(site->backend, site->start, {}));
      return;
    }
    const ProbeBackend backend = p.shape == MeasureShape::region ? ProbeBackend::usdt : p.backend;
    auto same_way = [&](const AttachPoint& q) {
      if (q.shape == MeasureShape::probe) return false;
      if (backend == ProbeBackend::usdt) return is_usdt_region(q);
      return q.shape == MeasureShape::function && q.backend == p.backend &&
             (p.backend != ProbeBackend::uprobe || q.start == p.start);
    };
    std::vector<std::uint32_t> ids;
    for (const auto& q : points)
      if (same_way(q)) ids.push_back(q.func_id);
    const std::size_t index = way_bias(backend, p.start, ids);
    if (backend == ProbeBackend::usdt) p.begin->cost_class = p.end->cost_class = cost_class(index);
  }

  // A region between points other than two USDT probes: stated, once per kind of ends.
  void state_not_calibrated(const AttachPoint& p) {
    const std::string way = p.backend_text();
    for (const auto& b : biases)
      if (b.region_kinds == way) return;
    ProbeBias b;
    b.backend = p.begin->backend;
    b.region_kinds = way;
    b.why_not = "a region from a " + std::string(to_string(p.begin->backend)) + " to a " +
                to_string(p.end->backend) +
                " point is not calibrated: its values include what its probes cost";
    biases.push_back(std::move(b));
  }

  // The bias of probing a function the way (backend, first instruction), calibrated the first
  // time that way is asked for, and set on `ids`: its index in `biases`.
  std::size_t way_bias(ProbeBackend backend, UprobeStart start,
                       const std::vector<std::uint32_t>& ids) {
    for (const auto& b : biases) {
      if (!b.region_kinds.empty() || b.backend != backend ||
          (b.start && backend == ProbeBackend::uprobe && *b.start != start))
        continue;
      const auto index = static_cast<std::size_t>(&b - biases.data());
      if (b.subtracted)
        for (auto id : ids) {
          object.set_bias(id, bias_values(b), noise_values(b));
          bias_of[id] = index;
        }
      set_nested_cost(index, ids);
      return index;
    }
    CalibrationRequest req;
    req.backend = backend;
    req.start = start;
    req.func_ids = ids;
    req.compensate = plan.compensate;
    for (const auto& q : points) {
      if (q.shape == MeasureShape::function && q.backend == ProbeBackend::tracepoint)
        req.busy_syscalls.push_back(q.target.name);
      for (const ProbeSite* site : {q.begin ? &*q.begin : nullptr, q.end ? &*q.end : nullptr})
        if (site && site->category == "syscalls")
          req.busy_syscalls.push_back(site->event.substr(site->event.find('_', 4) + 1));
    }
    req.own_work_events = own_work_events();
    // Without nesting no figure for nested probes is needed: that saves the calibration's own
    // uprobe pair, whose detach waits a grace period each.
    req.nested = calls_can_nest();
    biases.push_back(pmcprof::calibrate(object, req, reaper));
    if (biases.back().subtracted)
      for (auto id : ids) bias_of[id] = biases.size() - 1;
    set_nested_cost(biases.size() - 1, ids);
    return biases.size() - 1;
  }

  // The calls of `ids` (calibrated as bias `index`) cost the calls they are nested in what the
  // calibration measured: each backend's cost is a class, taken off per nested call.
  void set_nested_cost(std::size_t index, const std::vector<std::uint32_t>& ids) {
    const std::uint32_t c = cost_class(index);
    if (c == 0) return;
    for (auto id : ids) object.set_cost_class(id, c);
  }

  // Bias `index`'s nested-cost class (1..), given on first use; 0: none (not compensating, not
  // measured, or more ways than classes).
  std::uint32_t cost_class(std::size_t index) {
    if (!plan.compensate || !biases[index].nested_calibrated) return 0;
    auto it = cost_class_of.find(index);
    if (it == cost_class_of.end()) {
      if (cost_class_of.size() >= FuncObject::kCostClasses) return 0;
      const auto c = static_cast<std::uint32_t>(cost_class_of.size() + 1);
      it = cost_class_of.emplace(index, c).first;
      // The class's cost, for the points that carry it in their cookies (count_hit).
      const ProbeBias& b = biases[index];
      object.set_class_cost(c, enclosed_values(b), b.enclosed_noise, b.enclosed_tail);
    }
    return it->second;
  }

  // The noise floors of the bias subtracted from point `func_id`'s calls, and what its probes
  // cost, on its row.
  void set_bias_figures(FuncRow& row, std::uint32_t func_id) const {
    auto it = bias_of.find(func_id);
    if (it == bias_of.end()) return;
    const ProbeBias& b = biases[it->second];
    FuncRow::ProbeCost cost;
    cost.per_call_ns = static_cast<double>(b.nested_calibrated ? b.enclosed_oncpu_ns : b.oncpu_ns);
    cost.calls = static_cast<double>(row.calls + row.abandoned) +
                 0.5 * static_cast<double>(row.depth_overflow);
    row.probe_cost = cost;
    row.wall.noise_floor = static_cast<double>(b.wall_noise_ns);
    row.oncpu.noise_floor = static_cast<double>(b.oncpu_noise_ns);
    for (std::size_t k = 0; k < infos.size() && k < row.events.size(); ++k) {
      const auto& idx = infos[k].bpf_index;
      if (idx && *idx < b.events_noise.size() && b.events_noise[*idx])
        row.events[k].per_call.noise_floor = static_cast<double>(*b.events_noise[*idx]);
    }
  }

  std::vector<ProbeBiasRow> bias_rows() const {
    std::vector<ProbeBiasRow> rows;
    for (const auto& b : biases) {
      ProbeBiasRow row;
      row.backend = b.region_kinds.empty() ? to_string(b.backend) : b.region_kinds;
      if (!b.region_kinds.empty() || b.backend == ProbeBackend::usdt) row.kind = "region";
      if (b.start) row.first_instruction = to_string(*b.start);
      row.probed = b.probed;
      row.calibrated = b.calibrated;
      row.why_not = b.why_not;
      row.subtracted = b.subtracted;
      row.calls = b.calls;
      row.wall_ns = static_cast<double>(b.wall_ns);
      row.oncpu_ns = static_cast<double>(b.oncpu_ns);
      auto events_of = [this](const std::vector<std::optional<std::uint64_t>>& values) {
        std::vector<ProbeBiasRow::Event> out;
        for (const auto& info : infos) {
          if (!info.bpf_index || *info.bpf_index >= values.size()) continue;
          const auto& v = values[*info.bpf_index];
          out.push_back({info.event, info.unit,
                         v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt});
        }
        return out;
      };
      row.events = events_of(b.events);
      if (b.nested_calibrated) {
        row.nested =
            ProbeBiasRow::Nested{events_of(b.enclosed), static_cast<double>(b.enclosed_wall_ns),
                                 static_cast<double>(b.enclosed_oncpu_ns)};
        // enclosed_noise and _tail: per BPF event, then wall, then on-CPU (as
        // enclosed_values): the last two, whatever the number of events.
        auto wall_and_oncpu = [](const std::vector<std::uint64_t>& v, std::optional<double>& wall,
                                 std::optional<double>& oncpu) {
          if (v.size() < 2) return;
          wall = static_cast<double>(v[v.size() - 2]);
          oncpu = static_cast<double>(v.back());
        };
        wall_and_oncpu(b.enclosed_noise, row.nested->wall_floor_ns, row.nested->oncpu_floor_ns);
        wall_and_oncpu(b.enclosed_tail, row.nested->wall_tail_ns, row.nested->oncpu_tail_ns);
        row.nested_subtracted = plan.compensate;
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  KeyedStats kernel_stats() {
    KeyedStats out;
    for (const auto& ka : object.read_aggregates()) {
      FuncKey key{ka.func_id, plan.by == Breakdown::cgroup ? ka.cgroup_id : 0, ka.key, ka.other};
      auto it = out.try_emplace(key, object.events().size(), metrics.per_call).first;
      it->second.add_kernel(ka);
    }
    return out;
  }

  FunctionReport build(const KeyedStats& stats, const std::vector<FuncProbeStats>& fstats,
                       bool stream_view, std::uint64_t lost_total) {
    FunctionReport r;
    r.target = describe_function_target(plan);
    r.aggregation = stream_view ? "stream" : "kernel";
    r.by = plan.by == Breakdown::none ? "" : to_string(plan.by);
    if (plan.by == Breakdown::args) {
      std::vector<std::string> names;
      for (const auto& a : plan.key_args) names.push_back(a.text());
      r.by = join(names, ",");
      r.max_keys = plan.max_keys;
    }
    r.top = plan.top;
    r.untracked = object.untracked();
    r.probe_bias = bias_rows();
    std::uint64_t kernel_lost = 0;
    for (const auto& p : points) {
      const FuncProbeStats& fs = fstats[p.func_id];
      kernel_lost += fs.lost;
      const std::size_t own = add_rows(r.functions, p, stats);
      annotate(r.functions[own], p, fs, stream_view);
      note_unreadable_keys(r.functions[own], stats, p.func_id);
    }
    r.lost = stream_view ? std::max(lost_total, kernel_lost) : 0;
    r.partial = r.lost > 0;
    return r;
  }

  // One row per key of point P, or one empty row when it was never called; with --by, in
  // order_keys' order (sorted, folded past --top, the total row last). Returns the index of
  // the row that carries the point's own counts: its total row with --by, else its one row.
  std::size_t add_rows(std::vector<FuncRow>& rows, const AttachPoint& p, const KeyedStats& stats) {
    const std::string backend = p.backend_text();
    auto make = [&](const std::string& value, const FuncStats& s) {
      FuncRow row = make_func_row(p.label, backend, value, s, 0, infos, metrics.infos);
      set_bias_figures(row, p.func_id);
      row.kind = to_string(p.shape);
      // A single probe's hit is a call of zero length: no metric of it means anything.
      if (p.shape == MeasureShape::probe) row.metrics.clear();
      return row;
    };
    std::vector<FuncRow> keys;
    std::vector<FuncStats> key_stats;
    for (const auto& [key, s] : stats) {
      if (key.func_id != p.func_id) continue;
      std::optional<std::uint64_t> cgroup_id;
      keys.push_back(make(by_value(key, cgroup_id), s));
      key_stats.push_back(s);
      FuncRow& row = keys.back();
      row.cgroup_id = cgroup_id;
      row.other = key.other;
      if (plan.by == Breakdown::args && !key.other) row.args = key_values(key.text);
    }
    const FuncStats none(object.events().size(), metrics.per_call);
    const bool called = !keys.empty();
    if (plan.by != Breakdown::none)
      keys = order_keys(std::move(keys), key_stats, none, plan.top,
                        [&](const FuncStats& s) { return make("", s); });
    // A function never called still has its one entry (key ""), before its total of 0 keys.
    if (!called) keys.insert(keys.begin(), make("", none));
    rows.insert(rows.end(), std::make_move_iterator(keys.begin()),
                std::make_move_iterator(keys.end()));
    return rows.size() - 1;
  }

  // What happened to the point's calls outside the sums, on its own row (with --by its total
  // row: the kernel counts these per function, never per key).
  void annotate(FuncRow& row, const AttachPoint& p, const FuncProbeStats& fs,
                bool stream_view) const {
    // A function's lost records cannot be attributed to a --by key: its total row's.
    row.lost = stream_view ? fs.lost : 0;
    row.depth_overflow = fs.depth_overflow;
    row.unmatched_exits = fs.unmatched_exit;
    row.abandoned = fs.abandoned;
    row.reentered = fs.reentered;
    row.state_failed = fs.state_failed;
    row.not_aggregated = stream_view ? 0 : fs.agg_collisions + fs.agg_full;
    // A region's starts that found no end: still open at the end of the run, or left by a
    // thread that went on without ending them (an error path past the end probe).
    if (p.shape == MeasureShape::region)
      row.open = fs.entered - std::min(fs.entered, fs.ended + fs.abandoned);
    // Its probes also fired for the calls too deep or never returned: counted now.
    set_bias_figures(row, p.func_id);
    if (!p.fallback_why.empty()) row.backend_note = "fentry refused: " + p.fallback_why;
    if (python_entry_missing(p, fs))
      row.backend_note =
          "python:function__entry fired " + std::to_string(fs.entered) + " times, " +
          std::to_string(fs.unmatched_exit) +
          " function__return without it: CPython 3.11 fires function__entry only while a "
          "profile or trace function is set (CPython issue 98894); run the program under "
          "one (python3 -m cProfile -o /dev/null SCRIPT, or sys.setprofile)";
  }

  FunctionReport stream_view(const std::vector<FuncProbeStats>& fstats) {
    stream->drain();
    return build(stream_total.stats(), fstats, true, stream->lost());
  }
  FunctionReport kernel_view(const std::vector<FuncProbeStats>& fstats) {
    return build(kernel_stats(), fstats, false, 0);
  }
  FunctionReport main_view(const std::vector<FuncProbeStats>& fstats) {
    return stream ? stream_view(fstats) : kernel_view(fstats);
  }

  // One interval, ending now or (the last one) at `end_ns`, when measuring stopped: the
  // probes' teardown after it is no part of any interval (issue 22: with it, the last one ran
  // 631 ms for -I 500, and the intervals added up to more than the run's elapsed time).
  void interval(std::optional<std::uint64_t> end_ns = std::nullopt) {
    const std::uint64_t now_ns = end_ns.value_or(monotonic_ns());
    auto fstats_now = object.read_func_stats();
    auto fstats = minus(fstats_now, fstats_prev);
    fstats_prev = std::move(fstats_now);
    FunctionReport r;
    if (stream) {
      stream->drain();
      r = build(stream_interval.stats(), fstats, true, stream->lost() - stream_lost_prev);
      stream_lost_prev = stream->lost();
      stream_interval.clear();
    } else {
      KeyedStats now = kernel_stats();
      KeyedStats delta = now;
      for (auto& [k, s] : delta)
        if (auto it = kernel_prev.find(k); it != kernel_prev.end()) s.subtract(it->second);
      r = build(delta, fstats, false, 0);
      kernel_prev = std::move(now);
    }
    r.elapsed_ns = now_ns - previous_ns;
    r.interval_s = static_cast<double>(now_ns - start_ns) / 1e9;
    r.timestamp_unix_ns = realtime_ns();
    if (intervals) intervals->interval(r);
    previous_ns = now_ns;
  }
};

FunctionSession::FunctionSession(const FunctionPlan& plan, Workload* workload,
                                 FuncReportRenderer* intervals)
    : st_(std::make_unique<State>(plan, workload, intervals)) {}

FunctionSession::~FunctionSession() = default;

void FunctionSession::attach() {
  State& s = *st_;
  // Counters run from here: the calibration reads them. Only deltas matter in this mode.
  s.counters.enable();
  for (auto& l : s.object.attach_scheduler_hooks()) s.hooks.push_back(std::move(l));
  // What a probe pair adds to a call, per backend, before any call of a target is seen. Each
  // calibration attaches and detaches probes of its own: a stop signal is taken between them.
  for (auto& p : s.points) {
    stop_if_interrupted("attaching");
    s.calibrate(p);
  }
  Progress progress("attaching", s.points.size(), s.plan.quiet);
  const bool say = s.plan.verbose && !s.plan.quiet;
  s.attachments.attach(s.object, s.points, [&](const AttachPoint& p) {
    stop_if_interrupted("attaching");
    progress.step(p.func_id + 1);
    if (say)
      std::cerr << "pmcprof: attaching " << p.target.text << " with " << to_string(p.backend)
                << (p.binary.empty() ? "" : " (" + p.binary + ")") << syscall_how(p, s.plan)
                << "\n";
    return true;
  });
  // A fentry target that fell back to kprobes: that backend's bias too.
  for (auto& p : s.points) s.calibrate(p);
  if (say) {
    for (const auto& p : s.points)
      if (!p.fallback_why.empty())
        std::cerr << "pmcprof: " << p.target.text << ": fentry refused (" << p.fallback_why
                  << "): attached with kprobe\n";
    std::cerr << "pmcprof: per-thread state in "
              << (s.object.thread_store() == ThreadStore::task_storage ? "task local storage"
                                                                       : "a preallocated hash")
              << "\n";
  }
}

void FunctionSession::start() {
  State& s = *st_;
  s.start_ns = s.previous_ns = monotonic_ns();
  s.live = true;
}

std::vector<RunLoopOptions::Reader> FunctionSession::readers() {
  std::vector<RunLoopOptions::Reader> out;
  if (st_->stream) out.push_back({st_->stream->epoll_fd(), [this] { st_->stream->drain(); }});
  if (st_->agg != AggregateChoice::stream) {
    // The kernel's histogram carries are 32 bits (FuncObject::read_hist): reading them at least
    // once a minute carries their growth into 64-bit totals before any can wrap.
    st_->keep_reading.reset(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    itimerspec every{{60, 0}, {60, 0}};
    if (!st_->keep_reading || timerfd_settime(st_->keep_reading.get(), 0, &every, nullptr) != 0)
      throw SystemError("timerfd for the histogram reads: " + errno_string(errno));
    out.push_back({st_->keep_reading.get(), [this] {
                     std::uint64_t ticks = 0;
                     if (::read(st_->keep_reading.get(), &ticks, sizeof(ticks)) > 0)
                       st_->object.read_aggregates();
                   }});
  }
  return out;
}

void FunctionSession::interval() {
  st_->interval();
}

LiveReport FunctionSession::live() {
  State& s = *st_;
  FunctionReport r = s.main_view(s.object.read_func_stats());
  r.elapsed_ns = monotonic_ns() - s.start_ns;
  r.timestamp_unix_ns = realtime_ns();
  return r;
}

void FunctionSession::stop() {
  State& s = *st_;
  s.live = false;
  const std::uint64_t stop_ns = monotonic_ns();
  // Probes first, so no call is half-recorded; then the stream, so what the kernel sent is
  // in; then the counters. The last stretch since a tick is an interval too, so the
  // intervals add up to the total.
  s.attachments.detach();
  s.object.detach_raw_syscalls();
  s.reaper.join();
  destroy_links(std::move(s.hooks));
  if (s.stream) s.stream->drain();
  if (s.plan.interval_ms && stop_ns > s.previous_ns) s.interval(stop_ns);
  s.counters.disable();
  if (s.plan.verbose && !s.plan.quiet && s.object.inconsistent_reads())
    std::cerr << "pmcprof: " << s.object.inconsistent_reads()
              << " interval reads found no moment without a call being summed: their "
                 "histograms hold a few calls more than their measured_calls\n";
}

void FunctionSession::finish(const RunEnd& end) {
  State& s = *st_;
  const auto fstats = s.object.read_func_stats();
  auto stamp = [&](FunctionReport r) {
    r.elapsed_ns = end.end_ns - end.start_ns;
    r.timestamp_unix_ns = realtime_ns();
    r.interrupted = end.interrupted();
    r.exit_status = end.exit_status;
    return r;
  };
  outcome_.report = stamp(s.main_view(fstats));
  // --aggregate both: the stream's report, and the kernel's view of the same calls in it.
  if (s.stream && s.agg == AggregateChoice::both)
    outcome_.report.kernel_view = std::make_shared<FunctionReport>(stamp(s.kernel_view(fstats)));
  outcome_.exit_code = end.exit_status.value_or(0);
}

FunctionOutcome run_function_mode(const FunctionPlan& plan, FuncReportRenderer* intervals) {
  SignalBlocker signals;
  RunControl control;
  control.command = plan.command;
  control.pid = plan.pid;
  control.interval_ms = plan.interval_ms;
  control.timeout_ms = plan.timeout_ms;
  control.readers = plan.readers;
  control.on_live = plan.on_live;
  Run run(control, signals);
  FunctionSession session(plan, run.workload(), intervals);
  run.drive(session);
  return std::move(session.outcome());
}

}  // namespace pmcprof

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "pmcprof/cli/choices.hpp"
#include "pmcprof/cli/stat_options.hpp"
#include "pmcprof/counters/cgroups.hpp"
#include "pmcprof/events/core_pmu_events.hpp"
#include "pmcprof/events/metric_binding.hpp"
#include "pmcprof/events/metric_table.hpp"
#include "pmcprof/events/sysfs_pmu.hpp"
#include "pmcprof/platform/cpu_list.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/probes/usdt.hpp"
#include "pmcprof/report/aggregate.hpp"
#include "pmcprof/report/metric_values.hpp"
#include "pmcprof/run/counting_run.hpp"
#include "pmcprof/run/function_session.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/output.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

constexpr long long kMinIntervalMs = 10;

// Where the report goes: stderr like perf stat, a file with -o FILE, stdout with -o -.
// In counting mode a text or CSV file starts with perf's "# started on DATE" line and a blank
// line (JSON files do not: they stay one JSON document or NDJSON).
// Every write is checked (CheckedOutput). The file is opened non-blocking, so a FIFO without
// a reader is refused at once instead of hanging; other files then block as usual. A write
// that fails while intervals are printed stops the run as SIGTERM would (the measurement can
// no longer be delivered: a closed pipe, a full disk); finish() says so in one line.
class ReportSink {
 public:
  ReportSink(const std::optional<std::string>& path, bool header) {
    if (!path) {
      name_ = "stderr";
      out_.emplace(STDERR_FILENO, false);
    } else if (*path == "-") {
      name_ = "stdout";
      out_.emplace(STDOUT_FILENO, false);
    } else {
      name_ = quote(*path);
      const int fd =
          ::open(path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
      if (fd < 0) {
        const int err = errno;
        if (err == ENXIO)
          throw UserError("cannot write the report to " + name_ + ": it is a FIFO with no reader",
                          "start its reader first, or write to a regular file");
        throw UserError("cannot write the report to " + name_ + ": " + errno_string(err),
                        "check that the directory exists and is writable");
      }
      out_.emplace(fd, true);
      const int flags = fcntl(fd, F_GETFL);
      if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      if (header) write_started_on();
    }
    out_->set_on_error([](int) { ::kill(::getpid(), SIGTERM); });
  }
  std::ostream& stream() { return *out_; }
  void write_started_on() {
    const std::time_t now = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", std::localtime(&now));
    *out_ << "# started on " << date << "\n\n";
  }
  // The run is over: a failed write no longer has a run to stop.
  void run_ended() { out_->set_on_error({}); }

  // Flushes and closes; a write that failed (now or before) makes the exit status 1, with one
  // line. Otherwise the run's own status (the workload's) stands.
  int finish(int exit_code) {
    out_->set_on_error({});
    const int err = out_->close();
    if (!err) return exit_code;
    std::cerr << "pmcprof: cannot write the report to " << name_ << ": " << errno_string(err)
              << "\n";
    return kExitFailure;
  }

 private:
  std::string name_;
  std::optional<CheckedOutput> out_;
};

// -G values: comma lists, the option repeatable.
std::vector<std::string> cgroup_names(const StatOptions& opts) {
  std::vector<std::string> names;
  for (const auto& g : opts.cgroups)
    for (const auto& n : split(g, ',')) names.push_back(n);
  return names;
}

// -p / -t of a task that does not exist: one line, before anything is opened.
void require_task(pid_t id, bool thread) {
  // -p of a thread id other than the process's: the run would watch a task that is not a
  // process (and count the whole process): refused, saying which is which.
  if (!thread)
    if (auto tgid = thread_group_of(id); tgid && *tgid != id)
      throw UserError("-p " + std::to_string(id) + " is a thread of process " +
                          std::to_string(*tgid) + ", not a process id",
                      "count the process with -p " + std::to_string(*tgid) +
                          ", or this thread alone with -t " + std::to_string(id));
  if (process_exists(id)) return;
  throw UserError(
      std::string(thread ? "no thread with TID " : "no process with PID ") + std::to_string(id),
      thread ? "check the TID with ps -L; it may have exited"
             : "check the PID with ps; it may have exited");
}

CgroupBackend parse_cgroup_backend(const std::string& text) {
  if (text == "auto") return CgroupBackend::automatic;
  if (text == "fd") return CgroupBackend::fd;
  if (text == "bpf") return CgroupBackend::bpf;
  throw UserError("unknown --cgroup-backend '" + text + "'", "use auto, fd or bpf");
}

RenderOptions render_options(const StatOptions& opts) {
  RenderOptions r;
  r.intervals = opts.interval_ms.has_value();
  r.big_num = !opts.no_big_num;
  r.metric_only = opts.metric_only;
  r.csv_summary_prefix = !opts.no_csv_summary;
  if (opts.json)
    r.format = OutputFormat::json;
  else if (opts.csv_separator) {
    r.format = OutputFormat::csv;
    r.csv_separator = *opts.csv_separator;
  }
  return r;
}

}  // namespace

AggrMode aggregation_of(const StatOptions& opts) {
  if (opts.per_cpu) return AggrMode::cpu;
  if (opts.per_thread) return AggrMode::thread;
  if (opts.per_core) return AggrMode::core;
  if (opts.per_die) return AggrMode::die;
  if (opts.per_socket) return AggrMode::socket;
  if (opts.per_node) return AggrMode::node;
  return AggrMode::global;
}

CountingPlan make_counting_plan(const StatOptions& opts, const std::vector<ResolvedGroup>& groups,
                                const std::vector<MetricRequest>& metrics) {
  CountingPlan plan;
  plan.command = opts.command;
  plan.aggr = aggregation_of(opts);
  plan.verbose = opts.verbose;
  plan.quiet = opts.quiet;
  if (opts.interval_ms) plan.interval_ms = static_cast<std::uint64_t>(*opts.interval_ms);
  if (opts.interval_count) plan.interval_count = static_cast<std::uint64_t>(*opts.interval_count);
  if (opts.timeout_ms) plan.timeout_ms = static_cast<std::uint64_t>(*opts.timeout_ms);
  if (opts.pid) plan.pid = static_cast<pid_t>(*opts.pid);
  if (opts.tid) plan.tid = static_cast<pid_t>(*opts.tid);
  if (opts.all_cpus || opts.cpu_list) {
    plan.system_wide = true;
    auto online = online_cpus();
    if (opts.cpu_list) {
      plan.cpus = parse_cpu_list(*opts.cpu_list);
      check_cpus_online(plan.cpus, online);
      plan.cpus_explicit = true;
    } else {
      plan.cpus = online;
    }
  }
  plan.cgroup_backend = parse_cgroup_backend(opts.cgroup_backend);
  if (!opts.cgroups.empty() || !opts.for_each_cgroup.empty()) {
    const std::string mount = cgroup2_mount_point();
    plan.cgroups = open_cgroups(cgroup_names(opts), mount);
    for (const auto& spec : opts.for_each_cgroup)
      for (auto& cg : expand_for_each_cgroup(spec, mount)) plan.cgroups.push_back(std::move(cg));
    merge_duplicate_cgroups(plan.cgroups);
  }
  if (plan.pid) require_task(*plan.pid, false);
  if (plan.tid) require_task(*plan.tid, true);
  // A heterogeneous machine: one event (and group) per core PMU of the CPUs counted.
  CorePmuSplit split =
      split_per_core_pmu(groups, plan.system_wide ? plan.cpus : std::vector<int>{});
  plan.groups = std::move(split.groups);
  for (const auto& req : metrics)
    for (std::size_t g = 0; g < split.origin.size(); ++g)
      if (split.origin[g] == req.group) plan.metrics.push_back({req.metric, g});
  return plan;
}

namespace {

void validate_numbers(const StatOptions& opts, const std::string& hint) {
  if (opts.interval_ms && *opts.interval_ms < kMinIntervalMs)
    throw UserError("invalid -I " + std::to_string(*opts.interval_ms) +
                        ": the interval must be at least " + std::to_string(kMinIntervalMs) + " ms",
                    "e.g. -I 1000 prints every second");
  if (opts.interval_count && *opts.interval_count <= 0)
    throw UserError(
        "invalid --interval-count " + std::to_string(*opts.interval_count) + ": at least 1", hint);
  if (opts.interval_count && !opts.interval_ms)
    throw UserError("--interval-count needs -I", "e.g. -I 1000 --interval-count 5");
  if (opts.timeout_ms && *opts.timeout_ms <= 0)
    throw UserError("invalid --timeout " + std::to_string(*opts.timeout_ms) +
                        ": it must be a positive number of milliseconds",
                    hint);
  if (opts.repeat < 1)
    throw UserError("invalid -r " + std::to_string(opts.repeat) + ": at least 1", hint);
  if (opts.repeat > 1 && opts.command.empty())
    throw UserError("-r needs a command to repeat", "pmcprof stat -r 5 -- CMD");
  if (opts.repeat > 1 && opts.interval_ms) throw UserError("-r and -I cannot be combined", hint);
  if (opts.pid && *opts.pid <= 0)
    throw UserError("invalid -p " + std::to_string(*opts.pid) + ": not a PID", hint);
  if (opts.tid && *opts.tid <= 0)
    throw UserError("invalid -t " + std::to_string(*opts.tid) + ": not a TID", hint);
  if (opts.detailed > 3)
    throw UserError("-d given " + std::to_string(opts.detailed) + " times: at most -ddd", hint);
}

// -A and the --per-* modes: one at a time, each where it makes sense.
void validate_aggregation(const StatOptions& opts, const std::string& hint) {
  const int modes = opts.per_cpu + opts.per_thread + opts.per_core + opts.per_die +
                    opts.per_socket + opts.per_node;
  if (modes > 1)
    throw UserError(
        "give one of -A, --per-thread, --per-core, --per-die, --per-socket, "
        "--per-node",
        hint);
  const bool cpus = opts.all_cpus || opts.cpu_list;
  const bool per_place = opts.per_core || opts.per_die || opts.per_socket || opts.per_node;
  if (opts.per_cpu && !cpus)
    throw UserError("-A/--per-cpu needs system-wide counting (-a or -C)", "add -a");
  if (per_place && !cpus)
    throw UserError("--per-core, --per-die, --per-socket and --per-node count CPUs: add -a or -C",
                    "e.g. pmcprof stat -a --per-core -- sleep 1");
  if (opts.per_thread && !cpus && !opts.pid && !opts.tid)
    throw UserError("--per-thread counts the threads of -p, -t or, with -a, of the whole system",
                    "e.g. pmcprof stat --per-thread -p PID");
  if (opts.per_thread && opts.cpu_list)
    throw UserError("--per-thread counts threads on every CPU: not with -C", hint);
}

void validate_targets(const StatOptions& opts, const std::string& hint) {
  const bool cpus = opts.all_cpus || opts.cpu_list;
  if ((opts.pid || opts.tid) && cpus)
    throw UserError("-p/-t count a task; they cannot be combined with -a/-C", hint);
  if (opts.pid && opts.tid) throw UserError("give either -p or -t, not both", hint);
  if (opts.json && opts.csv_separator) throw UserError("-j and -x cannot be combined", hint);
  if (opts.csv_separator && opts.csv_separator->empty())
    throw UserError("-x needs a separator, e.g. -x ,", hint);
  const bool per_cgroup = !opts.cgroups.empty() || !opts.for_each_cgroup.empty();
  const bool function_mode = opts.function_mode();
  if (opts.cgroup_backend != "auto" && (!per_cgroup || function_mode))
    throw UserError(
        "--cgroup-backend applies to per-cgroup counting (-G or --for-each-cgroup "
        "without --func)",
        hint);
  if (!opts.for_each_cgroup.empty() && function_mode)
    throw UserError(
        "--for-each-cgroup counts per cgroup; with --func use -G to filter and "
        "--by cgroup to break down",
        hint);
  if (per_cgroup && !function_mode) {
    if (!cpus)
      throw UserError("per-cgroup counting (-G, --for-each-cgroup) is system-wide: add -a",
                      "e.g. pmcprof stat -a -G system.slice -- sleep 1");
    if (opts.per_cpu || opts.per_thread || opts.per_core || opts.per_die || opts.per_socket ||
        opts.per_node)
      throw UserError("-A and --per-* cannot be combined with -G/--for-each-cgroup", hint);
  }
}

void validate_function_mode(const StatOptions& opts) {
  if (!opts.function_mode()) {
    // Function-mode flags without --func would be silently ignored: say so instead.
    const char* func_only = opts.backend != "auto"        ? "--backend"
                            : opts.aggregate != "auto"    ? "--aggregate"
                            : opts.by                     ? "--by"
                            : opts.max_keys               ? "--max-keys"
                            : opts.top                    ? "--top"
                            : opts.no_sched_hook          ? "--no-sched-hook"
                            : opts.syscall_tracepoints    ? "--syscall-tracepoints"
                            : opts.buffer_pages != 256    ? "--buffer-pages"
                            : opts.thread_state != "auto" ? "--thread-state"
                            : opts.no_compensate          ? "--no-compensate"
                            : opts.hist                   ? "--hist"
                            : opts.hist_linear            ? "--hist-linear"
                                                          : nullptr;
    if (func_only)
      throw UserError(
          std::string(func_only) + " applies to function mode only: add --func or --region",
          "e.g. pmcprof stat --func syscall:getppid " + std::string(func_only) + " ...");
    return;
  }
  if (opts.tid || opts.cpu_list || opts.per_cpu || opts.repeat > 1)
    throw UserError("--func cannot be combined with -t, -C, -A or -r",
                    "function mode counts on every CPU; filter with -p PID or a command");
  if (opts.pid && !opts.command.empty())
    throw UserError(
        "-p attaches to a running process; with --func it cannot be combined with "
        "a command",
        "see 'pmcprof stat --help'");
  const char* counting_only =
      opts.per_thread || opts.per_core || opts.per_die || opts.per_socket || opts.per_node
          ? "--per-thread/-core/-die/-socket/-node"
      : opts.metric_only    ? "--metric-only"
      : opts.detailed > 0   ? "-d"
      : opts.interval_count ? "--interval-count"
                            : nullptr;
  if (counting_only)
    throw UserError(std::string(counting_only) + " applies to counting mode, not to --func",
                    "drop --func to count the whole run");
}

}  // namespace

void validate_stat_options(const StatOptions& opts) {
  const std::string hint = "see 'pmcprof stat --help'";
  if (opts.subcommand_word)
    throw UserError("'pmcprof stat " + opts.command.front() +
                        "' is perf's perf.data recording, which pmcprof does not implement",
                    "count directly (pmcprof stat -- CMD), or save -j output; to run a program "
                    "named " +
                        opts.command.front() + ", write pmcprof stat -- " + opts.command.front());
  if (opts.events_given) {
    bool any = false;
    for (const auto& e : opts.events) any |= !trim(e).empty();
    if (!any)
      throw UserError("empty event list given to -e", "name events like -e task-clock,cycles");
  }
  validate_numbers(opts, hint);
  validate_targets(opts, hint);
  validate_function_mode(opts);
  if (!opts.function_mode()) validate_aggregation(opts, hint);
}

namespace {

// The program a command runs: CMD as a path, or found in $PATH; a script's interpreter (#!).
std::optional<std::string> command_program(const std::string& cmd) {
  std::string path;
  if (cmd.find('/') != std::string::npos) {
    path = cmd;
  } else {
    const char* env = std::getenv("PATH");
    for (const auto& dir : split(env ? env : "/usr/bin:/bin", ':')) {
      const std::string p = (dir.empty() ? "." : dir) + "/" + cmd;
      if (::access(p.c_str(), X_OK) == 0) {
        path = p;
        break;
      }
    }
  }
  if (path.empty()) return std::nullopt;
  if (auto head = read_file(path); head && starts_with(*head, "#!")) {
    const std::string line = head->substr(2, head->find('\n') - 2);
    const auto words = split(std::string(trim(line)), ' ');
    if (!words.empty()) {
      // "#!/usr/bin/env python3": the interpreter env runs.
      if (words[0].size() >= 4 && words[0].substr(words[0].size() - 4) == "/env" &&
          words.size() > 1)
        return command_program(words[1]);
      return command_program(words[0]);
    }
  }
  std::error_code ec;
  auto real = std::filesystem::canonical(path, ec);
  return ec ? path : real.string();
}

}  // namespace

constexpr std::size_t kPythonMaxKeys = 256;

// --python: a region between the interpreter's function__entry and function__return probes,
// keyed by the code's file and function name (their first two arguments) unless --by says
// otherwise. The interpreter: the -p process's executable, or the command's program.
static void add_python_region(const StatOptions& opts, FunctionPlan& plan) {
  std::string python;
  if (opts.pid) {
    std::error_code ec;
    python = std::filesystem::read_symlink("/proc/" + std::to_string(*opts.pid) + "/exe", ec);
  } else if (!opts.command.empty()) {
    python = command_program(opts.command.front()).value_or("");
  }
  if (python.empty())
    throw UserError("--python needs the Python interpreter that runs: -p PID or -- python3 ...",
                    "e.g. pmcprof stat --python -- python3 script.py");
  const std::string probes = "usdt:" + python + ":python:function__";
  try {
    plan.regions.push_back(parse_region("python=" + probes + "entry," + probes + "return"));
    find_usdt_probe(python, "python", "function__entry");
  } catch (const UserError& e) {
    // The command may be a script for another program (a version manager's shim for bash):
    // say which program that is.
    const std::string word = opts.pid ? std::string() : opts.command.front();
    const std::string runs = !word.empty() && std::filesystem::path(python).filename() !=
                                                  std::filesystem::path(word).filename()
                                 ? quote(word) + " runs " + quote(python) + ": "
                                 : "";
    throw UserError("--python: " + runs + e.what(),
                    "--python needs an interpreter built with its USDT probes (Debian's "
                    "/usr/bin/python3 is); for another, give --region START,END with its probes");
  }
  if (!opts.by) {
    plan.by = Breakdown::args;
    plan.key_args = *parse_key_args("arg0:str,arg1:str");
  }
  // A program's own functions come after the interpreter's start-up and its imports: room
  // for more than the 64 keys of other runs.
  if (!opts.max_keys) plan.max_keys = kPythonMaxKeys;
  if (opts.verbose && !opts.quiet)
    std::cerr << "pmcprof: --python is --region python=" << probes << "entry," << probes
              << "return --by " << (opts.by ? *opts.by : std::string("arg0:str,arg1:str")) << "\n";
}

namespace {

// -M's comma lists, as one list of names.
std::vector<std::string> metric_names(const StatOptions& opts) {
  std::vector<std::string> names;
  for (const auto& m : opts.metrics)
    for (const auto& n : split(m, ',')) names.push_back(std::string(n));
  return names;
}

}  // namespace

FunctionPlan make_function_plan(const StatOptions& opts, std::vector<ResolvedGroup> groups,
                                const EventResolver& resolver) {
  FunctionPlan plan;
  plan.metrics = bind_metrics(groups, select_metrics(metric_names(opts), resolver), resolver,
                              !opts.metric_no_group);
  plan.groups = std::move(groups);
  require_every_core_pmu(plan.groups);  // -e's and what -M added
  for (const auto& f : opts.funcs) plan.targets.push_back(parse_func_target(f));
  check_distinct_targets(plan.targets);
  for (const auto& r : opts.regions) plan.regions.push_back(parse_region(r));
  plan.system_wide = opts.all_cpus;
  if (opts.pid) {
    plan.pid = static_cast<pid_t>(*opts.pid);
    require_task(*plan.pid, false);
  }
  plan.command = opts.command;
  if (opts.interval_ms) plan.interval_ms = static_cast<std::uint64_t>(*opts.interval_ms);
  if (opts.timeout_ms) plan.timeout_ms = static_cast<std::uint64_t>(*opts.timeout_ms);
  plan.backend = parse_backend_request(opts.backend);
  plan.aggregate = parse_aggregate_choice(opts.aggregate);
  if (opts.by) {
    if (auto args = parse_key_args(*opts.by)) {
      plan.by = Breakdown::args;
      plan.key_args = std::move(*args);
    } else {
      plan.by = parse_breakdown(*opts.by);
    }
  }
  if (opts.python) add_python_region(opts, plan);
  if (opts.max_keys) {
    if (plan.by != Breakdown::args)
      throw UserError("--max-keys bounds the keys of --by argN", "add --by argN, or drop it");
    plan.max_keys = static_cast<std::size_t>(*opts.max_keys);
  }
  if (opts.top) {
    if (plan.by == Breakdown::none)
      throw UserError("--top keeps the largest keys of a --by breakdown: there is none",
                      "add --by pid, comm, cpu, cgroup or argN, or drop --top");
    plan.top = static_cast<std::size_t>(*opts.top);
  }
  plan.sched_hook = !opts.no_sched_hook;
  plan.syscall_tracepoints = opts.syscall_tracepoints;
  plan.buffer_pages = validate_buffer_pages(opts.buffer_pages);
  plan.thread_store = parse_thread_store(opts.thread_state);
  plan.compensate = !opts.no_compensate;
  plan.verbose = opts.verbose;
  plan.quiet = opts.quiet;
  if (!opts.cgroups.empty()) {
    plan.filter_cgroups = open_cgroups(cgroup_names(opts), cgroup2_mount_point());
    merge_duplicate_cgroups(plan.filter_cgroups);
  }
  return plan;
}

namespace {

std::vector<HistName> hist_names(const FunctionPlan& plan) {
  std::vector<HistName> names{{"wall", true}, {"oncpu", true}};
  for (const auto& g : plan.groups)
    for (const auto& e : g.events) names.push_back({e.display_name(), e.unit == "ns"});
  for (const auto& m : plan.metrics)
    if (m.metric.def) names.push_back({m.metric.def->name, false});
  return names;
}

// --hist and --hist-linear checked against the run's events and metrics.
HistOptions hist_options(const StatOptions& opts, const FunctionPlan& plan) {
  if (!opts.hist && !opts.hist_linear) return {};
  const auto names = hist_names(plan);
  // `--hist wall`: a bare --hist takes no value, so `wall` became the command (a real one:
  // wall(1) writes to every terminal).
  if (opts.hist && opts.hist_quantities.empty() && opts.command_before_dashes &&
      !opts.command.empty() && std::any_of(names.begin(), names.end(), [&](const HistName& n) {
        return n.name == opts.command.front();
      }))
    throw UserError("--hist takes its list after '=': '--hist " + opts.command.front() +
                        "' would run " + quote(opts.command.front()) + " as the command",
                    "write --hist=" + opts.command.front() + ", or put the command after --");
  return hist_choice(opts.hist, opts.hist_quantities, opts.hist_linear, names);
}

}  // namespace

int run_function_stat(const StatOptions& opts, std::vector<ResolvedGroup> groups,
                      const EventResolver& resolver) {
  FunctionPlan plan = make_function_plan(opts, std::move(groups), resolver);
  RenderOptions render = render_options(opts);
  render.hist = hist_options(opts, plan);
  ReportSink sink(opts.output, /*header=*/false);
  auto renderer = make_func_renderer(render, sink.stream());
  FunctionOutcome outcome = run_function_mode(plan, renderer.get());
  sink.run_ended();
  renderer->final(outcome.report);
  return sink.finish(outcome.exit_code);
}

namespace {

bool cpu_pmu_names(const char* event) {
  return std::filesystem::exists(std::string(kSysfsPmuRoot) + "/cpu/events/" + event);
}

// What counting mode counts: -e (or perf's default set when neither -e nor -M is given), the
// -d events, then one group per -M metric (its events; grouped unless --metric-no-group).
std::vector<EventGroupSpec> counting_events(const StatOptions& opts, const EventResolver& resolver,
                                            std::vector<MetricRequest>& metrics) {
  std::vector<EventGroupSpec> specs;
  if (opts.events_given)
    specs = parse_event_list(join(opts.events, ","));
  else if (opts.metrics.empty())
    specs = default_events(opts.all_cpus || opts.cpu_list, cpu_pmu_names("stalled-cycles-frontend"),
                           cpu_pmu_names("stalled-cycles-backend"));
  for (auto& g : detailed_events(opts.detailed)) specs.push_back(std::move(g));
  for (const auto& choice : select_metrics(metric_names(opts), resolver)) {
    EventGroupSpec g;
    for (const auto& e : choice.events()) g.events.push_back(parse_event(e));
    g.grouped = !opts.metric_no_group && g.events.size() > 1;
    g.weak = g.metric = g.grouped;
    metrics.push_back({choice, specs.size()});
    specs.push_back(std::move(g));
  }
  return specs;
}

}  // namespace

int run_stat_command(const StatOptions& given) {
  StatOptions opts = given;
  // As perf: no command and no task to count means the whole system, until interrupted.
  if (!opts.function_mode() && opts.command.empty() && !opts.pid && !opts.tid && !opts.cpu_list &&
      !opts.subcommand_word)
    opts.all_cpus = true;
  validate_stat_options(opts);
  PfmLibrary pfm;
  EventResolver resolver(pfm);
  if (opts.function_mode()) {
    // As counting mode: -M without -e counts only the metrics' events.
    std::vector<EventGroupSpec> specs;
    if (opts.events_given)
      specs = parse_event_list(join(opts.events, ","));
    else if (opts.metrics.empty())
      specs = default_events();
    return run_function_stat(opts, resolver.resolve(specs), resolver);
  }
  std::vector<MetricRequest> metrics;
  auto specs = counting_events(opts, resolver, metrics);
  CountingPlan plan = make_counting_plan(opts, resolver.resolve(specs), metrics);

  ReportSink sink(opts.output, /*header=*/!opts.json);
  auto renderer = make_renderer(render_options(opts), sink.stream());
  std::vector<CountingReport> runs;
  int exit_code = 0;
  for (long long i = 0; i < opts.repeat; ++i) {
    CountingOutcome outcome = run_counting(plan, renderer.get());
    exit_code = outcome.exit_code;
    runs.push_back(std::move(outcome.report));
    if (runs.back().interrupted) break;
  }
  sink.run_ended();
  CountingReport total = runs.size() == 1 ? runs.front() : combine_runs(runs);
  if (runs.size() > 1) total.metrics = compute_metrics(total, plan.metrics);
  // As perf: with -I, the whole run's summary only when asked for (--summary).
  if (!opts.interval_ms || opts.summary) renderer->final(total);
  return sink.finish(exit_code);
}

}  // namespace pmcprof

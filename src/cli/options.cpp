// The command line: CLI11 parses, the subcommands run, errors become one line + HINT.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "pmcprof/cli/commands.hpp"
#include "pmcprof/cli/stat_options.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/number.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

namespace {

// Ranges of the numeric options. A millisecond option takes up to a year; a PID or TID up to
// the kernel's PID_MAX_LIMIT (2^22 on 64-bit).
constexpr std::uint64_t kMaxMs = 365ull * 24 * 3600 * 1000;
constexpr std::uint64_t kMaxPid = 4194304;
constexpr std::uint64_t kMaxRepeat = 1000000;
constexpr std::uint64_t kMaxBufferPages = 65536;

// A numeric option: its value goes through the one strict parser (parse_option_number), which
// names the option in its message. CLI11's own conversion would take 0x10, 1e3 or wrap
// 4294967297 to 1.
template <typename T>
CLI::Option* add_number(CLI::App& app, const std::string& flags, T& target, const char* option,
                        std::uint64_t min, std::uint64_t max, const std::string& help,
                        const char* unit = "") {
  return app
      .add_option_function<std::string>(
          flags,
          [&target, option, min, max, unit](const std::string& v) {
            target = static_cast<long long>(parse_option_number(v, option, min, max, unit));
          },
          help)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// A repeatable option that takes one value each time (-e a -e b; `--func a b` runs b): CLI11
// would print "NAME ..." for its vector, which reads as if it took several.
void one_value_each(CLI::Option* opt, const char* value_name) {
  opt->option_text(value_name)->allow_extra_args(false);
}

// json.md where an installed pmcprof has it (PREFIX/share/doc/pmcprof/json.md, PREFIX found
// from this binary's own path: /usr for the package), else where the source tree has it.
std::string json_reference() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path prefix = fs::read_symlink("/proc/self/exe", ec).parent_path();
  const fs::path bindir(PMCPROF_INSTALL_BINDIR);
  for (auto n = std::distance(bindir.begin(), bindir.end()); n > 0; --n)
    prefix = prefix.parent_path();
  const fs::path doc = prefix / PMCPROF_INSTALL_DOCDIR / "json.md";
  if (!ec && fs::is_regular_file(doc, ec)) return doc.string();
  return "docs/json.md";
}

// perf stat's aggregation, layout and metric flags (stat only: serve has no report).
void add_perf_flags(CLI::App& stat, StatOptions& o) {
  stat.add_flag("--per-thread", o.per_thread, "One line per thread (with -p, -t or system-wide)");
  stat.add_flag("--per-core", o.per_core, "One line per physical core (system-wide)");
  stat.add_flag("--per-die", o.per_die, "One line per die (system-wide)");
  stat.add_flag("--per-socket", o.per_socket, "One line per socket (system-wide)");
  stat.add_flag("--per-node", o.per_node, "One line per NUMA node (system-wide)");
  stat.add_flag("--no-merge", o.no_merge, "Accepted for perf: pmcprof never merges events");
  stat.add_flag("-B,--big-num", o.big_num, "Thousands separators in text (the default)");
  stat.add_flag("--no-big-num", o.no_big_num, "No thousands separators in text");
  one_value_each(
      stat.add_option("-M,--metrics", o.metrics,
                      "Metrics or metric groups to count, comma list ('pmcprof list --metrics')"),
      "METRICS");
  stat.add_flag("--metric-only", o.metric_only, "Print only metrics, one column each");
  stat.add_flag("--metric-no-group", o.metric_no_group,
                "Open a metric's events one by one instead of as one group");
  stat.add_flag("--metric-no-merge", o.metric_no_merge,
                "Accepted for perf: pmcprof never shares events between metrics");
  stat.add_flag("-d,--detailed", o.detailed,
                "More events: -d L1-dcache and LLC, -dd also L1-icache and TLBs, -ddd prefetches");
  add_number(stat, "-I,--interval-print", o.interval_ms, "-I", 10, kMaxMs,
             "Print deltas every MS milliseconds", "ms")
      ->type_name("MS");
  add_number(stat, "--interval-count", o.interval_count, "--interval-count", 1, kMaxRepeat,
             "Stop after N intervals (with -I)")
      ->type_name("N");
  stat.add_flag("--summary", o.summary, "With -I, print the whole run's summary at the end");
  stat.add_flag("--no-csv-summary", o.no_csv_summary,
                "With -x and --summary, no 'summary' field before the summary rows");
}

// Function mode's histograms (stat and report; serve exports its own).
void add_hist_flags(CLI::App& app, std::string& quantities, std::optional<std::string>& linear) {
  // A flag with an optional value: `--hist` alone, or `--hist=wall,instructions`; a bare
  // `--hist wall` leaves `wall` to be the command (run_stat_command refuses that).
  app.add_flag("--hist{}", quantities,
               "Per-call histograms after each function, log2 as bcc's funclatency: of wall "
               "time and every event, or --hist=QUANTITIES (wall, oncpu, events, metrics)")
      ->type_name("QUANTITIES");
  app.add_option("--hist-linear", linear,
                 "Linear histograms instead, as bpftrace's lhist: MIN,MAX,STEP in each "
                 "quantity's unit, or times as 0,2ms,100us (implies --hist)")
      ->type_name("MIN,MAX,STEP");
}

// `serve` takes stat's flags except those about a finite report (-I, -r, -x, -j, -o).
void add_stat_flags(CLI::App& stat, StatOptions& o, bool for_serve = false) {
  one_value_each(
      stat.add_option("-e,--event", o.events,
                      "Events to count: comma list, {a,b} groups, modifiers (:u :k ...), any name "
                      "libpfm4 knows, raw rNNNN"),
      "EVENTS");
  stat.add_flag("-a,--all-cpus", o.all_cpus, "Count on every online CPU (system-wide)");
  stat.add_option("-C,--cpu", o.cpu_list, "Count on these CPUs only, e.g. 0,2-3")
      ->type_name("LIST");
  add_number(stat, "-p,--pid", o.pid, "-p", 1, kMaxPid,
             "Count an existing process (all its threads)")
      ->type_name("PID");
  add_number(stat, "-t,--tid", o.tid, "-t", 1, kMaxPid, "Count one existing thread")
      ->type_name("TID");
  stat.add_flag("-A,--per-cpu,--no-aggr", o.per_cpu, "One line per CPU instead of the sum");
  if (!for_serve) add_perf_flags(stat, o);
  add_number(stat, "--timeout", o.timeout_ms, "--timeout", 1, kMaxMs,
             "Stop counting after MS milliseconds", "ms")
      ->type_name("MS");
  if (!for_serve) {
    add_number(stat, "-r,--repeat", o.repeat, "-r", 1, kMaxRepeat,
               "Run the command N times; show mean and stddev")
        ->type_name("N");
  }
  if (!for_serve) {
    stat.add_option("-x,--field-separator", o.csv_separator, "CSV output with separator SEP")
        ->type_name("SEP");
  }
  if (!for_serve) {
    stat.add_flag("-j,--json,--json-output", o.json,
                  "JSON output, pmcprof's schema (NDJSON with -I; " + json_reference() + ")");
  }
  if (!for_serve) {
    stat.add_option("-o,--output", o.output, "Write the report to FILE ('-' for stdout)")
        ->type_name("FILE");
  }
  if (!for_serve) add_hist_flags(stat, o.hist_quantities, o.hist_linear);
  one_value_each(
      stat.add_option(
          "--func", o.funcs,
          "Per-call deltas of FUNC: kernel NAME or kernel:NAME, syscall:NAME, PATH:SYMBOL, "
          "LIB:SYMBOL, :SYMBOL (with -p); repeatable"),
      "FUNC");
  one_value_each(
      stat.add_option(
          "--region", o.regions,
          "Per region from START to END in a thread, measured like a call: "
          "[NAME=]START,END, each a usdt:BINARY:PROVIDER:NAME, PATH:SYMBOL[+OFFSET], "
          "NAME%return, syscall:NAME, kernel function or tracepoint:CAT:NAME; repeatable"),
      "REGION");
  stat.add_flag("--python", o.python,
                "Per Python function (file and name): a --region between python's "
                "function__entry and function__return probes, --by arg0:str,arg1:str");
  add_number(stat, "--max-keys", o.max_keys, "--max-keys", 1, 4096,
             "--by argN: keys per function or region; calls of further keys are folded into "
             "one 'other' row (default 64)")
      ->type_name("N");
  add_number(stat, "--top", o.top, "--top", 1, 1000000,
             "--by: show each function's N largest keys (by their first event's total, else wall "
             "time); the rest are folded into one 'other (K keys)' row")
      ->type_name("N");
  stat.add_option("--backend", o.backend, "Kernel function probes: auto, fentry or kprobe")
      ->type_name("NAME");
  stat.add_option("--aggregate", o.aggregate,
                  "Where per-call results are summed: auto, kernel, stream or both")
      ->type_name("WHERE");
  stat.add_option("--by", o.by,
                  "Break --func/--region results down by pid, comm, cpu, cgroup, or the start "
                  "point's arguments: argN (integer), argN:str (string), two as arg0:str,arg1")
      ->type_name("KEY");
  stat.add_flag("--no-sched-hook", o.no_sched_hook,
                "No sched_switch hook: lowest overhead, wrong for functions that sleep or migrate");
  stat.add_flag("--syscall-tracepoints", o.syscall_tracepoints,
                "Probe each syscall through its own syscalls:sys_enter_NAME/sys_exit_NAME "
                "tracepoints, not by number at the raw ones: other syscalls pay less, the run's "
                "end waits ~30 ms per tracepoint");
  add_number(stat, "--buffer-pages", o.buffer_pages, "--buffer-pages", 1, kMaxBufferPages,
             "Per-CPU pages of the per-call stream's ring (power of two)")
      ->type_name("N");
  stat.add_flag("--no-compensate", o.no_compensate,
                "Keep the probe's own calibrated cost in per-call values (it is still reported)");
  stat.add_option("--thread-state", o.thread_state,
                  "Where --func keeps per-thread state: auto, task-storage or hash")
      ->type_name("WHERE");
  stat.add_flag("-v,--verbose", o.verbose, "Say what is opened and attached");
  stat.add_flag("-q,--quiet", o.quiet, "Print nothing but the report (and errors)");
  one_value_each(
      stat.add_option("-G,--cgroup", o.cgroups,
                      "Count per cgroup (v2; paths under its mount or absolute; comma list); with "
                      "--func, count only calls from these cgroups"),
      "CGROUPS");
  one_value_each(
      stat.add_option("--for-each-cgroup", o.for_each_cgroup,
                      "Count every cgroup below a directory, or matching a regular expression"),
      "DIR_OR_REGEX");
  stat.add_option("--cgroup-backend", o.cgroup_backend,
                  "Per-cgroup counting: auto, fd (perf_event_open per cgroup) or bpf")
      ->type_name("NAME");
}

// A flag with an optional value reads --hist[=QUANTITIES] (its type name) in --help, not
// CLI11's --hist{} (the default value between braces).
class OptionalValueNames : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, positional);
    if (const auto braces = name.find("{}"); braces != std::string::npos)
      name.replace(braces, 2, "[=" + opt->get_type_name() + "]");
    return name;
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_name(false, true).find("{}") != std::string::npos) return {};  // in the name
    return CLI::Formatter::make_option_opts(opt);
  }
};

// stat's usage line names the command it runs, as perf stat's does: CLI11 cannot know that
// the words it leaves after the options (prefix_command) are one.
class CommandUsage : public OptionalValueNames {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string usage = CLI::Formatter::make_usage(app, std::move(name));
    const std::size_t end = usage.find_last_not_of('\n') + 1;
    usage.insert(end, " [[--] COMMAND [ARG...]]");
    return usage;
  }
};

// `report`: the saved run, and the formats of stat's report.
void add_report_flags(CLI::App& report, ReportOptions& o) {
  report
      .add_option("FILE", o.input,
                  "The saved run: what 'pmcprof stat -j -o FILE' wrote (a report, or -I's "
                  "NDJSON); '-' reads standard input")
      ->type_name("");
  report.add_option("-i,--input", o.input, "The saved run, as perf report -i (or give FILE)")
      ->type_name("FILE");
  report.add_option("-x,--field-separator", o.csv_separator, "CSV output with separator SEP")
      ->type_name("SEP");
  report.add_flag("-j,--json", o.json, "JSON output (pmcprof's schema, as stat -j wrote it)");
  report.add_flag("--prometheus", o.prometheus,
                  "The /metrics text serve would have served at the run's end (Prometheus text "
                  "format, for a textfile collector or a push gateway)");
  report.add_flag("--no-big-num", o.no_big_num, "No thousands separators in text");
  add_hist_flags(report, o.hist_quantities, o.hist_linear);
}

// `diff`: the two saved runs, the output format, and the rule's two numbers.
void add_diff_flags(CLI::App& diff, DiffOptions& o) {
  diff.add_option("BASELINE", o.baseline,
                  "The baseline run: what 'pmcprof stat -j -o FILE' wrote ('-' reads standard "
                  "input)")
      ->type_name("");
  diff.add_option("NEW", o.fresh, "The new run, compared with the baseline ('-' as well)")
      ->type_name("");
  diff.add_option("-x,--field-separator", o.csv_separator,
                  "CSV output with separator SEP: a header line, then one row per quantity")
      ->type_name("SEP");
  diff.add_flag("-j,--json", o.json, "JSON output (pmcprof's schema, type \"diff\")");
  diff.add_option("--threshold", o.threshold_pct,
                  "A change is beyond the noise when its test says so AND its shift is at least "
                  "PCT % of the baseline (default 5)")
      ->type_name("PCT");
  diff.add_option("--alpha", o.alpha,
                  "The significance level of the test (Mann-Whitney U on per-call buckets; "
                  "Welch's t on -r runs; default 0.001)")
      ->type_name("P");
}

// An error line never echoes a whole argument: the parsers quote arguments shortened. A
// message of pmcprof's own past kMaxErrorLine characters (a kernel's reasons for refusing a
// probe run to several lines) is cut only where that helps, on a terminal without -v, and says
// how to see the rest; with -v, or when standard error is a file or a pipe, it is printed
// whole.
constexpr std::size_t kMaxErrorLine = 300;

void print_error(const Error& e, bool verbose) {
  const bool whole = verbose || ::isatty(STDERR_FILENO) != 1;
  const auto line = [whole](std::string_view what) {
    return whole ? escape_bytes(what)
                 : shortened(what, kMaxErrorLine, "-v or 2>FILE prints it whole");
  };
  std::cerr << "pmcprof: " << line(e.what()) << "\n";
  if (!e.hint().empty()) std::cerr << "HINT: " << line(e.hint()) << "\n";
}

// Turns CLI11's parse errors into pmcprof's one-line form.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
  // CLI11's messages echo what was typed, unquoted: always cut.
  std::cerr << "pmcprof: " << shortened(e.what(), kMaxErrorLine) << "\n";
  std::cerr << "HINT: see 'pmcprof --help' or 'pmcprof SUBCOMMAND --help'\n";
  return kExitUsage;
}

// The first word when it names no subcommand, as perf and git answer it: `help [COMMAND]`
// prints the help, anything else is refused in one line with the closest commands. nullopt
// when the word is a subcommand (or an option): CLI11 parses those.
std::optional<int> first_word(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return std::nullopt;
  const std::string word = argv[1];
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), word) != names.end()) return std::nullopt;
  if (word == "help") {
    const CLI::App* about = &app;
    if (argc >= 3) {
      try {
        about = app.get_subcommand(argv[2]);
      } catch (const CLI::OptionNotFound&) {
        about = &app;
      }
    }
    std::cout << about->help();
    return 0;
  }
  std::cerr << "pmcprof: " << quote(word) << " is not a pmcprof command\n";
  std::cerr << "HINT: " << did_you_mean(closest_matches(word, names)) << "the commands are "
            << join(names, ", ") << "; see 'pmcprof --help'\n";
  return kExitUsage;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"pmcprof: hardware and software counters, system-wide or per function, via eBPF",
               "pmcprof"};
  app.set_version_flag("-V,--version", std::string("pmcprof ") + PMCPROF_VERSION);
  app.require_subcommand(1);

  StatOptions stat_opts;
  CLI::App* stat = app.add_subcommand("stat", "Count events for a command, tasks or CPUs");
  add_stat_flags(*stat, stat_opts);
  // Everything after the first positional (or after --) is the command to run.
  stat->prefix_command();
  stat->formatter(std::make_shared<CommandUsage>());
  stat->footer(
      "COMMAND, the first word after the options (or after --), is run and counted until it "
      "exits. Each option takes one value: repeat it for more (--func a --func b).");

  ListOptions list_opts;
  CLI::App* list = app.add_subcommand(
      "list", "List the events stat takes and whether this machine counts them, by section");
  list->add_option("filter", list_opts.filter,
                   "Show only names or descriptions containing this, names a glob matches "
                   "('sched:*'), or a section: hw, sw, cache, pmu, tracepoint");
  list->add_flag("--all", list_opts.all_pmus,
                 "Include libpfm4's PMUs that are not present on this machine");
  list->add_flag("-j,--json", list_opts.json, "JSON output");
  list->add_flag("--names", list_opts.names_only, "One event name a line (for completion)");
  list->add_flag("--metrics", list_opts.metrics,
                 "The metrics of -M: formula, events, whether this machine can count them");
  list->add_flag("--metricgroups", list_opts.metric_groups, "The metric groups of -M");

  ServeOptions serve_opts;
  CLI::App* serve = app.add_subcommand(
      "serve", "Count continuously and serve /metrics to Prometheus (stat's event options)");
  add_stat_flags(*serve, serve_opts.stat, /*for_serve=*/true);
  serve
      ->add_option("--listen", serve_opts.listen,
                   "ADDR:PORT to serve on (default 127.0.0.1:9464; other addresses only when "
                   "given)")
      ->type_name("ADDR:PORT");
  serve
      ->add_option("--web.config.file", serve_opts.web_config_file,
                   "TLS and basic authentication: a Prometheus exporter-toolkit web config (YAML)")
      ->type_name("FILE");

  DoctorOptions doctor_opts;
  CLI::App* doctor = app.add_subcommand("doctor", "Probe what this kernel allows");
  doctor->add_flag("-j,--json", doctor_opts.json, "JSON output");

  ReportOptions report_opts;
  CLI::App* report = app.add_subcommand(
      "report", "Render a saved run (stat -j) again: text, CSV, JSON or /metrics text");
  add_report_flags(*report, report_opts);
  report->formatter(std::make_shared<OptionalValueNames>());

  DiffOptions diff_opts;
  CLI::App* diff = app.add_subcommand(
      "diff", "Compare two saved runs, per function and quantity: what changed beyond the noise");
  add_diff_flags(*diff, diff_opts);

  // The stat command's words reach stat->remaining() only if the top level lets them pass.
  app.allow_extras();
  if (const auto status = first_word(app, argc, argv)) return *status;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e);
  } catch (const Error& e) {  // a numeric option's value, from parse_option_number
    print_error(e, /*verbose=*/false);
    return e.exit_code();
  }

  try {
    if (stat->parsed()) {
      stat_opts.events_given = stat->count("--event") > 0;
      stat_opts.hist = stat->count("--hist") > 0;
      // Before "--": a word a bare --hist may have been meant to take.
      stat_opts.command_before_dashes = !stat->remaining().empty();
      // CLI11 leaves the words after "--" on the parent app, other words on the subcommand.
      stat_opts.command = stat->remaining();
      // Words before any "--" stay on the subcommand: one that looks like a flag is a flag
      // pmcprof does not know, not a command (after "--" anything goes).
      if (!stat_opts.command.empty() && stat_opts.command.front().size() > 1 &&
          stat_opts.command.front()[0] == '-')
        throw UserError(
            "unknown option " + quote(stat_opts.command.front()) + " for 'pmcprof stat'",
            "see 'pmcprof stat --help'; put the command after --");
      stat_opts.subcommand_word =
          !stat_opts.command.empty() &&
          (stat_opts.command.front() == "record" || stat_opts.command.front() == "report");
      if (stat_opts.command.empty()) stat_opts.command = app.remaining();
      if (!stat_opts.command.empty() && stat_opts.command.front() == "--")
        stat_opts.command.erase(stat_opts.command.begin());
      return run_stat_command(stat_opts);
    }
    if (serve->parsed()) {
      serve_opts.stat.events_given = serve->count("--event") > 0;
      serve_opts.stat.command = app.remaining();  // words after "--": refused by serve
      return run_serve_command(serve_opts);
    }
    if (list->parsed()) return run_list_command(list_opts, std::cout);
    if (doctor->parsed()) return run_doctor_command(doctor_opts, std::cout);
    if (report->parsed()) {
      report_opts.hist = report->count("--hist") > 0;
      return run_report_command(report_opts, std::cout);
    }
    if (diff->parsed()) return run_diff_command(diff_opts, std::cout);
  } catch (const Error& e) {
    print_error(e, stat_opts.verbose || serve_opts.stat.verbose);
    return e.exit_code();
  }
  return kExitUsage;
}

}  // namespace pmcprof

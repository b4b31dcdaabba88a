// `pmcprof stat` flag validation, and CLI errors through run_cli. Only inputs that fail
// before any counter is opened: a valid command line would really count.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "pmcprof/cli/commands.hpp"
#include "pmcprof/cli/stat_options.hpp"
#include "pmcprof/platform/system.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;

namespace {

StatOptions system_wide() {
  StatOptions o;
  o.all_cpus = true;
  return o;
}

StatOptions with_command() {
  StatOptions o;
  o.command = {"true"};
  return o;
}

void expect_invalid(const StatOptions& o, std::initializer_list<std::string> needles) {
  try {
    validate_stat_options(o);
    ADD_FAILURE() << "options accepted";
  } catch (const UserError& e) {
    const std::string what = e.what();
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << what;
    EXPECT_FALSE(e.hint().empty()) << what;
    EXPECT_EQ(e.exit_code(), kExitUsage) << what;
  }
}

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

// Runs run_cli on {"pmcprof", args...}, capturing std::cout and std::cerr.
CliResult run(std::vector<std::string> args) {
  args.insert(args.begin(), "pmcprof");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  int code = run_cli(static_cast<int>(args.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {code, out.str(), err.str()};
}

std::vector<std::string> lines_of(const std::string& s) {
  auto lines = split(s, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

}  // namespace

TEST(StatOptions, ValidCombinationsAccepted) {
  EXPECT_NO_THROW(validate_stat_options(system_wide()));
  EXPECT_NO_THROW(validate_stat_options(with_command()));
  StatOptions a = system_wide();
  a.per_cpu = true;
  a.interval_ms = 100;
  a.timeout_ms = 1000;
  a.json = true;
  EXPECT_NO_THROW(validate_stat_options(a));
  StatOptions c;
  c.cpu_list = "0";
  c.per_cpu = true;
  c.csv_separator = ";";
  EXPECT_NO_THROW(validate_stat_options(c));
  StatOptions r = with_command();
  r.repeat = 3;
  r.events = {"cycles", "instructions"};
  r.events_given = true;
  EXPECT_NO_THROW(validate_stat_options(r));
  StatOptions p;
  p.pid = 1;
  EXPECT_NO_THROW(validate_stat_options(p));
  StatOptions t;
  t.tid = 1;
  t.interval_ms = 10;  // the minimum
  EXPECT_NO_THROW(validate_stat_options(t));
}

TEST(StatOptions, IntervalTooShort) {
  for (long long ms : {0LL, 5LL, -1LL}) {
    StatOptions o = system_wide();
    o.interval_ms = ms;
    expect_invalid(o, {"-I " + std::to_string(ms), "at least 10 ms"});
  }
}

TEST(StatOptions, TimeoutMustBePositive) {
  StatOptions o = system_wide();
  o.timeout_ms = 0;
  expect_invalid(o, {"--timeout 0"});
}

TEST(StatOptions, RepeatAtLeastOne) {
  StatOptions o = with_command();
  o.repeat = 0;
  expect_invalid(o, {"-r 0"});
}

TEST(StatOptions, RepeatNeedsCommand) {
  StatOptions o = system_wide();
  o.repeat = 3;
  expect_invalid(o, {"-r needs a command"});
}

TEST(StatOptions, RepeatWithInterval) {
  StatOptions o = with_command();
  o.repeat = 3;
  o.interval_ms = 100;
  expect_invalid(o, {"-r and -I"});
}

TEST(StatOptions, PidWithAllCpus) {
  StatOptions o = system_wide();
  o.pid = 1;
  expect_invalid(o, {"-p/-t", "-a/-C"});
}

TEST(StatOptions, PidAndTid) {
  StatOptions o;
  o.pid = 1;
  o.tid = 2;
  expect_invalid(o, {"either -p or -t"});
}

// As perf: -p with a command counts the process while the command runs.
TEST(StatOptions, PidWithCommandCountsThePid) {
  StatOptions o = with_command();
  o.pid = 1;
  EXPECT_NO_THROW(validate_stat_options(o));
  o.funcs = {"syscall:getppid"};
  expect_invalid(o, {"-p", "command"});
}

TEST(StatOptions, NonPositivePid) {
  StatOptions o;
  o.pid = 0;
  expect_invalid(o, {"-p 0"});
}

TEST(StatOptions, PerCpuNeedsSystemWide) {
  StatOptions o = with_command();
  o.per_cpu = true;
  expect_invalid(o, {"-A", "-a or -C"});
}

// No target at all is the whole system (run_stat_command adds -a, as perf does); aggregations
// that need CPUs or threads still say what they need.
TEST(StatOptions, AggregationNeedsItsTarget) {
  StatOptions o = with_command();
  o.per_core = true;
  expect_invalid(o, {"--per-core", "-a or -C"});
  o.per_core = false;
  o.per_thread = true;
  expect_invalid(o, {"--per-thread", "-p, -t"});
  o = system_wide();
  o.per_socket = o.per_node = true;
  expect_invalid(o, {"give one of"});
  o = system_wide();
  o.interval_count = 3;
  expect_invalid(o, {"--interval-count needs -I"});
  o = with_command();
  o.command = {"record", "-o", "-", "true"};
  o.subcommand_word = true;
  expect_invalid(o, {"stat record", "does not implement"});
}

TEST(StatOptions, JsonAndCsv) {
  StatOptions o = system_wide();
  o.json = true;
  o.csv_separator = ",";
  expect_invalid(o, {"-j and -x"});
}

TEST(StatOptions, EmptyCsvSeparator) {
  StatOptions o = system_wide();
  o.csv_separator = "";
  expect_invalid(o, {"-x needs a separator"});
}

TEST(StatOptions, EmptyEventList) {
  StatOptions o = system_wide();
  o.events = {""};
  o.events_given = true;
  expect_invalid(o, {"empty event list"});
  o.events = {" ", ""};
  expect_invalid(o, {"empty event list"});
}

TEST(Cli, UnknownEventIsOneLinePlusHint) {
  CliResult r = run({"stat", "-e", "cyclez", "-a", "--timeout", "10"});
  EXPECT_EQ(r.code, kExitUsage);
  auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_EQ(lines[0], "pmcprof: unknown event 'cyclez'");
  EXPECT_EQ(lines[1].rfind("HINT: ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("cycles"), std::string::npos) << lines[1];
  EXPECT_EQ(r.out, "");
}

TEST(Cli, OfflineCpu) {
  auto online = online_cpus();
  if (std::find(online.begin(), online.end(), 99) != online.end())
    GTEST_SKIP() << "CPU 99 is online here";
  CliResult r = run({"stat", "-C", "99", "-a", "--timeout", "10"});
  EXPECT_EQ(r.code, kExitUsage);
  auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_EQ(lines[0].rfind("pmcprof: CPU 99 is not online", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("HINT: ", 0), 0u) << lines[1];
}

TEST(Cli, UnterminatedGroup) {
  CliResult r = run({"stat", "-e", "{cycles", "-a"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("pmcprof: unterminated group"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("missing '}'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HINT: "), std::string::npos) << r.err;
}

TEST(Cli, InvalidIntervalBeforeCounting) {
  CliResult r = run({"stat", "-a", "-I", "5"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(lines_of(r.err).at(0),
            "pmcprof: invalid -I '5': out of range (10 to 31,536,000,000 ms)");
}

// Numbers CLI11 would have converted (hex, wrap-around, empty) are refused by the one strict
// parser, naming the option.
TEST(Cli, NumbersAreStrictDecimal) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"stat", "-p", "4294967297", "-e", "task-clock"},
       "pmcprof: invalid -p '4294967297': out of range (1 to 4,194,304)"},
      {{"stat", "-t", "0x10", "-e", "task-clock"},
       "pmcprof: invalid -t '0x10': not a decimal number"},
      {{"stat", "-a", "-I", "18446744073709551615"},
       "pmcprof: invalid -I '18446744073709551615': out of range (10 to 31,536,000,000 ms)"},
      {{"stat", "-a", "-I", ""}, "pmcprof: -I needs a value"},
      {{"stat", "-a", "--timeout", "0x10"},
       "pmcprof: invalid --timeout '0x10': not a decimal number"},
      {{"stat", "-a", "--timeout", ""}, "pmcprof: --timeout needs a value"},
      {{"stat", "-r", "0x10", "--", "true"}, "pmcprof: invalid -r '0x10': not a decimal number"},
      {{"stat", "--func", "syscall:getppid", "--buffer-pages", "1e3", "-a"},
       "pmcprof: invalid --buffer-pages '1e3': not a decimal number"},
  };
  for (const auto& [args, first] : cases) {
    CliResult r = run(args);
    EXPECT_EQ(r.code, kExitUsage) << first;
    auto lines = lines_of(r.err);
    ASSERT_EQ(lines.size(), 2u) << r.err;
    EXPECT_EQ(lines[0], first);
    EXPECT_EQ(lines[1].rfind("HINT: ", 0), 0u) << lines[1];
  }
}

TEST(Cli, ErrorLinesNeverEchoWholeArguments) {
  const std::string huge(100000, 'x');
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"stat", "-e", huge, "--", "true"},
                                             {"stat", "--" + huge, "-a"},
                                             {"stat", "-a", "-C", huge},
                                             {"stat", "--func", "syscall:" + huge, "-a"},
                                             {"stat", "-a", "--for-each-cgroup", huge},
                                             {"serve", "--listen", huge}}) {
    CliResult r = run(args);
    EXPECT_NE(r.code, 0);
    for (const auto& line : lines_of(r.err)) EXPECT_LT(line.size(), 400u) << line.substr(0, 200);
  }
}

TEST(Cli, UnknownStatFlagIsNotACommand) {
  CliResult r = run({"stat", "-a", "--bogus-flag"});
  EXPECT_EQ(r.code, kExitUsage);
  auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_EQ(lines[0], "pmcprof: unknown option '--bogus-flag' for 'pmcprof stat'");
  EXPECT_EQ(lines[1].rfind("HINT: ", 0), 0u) << lines[1];
}

TEST(Cli, UnknownSubcommand) {
  CliResult r = run({"bogus"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err.rfind("pmcprof: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("HINT: "), std::string::npos) << r.err;
}

TEST(Cli, NoSubcommand) {
  CliResult r = run({});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err.rfind("pmcprof: ", 0), 0u) << r.err;
}

TEST(Cli, NonNumericInterval) {
  CliResult r = run({"stat", "-a", "-I", "soon"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err.rfind("pmcprof: ", 0), 0u) << r.err;
}

// --hist draws function mode's per-call histograms: without --func it would be ignored.
TEST(Cli, HistIsForFunctionMode) {
  for (const auto& [flag, name] : std::vector<std::pair<std::string, std::string>>{
           {"--hist", "--hist"},
           {"--hist=wall", "--hist"},
           {"--hist-linear=0,1ms,100us", "--hist-linear"}}) {
    CliResult r = run({"stat", "-a", flag, "--timeout", "10"});
    EXPECT_EQ(r.code, kExitUsage) << flag;
    auto lines = lines_of(r.err);
    ASSERT_EQ(lines.size(), 2u) << r.err;
    EXPECT_EQ(lines[0],
              "pmcprof: " + name + " applies to function mode only: add --func or --region");
    EXPECT_EQ(lines[1].rfind("HINT: ", 0), 0u) << lines[1];
  }
  // serve exports histograms of its own: no --hist there.
  CliResult serve = run({"serve", "--hist", "--func", "syscall:getppid"});
  EXPECT_EQ(serve.code, kExitUsage);
}

TEST(Cli, HistHelpShowsTheOptionalValue) {
  CliResult r = run({"stat", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("  --hist[=QUANTITIES]  "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("{}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  --hist-linear MIN,MAX,STEP  "), std::string::npos) << r.out;
}

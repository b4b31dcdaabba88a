// Issue 14: bad input and hostile bytes never crash, hang or lose a report silently. One test
// per defect class: the strict number parser, shortened quotes, repeated modifiers and
// duplicates, bounded regular expressions, renderers on bytes that are not UTF-8, checked
// writes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "pmcprof/counters/cgroups.hpp"
#include "pmcprof/events/event_spec.hpp"
#include "pmcprof/platform/cpu_list.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/report/func_report.hpp"
#include "pmcprof/report/number_format.hpp"
#include "pmcprof/report/prometheus.hpp"
#include "pmcprof/report/render.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/number.hpp"
#include "pmcprof/util/output.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;

namespace {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST(Number, DecimalInRange) {
  EXPECT_EQ(parse_option_number("1", "-p", 1, 10), 1u);
  EXPECT_EQ(parse_option_number("010", "-p", 1, 10), 10u);  // decimal, not octal
  EXPECT_EQ(parse_option_number("18446744073709551615", "-x", 0, ~0ull), ~0ull);
}

TEST(Number, RefusesWhatCli11Took) {
  EXPECT_EQ(error_of([] { parse_option_number("0x10", "-p", 1, 4194304); }),
            "invalid -p '0x10': not a decimal number");
  EXPECT_EQ(error_of([] { parse_option_number("4294967297", "-p", 1, 4194304); }),
            "invalid -p '4294967297': out of range (1 to 4,194,304)");
  EXPECT_EQ(error_of([] { parse_option_number("", "--timeout", 1, 10, "ms"); }),
            "--timeout needs a value");
  EXPECT_EQ(error_of([] { parse_option_number("18446744073709551616", "-I", 10, 20, "ms"); }),
            "invalid -I '18446744073709551616': out of range (10 to 20 ms)");
  for (const char* bad : {"-1", "+1", " 1", "1 ", "1e3", "1.0", "1k", "١"})
    EXPECT_NE(error_of([&] { parse_option_number(bad, "-r", 1, 100); }).find("-r"),
              std::string::npos)
        << bad;
  EXPECT_NE(error_of([] { parse_option_number("0", "-r", 1, 100); }).find("out of range"),
            std::string::npos);
}

TEST(Number, LongValueIsQuotedShort) {
  const std::string msg = error_of([] { parse_option_number(repeat("9", 5000), "-I", 10, 20); });
  EXPECT_LT(msg.size(), 160u) << msg;
  EXPECT_NE(msg.find("(5,000 characters)"), std::string::npos) << msg;
}

TEST(Quote, ShortensAndEscapes) {
  EXPECT_EQ(quote("abc"), "'abc'");
  EXPECT_EQ(quote(repeat("x", 5000), 4), "'xxxx\u2026' (5,000 characters)");
  EXPECT_EQ(quote("a\xff\n"), "'a\\xFF\\x0A'");
  EXPECT_EQ(shortened(repeat("é", 10), 3), "ééé\u2026 (10 characters)");
  EXPECT_EQ(shortened(repeat("x", 1000), 2, "-v prints it whole"),
            "xx\u2026 (1,000 characters; -v prints it whole)");
  EXPECT_EQ(shortened("xx", 2, "-v prints it whole"), "xx");
}

TEST(Utf8, ValidatesAndEscapes) {
  EXPECT_TRUE(is_valid_utf8("plain é € 𝄞"));
  for (const char* bad : {"\xff", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80"})
    EXPECT_FALSE(is_valid_utf8(bad)) << bad;
  // A UTF-8 name the kernel cut at 15 bytes: the dangling lead byte is escaped, the rest kept.
  const std::string comm = std::string("éééééééé").substr(0, 15);
  EXPECT_EQ(escape_bytes(comm), "ééééééé\\xC3");
  EXPECT_EQ(escape_bytes("tab\there", true), "tab\\x09here");
  EXPECT_EQ(escape_bytes("tab\there", false), "tab\there");
  EXPECT_EQ(escape_bytes("dev-disk-by\\x2duuid"), "dev-disk-by\\x2duuid");  // systemd's own
  for (int b = 0; b < 256; ++b) {
    const std::string s(1, static_cast<char>(b));
    EXPECT_TRUE(is_valid_utf8(escape_bytes(s))) << b;
  }
}

TEST(EventList, RepeatedModifiersRefused) {
  EXPECT_NE(error_of([] { parse_event_list("task-clock:uu"); }).find("modifier 'u' repeated"),
            std::string::npos);
  const std::string msg = error_of([] { parse_event_list("task-clock:" + repeat("u", 5000)); });
  EXPECT_LT(msg.size(), 200u) << msg;
  EXPECT_NE(msg.find("5,011 characters"), std::string::npos) << msg;
  EXPECT_EQ(parse_event_list("cycles:ppp").at(0).events.at(0).modifiers.precise, 3);
  // A group modifier the event already has is not repeated.
  EXPECT_EQ(parse_event_list("{task-clock:u,page-faults}:u").at(0).events.at(0).text,
            "task-clock:u");
}

TEST(EventList, DuplicatesRefused) {
  EXPECT_EQ(error_of([] { parse_event_list("task-clock,page-faults,task-clock"); }),
            "event 'task-clock' is listed twice in -e");
  EXPECT_NE(error_of([] {
              parse_event_list("{task-clock,page-faults}:u,task-clock:u");
            }).find("listed twice"),
            std::string::npos);
  EXPECT_EQ(parse_event_list("task-clock,task-clock:u").size(), 2u);
}

TEST(CpuList, LongInputQuotedShort) {
  const std::string msg = error_of([] { parse_cpu_list(repeat("1", 100000)); });
  EXPECT_LT(msg.size(), 300u) << msg;
}

TEST(FuncTargets, LongNamesRefusedBeforeTheFilesystem) {
  const std::string msg = error_of([] { parse_func_target("syscall:" + repeat("a", 5000)); });
  EXPECT_NE(msg.find("too long"), std::string::npos) << msg;
  EXPECT_LT(msg.size(), 200u) << msg;
  EXPECT_NE(error_of([] { parse_func_target(repeat("k", 600)); }).find("too long"),
            std::string::npos);
}

TEST(FuncTargets, SameFunctionTwiceRefused) {
  auto targets = [](std::initializer_list<const char*> texts) {
    std::vector<FuncTarget> out;
    for (const char* t : texts) out.push_back(parse_func_target(t));
    return out;
  };
  EXPECT_EQ(error_of([&] {
              check_distinct_targets(targets({"./w:f", "./w:f"}));
            }),
            "--func './w:f' is given twice");
  EXPECT_EQ(error_of([&] {
              check_distinct_targets(targets({"syscall:getppid", "syscall:sys_getppid"}));
            }),
            "--func 'syscall:getppid' and 'syscall:sys_getppid' name the same function");
  EXPECT_NE(error_of([&] {
              check_distinct_targets(targets({"vfs_read", "kernel:vfs_read"}));
            }).find("same function"),
            std::string::npos);
  check_distinct_targets(targets({"syscall:getppid", "getppid", "libc:getppid"}));
}

TEST(CgroupPattern, DeepNestingNeitherCrashesNorRecurses) {
  // std::regex overflowed the stack at ~20,000 levels; within the length limit RE2 parses
  // any nesting without recursion.
  const std::string deep = repeat("(", 500) + "a" + repeat(")", 500);
  EXPECT_TRUE(CgroupPattern(deep).search("/a"));
  const std::string msg = error_of([] { CgroupPattern(repeat("(", 20000) + repeat(")", 20000)); });
  EXPECT_NE(msg.find("40,000 characters"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at most 1024"), std::string::npos) << msg;
}

TEST(CgroupPattern, MatchingIsBounded) {
  // Backtracking engines take exponential time on these; RE2 is linear in the path.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(CgroupPattern("(a*)*(a*)*(a*)*b").search("/" + repeat("a", 4000)));
  EXPECT_TRUE(CgroupPattern(repeat("a?", 300) + repeat("a", 300)).search(repeat("a", 300)));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  // Nested counted repetitions would build a huge program: refused, not allocated.
  EXPECT_NE(
      error_of([] { CgroupPattern("((a{1,100}){1,100}){1,100}"); }).find("regular expression"),
      std::string::npos);
  EXPECT_NE(error_of([] { CgroupPattern("(("); }).find("missing )"), std::string::npos);
  EXPECT_TRUE(CgroupPattern("^/user\\.slice/.*\\.scope$").search("/user.slice/s-1.scope"));
}

TEST(CgroupMerge, SameIdOnce) {
  std::vector<Cgroup> cgs(3);
  cgs[0].id = 7, cgs[0].path = "/a";
  cgs[1].id = 8, cgs[1].path = "/b";
  cgs[2].id = 7, cgs[2].path = "/a";
  merge_duplicate_cgroups(cgs);
  ASSERT_EQ(cgs.size(), 2u);
  EXPECT_EQ(cgs[0].path, "/a");
  EXPECT_EQ(cgs[1].path, "/b");
}

namespace {

CountingReport hostile_report() {
  CountingReport r;
  r.target = "/bin/true \xff \"q\"";
  CounterRow row;
  row.event = "task-clock";
  row.unit = "ns";
  row.status = CounterStatus::ok;
  row.value = row.raw_value = 1000000;
  row.enabled_ns = row.running_ns = 1000000;
  row.running_pct = 100;
  row.cgroup = "/shop/a,b\n\xff\"x\"";
  row.cgroup_id = 42;
  r.counters.push_back(row);
  return r;
}

FunctionReport hostile_func_report() {
  FunctionReport r;
  r.target = "w \xff";
  r.aggregation = "stream";
  r.by = "comm";
  FuncRow f;
  f.function = "./w:f";
  f.backend = "uprobe";
  f.by_value = std::string("éééééééé").substr(0, 15);  // cut by the kernel at 15 bytes
  f.calls = 1;
  f.wall.status = f.oncpu.status = CounterStatus::ok;
  FuncEventRow e;
  e.event = "task-clock";
  e.unit = "ns";
  e.per_call.status = CounterStatus::ok;
  f.events.push_back(e);
  r.functions.push_back(f);
  FuncRow g = f;
  g.by_value = "a,b\nc";
  r.functions.push_back(g);
  return r;
}

}  // namespace

TEST(HostileBytes, JsonIsValidUtf8) {
  const auto j = nlohmann::json::parse(render_json(hostile_report()));
  EXPECT_EQ(j["target"], "/bin/true \\xFF \"q\"");
  EXPECT_EQ(j["counters"][0]["cgroup"], "/shop/a,b\n\\xFF\"x\"");
  const auto f = nlohmann::json::parse(render_func_json(hostile_func_report()));
  EXPECT_EQ(f["functions"][0]["comm"], "ééééééé\\xC3");
}

TEST(HostileBytes, CsvKeepsItsColumns) {
  const std::string csv = render_csv(hostile_report(), ",");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1) << csv;
  EXPECT_NE(csv.find(",\"/shop/a,b\\x0A\\xFF\"\"x\"\"\",42,"), std::string::npos) << csv;
  const std::string fcsv = render_func_csv(hostile_func_report(), ";");
  EXPECT_EQ(std::count(fcsv.begin(), fcsv.end(), '\n'), 6) << fcsv;  // 3 rows per function
  EXPECT_NE(fcsv.find(";ééééééé\\xC3;"), std::string::npos) << fcsv;
  EXPECT_NE(fcsv.find(";a,b\\x0Ac;"), std::string::npos) << fcsv;
  EXPECT_EQ(csv_field("a;b", ";"), "\"a;b\"");
  EXPECT_EQ(csv_field("plain", ","), "plain");
}

TEST(HostileBytes, TextEscapesControlsAndBadBytes) {
  const std::string text = render_text(hostile_report());
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_NE(text.find("/shop/a,b\\x0A\\xFF\"x\""), std::string::npos) << text;
  const std::string ftext = render_func_text(hostile_func_report());
  EXPECT_TRUE(is_valid_utf8(ftext));
  EXPECT_NE(ftext.find("comm ééééééé\\xC3"), std::string::npos) << ftext;
}

TEST(HostileBytes, PrometheusLabelsValid) {
  PrometheusStatus st;
  st.mode = "function";
  const FunctionReport report = hostile_func_report();
  const std::string page = render_prometheus(nullptr, &report, st);
  EXPECT_TRUE(is_valid_utf8(page));
  EXPECT_NE(page.find("comm=\"ééééééé\\\\xC3\""), std::string::npos) << page;
  EXPECT_NE(page.find("comm=\"a,b\\\\x0Ac\""), std::string::npos) << page;
  EXPECT_EQ(prometheus_escape("a\"b\\c\n"), "a\\\"b\\\\c\\\\x0A");
}

TEST(CheckedOutput, FullDiskIsAnError) {
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "no /dev/full";
  CheckedOutput out(fd, true);
  int seen = 0;
  out.set_on_error([&](int e) { seen = e; });
  out << "report\n";
  out.flush();
  EXPECT_EQ(seen, ENOSPC);
  EXPECT_EQ(out.close(), ENOSPC);
}

TEST(CheckedOutput, ClosedPipeIsAnError) {
  signal(SIGPIPE, SIG_IGN);  // as pmcprof's main does
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  ::close(p[0]);
  CheckedOutput out(p[1], true);
  out << "x" << std::flush;
  EXPECT_EQ(out.close(), EPIPE);
}

TEST(CheckedOutput, EverythingWrittenIsNoError) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  {
    CheckedOutput out(p[1], true);
    out << std::string(100000, 'x').substr(0, 1000) << '\n';
    EXPECT_EQ(out.close(), 0);
  }
  char buf[2000];
  EXPECT_EQ(::read(p[0], buf, sizeof(buf)), 1001);
  ::close(p[0]);
}

// Regions and keys from arguments, without a kernel: --region and its points, usdt: and
// tracepoint: targets, --by argN, tracepoint formats, the BPF cookie, the records' keys, the
// stream's bound on keys with its 'other' row, and how keys and regions are rendered.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "../../bpf/pmcprof.h"
#include "pmcprof/probes/func_object.hpp"
#include "pmcprof/probes/func_targets.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/report/func_report.hpp"
#include "pmcprof/report/prometheus.hpp"
#include "pmcprof/report/read_json.hpp"
#include "pmcprof/stream/call_record.hpp"
#include "pmcprof/stream/func_stats.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;
using nlohmann::json;

namespace {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    return e.what();
  }
  return {};
}

bool has(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

// ---- usdt: and tracepoint: targets ----

TEST(UsdtTarget, BinaryProviderName) {
  const FuncTarget t = parse_func_target("usdt:/usr/bin/python3.11:python:function__entry");
  EXPECT_EQ(t.kind, FuncTarget::Kind::usdt);
  EXPECT_EQ(t.binary, "/usr/bin/python3.11");
  EXPECT_EQ(t.provider, "python");
  EXPECT_EQ(t.name, "function__entry");
  EXPECT_TRUE(t.is_point());
  EXPECT_STREQ(to_string(t.kind), "usdt");
}

TEST(UsdtTarget, LibraryByNameAndPathsWithColons) {
  FuncTarget t = parse_func_target("usdt:libstdc++:libstdcxx:throw");
  EXPECT_EQ(t.binary, "libstdc++");
  EXPECT_EQ(t.provider, "libstdcxx");
  t = parse_func_target("usdt:/opt/a:b/prog:prov:probe");
  EXPECT_EQ(t.binary, "/opt/a:b/prog");
  EXPECT_EQ(t.name, "probe");
}

TEST(UsdtTarget, WithoutAFileIsTheProcesses) {
  const FuncTarget t = parse_func_target("usdt:postgresql:query__start");
  EXPECT_EQ(t.binary, "");
  EXPECT_EQ(t.provider, "postgresql");
  EXPECT_EQ(t.name, "query__start");
}

TEST(UsdtTarget, Malformed) {
  EXPECT_TRUE(has(error_of([] { parse_func_target("usdt:"); }), "names no probe"));
  EXPECT_TRUE(has(error_of([] { parse_func_target("usdt:justone"); }), "names no probe"));
  EXPECT_TRUE(has(error_of([] { parse_func_target("usdt:/bin/x:prov:9bad"); }),
                  "invalid USDT provider or probe name"));
  EXPECT_TRUE(has(error_of([] { parse_func_target("usdt:/bin/x:pr-ov:name"); }),
                  "invalid USDT provider or probe name"));
}

TEST(TracepointTarget, CategoryAndName) {
  const FuncTarget t = parse_func_target("tracepoint:sched:sched_process_exec");
  EXPECT_EQ(t.kind, FuncTarget::Kind::tracepoint);
  EXPECT_EQ(t.category, "sched");
  EXPECT_EQ(t.name, "sched_process_exec");
  EXPECT_TRUE(t.is_point());
  EXPECT_TRUE(has(error_of([] { parse_func_target("tracepoint:sched"); }), "invalid tracepoint"));
  EXPECT_TRUE(
      has(error_of([] { parse_func_target("tracepoint:sched:a/b"); }), "invalid tracepoint"));
}

TEST(FuncTarget, PointsInsideOrAtTheReturnAreForRegions) {
  const std::string e = error_of([] { parse_func_target("/bin/x:f+4"); });
  EXPECT_TRUE(has(e, "--func measures whole calls")) << e;
  EXPECT_TRUE(has(error_of([] { parse_func_target("/bin/x:f%return"); }),
                  "inside or at the return of a function"));
}

TEST(DistinctTargets, SameProbeTwiceIsRefused) {
  std::vector<FuncTarget> t{parse_func_target("usdt:/bin/x:p:n"),
                            parse_func_target("usdt:/bin/x:p:n")};
  EXPECT_THROW(check_distinct_targets(t), UserError);
  t[1] = parse_func_target("usdt:/bin/x:q:n");  // another provider
  EXPECT_NO_THROW(check_distinct_targets(t));
}

// ---- --region ----

TEST(Region, NamedUsdtPair) {
  const RegionSpec r = parse_region(
      "q=usdt:/usr/lib/postgresql/15/bin/postgres:postgresql:query__start,"
      "usdt:/usr/lib/postgresql/15/bin/postgres:postgresql:query__done");
  EXPECT_EQ(r.name, "q");
  EXPECT_EQ(r.label(), "q");
  EXPECT_EQ(r.start.kind, FuncTarget::Kind::usdt);
  EXPECT_EQ(r.start.name, "query__start");
  EXPECT_EQ(r.end.name, "query__done");
}

TEST(Region, UnnamedIsLabelledByItsText) {
  const RegionSpec r = parse_region("/bin/x:f,/bin/x:f%return");
  EXPECT_EQ(r.name, "");
  EXPECT_EQ(r.label(), "/bin/x:f,/bin/x:f%return");
  EXPECT_EQ(r.start.kind, FuncTarget::Kind::user);
  EXPECT_FALSE(r.start.at_return);
  EXPECT_TRUE(r.end.at_return);
  EXPECT_EQ(r.end.name, "f");
}

TEST(Region, EveryKindOfPoint) {
  RegionSpec r = parse_region("/bin/x:f+0x10,/bin/x:f+32");
  EXPECT_EQ(r.start.offset, 16u);
  EXPECT_EQ(r.end.offset, 32u);
  r = parse_region("syscall:read,syscall:read%return");
  EXPECT_EQ(r.start.kind, FuncTarget::Kind::syscall);
  EXPECT_FALSE(r.start.at_return);
  EXPECT_TRUE(r.end.at_return);
  r = parse_region("tcp_sendmsg,tcp_sendmsg%return");
  EXPECT_EQ(r.start.kind, FuncTarget::Kind::kernel);
  EXPECT_TRUE(r.end.at_return);
  r = parse_region("tracepoint:sched:sched_process_exec,tracepoint:sched:sched_process_exit");
  EXPECT_EQ(r.end.kind, FuncTarget::Kind::tracepoint);
  r = parse_region("usdt:libstdc++:libstdcxx:throw,usdt:libstdc++:libstdcxx:catch");
  EXPECT_EQ(r.start.binary, "libstdc++");
  // '=' inside a path is not a name
  r = parse_region("/opt/a=b/x:f,/opt/a=b/x:g");
  EXPECT_EQ(r.name, "");
  EXPECT_EQ(r.start.binary, "/opt/a=b/x");
}

TEST(Region, Refused) {
  EXPECT_TRUE(has(error_of([] { parse_region("usdt:/bin/x:p:a"); }), "exactly two points"));
  EXPECT_TRUE(
      has(error_of([] { parse_region("/bin/x:a,/bin/x:b,/bin/x:c"); }), "exactly two points"));
  EXPECT_TRUE(has(error_of([] { parse_region("=/bin/x:a,/bin/x:b"); }), "1 to 64 characters"));
  EXPECT_TRUE(has(error_of([] { parse_region("/bin/x:a,/bin/x:a"); }), "the same point"));
  EXPECT_TRUE(has(error_of([] { parse_region("usdt:/bin/x:p:a%return,usdt:/bin/x:p:b"); }),
                  "one point, with no return or offset"));
  EXPECT_TRUE(has(error_of([] { parse_region("usdt:/bin/x:p:a+4,usdt:/bin/x:p:b"); }),
                  "one point, with no return or offset"));
  EXPECT_TRUE(has(error_of([] { parse_region("/bin/x:f+4%return,/bin/x:g"); }),
                  "both +OFFSET and %return"));
  EXPECT_TRUE(has(error_of([] { parse_region("/bin/x:f+zz,/bin/x:g"); }), "invalid offset 'zz'"));
  EXPECT_TRUE(has(error_of([] { parse_region(",/bin/x:g"); }), "--region start is empty"));
}

// ---- --by argN ----

TEST(KeyArgs, OneOrTwo) {
  EXPECT_FALSE(parse_key_args("pid"));
  EXPECT_FALSE(parse_key_args("cgroup"));
  auto k = parse_key_args("arg0");
  ASSERT_TRUE(k);
  ASSERT_EQ(k->size(), 1u);
  EXPECT_EQ((*k)[0].index, 0u);
  EXPECT_FALSE((*k)[0].string);
  k = parse_key_args("arg0:str,arg11:int");
  ASSERT_EQ(k->size(), 2u);
  EXPECT_TRUE((*k)[0].string);
  EXPECT_EQ((*k)[1].index, 11u);
  EXPECT_FALSE((*k)[1].string);
  EXPECT_EQ((*k)[0].text(), "arg0:str");
  EXPECT_EQ((*k)[1].text(), "arg11");
}

TEST(KeyArgs, Refused) {
  EXPECT_TRUE(has(error_of([] { parse_key_args("arg12"); }), "0 to 11"));
  EXPECT_TRUE(has(error_of([] { parse_key_args("arg01"); }), "0 to 11"));
  EXPECT_TRUE(has(error_of([] { parse_key_args("argx"); }), "0 to 11"));
  EXPECT_TRUE(has(error_of([] { parse_key_args("arg0,arg0:str"); }), "arg0 twice"));
  EXPECT_TRUE(has(error_of([] { parse_key_args("arg0,arg1,arg2"); }), "one or two"));
  EXPECT_TRUE(has(error_of([] { parse_key_args("arg0,pid"); }), "invalid --by"));
}

TEST(KeyArgs, CallingConventionRegisters) {
#if defined(__x86_64__)
  EXPECT_EQ(abi_arg_offset(0), 112);  // rdi
  EXPECT_EQ(abi_arg_offset(5), 64);   // r9
  EXPECT_FALSE(abi_arg_offset(6));
#elif defined(__aarch64__)
  EXPECT_EQ(abi_arg_offset(0), 0);
  EXPECT_EQ(abi_arg_offset(7), 56);
  EXPECT_FALSE(abi_arg_offset(8));
#endif
}

TEST(TracepointFormat, FieldsInOrderWithoutCommonOnes) {
  const std::string format =
      "name: sys_enter_openat\n"
      "ID: 633\n"
      "format:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
      "\n"
      "\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
      "\tfield:int dfd;\toffset:16;\tsize:8;\tsigned:0;\n"
      "\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;\n"
      "\tfield:int flags;\toffset:32;\tsize:8;\tsigned:0;\n"
      "\tfield:__data_loc char[] name;\toffset:40;\tsize:4;\tsigned:0;\n"
      "\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:1;\n"
      "\n"
      "print fmt: \"...\"\n";
  const auto f = parse_tracepoint_format(format);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].name, "dfd");
  EXPECT_EQ(f[0].offset, 16);
  EXPECT_EQ(f[1].name, "filename");
  EXPECT_EQ(f[1].type, "const char *");
  EXPECT_EQ(f[1].size, 8);
  EXPECT_EQ(f[3].name, "name");
  EXPECT_EQ(f[3].type, "__data_loc char[]");
  EXPECT_EQ(f[4].name, "comm");
  EXPECT_EQ(f[4].size, 16);
  EXPECT_TRUE(f[4].is_signed);
}

// ---- what travels to and from the BPF side ----

TEST(ProbeCookie, FunctionSlotAndRegionBits) {
  EXPECT_EQ(probe_cookie(5), 5u);
  const std::uint64_t c = probe_cookie(7, std::size_t{3}, true);
  EXPECT_EQ(static_cast<std::uint32_t>(c), 7u);
  EXPECT_EQ((c >> PMCPROF_COOKIE_SPEC_SHIFT) & PMCPROF_COOKIE_SPEC_MASK, 4u);  // slot + 1
  EXPECT_TRUE(c & PMCPROF_COOKIE_REGION);
  EXPECT_FALSE(probe_cookie(7, std::size_t{0}) & PMCPROF_COOKIE_REGION);
  EXPECT_EQ((probe_cookie(7, std::size_t{0}) >> PMCPROF_COOKIE_SPEC_SHIFT), 1u);
}

TEST(CallRecordKey, OnlyAFullRecordCarriesAKey) {
  pmcprof_record raw{};
  raw.func_id = 2;
  raw.n_events = 1;
  std::strcpy(reinterpret_cast<char*>(raw.key.b), "SELECT 1;");
  auto full = decode_call_record(&raw, sizeof(raw), RecordShape::keyed);
  ASSERT_TRUE(full);
  EXPECT_STREQ(full->key.data(), "SELECT 1;");
  auto header_only = decode_call_record(&raw, PMCPROF_RECORD_HEADER_SIZE + 8, RecordShape::caller);
  ASSERT_TRUE(header_only);
  EXPECT_EQ(header_only->key[0], '\0');
}

namespace {

CallRecord keyed(std::uint32_t func, const std::string& key) {
  CallRecord r;
  r.func_id = func;
  r.n_events = 1;
  r.measured = r.ran = 1;
  r.wall_ns = r.oncpu_ns = 100;
  r.delta[0] = 100;
  std::memcpy(r.key.data(), key.data(), std::min(key.size(), r.key.size()));
  return r;
}

}  // namespace

TEST(StreamAggregatorKeys, PastTheBoundCallsGoToOther) {
  StreamAggregator agg(1, Breakdown::args, 2);
  for (const char* k : {"a", "b", "a", "c", "d", "c", "b"}) agg.add(keyed(0, k));
  agg.add(keyed(1, "z"));  // another function has keys of its own
  std::map<std::string, std::uint64_t> calls;
  std::uint64_t other = 0;
  for (const auto& [key, s] : agg.stats()) {
    if (key.func_id != 0) continue;
    if (key.other)
      other = s.calls();
    else
      calls[key.text.c_str()] = s.calls();
  }
  EXPECT_EQ(calls, (std::map<std::string, std::uint64_t>{{"a", 2}, {"b", 2}}));
  EXPECT_EQ(other, 3u);  // c, d, c
  EXPECT_EQ(agg.stats().size(), 4u);
  agg.clear();  // an interval: room for new keys again
  agg.add(keyed(0, "e"));
  agg.add(keyed(0, "f"));
  for (const auto& [key, s] : agg.stats()) EXPECT_FALSE(key.other);
}

TEST(StreamAggregatorKeys, UnboundedWithoutMaxKeys) {
  StreamAggregator agg(1, Breakdown::args);
  for (int i = 0; i < 100; ++i) agg.add(keyed(0, std::to_string(i)));
  EXPECT_EQ(agg.stats().size(), 100u);
  EXPECT_STREQ(to_string(Breakdown::args), "args");
}

// ---- rendering ----

TEST(KeyValueDisplay, StringsQuotedIntegersBySign) {
  KeyValue s{KeyValue::Type::string, "say \"hi\" \\ now", 0};
  EXPECT_EQ(s.display(), "\"say \\\"hi\\\" \\\\ now\"");
  KeyValue neg{KeyValue::Type::signed_int, "", static_cast<std::uint64_t>(-5)};
  EXPECT_EQ(neg.display(), "-5");
  KeyValue big{KeyValue::Type::unsigned_int, "", ~0ull};
  EXPECT_EQ(big.display(), "18446744073709551615");
}

TEST(KeyValueDisplay, UnreadableShowsTheAddressThatFailed) {
  EXPECT_EQ((KeyValue{KeyValue::Type::unreadable, "", 0x7f12deadb000}).display(),
            "<unreadable at 0x7f12deadb000>");
  EXPECT_EQ((KeyValue{KeyValue::Type::unreadable, "", 0}).display(), "<unreadable at 0x0>");
}

namespace {

FuncRow region_row(const std::string& by_value, std::vector<KeyValue> args, bool other,
                   std::uint64_t calls) {
  FuncStats st(0);
  for (std::uint64_t i = 0; i < calls; ++i) {
    CallRecord r;
    r.wall_ns = r.oncpu_ns = 1000;
    st.add(r);
  }
  FuncRow row = make_func_row("query", "usdt", by_value, st, 0, {});
  row.kind = "region";
  row.args = std::move(args);
  row.other = other;
  return row;
}

FunctionReport keyed_report() {
  FunctionReport r;
  r.target = "process id 42";
  r.aggregation = "kernel";
  r.by = "arg0:str,arg1";
  r.max_keys = 2;
  FuncRow first = region_row("\"BEGIN;\", 7",
                             {{KeyValue::Type::string, "BEGIN;", 0},
                              {KeyValue::Type::signed_int, "", static_cast<std::uint64_t>(-7)}},
                             false, 3);
  first.open = 2;
  first.unmatched_exits = 4;
  r.functions.push_back(first);
  r.functions.push_back(region_row("(other)", {}, true, 5));
  FuncRow hits = region_row("", {}, false, 9);
  hits.function = "usdt:/bin/x:p:tick";
  hits.kind = "probe";
  r.functions.push_back(hits);
  return r;
}

}  // namespace

TEST(RegionReport, Text) {
  const std::string text = render_func_text(keyed_report());
  EXPECT_TRUE(has(text, " query  [usdt region]  \"BEGIN;\", 7\n")) << text;
  EXPECT_TRUE(has(text, "4 ends without a start (not measured)")) << text;
  EXPECT_TRUE(has(text, "   2 starts never ended (not measured)\n")) << text;
  EXPECT_TRUE(has(text, " query  [usdt region]  other keys (past the first 2)\n")) << text;
  EXPECT_TRUE(has(text, " usdt:/bin/x:p:tick  [usdt probe]\n   9 hits\n")) << text;
}

TEST(RegionReport, Json) {
  const json j = json::parse(render_func_json(keyed_report()));
  EXPECT_EQ(j["by"], "arg0:str,arg1");
  EXPECT_EQ(j["max_keys"], 2);
  const json& f = j["functions"];
  EXPECT_EQ(f[0]["kind"], "region");
  EXPECT_EQ(f[0]["args"], json::array({"BEGIN;", -7}));
  EXPECT_EQ(f[0]["other"], false);
  EXPECT_EQ(f[0]["open"], 2);
  EXPECT_EQ(f[0]["unmatched_exits"], 4);
  EXPECT_TRUE(f[1]["args"].is_null());
  EXPECT_EQ(f[1]["other"], true);
  EXPECT_EQ(f[1]["calls"], 5);
  EXPECT_FALSE(f[1].contains("open"));
  EXPECT_EQ(f[2]["kind"], "probe");
  EXPECT_FALSE(f[0].contains("arg0:str,arg1"));  // the key is in args, not a by-named field
}

// An argument BPF could not read is neither "" nor 0 in any output, and reads back as it was.
TEST(RegionReport, UnreadableArgumentInEveryFormat) {
  FunctionReport r = keyed_report();
  r.functions[0].args[0] = {KeyValue::Type::unreadable, "", 0x55aa1000};
  r.functions[0].by_value = r.functions[0].args[0].display() + ", -7";
  const std::string text = render_func_json(r);
  const json j = json::parse(text);
  EXPECT_EQ(j["functions"][0]["args"], json::parse(R"([{"unreadable_at": 1437208576}, -7])"));
  const SavedRun run = read_saved_run(text, "u.json");
  const FunctionReport& back = function_totals(run, "u.json");
  ASSERT_EQ(back.functions[0].args.size(), 2u);
  EXPECT_EQ(back.functions[0].args[0].type, KeyValue::Type::unreadable);
  EXPECT_EQ(back.functions[0].args[0].bits, 0x55aa1000u);
  EXPECT_TRUE(
      has(render_func_text(back), " query  [usdt region]  <unreadable at 0x55aa1000>, -7\n"))
      << render_func_text(back);
  PrometheusStatus status;
  status.up = true;
  status.mode = "function";
  EXPECT_TRUE(has(render_prometheus(nullptr, &r, status),
                  "{function=\"query\",arg0=\"<unreadable at 0x55aa1000>\",arg1=\"-7\"} 3\n"));
  // Neither a string nor a number nor the object: refused, naming where.
  json bad = j;
  bad["functions"][0]["args"][0] = json::object({{"address", 1}});
  EXPECT_THROW(read_saved_run(bad.dump(), "bad.json"), UserError);
}

TEST(RegionReport, Prometheus) {
  PrometheusStatus status;
  status.up = true;
  status.mode = "function";
  const FunctionReport r = keyed_report();
  const std::string text = render_prometheus(nullptr, &r, status);
  EXPECT_TRUE(has(text,
                  "pmcprof_function_calls_total{function=\"query\",arg0=\"BEGIN;\","
                  "arg1=\"-7\"} 3\n"))
      << text;
  EXPECT_TRUE(has(text, "pmcprof_function_calls_total{function=\"query\",other=\"true\"} 5\n"))
      << text;
  EXPECT_TRUE(has(text,
                  "pmcprof_probe_info{function=\"query\",other=\"true\",backend=\"usdt\","
                  "kind=\"region\"} 1\n"))
      << text;
}

TEST(RegionReport, CsvKeepsTheKeyInOneField) {
  const std::string csv = render_func_csv(keyed_report(), ",");
  EXPECT_TRUE(has(csv, "query,usdt,\"\"\"BEGIN;\"\", 7\",3,")) << csv;
}

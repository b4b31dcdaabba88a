// --func wildcards: parsing a glob in a target's function part, matching it against a list of
// names, dropping duplicate rows, the limit on rows, and the lines that refuse a glob.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pmcprof/probes/func_globs.hpp"
#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The row a glob's match `name` becomes, identified by `identity`.
TargetRow match_row(const FuncTarget& glob, std::size_t index, const std::string& name,
                    const std::string& identity) {
  return {expanded_target(glob, name), identity, index, std::nullopt};
}

TargetRow named_row(const std::string& text, const std::string& identity) {
  return {parse_func_target(text), identity, std::nullopt, std::nullopt};
}

std::vector<std::string> texts(const std::vector<TargetRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.target.text);
  return out;
}

}  // namespace

// ---- parsing: where a glob is accepted, and where not ----

TEST(FuncGlobs, ParsedInEachKindOfFunction) {
  const FuncTarget user = parse_func_target("./workload:burn_*");
  EXPECT_EQ(user.kind, FuncTarget::Kind::user);
  EXPECT_EQ(user.binary, "./workload");
  EXPECT_EQ(user.name, "burn_*");
  const FuncTarget lib = parse_func_target("libc:str?[!a-c]*");
  EXPECT_EQ(lib.kind, FuncTarget::Kind::user);
  EXPECT_EQ(lib.binary, "libc");
  EXPECT_EQ(lib.name, "str?[!a-c]*");
  const FuncTarget sys = parse_func_target("syscall:read*");
  EXPECT_EQ(sys.kind, FuncTarget::Kind::syscall);
  EXPECT_EQ(sys.name, "read*");
  const FuncTarget kernel = parse_func_target("vfs_*");
  EXPECT_EQ(kernel.kind, FuncTarget::Kind::kernel);
  EXPECT_EQ(kernel.name, "vfs_*");
  EXPECT_EQ(parse_func_target("kernel:tcp_send?sg").name, "tcp_send?sg");
}

TEST(FuncGlobs, ColonsOfACharacterClassDoNotSplitFileFromSymbol) {
  // [[:digit:]] holds colons: the file ends at the last colon outside brackets.
  const FuncTarget user = parse_func_target("/bin/x:f[[:digit:]]");
  EXPECT_EQ(user.kind, FuncTarget::Kind::user);
  EXPECT_EQ(user.binary, "/bin/x");
  EXPECT_EQ(user.name, "f[[:digit:]]");
  const FuncTarget kernel = parse_func_target("vfs_[[:alpha:]]*");
  EXPECT_EQ(kernel.kind, FuncTarget::Kind::kernel);
  EXPECT_EQ(kernel.name, "vfs_[[:alpha:]]*");
  EXPECT_EQ(last_colon_outside_brackets("a:b[[:x:]]"), 1u);
  EXPECT_EQ(last_colon_outside_brackets("a[:b"), 2u);                  // unterminated: a plain '['
  EXPECT_EQ(last_colon_outside_brackets("[]:]x"), std::string::npos);  // ']' first is a member
}

TEST(FuncGlobs, MalformedPatternsAreRefusedInOneLine) {
  for (const char* bad :
       {"./w:burn_[", "./w:burn_[]", "syscall:re ad*", "vfs_*-x", "./w:f*{a,b}"}) {
    try {
      parse_func_target(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UserError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_TRUE(contains(what, "invalid")) << bad << ": " << what;
    }
  }
  EXPECT_TRUE(valid_glob("burn_*"));
  EXPECT_TRUE(valid_glob("get[pu]id"));
  EXPECT_TRUE(valid_glob("f[^0-9]?"));
  EXPECT_FALSE(valid_glob("burn_["));
  EXPECT_FALSE(valid_glob(""));
  EXPECT_FALSE(valid_glob("a b*"));
}

TEST(FuncGlobs, RegionPointsRefuseAGlob) {
  try {
    parse_region("./w:burn_*,./w:burn_*%return");
    ADD_FAILURE() << "a glob in a region was accepted";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), "--region start './w:burn_*'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "wildcard")) << e.what();
    EXPECT_TRUE(contains(e.hint(), "--func")) << e.hint();
  }
  EXPECT_THROW(parse_region("syscall:read,syscall:rea?%return"), UserError);
  EXPECT_NO_THROW(parse_region("syscall:read,syscall:read%return"));
}

TEST(FuncGlobs, PlainNamesAreNoGlobs) {
  EXPECT_FALSE(is_glob("tcp_sendmsg_locked.isra.0"));
  EXPECT_FALSE(is_glob("malloc@GLIBC_2.2.5"));
  EXPECT_TRUE(is_glob("burn_*"));
  EXPECT_TRUE(is_glob("get?id"));
  EXPECT_TRUE(is_glob("get[pu]id"));
}

// ---- matching ----

TEST(FuncGlobs, MatchesAsFnmatchDoes) {
  const std::vector<std::string> names = {"burn_cpu", "burn_a",         "burn_b",  "tiny_function",
                                          "main",     "burn_and_sleep", "xburn_a", "burn_"};
  EXPECT_EQ(glob_matches("burn_*", names),
            (std::vector<std::string>{"burn_", "burn_a", "burn_and_sleep", "burn_b", "burn_cpu"}));
  EXPECT_EQ(glob_matches("burn_?", names), (std::vector<std::string>{"burn_a", "burn_b"}));
  EXPECT_EQ(glob_matches("burn_[ab]", names), (std::vector<std::string>{"burn_a", "burn_b"}));
  EXPECT_EQ(glob_matches("burn_[!a]*", names), (std::vector<std::string>{"burn_b", "burn_cpu"}));
  EXPECT_EQ(glob_matches("*burn_a", names), (std::vector<std::string>{"burn_a", "xburn_a"}));
  EXPECT_TRUE(glob_matches("burn_zz*", names).empty());
  // '*' crosses the dots of compiler clones (no FNM_PERIOD).
  EXPECT_EQ(glob_matches("vfs_read*", {"vfs_read.isra.0", "vfs_readv"}),
            (std::vector<std::string>{"vfs_read.isra.0", "vfs_readv"}));
}

TEST(FuncGlobs, AliasesSortBeforeTheirUnderscoredTwins) {
  // By name without leading underscores: getpid before __getpid (the one an alias keeps),
  // and both between the names around them.
  EXPECT_EQ(glob_matches("*get*id", {"__getpid", "getuid", "getpid", "_getaid", "getppid"}),
            (std::vector<std::string>{"_getaid", "getpid", "__getpid", "getppid", "getuid"}));
  EXPECT_EQ(glob_matches("*", {"b", "a", "a"}), (std::vector<std::string>{"a", "b"}));
}

TEST(FuncGlobs, ExpandedTargetKeepsWhatTheUserWrote) {
  EXPECT_EQ(expanded_target(parse_func_target("./w:burn_*"), "burn_a").text, "./w:burn_a");
  EXPECT_EQ(expanded_target(parse_func_target("./w:burn_*"), "burn_a").name, "burn_a");
  EXPECT_EQ(expanded_target(parse_func_target("./w:burn_*"), "burn_a").binary, "./w");
  EXPECT_EQ(expanded_target(parse_func_target("syscall:getp*"), "getppid").text, "syscall:getppid");
  EXPECT_EQ(expanded_target(parse_func_target("syscall:sys_getp*"), "getppid").text,
            "syscall:sys_getppid");
  EXPECT_EQ(expanded_target(parse_func_target("vfs_*"), "vfs_read").text, "vfs_read");
  EXPECT_EQ(expanded_target(parse_func_target("kernel:vfs_*"), "vfs_read").text, "kernel:vfs_read");
  // An expanded target parses back to itself: as if the user had named it.
  const FuncTarget e = expanded_target(parse_func_target("/bin/x:f[[:digit:]]"), "f1");
  const FuncTarget back = parse_func_target(e.text);
  EXPECT_EQ(back.binary, e.binary);
  EXPECT_EQ(back.name, "f1");
}

// ---- duplicates ----

TEST(FuncGlobs, AliasesAndOverlappingGlobsAppearOnce) {
  const FuncTarget a = parse_func_target("./w:burn_*");
  const FuncTarget b = parse_func_target("./w:burn_[ab]");
  std::vector<TargetRow> rows = {
      match_row(a, 0, "burn_a", "user:/w+0x10"),       match_row(a, 0, "burn_b", "user:/w+0x20"),
      match_row(a, 0, "burn_b_alias", "user:/w+0x20"),  // an alias: the same address
      match_row(a, 0, "burn_cpu", "user:/w+0x30"),     match_row(b, 1, "burn_a", "user:/w+0x10"),
      match_row(b, 1, "burn_b", "user:/w+0x20")};
  const auto dropped = drop_duplicate_rows(rows);
  EXPECT_EQ(texts(rows), (std::vector<std::string>{"./w:burn_a", "./w:burn_b", "./w:burn_cpu"}));
  ASSERT_EQ(dropped.size(), 3u);
  EXPECT_EQ(dropped[0].text, "./w:burn_b_alias");
  EXPECT_EQ(dropped[0].same_as, "./w:burn_b");
  EXPECT_EQ(dropped[0].glob, 0u);
  EXPECT_EQ(dropped[1].glob, 1u);
  EXPECT_EQ(dropped[2].text, "./w:burn_b");
}

TEST(FuncGlobs, ANamedFunctionAndAGlobShareOneRow) {
  const FuncTarget g = parse_func_target("syscall:getp*");
  // The named one first: the glob's copy goes.
  std::vector<TargetRow> rows = {named_row("syscall:getppid", "syscall:getppid"),
                                 match_row(g, 1, "getpid", "syscall:getpid"),
                                 match_row(g, 1, "getppid", "syscall:getppid")};
  auto dropped = drop_duplicate_rows(rows);
  EXPECT_EQ(texts(rows), (std::vector<std::string>{"syscall:getppid", "syscall:getpid"}));
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].glob, 1u);
  // The glob first: the named one goes, attributed to the glob.
  rows = {match_row(g, 0, "getpid", "syscall:getpid"),
          match_row(g, 0, "getppid", "syscall:getppid"),
          named_row("syscall:getppid", "syscall:getppid")};
  dropped = drop_duplicate_rows(rows);
  EXPECT_EQ(texts(rows), (std::vector<std::string>{"syscall:getpid", "syscall:getppid"}));
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].glob, 0u);
}

TEST(FuncGlobs, TwoNamedFunctionsAreLeftForTheDuplicateRefusal) {
  // libc:getpid and libc:__getpid, both named: kept, so resolve_targets refuses them in one line.
  std::vector<TargetRow> rows = {
      named_row("libc:getpid", "user:/libc+0x10"), named_row("libc:__getpid", "user:/libc+0x10"),
      named_row("usdt:/bin/x:p:n", ""), named_row("usdt:/bin/x:p:m", "")};
  EXPECT_TRUE(drop_duplicate_rows(rows).empty());
  EXPECT_EQ(rows.size(), 4u);
}

// ---- the limit ----

TEST(FuncGlobs, AGlobPastTheLimitIsRefusedNamingItsCount) {
  const std::vector<FuncTarget> targets = {parse_func_target("syscall:*"),
                                           parse_func_target("./w:burn_a")};
  std::vector<TargetRow> rows;
  for (int i = 0; i < 70; ++i)
    rows.push_back(
        match_row(targets[0], 0, "s" + std::to_string(100 + i), "s" + std::to_string(i)));
  rows.push_back(named_row("./w:burn_a", "user:/w+0x10"));
  try {
    check_row_limit(rows, targets, 0, 64);
    ADD_FAILURE() << "71 rows passed a limit of 64";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what,
              "--func 'syscall:*' matches 70 syscalls; with the run's other function or region "
              "that makes 71, more than the 64 a run can measure");
    EXPECT_TRUE(contains(e.hint(), "narrow the pattern")) << e.hint();
    EXPECT_TRUE(contains(e.hint(), "'s100', 's101', 's102', ...")) << e.hint();
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
  rows.resize(64);  // 64 rows fit ...
  EXPECT_NO_THROW(check_row_limit(rows, targets, 0, 64));
  try {  // ... but not with a region beside them
    check_row_limit(rows, targets, 1, 64);
    ADD_FAILURE() << "64 rows and a region passed a limit of 64";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), "matches 64 syscalls; with the run's other function or region"))
        << e.what();
  }
}

TEST(FuncGlobs, AloneTheLineSaysOnlyItsCountAndTheLimit) {
  const std::vector<FuncTarget> targets = {parse_func_target("libc:str*")};
  std::vector<TargetRow> rows;
  for (int i = 0; i < 79; ++i)
    rows.push_back(match_row(targets[0], 0, "str" + std::to_string(i), std::to_string(i)));
  try {
    check_row_limit(rows, targets, 0, 64);
    ADD_FAILURE() << "79 rows passed";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "--func 'libc:str*' matches 79 functions, more than the 64 a run can "
                 "measure");
  }
}

TEST(FuncGlobs, TheWidestGlobIsTheOneToNarrow) {
  const std::vector<FuncTarget> targets = {parse_func_target("syscall:get*"),
                                           parse_func_target("syscall:set*")};
  std::vector<TargetRow> rows;
  for (int i = 0; i < 20; ++i)
    rows.push_back(match_row(targets[0], 0, "g" + std::to_string(i), "g" + std::to_string(i)));
  for (int i = 0; i < 50; ++i)
    rows.push_back(match_row(targets[1], 1, "s" + std::to_string(i), "s" + std::to_string(i)));
  try {
    check_row_limit(rows, targets, 0, 64);
    ADD_FAILURE() << "70 rows passed";
  } catch (const UserError& e) {
    EXPECT_TRUE(
        contains(e.what(),
                 "--func 'syscall:set*' matches 50 syscalls; with the run's 20 other functions and "
                 "regions that makes 70"))
        << e.what();
  }
}

// ---- the refusal of no match, and -v ----

TEST(FuncGlobs, NoMatchNamesThePatternAndTheClosestNames) {
  const UserError e = no_match_error(parse_func_target("./w:burn_zz*"), "function in /abs/w",
                                     {"burn_a", "burn_b", "main", "tiny_function"},
                                     "list its functions with: nm /abs/w");
  EXPECT_STREQ(e.what(), "--func './w:burn_zz*' matches no function in /abs/w");
  EXPECT_TRUE(contains(e.hint(), "did you mean './w:burn_a'")) << e.hint();
  EXPECT_FALSE(contains(e.hint(), "main")) << e.hint();
  EXPECT_TRUE(contains(e.hint(), "nm /abs/w")) << e.hint();
  const UserError none =
      no_match_error(parse_func_target("syscall:qq*"), "syscall", {"read"}, "list them with: ls X");
  EXPECT_EQ(none.hint(), "list them with: ls X");
}

TEST(FuncGlobs, VerboseSaysWhatEachGlobMatched) {
  const std::vector<FuncTarget> targets = {parse_func_target("./w:burn_[ab]"),
                                           parse_func_target("syscall:getppid"),
                                           parse_func_target("vfs_rea*")};
  std::vector<TargetRow> rows = {
      match_row(targets[0], 0, "burn_a", "a"), match_row(targets[0], 0, "burn_b", "b"),
      match_row(targets[0], 0, "burn_b2", "b"), named_row("syscall:getppid", "syscall:getppid"),
      match_row(targets[2], 2, "vfs_read", "kernel:vfs_read")};
  const auto dropped = drop_duplicate_rows(rows);
  const auto lines = describe_expansions(rows, dropped, targets, {{2, "1 more left out"}});
  ASSERT_EQ(lines.size(), 2u);  // the named --func is no glob
  EXPECT_EQ(lines[0],
            "--func './w:burn_[ab]' matched 2 functions: ./w:burn_a, ./w:burn_b; ./w:burn_b2 is "
            "./w:burn_b: measured once");
  EXPECT_EQ(lines[1], "--func 'vfs_rea*' matched 1 function: vfs_read; 1 more left out");
}

// util/strings.hpp: the small helpers the parsers and suggestions are built on.
#include <gtest/gtest.h>

#include <cerrno>

#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;

TEST(Strings, ErrnoTextIncludesTheKernelsEnotsupp) {
  EXPECT_EQ(errno_string(ENOENT), "No such file or directory");
  // 524: what a refused fentry attach returns; libc would say "Unknown error 524".
  EXPECT_EQ(errno_string(524), "not supported by the kernel here (ENOTSUPP, errno 524)");
}

TEST(Strings, SplitKeepsEmptyFields) {
  EXPECT_EQ(split("a,b,c", ','), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split(",a,", ','), (std::vector<std::string>{"", "a", ""}));
  EXPECT_EQ(split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(split("abc", ','), (std::vector<std::string>{"abc"}));
}

TEST(Strings, JoinIsSplitsInverse) {
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({"x"}, ","), "x");
  EXPECT_EQ(join({}, ","), "");
  EXPECT_EQ(join(split("a,,b", ','), ","), "a,,b");
}

TEST(Strings, Trim) {
  EXPECT_EQ(trim("  a b \t\n"), "a b");
  EXPECT_EQ(trim("ab"), "ab");
  EXPECT_EQ(trim("   "), "");
  EXPECT_EQ(trim(""), "");
}

TEST(Strings, StartsWithAndLower) {
  EXPECT_TRUE(starts_with("cycles:u", "cycles"));
  EXPECT_TRUE(starts_with("abc", ""));
  EXPECT_FALSE(starts_with("cy", "cycles"));
  EXPECT_EQ(to_lower("CPU-Clock"), "cpu-clock");
}

TEST(Strings, EditDistance) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("cyclez", "cycles"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
  EXPECT_EQ(edit_distance("CYCLES", "cycles"), 0u);  // case-insensitive
  EXPECT_EQ(edit_distance("ab", "ba"), 2u);          // no transpositions
}

TEST(Strings, ClosestMatchesBestFirst) {
  const std::vector<std::string> names = {"bus-cycles",   "cpu-cycles", "cycles",
                                          "instructions", "task-clock", "ref-cycles"};
  auto m = closest_matches("cyclez", names);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.front(), "cycles");
  EXPECT_LE(m.size(), 3u);
}

TEST(Strings, ClosestMatchesRespectsMaxAndDeduplicates) {
  const std::vector<std::string> names = {"cycles", "cycles", "cycle", "cyclesx", "cyclos"};
  auto m = closest_matches("cycles", names, 2);
  EXPECT_EQ(m, (std::vector<std::string>{"cycles", "cycle"}));
}

TEST(Strings, ClosestMatchesPrefix) {
  auto m = closest_matches("instr", {"instructions", "cycles"});
  EXPECT_EQ(m, (std::vector<std::string>{"instructions"}));
}

TEST(Strings, DidYouMeanQuotesEach) {
  EXPECT_EQ(did_you_mean({}), "");
  EXPECT_EQ(did_you_mean({"read", "readv"}), "did you mean 'read', 'readv'? ");
  EXPECT_EQ(did_you_mean({"a\nb"}), "did you mean 'a\\x0Ab'? ");
}

TEST(Strings, ClosestMatchesSkipsFarLengthsButKeepsPrefixes) {
  // Names much longer or shorter than the word are never close, unless the word starts them.
  const std::vector<std::string> names = {"vfs_read", "vfs_readv", "vfs_read_iter_extra_long", "v"};
  EXPECT_EQ(closest_matches("vfs_raed", names), (std::vector<std::string>{"vfs_read"}));
  EXPECT_EQ(closest_matches("vfs_read_it", names, 5),
            (std::vector<std::string>{"vfs_read", "vfs_readv", "vfs_read_iter_extra_long"}));
}

TEST(Strings, ClosestMatchesNothingClose) {
  EXPECT_TRUE(closest_matches("zzzzzz", {"cycles", "instructions"}).empty());
  EXPECT_TRUE(closest_matches("cycles", {}).empty());
}

TEST(Strings, ParseU64Accepts) {
  unsigned long long v = 99;
  EXPECT_TRUE(parse_u64("0", v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(parse_u64("007", v));
  EXPECT_EQ(v, 7u);
  EXPECT_TRUE(parse_u64("18446744073709551615", v));
  EXPECT_EQ(v, ~0ULL);
}

TEST(Strings, ParseU64Rejects) {
  unsigned long long v = 0;
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "12a", "0x10", "1.5", "18446744073709551616",
                          "99999999999999999999999"})
    EXPECT_FALSE(parse_u64(bad, v)) << "'" << bad << "'";
}

// parse_event_list / parse_event / default_events: the -e grammar, no libpfm4 involved.
#include <gtest/gtest.h>

#include <string>

#include "pmcprof/events/event_spec.hpp"
#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

using namespace pmcprof;

namespace {

// Parses `text`, expects a UserError whose message contains every one of `needles`.
void expect_list_error(const std::string& text, std::initializer_list<std::string> needles) {
  try {
    parse_event_list(text);
    ADD_FAILURE() << "'" << text << "' was accepted";
  } catch (const UserError& e) {
    const std::string what = e.what();
    for (const auto& n : needles)
      EXPECT_NE(what.find(n), std::string::npos) << "'" << text << "': " << what;
    EXPECT_FALSE(e.hint().empty()) << "'" << text << "' has no hint";
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
}

std::vector<std::string> names_of(const EventGroupSpec& g) {
  std::vector<std::string> out;
  for (const auto& e : g.events) out.push_back(e.name);
  return out;
}

}  // namespace

TEST(EventSpec, CommaListGivesOneUngroupedGroupPerEvent) {
  auto groups = parse_event_list("cycles,instructions, task-clock");
  ASSERT_EQ(groups.size(), 3u);
  for (const auto& g : groups) {
    EXPECT_FALSE(g.grouped);
    ASSERT_EQ(g.events.size(), 1u);
  }
  EXPECT_EQ(groups[0].events[0].name, "cycles");
  EXPECT_EQ(groups[1].events[0].name, "instructions");
  EXPECT_EQ(groups[2].events[0].name, "task-clock");
  EXPECT_TRUE(groups[0].events[0].modifiers.empty());
}

TEST(EventSpec, BracesMakeAGroup) {
  auto groups = parse_event_list("task-clock,{cycles,instructions},branches");
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_FALSE(groups[0].grouped);
  EXPECT_TRUE(groups[1].grouped);
  EXPECT_EQ(names_of(groups[1]), (std::vector<std::string>{"cycles", "instructions"}));
  EXPECT_FALSE(groups[2].grouped);
  EXPECT_EQ(groups[2].events[0].name, "branches");
}

TEST(EventSpec, GroupModifiersApplyToEveryMember) {
  auto groups = parse_event_list("{cycles,instructions:k}:u");
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups[0].events.size(), 2u);
  const auto& c = groups[0].events[0];
  const auto& i = groups[0].events[1];
  EXPECT_EQ(c.name, "cycles");
  EXPECT_TRUE(c.modifiers.user);
  EXPECT_FALSE(c.modifiers.kernel);
  EXPECT_EQ(c.text, "cycles:u");
  EXPECT_EQ(i.name, "instructions");
  EXPECT_TRUE(i.modifiers.user);
  EXPECT_TRUE(i.modifiers.kernel);
  EXPECT_EQ(i.text, "instructions:ku");
}

TEST(EventSpec, EveryModifierLetter) {
  auto ev = parse_event("cycles:ukhGHDIp");
  EXPECT_EQ(ev.name, "cycles");
  EXPECT_EQ(ev.text, "cycles:ukhGHDIp");
  EXPECT_EQ(ev.modifiers.text, "ukhGHDIp");
  EXPECT_TRUE(ev.modifiers.user);
  EXPECT_TRUE(ev.modifiers.kernel);
  EXPECT_TRUE(ev.modifiers.hypervisor);
  EXPECT_TRUE(ev.modifiers.guest_only);
  EXPECT_TRUE(ev.modifiers.host_only);
  EXPECT_TRUE(ev.modifiers.pinned);
  EXPECT_TRUE(ev.modifiers.exclude_idle);
  EXPECT_EQ(ev.modifiers.precise, 1);
  EXPECT_TRUE(ev.modifiers.restricts_privilege());
}

TEST(EventSpec, SingleModifiers) {
  auto u = parse_event("cycles:u");
  EXPECT_TRUE(u.modifiers.user);
  EXPECT_FALSE(u.modifiers.kernel);
  auto k = parse_event("instructions:k");
  EXPECT_TRUE(k.modifiers.kernel);
  EXPECT_FALSE(k.modifiers.user);
  EXPECT_FALSE(parse_event("cycles:p").modifiers.restricts_privilege());
}

TEST(EventSpec, PreciseLevels) {
  EXPECT_EQ(parse_event("cycles:p").modifiers.precise, 1);
  EXPECT_EQ(parse_event("cycles:pp").modifiers.precise, 2);
  EXPECT_EQ(parse_event("cycles:ppp").modifiers.precise, 3);
  EXPECT_EQ(parse_event("cycles:upp").modifiers.precise, 2);
  EXPECT_EQ(parse_event("cycles").modifiers.precise, 0);
}

// Documented rule (man page, EVENT SYNTAX): a trailing ":xyz" is perf modifiers when it has a
// lower-case letter or is made only of the upper-case modifiers G H D I (cycles:D pins, as in
// perf); other upper-case words (ANY_P, READ) go to libpfm4 as unit masks.
TEST(EventSpec, UpperCaseModifierLettersAreModifiers) {
  auto d = parse_event("cycles:D");
  EXPECT_EQ(d.name, "cycles");
  EXPECT_TRUE(d.modifiers.pinned);
  auto gh = parse_event("cycles:GH");
  EXPECT_TRUE(gh.modifiers.guest_only && gh.modifiers.host_only);
  EXPECT_EQ(parse_event("PERF_COUNT_HW_CACHE_LL:READ").name, "PERF_COUNT_HW_CACHE_LL:READ");
  auto ukd = parse_event("cycles:ukD");
  EXPECT_EQ(ukd.name, "cycles");
  EXPECT_TRUE(ukd.modifiers.pinned);
  // Documented too: an all-letter lower-case unit mask is read as modifiers and rejected.
  try {
    parse_event("INST_RETIRED:any");
    FAIL() << "INST_RETIRED:any accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown modifier 'a'"), std::string::npos) << e.what();
  }
}

TEST(EventSpec, LibpfmNamesAreNotSplit) {
  for (const char* name : {"INST_RETIRED:ANY_P", "skl::INST_RETIRED:ANY_P",
                           "PERF_COUNT_HW_CACHE_LL:READ:MISS", "cycles:u=1"}) {
    auto ev = parse_event(name);
    EXPECT_EQ(ev.name, name);
    EXPECT_EQ(ev.text, name);
    EXPECT_TRUE(ev.modifiers.empty()) << name;
  }
}

TEST(EventSpec, LibpfmNameWithPerfModifier) {
  auto ev = parse_event("skl::INST_RETIRED:ANY_P:u");
  EXPECT_EQ(ev.name, "skl::INST_RETIRED:ANY_P");
  EXPECT_TRUE(ev.modifiers.user);
  EXPECT_EQ(ev.modifiers.text, "u");
}

TEST(EventSpec, LibpfmNamesInsideAList) {
  auto groups =
      parse_event_list("{skl::INST_RETIRED:ANY_P,PERF_COUNT_HW_CACHE_LL:READ:MISS},r1a2b");
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(names_of(groups[0]), (std::vector<std::string>{"skl::INST_RETIRED:ANY_P",
                                                           "PERF_COUNT_HW_CACHE_LL:READ:MISS"}));
  EXPECT_EQ(groups[1].events[0].name, "r1a2b");
}

TEST(EventSpec, RawEventIsAName) {
  auto ev = parse_event("r1a2b");
  EXPECT_EQ(ev.name, "r1a2b");
  EXPECT_TRUE(ev.modifiers.empty());
  auto ru = parse_event("r1a2b:u");
  EXPECT_EQ(ru.name, "r1a2b");
  EXPECT_TRUE(ru.modifiers.user);
}

TEST(EventSpec, DefaultEventsAreperfStatsSet) {
  auto groups = default_events();
  std::vector<std::string> names;
  for (const auto& g : groups) {
    EXPECT_FALSE(g.grouped);
    for (const auto& e : g.events) names.push_back(e.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"task-clock", "context-switches", "cpu-migrations",
                                             "page-faults", "cycles", "instructions", "branches",
                                             "branch-misses"}));
}

TEST(EventSpec, MissingClosingBrace) {
  expect_list_error("{cycles", {"missing '}'"});
}

TEST(EventSpec, UnbalancedClosingBrace) {
  expect_list_error("cycles}", {"unbalanced '}'"});
  expect_list_error("cycles,instructions}", {"unbalanced '}'"});
}

TEST(EventSpec, EmptyGroup) {
  expect_list_error("{}", {"empty group"});
  expect_list_error("cycles,{ }", {"empty group"});
}

TEST(EventSpec, NestedGroup) {
  expect_list_error("{a,{b}}", {"nested"});
}

TEST(EventSpec, EmptyList) {
  expect_list_error("", {"empty event list"});
  expect_list_error("   ", {"empty event list"});
}

TEST(EventSpec, EmptyItems) {
  expect_list_error("a,,b", {"empty event name"});
  expect_list_error("a,b,", {"empty event name"});
  expect_list_error(",a", {"empty event name"});
  expect_list_error("{a,,b}", {"empty event name"});
}

// "cycles:x" could be a tracepoint (kmem:kmalloc is one): the parser keeps the modifier error
// for the resolver, which throws it when no such tracepoint exists (test_event_resolver.cpp).
TEST(EventSpec, UnknownModifierIsKeptForTheResolver) {
  auto ev = parse_event("cycles:x");
  EXPECT_EQ(ev.name, "cycles:x");
  EXPECT_NE(ev.modifier_error.find("unknown modifier 'x'"), std::string::npos) << ev.modifier_error;
  EXPECT_NE(ev.modifier_error.find("u k h G H D I p P S e W"), std::string::npos);
  EXPECT_FALSE(ev.modifier_hint.empty());
  auto tp = parse_event("kmem:kmalloc");
  EXPECT_EQ(tp.name, "kmem:kmalloc");
  EXPECT_TRUE(tp.modifiers.empty());
}

TEST(EventSpec, UnknownGroupModifier) {
  expect_list_error("{cycles,instructions}:ux", {"unknown modifier 'x'"});
}

TEST(EventSpec, TooManyPreciseModifiers) {
  expect_list_error("cycles:pppp", {"too many 'p'", "cycles:pppp"});
}

TEST(EventSpec, JunkAfterGroup) {
  expect_list_error("{cycles}x", {"unexpected 'x'"});
  expect_list_error("{cycles}:", {"unexpected ':'"});
}

TEST(EventSpec, SpaceInsideName) {
  expect_list_error("cy cles", {"invalid character", "cy cles"});
}

// Found by fuzz.events: a line break in a pmu/terms/ event went into the error line raw
// ("malformed event '\t/8m\n...'"), splitting it in two, with bytes that are not UTF-8.
// Control characters are in no event name: refused as invalid characters, and every echo of
// the input is quoted (escaped, shortened).
TEST(EventSpec, ControlCharactersAreRefusedAndEscaped) {
  for (const std::string& text :
       {std::string("\t/8m\n\xd0.J\xff\xff\x92\xda", 12), std::string("cy\ncles"),
        std::string("cpu/event=1\n/"), std::string("{a,b\x1b[2J}"), std::string("a\x7f"),
        std::string("a\0b", 3)}) {
    try {
      parse_event_list(text);
      ADD_FAILURE() << "accepted: " << escape_bytes(text);
    } catch (const UserError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("invalid character"), std::string::npos) << what;
      EXPECT_EQ(what.find_first_of("\n\r\x1b\x7f"), std::string::npos) << escape_bytes(what);
      EXPECT_TRUE(is_valid_utf8(what)) << escape_bytes(what);
    }
  }
  expect_list_error("cy\ncles", {"'cy\\x0Acles'"});
  // Group modifiers too (found by fuzz.events: "modifier '\n' repeated" split the line).
  expect_list_error("{a,b}:u\n\nk,c", {"invalid character in group modifiers", "\\x0A\\x0A"});
  // Only inside a name: blanks and line breaks around the list and its items are trimmed.
  EXPECT_EQ(parse_event_list("cycles,\n instructions\n").size(), 2u);
}

// Every error names the input quoted, so a repeated or unknown modifier that is not a letter
// stays on the line.
TEST(EventSpec, RepeatedAndUnknownModifiersAreQuoted) {
  expect_list_error("{a,b}:uu", {"modifier 'u' repeated"});
  expect_list_error("{a,b}:\xc3\xa9\xc3\xa9", {"repeated", "'{a,b}:\xc3\xa9\xc3\xa9'"});
}

// Terms and slashed events that are malformed name the input quoted: bytes that are not UTF-8
// as \xHH, and long input shortened.
TEST(EventSpec, MalformedTermsQuoteTheirInput) {
  expect_list_error("/8m\xd0.J/", {"malformed event '/8m\\xD0.J/'", "expected pmu/terms/"});
  expect_list_error("cpu/\xff=/", {"malformed term '\\xFF='", "in event 'cpu/\\xFF=/'"});
  expect_list_error("cpu/a,,b/", {"empty term in event 'cpu/a,,b/'"});
  const std::string long_terms = "cpu/" + std::string(300, 'x') + ",,/";
  try {
    parse_event_list(long_terms);
    ADD_FAILURE() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("(307 characters)"), std::string::npos) << e.what();
    EXPECT_LT(std::string(e.what()).size(), 200u) << e.what();
  }
}

TEST(EventSpec, MissingEventNameBeforeModifier) {
  try {
    parse_event(":u");
    FAIL() << "':u' accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("missing event name"), std::string::npos) << e.what();
  }
}

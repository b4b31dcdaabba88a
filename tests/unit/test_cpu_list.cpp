#include <gtest/gtest.h>

#include "pmcprof/platform/cpu_list.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

TEST(CpuList, ParsesSinglesAndRanges) {
  EXPECT_EQ(parse_cpu_list("0,2-3"), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(parse_cpu_list("3,1,1-2"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(parse_cpu_list(" 5 "), (std::vector<int>{5}));
}

TEST(CpuList, RejectsMalformed) {
  EXPECT_THROW(parse_cpu_list(""), UserError);
  EXPECT_THROW(parse_cpu_list("a"), UserError);
  EXPECT_THROW(parse_cpu_list("3-1"), UserError);
  EXPECT_THROW(parse_cpu_list("1,,2"), UserError);
  EXPECT_THROW(parse_cpu_list("-1"), UserError);
}

TEST(CpuList, OfflineCpuIsNamed) {
  try {
    check_cpus_online({0, 99}, {0, 1});
    FAIL() << "CPU 99 accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("CPU 99 is not online"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("0-1"), std::string::npos) << e.what();
  }
}

TEST(CpuList, FormatsCompactly) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 5, 7, 8}), "0-3,5,7-8");
  EXPECT_EQ(format_cpu_list({}), "");
}

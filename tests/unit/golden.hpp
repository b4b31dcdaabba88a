#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace pmcprof::testing {

// Compares `actual` with tests/golden/<name>, or writes it when PMCPROF_UPDATE_GOLDEN=1.
inline void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(PMCPROF_GOLDEN_DIR) + "/" + name;
  const char* update = std::getenv("PMCPROF_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden " << path << " (regenerate with PMCPROF_UPDATE_GOLDEN=1)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str())
      << "golden " << path << " differs (PMCPROF_UPDATE_GOLDEN=1 rewrites it)";
}

}  // namespace pmcprof::testing

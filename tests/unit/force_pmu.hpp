#pragma once

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

extern char** environ;

namespace pmcprof::testing {

// Runs `body` with libpfm4's model tables of PMU `pmu` (LIBPFM_FORCE_PMU, e.g. "skl"), for tests
// of model-specific names this machine's PMU does not have, in a process of its own: this test
// binary again, filtered to the calling test, with LIBPFM_FORCE_PMU set; the body runs there
// and the test here passes when that process does (its gtest output shows above).
//
// Why a process: libpfm4's state is process-global and pfm_terminate() does not undo all of
// pfm_initialize(): it empties its list of active PMUs but leaves each PMU's "active" flag set,
// so after a forced "skl" a later pfm_initialize() with "icx" forced still reports skl present
// (pfm_get_pmu_info), and metrics pick skl's variant. Only a process that never initialized
// libpfm4 with another PMU sees exactly the forced one, also when the whole binary runs in
// one process (as developers run it), not only under ctest's one test per process.
inline void with_forced_pmu(const char* pmu, const std::function<void()>& body) {
  static constexpr const char* kChild = "PMCPROF_TEST_FORCED_PMU_CHILD";
  if (std::getenv(kChild)) {  // the child: the environment is already set
    const char* forced = std::getenv("LIBPFM_FORCE_PMU");
    ASSERT_TRUE(forced && std::string(forced) == pmu) << "LIBPFM_FORCE_PMU is not " << pmu;
    body();
    return;
  }
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  ASSERT_NE(info, nullptr);
  const std::string filter =
      std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
  std::vector<std::string> env_strings = {std::string(kChild) + "=1",
                                          std::string("LIBPFM_FORCE_PMU=") + pmu};
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("LIBPFM_FORCE_PMU=", 0) != 0 && kv.rfind(std::string(kChild) + "=", 0) != 0)
      env_strings.push_back(kv);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  std::vector<char*> argv = {self.data(), const_cast<char*>(filter.c_str()), nullptr};
  ::fflush(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data());
  ASSERT_EQ(rc, 0) << "posix_spawn of this test binary failed";
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << info->test_suite_name() << "." << info->name() << " with LIBPFM_FORCE_PMU=" << pmu
      << " failed in its own process (status " << status << "; its output is above)";
}

}  // namespace pmcprof::testing

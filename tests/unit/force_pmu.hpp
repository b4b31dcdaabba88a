#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace pmcprof::testing {

// Sets LIBPFM_FORCE_PMU for the lifetime of the guard (before PfmLibrary is constructed): the
// model tables of a PMU this machine does not have, for tests of model-specific names.
class ForcePmu {
 public:
  explicit ForcePmu(const char* pmu) {
    if (const char* old = std::getenv("LIBPFM_FORCE_PMU")) old_ = old;
    setenv("LIBPFM_FORCE_PMU", pmu, 1);
  }
  ~ForcePmu() {
    if (old_)
      setenv("LIBPFM_FORCE_PMU", old_->c_str(), 1);
    else
      unsetenv("LIBPFM_FORCE_PMU");
  }
  ForcePmu(const ForcePmu&) = delete;
  ForcePmu& operator=(const ForcePmu&) = delete;

 private:
  std::optional<std::string> old_;
};

}  // namespace pmcprof::testing

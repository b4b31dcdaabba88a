// Which events count instructions or cycles: the calibration takes its empty function's own
// instructions off exactly these.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include "pmcprof/events/event_resolver.hpp"

using namespace pmcprof;

namespace {

ResolvedEvent event(std::uint32_t type, std::uint64_t config, const char* canonical = "") {
  ResolvedEvent e;
  e.attr.type = type;
  e.attr.config = config;
  e.canonical = canonical;
  return e;
}

}  // namespace

TEST(EventKinds, GenericInstructionsAndCycles) {
  EXPECT_TRUE(
      event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS).counts_instructions_or_cycles());
  EXPECT_TRUE(event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES).counts_instructions_or_cycles());
  EXPECT_FALSE(
      event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES).counts_instructions_or_cycles());
  EXPECT_FALSE(event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK).counts_instructions_or_cycles());
}

TEST(EventKinds, ModelEventsByName) {
  EXPECT_TRUE(event(8, 0x8, "arm_ac57::INST_RETIRED:u=1").counts_instructions_or_cycles());
  EXPECT_TRUE(event(4, 0xc0, "skl::INST_RETIRED:ANY_P:k=1:u=1").counts_instructions_or_cycles());
  EXPECT_TRUE(event(4, 0x3c, "skl::CPU_CLK_UNHALTED:THREAD_P").counts_instructions_or_cycles());
  EXPECT_FALSE(event(4, 0x2e, "skl::LONGEST_LAT_CACHE:MISS").counts_instructions_or_cycles());
}

TEST(EventKinds, RawCodesOfThisArchitecture) {
#if defined(__x86_64__)
  EXPECT_TRUE(event(PERF_TYPE_RAW, 0x00c0).counts_instructions_or_cycles());
  EXPECT_TRUE(event(PERF_TYPE_RAW, 0x003c).counts_instructions_or_cycles());
  EXPECT_FALSE(event(PERF_TYPE_RAW, 0x412e).counts_instructions_or_cycles());
#elif defined(__aarch64__)
  EXPECT_TRUE(event(PERF_TYPE_RAW, 0x08).counts_instructions_or_cycles());
  EXPECT_TRUE(event(PERF_TYPE_RAW, 0x11).counts_instructions_or_cycles());
  EXPECT_FALSE(event(PERF_TYPE_RAW, 0x10).counts_instructions_or_cycles());
#endif
}

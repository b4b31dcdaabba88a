#include <errno.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "pmcprof/report/doctor_report.hpp"

namespace pmcprof {
namespace {

TEST(DoctorCapabilities, ErrnoNameIsSymbolicAndReadable) {
  EXPECT_EQ(errno_name(EPERM), "EPERM (Operation not permitted)");
  EXPECT_EQ(errno_name(ENOENT), "ENOENT (No such file or directory)");
  EXPECT_EQ(errno_name(524), "not supported by the kernel here (ENOTSUPP, errno 524)");
}

TEST(DoctorCapabilities, DescribesEveryParanoidLevel) {
  EXPECT_NE(describe_perf_event_paranoid(-1).find("no restrictions"), std::string::npos);
  EXPECT_NE(describe_perf_event_paranoid(0).find("CPU-wide"), std::string::npos);
  EXPECT_NE(describe_perf_event_paranoid(1).find("not CPU-wide"), std::string::npos);
  EXPECT_NE(describe_perf_event_paranoid(2).find("user space"), std::string::npos);
  EXPECT_NE(describe_perf_event_paranoid(3).find("not use perf_event_open"), std::string::npos);
  EXPECT_EQ(describe_perf_event_paranoid(2).rfind("2: ", 0), 0u);
  EXPECT_EQ(describe_perf_event_paranoid(-1).rfind("-1: ", 0), 0u);
}

constexpr const char* kMaps =
    "55d0c0a00000-55d0c0a42000 r--p 00000000 fe:00 1234 /usr/bin/pmc prof\n"
    "55d0c0a42000-55d0c0c00000 r-xp 00042000 fe:00 1234 /usr/bin/pmc prof\n"
    "7ffd1c3f0000-7ffd1c411000 rw-p 00000000 00:00 0 [stack]\n"
    "7ffd1c5fe000-7ffd1c600000 r-xp 00000000 00:00 0 [vdso]\n"
    "7f0000000000-7f0000001000 rw-p 00000000 00:00 0\n";

TEST(DoctorCapabilities, LocatesAnAddressAsAFileOffset) {
  auto loc = locate_in_maps(kMaps, 0x55d0c0a42000ull + 0x1230);
  ASSERT_TRUE(loc);
  EXPECT_EQ(loc->path, "/usr/bin/pmc prof");
  EXPECT_EQ(loc->file_offset, 0x42000ull + 0x1230);
  loc = locate_in_maps(kMaps, 0x55d0c0a00010ull);
  ASSERT_TRUE(loc);
  EXPECT_EQ(loc->file_offset, 0x10ull);
}

TEST(DoctorCapabilities, AnonymousAndPseudoMappingsHaveNoFile) {
  EXPECT_FALSE(locate_in_maps(kMaps, 0x7ffd1c5fe100ull));  // [vdso]
  EXPECT_FALSE(locate_in_maps(kMaps, 0x7ffd1c3f0100ull));  // [stack]
  EXPECT_FALSE(locate_in_maps(kMaps, 0x7f0000000100ull));  // anonymous
  EXPECT_FALSE(locate_in_maps(kMaps, 0x1000ull));          // unmapped
  EXPECT_FALSE(locate_in_maps("", 0x1000ull));
}

CapabilityReport sample_report() {
  CapabilityReport r;
  r.capabilities.push_back({"btf", {true, "parses: 10 types", {{"types", std::int64_t{10}}}}});
  r.capabilities.push_back({"kprobes", {false, "no kprobe PMU", {}}});
  r.capabilities.push_back(
      {"cgroup_v2",
       {true, "cgroup2 at /x", {{"mount_point", std::string("/x")}, {"hybrid", true}}}});
  return r;
}

TEST(DoctorCapabilities, JsonHasTheSchemaAndFacts) {
  auto doc = nlohmann::json::parse(capability_report_json(sample_report()));
  EXPECT_EQ(doc["schema"], "pmcprof/1");
  EXPECT_EQ(doc["type"], "doctor");
  ASSERT_EQ(doc["capabilities"].size(), 3u);
  EXPECT_EQ(doc["capabilities"][0]["name"], "btf");
  EXPECT_EQ(doc["capabilities"][0]["available"], true);
  EXPECT_EQ(doc["capabilities"][0]["types"], 10);
  EXPECT_EQ(doc["capabilities"][1]["available"], false);
  EXPECT_EQ(doc["capabilities"][1]["detail"], "no kprobe PMU");
  EXPECT_EQ(doc["capabilities"][2]["mount_point"], "/x");
  EXPECT_EQ(doc["capabilities"][2]["hybrid"], true);
  // Key order is part of the format: schema first.
  EXPECT_EQ(capability_report_json(sample_report()).rfind("{\"schema\":\"pmcprof/1\"", 0), 0u);
}

TEST(DoctorCapabilities, TableIsAligned) {
  std::ostringstream out;
  write_capability_table(sample_report(), out);
  EXPECT_EQ(out.str(),
            "CAPABILITY  AVAILABLE  WHY\n"
            "btf         yes        parses: 10 types\n"
            "kprobes     no         no kprobe PMU\n"
            "cgroup_v2   yes        cgroup2 at /x\n");
}

TEST(DoctorCapabilities, FindByName) {
  auto r = sample_report();
  ASSERT_NE(r.find("kprobes"), nullptr);
  EXPECT_FALSE(r.find("kprobes")->result.available);
  EXPECT_EQ(r.find("nope"), nullptr);
}

}  // namespace
}  // namespace pmcprof

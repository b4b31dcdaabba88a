#include <gtest/gtest.h>

#include <string>

#include "pmcprof/platform/mountinfo.hpp"
#include "pmcprof/platform/tracefs.hpp"

namespace pmcprof {
namespace {

// This project's test machines: systemd-style hybrid layout, v2 at /sys/fs/cgroup/unified.
constexpr const char* kHybrid = R"(22 27 0:21 / /proc rw,relatime - proc proc rw
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
)";

// A modern distribution: only cgroup2, at /sys/fs/cgroup, with optional fields present.
constexpr const char* kPureV2 =
    "21 26 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "26 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n"
    "30 21 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n"
    "33 21 0:12 / /sys/kernel/tracing rw,nosuid,nodev,noexec,relatime shared:12 - tracefs "
    "tracefs rw\n";

// An old distribution: v1 only, controllers co-mounted on one hierarchy.
constexpr const char* kV1Only =
    "25 18 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:23 / /sys/fs/cgroup/systemd rw,nosuid shared:10 - cgroup cgroup "
    "rw,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd\n"
    "29 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:13 - cgroup cgroup rw,cpu,cpuacct\n"
    "30 25 0:27 / /sys/fs/cgroup/perf_event rw,nosuid shared:14 - cgroup cgroup rw,perf_event\n";

constexpr const char* kNoCgroup =
    "1 0 254:0 / / rw - ext4 /dev/vda rw\n"
    "2 1 0:4 / /proc rw - proc proc rw\n";

TEST(Mountinfo, ParsesEveryFieldOfALine) {
  auto mounts = parse_mountinfo(kPureV2);
  ASSERT_EQ(mounts.size(), 4u);
  const auto& m = mounts[2];
  EXPECT_EQ(m.mount_id, 30);
  EXPECT_EQ(m.parent_id, 21);
  EXPECT_EQ(m.major_minor, "0:26");
  EXPECT_EQ(m.root, "/");
  EXPECT_EQ(m.mount_point, "/sys/fs/cgroup");
  EXPECT_EQ(m.mount_options, "rw,nosuid,nodev,noexec,relatime");
  ASSERT_EQ(m.optional_fields.size(), 1u);
  EXPECT_EQ(m.optional_fields[0], "shared:4");
  EXPECT_EQ(m.fs_type, "cgroup2");
  EXPECT_EQ(m.source, "cgroup2");
  EXPECT_EQ(m.super_options, "rw,nsdelegate,memory_recursiveprot");
}

TEST(Mountinfo, ParsesLinesWithoutAndWithSeveralOptionalFields) {
  auto mounts = parse_mountinfo(
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
      "50 1 0:40 / /mnt rw shared:5 master:2 propagate_from:1 - tmpfs none rw\n");
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_TRUE(mounts[0].optional_fields.empty());
  EXPECT_EQ(mounts[0].fs_type, "cgroup2");
  EXPECT_EQ(mounts[1].optional_fields.size(), 3u);
  EXPECT_EQ(mounts[1].fs_type, "tmpfs");
  EXPECT_EQ(mounts[1].source, "none");
}

TEST(Mountinfo, UnescapesSpacesAndOtherOctalEscapes) {
  auto mounts = parse_mountinfo(
      "60 1 0:50 /my\\040dir /mnt/with\\040space\\011tab\\134 rw - cgroup2 "
      "my\\040src rw\n");
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].root, "/my dir");
  EXPECT_EQ(mounts[0].mount_point, "/mnt/with space\ttab\\");
  EXPECT_EQ(mounts[0].source, "my src");
  auto cg = find_cgroup2_mount(mounts);
  ASSERT_TRUE(cg);
  EXPECT_EQ(cg->mount_point, "/mnt/with space\ttab\\");
}

TEST(Mountinfo, UnescapeLeavesIncompleteEscapesAlone) {
  EXPECT_EQ(unescape_mount_field("a\\04"), "a\\04");
  EXPECT_EQ(unescape_mount_field("a\\9zz"), "a\\9zz");
  EXPECT_EQ(unescape_mount_field("plain"), "plain");
  EXPECT_EQ(unescape_mount_field("\\040"), " ");
}

TEST(Mountinfo, SkipsMalformedLinesAndBlankLines) {
  auto mounts = parse_mountinfo(
      "\n"
      "garbage\n"
      "x 1 0:1 / /a rw - ext4 /dev/x rw\n"         // non-numeric id
      "5 1 0:1 / /b rw shared:1 ext4 /dev/x rw\n"  // no separator
      "6 1 0:1 / /c rw - ext4\n"                   // nothing after the fs type
      "7 1 0:1 / /d rw - ext4 /dev/x rw\n");
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].mount_point, "/d");
}

TEST(Mountinfo, AcceptsMissingSuperOptionsAndNoTrailingNewline) {
  auto mounts = parse_mountinfo("7 1 0:1 / /d rw - ext4 /dev/x");
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].super_options, "");
}

TEST(Mountinfo, HybridLayoutFindsUnifiedAndV1Controllers) {
  auto cg = find_cgroup2_mount(parse_mountinfo(kHybrid));
  ASSERT_TRUE(cg);
  EXPECT_EQ(cg->mount_point, "/sys/fs/cgroup/unified");
  EXPECT_EQ(cg->root, "/");
  EXPECT_TRUE(cg->hybrid);
  ASSERT_EQ(cg->v1_hierarchies.size(), 4u);
  EXPECT_EQ(cg->v1_hierarchies[0].mount_point, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(cg->v1_hierarchies[0].controllers, std::vector<std::string>{"cpu"});
  EXPECT_EQ(cg->v1_hierarchies[3].controllers, std::vector<std::string>{"name=systemd"});
}

TEST(Mountinfo, PureV2LayoutIsNotHybrid) {
  auto cg = find_cgroup2_mount(parse_mountinfo(kPureV2));
  ASSERT_TRUE(cg);
  EXPECT_EQ(cg->mount_point, "/sys/fs/cgroup");
  EXPECT_FALSE(cg->hybrid);
  EXPECT_TRUE(cg->v1_hierarchies.empty());
}

TEST(Mountinfo, V1OnlyLayoutHasNoCgroup2) {
  auto mounts = parse_mountinfo(kV1Only);
  EXPECT_FALSE(find_cgroup2_mount(mounts));
  auto v1 = find_cgroup1_hierarchies(mounts);
  ASSERT_EQ(v1.size(), 3u);
  // Generic options (xattr, release_agent=...) are not controllers.
  EXPECT_EQ(v1[0].controllers, std::vector<std::string>{"name=systemd"});
  EXPECT_EQ(v1[1].mount_point, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(v1[1].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ(v1[2].controllers, std::vector<std::string>{"perf_event"});
}

TEST(Mountinfo, NoCgroupAtAll) {
  auto mounts = parse_mountinfo(kNoCgroup);
  EXPECT_EQ(mounts.size(), 2u);
  EXPECT_FALSE(find_cgroup2_mount(mounts));
  EXPECT_TRUE(find_cgroup1_hierarchies(mounts).empty());
  EXPECT_FALSE(find_cgroup2_mount({}));
}

TEST(Mountinfo, OnlyANamedV1HierarchyIsNotHybrid) {
  // Some container runtimes keep a name=systemd v1 hierarchy for old systemd inside.
  auto cg = find_cgroup2_mount(
      parse_mountinfo("30 21 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
                      "31 30 0:27 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n"));
  ASSERT_TRUE(cg);
  EXPECT_FALSE(cg->hybrid);
  EXPECT_EQ(cg->v1_hierarchies.size(), 1u);
}

TEST(Mountinfo, PrefersConventionalCgroup2MountPoints) {
  auto cg = find_cgroup2_mount(
      parse_mountinfo("40 1 0:38 /docker/abc /var/lib/ctr/cg rw - cgroup2 cgroup2 rw\n"
                      "41 1 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
                      "42 1 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"));
  ASSERT_TRUE(cg);
  EXPECT_EQ(cg->mount_point, "/sys/fs/cgroup");

  cg =
      find_cgroup2_mount(parse_mountinfo("40 1 0:38 /docker/abc /var/lib/ctr/cg rw - cgroup2 "
                                         "cgroup2 rw\n"));
  ASSERT_TRUE(cg);
  EXPECT_EQ(cg->mount_point, "/var/lib/ctr/cg");
  EXPECT_EQ(cg->root, "/docker/abc");
}

TEST(Mountinfo, FindsTracefsPreferringTheStandardPlace) {
  EXPECT_EQ(find_tracefs(parse_mountinfo(kPureV2)), "/sys/kernel/tracing");
  EXPECT_FALSE(find_tracefs(parse_mountinfo(kHybrid)));
  auto both = parse_mountinfo(
      "10 1 0:12 / /mnt/t rw - tracefs nodev rw\n"
      "11 1 0:12 / /sys/kernel/tracing rw - tracefs nodev rw\n");
  EXPECT_EQ(find_tracefs(both), "/sys/kernel/tracing");
  EXPECT_EQ(find_tracefs(parse_mountinfo("10 1 0:12 / /mnt/t rw - tracefs nodev rw\n")), "/mnt/t");
}

TEST(Mountinfo, FallsBackToTracingUnderDebugfs) {
  auto mounts = parse_mountinfo("9 1 0:7 / /sys/kernel/debug rw - debugfs debugfs rw\n");
  EXPECT_EQ(find_tracefs(mounts), "/sys/kernel/debug/tracing");
}

}  // namespace
}  // namespace pmcprof

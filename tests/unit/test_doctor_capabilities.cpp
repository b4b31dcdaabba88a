#include <errno.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

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

// Every check doctor makes, each available unless named in `missing` (with that brief).
CapabilityReport machine(const std::vector<std::pair<std::string, std::string>>& missing) {
  CapabilityReport r;
  for (const char* name :
       {"btf", "cap_bpf", "cap_perfmon", "hardware_pmu", "software_events", "kprobes", "fentry",
        "uprobes", "uprobe_multi", "syscall_tracepoints", "cgroup_v2", "perf_event_paranoid",
        "bpf_counter_read", "attach_cookie", "task_storage"}) {
    ProbeResult result{true, std::string(name) + " works", {}, {}};
    for (const auto& [n, brief] : missing)
      if (n == name) result = {false, "the long reason", {}, brief};
    if (std::string(name) == "cgroup_v2")
      result.facts.push_back({"mount_point", std::string("/cg")});
    r.capabilities.push_back({name, result});
  }
  return r;
}

const JobVerdict& job(const MachineVerdict& v, const std::string& id) {
  for (const auto& j : v.jobs)
    if (j.job == id) return j;
  throw std::runtime_error("no job " + id);
}

TEST(DoctorVerdict, ThisTestbed) {
  // No PMU, no kprobes, fentry refused: the machine pmcprof is developed on.
  const auto v = judge_machine(machine({{"hardware_pmu", "no PMU (no cpu PMU in sysfs)"},
                                        {"kprobes", "no kprobes (kernel without CONFIG_KPROBES)"},
                                        {"fentry", "fentry refused (EPERM)"}}));
  EXPECT_FALSE(job(v, "count_hardware").available);
  EXPECT_EQ(job(v, "count_hardware").detail, "no PMU (no cpu PMU in sysfs)");
  EXPECT_TRUE(job(v, "count_software").available);
  EXPECT_FALSE(job(v, "func_kernel").available);
  EXPECT_EQ(job(v, "func_kernel").detail,
            "no kprobes (kernel without CONFIG_KPROBES); fentry refused (EPERM)");
  for (const char* id : {"func_user", "func_syscall", "func_usdt", "cgroup", "serve"})
    EXPECT_TRUE(job(v, id).available) << id;
  EXPECT_NE(job(v, "cgroup").detail.find("cgroup v2 at /cg"), std::string::npos);
  EXPECT_EQ(job(v, "serve").detail.find("cycles"), std::string::npos);
  EXPECT_EQ(v.summary,
            "no PMU: count software events (task-clock, page-faults, context-switches, "
            "cpu-migrations); --func works for user functions, syscalls and USDT probes here, not "
            "kernel functions (no kprobes, fentry refused)");
}

TEST(DoctorVerdict, EverythingWorks) {
  const auto v = judge_machine(machine({}));
  for (const auto& j : v.jobs) EXPECT_TRUE(j.available) << j.job << ": " << j.detail;
  EXPECT_EQ(job(v, "func_kernel").detail, "--func vfs_read (fentry, kprobes)");
  EXPECT_NE(job(v, "serve").detail.find("cycles,instructions,"), std::string::npos);
  EXPECT_EQ(v.summary,
            "count hardware events (cycles, instructions, ...) and software events; --func works "
            "for kernel functions, user functions, syscalls and USDT probes");
}

TEST(DoctorVerdict, OneKernelBackendIsEnough) {
  const auto v = judge_machine(machine({{"fentry", "fentry refused (ENOTSUPP)"}}));
  EXPECT_TRUE(job(v, "func_kernel").available);
  EXPECT_EQ(job(v, "func_kernel").detail, "--func vfs_read (kprobes)");
}

TEST(DoctorVerdict, NoBpfMeansNoFunctionMode) {
  const auto v = judge_machine(
      machine({{"bpf_counter_read", "BPF programs refused (EPERM)"}, {"uprobes", "no uprobes"}}));
  for (const char* id : {"func_kernel", "func_user", "func_syscall", "func_usdt"})
    EXPECT_FALSE(job(v, id).available) << id;
  EXPECT_EQ(job(v, "func_user").detail, "BPF programs refused (EPERM); no uprobes");
  EXPECT_TRUE(job(v, "count_hardware").available);
  EXPECT_NE(v.summary.find("--func works for nothing here (BPF programs refused, no uprobes)"),
            std::string::npos)
      << v.summary;
}

TEST(DoctorVerdict, NoAttachCookieMeansNoFunctionMode) {
  // Linux 5.10 (Debian 11, Amazon Linux 2): counting works, function mode cannot load; no task
  // storage either, which alone would only move per-thread state to the hash.
  const auto v = judge_machine(machine({{"attach_cookie", "no bpf_get_attach_cookie (Linux 5.15)"},
                                        {"task_storage", "no BPF task local storage"}}));
  for (const char* id : {"func_kernel", "func_user", "func_syscall", "func_usdt"}) {
    EXPECT_FALSE(job(v, id).available) << id;
    EXPECT_NE(job(v, id).detail.find("no bpf_get_attach_cookie (Linux 5.15)"), std::string::npos)
        << job(v, id).detail;
  }
  for (const char* id : {"count_hardware", "count_software", "cgroup", "serve"})
    EXPECT_TRUE(job(v, id).available) << id;
  const auto w = judge_machine(machine({{"task_storage", "no BPF task local storage"}}));
  for (const auto& j : w.jobs) EXPECT_TRUE(j.available) << j.job << ": " << j.detail;
}

TEST(DoctorVerdict, NothingCounts) {
  const auto v = judge_machine(machine({{"hardware_pmu", "no PMU (x)"},
                                        {"software_events", "task-clock refused (EACCES)"},
                                        {"cgroup_v2", "no cgroup v2 (nothing mounted)"}}));
  EXPECT_FALSE(job(v, "serve").available);
  EXPECT_EQ(job(v, "serve").detail, "task-clock refused (EACCES); no PMU (x)");
  EXPECT_EQ(job(v, "cgroup").detail,
            "no cgroup v2 (nothing mounted); task-clock refused (EACCES); no PMU (x)");
  EXPECT_EQ(v.summary.rfind("nothing can be counted (no PMU, task-clock refused); ", 0), 0u)
      << v.summary;
}

TEST(DoctorVerdict, TextAndJsonCarryIt) {
  const auto report = machine({{"kprobes", "no kprobes (k)"}, {"fentry", "fentry refused (f)"}});
  std::ostringstream out;
  write_verdict(judge_machine(report), out);
  EXPECT_NE(out.str().find("\nVERDICT  "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\n--func on kernel functions       no    no kprobes (k); fentry "
                           "refused (f)\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("\nIn short: "), std::string::npos);
  auto doc = nlohmann::json::parse(capability_report_json(report));
  ASSERT_TRUE(doc["verdict"]["jobs"].is_array());
  EXPECT_EQ(doc["verdict"]["jobs"].size(), judge_machine(report).jobs.size());
  EXPECT_EQ(doc["verdict"]["jobs"][2]["job"], "func_kernel");
  EXPECT_EQ(doc["verdict"]["jobs"][2]["available"], false);
  EXPECT_EQ(doc["verdict"]["summary"], judge_machine(report).summary);
}

TEST(DoctorCapabilities, FindByName) {
  auto r = sample_report();
  ASSERT_NE(r.find("kprobes"), nullptr);
  EXPECT_FALSE(r.find("kprobes")->result.available);
  EXPECT_EQ(r.find("nope"), nullptr);
}

}  // namespace
}  // namespace pmcprof

#include "pmcprof/report/doctor_report.hpp"

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string_view>
#include <utility>
#include <variant>

#include "pmcprof/report/report.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

void write_capability_table(const CapabilityReport& report, std::ostream& out) {
  std::size_t width = std::string_view("CAPABILITY").size();
  for (const auto& c : report.capabilities) width = std::max(width, c.name.size());
  auto row = [&](std::string_view name, std::string_view available, std::string_view why) {
    out << name << std::string(width - name.size() + 2, ' ') << available
        << std::string(std::string_view("AVAILABLE").size() - available.size() + 2, ' ') << why
        << '\n';
  };
  row("CAPABILITY", "AVAILABLE", "WHY");
  for (const auto& c : report.capabilities) {
    row(c.name, c.result.available ? "yes" : "no", c.result.detail);
  }
}

namespace {

// The software events every kernel with perf events has: what counting falls back to.
constexpr const char* kSoftwareEvents = "task-clock,page-faults,context-switches,cpu-migrations";
// Function mode loads a CO-RE BPF object that reads counters with bpf_perf_event_read_value
// and finds each probed point's id in its attach cookie.
constexpr std::string_view kFunctionModeChecks[] = {"btf", "bpf_counter_read", "attach_cookie"};

// The capability checks as the verdict asks about them.
class Checks {
 public:
  explicit Checks(const CapabilityReport& report) : report_(report) {}

  bool ok(std::string_view name) const {
    const Capability* c = report_.find(name);
    return c && c->result.available;
  }
  bool function_mode() const {
    return std::all_of(std::begin(kFunctionModeChecks), std::end(kFunctionModeChecks),
                       [&](std::string_view n) { return ok(n); });
  }
  // Why check `name` failed, in a few words (ProbeResult::brief).
  std::string why(std::string_view name) const {
    const Capability* c = report_.find(name);
    if (!c) return std::string(name) + " not checked";
    if (!c->result.brief.empty()) return c->result.brief;
    return std::string(name) + " check failed (see above)";
  }
  // The briefs of the failed checks among `names`.
  std::vector<std::string> failed(std::initializer_list<std::string_view> names) const {
    std::vector<std::string> out;
    for (std::string_view n : names)
      if (!ok(n)) out.push_back(why(n));
    return out;
  }
  std::vector<std::string> function_mode_failed() const {
    std::vector<std::string> out;
    for (std::string_view n : kFunctionModeChecks)
      if (!ok(n)) out.push_back(why(n));
    return out;
  }
  std::string fact(std::string_view name, std::string_view key) const {
    const Capability* c = report_.find(name);
    if (!c) return {};
    for (const auto& f : c->result.facts)
      if (f.key == key && std::holds_alternative<std::string>(f.value))
        return std::get<std::string>(f.value);
    return {};
  }

 private:
  const CapabilityReport& report_;
};

// "no kprobes" of "no kprobes (kernel without CONFIG_KPROBES)": the brief's phrase.
std::string phrase(std::string_view brief) {
  return std::string(brief.substr(0, brief.find(" (")));
}

// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& items) {
  if (items.size() < 2) return items.empty() ? "" : items.front();
  std::vector<std::string> head(items.begin(), items.end() - 1);
  return join(head, ", ") + " and " + items.back();
}

JobVerdict verdict(std::string job, std::string title, const std::vector<std::string>& why_not,
                   std::string use) {
  const bool ok = why_not.empty();
  return {std::move(job), std::move(title), ok, ok ? std::move(use) : join(why_not, "; ")};
}

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<JobVerdict> judge_jobs(const Checks& c) {
  const bool hw = c.ok("hardware_pmu"), sw = c.ok("software_events");
  const std::string pmu = c.fact("hardware_pmu", "pmu");
  const auto fm = c.function_mode_failed();
  std::vector<JobVerdict> jobs;
  jobs.push_back(verdict(
      "count_hardware", "count hardware events", c.failed({"hardware_pmu"}),
      "-e cycles,instructions,branches,cache-misses" + (pmu.empty() ? "" : " (" + pmu + ")")));
  jobs.push_back(verdict("count_software", "count software events", c.failed({"software_events"}),
                         std::string("-e ") + kSoftwareEvents));

  std::vector<std::string> kernel = fm;
  if (!c.ok("kprobes") && !c.ok("fentry")) kernel = plus(kernel, c.failed({"kprobes", "fentry"}));
  const std::string backends =
      c.ok("fentry") ? (c.ok("kprobes") ? "fentry, kprobes" : "fentry") : "kprobes";
  jobs.push_back(verdict("func_kernel", "--func on kernel functions", kernel,
                         "--func vfs_read (" + backends + ")"));
  jobs.push_back(verdict("func_user", "--func on user functions", plus(fm, c.failed({"uprobes"})),
                         "--func ./prog:main, --func libc:malloc (uprobes)"));
  jobs.push_back(verdict("func_syscall", "--func on syscalls",
                         plus(fm, c.failed({"syscall_tracepoints"})),
                         "--func syscall:read (syscall tracepoints)"));
  jobs.push_back(verdict("func_usdt", "--func on USDT probes, --region",
                         plus(fm, c.failed({"uprobes"})),
                         "--func usdt:BINARY:PROVIDER:NAME, --region START,END (uprobes)"));

  // Anything countable is countable per cgroup, and served.
  const auto nothing =
      hw || sw ? std::vector<std::string>{} : c.failed({"software_events", "hardware_pmu"});
  const std::string served = std::string(hw ? "cycles,instructions," : "") + kSoftwareEvents;
  jobs.push_back(verdict("cgroup", "per-cgroup counting", plus(c.failed({"cgroup_v2"}), nothing),
                         "-a -G CGROUP, -a --for-each-cgroup DIR (cgroup v2 at " +
                             c.fact("cgroup_v2", "mount_point") + ")"));
  jobs.push_back(verdict("serve", "serve /metrics", nothing, "pmcprof serve -e " + served));
  return jobs;
}

// "no PMU: count software events (task-clock, ...)".
std::string counting_summary(const Checks& c) {
  const bool hw = c.ok("hardware_pmu"), sw = c.ok("software_events");
  const std::string events = join(split(kSoftwareEvents, ','), ", ");
  if (hw && sw) return "count hardware events (cycles, instructions, ...) and software events";
  if (hw)
    return "count hardware events; no software events (" + phrase(c.why("software_events")) + ")";
  if (sw) return phrase(c.why("hardware_pmu")) + ": count software events (" + events + ")";
  return "nothing can be counted (" + phrase(c.why("hardware_pmu")) + ", " +
         phrase(c.why("software_events")) + ")";
}

// "--func works for user functions, syscalls and USDT probes here, not kernel functions (no
// kprobes, fentry refused)".
std::string function_summary(const std::vector<JobVerdict>& jobs) {
  static constexpr std::pair<std::string_view, const char*> kKinds[] = {
      {"func_kernel", "kernel functions"},
      {"func_user", "user functions"},
      {"func_syscall", "syscalls"},
      {"func_usdt", "USDT probes"}};
  std::vector<std::string> works, fails, reasons;
  for (const auto& [job_id, kind] : kKinds) {
    const std::string_view id = job_id;  // a lambda cannot capture a structured binding
    const auto j =
        std::find_if(jobs.begin(), jobs.end(), [id](const auto& v) { return v.job == id; });
    if (j == jobs.end()) continue;
    if (j->available) {
      works.emplace_back(kind);
      continue;
    }
    fails.emplace_back(kind);
    for (const auto& why : split(j->detail, ';')) {
      std::string p = phrase(trim(why));
      if (std::find(reasons.begin(), reasons.end(), p) == reasons.end()) reasons.push_back(p);
    }
  }
  const std::string why = " (" + join(reasons, ", ") + ")";
  if (works.empty()) return "--func works for nothing here" + why;
  if (fails.empty()) return "--func works for " + and_list(works);
  return "--func works for " + and_list(works) + " here, not " + and_list(fails) + why;
}

}  // namespace

MachineVerdict judge_machine(const CapabilityReport& report) {
  const Checks checks(report);
  MachineVerdict v;
  v.jobs = judge_jobs(checks);
  v.summary = counting_summary(checks) + "; " + function_summary(v.jobs);
  return v;
}

void write_verdict(const MachineVerdict& verdict, std::ostream& out) {
  std::size_t width = std::string_view("VERDICT").size();
  for (const auto& j : verdict.jobs) width = std::max(width, j.title.size());
  auto row = [&](std::string_view title, std::string_view here, std::string_view detail) {
    out << title << std::string(width - title.size() + 2, ' ') << here
        << std::string(std::string_view("HERE").size() - here.size() + 2, ' ') << detail << '\n';
  };
  out << '\n';
  row("VERDICT", "HERE", "WHAT TO USE / WHY NOT");
  for (const auto& j : verdict.jobs) row(j.title, j.available ? "yes" : "no", j.detail);
  out << "\nIn short: " << verdict.summary << ".\n";
}

std::string capability_report_json(const CapabilityReport& report) {
  nlohmann::ordered_json caps = nlohmann::ordered_json::array();
  for (const auto& c : report.capabilities) {
    nlohmann::ordered_json item;
    item["name"] = c.name;
    item["available"] = c.result.available;
    item["detail"] = c.result.detail;
    for (const auto& fact : c.result.facts) {
      std::visit([&](const auto& v) { item[fact.key] = v; }, fact.value);
    }
    caps.push_back(std::move(item));
  }
  nlohmann::ordered_json doc;
  doc["schema"] = kJsonSchema;
  doc["type"] = "doctor";
  doc["capabilities"] = std::move(caps);
  const MachineVerdict v = judge_machine(report);
  nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
  for (const auto& j : v.jobs)
    jobs.push_back(
        {{"job", j.job}, {"title", j.title}, {"available", j.available}, {"detail", j.detail}});
  doc["verdict"] = {{"jobs", std::move(jobs)}, {"summary", v.summary}};
  return doc.dump();
}

}  // namespace pmcprof

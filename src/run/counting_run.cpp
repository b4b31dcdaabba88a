#include "pmcprof/run/counting_run.hpp"

#include "pmcprof/platform/cpu_list.hpp"
#include "pmcprof/run/counting_session.hpp"
#include "pmcprof/run/session.hpp"

namespace pmcprof {

namespace {

RunControl run_control(const CountingPlan& plan) {
  RunControl c;
  c.command = plan.command;
  // With a command, -p/-t only name what is counted: the command bounds the time (perf).
  if (plan.command.empty()) {
    c.pid = plan.pid;
    c.tid = plan.tid;
  }
  c.interval_ms = plan.interval_ms;
  c.interval_count = plan.interval_count;
  c.timeout_ms = plan.timeout_ms;
  c.readers = plan.readers;
  c.on_live = plan.on_live;
  return c;
}

}  // namespace

std::string describe_target(const CountingPlan& plan) {
  if (plan.system_wide)
    return plan.cpus_explicit ? "CPU(s) " + format_cpu_list(plan.cpus) : "system wide";
  if (plan.pid) return "process id " + std::to_string(*plan.pid);
  if (plan.tid) return "thread id " + std::to_string(*plan.tid);
  std::string s;
  for (const auto& a : plan.command) s += (s.empty() ? "" : " ") + a;
  return s;
}

CountingOutcome run_counting(const CountingPlan& plan, ReportRenderer* intervals) {
  SignalBlocker signals;
  Run run(run_control(plan), signals);
  auto session = open_counting_session(plan, run.workload(), intervals);
  const RunEnd end = run.drive(*session);
  CountingOutcome outcome;
  outcome.report = std::move(session->report());
  outcome.exit_code = end.exit_status.value_or(0);
  return outcome;
}

}  // namespace pmcprof

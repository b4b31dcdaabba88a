#include "pmcprof/run/counting_run.hpp"

#include <variant>

#include "pmcprof/platform/cpu_list.hpp"
#include "pmcprof/run/counting_session.hpp"
#include "pmcprof/run/session.hpp"

namespace pmcprof {

namespace {

// serve's hook (CountingPlan::on_live), kept while serve moves to Session::live(): hands it
// the session's live totals once counting has started, and takes them back before it stops.
class LiveHook : public Session {
 public:
  LiveHook(Session& inner, const std::function<void(std::function<CountingReport()>)>& on_live)
      : inner_(inner), on_live_(on_live) {}
  void attach() override { inner_.attach(); }
  void start() override {
    inner_.start();
    on_live_([this] { return std::get<CountingReport>(inner_.live()); });
  }
  std::vector<RunLoopOptions::Reader> readers() override { return inner_.readers(); }
  void interval() override { inner_.interval(); }
  LiveReport live() override { return inner_.live(); }
  void stop() override {
    on_live_({});
    inner_.stop();
  }
  void finish(const RunEnd& end) override { inner_.finish(end); }

 private:
  Session& inner_;
  const std::function<void(std::function<CountingReport()>)>& on_live_;
};

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
  std::optional<LiveHook> hook;
  if (plan.on_live) hook.emplace(*session, plan.on_live);
  const RunEnd end = run.drive(hook ? static_cast<Session&>(*hook) : *session);
  CountingOutcome outcome;
  outcome.report = std::move(session->report());
  outcome.exit_code = end.exit_status.value_or(0);
  return outcome;
}

}  // namespace pmcprof

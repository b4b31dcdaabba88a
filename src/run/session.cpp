#include "pmcprof/run/session.hpp"

#include <utility>

#include "pmcprof/platform/system.hpp"

namespace pmcprof {

Run::Run(const RunControl& control, const SignalBlocker& signals)
    : control_(control), signals_(signals) {
  if (!control_.command.empty())
    workload_.emplace(Workload::prepare(control_.command, signals_.previous()));
}

RunEnd Run::drive(Session& session) {
  session.attach();
  Fd target_pidfd;
  if (control_.pid) target_pidfd = open_pidfd(*control_.pid, false);
  if (control_.tid) target_pidfd = open_pidfd(*control_.tid, true);

  RunEnd end;
  session.start();
  end.start_ns = monotonic_ns();
  // serve reads live() only between start() and stop(), however the loop ends.
  struct LiveScope {
    const LiveSink* sink;
    LiveScope(const LiveSink& s, Session& session) : sink(s ? &s : nullptr) {
      if (sink) (*sink)([&session] { return session.live(); });
    }
    ~LiveScope() { end(); }
    void end() {
      if (const LiveSink* s = std::exchange(sink, nullptr)) (*s)({});
    }
  } live(control_.on_live, session);
  if (workload_) workload_->start();

  RunLoopOptions loop_opts;
  loop_opts.interval_ms = control_.interval_ms;
  loop_opts.interval_count = control_.interval_count;
  loop_opts.timeout_ms = control_.timeout_ms;
  loop_opts.workload_pidfd = workload_ ? workload_->pidfd() : -1;
  loop_opts.target_pidfd = target_pidfd.get();
  loop_opts.readers = session.readers();
  for (const auto& r : control_.readers) loop_opts.readers.push_back(r);
  RunLoop loop(signals_, loop_opts);
  // A -p/-t target already gone: nothing to wait for (its pidfd could not be opened).
  const bool target_gone = (control_.pid || control_.tid) && !target_pidfd;
  end.why = target_gone ? StopReason::target_exited : loop.run([&] { session.interval(); });

  // Measuring ends here: tearing probes down afterwards is not part of the elapsed time.
  end.end_ns = monotonic_ns();
  live.end();
  session.stop();
  if (workload_) {
    end.exit_status = workload_->finish(end.why == StopReason::workload_exited, loop.stop_signal());
    if (auto ru = workload_->rusage()) {
      end.user_ns = static_cast<std::uint64_t>(ru->ru_utime.tv_sec) * 1000000000ull +
                    static_cast<std::uint64_t>(ru->ru_utime.tv_usec) * 1000ull;
      end.sys_ns = static_cast<std::uint64_t>(ru->ru_stime.tv_sec) * 1000000000ull +
                   static_cast<std::uint64_t>(ru->ru_stime.tv_usec) * 1000ull;
    }
  }
  session.finish(end);
  return end;
}

}  // namespace pmcprof

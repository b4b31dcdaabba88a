#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "pmcprof/run/run_loop.hpp"
#include "pmcprof/run/session.hpp"
#include "pmcprof/util/fd.hpp"

namespace pmcprof {

// How `serve` gets the running totals without the measurement ever waiting for a client.
//
// The measurement thread owns the counters and the per-call stream (the run loop). Serving
// threads never touch them: a serving thread that needs the totals calls request(), which
// writes an eventfd that the run loop services as one more Reader; the measurement thread
// answers by building the live report (a map read, microseconds to a few milliseconds) and
// publishing it, then goes back to its loop. Rendering, compression and sending happen on the
// serving thread. Requests made while one is pending share the next answer, so a burst of
// scrapes costs the measurement thread one report.
//
// The one hook the measurement side needs: the Reader, and set_source() when counting goes
// live (and an empty source when it stops). With the Session interface the source is
// `[&] { return session.live(); }`, set between start() and stop().
class LiveFeed {
 public:
  using Source = std::function<LiveReport()>;

  LiveFeed();
  LiveFeed(const LiveFeed&) = delete;
  LiveFeed& operator=(const LiveFeed&) = delete;

  // ---- measurement thread ----
  // The eventfd the run loop polls and what answers it.
  RunLoopOptions::Reader reader();
  // Counting is live and `source` builds its totals; an empty source: not live (any waiting
  // request is answered with nothing at once).
  void set_source(Source source);

  // ---- serving threads ----
  // A report built after this call was made, or null when counting is not live or the
  // measurement thread did not answer within `timeout`.
  std::shared_ptr<const LiveReport> request(std::chrono::milliseconds timeout);
  bool live() const;
  // Reports built so far (each answers one or more requests).
  std::uint64_t answers() const;

 private:
  void answer();

  Fd event_;
  mutable std::mutex mu_;
  std::condition_variable answered_cv_;
  bool live_ = false;
  std::uint64_t asked_ = 0;     // requests made: request n waits until answered_ >= n
  std::uint64_t answered_ = 0;  // requests the newest report answers
  std::uint64_t answers_ = 0;
  std::shared_ptr<const LiveReport> latest_;
  Source source_;  // measurement thread only
};

}  // namespace pmcprof

// run/live_feed.hpp: scrapes ask the measurement thread for the totals, never the other way.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "pmcprof/run/live_feed.hpp"

using namespace pmcprof;
using namespace std::chrono_literals;

namespace {

// A stand-in for the run loop: polls the feed's reader until told to stop.
class Loop {
 public:
  explicit Loop(LiveFeed& feed) : reader_(feed.reader()) {
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{reader_.fd, POLLIN, 0};
        if (::poll(&p, 1, 10) > 0 && !paused_) reader_.on_readable();
      }
    });
  }
  ~Loop() {
    stop_ = true;
    thread_.join();
  }
  void pause(bool p) { paused_ = p; }

 private:
  RunLoopOptions::Reader reader_;
  std::atomic<bool> stop_{false}, paused_{false};
  std::thread thread_;
};

LiveReport counting_report(std::uint64_t elapsed) {
  CountingReport r;
  r.elapsed_ns = elapsed;
  return r;
}

}  // namespace

TEST(LiveFeed, NotLiveAnswersNothingAtOnce) {
  LiveFeed feed;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(feed.request(5s), nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_FALSE(feed.live());
}

TEST(LiveFeed, EachRequestGetsAReportBuiltAfterIt) {
  LiveFeed feed;
  std::atomic<std::uint64_t> built{0};
  Loop loop(feed);
  // set_source is the measurement thread's; here no report is being built while it is set.
  feed.set_source([&] { return counting_report(++built); });
  EXPECT_TRUE(feed.live());
  auto first = feed.request(5s);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(std::get<CountingReport>(*first).elapsed_ns, 1u);
  auto second = feed.request(5s);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(std::get<CountingReport>(*second).elapsed_ns, 2u);
  EXPECT_EQ(feed.answers(), 2u);
}

TEST(LiveFeed, ConcurrentRequestsShareOneReport) {
  LiveFeed feed;
  std::atomic<int> built{0};
  Loop loop(feed);
  feed.set_source([&] { return counting_report(static_cast<std::uint64_t>(++built)); });
  loop.pause(true);  // the measurement thread is busy: requests pile up
  std::vector<std::thread> scrapers;
  std::atomic<int> got{0};
  for (int i = 0; i < 8; ++i)
    scrapers.emplace_back([&] {
      if (feed.request(5s)) ++got;
    });
  std::this_thread::sleep_for(100ms);
  loop.pause(false);
  for (auto& t : scrapers) t.join();
  EXPECT_EQ(got.load(), 8);
  EXPECT_EQ(built.load(), 1);
}

TEST(LiveFeed, NoAnswerWithinTheTimeoutIsNothing) {
  LiveFeed feed;
  feed.set_source([] { return counting_report(1); });
  // Nobody services the reader.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(feed.request(100ms), nullptr);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 100ms);
}

TEST(LiveFeed, StoppingReleasesWaitingRequests) {
  LiveFeed feed;
  feed.set_source([] { return counting_report(1); });
  std::shared_ptr<const LiveReport> result = std::make_shared<const LiveReport>();
  std::thread scraper([&] { result = feed.request(10s); });
  std::this_thread::sleep_for(50ms);
  const auto t0 = std::chrono::steady_clock::now();
  feed.set_source({});
  scraper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(result, nullptr);
  EXPECT_FALSE(feed.live());
}

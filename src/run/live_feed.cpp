#include "pmcprof/run/live_feed.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "pmcprof/util/error.hpp"

namespace pmcprof {

LiveFeed::LiveFeed() : event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!event_) throw SystemError("eventfd: " + errno_string(errno));
}

RunLoopOptions::Reader LiveFeed::reader() {
  return {event_.get(), [this] { answer(); }};
}

void LiveFeed::set_source(Source source) {
  source_ = std::move(source);
  {
    std::lock_guard lock(mu_);
    live_ = static_cast<bool>(source_);
    if (!live_) latest_.reset();
  }
  answered_cv_.notify_all();
}

void LiveFeed::answer() {
  std::uint64_t count;
  while (::read(event_.get(), &count, sizeof(count)) < 0 && errno == EINTR) {
  }
  std::uint64_t target;
  {
    std::lock_guard lock(mu_);
    target = asked_;
    if (answered_ >= target || !source_) return;
  }
  // Built outside the lock: serving threads only ever wait on the condition variable.
  auto report = std::make_shared<const LiveReport>(source_());
  {
    std::lock_guard lock(mu_);
    latest_ = std::move(report);
    answered_ = target;
    ++answers_;
  }
  answered_cv_.notify_all();
}

std::shared_ptr<const LiveReport> LiveFeed::request(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!live_) return nullptr;
  const std::uint64_t ticket = ++asked_;
  const std::uint64_t one = 1;
  // Non-blocking; EAGAIN only if the counter would overflow, when it is readable anyway.
  while (::write(event_.get(), &one, sizeof(one)) < 0 && errno == EINTR) {
  }
  answered_cv_.wait_for(lock, timeout, [&] { return answered_ >= ticket || !live_; });
  if (!live_ || answered_ < ticket) return nullptr;
  return latest_;
}

bool LiveFeed::live() const {
  std::lock_guard lock(mu_);
  return live_;
}

std::uint64_t LiveFeed::answers() const {
  std::lock_guard lock(mu_);
  return answers_;
}

}  // namespace pmcprof

#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "pmcprof/stream/call_record.hpp"

struct perf_buffer;

namespace pmcprof {

struct PerfBufferDeleter {
  void operator()(perf_buffer* pb) const;
};

// The per-call stream (stage 4): libbpf's perf_buffer over the BPF-output PERF_EVENT_ARRAY,
// opened raw so that wake-ups follow a watermark (a quarter of each CPU's ring) instead of
// one wake-up per record. PERF_RECORD_LOST counts are summed: nothing is dropped silently.
class RecordStream {
 public:
  using Sink = std::function<void(const CallRecord&)>;

  // page_count per CPU: a power of two; shape: what the run's samples carry.
  RecordStream(int records_map_fd, std::size_t page_count, RecordShape shape, Sink sink);
  RecordStream(RecordStream&&) = delete;

  int epoll_fd() const;
  // Reads everything that is in the rings now.
  void drain();

  std::uint64_t received() const { return received_; }
  std::uint64_t lost() const { return lost_; }            // PERF_RECORD_LOST totals
  std::uint64_t malformed() const { return malformed_; }  // samples that did not decode

 private:
  static int on_event(void* ctx, int cpu, void* header);
  std::unique_ptr<perf_buffer, PerfBufferDeleter> pb_;
  RecordShape shape_;
  Sink sink_;
  std::uint64_t received_ = 0;
  std::uint64_t lost_ = 0;
  std::uint64_t malformed_ = 0;
};

}  // namespace pmcprof

#include "pmcprof/stream/record_stream.hpp"

#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <cerrno>

#include "pmcprof/util/error.hpp"

namespace pmcprof {

void PerfBufferDeleter::operator()(perf_buffer* pb) const {
  perf_buffer__free(pb);
}

namespace {

struct SampleRaw {
  perf_event_header header;
  std::uint32_t size;
  char data[];
};

struct LostRecord {
  perf_event_header header;
  std::uint64_t id;
  std::uint64_t lost;
};

}  // namespace

RecordStream::RecordStream(int records_map_fd, std::size_t page_count, RecordShape shape, Sink sink)
    : shape_(shape), sink_(std::move(sink)) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_BPF_OUTPUT;
  attr.sample_type = PERF_SAMPLE_RAW;
  attr.sample_period = 1;
  // Wake the reader when a quarter of the ring is full, not at every record.
  attr.watermark = 1;
  attr.wakeup_watermark = static_cast<__u32>(page_count * sysconf(_SC_PAGESIZE) / 4);
  LIBBPF_OPTS(perf_buffer_raw_opts, opts);
  perf_buffer* pb = perf_buffer__new_raw(
      records_map_fd, page_count, &attr,
      [](void* ctx, int cpu, perf_event_header* ev) {
        return static_cast<bpf_perf_event_ret>(on_event(ctx, cpu, ev));
      },
      this, &opts);
  if (!pb)
    throw SystemError("cannot open the per-call stream (perf_buffer): " + errno_string(errno),
                      "a smaller --buffer-pages needs less locked memory");
  pb_.reset(pb);
}

int RecordStream::on_event(void* ctx, int /*cpu*/, void* header) {
  auto* self = static_cast<RecordStream*>(ctx);
  auto* h = static_cast<perf_event_header*>(header);
  if (h->type == PERF_RECORD_SAMPLE) {
    auto* s = static_cast<SampleRaw*>(header);
    if (auto rec = decode_call_record(s->data, s->size, self->shape_)) {
      ++self->received_;
      self->sink_(*rec);
    } else {
      ++self->malformed_;
    }
  } else if (h->type == PERF_RECORD_LOST) {
    self->lost_ += static_cast<LostRecord*>(header)->lost;
  }
  return LIBBPF_PERF_EVENT_CONT;
}

int RecordStream::epoll_fd() const {
  return perf_buffer__epoll_fd(pb_.get());
}

void RecordStream::drain() {
  perf_buffer__consume(pb_.get());
}

}  // namespace pmcprof

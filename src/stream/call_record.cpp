#include "pmcprof/stream/call_record.hpp"

#include <cstddef>
#include <cstring>

#include "pmcprof.h"

namespace pmcprof {

static_assert(offsetof(pmcprof_record, delta) == PMCPROF_RECORD_HEADER_SIZE);

bool CallRecord::slept() const {
  return flags & PMCPROF_REC_SLEPT;
}
bool CallRecord::migrated() const {
  return flags & PMCPROF_REC_MIGRATED;
}
bool CallRecord::multiplexed() const {
  return flags & PMCPROF_REC_MULTIPLEXED;
}
bool CallRecord::not_counted() const {
  return flags & PMCPROF_REC_NOT_COUNTED;
}

std::optional<CallRecord> decode_call_record(const void* data, std::size_t size) {
  if (size < PMCPROF_RECORD_HEADER_SIZE) return std::nullopt;
  pmcprof_record raw{};
  std::memcpy(&raw, data, std::min(size, sizeof(raw)));
  if (raw.n_events > PMCPROF_MAX_EVENTS) return std::nullopt;
  if (size < PMCPROF_RECORD_HEADER_SIZE + raw.n_events * sizeof(__u64)) return std::nullopt;
  CallRecord r;
  r.func_id = raw.func_id;
  r.pid = raw.pid;
  r.tid = raw.tid;
  r.cpu = raw.cpu;
  r.cgroup_id = raw.cgroup_id;
  r.wall_ns = raw.wall_ns;
  r.oncpu_ns = raw.oncpu_ns;
  r.flags = raw.flags;
  r.comm.assign(raw.comm, strnlen(raw.comm, sizeof(raw.comm)));
  r.delta.assign(raw.delta, raw.delta + raw.n_events);
  return r;
}

}  // namespace pmcprof

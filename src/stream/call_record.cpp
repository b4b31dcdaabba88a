#include "pmcprof/stream/call_record.hpp"

#include <cstddef>
#include <cstring>

#include "pmcprof.h"

namespace pmcprof {

static_assert(kMaxBpfEvents == PMCPROF_MAX_EVENTS);
static_assert(sizeof(CallRecord) == sizeof(pmcprof_record));
static_assert(offsetof(CallRecord, cgroup_id) == offsetof(pmcprof_record, cgroup_id));
static_assert(offsetof(CallRecord, flags) == offsetof(pmcprof_record, flags));
static_assert(offsetof(CallRecord, measured) == offsetof(pmcprof_record, measured));
static_assert(offsetof(CallRecord, comm) == offsetof(pmcprof_record, comm));
static_assert(offsetof(CallRecord, delta) == PMCPROF_RECORD_HEADER_SIZE);
static_assert(offsetof(CallRecord, key) == PMCPROF_RECORD_KEY_OFFSET);
static_assert(kKeySize == PMCPROF_KEY_SIZE);

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
bool CallRecord::read_error() const {
  return flags & PMCPROF_REC_READ_ERROR;
}
std::string_view CallRecord::command() const {
  return {comm.data(), strnlen(comm.data(), comm.size())};
}

std::optional<CallRecord> decode_call_record(const void* data, std::size_t size) {
  if (size < PMCPROF_RECORD_HEADER_SIZE) return std::nullopt;
  CallRecord r;
  std::memcpy(static_cast<void*>(&r), data, PMCPROF_RECORD_HEADER_SIZE);
  if (r.n_events > PMCPROF_MAX_EVENTS) return std::nullopt;
  if (size < PMCPROF_RECORD_HEADER_SIZE + r.n_events * sizeof(std::uint64_t)) return std::nullopt;
  std::memcpy(r.delta.data(), static_cast<const char*>(data) + PMCPROF_RECORD_HEADER_SIZE,
              r.n_events * sizeof(std::uint64_t));
  if (size >= sizeof(pmcprof_record))
    std::memcpy(r.key.data(), static_cast<const char*>(data) + PMCPROF_RECORD_KEY_OFFSET,
                r.key.size());
  return r;
}

}  // namespace pmcprof

#include "pmcprof/stream/call_record.hpp"

#include <cstddef>
#include <cstring>

#include "pmcprof.h"

namespace pmcprof {

static_assert(kMaxBpfEvents == PMCPROF_MAX_EVENTS);
static_assert(sizeof(CallRecord) == sizeof(pmcprof_record));
static_assert(offsetof(CallRecord, cgroup_id) == offsetof(pmcprof_record, cgroup_id));
static_assert(offsetof(CallRecord, comm) == offsetof(pmcprof_record, comm));
static_assert(offsetof(CallRecord, func_id) == PMCPROF_RECORD_CALL_OFFSET);
static_assert(offsetof(CallRecord, flags) == offsetof(pmcprof_record, flags));
static_assert(offsetof(CallRecord, n_events) == offsetof(pmcprof_record, n_events));
static_assert(offsetof(CallRecord, measured) == offsetof(pmcprof_record, measured));
static_assert(offsetof(CallRecord, delta) == PMCPROF_RECORD_HEADER_SIZE);
static_assert(offsetof(CallRecord, key) == offsetof(pmcprof_record, key));
static_assert(kKeySize == PMCPROF_KEY_SIZE);

std::optional<std::uint64_t> unreadable_key_arg(std::string_view slot) {
  if (slot.size() <= PMCPROF_KEY_UNREADABLE_OFF ||
      slot[PMCPROF_KEY_UNREADABLE_OFF] != PMCPROF_KEY_UNREADABLE ||
      slot.substr(0, 8).find_first_not_of('\0') != std::string_view::npos)
    return std::nullopt;
  std::uint64_t address = 0;
  std::memcpy(&address, slot.data() + PMCPROF_KEY_ADDR_OFF, sizeof(address));
  return address;
}

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

std::optional<CallRecord> decode_call_record(const void* data, std::size_t size,
                                             RecordShape shape) {
  // The sample starts at the caller, or (compact) at the call.
  const std::size_t from = shape == RecordShape::call ? PMCPROF_RECORD_CALL_OFFSET : 0;
  const std::size_t header = PMCPROF_RECORD_HEADER_SIZE - from;
  if (size < header) return std::nullopt;
  const auto* bytes = static_cast<const char*>(data);
  CallRecord r;
  std::memcpy(reinterpret_cast<char*>(&r) + from, bytes, header);
  if (r.n_events > PMCPROF_MAX_EVENTS) return std::nullopt;
  const std::size_t deltas = r.n_events * sizeof(std::uint64_t);
  if (shape == RecordShape::keyed) {
    if (size < sizeof(pmcprof_record)) return std::nullopt;
    std::memcpy(r.delta.data(), bytes + header, deltas);
    std::memcpy(r.key.data(), bytes + offsetof(pmcprof_record, key), r.key.size());
    return r;
  }
  if (size < header + deltas) return std::nullopt;
  std::memcpy(r.delta.data(), bytes + header, deltas);
  return r;
}

}  // namespace pmcprof

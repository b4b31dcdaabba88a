#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pmcprof {

// One completed call as it leaves the kernel (struct pmcprof_record, bpf/pmcprof.h).
struct CallRecord {
  std::uint32_t func_id = 0;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::uint32_t cpu = 0;
  std::uint64_t cgroup_id = 0;
  std::uint64_t wall_ns = 0;
  std::uint64_t oncpu_ns = 0;
  std::uint32_t flags = 0;
  std::string comm;
  std::vector<std::uint64_t> delta;  // normalized, one per BPF event

  bool slept() const;
  bool migrated() const;
  bool multiplexed() const;
  bool not_counted() const;
};

// Decodes a BPF-output sample. nullopt when the size does not fit the header and the
// n_events it announces (a truncated or foreign sample).
std::optional<CallRecord> decode_call_record(const void* data, std::size_t size);

}  // namespace pmcprof

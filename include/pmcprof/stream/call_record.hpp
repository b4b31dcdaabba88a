#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pmcprof {

inline constexpr std::size_t kMaxBpfEvents = 8;  // PMCPROF_MAX_EVENTS (bpf/pmcprof.h)
inline constexpr std::size_t kKeySize = 128;     // PMCPROF_KEY_SIZE

// --by argN: one argument's slot of a key as the BPF side wrote it (bpf/pmcprof.h): the address
// BPF could not read there, or nullopt when the slot holds the argument's value.
std::optional<std::uint64_t> unreadable_key_arg(std::string_view slot);

// One completed call as it leaves the kernel: the layout of struct pmcprof_record
// (bpf/pmcprof.h, checked at compile time), so decoding is a copy or two and no allocation.
struct CallRecord {
  // Who made the call: on the wire only in the caller and keyed shapes (else zero).
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::uint64_t cgroup_id = 0;
  std::array<char, 16> comm{};
  // The call.
  std::uint32_t func_id = 0;
  std::uint32_t flags = 0;
  // With the probe bias taken off, wall_ns, oncpu_ns and delta[] are signed (two's
  // complement): sums add them as they are, min/max/histograms see them clamped at 0.
  std::uint64_t wall_ns = 0;
  std::uint64_t oncpu_ns = 0;
  std::uint8_t n_events = 0;
  std::uint8_t under_floor = 0;  // bit i: event i (bias taken off) is below its noise floor
  std::uint8_t measured = 0;     // bit i: event i ran through the whole call (exact)
  std::uint8_t ran = 0;          // bit i: event i ran in part of every piece of it (bpf/pmcprof.h)
  std::uint32_t cpu = 0;         // where it ended
  std::array<std::uint64_t, kMaxBpfEvents> delta{};  // only n_events are meaningful
  // --by argN: the arguments read at the call's start (zero when the sample has none).
  std::array<char, kKeySize> key{};

  bool slept() const;
  bool migrated() const;
  bool multiplexed() const;
  bool not_counted() const;
  bool read_error() const;
  std::string_view command() const;  // comm up to its NUL
};

// What a run's samples carry (bpf/func.bpf.c, emit): the call and its n_events deltas; the
// caller before them (--by pid, comm, cpu, cgroup); or the whole record (--by argN: every
// delta slot, then the key). One shape per run, told to the reader by the run.
enum class RecordShape { call, caller, keyed };

// Decodes a BPF-output sample of `shape`. nullopt when the size does not fit the shape's
// header and the n_events it announces (a truncated or foreign sample). perf pads samples to
// 8 bytes: extra bytes are ignored.
std::optional<CallRecord> decode_call_record(const void* data, std::size_t size, RecordShape shape);

}  // namespace pmcprof

// Decoding the BPF-output samples (struct pmcprof_record) the function-mode stream reads.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "../../bpf/pmcprof.h"
#include "pmcprof/stream/call_record.hpp"

using namespace pmcprof;

namespace {

// The caller shape (--by pid, ...): the caller, the call and the first n_events deltas.
std::size_t wire_size(std::uint32_t n_events) {
  return PMCPROF_RECORD_HEADER_SIZE + n_events * sizeof(__u64);
}

pmcprof_record sample_record() {
  pmcprof_record r;
  std::memset(&r, 0, sizeof(r));
  r.func_id = 3;
  r.pid = 4242;
  r.tid = 4243;
  r.cpu = 7;
  r.cgroup_id = 0x1234567890abcdefULL;
  r.wall_ns = 1500000;
  r.oncpu_ns = 1200000;
  r.flags = PMCPROF_REC_SLEPT | PMCPROF_REC_MULTIPLEXED;
  r.n_events = 2;
  r.measured = 0x1;  // event 0 ran through the call; event 1 only in part
  r.ran = 0x3;
  std::memcpy(r.comm, "pingpong", 8);
  r.delta[0] = 3000000;
  r.delta[1] = 4500000;
  r.delta[2] = 0xdeadbeef;  // beyond n_events: must not be decoded
  return r;
}

// The bytes of `r` cut to `size` (as a perf sample would carry them).
std::vector<unsigned char> bytes_of(const pmcprof_record& r, std::size_t size) {
  std::vector<unsigned char> out(size);
  if (size) std::memcpy(out.data(), &r, std::min(size, sizeof(r)));  // data() may be null
  return out;
}

}  // namespace

TEST(CallRecord, LayoutMatchesBpfHeader) {
  EXPECT_EQ(offsetof(pmcprof_record, delta), static_cast<std::size_t>(PMCPROF_RECORD_HEADER_SIZE));
  EXPECT_EQ(offsetof(pmcprof_record, func_id),
            static_cast<std::size_t>(PMCPROF_RECORD_CALL_OFFSET));
  EXPECT_EQ(offsetof(pmcprof_record, comm) + 16, offsetof(pmcprof_record, func_id));
  EXPECT_EQ(offsetof(pmcprof_record, key), PMCPROF_RECORD_HEADER_SIZE + PMCPROF_MAX_EVENTS * 8u);
  EXPECT_EQ(sizeof(pmcprof_record), offsetof(pmcprof_record, key) + std::size_t{PMCPROF_KEY_SIZE});
  // CallRecord is a fixed-layout mirror of the C struct: decoding is one copy.
  EXPECT_EQ(sizeof(CallRecord), sizeof(pmcprof_record));
  EXPECT_EQ(offsetof(CallRecord, cgroup_id), offsetof(pmcprof_record, cgroup_id));
  EXPECT_EQ(offsetof(CallRecord, func_id), offsetof(pmcprof_record, func_id));
  EXPECT_EQ(offsetof(CallRecord, wall_ns), offsetof(pmcprof_record, wall_ns));
  EXPECT_EQ(offsetof(CallRecord, flags), offsetof(pmcprof_record, flags));
  EXPECT_EQ(offsetof(CallRecord, n_events), offsetof(pmcprof_record, n_events));
  EXPECT_EQ(offsetof(CallRecord, measured), offsetof(pmcprof_record, measured));
  EXPECT_EQ(offsetof(CallRecord, ran), offsetof(pmcprof_record, ran));
  EXPECT_EQ(offsetof(CallRecord, comm), offsetof(pmcprof_record, comm));
  EXPECT_EQ(offsetof(CallRecord, delta), offsetof(pmcprof_record, delta));
  EXPECT_EQ(offsetof(CallRecord, key), offsetof(pmcprof_record, key));
  EXPECT_EQ(kMaxBpfEvents, static_cast<std::size_t>(PMCPROF_MAX_EVENTS));
}

TEST(CallRecord, DecodeExactSize) {
  const pmcprof_record raw = sample_record();
  const auto buf = bytes_of(raw, wire_size(2));
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::caller);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->func_id, 3u);
  EXPECT_EQ(rec->pid, 4242u);
  EXPECT_EQ(rec->tid, 4243u);
  EXPECT_EQ(rec->cpu, 7u);
  EXPECT_EQ(rec->cgroup_id, 0x1234567890abcdefULL);
  EXPECT_EQ(rec->wall_ns, 1500000u);
  EXPECT_EQ(rec->oncpu_ns, 1200000u);
  EXPECT_EQ(rec->flags, PMCPROF_REC_SLEPT | PMCPROF_REC_MULTIPLEXED);
  EXPECT_EQ(rec->command(), "pingpong");
  EXPECT_EQ(rec->measured, 0x1u);
  EXPECT_EQ(rec->ran, 0x3u);
  ASSERT_EQ(rec->n_events, 2u);
  EXPECT_EQ(rec->delta[0], 3000000u);
  EXPECT_EQ(rec->delta[1], 4500000u);
  // Deltas past n_events are not decoded (not on the wire): zero, not the sender's bytes.
  for (std::size_t i = 2; i < kMaxBpfEvents; ++i) EXPECT_EQ(rec->delta[i], 0u) << i;
}

TEST(CallRecord, DecodeFullSizeRecord) {
  // A sample padded to the full struct still decodes only n_events deltas.
  const pmcprof_record raw = sample_record();
  const auto buf = bytes_of(raw, sizeof(raw));
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::caller);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->n_events, 2u);
  EXPECT_EQ(rec->delta[1], 4500000u);
  EXPECT_EQ(rec->delta[2], 0u);  // 0xdeadbeef was sent past n_events: ignored
}

TEST(CallRecord, DecodeTrailingPadding) {
  // perf pads raw samples to 8 bytes (the u32 size + data): a few extra bytes are fine.
  const pmcprof_record raw = sample_record();
  const auto buf = bytes_of(raw, wire_size(2) + 4);
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::caller);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->n_events, 2u);
  EXPECT_EQ(rec->delta[1], 4500000u);
  EXPECT_EQ(rec->delta[2], 0u);
}

TEST(CallRecord, ZeroEvents) {
  pmcprof_record raw = sample_record();
  raw.n_events = 0;
  const auto buf = bytes_of(raw, wire_size(0));
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::caller);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->n_events, 0u);
  for (std::size_t i = 0; i < kMaxBpfEvents; ++i) EXPECT_EQ(rec->delta[i], 0u) << i;
  EXPECT_EQ(rec->pid, 4242u);
}

TEST(CallRecord, MaxEvents) {
  pmcprof_record raw = sample_record();
  raw.n_events = PMCPROF_MAX_EVENTS;
  for (int i = 0; i < PMCPROF_MAX_EVENTS; ++i) raw.delta[i] = 100 + i;
  const auto buf = bytes_of(raw, wire_size(PMCPROF_MAX_EVENTS));
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::caller);
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->n_events, static_cast<std::size_t>(PMCPROF_MAX_EVENTS));
  EXPECT_EQ(rec->delta[0], 100u);
  EXPECT_EQ(rec->delta.back(), 100u + PMCPROF_MAX_EVENTS - 1);
}

TEST(CallRecord, TooShortForHeader) {
  const pmcprof_record raw = sample_record();
  for (std::size_t size : {std::size_t{0}, std::size_t{4}, std::size_t{32},
                           std::size_t{PMCPROF_RECORD_HEADER_SIZE - 1}}) {
    const auto buf = bytes_of(raw, size);
    EXPECT_FALSE(decode_call_record(buf.data(), buf.size(), RecordShape::caller)) << size;
  }
}

TEST(CallRecord, TooManyEvents) {
  pmcprof_record raw = sample_record();
  raw.n_events = PMCPROF_MAX_EVENTS + 1;
  const auto buf = bytes_of(raw, sizeof(raw));
  EXPECT_FALSE(decode_call_record(buf.data(), buf.size(), RecordShape::caller));
  raw.n_events = 0xff;  // a foreign sample (n_events is a u8 on the wire now)
  const auto buf2 = bytes_of(raw, sizeof(raw));
  EXPECT_FALSE(decode_call_record(buf2.data(), buf2.size(), RecordShape::caller));
}

TEST(CallRecord, ShortOfAnnouncedDeltas) {
  const pmcprof_record raw = sample_record();  // n_events = 2
  for (std::size_t size : {wire_size(0), wire_size(1), wire_size(2) - 1}) {
    const auto buf = bytes_of(raw, size);
    EXPECT_FALSE(decode_call_record(buf.data(), buf.size(), RecordShape::caller)) << size;
  }
}

TEST(CallRecord, CommFillsAllSixteenBytes) {
  // No NUL inside comm[16]: the decoder must stop at 16 bytes, not read into delta[].
  pmcprof_record raw = sample_record();
  std::memcpy(raw.comm, "abcdefghijklmnop", 16);
  const auto buf = bytes_of(raw, wire_size(2));
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::caller);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->command(), "abcdefghijklmnop");
  EXPECT_EQ(rec->command().size(), 16u);
}

TEST(CallRecord, EmptyComm) {
  pmcprof_record raw = sample_record();
  std::memset(raw.comm, 0, sizeof(raw.comm));
  const auto buf = bytes_of(raw, wire_size(2));
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::caller);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->command(), "");
}

TEST(CallRecord, CommandStopsAtFirstNul) {
  pmcprof_record raw = sample_record();
  std::memcpy(raw.comm, "ab\0cdefgh", 9);
  const auto buf = bytes_of(raw, wire_size(2));
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::caller);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->command(), "ab");
}

TEST(CallRecord, MeasuredAndRanSurviveDecoding) {
  pmcprof_record raw = sample_record();
  raw.n_events = PMCPROF_MAX_EVENTS;
  raw.measured = 0xa5;
  raw.ran = 0xf7;
  const auto buf = bytes_of(raw, wire_size(PMCPROF_MAX_EVENTS));
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::caller);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->measured, 0xa5u);
  EXPECT_EQ(rec->ran, 0xf7u);
}

TEST(CallRecord, FlagAccessors) {
  CallRecord r;
  EXPECT_FALSE(r.slept());
  EXPECT_FALSE(r.migrated());
  EXPECT_FALSE(r.multiplexed());
  EXPECT_FALSE(r.not_counted());
  EXPECT_FALSE(r.read_error());
  r.flags = PMCPROF_REC_SLEPT;
  EXPECT_TRUE(r.slept());
  EXPECT_FALSE(r.migrated());
  r.flags = PMCPROF_REC_MIGRATED;
  EXPECT_TRUE(r.migrated());
  EXPECT_FALSE(r.slept());
  r.flags = PMCPROF_REC_MULTIPLEXED;
  EXPECT_TRUE(r.multiplexed());
  EXPECT_FALSE(r.not_counted());
  r.flags = PMCPROF_REC_NOT_COUNTED;
  EXPECT_TRUE(r.not_counted());
  EXPECT_FALSE(r.multiplexed());
  EXPECT_FALSE(r.read_error());
  r.flags = PMCPROF_REC_READ_ERROR;
  EXPECT_TRUE(r.read_error());
  EXPECT_FALSE(r.not_counted());
  r.flags = PMCPROF_REC_SLEPT | PMCPROF_REC_MIGRATED | PMCPROF_REC_MULTIPLEXED |
            PMCPROF_REC_NOT_COUNTED | PMCPROF_REC_READ_ERROR;
  EXPECT_TRUE(r.slept() && r.migrated() && r.multiplexed() && r.not_counted() && r.read_error());
}

TEST(CallRecord, FlagsSurviveDecoding) {
  pmcprof_record raw = sample_record();
  raw.flags = PMCPROF_REC_MIGRATED | PMCPROF_REC_NOT_COUNTED;
  const auto buf = bytes_of(raw, wire_size(2));
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::caller);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(rec->migrated());
  EXPECT_TRUE(rec->not_counted());
  EXPECT_FALSE(rec->slept());
  EXPECT_FALSE(rec->multiplexed());
}

TEST(CallRecord, FlagsAreDistinctBits) {
  const unsigned flags[] = {PMCPROF_REC_SLEPT, PMCPROF_REC_MIGRATED, PMCPROF_REC_MULTIPLEXED,
                            PMCPROF_REC_NOT_COUNTED, PMCPROF_REC_READ_ERROR};
  unsigned all = 0;
  for (unsigned f : flags) {
    EXPECT_EQ(f & (f - 1), 0u) << f;  // one bit
    EXPECT_EQ(all & f, 0u) << f;      // not shared
    all |= f;
  }
}

// The compact shape (no --by): the call and its deltas only, 32 + 8 n bytes, from func_id.
TEST(CallRecord, CompactShapeCarriesTheCallOnly) {
  const pmcprof_record raw = sample_record();
  const std::size_t size = PMCPROF_RECORD_HEADER_SIZE - PMCPROF_RECORD_CALL_OFFSET + 2 * 8;
  EXPECT_EQ(size, 48u);  // 2 events: half the 96 bytes of the caller shape's first version
  std::vector<unsigned char> buf(size + 4);  // perf's padding
  std::memcpy(buf.data(), reinterpret_cast<const char*>(&raw) + PMCPROF_RECORD_CALL_OFFSET, size);
  const auto rec = decode_call_record(buf.data(), buf.size(), RecordShape::call);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->func_id, 3u);
  EXPECT_EQ(rec->wall_ns, 1500000u);
  EXPECT_EQ(rec->oncpu_ns, 1200000u);
  EXPECT_EQ(rec->flags, PMCPROF_REC_SLEPT | PMCPROF_REC_MULTIPLEXED);
  EXPECT_EQ(rec->measured, 0x1u);
  EXPECT_EQ(rec->ran, 0x3u);
  ASSERT_EQ(rec->n_events, 2u);
  EXPECT_EQ(rec->delta[0], 3000000u);
  EXPECT_EQ(rec->delta[1], 4500000u);
  EXPECT_EQ(rec->delta[2], 0u);
  // Not on the wire: zero, not guessed.
  EXPECT_EQ(rec->pid, 0u);
  EXPECT_EQ(rec->cgroup_id, 0u);
  EXPECT_EQ(rec->command(), "");
  // Short of the call's header or of its announced deltas: not a record.
  for (std::size_t cut : {std::size_t{0}, std::size_t{31}, size - 1})
    EXPECT_FALSE(decode_call_record(buf.data(), cut, RecordShape::call)) << cut;
}

// The keyed shape (--by argN) is the whole record: every delta slot, then the key.
TEST(CallRecord, KeyedShapeNeedsTheWholeRecord) {
  pmcprof_record raw = sample_record();
  std::strcpy(reinterpret_cast<char*>(raw.key.b), "k=1");
  const auto full = bytes_of(raw, sizeof(raw));
  const auto rec = decode_call_record(full.data(), full.size(), RecordShape::keyed);
  ASSERT_TRUE(rec);
  EXPECT_STREQ(rec->key.data(), "k=1");
  EXPECT_EQ(rec->pid, 4242u);
  EXPECT_EQ(rec->delta[1], 4500000u);
  EXPECT_EQ(rec->delta[2], 0u);  // past n_events: not decoded
  const auto cut = bytes_of(raw, sizeof(raw) - 1);
  EXPECT_FALSE(decode_call_record(cut.data(), cut.size(), RecordShape::keyed));
}

// --by argN: a slot BPF marked unreadable gives the address; values read whole give nothing,
// whatever bytes they hold (bpf/pmcprof.h).
TEST(CallRecord, UnreadableKeyArgument) {
  std::string slot(PMCPROF_KEY_SIZE / 2, '\0');
  EXPECT_EQ(unreadable_key_arg(slot), std::nullopt);  // an empty string, or the integer 0
  const std::uint64_t address = 0x7ffd12345678;
  std::memcpy(slot.data() + PMCPROF_KEY_ADDR_OFF, &address, sizeof(address));
  slot[PMCPROF_KEY_UNREADABLE_OFF] = PMCPROF_KEY_UNREADABLE;
  EXPECT_EQ(unreadable_key_arg(slot), address);
  std::string null_pointer(PMCPROF_KEY_SIZE, '\0');
  null_pointer[PMCPROF_KEY_UNREADABLE_OFF] = PMCPROF_KEY_UNREADABLE;
  EXPECT_EQ(unreadable_key_arg(null_pointer), 0u);
  // A string read whole may hold any byte there: its first 8 bytes are not all zero.
  std::string text = "abcdefghijklmnop";
  text += static_cast<char>(PMCPROF_KEY_UNREADABLE);
  text.resize(PMCPROF_KEY_SIZE / 2, '\0');
  EXPECT_EQ(unreadable_key_arg(text), std::nullopt);
  // An integer whose value is 0 leaves the mark's byte 0.
  std::string integer(PMCPROF_KEY_SIZE / 2, '\0');
  EXPECT_EQ(unreadable_key_arg(integer), std::nullopt);
  EXPECT_EQ(unreadable_key_arg(std::string_view()), std::nullopt);
}

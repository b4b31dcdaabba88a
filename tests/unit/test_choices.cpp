// The function-mode flags' values (src/cli/choices.cpp): every parser accepts exactly its
// documented values and refuses anything else in one line naming the flag, with a hint that
// lists the values, as a usage error (exit 2).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "pmcprof/cli/choices.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

namespace {

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// Calls `parse(text)` and checks the refusal: the flag and the value in the message, one line,
// every documented value in the hint (or message), usage exit code.
template <typename Parse>
void expect_refused(Parse parse, const std::string& text, const std::string& flag,
                    const std::vector<std::string>& documented) {
  try {
    parse(text);
    ADD_FAILURE() << "accepted " << flag << " '" << text << "'";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, flag + " '" + text + "'")) << what;
    EXPECT_FALSE(contains(what, "\n")) << "not one line: " << what;
    for (const auto& v : documented)
      EXPECT_TRUE(contains(e.hint(), v) || contains(what, v))
          << flag << ": '" << v << "' not named: " << what << " / " << e.hint();
    EXPECT_EQ(e.exit_code(), kExitUsage) << what;
  }
}

}  // namespace

// ---- --aggregate: auto, kernel, stream, both ----

TEST(Choices, AggregateValues) {
  EXPECT_EQ(parse_aggregate_choice("auto"), AggregateChoice::automatic);
  EXPECT_EQ(parse_aggregate_choice("stream"), AggregateChoice::stream);
  EXPECT_EQ(parse_aggregate_choice("kernel"), AggregateChoice::kernel);
  EXPECT_EQ(parse_aggregate_choice("both"), AggregateChoice::both);
}

TEST(Choices, AggregateRefused) {
  for (const char* text : {"", "Kernel", "user", "streams", "automatic", "both "})
    expect_refused([](const std::string& t) { return parse_aggregate_choice(t); }, text,
                   "--aggregate", {"auto", "kernel", "stream", "both"});
}

// ---- --by: pid, comm, cpu, cgroup ----

TEST(Choices, BreakdownValues) {
  EXPECT_EQ(parse_breakdown("pid"), Breakdown::pid);
  EXPECT_EQ(parse_breakdown("comm"), Breakdown::comm);
  EXPECT_EQ(parse_breakdown("cpu"), Breakdown::cpu);
  EXPECT_EQ(parse_breakdown("cgroup"), Breakdown::cgroup);
  for (Breakdown b : {Breakdown::pid, Breakdown::comm, Breakdown::cpu, Breakdown::cgroup})
    EXPECT_EQ(parse_breakdown(to_string(b)), b);
}

TEST(Choices, BreakdownRefused) {
  // "none" is the absence of --by, not a value of it.
  for (const char* text : {"", "tid", "PID", "none", "pid,comm"})
    expect_refused([](const std::string& t) { return parse_breakdown(t); }, text, "--by",
                   {"pid", "comm", "cpu", "cgroup"});
}

// ---- --backend: auto, fentry, kprobe ----

TEST(Choices, BackendValues) {
  EXPECT_EQ(parse_backend_request("auto"), BackendRequest::automatic);
  EXPECT_EQ(parse_backend_request("fentry"), BackendRequest::fentry);
  EXPECT_EQ(parse_backend_request("kprobe"), BackendRequest::kprobe);
}

TEST(Choices, BackendRefused) {
  // uprobes and tracepoints follow from the --func target; they are not a --backend.
  for (const char* text : {"", "uprobe", "FENTRY", "kprobes", "auto ", "tracepoint"})
    expect_refused([](const std::string& t) { return parse_backend_request(t); }, text, "--backend",
                   {"auto", "fentry", "kprobe"});
}

// ---- --thread-state: auto, task-storage, hash ----

TEST(Choices, ThreadStoreValues) {
  EXPECT_EQ(parse_thread_store("auto"), ThreadStore::automatic);
  EXPECT_EQ(parse_thread_store("task-storage"), ThreadStore::task_storage);
  EXPECT_EQ(parse_thread_store("hash"), ThreadStore::hash);
}

TEST(Choices, ThreadStoreRefused) {
  for (const char* text : {"", "task_storage", "taskstorage", "Hash", "map", "auto,hash"})
    expect_refused([](const std::string& t) { return parse_thread_store(t); }, text,
                   "--thread-state", {"auto", "task-storage", "hash"});
}

// ---- --buffer-pages: a power of two, 1..65536 ----

TEST(Choices, BufferPagesPowersOfTwo) {
  for (long long p = 1; p <= 65536; p *= 2)
    EXPECT_EQ(validate_buffer_pages(p), static_cast<std::size_t>(p)) << p;
}

TEST(Choices, BufferPagesRefused) {
  for (long long pages : {0LL, -1LL, -256LL, 3LL, 6LL, 100LL, 255LL, 257LL, 65535LL, 131072LL,
                          1LL << 40, (1LL << 62) + 1}) {
    try {
      validate_buffer_pages(pages);
      ADD_FAILURE() << "accepted --buffer-pages " << pages;
    } catch (const UserError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(contains(what, "--buffer-pages")) << what;
      EXPECT_TRUE(contains(what, std::to_string(pages))) << what;
      EXPECT_TRUE(contains(what, "power of two")) << what;
      EXPECT_TRUE(contains(what, "65536")) << what;
      EXPECT_FALSE(contains(what, "\n")) << what;
      EXPECT_FALSE(e.hint().empty());
      EXPECT_EQ(e.exit_code(), kExitUsage) << what;
    }
  }
}

// ---- --hist-linear: MIN,MAX,STEP, as bpftrace's lhist; times with units ----

TEST(Choices, HistLinearValues) {
  const HistLinear counts = parse_hist_linear("0,5000,250");
  EXPECT_EQ(counts.min, 0);
  EXPECT_EQ(counts.max, 5000);
  EXPECT_EQ(counts.step, 250);
  EXPECT_FALSE(counts.time);
  EXPECT_EQ(counts.text, "0,5000,250");
  const HistLinear times = parse_hist_linear("0,2ms,100us");  // a bare 0 in a range of times
  EXPECT_TRUE(times.time);
  EXPECT_EQ(times.min, 0);
  EXPECT_EQ(times.max, 2e6);
  EXPECT_EQ(times.step, 1e5);
  const HistLinear mixed = parse_hist_linear("1.5us,1s,2500ms");
  EXPECT_EQ(mixed.min, 1500);
  EXPECT_EQ(mixed.max, 1e9);
  EXPECT_EQ(mixed.step, 2.5e9);
  const HistLinear ratio = parse_hist_linear("0,4,0.25");  // IPC
  EXPECT_EQ(ratio.step, 0.25);
  EXPECT_FALSE(ratio.time);
  EXPECT_EQ(parse_hist_linear("0,1000,1").max, 1000);  // 1,000 rows: the most
}

TEST(Choices, HistLinearRefused) {
  const auto parse = [](const std::string& t) { return parse_hist_linear(t); };
  for (const char* text :
       {"", "0,100", "0,100,10,1", "a,100,10", "0,,10", "-1,100,10", "0,1e3,10", "0,.5,0.1",
        "0,1.,0.1", "0,1.2.3,0.1", "0,100,0", "100,100,10", "100,0,10", "0,2ms,100", "0,2 ms,100us",
        "0,2min,1s", "0,2ms,1ns", "0,1001,1", "0x10,100,10"})
    expect_refused(parse, text, "--hist-linear", {});
  // What each says.
  const auto says = [](const std::string& text, const std::string& part) {
    try {
      parse_hist_linear(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const UserError& e) {
      EXPECT_TRUE(contains(e.what(), part)) << e.what();
      EXPECT_FALSE(e.hint().empty());
    }
  };
  says("0,100", "give MIN,MAX,STEP");
  says("0,2ms,100", "'100' has no unit, the others do");
  says("0,2min,1s", "unknown unit 'min'");
  says("100,0,10", "MAX must be above MIN");
  says("0,100,0", "STEP must be above 0");
  says("0,1s,1us", "1,000,000 rows, more than 1000");
}

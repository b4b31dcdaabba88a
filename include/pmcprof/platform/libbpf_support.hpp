#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "pmcprof/util/fd.hpp"

struct bpf_link;

namespace pmcprof {

// Owns one attachment; destroying it detaches. Either a libbpf link, the fd of a link the
// kernel made for pmcprof directly (create_uprobe_multi_link: libbpf 1.1 predates that link),
// or an entry of a BPF array map through which an attached program acts on one point (a
// syscall's number in syscall_ids): detaching zeroes the entry.
class BpfLink {
 public:
  BpfLink() = default;
  explicit BpfLink(bpf_link* link) : link_(link) {}
  explicit BpfLink(Fd link_fd) : fd_(std::move(link_fd)) {}
  // Sets `map`[key] to `value` (an array of 64-bit values), whose top byte holds the flag that
  // makes the entry count (PMCPROF_COOKIE_SET): written after the rest and cleared before it,
  // so a program that tests the flag never reads half an entry (the kernel copies a value
  // byte-wise, not as one store). Throws SystemError.
  BpfLink(std::shared_ptr<const Fd> map, std::uint32_t key, std::uint64_t value);
  BpfLink(BpfLink&&) noexcept = default;
  BpfLink& operator=(BpfLink&& other) noexcept;
  ~BpfLink() { reset(); }
  explicit operator bool() const { return link_ || fd_ || map_; }
  void reset();

 private:
  struct Deleter {
    void operator()(bpf_link* link) const;
  };
  std::unique_ptr<bpf_link, Deleter> link_;
  Fd fd_;
  std::shared_ptr<const Fd> map_;
  std::uint32_t key_ = 0;
  std::uint64_t value_ = 0;
};

// One probe of a multi-uprobe link: a file offset, its USDT semaphore's (0: none), its cookie.
struct UprobeSpot {
  std::uint64_t offset = 0;
  std::uint64_t semaphore_offset = 0;
  std::uint64_t cookie = 0;
};

// Whether this kernel makes multi-uprobe links (BPF_TRACE_UPROBE_MULTI, Linux 6.6): many
// uprobes of one binary behind one link, attached and detached at once. Detaching separate
// uprobe links costs an RCU grace period each, serialized in the kernel (~100 ms per probe
// here): 64 functions took 13 s to detach; one multi link takes one grace period.
bool kernel_has_uprobe_multi();

// Whether this kernel has BPF task local storage (Linux 5.11; probed by creating such a map):
// function mode keeps each thread's calls in flight there, else in a preallocated hash.
bool kernel_has_task_storage();

// Whether tracing programs may call bpf_get_current_ancestor_cgroup_id (not on Linux 5.10):
// the BPF cgroup backend charges a task's counts to its watched ancestors by it, else by
// reading the cgroup's ancestor_ids[] (the kernels without the helper all have that array).
bool kernel_has_tracing_ancestor_cgroup_id();

// Whether kprobe-type programs (kprobes, uprobes) may call bpf_get_attach_cookie (Linux 5.15):
// function mode carries each probed point's id (and a region's bits) in the attach cookie, so
// without it no --func or --region can run.
bool kernel_has_attach_cookie();

// Function-mode runs with more user-space points (functions, regions, probes) than this
// attach them through multi-uprobe links (FuncObjectConfig::uprobe_multi; doctor says so).
inline constexpr std::size_t kUprobeMultiAbove = 4;

// The BPF_TRACE_UPROBE_MULTI attach type (a program to be attached so must be loaded with
// it as expected_attach_type).
inline constexpr int kAttachUprobeMulti = 48;

// Attaches `prog_fd` (loaded for kAttachUprobeMulti) at every spot of `binary` (uretprobes
// if `retprobe`), in `pid` only if pid > 0. Returns the link, or an empty one and the errno
// in `error`.
BpfLink create_uprobe_multi_link(int prog_fd, const std::string& binary,
                                 const std::vector<UprobeSpot>& spots, bool retprobe, pid_t pid,
                                 int& error);

// Destroys links concurrently and returns when all are gone: detaching a perf-event probe
// (kprobe, uprobe, tracepoint) waits for an RCU grace period, tens of ms each. (For uprobes
// on 6.18 the kernel serializes those waits, ~0.1 s each whatever the threads: hence
// multi-uprobe links, create_uprobe_multi_link.) `owners` (objects whose programs the links run)
// are released after their links.
void destroy_links(std::vector<BpfLink> links, std::vector<std::shared_ptr<void>> owners = {});

// Destroys links on background threads (destroy_links), so a caller that no longer needs them
// does not wait; the destructor joins what is still running.
class LinkReaper {
 public:
  LinkReaper() = default;
  LinkReaper(const LinkReaper&) = delete;
  LinkReaper& operator=(const LinkReaper&) = delete;
  ~LinkReaper();
  void reap(std::vector<BpfLink> links, std::vector<std::shared_ptr<void>> owners = {});
  void join();

 private:
  std::vector<std::thread> threads_;
};

// The verifier's verdict in a libbpf load log: "program NAME: <the line before 'processed N
// insns'>", or "" when the text is not a whole log.
std::string verifier_verdict(const std::string& log);

// Silences libbpf's own stderr chatter for the lifetime of the object (pmcprof explains
// failures itself in one line), unless verbose. While it is alive, the verifier's verdict of
// the last failed load is kept (last_verdict()). libbpf's printer is process-wide: one at a time.
class LibbpfQuiet {
 public:
  explicit LibbpfQuiet(bool verbose = false);
  ~LibbpfQuiet();
  LibbpfQuiet(const LibbpfQuiet&) = delete;
  LibbpfQuiet& operator=(const LibbpfQuiet&) = delete;

  // The verdict of the last load that failed since construction (or clear()), "" if none.
  static std::string last_verdict();
  static void clear_verdict();

 private:
  void* previous_ = nullptr;
};

}  // namespace pmcprof

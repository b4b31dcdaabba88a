#include "pmcprof/platform/libbpf_support.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

void BpfLink::Deleter::operator()(bpf_link* link) const {
  bpf_link__destroy(link);
}

namespace {

constexpr std::uint64_t kFlagByte = 0xffull << 56;

// Writes a 64-bit value at `key` of the array behind `map_fd`.
bool write_entry(int map_fd, std::uint32_t key, std::uint64_t value) {
  return bpf_map_update_elem(map_fd, &key, &value, BPF_ANY) == 0;
}

}  // namespace

BpfLink::BpfLink(std::shared_ptr<const Fd> map, std::uint32_t key, std::uint64_t value)
    : key_(key), value_(value) {
  if (!write_entry(map->get(), key, value & ~kFlagByte) || !write_entry(map->get(), key, value))
    throw SystemError("cannot set entry " + std::to_string(key) +
                      " of a BPF map: " + errno_string(errno));
  map_ = std::move(map);
}

BpfLink& BpfLink::operator=(BpfLink&& other) noexcept {
  if (this != &other) {
    reset();
    link_ = std::move(other.link_);
    fd_ = std::move(other.fd_);
    map_ = std::move(other.map_);
    key_ = other.key_;
    value_ = other.value_;
  }
  return *this;
}

void BpfLink::reset() {
  link_.reset();
  fd_.reset();
  if (map_) {
    // The flag first, then the rest (an array's entries cannot be deleted: zero is "none").
    // Updates of an index the constructor wrote, in a map held open, do not fail.
    (void)write_entry(map_->get(), key_, value_ & ~kFlagByte);
    (void)write_entry(map_->get(), key_, 0);
    map_.reset();
  }
}

namespace {

// bpf_attr.link_create as Linux 6.6 extended it for BPF_TRACE_UPROBE_MULTI; this system's
// <linux/bpf.h> (6.1) does not have the uprobe_multi member, whose layout is the kernel's ABI.
struct UprobeMultiLinkAttr {
  std::uint32_t prog_fd;
  std::uint32_t target_fd;
  std::uint32_t attach_type;
  std::uint32_t flags;
  std::uint64_t path;
  std::uint64_t offsets;
  std::uint64_t ref_ctr_offsets;
  std::uint64_t cookies;
  std::uint32_t cnt;
  std::uint32_t multi_flags;
  std::uint32_t pid;
};
static_assert(offsetof(UprobeMultiLinkAttr, path) == 16 &&
              offsetof(UprobeMultiLinkAttr, pid) == 56 &&
              sizeof(UprobeMultiLinkAttr) <= sizeof(bpf_attr));
constexpr std::uint32_t kUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

}  // namespace

BpfLink create_uprobe_multi_link(int prog_fd, const std::string& binary,
                                 const std::vector<UprobeSpot>& spots, bool retprobe, pid_t pid,
                                 int& error) {
  std::vector<std::uint64_t> offsets, semaphores, cookies;
  for (const auto& s : spots) {
    offsets.push_back(s.offset);
    semaphores.push_back(s.semaphore_offset);
    cookies.push_back(s.cookie);
  }
  bpf_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  UprobeMultiLinkAttr a{};
  a.prog_fd = static_cast<std::uint32_t>(prog_fd);
  a.attach_type = kAttachUprobeMulti;
  a.path = reinterpret_cast<std::uintptr_t>(binary.c_str());
  a.offsets = reinterpret_cast<std::uintptr_t>(offsets.data());
  a.ref_ctr_offsets = reinterpret_cast<std::uintptr_t>(semaphores.data());
  a.cookies = reinterpret_cast<std::uintptr_t>(cookies.data());
  a.cnt = static_cast<std::uint32_t>(spots.size());
  a.multi_flags = retprobe ? kUprobeMultiReturn : 0;
  a.pid = pid > 0 ? static_cast<std::uint32_t>(pid) : 0;
  std::memcpy(&attr, &a, sizeof(a));
  const long fd = ::syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
  error = fd < 0 ? errno : 0;
  return fd < 0 ? BpfLink() : BpfLink(Fd(static_cast<int>(fd)));
}

bool kernel_has_task_storage() {
  return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, nullptr) == 1;
}

bool kernel_has_tracing_ancestor_cgroup_id() {
  // Raw tracepoint programs get the tracing helpers tp_btf ones do; a probe needs no target.
  return libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT,
                                 BPF_FUNC_get_current_ancestor_cgroup_id, nullptr) == 1;
}

bool kernel_has_attach_cookie() {
  return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, nullptr) == 1;
}

bool kernel_has_uprobe_multi() {
  // As libbpf 1.3 probes it: a program loaded for the attach type, attached at offset 0 of
  // "/". A kernel that knows the link refuses the path (EBADF: not a regular file); one that
  // does not refuses the attach type (EINVAL) or the load.
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts,
              .expected_attach_type = static_cast<bpf_attach_type>(kAttachUprobeMulti));
  Fd prog(bpf_prog_load(BPF_PROG_TYPE_KPROBE, nullptr, "GPL", insns, 2, &opts));
  if (!prog) return false;
  int error = 0;
  BpfLink link = create_uprobe_multi_link(prog.get(), "/", {UprobeSpot{}}, false, 0, error);
  return !link && error == EBADF;
}

namespace {

// libbpf reports through one process-wide callback with no user context, so the verifier's
// verdict is kept here (per thread) for the one-line error pmcprof prints.
thread_local std::string last_verifier_verdict;

int quiet_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  // Only warnings carry a verifier log; libbpf's debug chatter is many lines per load.
  if (level == LIBBPF_DEBUG) return 0;
  va_list sized;
  va_copy(sized, args);
  const int n = vsnprintf(nullptr, 0, fmt, sized);
  va_end(sized);
  if (n <= 0) return 0;
  std::string text(static_cast<std::size_t>(n), '\0');
  vsnprintf(text.data(), text.size() + 1, fmt, args);
  if (auto v = verifier_verdict(text); !v.empty()) last_verifier_verdict = v;
  return 0;
}

}  // namespace

void destroy_links(std::vector<BpfLink> links, std::vector<std::shared_ptr<void>> owners) {
  if (links.size() > 1) {
    // Up to 16 at a time: each thread mostly sleeps in the kernel.
    const std::size_t n_threads = std::min<std::size_t>(16, links.size());
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < n_threads; ++t)
      threads.emplace_back([&links, t, n_threads] {
        for (std::size_t i = t; i < links.size(); i += n_threads) links[i].reset();
      });
    for (auto& th : threads) th.join();
  }
  links.clear();
  owners.clear();
}

LinkReaper::~LinkReaper() {
  join();
}

void LinkReaper::reap(std::vector<BpfLink> links, std::vector<std::shared_ptr<void>> owners) {
  threads_.emplace_back([l = std::move(links), o = std::move(owners)]() mutable {
    destroy_links(std::move(l), std::move(o));
  });
}

void LinkReaper::join() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

std::string verifier_verdict(const std::string& log) {
  if (log.find("-- END PROG LOAD LOG --") == std::string::npos) return {};
  const auto lines = split(log, '\n');
  std::string verdict;
  for (std::size_t i = 1; i < lines.size() && verdict.empty(); ++i)
    if (starts_with(lines[i], "processed ")) verdict = std::string(trim(lines[i - 1]));
  if (verdict.empty()) return {};
  std::string prog;
  if (auto q = log.find("prog '"); q != std::string::npos)
    prog = log.substr(q + 6, log.find('\'', q + 6) - (q + 6));
  return (prog.empty() ? "" : "program " + prog + ": ") + verdict;
}

LibbpfQuiet::LibbpfQuiet(bool verbose) {
  // libbpf_set_print returns the previous printer; put it straight back when verbose.
  previous_ = reinterpret_cast<void*>(libbpf_set_print(quiet_print));
  if (verbose) libbpf_set_print(reinterpret_cast<libbpf_print_fn_t>(previous_));
}

LibbpfQuiet::~LibbpfQuiet() {
  libbpf_set_print(reinterpret_cast<libbpf_print_fn_t>(previous_));
}

std::string LibbpfQuiet::last_verdict() {
  return last_verifier_verdict;
}

void LibbpfQuiet::clear_verdict() {
  last_verifier_verdict.clear();
}

}  // namespace pmcprof

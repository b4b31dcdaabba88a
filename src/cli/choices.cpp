#include "pmcprof/cli/choices.hpp"

#include "pmcprof/util/error.hpp"
#include "pmcprof/util/strings.hpp"

namespace pmcprof {

AggregateChoice parse_aggregate_choice(const std::string& text) {
  if (text == "auto") return AggregateChoice::automatic;
  if (text == "stream") return AggregateChoice::stream;
  if (text == "kernel") return AggregateChoice::kernel;
  if (text == "both") return AggregateChoice::both;
  throw UserError("unknown --aggregate " + quote(text), "use auto, kernel, stream or both");
}

Breakdown parse_breakdown(const std::string& text) {
  if (text == "pid") return Breakdown::pid;
  if (text == "comm") return Breakdown::comm;
  if (text == "cpu") return Breakdown::cpu;
  if (text == "cgroup") return Breakdown::cgroup;
  throw UserError("unknown --by " + quote(text),
                  "use --by pid, comm, cpu, cgroup, or argN / argN:str (a start point's "
                  "arguments)");
}

BackendRequest parse_backend_request(std::string_view text) {
  if (text == "auto") return BackendRequest::automatic;
  if (text == "fentry") return BackendRequest::fentry;
  if (text == "kprobe") return BackendRequest::kprobe;
  throw UserError("unknown --backend " + quote(text), "use auto, fentry or kprobe");
}

ThreadStore parse_thread_store(const std::string& text) {
  if (text == "auto") return ThreadStore::automatic;
  if (text == "task-storage") return ThreadStore::task_storage;
  if (text == "hash") return ThreadStore::hash;
  throw UserError("unknown --thread-state " + quote(text), "use auto, task-storage or hash");
}

std::size_t validate_buffer_pages(long long pages) {
  if (pages < 1 || pages > 65536 || (pages & (pages - 1)) != 0)
    throw UserError("invalid --buffer-pages " + std::to_string(pages) +
                        ": it must be a power of two between 1 and 65536",
                    "e.g. --buffer-pages 256 (1 MiB per CPU with 4 KiB pages)");
  return static_cast<std::size_t>(pages);
}

}  // namespace pmcprof

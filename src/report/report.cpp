#include "pmcprof/report/report.hpp"

namespace pmcprof {

const char* to_string(CounterStatus s) {
  switch (s) {
    case CounterStatus::ok:
      return "ok";
    case CounterStatus::not_counted:
      return "not-counted";
    case CounterStatus::not_supported:
      return "not-supported";
  }
  return "unknown";
}

const char* to_string(AggrMode m) {
  switch (m) {
    case AggrMode::global:
      return "global";
    case AggrMode::cpu:
      return "cpu";
    case AggrMode::core:
      return "core";
    case AggrMode::die:
      return "die";
    case AggrMode::socket:
      return "socket";
    case AggrMode::node:
      return "node";
    case AggrMode::thread:
      return "thread";
  }
  return "unknown";
}

std::string aggr_label(AggrMode mode, const AggrId& id) {
  std::string s = "S" + std::to_string(id.socket);
  switch (mode) {
    case AggrMode::core:
      return s + "-D" + std::to_string(id.die) + "-C" + std::to_string(id.core);
    case AggrMode::die:
      return s + "-D" + std::to_string(id.die);
    case AggrMode::socket:
      return s;
    case AggrMode::node:
      return "N" + std::to_string(id.node);
    case AggrMode::thread:
      return id.comm + "-" + std::to_string(id.tid);
    case AggrMode::global:
    case AggrMode::cpu:
      break;
  }
  return {};
}

double running_percent(std::uint64_t running_ns, std::uint64_t enabled_ns) {
  if (running_ns == enabled_ns || enabled_ns == 0) return 100.0;
  if (running_ns > enabled_ns) return 100.0;
  return 100.0 * static_cast<double>(running_ns) / static_cast<double>(enabled_ns);
}

bool same_scope(const CounterRow& a, const CounterRow& b) {
  return a.cpu == b.cpu && a.aggr == b.aggr && a.cgroup_id == b.cgroup_id;
}

}  // namespace pmcprof

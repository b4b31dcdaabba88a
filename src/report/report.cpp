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

}  // namespace pmcprof

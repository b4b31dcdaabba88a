// What every parser fuzz target checks: the parser returns, or throws pmcprof's Error with
// one line (no line break) of bounded length; anything else (another exception, a crash, a
// sanitizer report, a hang caught by libFuzzer's -timeout) is a bug.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "pmcprof/util/error.hpp"

namespace pmcprof_fuzz {

inline void check_line(const std::string& s) {
  if (s.find('\n') != std::string::npos || s.size() > 2000) {
    std::fprintf(stderr, "error text is not one short line (%zu bytes): %.300s\n", s.size(),
                 s.c_str());
    std::abort();
  }
}

template <typename F>
void run(F&& f) {
  try {
    f();
  } catch (const pmcprof::Error& e) {
    check_line(e.what());
    check_line(e.hint());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %.300s\n", e.what());
    std::abort();
  }
}

inline std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace pmcprof_fuzz

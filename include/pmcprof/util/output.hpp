#pragma once

#include <functional>
#include <ostream>
#include <streambuf>
#include <string>

#include "pmcprof/util/fd.hpp"

namespace pmcprof {

// An std::ostream over a file descriptor in which every write is checked: the first failure
// (errno) is kept, later writes are dropped, and `on_error` is called once when it happens.
// Renderers write to it like to any stream; the owner asks error() after each flush and at
// close(), so a full disk, a closed pipe or an unwritable /proc file is never silent.
class CheckedOutput : public std::ostream {
 public:
  // Writes to `fd`, which it closes at close() when `owned`.
  CheckedOutput(int fd, bool owned);
  ~CheckedOutput() override;
  CheckedOutput(const CheckedOutput&) = delete;
  CheckedOutput& operator=(const CheckedOutput&) = delete;

  void set_on_error(std::function<void(int)> on_error) { buf_.on_error = std::move(on_error); }
  // Flushes, and closes the descriptor when owned (close's error counts too). Returns the
  // first errno seen, 0 when everything was written.
  int close();
  int error() const { return buf_.error; }

 private:
  struct Buffer : std::streambuf {
    int fd = -1;
    int error = 0;
    std::function<void(int)> on_error;
    char data[8192];
    Buffer() { setp(data, data + sizeof(data)); }
    bool write_out();
    int_type overflow(int_type c) override;
    int sync() override { return write_out() ? 0 : -1; }
    void fail(int err);
  };
  Buffer buf_;
  Fd owned_;
};

}  // namespace pmcprof

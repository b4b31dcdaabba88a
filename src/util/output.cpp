#include "pmcprof/util/output.hpp"

#include <unistd.h>

#include <cerrno>

namespace pmcprof {

void CheckedOutput::Buffer::fail(int err) {
  if (error) return;
  error = err ? err : EIO;
  if (on_error) on_error(error);
}

bool CheckedOutput::Buffer::write_out() {
  const char* p = pbase();
  std::size_t left = static_cast<std::size_t>(pptr() - pbase());
  while (left > 0 && !error) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fail(n < 0 ? errno : EIO);
      break;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  setp(data, data + sizeof(data));  // what could not be written is dropped
  return !error;
}

CheckedOutput::Buffer::int_type CheckedOutput::Buffer::overflow(int_type c) {
  if (!write_out()) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

CheckedOutput::CheckedOutput(int fd, bool owned) : std::ostream(nullptr) {
  buf_.fd = fd;
  if (owned) owned_.reset(fd);
  rdbuf(&buf_);
}

CheckedOutput::~CheckedOutput() {
  buf_.write_out();
}

int CheckedOutput::close() {
  buf_.write_out();
  if (owned_) {
    if (::close(owned_.release()) != 0 && errno != EINTR) buf_.fail(errno);
  }
  return buf_.error;
}

}  // namespace pmcprof

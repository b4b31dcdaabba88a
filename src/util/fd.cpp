#include "pmcprof/util/fd.hpp"

#include <unistd.h>

namespace pmcprof {

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace pmcprof

// syscall_number: the kernel's numbers by the name of the function behind each syscall (its
// tracepoints' NAME), for the architecture of this build.
#include <gtest/gtest.h>

#include "pmcprof/probes/syscall_numbers.hpp"

namespace pmcprof {
namespace {

TEST(SyscallNumbers, KnownSyscallsOfThisArchitecture) {
#if defined(__x86_64__)
  EXPECT_EQ(syscall_number("read"), 0);
  EXPECT_EQ(syscall_number("getppid"), 110);
  EXPECT_EQ(syscall_number("newfstat"), 5);  // the C library's fstat
  EXPECT_EQ(syscall_number("newuname"), 63);
  EXPECT_EQ(syscall_number("umount"), 166);  // umount2's function
  EXPECT_EQ(syscall_number("sendfile64"), 40);
  EXPECT_EQ(syscall_number("set_mempolicy_home_node"), 450);  // the table's last
#elif defined(__aarch64__)
  EXPECT_EQ(syscall_number("io_setup"), 0);
  EXPECT_EQ(syscall_number("getppid"), 173);
  EXPECT_EQ(syscall_number("newfstat"), 80);
  EXPECT_EQ(syscall_number("mmap"), 222);
  EXPECT_EQ(syscall_number("set_mempolicy_home_node"), 450);
#else
  GTEST_SKIP() << "no syscall table for this architecture: syscalls use their tracepoints";
#endif
}

// Names whose tracepoints never fire for a 64-bit task (the 32-bit ABI's older syscalls of the
// same C name) or that are not syscalls must not take another syscall's number.
TEST(SyscallNumbers, OldAndUnknownNamesHaveNone) {
  for (const char* name : {"stat", "fstat", "uname", "sendfile", "oldumount", "ni_syscall",
                           "getppid2", "", "sys_getppid"})
    EXPECT_FALSE(syscall_number(name).has_value()) << name;
}

}  // namespace
}  // namespace pmcprof

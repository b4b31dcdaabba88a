// --func parsing and the kernel backend choice (fentry / kprobe) for every
// combination of what the kernel allows and what is known about the function.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

#include "pmcprof/probes/target_spec.hpp"
#include "pmcprof/util/error.hpp"

using namespace pmcprof;

namespace {

// The UserError parse_func_target throws for `text`; fails the test when it does not throw.
std::optional<UserError> func_error(std::string_view text) {
  try {
    FuncTarget t = parse_func_target(text);
    ADD_FAILURE() << "parse_func_target('" << text << "') accepted it as " << to_string(t.kind)
                  << " name='" << t.name << "' binary='" << t.binary << "'";
  } catch (const UserError& e) {
    return e;
  }
  return std::nullopt;
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

// ---- parse_func_target: the accepted forms ----

TEST(TargetSpec, BareNameIsKernelFunction) {
  const FuncTarget t = parse_func_target("tcp_sendmsg");
  EXPECT_EQ(t.kind, FuncTarget::Kind::kernel);
  EXPECT_EQ(t.name, "tcp_sendmsg");
  EXPECT_EQ(t.binary, "");
  EXPECT_EQ(t.text, "tcp_sendmsg");
}

TEST(TargetSpec, BareNameWithCompilerSuffix) {
  // GCC clones show up in kallsyms as name.isra.0 / name.constprop.0.
  const FuncTarget t = parse_func_target("tcp_sendmsg_locked.isra.0");
  EXPECT_EQ(t.kind, FuncTarget::Kind::kernel);
  EXPECT_EQ(t.name, "tcp_sendmsg_locked.isra.0");
}

TEST(TargetSpec, KernelPrefix) {
  const FuncTarget t = parse_func_target("kernel:vfs_read");
  EXPECT_EQ(t.kind, FuncTarget::Kind::kernel);
  EXPECT_EQ(t.name, "vfs_read");
  EXPECT_EQ(t.binary, "");
  EXPECT_EQ(t.text, "kernel:vfs_read");
}

TEST(TargetSpec, SyscallPrefix) {
  const FuncTarget t = parse_func_target("syscall:getppid");
  EXPECT_EQ(t.kind, FuncTarget::Kind::syscall);
  EXPECT_EQ(t.name, "getppid");
  EXPECT_EQ(t.binary, "");
  EXPECT_EQ(t.text, "syscall:getppid");
}

TEST(TargetSpec, SyscallSysPrefixIsStripped) {
  const FuncTarget t = parse_func_target("syscall:sys_getppid");
  EXPECT_EQ(t.kind, FuncTarget::Kind::syscall);
  EXPECT_EQ(t.name, "getppid");
  EXPECT_EQ(t.text, "syscall:sys_getppid");  // as written, for the report
}

TEST(TargetSpec, AbsolutePathAndSymbol) {
  const FuncTarget t = parse_func_target("/usr/bin/bash:readline");
  EXPECT_EQ(t.kind, FuncTarget::Kind::user);
  EXPECT_EQ(t.binary, "/usr/bin/bash");
  EXPECT_EQ(t.name, "readline");
}

TEST(TargetSpec, LibraryNameAndSymbol) {
  const FuncTarget t = parse_func_target("libc:malloc");
  EXPECT_EQ(t.kind, FuncTarget::Kind::user);
  EXPECT_EQ(t.binary, "libc");
  EXPECT_EQ(t.name, "malloc");
}

TEST(TargetSpec, ColonSymbolMeansOwnExecutable) {
  const FuncTarget t = parse_func_target(":main");
  EXPECT_EQ(t.kind, FuncTarget::Kind::user);
  EXPECT_EQ(t.binary, "");
  EXPECT_EQ(t.name, "main");
}

TEST(TargetSpec, RelativePathAndSymbol) {
  const FuncTarget t = parse_func_target("./rel/path:work_item");
  EXPECT_EQ(t.kind, FuncTarget::Kind::user);
  EXPECT_EQ(t.binary, "./rel/path");
  EXPECT_EQ(t.name, "work_item");
}

TEST(TargetSpec, MangledCxxSymbolAndLibraryWithPlus) {
  const FuncTarget t = parse_func_target("libstdc++:_Znwm");
  EXPECT_EQ(t.kind, FuncTarget::Kind::user);
  EXPECT_EQ(t.binary, "libstdc++");
  EXPECT_EQ(t.name, "_Znwm");
}

TEST(TargetSpec, LastColonSplitsPathFromSymbol) {
  const FuncTarget t = parse_func_target("/opt/a:b/bin/app:handler");
  EXPECT_EQ(t.kind, FuncTarget::Kind::user);
  EXPECT_EQ(t.binary, "/opt/a:b/bin/app");
  EXPECT_EQ(t.name, "handler");
}

TEST(TargetSpec, SurroundingWhitespaceIsTrimmed) {
  const FuncTarget t = parse_func_target("  libc:free \t");
  EXPECT_EQ(t.kind, FuncTarget::Kind::user);
  EXPECT_EQ(t.binary, "libc");
  EXPECT_EQ(t.name, "free");
  EXPECT_EQ(t.text, "libc:free");
}

TEST(TargetSpec, KindNames) {
  EXPECT_STREQ(to_string(FuncTarget::Kind::kernel), "kernel");
  EXPECT_STREQ(to_string(FuncTarget::Kind::user), "user");
  EXPECT_STREQ(to_string(FuncTarget::Kind::syscall), "syscall");
  EXPECT_STREQ(to_string(ProbeBackend::fentry), "fentry");
  EXPECT_STREQ(to_string(ProbeBackend::kprobe), "kprobe");
  EXPECT_STREQ(to_string(ProbeBackend::uprobe), "uprobe");
  EXPECT_STREQ(to_string(ProbeBackend::tracepoint), "tracepoint");
}

// ---- parse_func_target: malformed input -> UserError (usage, exit 2) with a useful message ----

TEST(TargetSpec, EmptyIsRejected) {
  for (std::string_view text : {"", "   ", "\t"}) {
    auto e = func_error(text);
    ASSERT_TRUE(e) << "'" << text << "'";
    EXPECT_TRUE(contains(e->what(), "empty")) << e->what();
    EXPECT_TRUE(contains(e->hint(), "--func")) << e->hint();
    EXPECT_EQ(e->exit_code(), kExitUsage);
  }
}

TEST(TargetSpec, SyscallWithoutNameIsRejected) {
  auto e = func_error("syscall:");
  ASSERT_TRUE(e);
  EXPECT_TRUE(contains(e->what(), "syscall")) << e->what();
  EXPECT_TRUE(contains(e->what(), "'syscall:'")) << e->what();
  EXPECT_TRUE(contains(e->hint(), "syscall:getppid")) << e->hint();
  EXPECT_EQ(e->exit_code(), kExitUsage);
}

TEST(TargetSpec, SyscallWithOnlySysPrefixIsRejected) {
  auto e = func_error("syscall:sys_");
  ASSERT_TRUE(e);
  EXPECT_TRUE(contains(e->what(), "syscall")) << e->what();
}

TEST(TargetSpec, KernelWithoutNameIsRejected) {
  auto e = func_error("kernel:");
  ASSERT_TRUE(e);
  EXPECT_TRUE(contains(e->what(), "kernel function")) << e->what();
  EXPECT_TRUE(contains(e->what(), "'kernel:'")) << e->what();
  EXPECT_FALSE(e->hint().empty());
  EXPECT_EQ(e->exit_code(), kExitUsage);
}

TEST(TargetSpec, PathWithoutSymbolIsRejected) {
  auto e = func_error("/usr/bin/x");
  ASSERT_TRUE(e);
  EXPECT_TRUE(contains(e->what(), "/usr/bin/x")) << e->what();
  EXPECT_TRUE(contains(e->what(), "no symbol")) << e->what();
  EXPECT_TRUE(contains(e->hint(), "PATH:SYMBOL")) << e->hint();
  EXPECT_EQ(e->exit_code(), kExitUsage);
}

TEST(TargetSpec, RelativePathWithoutSymbolIsRejected) {
  auto e = func_error("./bin/app");
  ASSERT_TRUE(e);
  EXPECT_TRUE(contains(e->what(), "no symbol")) << e->what();
}

TEST(TargetSpec, LibraryWithoutSymbolIsRejected) {
  for (std::string_view text : {"libc:", "/usr/bin/x:"}) {
    auto e = func_error(text);
    ASSERT_TRUE(e) << text;
    EXPECT_TRUE(contains(e->what(), "no symbol after ':'")) << e->what();
    EXPECT_TRUE(contains(e->what(), std::string(text))) << e->what();
    EXPECT_TRUE(contains(e->hint(), "libc:malloc")) << e->hint();
    EXPECT_EQ(e->exit_code(), kExitUsage);
  }
}

TEST(TargetSpec, InvalidCharactersAreRejected) {
  struct Case {
    std::string_view text;
    std::string_view says;
  };
  for (const Case& c :
       {Case{"tcp-sendmsg", "invalid kernel function name"},
        Case{"tcp sendmsg", "invalid kernel function name"},
        Case{"kernel:vfs*-read", "invalid wildcard pattern 'vfs*-read'"},  // a glob: its own line
        Case{"kernel:a:b", "invalid kernel function name"},
        Case{"syscall:get-ppid", "invalid syscall name"},
        Case{"syscall:get ppid", "invalid syscall name"},
        Case{"libc:mal-loc", "invalid symbol 'mal-loc'"},
        Case{"/usr/bin/x:foo()", "invalid symbol 'foo()'"}, Case{":a;b", "invalid symbol 'a;b'"}}) {
    auto e = func_error(c.text);
    ASSERT_TRUE(e) << c.text;
    EXPECT_TRUE(contains(e->what(), c.says)) << c.text << " -> " << e->what();
    EXPECT_TRUE(contains(e->what(), std::string(c.text))) << c.text << " -> " << e->what();
    EXPECT_FALSE(e->hint().empty()) << c.text;
    EXPECT_EQ(e->exit_code(), kExitUsage) << c.text;
  }
}

// parse_backend_request (--backend) moved to the CLI: tested in test_choices.cpp.

// ---- choose_kernel_backend ----

namespace {

constexpr const char* kKprobeWhy = "kprobe PMU missing (no /sys/bus/event_source/devices/kprobe)";
constexpr const char* kFentryWhy = "BPF trampolines unsupported (CONFIG_FUNCTION_TRACER off)";

KernelProbeSupport support(bool fentry, bool kprobe) {
  KernelProbeSupport s;
  s.fentry = fentry;
  s.fentry_why = fentry ? "" : kFentryWhy;
  s.kprobe = kprobe;
  s.kprobe_why = kprobe ? "" : kKprobeWhy;
  return s;
}

KernelFuncInfo info(bool in_btf, bool in_kallsyms) {
  KernelFuncInfo i;
  i.in_btf = in_btf;
  i.in_kallsyms = in_kallsyms;
  return i;
}

const char* request_name(BackendRequest r) {
  switch (r) {
    case BackendRequest::automatic:
      return "auto";
    case BackendRequest::fentry:
      return "fentry";
    case BackendRequest::kprobe:
      return "kprobe";
  }
  return "?";
}

// The documented rule, written out independently of the implementation.
// nullopt: refused; exit code in *exit_code.
std::optional<ProbeBackend> expected_backend(bool fentry, bool kprobe, bool in_btf,
                                             bool in_kallsyms, BackendRequest req, int* exit_code) {
  if (!in_btf && !in_kallsyms) {
    *exit_code = kExitUsage;  // unknown function: the user's input, said first
    return std::nullopt;
  }
  if (!fentry && !kprobe) {
    *exit_code = kExitFailure;  // the kernel cannot do it: not the user's typo
    return std::nullopt;
  }
  const bool fentry_ok = fentry && in_btf;
  const bool kprobe_ok = kprobe && in_kallsyms;
  *exit_code = kExitUsage;
  switch (req) {
    case BackendRequest::fentry:
      return fentry_ok ? std::optional(ProbeBackend::fentry) : std::nullopt;
    case BackendRequest::kprobe:
      return kprobe_ok ? std::optional(ProbeBackend::kprobe) : std::nullopt;
    case BackendRequest::automatic:
      if (fentry_ok) return ProbeBackend::fentry;
      if (kprobe_ok) return ProbeBackend::kprobe;
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

TEST(ChooseKernelBackend, WholeMatrix) {
  int cases = 0, refused = 0;
  for (bool fentry : {false, true})
    for (bool kprobe : {false, true})
      for (bool in_btf : {false, true})
        for (bool in_kallsyms : {false, true})
          for (BackendRequest req :
               {BackendRequest::automatic, BackendRequest::fentry, BackendRequest::kprobe}) {
            ++cases;
            const std::string where =
                std::string("fentry=") + (fentry ? "yes" : "no") +
                " kprobe=" + (kprobe ? "yes" : "no") + " in_btf=" + (in_btf ? "yes" : "no") +
                " in_kallsyms=" + (in_kallsyms ? "yes" : "no") + " request=" + request_name(req);
            int want_exit = 0;
            const auto want =
                expected_backend(fentry, kprobe, in_btf, in_kallsyms, req, &want_exit);
            try {
              const ProbeBackend got = choose_kernel_backend(
                  "vfs_read", req, support(fentry, kprobe), info(in_btf, in_kallsyms));
              ASSERT_TRUE(want) << where << ": chose " << to_string(got) << ", expected refusal";
              EXPECT_EQ(got, *want) << where << ": chose " << to_string(got);
            } catch (const UserError& e) {
              ++refused;
              ASSERT_FALSE(want) << where << ": refused (" << e.what() << "), expected "
                                 << to_string(*want);
              EXPECT_EQ(e.exit_code(), want_exit) << where << ": " << e.what();
              EXPECT_TRUE(contains(e.what(), "'vfs_read'")) << where << ": " << e.what();
              EXPECT_FALSE(contains(e.what(), "\n")) << where << ": not one line: " << e.what();
              EXPECT_FALSE(e.hint().empty()) << where;
            }
          }
  EXPECT_EQ(cases, 48);
  EXPECT_GT(refused, 0);
  EXPECT_LT(refused, cases);
}

TEST(ChooseKernelBackend, NeitherBackendOnThisKernel) {
  // This machine's situation: no kprobes, no fentry. One line with both reasons.
  for (BackendRequest req :
       {BackendRequest::automatic, BackendRequest::fentry, BackendRequest::kprobe}) {
    try {
      choose_kernel_backend("tcp_sendmsg", req, support(false, false), info(true, true));
      ADD_FAILURE() << "chose a backend with neither fentry nor kprobes";
    } catch (const UserError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(contains(what, "'tcp_sendmsg'")) << what;
      EXPECT_TRUE(contains(what, kKprobeWhy)) << what;
      EXPECT_TRUE(contains(what, kFentryWhy)) << what;
      EXPECT_FALSE(contains(what, "\n")) << what;
      EXPECT_TRUE(contains(e.hint(), "syscall:")) << e.hint();
      EXPECT_TRUE(contains(e.hint(), "user function")) << e.hint();
      EXPECT_TRUE(contains(e.hint(), "/path/bin:SYMBOL")) << e.hint();
      EXPECT_EQ(e.exit_code(), kExitFailure);
    }
  }
}

TEST(ChooseKernelBackend, UnknownFunctionSaidBeforeMissingBackends) {
  // A misspelled name is reported as such (exit 2) even on a kernel without any backend:
  // fixing the name is the first thing to do.
  try {
    choose_kernel_backend("no_such_fn", BackendRequest::automatic, support(false, false),
                          info(false, false));
    ADD_FAILURE() << "no throw";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), "unknown kernel function 'no_such_fn'")) << e.what();
    EXPECT_EQ(e.exit_code(), kExitUsage) << e.what();
  }
}

TEST(ChooseKernelBackend, UnknownFunctionIsUsageError) {
  try {
    choose_kernel_backend("tcp_sendmgs", BackendRequest::automatic, support(true, true),
                          info(false, false));
    ADD_FAILURE() << "no throw";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "unknown kernel function 'tcp_sendmgs'")) << what;
    EXPECT_TRUE(contains(what, "/proc/kallsyms")) << what;
    EXPECT_TRUE(contains(what, "BTF")) << what;
    EXPECT_TRUE(contains(e.hint(), "syscall:")) << e.hint();
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
}

TEST(ChooseKernelBackend, UnknownFunctionSuggestsTheClosest) {
  KernelFuncInfo i = info(false, false);
  i.close_names = {"tcp_sendmsg", "tcp_sendpage"};
  try {
    choose_kernel_backend("tcp_sendmgs", BackendRequest::automatic, support(false, false), i);
    ADD_FAILURE() << "no throw";
  } catch (const UserError& e) {
    EXPECT_EQ(e.hint().rfind("did you mean 'tcp_sendmsg', 'tcp_sendpage'? ", 0), 0u) << e.hint();
  }
}

TEST(ChooseKernelBackend, NotTraceable) {
  KernelFuncInfo i = info(true, true);
  i.traceable = false;
  i.not_traceable_why = "it is in the kernel's kprobe blacklist";
  try {
    choose_kernel_backend("do_int3", BackendRequest::automatic, support(true, true), i);
    ADD_FAILURE() << "traced a non-traceable function";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), "'do_int3'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "cannot be traced")) << e.what();
    EXPECT_TRUE(contains(e.what(), "kprobe blacklist")) << e.what();
    EXPECT_TRUE(contains(e.hint(), "syscall:")) << e.hint();
  }
}

TEST(ChooseKernelBackend, AutoPrefersFentry) {
  EXPECT_EQ(
      choose_kernel_backend("f", BackendRequest::automatic, support(true, true), info(true, true)),
      ProbeBackend::fentry);
  // No BTF entry for this function: kprobe.
  EXPECT_EQ(
      choose_kernel_backend("f", BackendRequest::automatic, support(true, true), info(false, true)),
      ProbeBackend::kprobe);
  // fentry unsupported: kprobe.
  EXPECT_EQ(
      choose_kernel_backend("f", BackendRequest::automatic, support(false, true), info(true, true)),
      ProbeBackend::kprobe);
}

TEST(ChooseKernelBackend, ExplicitFentryWithoutBtfSuggestsKprobe) {
  try {
    choose_kernel_backend("f", BackendRequest::fentry, support(true, true), info(false, true));
    ADD_FAILURE() << "no throw";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), "--backend fentry")) << e.what();
    EXPECT_TRUE(contains(e.what(), "no BTF entry")) << e.what();
    EXPECT_TRUE(contains(e.hint(), "--backend kprobe")) << e.hint();
  }
}

TEST(ChooseKernelBackend, ExplicitFentryUnsupportedSaysWhy) {
  try {
    choose_kernel_backend("f", BackendRequest::fentry, support(false, true), info(true, true));
    ADD_FAILURE() << "no throw";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), kFentryWhy)) << e.what();
    EXPECT_TRUE(contains(e.hint(), "--backend kprobe")) << e.hint();
  }
}

TEST(ChooseKernelBackend, ExplicitKprobeNotInKallsymsSuggestsFentry) {
  try {
    choose_kernel_backend("f", BackendRequest::kprobe, support(true, true), info(true, false));
    ADD_FAILURE() << "no throw";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), "--backend kprobe")) << e.what();
    EXPECT_TRUE(contains(e.what(), "not in /proc/kallsyms")) << e.what();
    EXPECT_TRUE(contains(e.hint(), "--backend fentry")) << e.hint();
  }
}

TEST(ChooseKernelBackend, ExplicitKprobeUnsupportedSaysWhy) {
  try {
    choose_kernel_backend("f", BackendRequest::kprobe, support(true, false), info(false, true));
    ADD_FAILURE() << "no throw";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), kKprobeWhy)) << e.what();
    // fentry cannot do it either (no BTF): suggest other kinds of targets.
    EXPECT_TRUE(contains(e.hint(), "syscall:")) << e.hint();
  }
}

TEST(ChooseKernelBackend, AutoNamesBothReasons) {
  // fentry: supported but no BTF for the function; kprobe: unsupported.
  try {
    choose_kernel_backend("f", BackendRequest::automatic, support(true, false), info(false, true));
    ADD_FAILURE() << "no throw";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), "no BTF entry")) << e.what();
    EXPECT_TRUE(contains(e.what(), kKprobeWhy)) << e.what();
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
}

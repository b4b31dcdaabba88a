#!/usr/bin/env python3
"""--func bad input and abnormal ends: one clear line, a non-zero exit, no crash, nothing left
attached; the cases that are not errors report what was collected.

Errors (assert_clean_error: a first stderr line 'pmcprof: ...', at most a 'HINT: ...' line):
- kernel function on a kernel without kprobes and fentry (tcp_sendmsg): exit 1, the line names
  kprobes and fentry, the hint suggests syscall:NAME and a user function (PATH:SYMBOL);
- unknown kernel function: exit 129 (usage), "unknown kernel function";
- binary not found; not an ELF (/etc/passwd:foo); symbol not in the binary (names it);
  stripped binary (objcopy --strip-all copy of func_workload, probe burn_cpu): says stripped;
  unknown syscall; a misspelled syscall, symbol or kernel function (the hint suggests the
  closest names there are); ':SYMBOL' without -p (mentions -p); -p of a PID that does not exist;
  --aggregate bogus; --by pid with --aggregate kernel.
- -p PID whose process dies while pmcprof starts: either pmcprof attached in time (exit 0 and
  a report) or one line that says the process is gone (not a kernel attach failure).
Not errors:
- a function never called: exit 0, calls 0, not_counted 0, lost 0;
- -p PID that exits mid-run: pmcprof stops soon after, exit 0, the report holds its calls.
Signals:
- SIGINT mid-run (--func ... -- func_workload burn forever): the report is written with
  "interrupted": true and calls > 0, pmcprof exits (not by a signal) with the status it reports
  as exit_status, the workload is gone, and every BPF program and link pmcprof held is freed;
- SIGKILL mid-run: every BPF program and link pmcprof held is freed (links are fds).
After every case no pmcprof BPF program (func_entry, func_exit, syscall_*, on_switch, on_fork,
on_task_exit, read_counters, doctor_*) is left loaded without a process holding it (allowing a
few seconds for the kernel's asynchronous free; other pmcprof runs hold theirs).

Usage: test_func_bad_input.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import pmcprof_testlib as t


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.have_bpftool = t.bpftool_binary() is not None
        cls.baseline = set(t.pmcprof_orphans()) if cls.have_bpftool else set()
        if cls.baseline:
            t.log(f"orphans before this test (ignored): {sorted(cls.baseline)}")

    def assert_nothing_left(self):
        if not self.have_bpftool:
            t.log("no bpftool: what is left loaded is not checked")
            return
        left = [o for o in t.wait_no_pmcprof_orphans() if o not in self.baseline]
        self.assertEqual(left, [], "BPF programs left loaded with no process holding them")

    def error(self, args, command=(), exit_code=None, mentions=()):
        proc = t.run_pmcprof(["stat", "-e", "task-clock", *args,
                              *(["--", *command] if command else [])], timeout=60)
        line = t.assert_clean_error(self, proc, exit_code=exit_code, mentions=mentions)
        t.log(f"{' '.join(args)} -> exit {proc.returncode}: {line}")
        self.assert_nothing_left()
        return proc


class ErrorTest(Base):
    def setUp(self):
        self.wl = t.workload("func_workload")
        self.cmd = [self.wl, "burn", "1", "10"]

    @t.requires("!kprobes", "!fentry")  # else the no-backend error cannot happen
    def test_kernel_function_without_kprobes_or_fentry(self):
        proc = self.error(["--func", "tcp_sendmsg"], self.cmd, exit_code=1,
                          mentions=[r"tcp_sendmsg", r"kprobe", r"fentry"])
        self.assertIn("syscall:", proc.stderr, "suggest a syscall target")
        self.assertRegex(proc.stderr, r"/\S*:SYMBOL|PATH:SYMBOL|bin:SYMBOL",
                         "suggest a user function target")

    def test_unknown_kernel_function(self):
        self.error(["--func", "pmcprof_no_such_kernel_function"], self.cmd, exit_code=129,
                   mentions=[r"unknown kernel function", r"pmcprof_no_such_kernel_function"])

    def test_binary_not_found(self):
        self.error(["--func", "/nonexistent/pmcprof-test-bin:foo"], self.cmd,
                   mentions=[r"not found", r"/nonexistent/pmcprof-test-bin"])

    def test_not_an_elf(self):
        self.error(["--func", "/etc/passwd:foo"], self.cmd, mentions=[r"/etc/passwd", r"ELF"])

    def test_symbol_not_in_binary(self):
        self.error(["--func", f"{self.wl}:pmcprof_no_such_symbol"], self.cmd,
                   mentions=[r"pmcprof_no_such_symbol", r"not found"])

    def test_stripped_binary(self):
        tool = shutil.which("objcopy") or shutil.which("strip")
        with tempfile.TemporaryDirectory(prefix="pmcprof-strip-") as tmp:
            stripped = os.path.join(tmp, "func_workload.stripped")
            if tool and os.path.basename(tool) == "objcopy":
                ok = t.run([tool, "--strip-all", self.wl, stripped]).returncode == 0
            elif tool:
                ok = t.run([tool, "-o", stripped, self.wl]).returncode == 0
            else:
                shutil.copy("/bin/true", stripped)  # Debian ships it stripped
                ok = True
            if not ok:
                self.skipTest(f"{tool} could not strip a copy of func_workload")
            nm = t.run(["nm", stripped]) if shutil.which("nm") else None
            if nm is not None:
                t.log(f"nm {stripped}: {(nm.stderr or nm.stdout).strip()[:80]}")
            symbol = "burn_cpu" if tool else "main"
            self.error(["--func", f"{stripped}:{symbol}"], [stripped, "burn", "1", "10"],
                       mentions=[symbol, r"stripped"])

    def test_unknown_syscall(self):
        self.error(["--func", "syscall:pmcprof_no_such_syscall"], self.cmd,
                   mentions=[r"unknown syscall", r"pmcprof_no_such_syscall"])

    def test_did_you_mean(self):
        # As perf and git answer a misspelled command: the closest names, from what is there
        # (the syscall tracepoints, the ELF's functions, the kernel's functions).
        for target, close in (("syscall:reed", "syscall:read"),
                              (f"{self.wl}:burn_cpv", "burn_cpu"),
                              ("vfs_raed", "vfs_read"), ("kernel:tcp_sendmsgg", "tcp_sendmsg")):
            proc = self.error(["--func", target], self.cmd)
            hint = proc.stderr.strip().splitlines()[-1]
            self.assertRegex(hint, rf"^HINT: did you mean [^?]*'{close}'", target)

    def test_symbol_without_pid(self):
        self.error(["--func", ":burn_cpu"], self.cmd, mentions=[r"-p"])

    def test_pid_does_not_exist(self):
        pid = 4194303  # above the default pid_max range in practice
        while t.pid_alive(pid) or os.path.exists(f"/proc/{pid}"):
            pid -= 1
        self.error(["-p", str(pid), "--func", ":burn_cpu"], mentions=[str(pid)])

    def test_bad_aggregate(self):
        self.error(["--aggregate", "bogus", "--func", f"{self.wl}:burn_cpu"], self.cmd,
                   mentions=[r"aggregate", r"bogus"])

    def test_by_pid_needs_the_stream(self):
        self.error(["--aggregate", "kernel", "--by", "pid", "--func", f"{self.wl}:burn_cpu"],
                   self.cmd, mentions=[r"--by pid"])

    def test_pid_dies_while_pmcprof_starts(self):
        target = t.spawn([self.wl, "burn", "100000000", "500"])
        pm = subprocess.Popen([t.pmcprof(), "stat", "-e", "task-clock", "-p", str(target.pid),
                               "--timeout", "5000", "--func", ":burn_cpu", "-j", "-o", "-"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.2)  # inside pmcprof's start-up: after its PID check, before it attaches
        t.stop(target)
        out, err = pm.communicate(timeout=60)
        t.log(f"-p of a process killed 0.2 s after pmcprof started: exit {pm.returncode}, "
              f"stderr {err.strip()!r}")
        if pm.returncode == 0:
            report = t.parse_json_documents(out)[0]
            self.assertEqual(report["functions"][0]["function"], ":burn_cpu")
        else:
            line = t.assert_clean_error(
                self, subprocess.CompletedProcess(pm.args, pm.returncode, out, err))
            self.assertRegex(line, rf"{target.pid}|exited|gone|no process",
                             "a process that died is not a kernel attach failure")
            self.assertNotIn("No such file or directory", line)
        self.assert_nothing_left()


class NotAnErrorTest(Base):
    def test_never_called(self):
        wl = t.workload("func_workload")
        func = f"{wl}:tiny_function"
        s = t.func_stat(["-e", "task-clock", "--func", func], command=[wl, "burn", "2", "100"])
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(s.stderr.strip(), "")
        row = t.func_row(s.json, func)
        t.log(f"never called: {t.describe_func_row(row)}; task-clock status "
              f"{t.func_event(row)['status']}")
        self.assertEqual((row["calls"], row["not_counted"], row["lost"]), (0, 0, 0))
        self.assertIn(t.func_event(row)["total"], (0, None))
        self.assert_nothing_left()

    def test_pid_exits_mid_run(self):
        wl = t.workload("func_workload")
        target = t.spawn([wl, "burn", "100000000", "500"])
        try:
            with tempfile.TemporaryDirectory(prefix="pmcprof-test-") as tmp:
                out = os.path.join(tmp, "report")
                pm = subprocess.Popen([t.pmcprof(), "stat", "-e", "task-clock", "-p",
                                       str(target.pid), "--timeout", "30000", "--func",
                                       ":burn_cpu", "-j", "-o", out],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                held = t.wait_attached(pm.pid, 5)
                self.assertIsNotNone(held, "pmcprof did not attach")
                if not self.have_bpftool:
                    held = (set(), set())
                time.sleep(0.3)
                t0 = time.monotonic()
                t.stop(target)
                _, err = pm.communicate(timeout=40)
                after = time.monotonic() - t0
                with open(out) as f:
                    report = t.parse_json_documents(f.read())[0]
        finally:
            t.stop(target)
        row = t.func_row(report, ":burn_cpu")
        t.log(f"-p {target.pid} killed mid-run: pmcprof ended {after:.2f} s later, exit "
              f"{pm.returncode}; {t.describe_func_row(row)}")
        self.assertEqual(pm.returncode, 0, err)
        self.assertLess(after, 5, "pmcprof must stop when the process it watches exits")
        self.assertGreater(row["calls"], 0)
        self.assertFalse(report["interrupted"])
        self.assertEqual(t.wait_bpf_ids_gone(*held), (set(), set()))
        self.assert_nothing_left()


@t.requires("program:bpftool")  # to check what a signalled pmcprof leaves loaded
class SignalTest(Base):

    def start(self, out):
        wl = t.workload("func_workload")
        pm = subprocess.Popen([t.pmcprof(), "stat", "-e", "task-clock", "--func",
                               f"{wl}:burn_cpu", "-j", "-o", out, "--",
                               wl, "burn", "100000000", "500"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        held = t.wait_attached(pm.pid, 5)
        if held is None:
            pm.kill()
            _, err = pm.communicate(timeout=10)
            self.fail(f"pmcprof did not attach: {err!r}")
        self.assertTrue(t.wait_for(lambda: t.children_of(pm.pid), 10), "no workload child")
        kids = t.children_of(pm.pid)
        time.sleep(0.4)
        return pm, held, kids

    def test_sigint(self):
        with tempfile.TemporaryDirectory(prefix="pmcprof-test-") as tmp:
            out = os.path.join(tmp, "report")
            pm, held, kids = self.start(out)
            pm.send_signal(signal.SIGINT)
            try:
                _, err = pm.communicate(timeout=10)
            finally:
                for k in kids:
                    if t.pid_alive(k):
                        os.kill(k, signal.SIGKILL)
            with open(out) as f:
                report = t.parse_json_documents(f.read())[0]
        row = report["functions"][0]
        t.log(f"SIGINT: exit {pm.returncode}, exit_status {report['exit_status']}, "
              f"interrupted {report['interrupted']}; {t.describe_func_row(row)}")
        self.assertGreaterEqual(pm.returncode, 0, f"killed by a signal: {err!r}")
        for marker in t.CRASH_MARKERS:
            self.assertNotIn(marker, err)
        self.assertTrue(report["interrupted"])
        self.assertEqual(pm.returncode, report["exit_status"])
        self.assertGreater(row["calls"], 0)
        self.assertTrue(t.wait_for(lambda: not any(t.pid_alive(k) for k in kids), 3),
                        "the workload outlived pmcprof")
        self.assertEqual(t.wait_bpf_ids_gone(*held), (set(), set()),
                         "programs/links pmcprof held are still loaded")
        self.assert_nothing_left()

    def test_sigkill(self):
        with tempfile.TemporaryDirectory(prefix="pmcprof-test-") as tmp:
            pm, held, kids = self.start(os.path.join(tmp, "report"))
            t.log(f"SIGKILL: pmcprof {pm.pid} held progs {sorted(held[0])} links "
                  f"{sorted(held[1])}; workload {kids}")
            pm.kill()
            pm.wait(timeout=10)
            # The workload survives its parent (it is only a child); end it by its pid.
            for k in kids:
                if t.pid_alive(k):
                    os.kill(k, signal.SIGKILL)
            pm.stderr.close()
        self.assertEqual(t.wait_bpf_ids_gone(*held), (set(), set()),
                         "the kernel must drop a killed pmcprof's programs and links")
        self.assert_nothing_left()


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes", "syscall-tracepoints"), doc=__doc__))

#!/usr/bin/env python3
"""Issue 14, against the live kernel: every defect class found by the adversarial pass, one test
each (each failed on the main branch before the fix).

- output errors: -o /dev/full (text, -j, -I 50, --func) and -o /proc/version exit 1 with one
  line 'cannot write the report to ...'; the workload's status comes through when the report
  was written;
- bytes that are not UTF-8: a command argument 0xFF (-j), a cgroup named with 0xFF, a comma and
  a newline (-j valid, -x keeps its columns), a thread name cut in the middle of a UTF-8
  character under --by comm (-j valid, the measured command not ended early);
- numbers: -p 4294967297, -t 4294967297, -p 0x10, -I 18446744073709551615, -I '',
  --timeout 0x10, --timeout '', -r 0x10 are refused in one line naming the option;
- hangs: --func FIFO:main, -o FIFO without a reader, a 40,000-character --for-each-cgroup
  regex and one nested 30,000 deep (a SIGSEGV before) end at once;
- long input: errors never echo more than a few hundred characters;
- duplicates: the same --func twice (as written, or libc:getppid and c:getppid, or
  syscall:getppid and syscall:sys_getppid) refused; the same cgroup through -G and
  --for-each-cgroup (bpf backend) counted once;
- -p/-t ends: -p of a non-leader thread refused naming its process; -t of a thread that exits
  while its process runs on ends the run; -p of a process whose first thread exits first runs
  until the last thread exits;
- the workload's group: after SIGINT, SIGTERM, --timeout or SIGKILL of pmcprof nothing of
  `sh -c 'sleep 30; true'` is left, nor of a command that ignores SIGTERM after SIGKILL;
- start-up and attach are interruptible: SIGINT 200 ms into a 64-function run, or during its
  attach, ends pmcprof within 2 s with status 130 and one line.

Usage: test_faults.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import pmcprof_testlib as t

EXIT_USAGE = 129  # usage errors exit as perf's do


class OutputErrors(unittest.TestCase):
    LINE = "pmcprof: cannot write the report to '/dev/full': No space left on device"

    def check_full(self, args):
        proc = t.run_pmcprof(["stat", "-o", "/dev/full", *args], timeout=30)
        t.log(f"-o /dev/full {' '.join(args)}: exit {proc.returncode}, {proc.stderr!r}")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(proc.stderr.strip().splitlines(), [self.LINE])

    def test_dev_full(self):
        self.check_full(["-e", "task-clock", "--", "/bin/true"])
        self.check_full(["-j", "-e", "task-clock", "--", "/bin/true"])
        self.check_full(["-I", "50", "-e", "task-clock", "--", "sleep", "0.3"])
        self.check_full(["--func", "syscall:getppid", "-e", "task-clock", "--", "/bin/true"])

    def test_unwritable_proc_file(self):
        proc = t.run_pmcprof(["stat", "-o", "/proc/version", "-e", "task-clock", "--", "/bin/true"])
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertRegex(proc.stderr, r"^pmcprof: cannot write the report to '/proc/version': ")

    def test_status_when_written(self):
        s = t.stat(["-e", "task-clock"], command=["sh", "-c", "exit 3"])
        self.assertEqual(s.returncode, 3, s.stderr)
        self.assertEqual(s.json["exit_status"], 3)


class HostileBytes(unittest.TestCase):
    def test_argument_not_utf8(self):
        proc = subprocess.run([t.pmcprof().encode(), b"stat", b"-j", b"-o", b"-", b"-e",
                               b"task-clock", b"--", b"/bin/true", b"\xff"],
                              capture_output=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = json.loads(proc.stdout.decode("utf-8"))
        self.assertEqual(report["target"], "/bin/true \\xFF")

    def test_cgroup_names(self):
        with t.TestCgroups("bytes") as cg:
            name = "x\udcff,y\"z"  # 0xFF (surrogate-escaped), a comma, a quote (cgroupfs
            # refuses a newline in a name; the renderers' newline escaping is unit-tested)
            cg.make(name)
            # -G splits at commas: the cgroup is found below its parent instead.
            argv = [os.fsencode(t.pmcprof()), b"stat", b"-a", b"-e", b"task-clock",
                    b"--for-each-cgroup", os.fsencode(cg.rel("")), b"--timeout", b"100",
                    b"-o", b"-"]
            j = subprocess.run(argv + [b"-j"], capture_output=True, timeout=30)
            self.assertEqual(j.returncode, 0, j.stderr)
            rows = json.loads(j.stdout.decode("utf-8"))["counters"]
            self.assertEqual([r["cgroup"] for r in rows],
                             [cg.rel("") + "/x\\xFF,y\"z"])
            c = subprocess.run(argv + [b"-x", b","], capture_output=True, timeout=30)
            self.assertEqual(c.returncode, 0, c.stderr)
            lines = c.stdout.decode("utf-8").splitlines()
            self.assertEqual(len(lines), 1, lines)
            self.assertIn(f',"{cg.rel("")}/x\\xFF,y""z",', lines[0])

    def test_comm_cut_in_utf8(self):
        tasks = t.workload("tasks")
        name = "éééééééé"  # 16 bytes: the kernel keeps 15, half a character
        s = t.stat(["--func", "syscall:getppid", "--by", "comm", "-e", "task-clock", "-I",
                    "50"], command=[tasks, "rename", name, "20000"], timeout=60)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(s.json["exit_status"], 0)  # the command ran to its end
        comms = {r.get("comm") for r in s.json["functions"]}
        self.assertIn("ééééééé\\xC3", comms)
        row = [r for r in s.json["functions"] if r.get("comm") == "ééééééé\\xC3"][0]
        self.assertGreater(row["calls"], 0)


class Numbers(unittest.TestCase):
    def test_refused(self):
        cases = [
            (["-p", "4294967297", "-e", "task-clock"], r"-p '4294967297': out of range"),
            (["-t", "4294967297", "-e", "task-clock"], r"-t '4294967297': out of range"),
            (["-p", "0x10", "-e", "task-clock"], r"-p '0x10': not a decimal"),
            (["-a", "-I", "18446744073709551615"], r"-I '18446744073709551615': out of range"),
            (["-a", "-I", ""], r"-I needs a value"),
            (["-a", "--timeout", "0x10"], r"--timeout '0x10': not a decimal"),
            (["-a", "--timeout", ""], r"--timeout needs a value"),
            (["-r", "0x10", "--", "true"], r"-r '0x10': not a decimal"),
        ]
        for args, rx in cases:
            proc = t.run_pmcprof(["stat", *args], timeout=5)
            t.assert_clean_error(self, proc, exit_code=EXIT_USAGE, mentions=[rx])


class NoHangs(unittest.TestCase):
    def test_fifo_as_elf_and_report(self):
        with tempfile.TemporaryDirectory(prefix="pmcprof-fifo-") as tmp:
            fifo = os.path.join(tmp, "fifo")
            os.mkfifo(fifo)
            proc = t.run_pmcprof(["stat", "--func", f"{fifo}:main", "--", "true"], timeout=10)
            t.assert_clean_error(self, proc, exit_code=EXIT_USAGE, mentions=[r"not a regular file"])
            proc = t.run_pmcprof(["stat", "-o", fifo, "-e", "task-clock", "--", "true"],
                                 timeout=10)
            t.assert_clean_error(self, proc, mentions=[r"FIFO with no reader"])

    def test_regex_bounded(self):
        for pattern in ["a?" * 20000 + "a" * 20000, "(" * 30000 + ")" * 30000]:
            t0 = time.monotonic()
            proc = t.run_pmcprof(["stat", "-a", "-e", "task-clock", "--for-each-cgroup", pattern,
                                  "--timeout", "100"], timeout=10)
            took = time.monotonic() - t0
            t.log(f"{len(pattern)}-character regex: exit {proc.returncode} after {took:.2f} s")
            line = t.assert_clean_error(self, proc, exit_code=EXIT_USAGE,
                                        mentions=[r"at most 1024 characters"])
            self.assertLess(len(line), 300)
            self.assertLess(took, 2.0)

    def test_long_input_not_echoed(self):
        huge = "x" * 100000
        for args in (["-e", huge, "--", "true"], ["--func", "syscall:" + huge, "--", "true"],
                     ["--func", f"/{huge}:f", "--", "true"], ["-a", "-G", huge]):
            proc = t.run_pmcprof(["stat", *args], timeout=10)
            line = t.assert_clean_error(self, proc)
            self.assertLess(len(proc.stderr), 600, line[:200])


class Duplicates(unittest.TestCase):
    def test_same_function(self):
        w = t.workload("func_workload")
        for funcs in ([f"{w}:burn_cpu", f"{w}:burn_cpu"], ["libc:getppid", "c:getppid"],
                      ["syscall:getppid", "syscall:sys_getppid"]):
            args = ["stat", "-e", "task-clock"]
            for f in funcs:
                args += ["--func", f]
            proc = t.run_pmcprof(args + ["--", "true"], timeout=30)
            t.assert_clean_error(self, proc, exit_code=EXIT_USAGE,
                                 mentions=[r"twice|same function"])

    def test_same_cgroup_twice(self):
        with t.TestCgroups("dup") as cg:
            a = cg.make("a")
            s = t.stat(["-a", "-e", "task-clock", "--cgroup-backend", "bpf", "-G", a,
                        "--for-each-cgroup", cg.rel(""), "--timeout", "200"])
            self.assertEqual(s.returncode, 0, s.stderr)
            self.assertEqual([r["cgroup"] for r in s.json["counters"]], [a])


class TaskEnds(unittest.TestCase):
    def spawn_tasks(self, *args):
        proc = subprocess.Popen([t.workload("tasks"), *args], stdout=subprocess.PIPE, text=True)
        line = proc.stdout.readline().split()
        self.assertEqual(line[0], "tid")
        return proc, int(line[1])

    def test_p_of_thread_refused(self):
        proc, tid = self.spawn_tasks("thread-exits", "3000", "3000")
        try:
            r = t.run_pmcprof(["stat", "-p", str(tid), "-e", "task-clock"], timeout=10)
            t.assert_clean_error(self, r, exit_code=EXIT_USAGE,
                                 mentions=[fr"-p {tid} is a thread of process {proc.pid}"])
        finally:
            t.stop(proc)

    def test_t_ends_with_its_thread(self):
        proc, tid = self.spawn_tasks("thread-exits", "500", "5000")
        try:
            s = t.stat(["-t", str(tid), "-e", "task-clock"], timeout=10)
            t.log(f"-t of a thread that lives 0.5 s in a 5 s process: {s.wall_s:.2f} s")
            self.assertEqual(s.returncode, 0, s.stderr)
            self.assertLess(s.wall_s, 2.5)
            self.assertIsNone(proc.poll(), "the process should still run")
        finally:
            t.stop(proc)

    def test_p_of_process_whose_leader_exits_first(self):
        proc, _ = self.spawn_tasks("leader-exits", "1500")
        try:
            s = t.stat(["-p", str(proc.pid), "-e", "task-clock"], timeout=10)
            t.log(f"-p of a process whose first thread exited: {s.wall_s:.2f} s")
            self.assertEqual(s.returncode, 0, s.stderr)
            self.assertGreater(s.wall_s, 1.0)  # not ended by the first thread's exit
            self.assertLess(s.wall_s, 3.5)  # ended by the last one's
        finally:
            t.stop(proc)


class WorkloadGroup(unittest.TestCase):
    def run_case(self, how, script):
        args = ["stat", "-e", "task-clock", "-o", "/dev/null"]
        if how == "timeout":
            args += ["--timeout", "300"]
        proc = subprocess.Popen([t.pmcprof(), *args, "--", "sh", "-c", script],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        sid = proc.pid
        try:
            # pmcprof, sh and sleep
            self.assertTrue(t.wait_for(lambda: len(t.session_members(sid)) >= 3, 10),
                            "the workload never started")
            if how in ("SIGINT", "SIGTERM", "SIGKILL"):
                time.sleep(0.2)
                proc.send_signal(getattr(signal, how))
            proc.wait(timeout=10)
            t.wait_for(lambda: not t.session_members(sid), 5)
            left = t.session_members(sid)
            t.log(f"{how} to pmcprof running sh -c {script!r}: exit {proc.returncode}, "
                  f"left {left}")
            self.assertEqual(left, [], f"{how}: workload processes survived pmcprof")
        finally:
            for p in t.session_members(sid):
                os.kill(p, signal.SIGKILL)
            t.stop(proc)

    def test_group_ends_with_pmcprof(self):
        for how in ("SIGINT", "SIGTERM", "timeout", "SIGKILL"):
            self.run_case(how, "sleep 30; true")

    def test_sigterm_ignoring_command_and_sigkill(self):
        self.run_case("SIGKILL", 'trap "" TERM; sleep 30; true')
        self.run_case("SIGTERM", 'trap "" TERM INT; sleep 30; true')


def libc_functions(n):
    """N global libc functions, one name per address (aliases such as aio_cancel and
    aio_cancel64 would be refused as the same function), or Skip."""
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    if not os.path.exists(libc):
        raise t.Skip("no x86_64 libc")
    nm = t.run(["readelf", "-W", "--dyn-syms", libc])
    by_address = {}
    for line in nm.stdout.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[4] == "GLOBAL" and f[6] != "UND":
            name = f[7].split("@")[0]
            if name[:1].isalpha():
                by_address.setdefault(f[1], name)
    names = sorted(set(by_address.values()))[:n]
    if len(names) < n:
        raise t.Skip(f"fewer than {n} libc functions found")
    return names


def signals_taken(proc, timeout=30.0):
    """Waits until pmcprof blocks SIGINT (its first constructor, main.cpp), as
    /proc/PID/status shows. A signal before that lands on a program that has not run a line of
    its own yet (the dynamic loader and the libraries' constructors: tens of milliseconds on a
    loaded machine) and ends it as it would any program; the test is of what comes after."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                fields = dict(l.split(":", 1) for l in f if ":" in l)
            if int(fields["SigBlk"], 16) & (1 << (signal.SIGINT - 1)):
                return
        except (OSError, KeyError, ValueError):
            pass
        time.sleep(0.001)
    raise AssertionError("pmcprof never blocked SIGINT")


class AttachInterruptible(unittest.TestCase):
    def run_interrupted(self, wait_before_signal):
        """pmcprof stat -a on 64 libc functions, SIGINT once wait_before_signal(proc) returns.
        The signal may land while pmcprof starts or attaches (130 and one line) or, where the
        kernel makes multi-uprobe links and the 64 attach in a moment, while it counts (a
        final report that says it was interrupted, status 0). Returns the seconds from the
        signal to pmcprof's end."""
        names = libc_functions(64)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "report.json")
            args = ["stat", "-v", "-j", "-e", "task-clock", "-a", "-o", out]
            for n in names:
                args += ["--func", f"libc:{n}"]
            proc = subprocess.Popen([t.pmcprof(), *args], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            # pmcprof stat -a runs until stopped: a pmcprof that ignored the signal (or hung
            # before attaching) is killed after 60 s, and the test fails saying so.
            watchdog = threading.Timer(60, proc.kill)
            watchdog.start()
            try:
                wait_before_signal(proc)
                t0 = time.monotonic()
                proc.send_signal(signal.SIGINT)
                err = proc.communicate()[1]
                took = time.monotonic() - t0
            finally:
                watchdog.cancel()
                t.stop(proc)
            self.assertNotEqual(proc.returncode, -signal.SIGKILL,
                                "pmcprof did not end within 60 s (SIGINT ignored?)")
            report = ""
            if os.path.exists(out):
                with open(out) as f:
                    report = f.read()
        lines = err.strip().splitlines() or [""]
        last = lines[-1]
        phase = "while starting or attaching" if proc.returncode == 130 else "while counting"
        t.log(f"signal landed {phase}: exit {proc.returncode} after {took:.2f} s: {last!r}")
        if proc.returncode == 130:
            self.assertEqual(last,
                             "pmcprof: interrupted by SIGINT while attaching: nothing was counted")
            # Before it only -v's own lines, one per probe attached.
            self.assertTrue(all(l.startswith("pmcprof: attaching ") for l in lines[:-1]), err)
            self.assertEqual(report, "")
        else:
            self.assertEqual(proc.returncode, 0, err)
            self.assertEqual(json.loads(report)["interrupted"], True, report[:300])
        self.assertEqual(t.wait_no_pmcprof_orphans(), [])
        return took, proc.returncode

    def test_sigint_in_start_up(self):
        """The start-up window: a signal 50 ms in, while the 64 --func targets are still being
        resolved or loaded, ends pmcprof at once (before issue 14 it was acted on only after
        every probe was attached, 14 s later, and a signal in the first milliseconds killed
        pmcprof without a report)."""
        t.log("SIGINT 50 ms into a 64-function start-up:")
        took, status = self.run_interrupted(lambda proc: (signals_taken(proc), time.sleep(0.05)))
        self.assertLess(took, 2.0)
        # 50 ms is well inside start-up here (libpfm4, 64 ELF lookups, the BPF load and its
        # calibration take ~100 ms); a machine that started faster would make this a second
        # copy of the attach test, which the log would show.
        if status != 130:
            t.log("note: pmcprof had finished starting within 50 ms")

    def test_sigint_during_long_attach(self):
        """SIGINT as soon as the first of 64 libc functions is reported attached ends pmcprof
        within 2 s, nothing left behind. (Before issue 14 the signal was acted on after every
        probe was attached; before multi-uprobe links, each attached probe took ~0.1 s more
        to detach.)"""
        def first_attach(proc):
            line = ""
            while "attaching" not in line:  # -v: one line per probe as it is attached
                line = proc.stderr.readline()
                self.assertTrue(line, "pmcprof ended before attaching")
        t.log("SIGINT during a 64-function attach:")
        self.assertLess(self.run_interrupted(first_attach)[0], 2.0)

if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes", "syscall-tracepoints", "cgroup2"), doc=__doc__))

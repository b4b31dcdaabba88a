#!/usr/bin/env python3
"""bash completion (completion/pmcprof.bash): subcommands, flags, event names, option values.

Sources the script in `bash -c`, sets COMP_WORDS / COMP_CWORD (and COMP_LINE / COMP_POINT where
bash's own word splitting at ':' and '=' matters) as bash does for a <TAB>, calls the completion
function and compares COMPREPLY. Event names come from the pmcprof under test
(`pmcprof list --names`). No root needed.
"""
import os
import shlex
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcprof_testlib as t  # noqa: E402

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(SOURCE_DIR, "completion", "pmcprof.bash")


def complete(words, line=None, bash_words=None):
    """COMPREPLY for the command line WORDS (the last word is the one being completed).
    LINE: the text before the cursor when bash would split WORDS differently (BASH_WORDS)."""
    words = [t.pmcprof() if i == 0 else w for i, w in enumerate(words)]
    cw = bash_words or words
    cw = [t.pmcprof() if i == 0 else w for i, w in enumerate(cw)]
    script = [f"source {shlex.quote(SCRIPT)} || exit 9",
              "COMP_WORDS=(" + " ".join(shlex.quote(w) for w in cw) + ")",
              f"COMP_CWORD={len(cw) - 1}"]
    if line is not None:
        line = line.replace("pmcprof", t.pmcprof(), 1)
        script += [f"COMP_LINE={shlex.quote(line)}", f"COMP_POINT={len(line)}"]
    script += ['_pmcprof "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" '
               '"${COMP_WORDS[COMP_CWORD-1]}"',
               'printf "%s\\n" "${COMPREPLY[@]}"']
    env = dict(os.environ, PATH=os.path.dirname(t.pmcprof()) + ":" + os.environ.get("PATH", ""))
    p = t.run(["bash", "--norc", "--noprofile", "-c", "\n".join(script)], timeout=30, env=env)
    if p.returncode != 0:
        raise AssertionError(f"bash failed ({p.returncode}): {p.stderr}")
    if "command not found" in p.stderr or "syntax error" in p.stderr:
        raise AssertionError(p.stderr)
    return [l for l in p.stdout.splitlines() if l]


def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split(" ", 1)[0] == "cgroup2":
                return left.split()[4]
    return None


class Completion(unittest.TestCase):
    def check(self, words, want, exact=True, **kw):
        got = complete(words, **kw)
        t.log(f"{' '.join(words)!r}<TAB> -> {got[:12]}{' ...' if len(got) > 12 else ''}")
        if exact:
            self.assertEqual(sorted(got), sorted(want), f"{words}")
        else:
            for w in want:
                self.assertIn(w, got, f"{words}")
        return got

    def test_subcommands(self):
        self.check(["pmcprof", "st"], ["stat"])
        self.check(["pmcprof", ""], ["stat", "list", "doctor", "serve", "report", "diff"])
        self.check(["pmcprof", "rep"], ["report"])
        self.check(["pmcprof", "d"], ["doctor", "diff"])
        self.check(["pmcprof", "do"], ["doctor"])
        self.check(["pmcprof", "--v"], ["--version"])

    def test_flags(self):
        self.check(["pmcprof", "stat", "--no-"],
                   ["--no-aggr", "--no-big-num", "--no-compensate", "--no-csv-summary",
                    "--no-merge", "--no-sched-hook"])
        self.check(["pmcprof", "stat", "--per-"],
                   ["--per-core", "--per-cpu", "--per-die", "--per-node", "--per-socket",
                    "--per-thread"])
        self.check(["pmcprof", "stat", "--metric"],
                   ["--metric-no-group", "--metric-no-merge", "--metric-only", "--metrics"])
        self.check(["pmcprof", "stat", "-M", "IP"], ["IPC"])
        # A comma list completes its last item (branch_miss_rate is in every PMU's table; the
        # Topdown groups only in some models': Intel's, not AMD's).
        self.check(["pmcprof", "stat", "-M", "IPC,branch_mi"], ["IPC,branch_miss_rate"])
        self.check(["pmcprof", "serve", "--metr"], [])
        self.check(["pmcprof", "list", "--metr"], ["--metricgroups", "--metrics"])
        self.check(["pmcprof", "stat", "--cg"], ["--cgroup", "--cgroup-backend"])
        got = self.check(["pmcprof", "stat", "-"],
                         ["-e", "--event", "-a", "-A", "-I", "-r", "-x", "-j", "-o", "--func",
                          "-M", "-d", "-B", "--summary", "--interval-count", "--json-output",
                          "--backend", "--aggregate", "--by", "--buffer-pages", "--thread-state", "-G",
                          "--for-each-cgroup", "--cgroup-backend", "--timeout", "-p", "-t",
                          "-C", "-v"], exact=False)
        self.assertNotIn("--listen", got)
        self.check(["pmcprof", "list", "--"],
                   ["--all", "--json", "--names", "--help", "--metrics", "--metricgroups"])
        self.check(["pmcprof", "doctor", "-"], ["-h", "--help", "-j", "--json"])
        self.check(["pmcprof", "serve", "--li"], ["--listen"])
        self.check(["pmcprof", "serve", "--ag"], ["--aggregate"])
        # After an option's value, flags again.
        self.check(["pmcprof", "stat", "-I", "100", "-e", "task-clock", "--time"], ["--timeout"])

    def test_events(self):
        self.check(["pmcprof", "stat", "-e", "task-c"], ["task-clock"])
        self.check(["pmcprof", "stat", "--event", "task-c"], ["task-clock"])
        self.check(["pmcprof", "stat", "-e", "cycles,task-c"], ["cycles,task-clock"])
        self.check(["pmcprof", "stat", "-e", "{cycles,task-c"], ["{cycles,task-clock"])
        self.check(["pmcprof", "stat", "-e", "{cycles,instructions},page-f"],
                   ["{cycles,instructions},page-faults"])
        self.check(["pmcprof", "stat", "-etask-c"], ["-etask-clock"])
        self.check(["pmcprof", "serve", "-e", "task-c"], ["task-clock"])
        got = self.check(["pmcprof", "stat", "-e", ""], ["task-clock", "cycles", "page-faults"],
                         exact=False)
        names = t.run_pmcprof(["list", "--names"]).stdout.split()
        self.assertEqual(sorted(got), sorted(set(names)), "every name of `pmcprof list --names`")
        # A list filter completes event names too.
        self.check(["pmcprof", "list", "task-c"], ["task-clock"])

    def test_events_as_bash_splits_them(self):
        # ':' and '=' are in COMP_WORDBREAKS: bash hands over "u,task-c" and replaces only that.
        self.check(["pmcprof", "stat", "-e", "cycles:u,task-c"], ["u,task-clock"],
                   line="pmcprof stat -e cycles:u,task-c",
                   bash_words=["pmcprof", "stat", "-e", "cycles", ":", "u,task-c"])
        self.check(["pmcprof", "stat", "--event=task-c"], ["task-clock"],
                   line="pmcprof stat --event=task-c",
                   bash_words=["pmcprof", "stat", "--event", "=", "task-c"])
        self.check(["pmcprof", "stat", "--backend="], ["auto", "fentry", "kprobe"],
                   line="pmcprof stat --backend=",
                   bash_words=["pmcprof", "stat", "--backend", "="])
        # The option before a split word is still found: -e's value, not a flag.
        self.check(["pmcprof", "stat", "-e", "cycles:u", "-e", "page-f"], ["page-faults"],
                   line="pmcprof stat -e cycles:u -e page-f",
                   bash_words=["pmcprof", "stat", "-e", "cycles", ":", "u", "-e", "page-f"])

    def test_option_values(self):
        self.check(["pmcprof", "stat", "--backend", ""], ["auto", "fentry", "kprobe"])
        self.check(["pmcprof", "stat", "--aggregate", ""], ["auto", "kernel", "stream", "both"])
        self.check(["pmcprof", "stat", "--aggregate", "s"], ["stream"])
        self.check(["pmcprof", "stat", "--by", ""],
                   ["pid", "comm", "cpu", "cgroup", "arg0", "arg0:str", "arg1", "arg1:str", "arg2",
                    "arg2:str"])
        self.check(["pmcprof", "stat", "--cgroup-backend", ""], ["auto", "fd", "bpf"])
        self.check(["pmcprof", "serve", "--by", "c"], ["comm", "cpu", "cgroup"])

    def test_output_file(self):
        with tempfile.TemporaryDirectory(prefix="pmcprof-comp-") as tmp:
            open(os.path.join(tmp, "report.json"), "w").close()
            os.mkdir(os.path.join(tmp, "results"))
            self.check(["pmcprof", "stat", "-o", os.path.join(tmp, "re")],
                       [os.path.join(tmp, "report.json"), os.path.join(tmp, "results")])

    def test_report(self):
        self.check(["pmcprof", "report", "--pro"], ["--prometheus"])
        self.check(["pmcprof", "report", "-"],
                   ["-h", "--help", "-i", "--input", "-x", "--field-separator", "-j", "--json",
                    "--prometheus", "--no-big-num", "--hist", "--hist-linear"])
        with tempfile.TemporaryDirectory(prefix="pmcprof-comp-") as tmp:
            open(os.path.join(tmp, "run.json"), "w").close()
            os.mkdir(os.path.join(tmp, "runs"))
            want = [os.path.join(tmp, "run.json"), os.path.join(tmp, "runs")]
            self.check(["pmcprof", "report", os.path.join(tmp, "ru")], want)
            self.check(["pmcprof", "report", "-i", os.path.join(tmp, "ru")], want)
            self.check(["pmcprof", "report", "-j", os.path.join(tmp, "ru")], want)
            self.check(["pmcprof", "diff", os.path.join(tmp, "ru")], want)
            self.check(["pmcprof", "diff", "-j", os.path.join(tmp, "run.json"),
                        os.path.join(tmp, "ru")], want)
        self.check(["pmcprof", "diff", "--"],
                   ["--help", "--field-separator", "--json", "--threshold", "--alpha"])
        self.check(["pmcprof", "diff", "--threshold", ""], ["5", "10", "20"])

    def test_web_config_file(self):
        self.check(["pmcprof", "serve", "--web"], ["--web.config.file"])
        self.check(["pmcprof", "stat", "--web"], [])
        with tempfile.TemporaryDirectory(prefix="pmcprof-comp-") as tmp:
            for name in ("web.yml", "web.yaml", "web.txt"):
                open(os.path.join(tmp, name), "w").close()
            os.mkdir(os.path.join(tmp, "webdir"))
            self.check(["pmcprof", "serve", "--web.config.file", os.path.join(tmp, "we")],
                       [os.path.join(tmp, n) for n in ("web.yml", "web.yaml", "webdir")])

    def test_func(self):
        self.check(["pmcprof", "stat", "--func", "sysc"], ["syscall:"])
        if os.path.isdir("/sys/kernel/tracing/events/syscalls") or \
                os.path.isdir("/sys/kernel/debug/tracing/events/syscalls"):
            self.check(["pmcprof", "stat", "--func", "syscall:getpp"], ["syscall:getppid"])

    def test_usdt_and_regions(self):
        self.check(["pmcprof", "stat", "--func", "usd"], ["usdt:"])
        self.check(["pmcprof", "stat", "--func", "tracep"], ["tracepoint:"])
        self.check(["pmcprof", "stat", "--py"], ["--python"])
        self.check(["pmcprof", "stat", "--max"], ["--max-keys"])
        self.check(["pmcprof", "stat", "--reg"], ["--region"])
        self.check(["pmcprof", "stat", "--by", "arg"],
                   ["arg0", "arg0:str", "arg1", "arg1:str", "arg2", "arg2:str"])
        if os.path.isdir("/sys/kernel/tracing/events/sched"):
            self.check(["pmcprof", "stat", "--func", "tracepoint:sche"], ["tracepoint:sched:"])
            self.check(["pmcprof", "stat", "--func", "tracepoint:sched:sched_process_ex"],
                       ["tracepoint:sched:sched_process_exec", "tracepoint:sched:sched_process_exit"])
        wl = t.workload("sdt_workload")
        t.require("program:readelf")  # lists its USDT probes
        probe = f"usdt:{wl}:pmcprof_test:work__"
        self.check(["pmcprof", "stat", "--func", f"usdt:{wl}"], [f"usdt:{wl}:"])
        self.check(["pmcprof", "stat", "--func", probe], [probe + "done", probe + "start"])
        # As bash splits it at ':': only the last part is replaced.
        self.check(["pmcprof", "stat", "--func", probe], ["work__done", "work__start"],
                   line=f"pmcprof stat --func {probe}",
                   bash_words=["pmcprof", "stat", "--func", "usdt", ":", wl, ":", "pmcprof_test",
                               ":", "work__"])
        start = f"q=usdt:{wl}:pmcprof_test:work__start"
        self.check(["pmcprof", "stat", "--region", f"{start},{probe}d"], [f"{start},{probe}done"])
        self.check(["pmcprof", "stat", "--region", f"q=usdt:{wl}:pmcprof_test:ti"],
                   [f"q=usdt:{wl}:pmcprof_test:tick"])

    @t.requires("cgroup2")
    def test_cgroups(self):
        mount = cgroup2_mount()
        made = None
        dirs = sorted(d for d in os.listdir(mount) if os.path.isdir(os.path.join(mount, d)))
        if not dirs:
            if os.geteuid() != 0:
                raise t.Skip(f"{mount} has no child cgroup and this is not root")
            made = os.path.join(mount, f"pmcprof-comp-{os.getpid()}")
            os.mkdir(made)
            dirs = [os.path.basename(made)]
        try:
            d = dirs[0]
            siblings = [x for x in dirs if x.startswith(d[:3])]
            self.check(["pmcprof", "stat", "-G", d[:3]], [x + "/" for x in siblings])
            self.check(["pmcprof", "stat", "-G", "/" + d[:3]], ["/" + x + "/" for x in siblings])
            self.check(["pmcprof", "stat", "-G", "/," + d[:3]], ["/," + x + "/" for x in siblings])
            self.check(["pmcprof", "stat", "-G", os.path.join(mount, d[:3])],
                       [os.path.join(mount, x) + "/" for x in siblings])
            self.check(["pmcprof", "stat", "--for-each-cgroup", d[:3]],
                       [x + "/" for x in siblings])
        finally:
            if made:
                os.rmdir(made)

    def test_command_after_options(self):
        self.check(["pmcprof", "stat", "-e", "task-clock", "--", "slee"], ["sleep"], exact=False)
        self.check(["pmcprof", "stat", "-a", "slee"], ["sleep"], exact=False)
        got = complete(["pmcprof", "stat", "--", "sleep", "-"])
        self.assertNotIn("--event", got, "flags of pmcprof offered for the command's arguments")

    def test_installed_name(self):
        p = t.run(["bash", "--norc", "-c", f"source {shlex.quote(SCRIPT)} && complete -p pmcprof"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("-F _pmcprof", p.stdout)


if __name__ == "__main__":
    sys.exit(t.main(requires=("program:bash",), doc=__doc__))

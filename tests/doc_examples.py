#!/usr/bin/env python3
"""The examples in README.md, docs/*.md and man/pmcprof.1, run and held to the SHAPE of the
output they show: the same row and column labels for text, the same keys for JSON, the same
field count and labels for CSV; never the numbers.

An example is a ```console block of a Markdown file (an .EX/.EE block of the man page) with at
least one `$ ` command that runs pmcprof. Each `$ ` line is a command (a line ending in `\\` or
`|` continues it), the lines after it up to the next `$ ` its output as shown. A line `...`
marks output trimmed by hand: the shown labels must then appear in the actual output in that
order, with others between them allowed; an untrimmed example must match label for label.

A block's commands run in one bash, in order, in a scratch directory holding every test
workload under its own name (`./func_workload`, `./burn`, `./tcp_pair`, ...) and `in-cgroup`
(moves itself into a cgroup v2 group and execs the rest), with pmcprof first in PATH, stderr
merged into stdout (the report goes to stderr, as perf stat's). `$ cat FILE` of a file the
scratch directory lacks writes the shown output to FILE first (how app.py and the SQL script
reach the examples). A command ending in `&` runs in the background, its output captured apart.
Cgroups the examples name below the v2 mount (shop, shop/web, ...) are made when missing and
removed afterwards.

A comment just before a block says more about it (Markdown `<!-- doc-test: ... -->`, roff
`.\\" doc-test: ...`), words or key=value pairs:
  guest=arm64     captured in the arm64 guest of tests/guest (a real PMU, kprobes, fentry):
                  run there by tests/guest/test_guest_arm64_doc_examples.py, listed as such here
  needs=A,B       what the machine must have, else the example is skipped with the reason:
                  kprobes (or fentry), no-kprobes, pmu, no-pmu, cgroup2, root, port:N (free),
                  postgres, prometheus-server
  setup=postgres  start a PostgreSQL server with pgbench's tables in the block's directory first
  settle=S        after starting a silent background command, wait S seconds (to attach)
  unordered       the rows may come in another order (or number: labels compared as sets)
  user=NAME       run as that user, without capabilities (how an unprivileged user sees it)
  interrupt=S     send SIGINT to the block's pmcprof commands S seconds after their start, as
                  the example's author did by hand
  timeout=S       seconds for the whole block (default 60)
  skip="WHY"      never run: the reason is printed

    doc_examples.py list                          every example and what happens to it here
    doc_examples.py check --pmcprof P --workloads W [--only TEXT] [--verbose]
    doc_examples.py show  --pmcprof P --workloads W --only TEXT   print actual output to paste
    doc_examples.py selftest                      the shape rules on fixed texts (no root)
"""
import argparse
import difflib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEFAULT_SOURCES = ("README.md", "docs/*.md", "man/pmcprof.1")
# The cgroups the examples use (below the v2 mount), made when missing and removed afterwards.
CGROUPS = ("shop", "shop/web", "shop/batch", "shop/idle")
CGROUP_TOPS = ("shop",)


# ====================================================================== extraction

class Command:
    def __init__(self, text, line):
        self.text = text          # the command as shown, without "$ "
        self.line = line          # 1-based line in the source file
        self.shown = []           # output lines as shown
        self.background = False

    @property
    def trimmed(self):
        return any(s.strip() in ("...", "\u2026") for s in self.shown)


class Example:
    def __init__(self, path, line, markers):
        self.path = path          # relative to ROOT
        self.line = line
        self.markers = markers    # dict
        self.commands = []
        self.preamble = []        # NAME=VALUE lines of earlier examples of the file

    @property
    def name(self):
        return f"{self.path}:{self.line}"

    def runs_pmcprof(self):
        return any(re.search(r"(^|[\s;|&(])pmcprof\s", c.text) for c in self.commands)

    def __repr__(self):
        return f"<Example {self.name} {[c.text[:40] for c in self.commands]}>"


def parse_markers(text):
    out = {}
    for word in shlex.split(text):
        key, _, value = word.partition("=")
        out[key] = value if value else True
    return out


def split_commands(lines, first_line):
    """Commands and their shown output from a block's lines."""
    cmds = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            text, start, first = line[2:], first_line + i, i
            while (text.rstrip().endswith("\\") or text.rstrip().endswith("|")) and i + 1 < len(lines):
                i += 1
                text = text.rstrip()
                text = (text[:-1].rstrip() if text.endswith("\\") else text) + " " + lines[i].strip()
            cmd = Command(text, start)
            cmd.span = (first, i + 1)   # its lines in the block
            stripped = text.rstrip()
            if stripped.endswith("&") and not stripped.endswith("&&"):
                cmd.background = True
                cmd.text = stripped[:-1].rstrip()
            cmds.append(cmd)
        elif cmds:
            cmds[-1].shown.append(line)
        i += 1
    for c in cmds:
        while c.shown and not c.shown[-1].strip():
            c.shown.pop()
    return cmds


def extract_markdown(path, rel):
    with open(path) as f:
        lines = f.read().split("\n")
    examples = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```console":
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            markers = {}
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            m = re.match(r"\s*<!--\s*doc-test:(.*?)-->\s*$", lines[k]) if k >= 0 else None
            if m:
                markers = parse_markers(m.group(1))
            ex = Example(rel, i + 1, markers)
            ex.commands = split_commands(lines[i + 1:j], i + 2)
            ex.body = (i + 1, j)
            if ex.runs_pmcprof():
                examples.append(ex)
            i = j
        i += 1
    return examples


ROFF_ESCAPES = [("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\(ga", "`"), ("\\e", "\\"),
                ("\\&", ""), ("\\(em", "\u2014"), ("\\(en", "\u2013"), ("\\ ", " ")]


def unroff(line):
    line = re.sub(r"\\\[u([0-9A-F]{4,5})\]", lambda m: chr(int(m.group(1), 16)), line)
    for a, b in ROFF_ESCAPES:
        line = line.replace(a, b)
    return line


def extract_man(path, rel):
    with open(path) as f:
        lines = f.read().split("\n")
    examples = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == ".EX":
            j = i + 1
            while j < len(lines) and lines[j].strip() != ".EE":
                j += 1
            markers = {}
            k = i - 1
            while k >= 0 and lines[k].strip() in (".RS", ".PP", ".IP", ".nf"):
                k -= 1
            m = re.match(r'\.\\"\s*doc-test:(.*)$', lines[k]) if k >= 0 else None
            if m:
                markers = parse_markers(m.group(1))
            body = [unroff(x) for x in lines[i + 1:j]]
            ex = Example(rel, i + 1, markers)
            ex.commands = split_commands(body, i + 2)
            ex.body = (i + 1, j)
            if ex.runs_pmcprof():
                examples.append(ex)
            i = j
        i += 1
    return examples


def sources(root=ROOT, patterns=DEFAULT_SOURCES):
    import glob
    out = []
    for p in patterns:
        out.extend(sorted(glob.glob(os.path.join(root, p))))
    return out


ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


def extract_all(root=ROOT, patterns=DEFAULT_SOURCES):
    """Every example of the files; a `$ NAME=VALUE` line holds for the rest of its file, as a
    reader takes it (each example gets the earlier ones as its `preamble`)."""
    examples = []
    for path in sources(root, patterns):
        rel = os.path.relpath(path, root)
        found = extract_markdown(path, rel) if path.endswith(".md") else extract_man(path, rel)
        assignments = []
        for ex in found:
            ex.preamble = list(assignments)
            assignments += [c.text for c in ex.commands if ASSIGNMENT.match(c.text)]
        examples.extend(found)
    return examples


# ====================================================================== shape

NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?%?(?![\w])")
VALUE_WORDS = re.compile(r"<not supported>|<not counted>")
UNITS = {"ns", "us", "ms", "s", "msec", "sec", "/sec", "K/sec", "M/sec", "G/sec", "%", "B",
         "KiB", "MiB", "GiB", "GHz", "MHz"}
VALUE_ONLY = re.compile(r"^[#()\[\],;:%+/=-]*#[#()\[\],;:%+/=-]*$|^-$|^\(?\+-$")


def text_label(line):
    """What of a line of text output is shape: the line without its numbers (and the units
    right after them), its `# comment` (perf's metric column, whose unit follows the value's
    size) and plural endings of 'call'."""
    s = line.rstrip()
    if not s.strip():
        return ""
    if not s.lstrip().startswith("#"):
        s = re.split(r"\s#(?:\s|$)", s, maxsplit=1)[0]
    # data, not shape: which per-call figures fall below the noise floor, and their marks
    s = re.sub(r"\s+\(\*: below the noise floor[^)]*\)", "", s)
    # calls too deep, returns without their entry and calls in flight when the run ended (a -p
    # run that stops mid-call) show only when there are any: data, not shape
    s = re.sub(r", [\d,]+ too deep, [\d,]+ (?:unmatched returns|ends without a start)"
               r"(?:, [\d,]+ [^,(]*(?:\([^)]*\))?[^,(]*)? \(not measured\)", "", s)
    # why a call was not counted (a switch the kernel did not report, ...) happens under load
    s = re.sub(r"(not counted) \([^)]*\)", r"\1", s)
    # which events of a multiplexed set ran through every call differs from run to run
    s = re.sub(r"\s+\(estimated: [\d,]+ of [\d,]+ calls? measured\)", "", s)
    s = re.sub(r"(\d|\b(?:ns|us|ms|s))\*(?=\s|$)", r"\1", s)
    # a histogram's bar is its count drawn
    s = re.sub(r"\|[*#@= ]*\|", "|bar|", s)
    # a linear histogram's open-ended last row ("1196032 -> ...") is there when calls ran past
    # the range: a row like the others
    s = re.sub(r"->\s+\.\.\.(?=\s)", "-> 0", s)
    # the checkout the example ran from (doctor's uprobe check names its own binary's path)
    s = re.sub(r"(?<!\S)/\S*/build/", "BUILD/", s)
    s = VALUE_WORDS.sub("#", s)
    s = NUMBER.sub("#", s)
    out, prev_value = [], False
    for tok in s.split():
        if VALUE_ONLY.match(tok):
            prev_value = True
            continue
        if prev_value and tok.rstrip(",;") in UNITS:
            prev_value = False
            continue
        prev_value = False
        out.append(tok)
    label = " ".join(out)
    label = re.sub(r"\bcalls\b", "call", label)
    return label


def csv_label(line, sep):
    fields = line.split(sep)
    kept = []
    for f in fields:
        f = f.strip()
        if not f or NUMBER.fullmatch(f) or VALUE_WORDS.fullmatch(f):
            continue
        f = re.sub(r"^[KMG]/sec$", "/sec", f)
        kept.append(f)
    return f"[{len(fields)} fields] " + sep.join(kept)


def csv_separator(command):
    m = re.search(r"(?:^|\s)(?:-x|--field-separator)(?:\s+|=)?(\S+)", command)
    if not m:
        return None
    sep = m.group(1)
    if len(sep) >= 2 and sep[0] == sep[-1] and sep[0] in "'\"":
        sep = sep[1:-1]
    return sep


def json_paths(value, prefix=""):
    out = set()
    if isinstance(value, dict):
        for k, v in value.items():
            p = f"{prefix}.{k}" if prefix else k
            out.add(p)
            out |= json_paths(v, p)
    elif isinstance(value, list):
        for v in value:
            out |= json_paths(v, prefix + "[]")
    return out


def parse_json_output(lines):
    text = "\n".join(lines).strip()
    if not text or text[0] not in "{[":
        return None
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        pass
    try:
        docs = [json.loads(x) for x in text.split("\n") if x.strip()]
    except json.JSONDecodeError:
        return None
    return docs if docs and all(isinstance(d, (dict, list)) for d in docs) else None


def labels(command, lines):
    """The labels of the lines that have one; a histogram's rows (how many there are depends
    on the values) count as one."""
    sep = csv_separator(command)
    out = []
    for line in lines:
        if line.strip() in ("...", "\u2026"):
            continue
        # the bpf cgroup backend's stretches set aside after a switch the kernel did not report
        # (rows and note): there when the kernel missed one during the run
        if "(no cgroup)" in line:
            continue
        if sep and sep in line and not line.startswith(" ") and not line.startswith("pmcprof:"):
            out.append(csv_label(line, sep))
        else:
            lab = text_label(line)
            if lab and not (out and lab == out[-1] and "|bar|" in lab):
                out.append(lab)
    return out


def is_subsequence(small, big):
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def exit_status_shown(cmd):
    """`...; echo $?` and `echo $?`: the exit status shown (the last line), else None."""
    if re.search(r"(^|;\s*)echo \$\?$", cmd.text.strip()) and cmd.shown:
        last = cmd.shown[-1].strip()
        if last.isdigit():
            return int(last)
    return None


def compare(cmd, actual_lines, unordered=False):
    """None when the actual output has the shape shown, else a description of the difference."""
    shown = [s for s in cmd.shown]
    status = exit_status_shown(cmd)
    if status is not None:
        actual_status = actual_lines[-1].strip() if actual_lines else ""
        if actual_status != str(status):
            return f"exit status {actual_status or '(none)'} where the example shows {status}"
        shown, actual_lines = shown[:-1], actual_lines[:-1]
    shown_json = parse_json_output(shown) if not cmd.trimmed else None
    actual_json = parse_json_output(actual_lines)
    if shown_json is not None:
        if actual_json is None:
            return "the example shows JSON, the command printed something else:\n" + \
                "\n".join(actual_lines[:20])
        # a `reason` or `why_not` is there only where a value could not be computed (a metric
        # in an interval that no call ended in, under load): data, not shape
        def shape(paths):
            return {p for p in paths if not re.search(r"\.(reason|why_not)$", p)}
        want = shape(set().union(*(json_paths(d) for d in shown_json)))
        got = shape(set().union(*(json_paths(d) for d in actual_json)))
        if want != got:
            return ("JSON keys differ:\n  only in the example: " + ", ".join(sorted(want - got)) +
                    "\n  only in the output:  " + ", ".join(sorted(got - want)))
        return None
    if actual_json is not None and cmd.trimmed and any(s.lstrip().startswith('"') for s in shown):
        got = set().union(*(json_paths(d) for d in actual_json))
        got_keys = {p.rsplit(".", 1)[-1].replace("[]", "") for p in got}
        want = re.findall(r'"([^"]+)"\s*:', "\n".join(shown))
        missing = [k for k in want if k not in got_keys]
        return ("JSON keys in the example, not in the output: " + ", ".join(missing)) if missing else None
    want, got = labels(cmd.text, shown), labels(cmd.text, actual_lines)
    if unordered:
        ok = set(want) <= set(got) if cmd.trimmed else set(want) == set(got)
    elif cmd.trimmed:
        ok = is_subsequence(want, got)
    else:
        ok = want == got
    if ok:
        return None
    diff = difflib.unified_diff(want, got, "shown", "printed", lineterm="", n=1)
    return "labels differ (- shown, + printed):\n" + "\n".join(list(diff)[2:60])


# ====================================================================== requirements

class Machine:
    """What this machine can do, from `pmcprof doctor -j` and a few files."""

    def __init__(self, pmcprof):
        self.caps = {}
        try:
            p = subprocess.run([pmcprof, "doctor", "-j"], capture_output=True, text=True, timeout=60)
            for c in json.loads(p.stdout).get("capabilities", []):
                self.caps[c["name"]] = bool(c.get("available"))
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass

    def unmet(self, needs):
        for need in needs:
            kfunc = self.caps.get("kprobes") or self.caps.get("fentry")
            if need == "kprobes" and not kfunc:
                return "needs kprobes or fentry (pmcprof doctor: neither here)"
            if need == "no-kprobes" and kfunc:
                return "shows the refusal on a kernel without kprobes and fentry; this one has them"
            if need == "pmu" and not self.caps.get("hardware_pmu"):
                return "needs a hardware PMU (pmcprof doctor: none here)"
            if need == "no-pmu" and self.caps.get("hardware_pmu"):
                return "shows <not supported> hardware events; this machine has a PMU"
            if need == "cgroup2" and not self.caps.get("cgroup_v2"):
                return "needs cgroup v2"
            if need == "postgres":
                for tool in ("postgres", "initdb", "pg_ctl", "psql", "pgbench"):
                    if not os.access(f"{PG_BIN}/{tool}", os.X_OK):
                        return f"needs PostgreSQL 15 ({PG_BIN}/{tool}: postgresql-15)"
                if not shutil.which("runuser"):
                    return "needs runuser (util-linux) to start PostgreSQL as postgres"
            if need == "prometheus-server":
                return ("needs a Prometheus server scraping pmcprof for 75 s (not run here; "
                        "tests/runtime/test_serve_prometheus.py does)")
            if need == "root" and os.geteuid() != 0:
                return "needs root"
            if need.startswith("port:") and not port_free(int(need[5:])):
                return f"shows pmcprof serve on its default port, {need[5:]}, which is in use here"
        return None


def port_free(port):
    import socket
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as pmcprof serve binds
        try:
            sock.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def disposition(ex, machine, where="host"):
    """(run?, reason): whether this machine runs the example, and why not."""
    m = ex.markers
    if "skip" in m:
        return False, f"skip: {m['skip']}"
    if m.get("guest"):
        if where == f"guest-{m['guest']}":
            return True, ""
        return False, (f"captured in the {m['guest']} guest (real PMU, kprobes): run by "
                       "tests/guest/test_guest_arm64_doc_examples.py")
    if where != "host":
        return False, "a host example"
    needs = [n for n in str(m.get("needs", "")).split(",") if n]
    if machine is not None:
        why = machine.unmet(needs)
        if why:
            return False, why
    return True, ""


# ====================================================================== running

IN_CGROUP = """#!/bin/sh
# in-cgroup CGROUP CMD...: runs CMD in the cgroup v2 CGROUP (a path under the v2 mount)
echo $$ > {mount}/$1/cgroup.procs && shift && exec "$@"
"""


def cgroup2_mount():
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                sep = fields.index("-")
                if fields[sep + 1] == "cgroup2":
                    return fields[4]
    except (OSError, ValueError):
        pass
    return None


class Scratch:
    """Where the examples run (each block sets its directory up afresh: block_script), and the
    cgroups they name."""

    def __init__(self, pmcprof, workloads, base=None, source=ROOT):
        self.source = os.path.abspath(source)
        self.top = tempfile.mkdtemp(prefix="pmcprof-doc-", dir=base)
        self.dir = os.path.join(self.top, "run")
        self.bin = os.path.join(self.dir, ".bin")
        self.pmcprof = os.path.abspath(pmcprof)
        self.workloads = os.path.abspath(workloads) if workloads else "/nonexistent"
        self.mount = cgroup2_mount()
        self.made_cgroups = []

    def make_cgroups(self, examples):
        """The cgroups the docs say were made for the examples (CGROUPS), when an example names
        one; an example that makes or removes others does it itself."""
        if not self.mount:
            return
        text = " ".join(c.text for ex in examples for c in ex.commands)
        if not any(re.search(rf"(?<![\w/]){top}\b", text) for top in CGROUP_TOPS):
            return
        for name in CGROUPS:
            p = os.path.join(self.mount, name)
            if not os.path.isdir(p):
                try:
                    os.mkdir(p)
                    self.made_cgroups.append(p)
                except OSError:
                    pass

    def cleanup(self):
        for p in sorted(set(self.made_cgroups + self._under_made()), key=len, reverse=True):
            for _ in range(50):
                try:
                    os.rmdir(p)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
        shutil.rmtree(self.top, ignore_errors=True)

    def _under_made(self):
        """Groups an example made itself (mkdir in a command) below the ones made here."""
        out = []
        for top in self.made_cgroups:
            for dirpath, dirnames, _ in os.walk(top):
                out.extend(os.path.join(dirpath, d) for d in dirnames)
        return out


MARK = "@@doc-example@@"

# setup=postgres: a PostgreSQL 15 server of the postgres user in the block's directory (data/,
# its socket there, no TCP) with pgbench's tables (scale 1) and a superuser role for root, as
# docs/regions.md's example starts from; stopped when the block ends.
PG_BIN = "/usr/lib/postgresql/15/bin"
POSTGRES_SETUP = [
    "chmod 755 .. .; chown postgres: .",
    f"runuser -u postgres -- {PG_BIN}/initdb -N -D data -A trust >pg-setup.log 2>&1",
    f"runuser -u postgres -- {PG_BIN}/pg_ctl -D data -l pg.log -w "
    "-o \"-k $PWD -c listen_addresses=''\" start >>pg-setup.log 2>&1",
    "trap 'kill $__bg 2>/dev/null; wait; runuser -u postgres -- "
    f"{PG_BIN}/pg_ctl -D data -m immediate stop >/dev/null 2>&1' EXIT",
    f"runuser -u postgres -- {PG_BIN}/pgbench -i -q -I dtgp -h $PWD postgres >>pg-setup.log 2>&1",
    f"runuser -u postgres -- {PG_BIN}/psql -q -h $PWD -c 'CREATE ROLE root SUPERUSER LOGIN' "
    "postgres >>pg-setup.log 2>&1",
]


def block_script(ex, scratch_dir, bin_dir, workloads, pmcprof, cgroup_mount, debian_path=True,
                 source=ROOT, deferred=(), keep=None):
    """A POSIX shell script (bash on the host, busybox sh in the arm64 guest) that sets up
    SCRATCH_DIR and runs the example's commands there, each after a marker line; background
    commands' output is printed at the end, after markers of their own. Commands whose first
    word is in DEFERRED (jq, which the guest lacks) are not run: KEEP, a directory, gets the
    files they may read (the block's *.json, *.ndjson, *.txt) for the caller to run them."""
    q = shlex.quote
    path = (f"{q(bin_dir)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
            if debian_path else f"{q(bin_dir)}:$PATH")
    lines = ["exec 2>&1", f"rm -rf {q(scratch_dir)}", f"mkdir -p {q(bin_dir)}",
             f"ln -s {q(pmcprof)} {q(bin_dir)}/pmcprof", f"cd {q(scratch_dir)}",
             f"for f in {q(workloads)}/*; do [ -f \"$f\" ] && [ -x \"$f\" ] && ln -s \"$f\" .; done",
             "cat > in-cgroup <<'@@EOF@@'", IN_CGROUP.format(mount=cgroup_mount or "/sys/fs/cgroup")
             .rstrip("\n"), "@@EOF@@", "chmod +x in-cgroup",
             # Debian's own PATH: no interpreter of the user's (pyenv) in front of /usr/bin
             f"export PATH={path}",
             # files of the source tree an example names (docs/perf-json.jq)
             f"ln -s {q(os.path.join(source, 'docs'))} docs",
             *ex.preamble,
             "__bg=''", "trap 'kill $__bg 2>/dev/null; wait' EXIT", "__rc=0"]
    if ex.markers.get("setup") == "postgres":
        lines += POSTGRES_SETUP
    for n, cmd in enumerate(ex.commands):
        m = re.match(r"cat\s+(\S+)$", cmd.text.strip())
        if m and cmd.shown and m.group(1) != "in-cgroup":
            # `$ cat FILE`: the example shows the file; it is written first
            lines += [f"[ -e {q(m.group(1))} ] || cat > {q(m.group(1))} <<'@@EOF@@'",
                      *cmd.shown, "@@EOF@@"]
        # the marker, then $? as the previous command left it (for a shown `echo $?`)
        lines.append(f"printf '\\n{MARK} {n}\\n'; (exit $__rc)")
        if cmd.text.split()[0] in deferred:
            lines.append("__rc=0")
            continue
        interrupt = ex.markers.get("interrupt")
        if interrupt and re.match(r"pmcprof\s", cmd.text):
            # `# SIGINT after S s`: the command is stopped as its example was, by hand
            # (job control on: a background job of a script would ignore SIGINT)
            text = re.sub(r"\s{2,}#\s.*$", "", cmd.text)   # the example's own comment
            lines.append(f"set -m; {text} &")
            lines.append(f"__p=$!; set +m; sleep {float(interrupt)}; kill -INT $__p; wait $__p")
        elif cmd.background:
            out = f".doc-bg-{n}"
            lines.append(f"{cmd.text} >{out} 2>&1 &")
            lines.append("__bg=\"$__bg $!\"")
            if cmd.shown or (re.match(r"pmcprof\s", cmd.text) and not ex.markers.get("settle")):
                # wait for what it prints first (pmcprof serve: its address), 5 s at most
                lines.append(f"for i in $(seq 50); do [ -s {out} ] && break; sleep 0.1; done")
            if ex.markers.get("settle"):   # a silent one: time to attach its probes
                lines.append(f"sleep {float(ex.markers['settle'])}")
        else:
            lines.append(cmd.text)
        lines.append("__rc=$?")
    for n, cmd in enumerate(ex.commands):
        if cmd.background:
            lines.append(f"printf '\\n{MARK} bg{n}\\n'; cat .doc-bg-{n} 2>/dev/null")
    if keep:
        # (double quotes: KEEP may name a variable, $PMCPROF_GUEST_OUT)
        lines.append(f"mkdir -p \"{keep}\"; for f in *.json *.ndjson *.txt; do "
                     f"[ -f \"$f\" ] && cp \"$f\" \"{keep}/\"; done")
    lines.append(f"printf '\\n{MARK} end\\n'")
    return "\n".join(lines) + "\n"


def run_block(ex, scratch):
    """Runs the block's commands; returns [(command, actual output lines)], the whole log."""
    script = block_script(ex, scratch.dir, scratch.bin, scratch.workloads, scratch.pmcprof,
                          scratch.mount, source=scratch.source)
    timeout = float(ex.markers.get("timeout", 60))
    argv = ["bash", "-c", script]
    user = ex.markers.get("user")
    if user:
        # as that user (perf_event_paranoid applies), with no capability left
        import pwd
        pw = pwd.getpwnam(user)
        os.chown(scratch.top, pw.pw_uid, pw.pw_gid)
        argv = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", *argv]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, text=True,
                            errors="replace")
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out += f"\n(timed out after {timeout:.0f} s)"
    return split_output(ex, out), out


def split_output(ex, out):
    parts = {}
    current = None
    for line in out.split("\n"):
        m = re.match(rf"{MARK} (\w+)$", line)
        if m:
            current = m.group(1)
            parts[current] = []
            continue
        if current is not None:
            parts[current].append(line)
    results = []
    for n, cmd in enumerate(ex.commands):
        lines = parts.get(str(n), ["(not reached)"])
        if cmd.background:
            lines = parts.get(f"bg{n}", []) + lines
        while lines and not lines[-1].strip():
            lines.pop()
        results.append((cmd, lines))
    return results


SETUP = re.compile(r"^(cat \S+|mkdir -p \S.*)$")


def command_keys(ex):
    """What each command's output depends on: itself, the variables set before it, and the
    commands before it in its block, but for showing a file and making directories that exist
    anyway (the same example in the README, a guide and the man page runs once)."""
    keys, before = [], []
    for c in ex.commands:
        keys.append((tuple(ex.preamble), tuple(before), c.text, c.background,
                     ex.markers.get("user")))
        if not SETUP.match(c.text.strip()):
            before.append(c.text)
    return keys


def check_example(ex, scratch, verbose=False, cache=None):
    """None when every command's output has the shown shape, else the failures as text. CACHE
    (a dict) keeps what each command printed: a block whose every command ran already, the same
    way, is not run again."""
    keys = command_keys(ex)
    if cache is not None and all(k in cache for k in keys):
        results, log = [(c, cache[k]) for c, k in zip(ex.commands, keys)], "(as printed before)"
    else:
        results, log = run_block(ex, scratch)
        if cache is not None:
            cache.update((k, actual) for k, (_, actual) in zip(keys, results))
    failures = []
    for cmd, actual in results:
        why = compare(cmd, actual, unordered=bool(ex.markers.get("unordered")))
        if why:
            failures.append(f"  $ {cmd.text}\n" + "\n".join("    " + x for x in why.split("\n")))
    if failures and verbose:
        failures.append("  output:\n" + "\n".join("    | " + x for x in log.split("\n")[-80:]))
    return "\n".join(failures) if failures else None


def roff(line):
    line = line.replace("\\", "\\e").replace("-", "\\-")
    line = "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in line)
    return "\\&" + line if line.startswith((".", "'")) else line


def refresh_trimmed(cmd, actual):
    """A trimmed example's lines replaced by the printed lines they stand for: each shown line
    by the next printed line with the same label (a blank by the next blank), `...` kept. None
    when a shown line has no counterpart (the shape changed: trim it again by hand)."""
    sep = csv_separator(cmd.text)

    def label(line):
        return labels(cmd.text, [line])[0] if labels(cmd.text, [line]) else None

    out, j = [], 0
    for line in cmd.shown:
        if line.strip() in ("...", "\u2026"):
            out.append(line)
            continue
        want = label(line)
        while j < len(actual) and not (
                label(actual[j]) == want and (want is not None or
                                              bool(actual[j].strip()) == bool(line.strip()))):
            j += 1
        if j == len(actual):
            return None
        out.append(actual[j])
        j += 1
    del sep
    return out


def update(root, ex, results):
    """Pastes what the commands printed into the example's block, in place of what it shows
    (the commands' own lines kept as written); a block trimmed with `...` keeps its trim, each
    shown line replaced by the printed line it stands for (refresh_trimmed)."""
    path = os.path.join(root, ex.path)
    with open(path) as f:
        lines = f.read().split("\n")
    a, b = ex.body
    body = lines[a:b]
    man = not ex.path.endswith(".md")
    new = []
    for k, (cmd, actual) in enumerate(results):
        if cmd.trimmed:
            actual = refresh_trimmed(cmd, actual)
            if actual is None:
                print(f"{ex.name}: $ {cmd.text[:60]}: the trimmed output's lines are not all "
                      "printed any more: trim it again by hand")
                return
        if k and new and new[-1] != "" and len(results[k - 1][1]) > 3 and \
                not SETUP.match(results[k - 1][0].text.strip()):
            new.append("")
        new.extend(body[cmd.span[0]:cmd.span[1]])
        new.extend(roff(x) if man else x for x in actual)
    lines[a:b] = new
    with open(path, "w") as f:
        f.write("\n".join(lines))


def select(examples, only):
    if not only:
        return examples
    return [e for e in examples if only in e.name or any(only in c.text for c in e.commands)]


# ====================================================================== self-test

def selftest():
    """The shape rules on fixed texts: what passes, and that a drifted label fails."""
    shown = """
 Function counter stats for './func_workload sleep 20 2000 5000' (kernel aggregation):

 ./func_workload:burn_and_sleep  [uprobe]
   20 calls, 0 not counted, 0 lost, 20 slept, 0 migrated
                                  total       mean/call           p50           p90           p99           min           max
   task-clock                  40.50 ms         2.02 ms       2.02 ms       2.02 ms       2.05 ms       2.02 ms       2.05 ms
   wall time                  157.43 ms         7.87 ms       7.18 ms       9.93 ms      11.11 ms       7.08 ms      11.16 ms

       0.159425647 seconds time elapsed""".split("\n")
    same_shape = [x.replace("40.50 ms", "1.23 s").replace("20 calls", "1 call").replace("7.87", "9")
                  for x in shown]
    cmd = Command("pmcprof stat -e task-clock --func ./func_workload:burn_and_sleep", 1)
    cmd.shown = shown
    problems = []
    if compare(cmd, same_shape):
        problems.append("the same shape with other numbers failed: " + compare(cmd, same_shape))
    drifted = [x.replace("mean/call", "avg/call") for x in shown]
    if not compare(cmd, drifted):
        problems.append("a renamed column label passed")
    extra_row = shown[:-2] + ["   on-CPU time                 40.50 ms         2.02 ms"] + shown[-2:]
    if not compare(cmd, extra_row):
        problems.append("an extra row passed")
    counting = Command("pmcprof stat -a -- sleep 1", 1)
    counting.shown = ["          2,025.28 msec cpu-clock                        #    2.000 CPUs utilized",
                      "             6,209      context-switches                 #    3.066 K/sec",
                      "   <not supported>      cycles"]
    other = ["          25.28 msec cpu-clock                        #    0.010 CPUs utilized",
             "                62      context-switches                 #   62.066 /sec",
             "         1,234,567      cycles                           #    1.2 GHz"]
    if compare(counting, other):
        problems.append("counting rows with other values/units failed: " + compare(counting, other))
    cg = Command("pmcprof stat -a -e task-clock -G web --cgroup-backend bpf", 1)
    cg.shown = ["            300.91 msec task-clock                       /web                     #    0.242 CPUs utilized"]
    uncharged = cg.shown + [
        "              4.48 msec task-clock                       (no cgroup)",
        "# (no cgroup): charged to none: 3 stretch(es) after a context switch the kernel did not report"]
    if compare(cg, uncharged):
        problems.append("the bpf backend's uncharged rows failed: " + compare(cg, uncharged))
    inflight = Command("pmcprof stat -p 1 -e task-clock --func :f --timeout 1000", 1)
    inflight.shown = [" :f  [uprobe]", "   59 calls, 2 not counted, 0 lost, 59 slept, 0 migrated"]
    ended_mid_call = [inflight.shown[0], "   160 calls, 0 not counted, 0 lost, 61 slept, 2 migrated, "
                      "0 too deep, 0 unmatched returns, 1 never returned (not measured)"]
    if compare(inflight, ended_mid_call):
        problems.append("a call in flight at the end failed: " + compare(inflight, ended_mid_call))
    if not compare(inflight, [inflight.shown[0], "   160 calls, 0 not counted, 0 lost, 61 slept"]):
        problems.append("a missing field passed")
    csv = Command("pmcprof stat -x, -e task-clock -- true", 1)
    csv.shown = ["0.89,msec,task-clock,891356,100.00,0.002,CPUs utilized"]
    if compare(csv, ["1.5,msec,task-clock,1,100.00,0.5,CPUs utilized"]):
        problems.append("CSV with other numbers failed")
    if not compare(csv, ["1.5,msec,task-clock,1,100.00,0.5,CPUs utilized,extra"]):
        problems.append("CSV with one more field passed")
    js = Command("pmcprof stat -j -o - -- true", 1)
    js.shown = ['{"schema": "pmcprof/1", "counters": [{"event": "x", "value": 1}]}']
    if compare(js, ['{"schema": "pmcprof/1", "counters": [{"event": "y", "value": null}]}']):
        problems.append("JSON with other values failed")
    if not compare(js, ['{"schema": "pmcprof/1", "counters": [{"event": "y", "val": 2}]}']):
        problems.append("JSON with a renamed key passed")
    trimmed = Command("pmcprof stat ...", 1)
    trimmed.shown = [shown[3], "...", shown[-1]]
    if compare(trimmed, shown):
        problems.append("a trimmed example failed against the whole output")
    hist = Command("pmcprof stat --hist --func f -- w", 1)
    hist.shown = ["        nsecs               : count     distribution",
                  "         8192 -> 16383      : 99       |*************************************** |",
                  "        16384 -> 32767      : 1        |                                        |"]
    if compare(hist, hist.shown[:2] + ["        32768 -> 65535      : 3        |**  |"] * 3):
        problems.append("a histogram with other rows and bars failed")
    if not compare(hist, ["        usecs               : count     distribution"] + hist.shown[1:]):
        problems.append("a histogram with another unit passed")
    refreshed = refresh_trimmed(trimmed, same_shape)
    if refreshed != [same_shape[3], "...", same_shape[-1]]:
        problems.append(f"refresh_trimmed: {refreshed}")
    status = Command("pmcprof stat -e '{cycles}' -- true; echo $?", 1)
    status.shown = ["pmcprof: cannot count", "255"]
    if not compare(status, ["pmcprof: cannot count", "1"]):
        problems.append("a different exit status passed")
    man = extract_man_text('.\\" doc-test: unordered\n.RS\n.EX\n$ pmcprof stat \\-a \\-\\- true |\n'
                           '    jq .x\n1\n.EE\n')
    if len(man) != 1 or man[0].commands[0].text != "pmcprof stat -a -- true | jq .x" or \
            not man[0].markers.get("unordered"):
        problems.append(f"man extraction: {man}")
    for p in problems:
        print("FAIL:", p)
    print("selftest:", "ok" if not problems else f"{len(problems)} failure(s)")
    return 1 if problems else 0


def extract_man_text(text):
    with tempfile.NamedTemporaryFile("w", suffix=".1", delete=False) as f:
        f.write(text)
    try:
        return extract_man(f.name, "x.1")
    finally:
        os.unlink(f.name)


# ====================================================================== main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=("list", "check", "show", "update", "selftest"))
    ap.add_argument("--pmcprof")
    ap.add_argument("--workloads")
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("--only", help="examples whose file:line or a command contains this")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.action == "selftest":
        return selftest()
    examples = select(extract_all(args.root), args.only)
    machine = Machine(args.pmcprof) if args.pmcprof else None
    if args.action == "list":
        for ex in examples:
            run, why = disposition(ex, machine)
            print(f"{ex.name:28} {'run ' if run else 'skip'} {ex.commands[0].text[:70]}"
                  + ("" if run else f"\n{'':33}{why}"))
        return 0
    if not args.pmcprof:
        ap.error("--pmcprof is needed")
    scratch = Scratch(args.pmcprof, args.workloads, source=args.root)
    todo = [e for e in examples if disposition(e, machine)[0]]
    scratch.make_cgroups(todo)
    failed = 0
    updates = []
    cache = {}
    try:
        for ex in examples:
            run, why = disposition(ex, machine)
            if not run:
                print(f"SKIP {ex.name}: {why}")
                continue
            t0 = time.monotonic()
            if args.action in ("show", "update"):
                results, _ = run_block(ex, scratch)
                print(f"== {ex.name}")
                for cmd, actual in results:
                    print(f"$ {cmd.text}")
                    print("\n".join(actual))
                if args.action == "update":
                    updates.append((ex, results))
                continue
            problem = check_example(ex, scratch, args.verbose, cache)
            took = time.monotonic() - t0
            if problem:
                failed += 1
                print(f"FAIL {ex.name} ({took:.1f} s)\n{problem}")
            else:
                print(f"ok   {ex.name} ({took:.1f} s) {ex.commands[0].text[:60]}")
    finally:
        scratch.cleanup()
    # bottom up, so that each block's line numbers still hold
    for ex, results in sorted(updates, key=lambda u: (u[0].path, u[0].line), reverse=True):
        update(args.root, ex, results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

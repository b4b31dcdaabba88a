#!/usr/bin/env python3
"""perf's own shipped `perf stat` tests pass with pmcprof in perf's place.

Debian's linux-perf ships perf's shell tests (/usr/lib/perf-core/tests/shell/stat*.sh, helpers
in lib/). Each script is cut into its checks: one variant of the script per check function
(test_*/check_* called at the top level; setup calls such as check_for_topology stay in every
variant), or the whole script when it has no check functions. Every check runs twice with a
`perf` shim first on PATH:
- reference run: the shim hands `perf stat ARGS` to the real perf;
- pmcprof run: the shim runs `pmcprof stat ARGS` instead, unchanged.
Every other perf subcommand goes to the real perf (`perf test -w`, `perf bench`, `perf list
--raw-dump pmu`: the machine's PMU events), except the metric lists: perf's
`list --raw-dump metrics|metricgroups` are perf's own tables compiled for this CPU model (225
Intel TMA metrics here; perf "passes" them by falling back to its default events when a
metric's events do not exist). In the pmcprof run those two lists come from pmcprof's own
metric table (`pmcprof list --metrics --names`, `--metricgroups --names`), so the all-metrics
checks ask pmcprof to count every metric it offers.

A check's verdict is its script's: exit 0 passes, exit 2 or a "[Skip" line skips, anything else
fails. A check pmcprof passes must pass for real: the shim records the exit status of every
`stat` it ran, and a pmcprof run that exited non-zero fails the check unless the reference run
of the identical command line exited non-zero too (e.g. perf's topdown checks first probe
whether `{slots,topdown-retiring}` parses, and skip when it does not: in both tools).

Required: every check the reference run passes (not skipped) passes with pmcprof, except
- the JSON-format checks (stat+json_output.sh): pmcprof's -j/--json-output prints its own
  documented schema (pmcprof/1, one object per report, see docs/json.md, which maps perf's
  fields to pmcprof's), not perf's one-object-per-counter lines; perf's linter rejects any key
  it does not know, so no pmcprof JSON can pass it without giving up pmcprof/1. They are run
  twice: as they are (reported, not required), and with the shim piping pmcprof's -j through
  the documented mapping docs/perf-json.jq (when jq is installed): that run is required, so the
  mapping docs/json.md describes is complete for every mode perf checks;
- test_stat_record_report: `perf stat record`/`perf stat report` (perf.data files) are not
  implemented by pmcprof, which says so in one line (and in the man page).
Excepted checks are still run and reported. The counts of checks perf passes and of those
pmcprof passes are printed (the issue's before/after figures).

Usage: test_perf_stat_tests.py --pmcprof PATH --workloads DIR [-v]   (exit 77 = skipped)
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import pmcprof_testlib as t

SHELL_DIR = "/usr/lib/perf-core/tests/shell"
JSON_MAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                        "perf-json.jq")
# Top-level calls that prepare rather than check.
SETUP_CALLS = {"check_for_topology", "check_bpf_counter", "find_cgroups"}
JSON_EXCEPTION = ("pmcprof's -j prints its documented pmcprof/1 schema, not perf's per-counter "
                  "JSON lines (docs/json.md maps one to the other)")
EXCEPTED = {
    "stat.sh:test_stat_record_report": "perf stat record/report (perf.data) is not implemented",
}
CHECK_TIMEOUT = 120

SHIM = r"""#!/bin/bash
# perf shim of test_perf_stat_tests.py: `perf stat ARGS` runs $PERF_SHIM_TARGET's stat.
args=("$@")
while [ "${args[0]}" = "--no-pager" ]; do args=("${args[@]:1}"); done
if [ "${args[0]}" = stat ]; then
  json=""
  for a in "${args[@]}"; do [ "$a" = -j ] || [ "$a" = --json-output ] && json=1; done
  if [ "$PERF_SHIM_TARGET" = pmcprof ] && [ -n "$json" ] && [ -n "$PERF_SHIM_JSON_MAP" ]; then
    # pmcprof's report (on stderr, like perf's) mapped to perf's JSON lines.
    report=$(mktemp)
    "$PERF_SHIM_PMCPROF" "${args[@]}" 2>"$report"
    rc=$?
    jq -c -f "$PERF_SHIM_JSON_MAP" "$report" >&2 2>/dev/null || cat "$report" >&2
    rm -f "$report"
    ( exit $rc )
  elif [ "$PERF_SHIM_TARGET" = pmcprof ]; then
    "$PERF_SHIM_PMCPROF" "${args[@]}"
  else
    "$PERF_SHIM_PERF" "${args[@]}"
  fi
  rc=$?
  { printf '%s stat' "$rc"; printf ' %q' "${args[@]:1}"; printf '\n'; } >> "$PERF_SHIM_LOG"
  exit $rc
fi
if [ "$PERF_SHIM_TARGET" = pmcprof ] && [ "${args[0]}" = list ] && [ "${args[1]}" = --raw-dump ]; then
  case "${args[2]}" in
    metrics) list=(list --metrics --names) ;;
    metricgroups) list=(list --metricgroups --names) ;;
  esac
  if [ -n "${list[*]}" ]; then
    out=$("$PERF_SHIM_PMCPROF" "${list[@]}")
    rc=$?
    [ $rc = 0 ] && [ -z "$out" ] && rc=empty
    { printf '%s list' "$rc"; printf ' %q' "${list[@]:1}"; printf '\n'; } >> "$PERF_SHIM_LOG"
    printf '%s\n' "$out"
    exit 0
  fi
fi
exec "$PERF_SHIM_PERF" "${args[@]}"
"""

FUNC_START = re.compile(r"^(?:function\s+)?([A-Za-z_]\w*)\s*\(\)\s*\{?\s*$")


def parse_script(text):
    """(function names, top-level check calls in order) of a perf test script."""
    funcs, calls, in_body = set(), [], False
    for line in text.splitlines():
        m = FUNC_START.match(line)
        if m:
            funcs.add(m.group(1))
            in_body = True
            continue
        if in_body:
            in_body = not line.startswith("}")
            continue
        word = line.strip()
        if word in funcs and word not in SETUP_CALLS and re.match(r"(test|check)_", word):
            calls.append(word)
    return funcs, calls


def variant(text, keep):
    """The script with every top-level check call but `keep` replaced by ':'."""
    funcs, _ = parse_script(text)
    out, in_body = [], False
    for line in text.splitlines():
        if FUNC_START.match(line):
            in_body = True
        elif in_body:
            in_body = not line.startswith("}")
        else:
            word = line.strip()
            if (word in funcs and word not in SETUP_CALLS and re.match(r"(test|check)_", word)
                    and word != keep):
                line = line.replace(word, ":")
        out.append(line)
    return "\n".join(out) + "\n"


def discover():
    """[(check id, script file name, script text)] for every stat*.sh."""
    checks = []
    for name in sorted(os.listdir(SHELL_DIR)):
        if not (name.startswith("stat") and name.endswith(".sh")):
            continue
        with open(os.path.join(SHELL_DIR, name)) as f:
            text = f.read()
        _, calls = parse_script(text)
        if not calls:
            checks.append((name, name, text))
        for c in calls:
            checks.append((f"{name}:{c}", name, variant(text, c)))
    return checks


class Result:
    def __init__(self, rc, output, stats):
        # stats: [(status, "stat ARGS" or "list ARGS")], status "0", "129", ... or "empty"
        self.rc, self.output, self.stats = rc, output, stats

    @property
    def verdict(self):
        if self.rc == 2 or "[Skip" in self.output:
            return "skip"
        return "pass" if self.rc == 0 else "fail"


class Runner:
    """Runs script variants with the shim; each target in its own directory, so that the
    reference run and pmcprof's can run side by side (the checks look at their own output
    only)."""

    def __init__(self, workdir, perf):
        self.dir = workdir
        for target in ("perf", "pmcprof"):
            os.mkdir(os.path.join(workdir, target))
            os.symlink(os.path.join(SHELL_DIR, "lib"), os.path.join(workdir, target, "lib"))
        bindir = os.path.join(workdir, "bin")
        os.mkdir(bindir)
        with open(os.path.join(bindir, "perf"), "w") as f:
            f.write(SHIM)
        os.chmod(os.path.join(bindir, "perf"), 0o755)
        self.env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}",
                        PERF_SHIM_PERF=perf, PERF_SHIM_PMCPROF=t.pmcprof())
        self.env.pop("PERF_EXEC_PATH", None)

    def run(self, check_id, script_name, text, target, json_map=None):
        cwd = os.path.join(self.dir, target)
        path = os.path.join(cwd, script_name)
        with open(path, "w") as f:
            f.write(text)
        log = os.path.join(cwd, "shim.log")
        open(log, "w").close()
        env = dict(self.env, PERF_SHIM_TARGET=target, PERF_SHIM_LOG=log,
                   PERF_SHIM_JSON_MAP=json_map or "")
        try:
            p = subprocess.run(["bash", path], cwd=cwd, env=env, capture_output=True,
                               text=True, errors="replace", timeout=CHECK_TIMEOUT)
            rc, output = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as e:
            rc, output = -1, f"timed out after {CHECK_TIMEOUT} s: {e.stdout or ''}"
        stats = []
        with open(log) as f:
            for line in f:
                status, _, args = line.rstrip("\n").partition(" ")
                stats.append((status, args))
        return Result(rc, output, stats)


def pmcprof_verdict(ref, mine):
    """pmcprof's verdict, failing a pass whose stat calls exited non-zero where perf's did not."""
    if mine.verdict != "pass":
        return mine.verdict, ""
    perf_failed = {args for rc, args in ref.stats if rc != "0"}
    bad = [(rc, args) for rc, args in mine.stats if rc != "0" and args not in perf_failed]
    if bad:
        rc, args = bad[0]
        if rc == "empty":
            return "fail", f"`pmcprof {args}` listed nothing: the check ran on no input"
        return "fail", f"`pmcprof {args}` exited {rc} (perf's same call did not fail)"
    return "pass", ""


class PerfStatTests(unittest.TestCase):
    def test_perf_stat_checks(self):
        perf = t.perf_binary()
        if not os.path.isdir(SHELL_DIR):
            raise t.Skip(f"{SHELL_DIR} is missing (apt-get install linux-perf)")
        os.makedirs("/sys/kernel/tracing", exist_ok=True)
        if not os.path.exists("/sys/kernel/tracing/events"):
            subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"])
        checks = discover()
        self.assertGreater(len(checks), 20, "perf's stat test scripts were not found")
        required_failures, counts = [], {"perf": 0, "pmcprof": 0, "required": 0, "mapped": 0}
        has_jq = shutil.which("jq") is not None
        if not has_jq:
            t.log("jq is not installed: the JSON checks are not run through docs/perf-json.jq")
        with tempfile.TemporaryDirectory(prefix="pmcprof-perf-tests-") as d:
            runner = Runner(d, os.path.realpath(perf))
            for check_id, script, text in checks:
                t0 = time.monotonic()
                with concurrent.futures.ThreadPoolExecutor(2) as pool:
                    ref_f = pool.submit(runner.run, check_id, script, text, "perf")
                    mine_f = pool.submit(runner.run, check_id, script, text, "pmcprof")
                    ref, mine = ref_f.result(), mine_f.result()
                verdict, why = pmcprof_verdict(ref, mine)
                exception = (JSON_EXCEPTION if script.startswith("stat+json_output")
                             else EXCEPTED.get(check_id))
                required = ref.verdict == "pass" and not exception
                counts["perf"] += ref.verdict == "pass"
                counts["pmcprof"] += ref.verdict == "pass" and verdict == "pass"
                counts["required"] += required
                t.log(f"{check_id:55} perf {ref.verdict:5} pmcprof {verdict:5} "
                      f"{'' if required else '(not required: ' + (exception or 'perf did not pass') + ')'}"
                      f" {time.monotonic() - t0:.1f} s")
                if required and verdict != "pass":
                    detail = why or mine.output.strip()[-1500:]
                    required_failures.append(f"{check_id}: {detail}")
                    t.log(f"    {detail}")
                if script.startswith("stat+json_output") and ref.verdict == "pass" and has_jq:
                    mapped, why = pmcprof_verdict(
                        ref, runner.run(check_id, script, text, "pmcprof", json_map=JSON_MAP))
                    counts["mapped"] += mapped == "pass"
                    t.log(f"{'  through docs/perf-json.jq':55} perf pass  pmcprof {mapped:5}")
                    if mapped != "pass":
                        required_failures.append(f"{check_id} (mapped): {why or 'failed'}")
        t.log(f"checks perf passes: {counts['perf']}; pmcprof passes {counts['pmcprof']} of them; "
              f"required (perf passes, not excepted): {counts['required']}; JSON checks passing "
              f"through docs/perf-json.jq: {counts['mapped']}; failing: {len(required_failures)}")
        self.assertEqual(required_failures, [], "checks perf passes that pmcprof fails")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "program:perf"), doc=__doc__))

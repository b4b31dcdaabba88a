#!/usr/bin/env python3
"""Every -j output of pmcprof validates against docs/schema/pmcprof-1.schema.json.

Real output of each mode (counting: -a --timeout, -- CMD, -A, -r 2, -I NDJSON, per cgroup with
-G, --per-core/-socket/-node, --per-thread, -M with computed and uncomputable metrics,
--metric-only, pmu/term/ and tracepoint events; list --metrics -j; function mode: --func syscall:getppid, with -I, --aggregate both, --by; regions, single probes and --by argN keys (with 'other', --top's folded entry and the totals), with -I too; list -j; doctor -j)
diff -j of two runs in each mode; and every pmcprof object in the examples of docs/json.md, validated with python3-jsonschema
(Debian 12: 4.10, draft 2020-12). Also checks that the schema rejects typical regressions
(a number written as a string, a missing field, an unknown or camelCase key, a bad status).
"""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcprof_testlib as t  # noqa: E402

try:
    import jsonschema
    JSONSCHEMA_ERROR = None
except ImportError as e:  # python3-jsonschema missing
    jsonschema = None
    JSONSCHEMA_ERROR = str(e)

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCHEMA_PATH = os.path.join(SOURCE_DIR, "docs", "schema", "pmcprof-1.schema.json")
DOCS_JSON_MD = os.path.join(SOURCE_DIR, "docs", "json.md")
SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")

_VALIDATOR = None


def validator():
    global _VALIDATOR
    if _VALIDATOR is None:
        with open(SCHEMA_PATH) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        _VALIDATOR = jsonschema.Draft202012Validator(schema)
    return _VALIDATOR


def schema_errors(doc):
    """The schema's complaints about DOC, one readable line each ([] when valid)."""
    out = []
    for e in sorted(validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        # if/then and $ref wrap the real cause: show the deepest ones.
        leaves = [e]
        while leaves and all(x.context for x in leaves):
            leaves = [c for x in leaves for c in x.context]
        for x in leaves or [e]:
            path = "/".join(str(p) for p in x.absolute_path) or "(top)"
            out.append(f"{path}: {x.message}")
    return out


def keys_not_snake(doc, where="", inside_events=False):
    """Keys that are not snake_case, except the event and metric names that key `events` and
    `metrics` objects."""
    bad = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if not inside_events and not SNAKE.match(k):
                bad.append(f"{where}/{k}")
            # Event names key a function's `events`, a probe bias's `events` (and its nested
            # cost's) and a function metric's `events` (its formula's inputs); metric names key
            # a function's `metrics`.
            keyed_by_event = isinstance(v, dict) and (
                (k == "events" and ("function" in doc or "calibrated" in doc or "formula" in doc
                                    or where.endswith("/nested")))
                or (k == "metrics" and "function" in doc))
            bad += keys_not_snake(v, f"{where}/{k}", inside_events=keyed_by_event)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            bad += keys_not_snake(v, f"{where}/{i}")
    return bad


class SchemaCase(unittest.TestCase):
    def assertValid(self, doc, what):
        errs = schema_errors(doc)
        self.assertFalse(errs, f"{what}: {len(errs)} schema error(s):\n  " + "\n  ".join(errs[:15]) +
                         f"\ndocument: {json.dumps(doc)[:1500]}")
        bad = keys_not_snake(doc)
        self.assertFalse(bad, f"{what}: keys not snake_case: {bad}")

    def run_json(self, args, command=(), timeout=60, ndjson=False, **kw):
        """`pmcprof ARGS` (stat gets -j -o FILE [-- COMMAND]); returns (proc, [documents]).
        NDJSON output must be one complete object a line."""
        with tempfile.TemporaryDirectory(prefix="pmcprof-schema-") as tmp:
            out = os.path.join(tmp, "out.json")
            argv = [*args]
            if argv[0] == "stat":
                argv += ["-j", "-o", out]
                if command:
                    argv += ["--", *command]
            proc = t.run_pmcprof(argv, timeout=timeout, **kw)
            if argv[0] == "stat":
                text = ""
                if os.path.exists(out):
                    with open(out) as f:
                        text = f.read()
            else:
                text = proc.stdout
        self.assertEqual(proc.returncode, 0, f"pmcprof {' '.join(argv)}: {proc.stderr}")
        if ndjson:
            docs = []
            for n, line in enumerate(text.splitlines(), 1):
                self.assertTrue(line.strip(), f"empty line {n} in NDJSON output")
                try:
                    docs.append(json.loads(line))
                except json.JSONDecodeError as e:
                    self.fail(f"NDJSON line {n} is not one JSON value ({e}): {line[:300]!r}")
        else:
            docs = t.parse_json_documents(text)
        self.assertTrue(docs, f"no JSON from pmcprof {' '.join(argv)}; stderr={proc.stderr!r}")
        for i, d in enumerate(docs):
            self.assertValid(d, f"pmcprof {' '.join(args)} [document {i}]")
        t.log(f"{' '.join(args)}: {len(docs)} document(s) valid "
              f"({', '.join(sorted({d.get('type', '?') for d in docs}))})")
        return proc, docs


def cgroup2_mount():
    """The cgroup v2 mount point from /proc/self/mountinfo, or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split(" ", 1)[0] == "cgroup2":
                return left.split()[4].replace("\\040", " ")
    return None


class CountingMode(SchemaCase):
    def test_system_wide_default_events(self):
        _, docs = self.run_json(["stat", "-a", "--timeout", "300"])
        self.assertEqual(len(docs), 1)
        r = docs[0]
        self.assertEqual((r["type"], r["mode"], r["target"]), ("report", "counting", "system wide"))
        self.assertIsNone(r["exit_status"])
        # The default set has clocks (unit ns) and counts; a VM gives not-supported ones too.
        self.assertIn("ns", {c["unit"] for c in r["counters"]})

    def test_command(self):
        _, docs = self.run_json(["stat", "-e", "task-clock,page-faults,cycles,instructions"],
                                command=["sleep", "0.1"])
        r = docs[0]
        self.assertEqual((r["type"], r["exit_status"], r["runs"]), ("report", 0, 1))

    def test_command_cpu_times(self):
        _, docs = self.run_json(["stat", "-e", "task-clock"], command=["true"])
        self.assertIn("user_ns", docs[0])
        self.assertIn("sys_ns", docs[0])

    def test_aggregations(self):
        for flag in ("--per-core", "--per-socket", "--per-die", "--per-node"):
            _, docs = self.run_json(["stat", "-a", flag, "--timeout", "100",
                                     "-e", "task-clock,cycles"])
            r = docs[0]
            self.assertEqual(r["aggregate_by"], flag[len("--per-"):])
            self.assertEqual(sum(c["aggregate"]["cpus"] for c in r["counters"]
                                 if c["event"] == "task-clock"), t.nproc_online())
        with subprocess.Popen(["sleep", "5"]) as sleeper:
            try:
                _, docs = self.run_json(["stat", "--per-thread", "-p", str(sleeper.pid),
                                         "--timeout", "100", "-e", "task-clock"])
            finally:
                sleeper.kill()
        self.assertEqual([c["aggregate"]["comm"] for c in docs[0]["counters"]], ["sleep"])

    def test_metrics(self):
        _, docs = self.run_json(["stat", "-M", "CPUs_utilized,IPC", "-a", "--timeout", "100"])
        by_name = {m["name"]: m for m in docs[0]["metrics"]}
        self.assertEqual(by_name["CPUs_utilized"]["status"], "ok")
        ipc = by_name["IPC"]
        if not t.has_hardware_pmu():
            self.assertEqual((ipc["status"], ipc["value"]), ("not-computed", None))
            self.assertIn("<not supported>", ipc["reason"])
        _, docs = self.run_json(["stat", "-M", "CPUs_utilized", "--metric-only", "-a",
                                 "--timeout", "100"])
        self.assertEqual(docs[0]["counters"], [])
        _, docs = self.run_json(["list", "--metrics", "-j"])
        self.assertIn("IPC", {m["name"] for m in docs[0]["metrics"]})

    def test_sysfs_and_tracepoint_events(self):
        args = ["stat", "-a", "--timeout", "100", "-e", "msr/tsc/,sched:sched_switch"]
        if not os.path.exists("/sys/bus/event_source/devices/msr"):
            args[-1] = "sched:sched_switch"
        _, docs = self.run_json(args)
        self.assertEqual({c["status"] for c in docs[0]["counters"]}, {"ok"})

    def test_per_cpu(self):
        _, docs = self.run_json(["stat", "-a", "-A", "--timeout", "200",
                                 "-e", "task-clock,context-switches"])
        cpus = {c.get("cpu") for c in docs[0]["counters"]}
        self.assertEqual(cpus, set(t.online_cpus()), "-A: one row per online CPU")

    def test_repeat(self):
        _, docs = self.run_json(["stat", "-r", "2", "-e", "task-clock,page-faults,cycles"],
                                command=["true"])
        r = docs[0]
        self.assertEqual(r["runs"], 2)
        self.assertIn("elapsed_stddev_pct", r)
        self.assertIn("stddev_pct", t.find_counter(r, "task-clock"))

    def test_intervals_ndjson(self):
        _, docs = self.run_json(["stat", "-I", "100", "--summary", "-a", "--timeout", "450",
                                 "-e", "task-clock,context-switches,cycles"], ndjson=True)
        types = [d["type"] for d in docs]
        self.assertGreaterEqual(types.count("interval"), 2, types)
        self.assertEqual(types[-1], "summary", types)
        self.assertEqual(types.count("summary"), 1, types)
        stamps = [d["timestamp_unix_ns"] for d in docs]
        self.assertEqual(stamps, sorted(stamps), "timestamps go forward")

    def test_intervals_command_shorter_than_interval(self):
        # At most the final stretch (shorter than -I) as an "interval" record, then the summary.
        _, docs = self.run_json(["stat", "-I", "1000", "--summary", "-e", "task-clock"],
                                command=["true"],
                                ndjson=True)
        types = [d["type"] for d in docs]
        self.assertIn(types, (["summary"], ["interval", "summary"]))


@t.requires("cgroup2")
class PerCgroup(SchemaCase):
    def setUp(self):
        self.mount = cgroup2_mount()

    def test_root_cgroup(self):
        _, docs = self.run_json(["stat", "-a", "-G", "/", "--timeout", "200",
                                 "-e", "task-clock,context-switches"])
        r = docs[0]
        self.assertIn(r.get("cgroup_backend"), ("fd", "bpf"))
        self.assertEqual({c["cgroup"] for c in r["counters"]}, {"/"})

    def test_created_cgroup_each_backend_and_intervals(self):
        name = f"pmcprof-schema-test-{os.getpid()}"
        path = os.path.join(self.mount, name)
        try:
            os.mkdir(path)
        except OSError as e:
            raise t.Skip(f"cannot create a cgroup under {self.mount}: {e}")
        try:
            for backend in ("fd", "bpf"):
                args = ["stat", "-a", "-G", f"/,{name}", "--cgroup-backend", backend,
                        "--timeout", "250", "-e", "task-clock,context-switches"]
                proc = t.run_pmcprof([*args, "-j", "-o", "/dev/null"], timeout=60)
                if proc.returncode != 0:
                    t.log(f"--cgroup-backend {backend} refused here, not validated: "
                          f"{proc.stderr.strip()}")
                    continue
                _, docs = self.run_json(args)
                self.assertEqual(docs[0]["cgroup_backend"], backend)
                self.assertEqual({c["cgroup"] for c in docs[0]["counters"]}, {"/", f"/{name}"})
                _, docs = self.run_json(["stat", "-I", "100", "--summary", *args[1:]],
                                        ndjson=True)
                self.assertEqual(docs[-1]["type"], "summary")
        finally:
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


@t.requires("syscall-tracepoints", "uprobes")
class FunctionMode(SchemaCase):
    def setUp(self):
        self.wl = t.workload("func_workload")

    def test_report(self):
        _, docs = self.run_json(["stat", "-e", "task-clock,page-faults,cycles",
                                 "--func", "syscall:getppid"],
                                command=[self.wl, "getppid", "100"])
        self.assertEqual(len(docs), 1)
        r = docs[0]
        self.assertEqual((r["type"], r["mode"]), ("report", "function"))
        self.assertGreaterEqual(t.func_row(r, "syscall:getppid")["calls"], 100)

    def test_never_called(self):
        # A function without any call: totals 0, no per-call figures (null), status ok.
        _, docs = self.run_json(["stat", "-e", "task-clock,cycles", "--func", "syscall:getppid"],
                                command=["sleep", "0.05"])
        row = t.func_row(docs[0], "syscall:getppid")
        self.assertEqual(row["calls"], 0)
        self.assertEqual((row["wall"]["total"], row["wall"]["mean"]), (0, None))

    def test_intervals(self):
        # Calls, then 0.35 s without any (intervals with "calls": 0), then calls again.
        sh = f"{self.wl} getppid 100; sleep 0.35; {self.wl} getppid 100"
        _, docs = self.run_json(["stat", "-I", "100", "-e", "task-clock,cycles",
                                 "--func", "syscall:getppid"], command=["sh", "-c", sh],
                                ndjson=True)
        types = [d["type"] for d in docs]
        self.assertGreaterEqual(types.count("interval"), 2, types)
        self.assertEqual(types[-1], "summary")
        self.assertIn(0, [d["functions"][0]["calls"] for d in docs if d["type"] == "interval"],
                      "expected an interval without calls")
        # The probe bias, calibrated once: in the first interval and the summary only.
        self.assertEqual(["probe_bias" in d for d in docs],
                         [True] + [False] * (len(docs) - 2) + [True], types)

    def test_aggregate_both(self):
        _, docs = self.run_json(["stat", "--aggregate", "both", "-e", "task-clock",
                                 "--func", "syscall:getppid"],
                                command=[self.wl, "getppid", "100"])
        # One document: the stream's report with the kernel's view of the same calls in it.
        self.assertEqual([d["aggregation"] for d in docs], ["stream"])
        self.assertEqual(docs[0]["kernel_view"]["aggregation"], "kernel")
        self.assertNotIn("kernel_view", docs[0]["kernel_view"])

    def test_aggregate_both_intervals(self):
        sh = f"{self.wl} getppid 100; sleep 0.25; {self.wl} getppid 100"
        _, docs = self.run_json(["stat", "-I", "100", "--aggregate", "both", "-e", "task-clock",
                                 "--func", "syscall:getppid"], command=["sh", "-c", sh],
                                ndjson=True)
        summaries = [d for d in docs if d["type"] == "summary"]
        self.assertEqual([d["aggregation"] for d in summaries], ["stream"])
        self.assertEqual(summaries[0]["kernel_view"]["aggregation"], "kernel")

    def test_metrics(self):
        # -M in function mode: a metric that has values per call (CPUs utilized: task-clock over
        # the call's wall time) and IPC, which needs cycles (not supported on a machine without
        # a PMU: then "not-computed" with the reason, never 0).
        _, docs = self.run_json(["stat", "-M", "CPUs_utilized,IPC", "-e", "task-clock",
                                 "--aggregate", "both", "--func", "syscall:getppid"],
                                command=[self.wl, "getppid", "100"])
        for view in (docs[0], docs[0]["kernel_view"]):
            row = t.func_row(view, "syscall:getppid")
            m = row["metrics"]
            self.assertEqual(list(m), ["CPUs_utilized", "IPC"])
            cpus = m["CPUs_utilized"]
            self.assertEqual((cpus["status"], cpus["requested"]), ("ok", True))
            self.assertEqual(cpus["events"], {"task-clock": "task-clock",
                                              "duration_time": "wall time"})
            pc = cpus["per_call"]
            self.assertEqual(pc["calls"] + pc["unmeasured"] + pc["zero_divisor"],
                             row["calls"] - row["not_counted"])
            ipc = m["IPC"]
            if ipc["status"] == "not-computed":
                self.assertIsNone(ipc["of_totals"])
                self.assertIn("<not supported>", ipc["reason"])
            # A regression the schema must catch: a metric without a value written as 0.
            doc = copy.deepcopy(docs[0])
            t.func_row(doc, "syscall:getppid")["metrics"]["IPC"].update(
                status="not-computed", reason="x", of_totals=0)
            self.assertTrue(schema_errors(doc), "schema accepts of_totals 0 when not computed")

    def test_by_each_key(self):
        for key in ("pid", "comm", "cpu", "cgroup"):
            with self.subTest(by=key):
                _, docs = self.run_json(["stat", "--by", key, "-e", "task-clock",
                                         "--func", "syscall:getppid"],
                                        command=[self.wl, "getppid", "50"])
                self.assertEqual(docs[0]["by"], key)


    def test_regions_probes_and_argument_keys(self):
        sdt = t.workload("sdt_workload")
        p = f"usdt:{sdt}:pmcprof_test"
        region = f"work={p}:work__start,{p}:work__done"
        mixed = f"mixed={sdt}:region,{p}:work__done"
        for agg in ("kernel", "both"):
            with self.subTest(aggregate=agg):
                # (the uprobe start's arguments are region()'s: an id and a name too)
                _, docs = self.run_json(["stat", "--aggregate", agg, "-e", "task-clock",
                                         "--region", region, "--region", mixed, "--by",
                                         "arg0,arg1:str", "--max-keys", "2", "--top", "1"],
                                        command=[sdt, "regions", "2", "10"])
                kinds = {f["function"]: f["kind"] for f in docs[0]["functions"]}
                self.assertEqual(kinds, {"work": "region", "mixed": "region"})
                self.assertTrue(any(f["other"] for f in docs[0]["functions"]))
                # --top 1 of 2 keys: a folded entry each, and a total each in totals.
                self.assertTrue(any(f.get("folded") for f in docs[0]["functions"]))
                self.assertEqual({f["function"] for f in docs[0]["totals"]}, {"work", "mixed"})
                _, docs = self.run_json(["stat", "--aggregate", agg, "-e", "task-clock",
                                         "--func", f"{p}:tick", "--by", "arg0", "--max-keys",
                                         "2"], command=[sdt, "ticks", "8"])
                self.assertEqual({f["kind"] for f in docs[0]["functions"]}, {"probe"})
        _, docs = self.run_json(["stat", "-I", "100", "-e", "task-clock", "--region", region,
                                 "--by", "arg1:str"], command=[sdt, "regions", "20", "500"],
                                ndjson=True)
        self.assertEqual(docs[-1]["type"], "summary")
        _, docs = self.run_json(["stat", "-e", "task-clock", "--region", region],
                                command=[sdt, "unmatched", "3"])
        self.assertEqual(docs[0]["functions"][0]["open"], 3)
        # Arguments BPF could not read: {"unreadable_at": ADDRESS} keys, a note on the total.
        _, docs = self.run_json(["stat", "-e", "task-clock", "--region", region, "--by",
                                 "arg0,arg1:str"], command=[sdt, "unreadable", "2"])
        self.assertIn({"unreadable_at": 0}, [f["args"][1] for f in docs[0]["functions"]])
        self.assertIn("could not read", docs[0]["totals"][0]["backend_note"])


class DiffDocuments(SchemaCase):
    """pmcprof diff -j of two saved runs, in each mode (with rows only one run has)."""

    def saved(self, tmp, name, args, command):
        out = os.path.join(tmp, name)
        p = t.run_pmcprof(["stat", "-j", "-o", out, *args, "--", *command], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return out

    def test_counting(self):
        wl = t.workload("func_workload")
        with tempfile.TemporaryDirectory(prefix="pmcprof-schema-") as tmp:
            a = self.saved(tmp, "a.json", ["-r", "2", "-e", "task-clock,page-faults"],
                           [wl, "burn", "2", "100"])
            b = self.saved(tmp, "b.json", ["-e", "task-clock,cycles"], [wl, "burn", "2", "100"])
            _, docs = self.run_json(["diff", "-j", a, a])
            self.assertEqual(docs[0]["rule"]["test"], "welch-t")
            _, docs = self.run_json(["diff", "-j", a, b])
            self.assertEqual({r["status"] for r in docs[0]["rows"]},
                             {"not-tested", "added", "removed"})

    @t.requires("uprobes")
    def test_function(self):
        wl = t.workload("func_workload")
        with tempfile.TemporaryDirectory(prefix="pmcprof-schema-") as tmp:
            a = self.saved(tmp, "a.json", ["-e", "task-clock", "--func", f"{wl}:burn_a"],
                           [wl, "pair", "20", "50", "50"])
            b = self.saved(tmp, "b.json", ["-e", "task-clock,page-faults", "--func",
                                           f"{wl}:burn_a", "--func", f"{wl}:burn_b"],
                           [wl, "pair", "20", "100", "50"])
            _, docs = self.run_json(["diff", "-j", a, b])
            statuses = {r["status"] for r in docs[0]["rows"]}
            self.assertIn("changed", statuses)
            self.assertIn("added", statuses)


class ListAndDoctor(SchemaCase):
    def test_list(self):
        _, docs = self.run_json(["list", "-j"])
        names = {e["name"] for p in docs[0]["pmus"] for e in p["events"]}
        self.assertIn("task-clock", names)

    def test_list_model_pmu_with_umasks(self):
        env = dict(os.environ, LIBPFM_FORCE_PMU="skl")
        proc = t.run_pmcprof(["list", "-j", "skl::INST_RETIRED"], env=env)
        if proc.returncode != 0:
            raise t.Skip(f"libpfm4 cannot force the skl PMU here: {proc.stderr.strip()}")
        _, docs = self.run_json(["list", "-j", "skl::INST_RETIRED"], env=env)
        self.assertTrue(any(e["umasks"] for p in docs[0]["pmus"] for e in p["events"]))

    def test_list_all(self):
        self.run_json(["list", "-j", "--all", "cycles"])

    def test_doctor(self):
        _, docs = self.run_json(["doctor", "--json"])
        self.assertEqual(docs[0]["type"], "doctor")
        _, docs = self.run_json(["doctor", "-j"])


class DocsExamples(SchemaCase):
    """docs/json.md shows real output: every pmcprof object in its ```json and ```console blocks
    must validate, so the documentation stays true to the schema."""

    def documents(self):
        with open(DOCS_JSON_MD) as f:
            md = f.read()
        docs = []
        for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", md, re.M | re.S):
            if lang not in ("json", "console"):
                continue
            lines = body.splitlines(keepends=True)
            starts, pos = [], 0
            for line in lines:
                if line.startswith("{"):
                    starts.append(pos)
                pos += len(line)
            dec, end = json.JSONDecoder(), -1
            for s in starts:
                if s < end:
                    continue
                try:
                    doc, end = dec.raw_decode(body, s)
                except json.JSONDecodeError:
                    continue
                if isinstance(doc, dict) and "schema" in doc:
                    line_no = md[:md.index(body)].count("\n") + body[:s].count("\n") + 1
                    docs.append((line_no, doc))
        return docs

    def test_examples_validate(self):
        docs = self.documents()
        kinds = {(d.get("type"), d.get("mode")) for _, d in docs}
        t.log(f"docs/json.md: {len(docs)} pmcprof objects, kinds {sorted(map(str, kinds))}")
        self.assertGreaterEqual(len(docs), 10, "docs/json.md examples not found")
        for want in (("report", "counting"), ("interval", "counting"), ("summary", "counting"),
                     ("report", "function"), ("interval", "function"), ("summary", "function"),
                     ("list", None), ("doctor", None)):
            self.assertIn(want, kinds, f"docs/json.md has no {want} example")
        failures = []
        for line_no, d in docs:
            errs = schema_errors(d)
            if errs:
                failures.append(f"docs/json.md line {line_no} ({d.get('type')}, {d.get('mode')}): "
                                + "; ".join(errs[:6]))
        self.assertFalse(failures, "\n".join(failures))


class SchemaCatchesRegressions(SchemaCase):
    """The schema is strict enough: typical regressions of real output are rejected."""

    @classmethod
    def setUpClass(cls):
        proc = t.run_pmcprof(["stat", "-j", "-o", "-", "-e", "task-clock,cycles", "--", "true"])
        cls.report = json.loads(proc.stdout)

    def assertRejected(self, mutate, what):
        doc = copy.deepcopy(self.report)
        mutate(doc)
        self.assertTrue(schema_errors(doc), f"schema accepts {what}")

    def test_mutations(self):
        self.assertValid(self.report, "unmutated report")
        ok = next(c for c in self.report["counters"] if c["status"] == "ok")
        i = self.report["counters"].index(ok)
        cases = {
            "a number as a string": lambda d: d["counters"][i].update(value=str(ok["value"])),
            "a timestamp in seconds": lambda d: d.update(timestamp_unix_ns=int(time.time())),
            "a missing field": lambda d: d["counters"][i].pop("enabled_ns"),
            "a camelCase key": lambda d: d.update(elapsedNs=1),
            "an unknown status": lambda d: d["counters"][i].update(status="OK"),
            "null value on an ok counter": lambda d: d["counters"][i].update(value=None),
            "a value on a not-ok counter": lambda d: d["counters"][i].update(status="not-counted"),
            "interval field in a report": lambda d: d.update(interval=1.0),
            "another schema version": lambda d: d.update(schema="pmcprof/2"),
            "an unknown mode": lambda d: d.update(mode="sampling"),
            "runs as a float string": lambda d: d.update(runs="1"),
        }
        for what, mutate in cases.items():
            with self.subTest(what):
                self.assertRejected(mutate, what)


if __name__ == "__main__":
    if jsonschema is None:
        t.skip(f"python3-jsonschema is not installed (apt-get install python3-jsonschema): "
               f"{JSONSCHEMA_ERROR}")
    if not hasattr(jsonschema, "Draft202012Validator"):
        t.skip(f"jsonschema {getattr(jsonschema, '__version__', '?')} has no draft 2020-12 "
               "validator (needs >= 4.0, Debian 12's python3-jsonschema)")
    sys.exit(t.main(requires=("root", "python:jsonschema"), doc=__doc__))

#!/usr/bin/env python3
"""`pmcprof list` says what stat takes and counts on this machine, in perf list's sections:
- an event is marked countable exactly when `pmcprof stat` counts it here: on a machine without
  a hardware PMU cycles' section says `[not supported here: ...]` and stat says
  `<not supported>`; task-clock's says `[present]` and stat counts it (text and JSON);
- `list sched_switch` shows sched:sched_switch under `[Tracepoint event]`, and stat opens it;
- `list 'sched:*'` lists exactly the sched tracepoints tracefs has (each with an id), nothing
  else; `list tracepoint` every tracepoint of tracefs, nothing else;
- `list msr` shows msr/tsc/ as a `[Kernel PMU event]` when /sys/bus/event_source/devices/msr
  exists, and every kernel PMU event listed is one stat opens (skipped, with the reason,
  without msr);
- a filter that matches nothing fails with one line and a hint that finds something: a close
  name that lists, `--all` only when `list --all` lists it, never `--all` otherwise.

Usage: test_list.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcprof_testlib as t  # noqa: E402

EXIT_USAGE = 129
SYSFS = "/sys/bus/event_source/devices"
HEADER = re.compile(r"^\[(?P<section>[^\]]+)\] (?P<pmu>[^:\s]+): (?P<desc>.*) "
                    r"\[(?P<status>present|not present|not supported here: [^\]]+)\]$")


def list_text(*args):
    """{event name: (section, pmu, status)} and the sections in order, of `pmcprof list ARGS`."""
    proc = t.run_pmcprof(["list", *args])
    if proc.returncode != 0:
        raise AssertionError(f"list {args}: exit {proc.returncode}: {proc.stderr}")
    events, sections, current = {}, [], None
    for line in proc.stdout.splitlines():
        if not line.strip():
            continue
        m = HEADER.match(line)
        if m:
            current = (m["section"], m["pmu"], m["status"])
            sections.append(current)
        elif line.startswith("    :"):
            continue  # a unit mask of the event above
        elif line.startswith("  "):
            if current is None:
                raise AssertionError(f"an event before any section header: {line!r}")
            events.setdefault(line.split()[0], current)
        else:
            raise AssertionError(f"neither a section header nor an event: {line!r}")
    return events, sections


def list_json(*args):
    proc = t.run_pmcprof(["list", "-j", *args])
    if proc.returncode != 0:
        raise AssertionError(f"list -j {args}: exit {proc.returncode}: {proc.stderr}")
    doc = json.loads(proc.stdout)
    return {e["name"]: p for p in doc["pmus"] for e in p["events"]}


def tracefs_events(category=None):
    """CATEGORY:NAME of every tracepoint tracefs has with an id (what stat resolves)."""
    root = os.path.join(t._tracefs_dir() or "/sys/kernel/tracing", "events")
    out = set()
    for cat in ([category] if category else os.listdir(root)):
        d = os.path.join(root, cat)
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if os.path.exists(os.path.join(d, name, "id")):
                out.add(f"{cat}:{name}")
    return out


def stat_status(event, system_wide=False):
    """What `pmcprof stat` says of EVENT here: "ok", "not-supported", ... (its JSON status)."""
    args = ["-e", event] + (["-a"] if system_wide else [])
    s = t.stat(args, ["sleep", "0.05"] if system_wide else ["true"])
    if s.returncode != 0:
        raise AssertionError(f"stat -e {event}: exit {s.returncode}: {s.stderr}")
    [row] = [c for c in s.json["counters"] if c["event"] == event]
    return row["status"]


class Countable(unittest.TestCase):
    def check_agrees_with_stat(self, event, section):
        events, _ = list_text()
        self.assertIn(event, events, "not listed")
        got_section, pmu, status = events[event]
        self.assertEqual(got_section, section, event)
        counted = stat_status(event)
        t.log(f"{event}: list [{got_section}] {pmu} [{status}]; stat: {counted}")
        if counted == "ok":
            self.assertEqual(status, "present", f"stat counts {event}, list says {status}")
        else:
            self.assertEqual(counted, "not-supported")
            self.assertTrue(status.startswith("not supported here: "),
                            f"stat cannot count {event}, list says [{status}]")
        by_name = list_json(event)
        self.assertEqual(by_name[event]["section"], section)
        self.assertEqual(by_name[event]["countable"], counted == "ok")
        self.assertEqual("reason" in by_name[event], counted != "ok")
        return status

    def test_cycles(self):
        status = self.check_agrees_with_stat("cycles", "Hardware event")
        if not t.has_hardware_pmu():
            # doctor's words for it, not a second guess.
            self.assertIn("no PMU", status)

    def test_task_clock(self):
        self.assertEqual(self.check_agrees_with_stat("task-clock", "Software event"), "present")


class Tracepoints(unittest.TestCase):
    def test_by_name(self):
        events, sections = list_text("sched_switch")
        self.assertIn("sched:sched_switch", events)
        self.assertEqual(events["sched:sched_switch"][0], "Tracepoint event")
        self.assertEqual(events["sched:sched_switch"][2], "present")
        self.assertEqual(stat_status("sched:sched_switch", system_wide=True), "ok",
                         "listed, but stat does not count it")
        t.log(f"list sched_switch: {sorted(events)} in {[s[0] for s in sections]}")

    def test_glob(self):
        names = set(t.run_pmcprof(["list", "--names", "sched:*"]).stdout.split())
        truth = tracefs_events("sched")
        t.log(f"list 'sched:*': {len(names)} names; tracefs events/sched: {len(truth)}")
        self.assertGreaterEqual(len(names), 3)
        self.assertTrue(all(n.startswith("sched:") for n in names), sorted(names))
        self.assertEqual(names, truth)
        events, sections = list_text("sched:*")
        self.assertEqual([s[0] for s in sections], ["Tracepoint event"])
        self.assertEqual(set(events), truth)

    def test_keyword(self):
        names = t.run_pmcprof(["list", "--names", "tracepoint"]).stdout.split()
        truth = tracefs_events()
        t.log(f"list tracepoint: {len(names)} names; tracefs: {len(truth)}")
        self.assertEqual(len(names), len(set(names)), "a tracepoint listed twice")
        self.assertEqual(set(names), truth)


class KernelPmu(unittest.TestCase):
    def test_msr(self):
        if not os.path.isdir(f"{SYSFS}/msr"):
            raise t.Skip(f"no {SYSFS}/msr on this machine: nothing to list for msr")
        events, sections = list_text("msr")
        t.log(f"list msr: {sorted(events)} in {sections}")
        if os.path.exists(f"{SYSFS}/msr/events/tsc"):
            self.assertIn("msr/tsc/", events)
            self.assertEqual(events["msr/tsc/"][:2], ("Kernel PMU event", "msr"))

    def test_every_listed_kernel_pmu_event_is_taken_by_stat(self):
        events, _ = list_text("pmu")
        if not events:
            raise t.Skip(f"no PMU in {SYSFS} has named events stat takes")
        for name, (section, pmu, status) in sorted(events.items())[:8]:
            self.assertEqual(section, "Kernel PMU event")
            self.assertTrue(os.path.exists(f"{SYSFS}/{pmu}/events/{name.split('/')[1]}"), name)
            counted = stat_status(name, system_wide=True)
            t.log(f"{name}: list [{status}], stat: {counted}")
            self.assertEqual(counted == "ok", status == "present", name)


class NoMatch(unittest.TestCase):
    def no_match(self, *args):
        proc = t.run_pmcprof(["list", *args])
        line = t.assert_clean_error(self, proc, exit_code=EXIT_USAGE, mentions=[re.escape(args[-1])])
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 2, f"one line and a hint: {proc.stderr!r}")
        t.log(f"list {' '.join(args)}: {line!r} / {lines[1]!r}")
        return lines[1]

    def test_nonsense(self):
        hint = self.no_match("xq-no-such-event-zz")
        self.assertNotIn("--all", hint, "--all would not show it")
        self.assertEqual(t.run_pmcprof(["list", "--all", "xq-no-such-event-zz"]).returncode,
                         EXIT_USAGE)
        self.assertIn("'sched:*'", hint)
        self.assertIn("tracepoint", hint)

    def test_typo_gets_a_name_that_lists(self):
        hint = self.no_match("sched_swtch")
        m = re.search(r"did you mean '([^']+)'", hint)
        self.assertIsNotNone(m, hint)
        events, _ = list_text(m.group(1))
        self.assertIn("sched:sched_switch", events)

    def test_all_only_when_it_shows_it(self):
        # A model event of a PMU this machine lacks: list --all shows it.
        name = "INST_RETIRED"
        if t.run_pmcprof(["list", "--names", name]).returncode == 0:
            raise t.Skip(f"this machine's PMU has {name}: list shows it without --all")
        hint = self.no_match(name)
        self.assertIn(f"pmcprof list --all '{name}'", hint)
        self.assertEqual(t.run_pmcprof(["list", "--all", "--names", name]).returncode, 0)


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "syscall-tracepoints"), doc=__doc__))

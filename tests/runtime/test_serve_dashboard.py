"""The Grafana dashboard and the alerting rules, against a real Prometheus that scraped pmcprof.

Three `pmcprof serve` targets in one job, as a small fleet would have them: host-wide counting
(task-clock, context-switches and the hardware events the IPC and cache-miss panels need),
per-cgroup counting over two test cgroups (a burn runs in one), and function mode
(`--func syscall:getppid --aggregate stream`, getppid bursts running). Debian's Prometheus
2.42 scrapes them every second with packaging/prometheus/pmcprof-rules.yml loaded.

- Every PromQL expression in packaging/grafana/pmcprof-dashboard.json (each panel target's
  "expr", with $job, $instance and $__rate_interval substituted as Grafana would) is evaluated
  by Prometheus's API and must return data; the CPU busy per cgroup of the burned cgroup, the
  calls per second and the p99 call times are above 0. The IPC and cache-miss expressions need
  instructions/cycles/cache-misses/cache-references, which this machine has no PMU to count
  (pmcprof_event_supported = 0 for them, so pmcprof exports no value): here they must parse
  and evaluate (status success) and return nothing; where a PMU exists they must return data.
- The dashboard's variable queries (label_values(...)) find the job and the instances.
- Prometheus loaded the three alerting rules with health ok; `promtool check rules` and
  `promtool test rules tests/prometheus/pmcprof-rules.test.yml` pass.
"""
import json
import os
import re
import shutil
import subprocess
import threading
import time
import unittest

import pmcprof_testlib as t
import serve_testlib as s

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DASHBOARD = os.path.join(ROOT, "packaging", "grafana", "pmcprof-dashboard.json")
RULES = os.path.join(ROOT, "packaging", "prometheus", "pmcprof-rules.yml")
RULES_TEST = os.path.join(ROOT, "tests", "prometheus", "pmcprof-rules.test.yml")
HW_EVENTS = ("instructions", "cycles", "cache-misses", "cache-references")


def exprs_of(node, out=None):
    """Every "expr" string in the dashboard JSON (panel targets), with where it came from."""
    out = [] if out is None else out
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                out.append(v)
            else:
                exprs_of(v, out)
    elif isinstance(node, list):
        for v in node:
            exprs_of(v, out)
    return out


def grafana_substitute(expr):
    """What Grafana sends for the dashboard's variables: all jobs and instances (allValue .*),
    and $__rate_interval (at least 4 scrape intervals: 4 s here, 30 s keeps several)."""
    return (expr.replace("$job", ".*").replace("$instance", ".*")
            .replace("$__rate_interval", "30s"))


class DashboardTest(unittest.TestCase):
    def test_dashboard_structure(self):
        with open(DASHBOARD) as f:
            dash = json.load(f)
        ids = [p["id"] for p in dash["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids must be unique")
        titles = " / ".join(p["title"] for p in dash["panels"])
        for want in ("pmcprof up", "Records lost", "CPU busy per host", "CPU busy per cgroup",
                     "Context switches", "Function calls", "p50 and p99", "IPC", "Cache misses"):
            self.assertIn(want, titles)
        for p in dash["panels"]:
            self.assertEqual(p["datasource"]["uid"], "${datasource}", p["title"])
            self.assertTrue(p["targets"], p["title"])
            for target in p["targets"]:
                self.assertTrue(target["expr"] and target["refId"], p["title"])
        names = [v["name"] for v in dash["templating"]["list"]]
        self.assertEqual(names, ["datasource", "job", "instance"])

    @t.requires("program:promtool")  # apt-get install prometheus
    def test_promtool_checks_and_tests_the_rules(self):
        promtool = shutil.which("promtool")
        p = t.run([promtool, "check", "rules", RULES])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS: 3 rules found", p.stdout + p.stderr)
        p = t.run([promtool, "test", "rules", RULES_TEST])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        t.log("promtool check rules: 3 rules; promtool test rules: SUCCESS")

    @t.requires("program:prometheus", "cgroup2", "syscall-tracepoints")
    def test_every_dashboard_query_against_a_real_prometheus(self):
        with open(DASHBOARD) as f:
            dash = json.load(f)
        exprs = exprs_of(dash["panels"])
        self.assertGreaterEqual(len(exprs), 10)
        hw = t.has_hardware_pmu()
        serves, prom, stop = [], None, threading.Event()
        with t.TestCgroups("dashboard") as cg:
            a, b = cg.make("a"), cg.make("b")
            try:
                serves = [
                    s.Serve(["-q", "-e", "task-clock,context-switches," + ",".join(HW_EVENTS)]),
                    s.Serve(["-q", "-e", "task-clock,context-switches", "-G",
                             f"{a.lstrip('/')},{b.lstrip('/')}"]),
                    s.Serve(["-q", "-e", "task-clock", "--func", "syscall:getppid",
                             "--aggregate", "stream"]),
                ]
                for srv in serves:
                    srv.wait_up()
                targets = ", ".join(f"'127.0.0.1:{srv.port}'" for srv in serves)
                prom = s.Prometheus(
                    "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    f"rule_files:\n  - {RULES}\n"
                    "scrape_configs:\n  - job_name: pmcprof\n"
                    f"    static_configs:\n      - targets: [{targets}]\n")

                def work():
                    # Burn in cgroup a, getppid calls for the function target, until told.
                    while not stop.is_set():
                        p = cg.spawn_in("a", [t.workload("burn"), "100"])
                        p.communicate(timeout=30)
                        t.run([t.workload("func_workload"), "getppid", "20000"], timeout=30)
                        stop.wait(0.2)
                worker = threading.Thread(target=work)
                worker.start()
                try:
                    prom.wait_target_health("up", timeout=60)
                    # Enough samples of every target inside the 30 s rate window.
                    self.assertTrue(t.wait_for(
                        lambda: len(prom.query('count_over_time(pmcprof_up[30s]) >= 6')) == 3,
                        60, step=0.5), prom.log_tail())
                    self.check_queries(prom, exprs, hw, a)
                    self.check_variables(prom, dash, serves)
                    self.check_rules_loaded(prom)
                finally:
                    stop.set()
                    worker.join()
            finally:
                if prom:
                    prom.stop()
                for srv in serves:
                    rc, _, err = srv.close()
                    self.assertEqual(rc, 0, err)

    def check_queries(self, prom, exprs, hw, burned_cgroup):
        for expr in exprs:
            q = grafana_substitute(expr)
            result = prom.query(q)  # raises on a PromQL error
            needs_pmu = any(f'event="{e}"' in expr for e in HW_EVENTS)
            if needs_pmu and not hw:
                self.assertEqual(result, [], f"no PMU here, yet data for {q}")
                # Why: pmcprof says these events are not supported here, and serves no value.
                for e in HW_EVENTS:
                    if f'event="{e}"' in expr:
                        self.assertTrue(prom.query(f'pmcprof_event_supported{{event="{e}"}} == 0'),
                                        f"{e}: not marked unsupported")
                t.log(f"valid, no data (no PMU counts {'/'.join(HW_EVENTS)} here): {q[:90]}...")
                continue
            self.assertTrue(result, f"no data for {q}")
            values = {json.dumps(r["metric"], sort_keys=True): float(r["value"][1])
                      for r in result}
            t.log(f"{len(result)} series: {q[:100]}{'...' if len(q) > 100 else ''}")
            if "cgroup!=\"\"" in expr and "task-clock" in expr:
                burned = [v for k, v in values.items() if burned_cgroup in k]
                self.assertTrue(burned and burned[0] > 0, f"{q}: {values}")
            if "pmcprof_function_calls_total" in expr or "histogram_quantile(0.99" in expr:
                self.assertTrue(any(v > 0 for v in values.values()), f"{q}: {values}")

    def check_variables(self, prom, dash, serves):
        for var in dash["templating"]["list"]:
            if var["type"] != "query":
                continue
            m = re.fullmatch(r"label_values\((.*), *(\w+)\)", var["query"]["query"])
            self.assertIsNotNone(m, var["query"])
            match, label = grafana_substitute(m.group(1)), m.group(2)
            data = prom.api(f"label/{label}/values", **{"match[]": match})
            self.assertEqual(data["status"], "success", data)
            values = data["data"]
            if label == "job":
                self.assertEqual(values, ["pmcprof"])
            else:
                self.assertEqual(sorted(values),
                                 sorted(f"127.0.0.1:{srv.port}" for srv in serves))
        t.log("dashboard variables: job and instance values found")

    def check_rules_loaded(self, prom):
        data = prom.api("rules")
        groups = {g["name"]: g for g in data["data"]["groups"]}
        self.assertIn("pmcprof", groups)
        rules = {r["name"]: r for r in groups["pmcprof"]["rules"]}
        self.assertEqual(set(rules), {"PmcprofDown", "PmcprofNotCounting", "PmcprofRecordsLost"})
        for name, r in rules.items():
            self.assertEqual(r["health"], "ok", f"{name}: {r.get('lastError')}")
        self.assertEqual(rules["PmcprofDown"]["state"], "inactive")
        t.log("Prometheus evaluates the 3 alerting rules: health ok, PmcprofDown inactive")


if __name__ == "__main__":
    raise SystemExit(t.main(requires=("root",), doc=__doc__))

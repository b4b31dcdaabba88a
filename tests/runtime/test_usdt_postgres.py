#!/usr/bin/env python3
"""Counters per PostgreSQL query, from Debian's PostgreSQL 15 and its USDT probes
(postgresql:query__start / query__done), against PostgreSQL's own counts.

The test starts its own server: initdb in a temporary directory as an unprivileged user (the
postgres system user, else nobody), a Unix socket there and no TCP, pg_stat_statements loaded;
a table t of 1000 rows. pmcprof attaches to the running postmaster with -p (its backends,
forked later, are followed), `--region query=START,DONE --by arg0:str --max-keys 12`; once
the query__start semaphore is raised in the postmaster (pmcprof attached), pgbench runs a
custom script N = 200 times over one connection (simple protocol, one query__start per
statement):

    \\set k random(1, 1000)
    BEGIN; SELECT v FROM t WHERE k = :k; UPDATE t SET v = v + 1 WHERE k = :k;
    SELECT count(*) FROM t; END;

then pmcprof is stopped with SIGINT. Asserted:
- pgbench processed N transactions; pg_stat_statements (reset before) counted N calls of each
  of the 5 statements: 5N;
- pmcprof's rows of the region add up to exactly 5N calls, the 'other' row included (the
  literal values make up to 2N + 3 distinct texts; 12 kept, the rest folded and counted);
  the rows of the fixed texts 'BEGIN;', 'END;' and 'SELECT count(*) FROM t;' have exactly N calls
  each, as pg_stat_statements says; a varying text's row is a SELECT or UPDATE of t;
- no end without a start, no start left open; the count over 1000 rows costs more on-CPU time
  per call than BEGIN;
- after pmcprof ends, the postmaster's query__start semaphore is back to 0.

Skips when PostgreSQL 15 (postgresql-15), pgbench or pg_stat_statements is not installed.

Usage: test_usdt_postgres.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import pmcprof_testlib as t

BIN = "/usr/lib/postgresql/15/bin"
POSTGRES = f"{BIN}/postgres"
N = 200
SCRIPT = """\\set k random(1, 1000)
BEGIN;
SELECT v FROM t WHERE k = :k;
UPDATE t SET v = v + 1 WHERE k = :k;
SELECT count(*) FROM t;
END;
"""


# Debian's postgresql-15: the server and its tools, pg_stat_statements, the server's USDT probes.
@t.requires(*(f"program:{BIN}/{tool}" for tool in ("postgres", "initdb", "pg_ctl", "psql",
                                                   "pgbench")),
            "path:/usr/lib/postgresql/15/lib/pg_stat_statements.so",
            f"usdt:{POSTGRES}:postgresql:query__start")
class PostgresTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for name in ("postgres", "nobody"):
            try:
                cls.user = pwd.getpwnam(name)
                break
            except KeyError:
                continue
        else:
            t.skip("no unprivileged user (postgres, nobody) to run PostgreSQL as")
        cls.dir = tempfile.mkdtemp(prefix="pmcprof-pg-")
        os.chown(cls.dir, cls.user.pw_uid, cls.user.pw_gid)
        cls.data = os.path.join(cls.dir, "data")
        try:
            cls.as_user([f"{BIN}/initdb", "-D", cls.data, "-A", "trust", "-U", "postgres",
                         "--no-sync", "--no-instructions"])
            opts = (f"-k {cls.dir} -c listen_addresses='' "
                    "-c shared_preload_libraries=pg_stat_statements "
                    "-c pg_stat_statements.track_utility=on -c autovacuum=off -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off")
            cls.as_user([f"{BIN}/pg_ctl", "-D", cls.data, "-o", opts, "-l",
                         os.path.join(cls.dir, "log"), "-w", "-t", "30", "start"])
            with open(os.path.join(cls.data, "postmaster.pid")) as f:
                cls.postmaster = int(f.readline())
            cls.psql("CREATE EXTENSION pg_stat_statements",
                     "CREATE TABLE t (k int PRIMARY KEY, v int)",
                     "INSERT INTO t SELECT g, 0 FROM generate_series(1, 1000) g")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if os.path.exists(os.path.join(cls.data, "postmaster.pid")):
            cls.as_user([f"{BIN}/pg_ctl", "-D", cls.data, "-m", "immediate", "-w", "stop"],
                        check=False)
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def as_user(cls, argv, check=True, **kw):
        uid, gid = cls.user.pw_uid, cls.user.pw_gid

        def drop():
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)

        env = {"PATH": "/usr/bin:/bin", "HOME": cls.dir, "LC_ALL": "C"}
        p = subprocess.run(argv, preexec_fn=drop, cwd=cls.dir, env=env, capture_output=True,
                           text=True, timeout=120, **kw)
        if check and p.returncode != 0:
            raise AssertionError(f"{argv[0]} failed ({p.returncode}): {p.stderr.strip()}")
        return p

    @classmethod
    def psql(cls, *statements):
        argv = [f"{BIN}/psql", "-h", cls.dir, "-U", "postgres", "-X", "-q", "-A", "-t",
                "-v", "ON_ERROR_STOP=1", "-d", "postgres"]
        for s in statements:
            argv += ["-c", s]
        return cls.as_user(argv).stdout

    def semaphore(self):
        return t.usdt_semaphore(self.postmaster, POSTGRES, "postgresql", "query__start")

    def test_queries_under_pgbench(self):
        script = os.path.join(self.dir, "bench.sql")
        with open(script, "w") as f:
            f.write(SCRIPT)
        self.psql("SELECT pg_stat_statements_reset()")
        self.assertEqual(self.semaphore(), 0, "query__start's semaphore before pmcprof")
        q = f"usdt:{POSTGRES}:postgresql"
        r = t.BackgroundStat(["-p", str(self.postmaster), "-e", "task-clock", "--region",
                              f"query={q}:query__start,{q}:query__done", "--by", "arg0:str",
                              "--max-keys", "12"], func=True)
        try:
            attached = t.wait_for(lambda: self.semaphore() == 1 or r.proc.poll() is not None, 30)
            self.assertTrue(attached and r.proc.poll() is None,
                            f"pmcprof did not attach: {r.proc.poll()}")
            bench = self.as_user([f"{BIN}/pgbench", "-h", self.dir, "-U", "postgres", "-n",
                                  "-M", "simple", "-c", "1", "-t", str(N), "-f", script,
                                  "postgres"])
            r.proc.send_signal(signal.SIGINT)
            s = r.finish()
        finally:
            if r.proc.poll() is None:
                r.kill()
        self.assertIn(s.returncode, (0, 130), s.stderr)
        self.assertTrue(s.json, f"no report: {s.stderr}")
        done = re.search(r"number of transactions actually processed: (\d+)/(\d+)", bench.stdout)
        self.assertTrue(done, bench.stdout)
        t.log(f"pgbench: {done.group(0)}")
        self.assertEqual(int(done.group(1)), N)

        # PostgreSQL's own count of the statements pgbench ran.
        stats = {}
        for line in self.psql("SELECT calls, query FROM pg_stat_statements "
                              "WHERE query NOT LIKE '%pg_stat_statements%'").splitlines():
            calls, query = line.split("|", 1)
            stats[query] = int(calls)
        t.log(f"pg_stat_statements: {stats}")
        want = {"BEGIN": N, "END": N, "SELECT v FROM t WHERE k = $1": N,
                "UPDATE t SET v = v + $1 WHERE k = $2": N, "SELECT count(*) FROM t": N}
        self.assertEqual(stats, want)

        rows = t.func_rows(s.json, "query")
        by_text = {(r["args"][0] if r["args"] else None): r for r in rows}
        t.log(f"pmcprof: {len(rows)} rows: " +
              ", ".join(f"{(k or '(other)')[:40]!r}: {r['calls']}" for k, r in by_text.items()))
        self.assertEqual(s.json["max_keys"], 12)
        self.assertEqual(sum(r["calls"] for r in rows), sum(stats.values()),
                         "every query pgbench ran, as pg_stat_statements counted them")
        for text, name in (("BEGIN;", "BEGIN"), ("END;", "END"),
                           ("SELECT count(*) FROM t;", "SELECT count(*) FROM t")):
            self.assertIn(text, by_text)
            self.assertEqual(by_text[text]["calls"], stats[name], text)
            self.assertEqual(by_text[text]["kind"], "region")
        other = by_text[None]
        self.assertTrue(other["other"])
        self.assertEqual(len(rows), 13, "12 texts and the other row")
        self.assertEqual(other["calls"], 5 * N - sum(r["calls"] for r in rows if not r["other"]))
        for text in by_text:
            if text is not None:
                self.assertRegex(text, r"^(BEGIN;|END;|SELECT count\(\*\) FROM t;|"
                                       r"SELECT v FROM t WHERE k = \d+;|"
                                       r"UPDATE t SET v = v \+ 1 WHERE k = \d+;)$")
        first = t.func_total(s.json, "query")
        self.assertEqual(first["unmatched_exits"], 0)
        self.assertEqual(first["open"], 0)
        self.assertGreater(t.func_event(by_text["SELECT count(*) FROM t;"])["mean"],
                           t.func_event(by_text["BEGIN;"])["mean"])
        for text in ("BEGIN;", "SELECT count(*) FROM t;"):
            t.log(f"{text} {t.describe_func_row(by_text[text])}")
        self.assertEqual(self.semaphore(), 0, "query__start's semaphore after pmcprof")


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes"), doc=__doc__))

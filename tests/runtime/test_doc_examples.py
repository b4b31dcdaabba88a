#!/usr/bin/env python3
"""The documentation cannot drift from what pmcprof prints: every example of README.md, docs/*.md
and man/pmcprof.1 that this machine can run is run, and its output must have the shape shown.

tests/doc_examples.py finds the examples (```console blocks with `$ ` commands that run
pmcprof; the man page's .EX blocks), runs each block's commands in a scratch directory holding
the test workloads under their own names, and compares, per command, the printed output with the
shown one: the same row and column labels for text (numbers, units after them and perf's
`# metric` column left out), the same keys for JSON, the same field count and labels for CSV,
the same exit status where `echo $?` shows one. A `...` line in an example marks output trimmed
by hand: the shown labels must then appear in that order, others allowed between them.

Not run here, each with its reason printed: the examples captured in the arm64 guest (a real
PMU, kprobes; tests/guest/test_guest_arm64_doc_examples.py runs them there), the one that
needs a Prometheus server scraping for a minute, the man page's list of commands without output,
and those whose machine state is absent (PostgreSQL 15 not installed, the refusal of a kernel
function on a kernel that has kprobes, a busy port 9464). The PostgreSQL example runs against a
server the test starts in the example's directory (setup=postgres).

First, the shape rules themselves on fixed texts (doc_examples.py selftest): the same shape
with other numbers passes; a renamed column label, an extra row, one more CSV field, a renamed
JSON key, another exit status fail.

Usage: test_doc_examples.py --pmcprof PATH --workloads DIR   (exit 77 = skipped)
"""
import os
import sys
import time
import unittest

import pmcprof_testlib as t

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import doc_examples as D  # noqa: E402


class DocExamplesTest(unittest.TestCase):
    def test_shape_rules(self):
        self.assertEqual(D.selftest(), 0, "the shape rules (doc_examples.py selftest)")

    def test_examples_have_the_shown_shape(self):
        examples = D.extract_all()
        self.assertGreater(len(examples), 50, "the docs' examples were found")
        machine = D.Machine(t.pmcprof())
        scratch = D.Scratch(t.pmcprof(), t.ARGS.workloads)
        todo = [e for e in examples if D.disposition(e, machine)[0]]
        scratch.make_cgroups(todo)
        failures, ran, t0, cache = [], 0, time.monotonic(), {}
        try:
            for ex in examples:
                run, why = D.disposition(ex, machine)
                if not run:
                    t.log(f"not run: {ex.name} ({ex.commands[0].text[:60]}): {why}")
                    continue
                t1 = time.monotonic()
                problem = D.check_example(ex, scratch, verbose=True, cache=cache)
                ran += 1
                t.log(f"{'FAIL' if problem else 'ok  '} {ex.name} ({time.monotonic() - t1:.1f} s) "
                      f"{ex.commands[0].text[:70]}")
                if problem:
                    # right under its FAIL line, where a cut log still shows it
                    t.log("\n".join(problem.split("\n")[:40]))
                    failures.append(f"{ex.name}:\n{problem}")
        finally:
            scratch.cleanup()
        t.log(f"{ran} of {len(examples)} examples run in {time.monotonic() - t0:.0f} s, "
              f"{len(failures)} with another shape than shown")
        self.assertFalse(failures, "examples whose output no longer has the shape shown "
                         "(paste the new output: tests/doc_examples.py update):\n\n" +
                         "\n\n".join(failures))


if __name__ == "__main__":
    sys.exit(t.main(requires=("root", "uprobes", "cgroup2"), doc=__doc__))

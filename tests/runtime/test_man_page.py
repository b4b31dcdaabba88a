"""The man page renders without warnings (groff -ww -man, man -l) and documents every
subcommand and every flag that `pmcprof SUBCOMMAND --help` lists."""
import os
import re
import shutil
import subprocess
import unittest

import pmcprof_testlib as t

MAN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "man", "pmcprof.1")


def flags_of(subcommand):
    out = t.run([t.pmcprof(), subcommand, "--help"]).stdout
    return sorted(set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", out)) - {"-h", "--help"})


class ManPageTest(unittest.TestCase):
    @t.requires("program:groff")
    def test_renders_without_warnings(self):
        p = subprocess.run(["groff", "-ww", "-man", "-Tutf8", MAN], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "", "groff warnings")
        self.assertIn("pmcprof", p.stdout)
        if shutil.which("man"):
            m = subprocess.run(["man", "-l", MAN], capture_output=True, text=True,
                               env={**os.environ, "MANPAGER": "cat", "PAGER": "cat"})
            self.assertEqual(m.returncode, 0, m.stderr)

    def test_every_subcommand_and_flag_is_documented(self):
        text = open(MAN).read().replace("\\-", "-")
        for sub in ("stat", "list", "doctor", "serve", "report", "diff"):
            self.assertRegex(text, rf"pmcprof {sub}\b", sub)
            for flag in flags_of(sub):
                self.assertIn(flag, text, f"{sub} {flag} is not in man/pmcprof.1")


if __name__ == "__main__":
    raise SystemExit(t.main(requires=(), doc=__doc__))

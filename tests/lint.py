#!/usr/bin/env python3
"""The lint tests ctest runs (label lint; scripts/test runs every label):

  lint.py format SOURCE_DIR          clang-format --dry-run --Werror (the repo's .clang-format)
                                     on every C and C++ file under src/ include/ bpf/ tests/
                                     bench/ (not bpf/vmlinux/, not fuzz corpora)
  lint.py tidy SOURCE_DIR BUILD_DIR  clang-tidy (the repo's .clang-tidy) on every C++ file of
                                     src/, tests/runtime_cpp and tests/fuzz in
                                     BUILD_DIR/compile_commands.json, in parallel
                                     (run-clang-tidy, one job per CPU)

clang-tidy costs seconds per file (it parses each translation unit, nlohmann/json, CLI11 and
gtest included). A file that passed is remembered in BUILD_DIR/lint-cache/ under a hash of
everything its result depends on: clang-tidy's version, .clang-tidy, its compile command and the
contents of the file and of every header the compiler's dependency file (.o.d) lists. So a
second run checks only what changed; a fresh build tree (CI) checks everything.

Both print what they checked and how long it took, and exit 0 (clean), 1 (findings: fix them,
e.g. `clang-format -i FILE`) or 77 (skipped: the tool is missing, or is not the version the
rules are written for — Debian 12's clang-format/clang-tidy 14; scripts/install-deps.sh
installs them). Formatting differs between clang-format versions, so only 14 judges it.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

EXIT_SKIP = 77
TOOL_MAJOR = 14
FORMAT_DIRS = ("src", "include", "bpf", "tests", "bench")
FORMAT_EXTS = (".c", ".h", ".cpp", ".hpp", ".cc")
# Not tests/unit: its 40 files cost about 320 CPU-s of clang-tidy in CI (gtest and nlohmann/json
# parsed and walked by every check in each), a sixth of a 2-CPU suite's budget; the sanitizer job
# runs every line of them under ASan and UBSan instead. The runtime and fuzz drivers stay.
TIDY_DIRS = ("src", "tests/runtime_cpp", "tests/fuzz")


def tool(name):
    """NAME-14 or NAME if it is version 14; else skip."""
    for candidate in (f"{name}-{TOOL_MAJOR}", name):
        path = shutil.which(candidate)
        if not path:
            continue
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        m = re.search(r"version (\d+)\.", out)
        if m and int(m.group(1)) == TOOL_MAJOR:
            return path
        print(f"skipped: {path} is not version {TOOL_MAJOR} ({out.strip()[:80]!r}): the rules are "
              f"written for Debian 12's {name} {TOOL_MAJOR}")
        sys.exit(EXIT_SKIP)
    print(f"skipped: {name} is not installed (apt-get install {name}; scripts/install-deps.sh)")
    sys.exit(EXIT_SKIP)


def format_files(source):
    files = []
    for top in FORMAT_DIRS:
        for root, dirs, names in os.walk(os.path.join(source, top)):
            # Not fuzz inputs, not the generated vmlinux.h.
            dirs[:] = sorted(d for d in dirs if d not in ("corpus", "vmlinux"))
            files.extend(os.path.join(root, n) for n in sorted(names) if n.endswith(FORMAT_EXTS))
    return files


def check_format(source):
    clang_format = tool("clang-format")
    files = format_files(source)
    t0 = time.monotonic()
    bad = []
    for i in range(0, len(files), 50):
        batch = files[i:i + 50]
        r = subprocess.run([clang_format, "--dry-run", "--Werror", "--style=file", *batch],
                           capture_output=True, text=True, cwd=source)
        if r.returncode != 0:
            if not bad:  # the first batch's findings in full; then the file names
                sys.stdout.write(r.stderr[:20000])
            bad.extend(sorted({m for m in re.findall(r"^(\S+?):\d+:\d+: error", r.stderr, re.M)}))
    rel = [os.path.relpath(f, source) for f in bad]
    print(f"clang-format: {len(files)} files under {', '.join(FORMAT_DIRS)} checked in "
          f"{time.monotonic() - t0:.1f} s; {len(rel)} not formatted")
    if rel:
        print("not formatted (clang-format -i FILE):\n  " + "\n  ".join(rel))
        return 1
    return 0


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def depfile_of(entry):
    """The compiler's dependency file for a compile_commands.json entry (-o OBJ -> OBJ.d)."""
    m = re.search(r"(?:^|\s)-o\s+(\S+)", entry.get("command", ""))
    if not m:
        return None
    return os.path.join(entry["directory"], m.group(1) + ".d")


def tidy_key(entry, path, version, config):
    """A hash of what a file's clang-tidy result depends on, or None when unknown (no depfile:
    not compiled yet)."""
    dep = depfile_of(entry)
    if not dep or not os.path.exists(dep):
        return None
    with open(dep) as f:
        text = f.read().replace("\\\n", " ")
    inputs = sorted(set(text.split(":", 1)[1].split())) if ":" in text else []
    h = hashlib.sha256()
    for part in (version, config, entry["command"], path):
        h.update(part.encode() + b"\0")
    for name in [path, *inputs]:
        full = os.path.join(entry["directory"], name)
        try:
            with open(full, "rb") as f:
                h.update(name.encode() + b"\0" + hashlib.sha256(f.read()).digest())
        except OSError:
            return None
    return h.hexdigest()


PCH_FLAGS = re.compile(r"\s(?:-include\s+\S*cmake_pch\.hxx|-Winvalid-pch)(?=\s)")


def without_gcc_pch(entries, build):
    """The directory of a compilation database for clang-tidy: BUILD's, or, when targets use
    precompiled headers, a copy without them (clang would take gcc's cmake_pch.hxx.gch for a
    clang PCH and stop; every source includes what it uses anyway)."""
    if not any("cmake_pch" in e.get("command", "") for e in entries):
        return build
    out = os.path.join(build, "lint-cache", "tidy-db")
    os.makedirs(out, exist_ok=True)
    cleaned = [{**e, "command": PCH_FLAGS.sub("", e["command"])} if "command" in e else e
               for e in entries if not e["file"].endswith("cmake_pch.hxx.cxx")]
    with open(os.path.join(out, "compile_commands.json"), "w") as f:
        json.dump(cleaned, f, indent=1)
    return out


def check_tidy(source, build):
    clang_tidy = tool("clang-tidy")
    runner = shutil.which(f"run-clang-tidy-{TOOL_MAJOR}") or shutil.which("run-clang-tidy")
    if not runner:
        print("skipped: run-clang-tidy is not installed (Debian's clang-tidy package has it)")
        return EXIT_SKIP
    db = os.path.join(build, "compile_commands.json")
    if not os.path.exists(db):
        print(f"FAIL: no {db} (CMAKE_EXPORT_COMPILE_COMMANDS is on in CMakeLists.txt)")
        return 1
    with open(db) as f:
        entries = json.load(f)
    source = os.path.realpath(source)
    prefixes = tuple(os.path.join(source, d) + os.sep for d in TIDY_DIRS)
    by_file = {}
    for e in entries:
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if path.startswith(prefixes) and path.endswith(".cpp"):
            by_file[path] = e
    if not by_file:
        print(f"FAIL: no C++ file of {', '.join(TIDY_DIRS)} in {db}")
        return 1
    db_dir = without_gcc_pch(entries, build)
    version = subprocess.run([clang_tidy, "--version"], capture_output=True, text=True).stdout
    with open(os.path.join(source, ".clang-tidy"), "rb") as f:
        config = f.read().decode()
    cache = os.path.join(build, "lint-cache", "clang-tidy")
    os.makedirs(cache, exist_ok=True)
    keys = {p: tidy_key(e, p, version, config) for p, e in by_file.items()}
    todo = sorted(p for p, k in keys.items()
                  if k is None or not os.path.exists(os.path.join(cache, k)))
    jobs = str(os.cpu_count() or 1)
    t0 = time.monotonic()
    r = None
    if todo:
        # run-clang-tidy takes regexes: each file's path, anchored.
        r = subprocess.run([runner, "-clang-tidy-binary", clang_tidy, "-p", db_dir, "-j", jobs,
                            "-quiet", *("^" + re.escape(f) + "$" for f in todo)],
                           capture_output=True, text=True, cwd=source)
    elapsed = time.monotonic() - t0
    out = ANSI.sub("", r.stdout) if r else ""
    findings = [l for l in out.splitlines() if re.search(r": (error|warning): ", l)]
    # run-clang-tidy prints each file's command line, then all that file's output.
    failed, current = set(), None
    for line in out.splitlines():
        if re.match(r"^\S*clang-tidy\S* .* -p=", line):
            current = line.split()[-1]
            continue
        print(line)
        if re.search(r": (error|warning): ", line) and current:
            failed.add(current)
    if r is not None and r.returncode != 0 and not findings:
        print(ANSI.sub("", r.stderr)[-5000:])
    ok = r is None or (r.returncode == 0 and not findings)
    for p in todo:  # remember the files that passed (a finding in a header fails its includers)
        if keys[p] and p not in failed and (ok or findings):
            open(os.path.join(cache, keys[p]), "w").close()
    print(f"clang-tidy: {len(by_file)} files of {', '.join(TIDY_DIRS)}: {len(todo)} checked with "
          f"{jobs} jobs in {elapsed:.1f} s, {len(by_file) - len(todo)} unchanged since they "
          f"passed; {len(findings)} findings")
    return 0 if ok else 1


def main(argv):
    if len(argv) >= 2 and argv[0] == "format":
        return check_format(argv[1])
    if len(argv) >= 3 and argv[0] == "tidy":
        return check_tidy(argv[1], argv[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

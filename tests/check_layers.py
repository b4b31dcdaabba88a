#!/usr/bin/env python3
"""The include graph follows the pipeline: a stage includes only itself and stages below it.

    util -> platform -> events -> counters -> probes -> stream -> report -> run -> cli

Each stage is a CMake library that links only the one below it, so a call that reaches up
fails to link; this test catches the include itself (an inline function or a type from above
would link fine). BPF skeletons (*.skel.h) belong to the stages that load BPF objects, and the
shared BPF headers (bpf/*.h) to those and to the stream that decodes their records.
Run by ctest (label unit); prints every violation as FILE: includes HEADER (stage rank).
"""
import pathlib
import re
import sys

STAGES = ["util", "platform", "events", "counters", "probes", "stream", "report", "run", "cli"]
SKELETON_STAGES = {"platform", "probes"}
BPF_HEADER_STAGES = {"probes", "stream"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stage_of(path, root):
    rel = path.relative_to(root).parts
    if rel[0] == "src" and len(rel) > 2:
        return rel[1]
    if rel[:2] == ("include", "pmcprof") and len(rel) > 3:
        return rel[2]
    return None


def violations(root):
    out = []
    files = sorted(list((root / "src").rglob("*.cpp")) + list((root / "include").rglob("*.hpp")))
    for path in files:
        stage = stage_of(path, root)
        if stage is None:
            continue  # src/main.cpp sits on top of everything
        if stage not in STAGES:
            out.append(f"{path}: folder '{stage}' is not a pipeline stage {STAGES}")
            continue
        rank = STAGES.index(stage)
        for header in INCLUDE.findall(path.read_text()):
            parts = header.split("/")
            if parts[0] == "pmcprof" and len(parts) > 2:
                dep = parts[1]
                if dep not in STAGES:
                    out.append(f"{path}: includes {header}: '{dep}' is not a stage")
                elif STAGES.index(dep) > rank:
                    out.append(f"{path} ({stage}) includes {header} ({dep}): points up the pipeline")
            elif header.endswith(".skel.h") and stage not in SKELETON_STAGES:
                out.append(f"{path} ({stage}) includes the BPF skeleton {header}: only "
                           f"{sorted(SKELETON_STAGES)} load BPF objects")
            elif header.endswith(".h") and len(parts) == 1 and not header.endswith(".skel.h") \
                    and stage not in BPF_HEADER_STAGES and (root / "bpf" / header).exists():
                out.append(f"{path} ({stage}) includes the BPF header {header}: only "
                           f"{sorted(BPF_HEADER_STAGES)} see the kernel's data layout")
    return out


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    found = violations(root.resolve())
    for v in found:
        print(v)
    print(f"{len(found)} include(s) against the pipeline order")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

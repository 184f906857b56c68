#!/usr/bin/env python3
"""Grades fixtures on the simulator at a fixed seed and compares the reports with stored ones.

The simulator is deterministic at a fixed seed: a change to it that is meant to keep behaviour
(a refactor, a speed-up) must leave these outputs byte for byte as they were.

  compare.py GRADER SOURCE_DIR            compare with tests/stored_outputs/*.json|*.txt
  compare.py GRADER SOURCE_DIR --write    regenerate them, after a change meant to alter them
  compare.py GRADER SOURCE_DIR --all --write OUT_DIR   every sim fixture, into OUT_DIR

Fields that vary from run to run (timings) or name the machine are removed before comparing.
Exit 0: every output as stored; 1: some differ (each diff is printed); 77 (skipped): the stored
outputs came from another NVRTC version, whose PTX may differ.
"""
import argparse
import difflib
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

# A handful that together reach every opcode family the exercises' kernels use, both exercises,
# a race, a fault, an unsupported instruction, the float paths (.ftz) and atomics.
REPRESENTATIVE = [
    "submissions/correct",
    "submissions/kernel_faults",
    "padding/missing_barrier",
    "padding/correct_swizzled",
    "sim_fidelity/ftz_result_sniffing",
    "sim_fidelity/atomic_or_column_read",
    "hostile/unsupported_register_wrong_kernel",
    "hostile/forged_file_name_in_race",
]
EXPLAIN = [("explain_example", "student/example", "1,2,3,8,16,33")]
# Timings vary from run to run; the rest of these name the machine or the build, not the grade.
VARYING = {"wall_seconds", "stage_seconds", "gpu_held_from", "gpu_held_until", "confinement",
           "grader_version", "nvrtc"}
# NVRTC's version decides the PTX the simulator runs: outputs stored with another are not compared.
TOOLKIT_FILE = "nvrtc_version.txt"


def exercise_of(folder):
    expected = folder / "expected.yaml"
    if expected.exists():
        m = re.search(r"^exercise:\s*(\S+)", expected.read_text(), re.M)
        if m:
            return m.group(1)
    return None


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def nvrtc_version(grader, source):
    """The NVRTC version the grader reports, from grading the first representative fixture."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "report.json"
        subprocess.run([grader, "grade", str(pathlib.Path("tests/fixtures") / REPRESENTATIVE[0]),
                        "--backend", "sim", "--seed", "3", "--format", "json", "--output",
                        str(out), "-q"], cwd=source, capture_output=True)
        return json.loads(out.read_text())["environment"]["nvrtc"] + "\n"


def grade(grader, source, rel):
    folder = source / "tests" / "fixtures" / rel
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "report.json"
        cmd = [grader, "grade", str(pathlib.Path("tests/fixtures") / rel), "--backend", "sim",
               "--seed", "3", "--format", "json", "--output", str(out), "-q"]
        exercise = exercise_of(folder)
        if exercise:
            cmd += ["--exercise", exercise]
        proc = subprocess.run(cmd, cwd=source, capture_output=True, text=True)
        report = strip(json.loads(out.read_text())) if out.exists() else None
    text = json.dumps({"exit_code": proc.returncode, "report": report}, indent=1,
                      sort_keys=True, ensure_ascii=True)
    return text + "\n"


def explain(grader, source, submission, strides):
    proc = subprocess.run([grader, "explain", submission, "--strides", strides], cwd=source,
                          capture_output=True, text=True)
    return "exit %d\n%s%s" % (proc.returncode, proc.stdout, proc.stderr)


def outputs(grader, source, fixtures):
    for rel in fixtures:
        yield rel.replace("/", "__") + ".json", lambda rel=rel: grade(grader, source, rel)
    for name, submission, strides in EXPLAIN:
        yield name + ".txt", lambda s=submission, t=strides: explain(grader, source, s, t)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("grader")
    parser.add_argument("source")
    parser.add_argument("--write", nargs="?", const="", default=None,
                        help="write instead of comparing (into OUT_DIR where given)")
    parser.add_argument("--all", action="store_true", help="every fixture the simulator grades")
    args = parser.parse_args()
    grader = os.path.abspath(args.grader)
    source = pathlib.Path(args.source).resolve()
    fixtures = REPRESENTATIVE
    if args.all:
        root = source / "tests" / "fixtures"
        fixtures = sorted(str(p.parent.relative_to(root)) for group in
                          ("submissions", "hostile", "sim_fidelity", "padding")
                          for p in (root / group).glob("*/expected.yaml"))
    stored = source / "tests" / "stored_outputs"
    if args.write is not None:
        target = pathlib.Path(args.write) if args.write else stored
        target.mkdir(parents=True, exist_ok=True)
        for name, make in outputs(grader, source, fixtures):
            (target / name).write_text(make())
        (target / TOOLKIT_FILE).write_text(nvrtc_version(grader, source))
        return 0
    stored_nvrtc = (stored / TOOLKIT_FILE).read_text()
    nvrtc = nvrtc_version(grader, source)
    if nvrtc != stored_nvrtc:
        print("skipped: the outputs were stored with NVRTC %s, this grader has NVRTC %s"
              % (stored_nvrtc.strip(), nvrtc.strip()))
        return 77
    failed = 0
    for name, make in outputs(grader, source, fixtures):
        want = (stored / name).read_text() if (stored / name).exists() else ""
        got = make()
        if got != want:
            failed += 1
            print("differs: %s" % name)
            sys.stdout.writelines(list(difflib.unified_diff(
                want.splitlines(True), got.splitlines(True), "stored", "now"))[:60])
    print("%d of %d outputs differ" % (failed, len(fixtures) + len(EXPLAIN)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What each slip a student makes in the starter kit's example costs: a table of the verdict, the
score and the diagnosis of each variant of student/example, graded by the given grader.

Each variant changes one thing of the filled-in example (a decimal comma, an 'x' after a ratio, a
blank sentence, a wrong prediction, the README's placeholder id, a misnamed file); the example
itself is the first row. Issue 33: a slip costs the answers' own points, never the kernel's.

Usage: scripts/slips.py GRADER [GRADE_ARGS...]     e.g. scripts/slips.py build/harness/cli/grader
       --backend sim --seed 3. Prints one row a slip and, under the table, each report's first
two lines. Exit 0 when every grade produced a report.
"""
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "student" / "example"


def edit_answers(pattern, replacement):
    def apply(folder):
        answers = folder / "submission.yaml"
        text = answers.read_text()
        changed = re.sub(pattern, replacement, text, count=1, flags=re.S)
        assert changed != text, pattern
        answers.write_text(changed)
    return apply


def rename(old, new):
    def apply(folder):
        (folder / old).rename(folder / new)
    return apply


SLIPS = [
    ("the example as it is", None),
    ("blank sentence", edit_answers(r"sentence: >-.*", 'sentence: ""\n')),
    ("decimal comma (7,83)", edit_answers(r"measured_ratio: 7\.83", "measured_ratio: 7,83")),
    ("decimal comma, block style", edit_answers(
        r"  - \{ stride: 8, predicted_degree: 8, measured_ratio: 7\.83 \}",
        "  - stride: 8\n    predicted_degree: 8\n    measured_ratio: 7,83")),
    ("unit (7.83x)", edit_answers(r"measured_ratio: 7\.83", "measured_ratio: 7.83x")),
    ("unit (7.83 x)", edit_answers(r"measured_ratio: 7\.83", "measured_ratio: 7.83 x")),
    ("wrong prediction (8 for 4)", edit_answers(r"predicted_degree: 8,", "predicted_degree: 4,")),
    ('placeholder id ("your-id")', edit_answers(r'"example-student"', '"your-id"')),
    ("Probe.cu", rename("probe.cu", "Probe.cu")),
    ("probe.cu.txt", rename("probe.cu", "probe.cu.txt")),
    ("submission.yml", rename("submission.yaml", "submission.yml")),
]


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    grader, grade_args = sys.argv[1], sys.argv[2:]
    rows, firsts, failures = [], [], 0
    with tempfile.TemporaryDirectory(prefix="slips-") as scratch:
        for name, apply in SLIPS:
            folder = pathlib.Path(scratch) / re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
            shutil.copytree(EXAMPLE, folder)
            if apply:
                apply(folder)
            report_file = folder.parent / (folder.name + ".json")
            subprocess.run([grader, "grade", str(folder), *grade_args, "--format", "json",
                            "--output", str(report_file), "--quiet"], capture_output=True)
            text = subprocess.run([grader, "grade", str(folder), *grade_args],
                                  capture_output=True, text=True).stdout
            if not report_file.exists():
                failures += 1
                rows.append((name, "no report", "", ""))
                continue
            report = json.loads(report_file.read_text())
            diagnosis = report.get("diagnosis") or {}
            rows.append((name, report["verdict"],
                         f"{report['score']:g}/{report['max_score']:g}",
                         diagnosis.get("cause", "-")))
            firsts.append((name, text.splitlines()[:3]))
    widths = [max(len(str(row[i])) for row in rows + [("slip", "verdict", "score", "cause")])
              for i in range(4)]
    for row in [("slip", "verdict", "score", "cause")] + rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
    for name, lines in firsts:
        print(f"\n{name}:")
        for line in lines:
            print(f"  {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

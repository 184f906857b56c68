#!/usr/bin/env python3
"""The figures of an LTI run with Moodle (scripts/moodle/lti-moodle.sh OUT): from OUT/students.json
(what each student's browser saw) and OUT/grades.json (what Moodle's database holds), a Markdown
summary: how many launched, were graded, and whose score Moodle holds and showed; the seconds from
opening the activity to the tool's page, and from the attempt's grade to the score in Moodle (as
its database stamps it, to the second, and as the student's gradebook page showed it)."""
import json
import sqlite3
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
students = json.loads((out / "students.json").read_text()) if (out / "students.json").exists() else []
grades = json.loads((out / "grades.json").read_text())
run = json.loads((out / "moodle-run.json").read_text())


def spread(values):
    if not values:
        return "none measured"
    values = sorted(values)
    return (f"median {statistics.median(values):.2f} s, min {values[0]:.2f} s, "
            f"max {values[-1]:.2f} s (n={len(values)})")


launch = [s["launch_seconds"] for s in students if "launch_seconds" in s]
graded = [s for s in students if "graded_at" in s]
stored, seen, lost = [], [], []
for s in graded:
    grade = grades.get(s["student"], {}).get("Bank conflicts (Part 1)")
    if grade is None or abs(grade["finalgrade"] - s["score"]) > 1e-6:
        lost.append(s["student"])
        continue
    stored.append(grade["timemodified"] - s["graded_at"])
    if "gradebook_seen_at" in s:
        seen.append(s["gradebook_seen_at"] - s["graded_at"])

# The tool's outbox: when Moodle accepted each score (its answer to the POST), and after how many
# tries, beside when the attempt was graded.
outbox = []
state = out / "work" / "state" / "state.sqlite"
if state.exists():
    with sqlite3.connect(f"file:{state}?mode=ro", uri=True) as db:
        outbox = db.execute("SELECT posted_at - graded_at, tries, state FROM lti_scores").fetchall()
accepted = [row[0] for row in outbox if row[2] == "posted"]
retried = sum(1 for row in outbox if row[1] > 1)

print(f"- students in the course: {len(run['students'])}; launched from Moodle: {len(launch)}; "
      f"graded: {len(graded)}; score in Moodle's gradebook (database): {len(stored)}; "
      f"seen on the student's gradebook page: {len(seen)}; lost: {len(lost)} {' '.join(lost)}")
print(f"- opening the activity to the tool's page (Moodle's launch, the OIDC login, the id_token "
      f"checked): {spread(launch)}")
print(f"- graded attempt to the score accepted by Moodle's AGS endpoint (the tool's outbox: "
      f"posted_at - graded_at): {spread(accepted)}; scores posted more than once: {retried}")
print(f"- graded attempt to Moodle's grade_grades.timemodified (whole seconds, so within a "
      f"second either way): {spread(stored)}")
print(f"- graded attempt to the score on the student's gradebook page (reloaded until shown): "
      f"{spread(seen)}")
print()
print("| student | kit | launch (s) | verdict | score | Moodle's grade | graded to gradebook page (s) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for s in students:
    grade = grades.get(s["student"], {}).get("Bank conflicts (Part 1)", {})
    shown = (f"{s['gradebook_seen_at'] - s['graded_at']:.1f}" if "gradebook_seen_at" in s and "graded_at" in s
             else "not seen")
    print(f"| {s['student']} | {s['kit']} | {s.get('launch_seconds', 0):.2f} | {s.get('verdict', '')} | "
          f"{s.get('score', '')} | {grade.get('finalgrade', 'none')} | {shown} |")

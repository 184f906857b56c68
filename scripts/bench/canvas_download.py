#!/usr/bin/env python3
"""Issue 41's goal: a Canvas course of 300 students through the documented Canvas path.

Usage: canvas_download.py GRADER OUT [--size 300] [--seed 1] [--jobs N] [--sample 20]

Makes, from the class make_class.py makes of the fixtures (Part 1 and Part 2), what Canvas gives
an instructor of that course: each assignment's submissions download as Canvas names its files
(canvas-lms lib/content_zipper.rb, ContentZipper#get_filename and #add_upload_submission), and
the course's gradebook export with both assignments' columns (lib/gradebook_exporter.rb: the
Manual Posting and Points Possible rows, a Test Student), the cells holding last year's 14.00.
The students hand in as students do: files, a zip of them (flat, or a zipped folder with what
macOS adds), files handed in again (Canvas renames probe.cu to probe-1.cu), an earlier upload
beside the later one, a text entry; a tenth are marked late; one in twenty has a name ending in
"_<digits>", and one is named after a classmate's Canvas id.

Then runs docs/canvas.md's commands as an instructor types them, each timed:
    grader tokens issue export.csv ...
    grader canvas unpack download-partN class-partN --roster export.csv
    the `grader batch` command unpack prints as next (with --backend sim)
    grader canvas grades run-partN --roster export.csv -o import-partN.csv
and checks every student's score in each import against the grade of their work graded alone
(`grader grade` of the fixture kind they handed in, once per kind; and --sample students' own
folders graded alone as they were handed in), in the right column. Writes OUT/transcript.txt (the
commands and their output) and OUT/summary.json; exits 1 where a student's score is not the one
graded alone, or lands in another column.
"""
import argparse
import csv
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PART_TITLES = {"part1": "Day 15: shared memory bank conflicts",
               "part2": "Day 15, Part 2: a conflict-free transpose tile"}
PART_IDS = {"part1": "77001", "part2": "77002"}
SOURCE = {"part1": "probe.cu", "part2": "transpose.cu"}
FIRST = ["Jane", "John", "Ana", "Minho", "Pat", "Wei", "Priya", "Olu", "Sofia", "Liam", "Zoë",
         "Élodie", "Mateo", "Aisha", "Noah", "Yuki", "Chen", "Fatima", "Lars", "Ines"]
LAST = ["Smith", "Doe", "García", "Lee", "O'Connor", "Nguyen", "Patel", "Okafor", "Rossi",
        "Murphy", "Müller", "Dubois", "Silva", "Khan", "Brown", "Sato", "Wang", "Haddad", "Berg",
        "Costa"]


def canvas_name(sortable):
    """ContentZipper#sanitize_user_name then #sanitize_file_name, as Ruby does them for these
    names: "_<digits>_" made "<digits>", lower case, every non-[[:word:]] character removed."""
    name = re.sub(r"_(\d+)_", r"\1", sortable).lower()
    return "".join(c for c in name if c.isalnum() or c == "_")


def zip_bytes(files, folder=None, mac=False):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            archive.writestr(f"{folder}/{name}" if folder else name, data)
        if mac:
            archive.writestr(f"__MACOSX/{folder or '.'}/._{files[0][0]}", b"\0\5\26\7")
    return out.getvalue()


def run(command, transcript, env=None):
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - started
    shown = " ".join(f"'{part}'" if " " in part else part for part in command)
    transcript.append(f"$ {shown}\n{done.stdout}{done.stderr}[exit {done.returncode}, "
                      f"{seconds:.1f} s]\n")
    print(f"canvas_download: {shown}: exit {done.returncode} in {seconds:.1f} s", flush=True)
    return done, seconds


def make_roster(size, rng):
    students = []
    ids = rng.sample(range(100000, 999999), size)
    for i in range(size):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        if i % 20 == 7:
            first += f"_{rng.randint(2, 9)}"  # a name Canvas writes ending in _<digits>
        students.append({"id": str(ids[i]), "sortable": f"{last}, {first}",
                         "login": f"s{i:03d}", "sis": f"S{i:04d}",
                         "section": f"GPU 101 Section {1 + i % 2}"})
    # One student named after a classmate's Canvas id.
    students[11]["sortable"] = f"Jane_{students[12]['id']}"
    return students


def write_export(students, path):
    with open(path, "w", encoding="utf-8", newline="") as f:
        out = csv.writer(f, lineterminator="\r\n")
        columns = [f"{PART_TITLES[p]} ({PART_IDS[p]})" for p in ("part1", "part2")]
        out.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + columns +
                     ["Current Score", "Final Score"])
        out.writerow(["", "", "", "", "", "Manual Posting", "", "", ""])
        out.writerow(["    Points Possible", "", "", "", "", "15.00", "15.00", "(read only)",
                      "(read only)"])
        for s in students:
            out.writerow([s["sortable"], s["id"], s["sis"], s["login"], s["section"], "14.00",
                          "14.00", "93.33", "93.33"])
        out.writerow(["Student, Test", "999999", "", "", "GPU 101 Section 1", "", "", "", ""])


def make_download(part, class_dir, students, download, rng, attachment):
    """The part's download: each student's class folder as Canvas would hand it to us."""
    os.makedirs(download)
    folders = sorted(d for d in os.listdir(class_dir)
                     if os.path.isdir(os.path.join(class_dir, d)))
    plan = {}
    source = SOURCE[part]
    for student, folder in zip(students, folders):
        kind = folder.split("-", 1)[1]
        path = os.path.join(class_dir, folder)
        files = [(n, open(os.path.join(path, n), "rb").read()) for n in sorted(os.listdir(path))]
        late = rng.random() < 0.1
        prefix = canvas_name(student["sortable"]) + ("_LATE" if late else "") + "_" + student["id"]
        how = "files"
        draw = rng.random()
        small = sum(len(b) for _, b in files) < 1 << 20
        if not files:
            how = "nothing"
        elif draw < 0.02:
            how = "text entry"
        elif draw < 0.17 and small:
            how = "zip"
        elif draw < 0.22 and any(n == source for n, _ in files):
            how = "handed in again"
        elif draw < 0.25 and any(n == source for n, _ in files):
            how = "an earlier upload beside"
        uploads = []
        if how == "text entry":
            with open(os.path.join(download, f"{prefix}_text.html"), "w", encoding="utf-8") as f:
                f.write("<html><body><p>My kernel is attached in my notes.</p></body></html>\n")
        elif how == "zip":
            flat = rng.random() < 0.5
            uploads.append(("Day15 kit.zip" if rng.random() < 0.3 else "kit.zip",
                            zip_bytes(files, None if flat else "day15", mac=not flat)))
        elif how == "handed in again":
            uploads += [(n.replace(".", "-1.", 1) if n == source else n, b) for n, b in files]
        else:
            if how == "an earlier upload beside":
                uploads.append((source, b"// an earlier upload\n"))
            uploads += files
        for name, data in uploads:
            attachment[0] += rng.randint(1, 9)
            with open(os.path.join(download, f"{prefix}_{attachment[0]}_{name}"), "wb") as f:
                f.write(data)
        plan[student["id"]] = {"folder": folder, "kind": kind, "how": how, "late": late,
                               "name": student["sortable"]}
    return plan


def import_scores(path, column):
    with open(path, encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    if column not in header:
        return None, header
    at = header.index(column)
    # Scores are out of the column's points possible (the exercise's points: 15 in Part 1, 11 in
    # Part 2); they are compared as fractions of it.
    points = float(rows[1][at])
    return {row[1]: float(row[at]) / points for row in rows[2:]}, header


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grader")
    parser.add_argument("out")
    parser.add_argument("--size", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=0, help="batch --jobs (default: batch's)")
    parser.add_argument("--sample", type=int, default=20,
                        help="students per part also graded alone from their own folder")
    args = parser.parse_args()
    grader = os.path.abspath(args.grader)
    out = os.path.abspath(args.out)
    if os.path.exists(out) and os.listdir(out):
        sys.exit(f"canvas_download: {out} exists and is not empty")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(args.seed)
    transcript = []
    for part, exercise in (("part1", "probe"), ("part2", "padding")):
        subprocess.run([sys.executable, os.path.join(HERE, "make_class.py"),
                        os.path.join(out, "fixtures", part), "--size", str(args.size),
                        "--seed", str(args.seed), "--exercise", exercise], check=True)
    students = make_roster(args.size, rng)
    export = os.path.join(out, "export.csv")
    write_export(students, export)
    attachment = [9000000]
    plans = {part: make_download(part, os.path.join(out, "fixtures", part), students,
                                 os.path.join(out, f"download-{part}"), rng, attachment)
             for part in ("part1", "part2")}
    with open(os.path.join(out, "plan.json"), "w", encoding="utf-8") as f:
        json.dump(plans, f, indent=1, ensure_ascii=False)

    timings = {}
    tokens, timings["tokens issue"] = run(
        [grader, "tokens", "issue", export, "--state", os.path.join(out, "serve"), "-o",
         os.path.join(out, "tokens.csv")], transcript)
    problems = []
    if tokens.returncode != 0:
        problems.append("tokens issue refused the gradebook export")
    summary = {"size": args.size, "parts": {}}
    for part in ("part1", "part2"):
        class_dir = os.path.join(out, f"class-{part}")
        run_dir = os.path.join(out, f"run-{part}")
        unpack, timings[f"{part} unpack"] = run(
            [grader, "canvas", "unpack", os.path.join(out, f"download-{part}"), class_dir,
             "--roster", export], transcript)
        suggested = re.search(r"^next: grader batch (.*) -o RUN(.*)$", unpack.stdout, re.M)
        batch = [grader, "batch", class_dir, "-o", run_dir, "--backend", "sim"]
        if suggested and suggested.group(2).strip():
            batch += suggested.group(2).split()
        if args.jobs:
            batch += ["--jobs", str(args.jobs)]
        graded, timings[f"{part} batch"] = run(batch, transcript)
        import_file = os.path.join(out, f"import-{part}.csv")
        grades, timings[f"{part} grades"] = run(
            [grader, "canvas", "grades", run_dir, "--roster", export, "-o", import_file],
            transcript)
        column = f"{PART_TITLES[part]} ({PART_IDS[part]})"
        scores, header = import_scores(import_file, column) if os.path.exists(import_file) else (
            None, [])
        if scores is None:
            problems.append(f"{part}: the import has no column '{column}' (it has {header[5:]})")
            scores = {}
        # Each kind of work graded alone, once: `grader grade` of the fixture's class folder.
        fixtures = os.path.join(out, "fixtures", part)
        alone = {}
        plan = plans[part]
        exercise_flag = [] if part == "part1" else ["--exercise", "day15-padding"]

        def grade_alone(folder):
            report = os.path.join(out, "alone", part, os.path.basename(folder) + ".json")
            os.makedirs(os.path.dirname(report), exist_ok=True)
            subprocess.run([grader, "grade", folder, "--backend", "sim", "--format", "json",
                            "-o", report] + exercise_flag, capture_output=True)
            with open(report, encoding="utf-8") as f:
                graded = json.load(f)
            return graded["score"] / graded["max_score"] if graded["max_score"] else 0.0

        started = time.monotonic()
        for user, entry in plan.items():
            key = "text entry" if entry["how"] == "text entry" else entry["kind"]
            if key in alone or entry["how"] == "nothing":
                continue
            if key == "text entry":
                folder = os.path.join(out, "alone", part, "text-entry")
                os.makedirs(folder, exist_ok=True)
                open(os.path.join(folder, "text.html"), "w").write("<p>text</p>\n")
            else:
                folder = os.path.join(fixtures, entry["folder"])
            alone[key] = grade_alone(folder)
        mismatches = []
        for user, entry in plan.items():
            got = scores.get(user)
            if entry["how"] == "nothing":
                if got is not None:
                    mismatches.append(f"{entry['name']} ({user}) handed in nothing and has {got}")
                continue
            key = "text entry" if entry["how"] == "text entry" else entry["kind"]
            if got is None or abs(got - alone[key]) > 1e-4:
                mismatches.append(f"{entry['name']} ({user}, {entry['how']}, {entry['kind']}): "
                                  f"{got} of the points in the import, {alone[key]:.4f} "
                                  f"graded alone")
        # A sample graded alone from their own folder as handed in (unpacked or not).
        sample = rng.sample([u for u, e in plan.items() if e["how"] not in ("nothing",)],
                            min(args.sample, len(plan)))
        sampled = []
        for user in sample:
            folders = [d for d in os.listdir(class_dir) if d.endswith("_" + user)]
            if len(folders) != 1:
                mismatches.append(f"{user}: {len(folders)} folders in the class")
                continue
            own = grade_alone(os.path.join(class_dir, folders[0]))
            sampled.append(user)
            if scores.get(user) is None or abs(scores[user] - own) > 1e-4:
                mismatches.append(f"{plan[user]['name']} ({user}): {scores.get(user)} in the "
                                  f"import, {own:.4f} when their folder is graded alone")
        timings[f"{part} graded alone"] = time.monotonic() - started
        hows = {}
        for entry in plan.values():
            hows[entry["how"]] = hows.get(entry["how"], 0) + 1
        summary["parts"][part] = {
            "column": column, "students_in_import": len(scores), "handed_in": hows,
            "late": sum(1 for e in plan.values() if e["late"]),
            "names_ending_in_digits": sum(1 for e in plan.values()
                                          if re.search(r"_\d+$", canvas_name(e["name"]))),
            "kinds_graded_alone": len(alone), "sampled_alone": len(sampled),
            "mismatches": mismatches}
        problems += [f"{part}: {m}" for m in mismatches]
        print(f"canvas_download: {part}: {len(scores)} students in '{column}', "
              f"{len(mismatches)} differ from their grade alone", flush=True)
    summary["seconds"] = {k: round(v, 1) for k, v in timings.items()}
    summary["problems"] = problems
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, ensure_ascii=False)
    with open(os.path.join(out, "transcript.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(transcript))
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

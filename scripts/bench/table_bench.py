#!/usr/bin/env python3
"""The speed table of issue 19 in one run: each row measured with this grader and, side by side,
with the grader from before (a second build, e.g. .carry/before/bin/grader).

Rows (--rows gpu, sim or all):
  gpu: one Part 1 grade, wall, median of --runs (counters on, and with counters off);
       one Part 2 grade, median of --runs; the class of --class-size through `grader batch`
       (wall, submissions per minute, where the reports say the time went, verdicts against the
       same submissions graded alone).
  sim: one Part 1 and one Part 2 grade on the simulator (--backend sim, whole process, median of
       --sim-runs); the class through `grader batch --backend sim` (default jobs).
Timing quality, for each grader: the worst spread of a ratio across the Part 1 grades
((max-min)/median) and the verdict flips.

Grades of the variants are interleaved (one of each in turn), so that a drift of the machine
falls on all alike. Usage:
  table_bench.py GRADER [--before GRADER] [--rows gpu|sim|all] [--runs 20] [--sim-runs 7]
                 [--class-size 100] [--alone 12] [--timeout 5] [--out DIR]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def exercises_of(grader):
    """The exercises a grader reads as its own: an installed one's share/grader/exercises (the
    grader from before is installed so), else this tree's."""
    installed = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(grader))),
                             "share", "grader", "exercises")
    return installed if os.path.isdir(installed) else os.path.join(ROOT, "exercises")
GOALS = {
    "part1": "0.5 s", "part2": "0.8 s", "class": "25 s",
    "sim_part1": "0.4 s", "sim_class": "20 s",
}


def grade(grader, submission, extra, env, report):
    command = [grader, "grade", submission, "--format", "json", "--output", report,
               "--quiet"] + extra
    began = time.perf_counter()
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=dict(os.environ, **env))
    wall = time.perf_counter() - began
    try:
        with open(report) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = {"verdict": f"no report (exit {proc.returncode})", "rows": []}
    return wall, data


def grade_rows(variants, submission, extra, runs, work, tag, exercise=None):
    """Interleaved grades; per variant: walls, verdicts, ratios by (kernel, stride). `exercise`:
    an exercise's id, read from each grader's own exercises."""
    results = {v["label"]: {"walls": [], "verdicts": [], "ratios": {}, "stages": Counter()}
               for v in variants}
    for i in range(runs):
        line = f"{tag} {i + 1:2d}:"
        for n, v in enumerate(variants):
            report = os.path.join(work, f"{tag}-{n}-{i}.json")
            own = ["--exercise", os.path.join(exercises_of(v["grader"]), exercise)] if exercise else []
            wall, data = grade(v["grader"], submission, extra + own + v.get("extra", []), v["env"],
                               report)
            r = results[v["label"]]
            r["walls"].append(wall)
            r["verdicts"].append(data.get("verdict"))
            for stage, seconds in (data.get("stage_seconds") or {}).items():
                r["stages"][stage] += float(seconds or 0.0)
            for row in data.get("rows", []):
                if row.get("ratio") is not None and row.get("stride") not in (None, 1):
                    r["ratios"].setdefault((row["kernel"], row["stride"]), []).append(row["ratio"])
            line += f"  {v['label']} {wall:.3f} s {data.get('verdict')}"
        print(line, flush=True)
    return results


def worst_spread(ratios):
    worst, where = 0.0, None
    for key, values in ratios.items():
        if len(values) < 2:
            continue
        med = statistics.median(values)
        spread = (max(values) - min(values)) / med if med else 0.0
        if spread > worst:
            worst, where = spread, key
    return worst, where


def flips(verdicts):
    return sum(1 for v in verdicts if v != verdicts[0]) if verdicts else 0


def median(values):
    return statistics.median(values) if values else float("nan")


def stage_group(stage):
    if stage == "compile":
        return "compile"
    if stage.startswith("context creation"):
        return "context creation"
    if stage.startswith("run "):
        return "checks (run)"
    if stage in ("time", "count", "load", "answers"):
        return {"time": "timing", "count": "counting", "load": "load",
                "answers": "answers"}[stage]
    if stage == "wait for device":
        return "waiting for the device"
    return "other"


def run_class(grader, class_dir, out_dir, extra, env, timeout):
    shutil.rmtree(out_dir, ignore_errors=True)
    # Not --quiet: the last words name where each device server's time went.
    command = [grader, "batch", class_dir, "--output", out_dir,
               "--timeout", f"{timeout:g}"] + extra
    began = time.perf_counter()
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          env=dict(os.environ, **env))
    status = proc.returncode
    wall = time.perf_counter() - began
    # Where each GPU's time went, as the batch says of its device servers.
    servers = [line for line in proc.stdout.splitlines() if "device server:" in line]
    verdicts, groups = {}, Counter()
    for student in sorted(os.listdir(class_dir)):
        path = os.path.join(out_dir, student, "report.json")
        try:
            with open(path) as f:
                report = json.load(f)
        except (OSError, ValueError):
            continue
        verdicts[student] = report.get("verdict")
        for stage, seconds in (report.get("stage_seconds") or {}).items():
            groups[stage_group(stage)] += float(seconds or 0.0)
    return {"wall": wall, "status": status, "verdicts": verdicts, "groups": groups,
            "servers": servers}


def alone_agreement(grader, class_dir, verdicts, count, extra, env, timeout, work):
    """Grades `count` submissions alone (spanning the kinds make_class.py made), and returns
    (graded, disagreements)."""
    by_kind = {}
    for student in sorted(verdicts):
        kind = student.partition("-")[2] or student
        by_kind.setdefault(kind, []).append(student)
    order = sorted(by_kind, key=lambda k: (k == "never_ends", k))
    picked = []
    while len(picked) < count and any(by_kind[k] for k in order):
        for kind in order:
            if by_kind[kind] and len(picked) < count:
                picked.append(by_kind[kind].pop(0))
    different = []
    for student in picked:
        report = os.path.join(work, f"alone-{student}.json")
        _, data = grade(grader, os.path.join(class_dir, student),
                        ["--timeout", f"{timeout:g}"] + extra, env, report)
        if data.get("verdict") != verdicts[student]:
            different.append((student, verdicts[student], data.get("verdict")))
    return len(picked), different


def row(name, values, goal):
    cells = "".join(f" | {v:>22}" for v in values)
    print(f"| {name:<52}{cells} | {goal:>6} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("grader")
    parser.add_argument("--before", help="the grader from before this change")
    parser.add_argument("--rows", choices=["gpu", "sim", "all"], default="all")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sim-runs", type=int, default=7)
    parser.add_argument("--class-size", type=int, default=100)
    parser.add_argument("--alone", type=int, default=12)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--no-class-variants", action="store_true",
                        help="leave out the class with --own-contexts and with --jobs 2")
    parser.add_argument("--out", help="a folder for the first reports and the table")
    args = parser.parse_args()

    variants = [{"label": "now", "grader": os.path.abspath(args.grader), "env": {}}]
    if args.before:
        if os.access(args.before, os.X_OK):
            variants.append({"label": "before", "grader": os.path.abspath(args.before),
                             "env": {}})
        else:
            print(f"table_bench: no grader at {args.before}: the 'before' column stays empty")
    labels = [v["label"] for v in variants]
    work = tempfile.mkdtemp(prefix="table-bench-")
    table = []   # (name, {label: text}, goal)
    notes = []
    print(f"table_bench {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, {os.cpu_count()} CPUs")
    for v in variants:
        version = subprocess.run([v["grader"], "--version"], capture_output=True, text=True)
        print(f"  {v['label']}: {v['grader']}: {version.stdout.strip()}")

    def quality(label, results):
        r = results[label]
        worst, where = worst_spread(r["ratios"])
        return (f"{label}: worst ratio spread {100 * worst:.2f}%"
                + (f" ({where[0]} stride {where[1]})" if where else "")
                + f", verdicts {dict(Counter(r['verdicts']))}, flips {flips(r['verdicts'])}")

    if args.rows in ("gpu", "all"):
        part1_variants = variants + [{"label": "now, counters off", "grader": variants[0]["grader"],
                                      "env": {"GRADER_LIBCUPTI": "/nonexistent/libcupti.so"}}]
        p1 = grade_rows(part1_variants, os.path.join(ROOT, "student/example"), [], args.runs,
                        work, "part1")
        cells = {l: f"{median(p1[l]['walls']):.3f} s" for l in labels}
        cells["now"] += f" ({median(p1['now, counters off']['walls']):.3f} off)"
        table.append((f"one Part 1 grade, wall, median of {args.runs}", cells, GOALS["part1"]))
        for label in labels:
            notes.append("Part 1 " + quality(label, p1))
            stages = p1[label]["stages"]
            notes.append(f"Part 1 {label}: per grade, mean seconds by stage: " + ", ".join(
                f"{s} {t / args.runs:.3f}" for s, t in sorted(stages.items(), key=lambda x: -x[1])))
        p2 = grade_rows(variants, os.path.join(ROOT, "student/padding/example"), [],
                        args.runs, work, "part2", exercise="day15-padding")
        table.append((f"one Part 2 grade, wall, median of {args.runs}",
                       {l: f"{median(p2[l]['walls']):.3f} s" for l in labels}, GOALS["part2"]))
        for label in labels:
            notes.append("Part 2 " + quality(label, p2))
            stages = p2[label]["stages"]
            notes.append(f"Part 2 {label}: per grade, mean seconds by stage: " + ", ".join(
                f"{s} {t / args.runs:.3f}" for s, t in sorted(stages.items(), key=lambda x: -x[1])))

        if args.class_size > 0:  # --class-size 0: the grades alone only
            class_dir = os.path.join(work, "class")
            subprocess.run([sys.executable, os.path.join(HERE, "make_class.py"), class_dir,
                            "--size", str(args.class_size), "--seed", "1"],
                           stdout=subprocess.DEVNULL, check=True)
            cells = {}
            for v in variants:
                c = run_class(v["grader"], class_dir, os.path.join(work, f"class-{v['label']}"), [],
                              v["env"], args.timeout)
                graded = len(c["verdicts"])
                cells[v["label"]] = (f"{c['wall']:.1f} s ({graded / c['wall'] * 60:.1f}/min)"
                                     if c["wall"] > 0 else "-")
                notes.append(f"class {v['label']}: exit {c['status']}, {graded} reports, verdicts "
                             f"{dict(Counter(c['verdicts'].values()))}; summed over the reports: " +
                             ", ".join(f"{g} {s:.1f} s" for g, s in c["groups"].most_common()))
                notes.extend(f"class {v['label']}: {line}" for line in c["servers"])
                if v["label"] == "now":
                    now_verdicts = c["verdicts"]
                    n, different = alone_agreement(v["grader"], class_dir, c["verdicts"], args.alone,
                                                   [], v["env"], args.timeout, work)
                    notes.append(f"class now: {n} graded alone, {len(different)} verdicts different"
                                 + "".join(f"; {s}: batch {b}, alone {a}" for s, b, a in different))
            # This grader's class without its device servers (every grade opens the GPU and its
            # counters itself), and with the jobs of before: where the class's time went.
            class_variants = () if args.no_class_variants else (
                ("now, --own-contexts", ["--own-contexts"]), ("now, --jobs 2", ["--jobs", "2"]))
            for label, extra in class_variants:
                c = run_class(variants[0]["grader"], class_dir,
                              os.path.join(work, "class-" + extra[0].strip("-")), extra,
                              variants[0]["env"], args.timeout)
                same = sum(1 for s, v in c["verdicts"].items() if now_verdicts.get(s) == v)
                notes.append(f"class {label}: {c['wall']:.1f} s, exit {c['status']}, "
                             f"{len(c['verdicts'])} reports, {same} verdicts as in 'now'; summed "
                             "over the reports: " + ", ".join(
                                 f"{g} {s:.1f} s" for g, s in c["groups"].most_common()))
                notes.extend(f"class {label}: {line}" for line in c["servers"])
            table.append((f"the class of {args.class_size} through grader batch", cells,
                          GOALS["class"]))

    if args.rows in ("sim", "all"):
        sim = ["--backend", "sim"]
        s1 = grade_rows(variants, os.path.join(ROOT, "student/example"), sim, args.sim_runs,
                        work, "sim-part1")
        s2 = grade_rows(variants, os.path.join(ROOT, "student/padding/example"), sim,
                        args.sim_runs, work, "sim-part2", exercise="day15-padding")
        table.append((f"one Part 1 grade on the simulator, median of {args.sim_runs}",
                      {l: f"{median(s1[l]['walls']):.3f} s" for l in labels}, GOALS["sim_part1"]))
        table.append((f"one Part 2 grade on the simulator, median of {args.sim_runs}",
                      {l: f"{median(s2[l]['walls']):.3f} s" for l in labels}, ""))
        for label in labels:
            notes.append(f"simulator Part 1 {label}: verdicts "
                         f"{dict(Counter(s1[label]['verdicts']))}; per grade, mean seconds by stage: " + ", ".join(
                             f"{s} {t / args.sim_runs:.3f}" for s, t in
                             sorted(s1[label]["stages"].items(), key=lambda x: -x[1])))
        class_dir = os.path.join(work, "class")
        if not os.path.isdir(class_dir):
            subprocess.run([sys.executable, os.path.join(HERE, "make_class.py"), class_dir,
                            "--size", str(args.class_size), "--seed", "1"],
                           stdout=subprocess.DEVNULL, check=True)
        cells = {}
        for v in variants:
            c = run_class(v["grader"], class_dir, os.path.join(work, f"sim-class-{v['label']}"),
                          sim, v["env"], args.timeout)
            graded = len(c["verdicts"])
            cells[v["label"]] = f"{c['wall']:.1f} s ({graded} reports)"
            notes.append(f"simulator class {v['label']}: exit {c['status']}, verdicts "
                         f"{dict(Counter(c['verdicts'].values()))}; summed over the reports: " +
                         ", ".join(f"{g} {s:.1f} s" for g, s in c["groups"].most_common()))
        table.append((f"the class of {args.class_size} on the simulator (default jobs)", cells,
                      GOALS["sim_class"]))

    print()
    header = "| " + f"{'figure':<52}" + "".join(f" | {l:>22}" for l in labels) + " |   goal |"
    print(header)
    print("|" + "-" * (len(header) - 2) + "|")
    for name, cells, goal in table:
        row(name, [cells.get(l, "") for l in labels], goal)
    print()
    for note in notes:
        print(note)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Issue 39's figures in one run: the simulator's grades with the grader of before beside now.

Usage: engine_bench.py BEFORE_GRADER [AFTER_GRADER] [--out DIR] [--jobs 2] [--runs 5] [--seed 7]
                       [--class-runs 3] [--class-dir DIR] [--no-class]

On a larger machine, `taskset -c 0,1 engine_bench.py ...` runs it as on two cores: the after
grader gives the simulator the cores of its CPU affinity (a batch's grade its share of them).

BEFORE_GRADER is the grader of ac621a7 (scripts/bench/build-before.sh ac621a7 installs it as
.carry/before/bin/grader); AFTER_GRADER defaults to build/harness/cli/grader. Every grade is on
the simulator (--backend sim), so this runs on any machine; the figures are CPU time (user + sys
of the grader and its children), which a loaded machine inflates less than wall time.

1. A class of 100 made by make_class.py --failing 65 --missing-barriers 6 (or --class-dir's),
   graded by `grader batch --jobs N` with each grader in turn, CLASS_RUNS times: the median CPU
   seconds and wall seconds of the batch, the verdicts of the first (each against the other
   grader's and the class's expected.json), and the slowest student of each (the report's
   wall_seconds).
2. One Part 1 grade (student/example), one Part 2 grade (student/padding/example) and, with the
   class, the grade of its first student missing a barrier, RUNS times each with each grader in
   turn: the median CPU seconds and wall seconds. A grade alone runs the simulator's blocks on
   every core the process may use (the after grader; the before has one thread): run the bench
   under `taskset -c 0,1` to give it two cores on a larger machine, as on this one.
Each figure is the median of its runs, with the fastest and slowest beside it: on a VM whose
figures drift (the development machine's moved by tens of percent within minutes), the spread
says how far one run can be trusted, and the turns put a drift on both graders alike.
Each grader grades Part 2 with its own exercise folder (its share/grader/exercises where it has
one, as an installed grader does), so that the before column reads the exercise.yaml it knew.
Prints one table with the goals of issue 39 beside each figure; exits 1 where a verdict differs.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command):
    """(CPU seconds of the command and its children, wall seconds, exit status)."""
    cpu, began = children_cpu(), time.perf_counter()
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return children_cpu() - cpu, time.perf_counter() - began, proc.returncode, proc.stderr


def spread(values, digits):
    """The median of values, with the fastest and slowest run: '0.151 (0.144-0.188)'."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return (f"{statistics.median(values):.{digits}f} "
            f"({min(values):.{digits}f}-{max(values):.{digits}f})")


def ratio(after, before):
    return f"{statistics.median(after) / statistics.median(before):.2f}x"


def cpu_model():
    """The CPU's name as /proc/cpuinfo gives it: figures of two machines do not compare."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU unknown"


def exercises_of(grader):
    """The grader's own exercise folder: PREFIX/share/grader/exercises beside PREFIX/bin/grader,
    or the repository's."""
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(grader)))
    own = os.path.join(prefix, "share", "grader", "exercises")
    return own if os.path.isdir(own) else os.path.join(REPO, "exercises")


def verdicts(out_dir):
    found = {}
    for student in sorted(os.listdir(out_dir)):
        path = os.path.join(out_dir, student, "report.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                report = json.load(f)
            found[student] = (report.get("verdict"), report.get("wall_seconds", 0.0))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after", nargs="?", default=os.path.join(REPO, "build/harness/cli/grader"))
    parser.add_argument("--out", default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--class-runs", type=int, default=3)
    parser.add_argument("--class-dir", default=None)
    parser.add_argument("--no-class", action="store_true", help="only the two lone grades")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="engine-bench-")
    os.makedirs(out, exist_ok=True)
    graders = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    for label, grader in graders.items():
        version = subprocess.run([grader, "--version"], capture_output=True, text=True)
        print(f"{label}: {grader}: {version.stdout.strip()}")
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, {len(os.sched_getaffinity(0))} "
          f"usable here, load {os.getloadavg()[0]:.1f}; output in {out}")
    rows = []
    failed = False

    class_dir = args.class_dir
    if not args.no_class:
        if class_dir is None:
            class_dir = os.path.join(out, "class")
            subprocess.run([sys.executable, os.path.join(REPO, "scripts/bench/make_class.py"),
                            class_dir, "--size", "100", "--failing", "65",
                            "--missing-barriers", "6", "--seed", "1"], check=True)
        with open(os.path.join(class_dir, "expected.json"), encoding="utf-8") as f:
            expected = json.load(f)
        seen = {}
        cpu = {"before": [], "after": []}
        wall = {"before": [], "after": []}
        for run in range(args.class_runs):
            for label, grader in graders.items():  # in turn, so a drift falls on both
                out_dir = os.path.join(out, f"batch-{label}" + (f"-{run}" if run else ""))
                seconds, wall_seconds, status, err = timed(
                    [grader, "batch", class_dir, "--output", out_dir, "--jobs", str(args.jobs),
                     "--backend", "sim"])
                cpu[label].append(seconds)
                wall[label].append(wall_seconds)
                if run == 0:
                    seen[label] = verdicts(out_dir)
                print(f"batch with {label}: {seconds:.1f} CPU-s, {wall_seconds:.1f} s wall, "
                      f"exit {status}")
                if status not in (0, 1):
                    sys.exit(f"the batch with {label} did not grade (exit {status}): "
                             f"{err.strip()[-2000:]}")
        seen_b, seen_a = seen["before"], seen["after"]
        rows.append((f"class of 100: CPU seconds, median of {args.class_runs}",
                     spread(cpu["before"], 1), spread(cpu["after"], 1),
                     ratio(cpu["after"], cpu["before"]), "at most 0.5x"))
        rows.append((f"class of 100: wall seconds, median of {args.class_runs}",
                     spread(wall["before"], 1), spread(wall["after"], 1),
                     ratio(wall["after"], wall["before"]), ""))
        differ = sorted(s for s in seen_b if seen_a.get(s, (None,))[0] != seen_b[s][0])
        missing = sorted(set(expected) - set(seen_a))
        unexpected = sorted(s for s, v in expected.items()
                            if v != "any" and s in seen_a and seen_a[s][0] != v)
        rows.append(("class of 100: verdicts as before", f"{len(seen_b)} reports",
                     f"{len(seen_a) - len(differ)} of {len(seen_b)}",
                     "all kept" if not differ else f"{len(differ)} differ", "every verdict kept"))
        for student in differ:
            print(f"  verdict differs: {student}: before {seen_b[student][0]}, "
                  f"after {seen_a.get(student, ('missing',))[0]}")
        for student in unexpected:
            print(f"  not the expected verdict: {student}: {seen_a[student][0]}, "
                  f"expected {expected[student]}")
        failed = failed or bool(differ) or bool(missing)
        slow_b = max(seen_b.items(), key=lambda item: item[1][1])
        slow_a = max(seen_a.items(), key=lambda item: item[1][1])
        rows.append(("slowest student, wall seconds", f"{slow_b[1][1]:.2f} ({slow_b[0]})",
                     f"{slow_a[1][1]:.2f} ({slow_a[0]})", "", "within 1.5 s"))

    lone = [("Part 1 grade (student/example)", os.path.join(REPO, "student/example"),
             "day15-bank-conflicts", "at most 0.6x"),
            ("Part 2 grade (student/padding/example)",
             os.path.join(REPO, "student/padding/example"), "day15-padding", "at most 0.8x")]
    if class_dir is not None and os.path.isdir(class_dir):
        barrierless = sorted(s for s in os.listdir(class_dir) if s.endswith("missing_barrier"))
        if barrierless:
            lone.append((f"missing barrier alone ({barrierless[0]})",
                         os.path.join(class_dir, barrierless[0]), "day15-bank-conflicts",
                         "within 1.5 s wall"))
    for title, submission, exercise, goal in lone:
        cpu = {"before": [], "after": []}
        wall = {"before": [], "after": []}
        for _ in range(args.runs):
            for label, grader in graders.items():  # in turn, so a drift falls on both
                report = os.path.join(out, f"lone-{label}.json")
                seconds, wall_seconds, status, err = timed(
                    [grader, "grade", submission, "--exercise",
                     os.path.join(exercises_of(grader), exercise), "--backend", "sim", "--seed",
                     str(args.seed), "--format", "json", "--output", report, "--quiet"])
                if status not in (0, 1):
                    print(f"{label} {submission}: exit {status}: {err.strip()[-300:]}")
                    failed = True
                cpu[label].append(seconds)
                wall[label].append(wall_seconds)
        rows.append((f"{title}: CPU seconds, median of {args.runs}", spread(cpu["before"], 3),
                     spread(cpu["after"], 3), ratio(cpu["after"], cpu["before"]),
                     goal if goal.startswith("at most") else ""))
        rows.append((f"{title}: wall seconds, median of {args.runs}", spread(wall["before"], 3),
                     spread(wall["after"], 3), ratio(wall["after"], wall["before"]),
                     "" if goal.startswith("at most") else goal))

    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'figure':<{width}}  {'before':>28}  {'after':>28}  {'ratio':>8}  goal")
    for figure, before, after, quotient, goal in rows:
        print(f"{figure:<{width}}  {before:>28}  {after:>28}  {quotient:>8}  {goal}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

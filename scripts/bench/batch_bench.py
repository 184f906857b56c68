#!/usr/bin/env python3
"""Speed and agreement of `grader batch` on a class (made by make_class.py), on a GPU machine.

Usage: batch_bench.py GRADER CLASS_DIR OUT_DIR [--jobs N] [--timeout S] [--devices LIST]
                      [--alone K] [--reuse] [--exercise DIR] [--server-memory]

1. Runs `grader batch CLASS_DIR --output OUT_DIR [--jobs N] [--timeout S]` and times it:
   submissions per minute.
2. Sums every OUT_DIR/<student>/report.json's stage_seconds into compile, context creation,
   checks (the "run ..." stages), timing ("time"), waiting for the device, and other.
3. Counts the verdicts and compares each with CLASS_DIR/expected.json ("any" is skipped).
4. Grades K submissions (default 10, spanning the kinds in CLASS_DIR/kinds.json) alone with
   `grader grade ... --format json`, and checks each verdict equals the batch's.
Exits 0 when every report is there, every asserted verdict matches and every lone grade agrees;
1 otherwise. --reuse skips step 1 and reads an OUT_DIR that an earlier batch wrote. --exercise is
passed to batch and to grade (a Part 2 class: exercises/day15-padding).

With --server-memory the batch's device servers (`grader __device-server`, the batch's children)
have their resident memory sampled every 0.2 s through the class, beside the reports written so
far: a line each tenth report and where a server starts or stops, then per server process its
memory after the class's first report, at its last sample and at its peak (VmHWM), and the ratio
of the last to the first (issue 32's goal: within 1.5 times).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

CONTEXT_STAGE = "context creation (beside the compile)"


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def status_kib(pid, field):
    """A process's VmRSS or VmHWM in KiB; None where it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def device_servers_of(root_pid):
    """The pids of `grader __device-server` processes descended from root_pid."""
    children = defaultdict(list)
    servers = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children[int(fields[1])].append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    stack = [root_pid]
    while stack:
        pid = stack.pop()
        for child in children.get(pid, []):
            stack.append(child)
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    if b"__device-server" in f.read():
                        servers.append(child)
            except OSError:
                pass
    return servers


def run_sampled(command, out_dir):
    """Runs the batch, sampling its device servers' memory: (exit status, samples), each sample
    (seconds, reports written, {pid: (rss KiB, hwm KiB)})."""
    samples = []
    proc = subprocess.Popen(command)
    began = time.perf_counter()
    last = None
    while proc.poll() is None:
        reports = len(glob.glob(os.path.join(out_dir, "*", "report.json")))
        servers = {}
        for pid in device_servers_of(proc.pid):
            rss, hwm = status_kib(pid, "VmRSS"), status_kib(pid, "VmHWM")
            if rss is not None:
                servers[pid] = (rss, hwm or rss)
        at = time.perf_counter() - began
        samples.append((at, reports, servers))
        # A line each tenth report, and where a server starts or stops.
        shown = (reports // 10, sorted(servers))
        if shown != last:
            memory = ", ".join(f"server {pid} {rss / 1024:.0f} MiB"
                               for pid, (rss, _) in sorted(servers.items())) or "no server"
            print(f"memory: {at:7.1f} s  {reports:4d} reports  {memory}", flush=True)
            last = shown
        time.sleep(0.2)
    return proc.returncode, samples


def print_server_memory(samples):
    """Per server process: its memory after the class's first report, at the end, at its peak."""
    by_pid = defaultdict(list)
    for at, reports, servers in samples:
        for pid, (rss, hwm) in servers.items():
            by_pid[pid].append((at, reports, rss, hwm))
    if not by_pid:
        print("device servers' memory: no device server was seen (no GPU, or --own-contexts)")
        return
    print("device servers' resident memory (MiB):")
    for pid, rows in sorted(by_pid.items(), key=lambda item: item[1][0][0]):
        after_first = next((rss for _, reports, rss, _ in rows if reports >= 1), rows[0][2])
        first_reports, last_reports = rows[0][1], rows[-1][1]
        end, peak = rows[-1][2], max(hwm for *_, hwm in rows)
        print(f"  server {pid}: reports {first_reports}..{last_reports} while it ran; "
              f"after the first report {after_first / 1024:.0f}, at its last sample "
              f"{end / 1024:.0f}, peak {peak / 1024:.0f}; last / first = "
              f"{end / max(after_first, 1):.2f}")


def stage_group(stage):
    if stage == "compile":
        return "compile"
    if stage == CONTEXT_STAGE:
        return "context creation"
    if stage.startswith("run "):
        return "checks"
    if stage == "time":
        return "timing"
    if stage == "wait for device":
        return "waiting for the device"
    return "other"


def kind_of(student, kinds):
    if student in kinds:
        return kinds[student]
    # make_class.py names folders NNN-<kind>
    prefix, _, rest = student.partition("-")
    return rest if prefix.isdigit() and rest else student


def pick_alone(students, kinds, count):
    """Up to count students, one per kind in turn, so the sample spans the kinds. never_ends
    comes last: it costs the whole run limit."""
    by_kind = defaultdict(list)
    for student in sorted(students):
        by_kind[kind_of(student, kinds)].append(student)
    order = sorted(by_kind, key=lambda k: (k == "never_ends", k))
    picked = []
    while len(picked) < count and any(by_kind[k] for k in order):
        for kind in order:
            if by_kind[kind] and len(picked) < count:
                picked.append(by_kind[kind].pop(0))
    return picked


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grader")
    parser.add_argument("class_dir")
    parser.add_argument("out_dir")
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--timeout", type=float, help="seconds, passed to batch and to grade")
    parser.add_argument("--devices", help="passed to batch as --devices")
    parser.add_argument("--alone", type=int, default=10, metavar="K")
    parser.add_argument("--reuse", action="store_true",
                        help="do not run batch; read the reports already in OUT_DIR")
    parser.add_argument("--exercise", help="passed to batch and to grade as --exercise")
    parser.add_argument("--server-memory", action="store_true",
                        help="sample the device servers' resident memory through the class")
    args = parser.parse_args()

    grader = os.path.abspath(args.grader)
    students = sorted(e for e in os.listdir(args.class_dir)
                      if os.path.isdir(os.path.join(args.class_dir, e)))
    expected = read_json(os.path.join(args.class_dir, "expected.json")) or {}
    kinds = read_json(os.path.join(args.class_dir, "kinds.json")) or {}
    timeout_args = ["--timeout", f"{args.timeout:g}"] if args.timeout else []
    exercise_args = ["--exercise", os.path.abspath(args.exercise)] if args.exercise else []
    memory_samples = []

    # 1. The batch.
    batch_wall = None
    batch_status = None
    if not args.reuse:
        command = ([grader, "batch", args.class_dir, "--output", args.out_dir] + timeout_args
                   + exercise_args)
        if args.jobs:
            command += ["--jobs", str(args.jobs)]
        if args.devices:
            command += ["--devices", args.devices]
        print("batch_bench: " + " ".join(command), flush=True)
        began = time.perf_counter()
        if args.server_memory:
            batch_status, memory_samples = run_sampled(command, args.out_dir)
        else:
            batch_status = subprocess.run(command).returncode
        batch_wall = time.perf_counter() - began
        print(f"batch_bench: batch exited with status {batch_status} after {batch_wall:.1f} s",
              flush=True)

    # 2. The reports and where their time went.
    verdicts, missing = {}, []
    groups = Counter()
    stage_totals = Counter()
    rounds = []  # each timed grade's timing rounds
    report_wall = 0.0
    for student in students:
        report = read_json(os.path.join(args.out_dir, student, "report.json"))
        if not isinstance(report, dict) or "verdict" not in report:
            missing.append(student)
            continue
        verdicts[student] = report["verdict"]
        if report.get("timing_rounds"):
            rounds.append(int(report["timing_rounds"]))
        wall = float(report.get("wall_seconds") or 0.0)
        report_wall += wall
        staged = 0.0
        for stage, seconds in (report.get("stage_seconds") or {}).items():
            seconds = float(seconds or 0.0)
            stage_totals[stage] += seconds
            groups[stage_group(stage)] += seconds
            if stage != CONTEXT_STAGE:  # it runs beside the compile, inside its time
                staged += seconds
        groups["not in a stage"] += max(0.0, wall - staged)

    # 3. Verdicts against the expectations.
    counts = Counter(verdicts.values())
    mismatches, checked = [], 0
    for student, verdict in sorted(verdicts.items()):
        want = expected.get(student, "any")
        if want == "any":
            continue
        checked += 1
        if verdict != want:
            mismatches.append((student, want, verdict))

    # 4. Some submissions graded alone.
    alone = pick_alone([s for s in students if s in verdicts], kinds, args.alone)
    disagreements, alone_walls = [], []
    with tempfile.TemporaryDirectory(prefix="batch-bench-alone-") as scratch:
        for student in alone:
            output = os.path.join(scratch, student + ".json")
            command = [grader, "grade", os.path.join(args.class_dir, student), "--format", "json",
                       "--output", output, "-q"] + timeout_args + exercise_args
            began = time.perf_counter()
            status = subprocess.run(command, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL).returncode
            alone_walls.append(time.perf_counter() - began)
            report = read_json(output) or {}
            verdict = report.get("verdict", f"no report (exit {status})")
            same = verdict == verdicts[student]
            if not same:
                disagreements.append((student, verdicts[student], verdict))
            print(f"alone: {student:<40} {verdict:<11} batch {verdicts[student]:<11} "
                  f"{alone_walls[-1]:6.2f} s {'' if same else '  DIFFERENT'}", flush=True)

    # The table.
    graded = len(verdicts)
    print()
    print("=" * 72)
    print(f"class: {args.class_dir}: {len(students)} submissions, {graded} reports"
          + (f", {len(missing)} missing" if missing else ""))
    if batch_wall is not None:
        per_minute = graded / batch_wall * 60 if batch_wall > 0 else float("nan")
        print(f"batch wall time: {batch_wall:.1f} s (exit {batch_status}), "
              f"jobs {args.jobs or 'default'}: {per_minute:.1f} submissions per minute, "
              f"{batch_wall / max(graded, 1):.2f} s per submission")
    if args.server_memory:
        print_server_memory(memory_samples)
    if alone_walls:
        print(f"graded alone: {len(alone_walls)} submissions, "
              f"{sum(alone_walls) / len(alone_walls):.2f} s each on average")
    print()
    print("time, summed over the reports (each grade's own clock; they overlap across jobs):")
    total = sum(v for k, v in groups.items() if k != "context creation") or 1.0
    rows = ["compile", "context creation", "checks", "timing", "waiting for the device", "other",
            "not in a stage"]
    for name in rows:
        seconds = groups.get(name, 0.0)
        note = "  (beside the compile: inside its time)" if name == "context creation" else ""
        share = "" if name == "context creation" else f"{100 * seconds / total:5.1f}%"
        print(f"  {name:<24} {seconds:10.2f} s  {share:>6}{note}")
    print(f"  {'sum of report walls':<24} {report_wall:10.2f} s")
    others = sorted((s, v) for s, v in stage_totals.items() if stage_group(s) == "other")
    if others:
        print("  other: " + ", ".join(f"{s} {v:.2f} s" for s, v in others))
    if rounds:
        rounds.sort()
        print(f"  timing rounds per timed grade: median {rounds[len(rounds) // 2]}, "
              f"min {rounds[0]}, max {rounds[-1]} ({len(rounds)} grades)")
    print()
    print("verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())))
    if counts and set(counts) == {"ungradable"}:
        print("  every verdict is ungradable: no GPU here, or one that does not show the model;"
              " expected.json describes a GPU machine")
    unasserted = len(verdicts) - checked
    print(f"against expected.json: {checked} asserted, {len(mismatches)} different"
          + (f" ({unasserted} 'any' or not listed)" if unasserted else ""))
    for student, want, got in mismatches[:30]:
        print(f"  MISMATCH {student}: expected {want}, batch said {got}")
    if len(mismatches) > 30:
        print(f"  ... and {len(mismatches) - 30} more")
    for student in missing:
        print(f"  MISSING  {student}: no readable report.json")
    print(f"alone vs batch: {len(alone)} graded alone, {len(disagreements)} different")
    for student, batch_verdict, alone_verdict in disagreements:
        print(f"  DIFFERENT {student}: batch {batch_verdict}, alone {alone_verdict}")
    print("=" * 72)
    ok = not missing and not mismatches and not disagreements and graded > 0
    print("batch_bench: " + ("OK" if ok else "PROBLEMS (above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

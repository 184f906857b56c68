#!/usr/bin/env python3
"""Speed of one whole grade, against the conventional nvcc build-and-run, and against variants.

Grades a submission N times (a fresh process each time, as a student would run it), and prints
the median wall time of one grade, each ratio's spread across the runs, and how often the
verdict flipped; then compiles and runs scripts/bench/nvcc_sweep.cu with nvcc and prints those
times. With --variant, each round grades once with every variant in turn (interleaved, so that a
drift of the machine falls on all of them alike) and the medians are compared with the first.

Usage: grade_bench.py GRADER [--runs 20] [--submission student/example] [--exercise DIR]
                      [--backend auto|cuda|sim] [--out DIR] [--no-nvcc]
                      [--variant LABEL=GRADER[,VAR=VALUE...]] ...
A variant's VAR=VALUE pairs are set in the grader's environment, e.g.
  --variant "no counters=build/harness/cli/grader,GRADER_LIBCUPTI=/nonexistent"
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


def parse_variant(text):
    label, _, rest = text.partition("=")
    parts = rest.split(",")
    env = dict(p.split("=", 1) for p in parts[1:] if p)
    return {"label": label, "grader": parts[0], "env": env}


def grade(variant, args, report):
    command = [variant["grader"], "grade", args.submission, "--format", "json",
               "--output", report, "--quiet", "--backend", args.backend]
    if args.exercise:
        command += ["--exercise", args.exercise]
    env = dict(os.environ, **variant["env"])
    began = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - began
    with open(report) as f:
        data = json.load(f)
    return wall, data, proc.returncode


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("grader")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--submission", default="student/example")
    parser.add_argument("--exercise", default=None)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--out", default=None)
    parser.add_argument("--no-nvcc", action="store_true")
    parser.add_argument("--variant", action="append", default=[])
    args = parser.parse_args()

    variants = [{"label": "grader", "grader": args.grader, "env": {}}]
    variants += [parse_variant(v) for v in args.variant]
    work = tempfile.mkdtemp(prefix="grade-bench-")
    walls = {v["label"]: [] for v in variants}
    verdicts, ratios = [], {}
    variant_verdicts = {v["label"]: set() for v in variants}
    for i in range(args.runs):
        line = f"run {i + 1:2d}:"
        for n, variant in enumerate(variants):
            report = os.path.join(work, f"report-{n}-{i}.json")
            wall, data, code = grade(variant, args, report)
            walls[variant["label"]].append(wall)
            variant_verdicts[variant["label"]].add(data["verdict"])
            line += f"  {variant['label']} {wall:.3f} s {data['verdict']} exit {code}"
            if n > 0:
                continue
            verdicts.append(data["verdict"])
            for row in data["rows"]:
                if row["ratio"] is not None and row["stride"] != 1:
                    ratios.setdefault((row["kernel"], row["stride"]), []).append(row["ratio"])
            if args.out and i == 0:
                shutil.copy(report, os.path.join(args.out, "bench-first-report.json"))
        print(line, flush=True)

    print()
    base = statistics.median(walls["grader"])
    for variant in variants:
        w = walls[variant["label"]]
        med = statistics.median(w)
        versus = "" if variant is variants[0] else \
            f", {med - base:+.3f} s ({100 * (med - base) / med:+.1f}% of this variant's grade)"
        if variant is not variants[0] and variant_verdicts[variant["label"]] != \
                variant_verdicts["grader"]:
            versus += (f"; NOT COMPARABLE: its verdicts {sorted(variant_verdicts[variant['label']])}"
                       f" are not the grader's {sorted(variant_verdicts['grader'])}")
        print(f"{variant['label']}: grades {len(w)}, median wall time of one grade: {med:.3f} s "
              f"(min {min(w):.3f}, max {max(w):.3f}){versus}")
    flips = sum(1 for v in verdicts if v != verdicts[0])
    print(f"verdicts: {dict((v, verdicts.count(v)) for v in set(verdicts))}, flips: {flips}")
    print()
    print("  kernel     stride   median ratio   spread across runs (max-min)/median")
    worst = 0.0
    for (kernel, stride), values in sorted(ratios.items()):
        med = statistics.median(values)
        spread = (max(values) - min(values)) / med if med else 0.0
        worst = max(worst, spread)
        print(f"  {kernel:<9} {stride:6d}   {med:12.3f}   {100 * spread:8.2f}%")
    print(f"worst spread: {100 * worst:.2f}%")

    if args.no_nvcc:
        return 0
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nvcc_sweep.cu")
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if os.path.exists(nvcc):
        exe = os.path.join(work, "nvcc_sweep")
        began = time.perf_counter()
        subprocess.run([nvcc, "-std=c++17", "-O3", "-arch=native", "-o", exe, source], check=True)
        compile_s = time.perf_counter() - began
        began = time.perf_counter()
        run = subprocess.run([exe], capture_output=True, text=True)
        run_s = time.perf_counter() - began
        print()
        print(run.stdout.rstrip())
        print(f"conventional nvcc sweep: compile {compile_s:.2f} s + run {run_s:.2f} s = "
              f"{compile_s + run_s:.2f} s")
    else:
        print("nvcc not found: the conventional alternative was not timed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

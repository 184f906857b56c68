#!/usr/bin/env python3
"""Speed of one whole grade on the GPU, against the conventional nvcc build-and-run.

Grades student/ N times (a fresh process each time, as a student would run it), and prints the
median wall time of one grade, each ratio's spread across the runs, and how often the verdict
flipped; then compiles and runs scripts/bench/nvcc_sweep.cu with nvcc and prints those times.
Usage: grade_bench.py GRADER [--runs 20] [--submission student] [--out DIR]
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("grader")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--submission", default="student/example")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="grade-bench-")
    walls, verdicts, ratios = [], [], {}
    for i in range(args.runs):
        report = os.path.join(work, f"report-{i}.json")
        began = time.perf_counter()
        proc = subprocess.run([args.grader, "grade", args.submission, "--format", "json",
                               "--output", report, "--quiet"], capture_output=True, text=True)
        walls.append(time.perf_counter() - began)
        with open(report) as f:
            data = json.load(f)
        verdicts.append(data["verdict"])
        for row in data["rows"]:
            if row["ratio"] is not None and row["stride"] != 1:
                ratios.setdefault((row["kernel"], row["stride"]), []).append(row["ratio"])
        if args.out and i == 0:
            shutil.copy(report, os.path.join(args.out, "bench-first-report.json"))
        print(f"run {i + 1:2d}: {walls[-1]:.3f} s  {data['verdict']}  exit {proc.returncode}",
              flush=True)

    print()
    print(f"grades: {args.runs}, median wall time of one grade: {statistics.median(walls):.3f} s "
          f"(min {min(walls):.3f}, max {max(walls):.3f})")
    flips = sum(1 for v in verdicts if v != verdicts[0])
    print(f"verdicts: {dict((v, verdicts.count(v)) for v in set(verdicts))}, flips: {flips}")
    print()
    print("  kernel     stride   median ratio   spread across runs (max-min)/median")
    worst = 0.0
    for (kernel, stride), values in sorted(ratios.items()):
        med = statistics.median(values)
        spread = (max(values) - min(values)) / med
        worst = max(worst, spread)
        print(f"  {kernel:<9} {stride:6d}   {med:12.3f}   {100 * spread:8.2f}%")
    print(f"worst spread: {100 * worst:.2f}%")

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


if __name__ == "__main__":
    sys.exit(main())

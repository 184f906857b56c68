#!/usr/bin/env python3
"""A grade alone, stage by stage: runs `grader __worker` (the process `grader grade` starts for a
grade) on a submission and prints when each stage began, from the worker's own messages, with
the count's own steps (GRADER_TRACE_STEPS=1: CUPTI's libraries, the counter's open, the counted
launches, the close), the device's release and the process's end. What issue 19's closing note calls a timeline.

Usage: worker_timeline.py GRADER SUBMISSION [--exercise DIR] [--runs N] [--seed S]
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def stage_name(stage):
    name = stage.get("kind", "?")
    if stage.get("kernel"):
        name += " " + stage["kernel"]
    if stage.get("stride"):
        name += f" stride {stage['stride']}"
    return name


def one_run(grader, submission, exercise, seed):
    read_end, write_end = os.pipe()
    env = dict(os.environ, GRADER_TRACE_STEPS="1")
    began = time.perf_counter()
    proc = subprocess.Popen(
        [grader, "__worker", "--exercise", exercise, "--device", "0", "--seed", str(seed),
         "--backend", "cuda", "--run-timeout", "30", "--submission", submission],
        close_fds=False, preexec_fn=lambda: os.dup2(write_end, 3),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    os.close(write_end)
    events = []

    def read_messages():
        with os.fdopen(read_end) as messages:
            for line in messages:
                at = time.perf_counter() - began
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if message.get("type") == "stage":
                    events.append((at, "stage " + stage_name(message.get("stage", {}))))
                elif (message.get("type") == "measured"
                      and (message.get("value") or {}).get("wall_seconds")):
                    events.append((at, "the grade's last message"))

    reader = threading.Thread(target=read_messages)
    reader.start()
    for line in proc.stderr:
        if line.startswith("grader: count:") or line.startswith("grader: release:"):
            events.append((time.perf_counter() - began, line.strip()))
    proc.wait()
    reader.join()
    events.append((time.perf_counter() - began, f"the worker ended (exit {proc.returncode})"))
    return events


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grader")
    parser.add_argument("submission")
    parser.add_argument("--exercise", default=os.path.join(ROOT, "exercises/day15-bank-conflicts"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for run in range(args.runs):
        print(f"run {run + 1}: {args.submission}")
        for at, what in one_run(args.grader, os.path.abspath(args.submission),
                                os.path.abspath(args.exercise), args.seed):
            print(f"  {at:7.3f} s  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

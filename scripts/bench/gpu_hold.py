#!/usr/bin/env python3
"""How long each grade held the GPU, and where it stopped: a line per report.json given.

Usage: gpu_hold.py REPORT.json...

Per report: its folder, verdict, how long it held the GPU (the environment's gpu_held_until less
gpu_held_from: from taking the GPU's lock, or its device server's session, to giving it back), how
long it waited for the GPU ("wait for device"), the seconds of its stages that run the student's
code (the student's runs, timing, counting), its wall time, and where it stopped (stage, kind,
whose fault, the message's start). Issue 32's goal: a student whose kernel runs just under its
limit holds the GPU at most 3 s in all.
"""
import json
import os
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        name = (os.path.basename(os.path.dirname(path)) if os.path.basename(path) == "report.json"
                else os.path.splitext(os.path.basename(path))[0])
        try:
            with open(path, encoding="utf-8") as f:
                report = json.load(f)
        except (OSError, ValueError) as error:
            print(f"{name}: no report ({error})")
            continue
        env = report.get("environment") or {}
        held_from, held_until = env.get("gpu_held_from") or 0, env.get("gpu_held_until") or 0
        held = held_until - held_from if held_from and held_until else None
        stages = report.get("stage_seconds") or {}
        students = sum(v for k, v in stages.items()
                       if k.startswith("run student") or k in ("time", "count"))
        stop = report.get("interruption") or {}
        stopped = ""
        if stop:
            whose = "the student's" if stop.get("students_fault") else "the machine's"
            stopped = (f"  stopped at '{stop.get('stage')}' ({stop.get('kind')}, {whose}): "
                       f"{(stop.get('message') or '')[:160]}")
        held_text = f"{held:6.2f} s" if held is not None else "(not recorded)"
        print(f"{name:<28} {report.get('verdict', '?'):<10} held the GPU {held_text}, "
              f"waited {stages.get('wait for device', 0.0):6.2f} s, student's stages "
              f"{students:6.2f} s, wall {report.get('wall_seconds', 0.0):6.2f} s{stopped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

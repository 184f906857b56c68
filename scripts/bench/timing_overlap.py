#!/usr/bin/env python3
"""Whether any two grades used one GPU at the same time.

Reads every OUT/<student>/report.json of the given batch output folders and, per GPU (the
environment's gpu_bus_id), the window each grade held it (gpu_held_from .. gpu_held_until, taken
around the GPU lock). Prints the number of windows, how long the GPU was held and idle, and every
pair of windows that overlap; exits 1 when any do.
Usage: timing_overlap.py OUT_DIR [OUT_DIR...]
"""
import glob
import json
import os
import sys


def main():
    windows = {}
    for folder in sys.argv[1:]:
        for path in glob.glob(os.path.join(folder, "*", "report.json")):
            with open(path) as f:
                env = json.load(f).get("environment", {})
            start, end = env.get("gpu_held_from", 0), env.get("gpu_held_until", 0)
            if env.get("gpu_bus_id") and start and end:
                windows.setdefault(env["gpu_bus_id"], []).append((start, end, path))
    if not windows:
        print("no report says when it held a GPU")
        return 1
    overlaps = 0
    for bus_id, spans in sorted(windows.items()):
        spans.sort()
        held = sum(end - start for start, end, _ in spans)
        total = spans[-1][1] - spans[0][0]
        for (s1, e1, p1), (s2, e2, p2) in zip(spans, spans[1:]):
            if s2 < e1:
                overlaps += 1
                print(f"  overlap {e1 - s2:.3f} s: {p1} and {p2}")
        print(f"GPU {bus_id}: {len(spans)} grades held it for {held:.1f} s of {total:.1f} s "
              f"(from the first grade's lock to the last one's release); overlapping pairs: "
              f"{overlaps}")
    return 1 if overlaps else 0


if __name__ == "__main__":
    sys.exit(main())

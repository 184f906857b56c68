#!/usr/bin/env python3
"""The grader's parts (harness/<part>/) against their CMake dependencies.

Each part's CMakeLists.txt declares the parts it uses (grader_library(... DEPS grader_x ...),
or target_link_libraries for the CLI). Fails, naming the file, where:
  - a part includes another part's header ("x/y.hpp") without declaring grader_x;
  - a part declares grader_x and includes nothing of x (a stale edge);
  - a part depends on one listed after it in harness/CMakeLists.txt's dependency order (an
    upward edge, and so the start of a cycle).
Usage: scripts/check_layers.py [REPOSITORY_ROOT]     (exit 0: agree, 1: a disagreement)
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
harness = root / "harness"
order_text = (harness / "CMakeLists.txt").read_text()
order_match = re.search(r"foreach\(part ([^)]*)\)", order_text)
order = order_match.group(1).split() if order_match else []
order.append("cli")  # the executable, after every library

parts = sorted(p.name for p in harness.iterdir() if (p / "CMakeLists.txt").is_file())
problems = []
for part in parts:
    cmake = (harness / part / "CMakeLists.txt").read_text()
    declared = set(re.findall(r"\bgrader_([a-z]+)\b", cmake)) - {part, "library", "warnings",
                                                                  "logging"}
    declared &= set(parts)
    included = {}
    for source in sorted((harness / part).iterdir()):
        if source.suffix not in (".cpp", ".hpp", ".h", ".in"):
            continue
        for number, line in enumerate(source.read_text().splitlines(), 1):
            found = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
            if found and found.group(1) != part and found.group(1) in parts:
                included.setdefault(found.group(1), f"{source.relative_to(root)}:{number}")
    for other, where in sorted(included.items()):
        if other not in declared:
            problems.append(f"{where}: {part} includes {other}/ but "
                            f"harness/{part}/CMakeLists.txt does not declare grader_{other}")
    for other in sorted(declared - set(included)):
        problems.append(f"harness/{part}/CMakeLists.txt: declares grader_{other}, "
                        f"and {part} includes nothing of {other}/")
    if part in order:
        for other in sorted(declared):
            if other in order and order.index(other) > order.index(part):
                problems.append(f"harness/{part}/CMakeLists.txt: {part} depends on {other}, "
                                f"which comes after it in harness/CMakeLists.txt (an upward edge)")

for problem in problems:
    print(f"check_layers: {problem}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"check_layers: {len(parts)} parts agree with their declared dependencies")

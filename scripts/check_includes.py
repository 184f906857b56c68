#!/usr/bin/env python3
"""Every source file includes what it uses, by include-what-you-use.

A file that uses std::find without including <algorithm> builds with one standard library (which
brings <algorithm> in through <map>) and not with the next (GCC 14's does not): the file leaned on
a header it did not include. This check runs include-what-you-use over every translation unit of
harness/ and tests/ (not tests/fixtures/), with the project's headers checked too, and fails for
each #include a file should add, naming the file, the header and what it uses from it. What a file
could remove is not a portability fault and is not checked.

Usage: scripts/check_includes.py BUILD_DIR [--fix] [--jobs N] [FILE...]
  BUILD_DIR   a configured build folder (its compile_commands.json names each file's options)
  --fix       adds the missing lines to each file's first block of #includes, then clang-format
              regroups them (.clang-format: IncludeBlocks Regroup)
  FILE...     only these files (as in compile_commands.json, or relative to the repository)
Exit: 0 every file includes what it uses, 1 a file does not (or --fix could not place a line),
77 include-what-you-use missing or another version than the tree is checked with (as
scripts/format.sh does; GRADER_FORMAT_REQUIRED=1, set by .ci/run, makes that 1 instead).
The mapping of private headers to the public ones a file should include is .iwyu.imp.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Another release of include-what-you-use reads the same file differently; the tree is checked
# with Debian 12's (0.18, on clang 14, the clang-format the tree is formatted with).
CHECKED_WITH = "0.18"


def unchecked(message):
    print(f"check_includes: {message}: includes not checked", file=sys.stderr)
    sys.exit(1 if os.environ.get("GRADER_FORMAT_REQUIRED") == "1" else 77)


def ours(path):
    try:
        relative = pathlib.Path(path).resolve().relative_to(ROOT)
    except ValueError:
        return None
    parts = relative.parts
    if not parts or parts[0] not in ("harness", "tests") or parts[:2] == ("tests", "fixtures"):
        return None
    return relative


def iwyu_arguments(entry):
    arguments = entry.get("arguments") or shlex.split(entry["command"])
    # The compiler's own name and output options go; IWYU is given the rest as clang would be.
    kept = []
    skip = False
    for argument in arguments[1:]:
        if skip:
            skip = False
            continue
        if argument in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if argument in ("-c", "-MD", "-MMD") or argument.startswith("-fmacro-prefix-map"):
            continue
        kept.append(argument)
    if arguments and arguments[0].endswith("ccache"):
        kept = kept[1:]  # the launcher's compiler
    return kept


def analyse(tool, entry):
    command = [tool,
               "-Xiwyu", f"--mapping_file={ROOT / '.iwyu.imp'}",
               "-Xiwyu", "--no_fwd_decls",
               "-Xiwyu", "--cxx17ns",
               "-Xiwyu", f"--check_also={ROOT}/harness/*",
               "-Xiwyu", f"--check_also={ROOT}/tests/*.hpp",
               *iwyu_arguments(entry)]
    run = subprocess.run(command, cwd=entry["directory"], capture_output=True, text=True)
    return run.stdout + run.stderr


# Every container and string header of the standard includes <initializer_list> (their synopses
# begin with it), so a braced list needs no include of its own.
NEVER_MISSING = {"#include <initializer_list>"}


def missing_includes(output):
    """{file: [(line, why)]} of every 'should add these lines' block in IWYU's output."""
    found = {}
    for block in re.finditer(r"^(\S+) should add these lines:\n(.*?)(?:\n\n|\Z)", output,
                             re.M | re.S):
        relative = ours(block.group(1))
        if relative is None:
            continue
        for line in block.group(2).splitlines():
            match = re.match(r'\s*(#include [<"][^>"]+[>"])\s*(?://\s*(.*))?$', line)
            if match and match.group(1) not in NEVER_MISSING:
                found.setdefault(relative, {})[match.group(1)] = match.group(2) or ""
    return found


def add_lines(relative, lines):
    """Adds #include lines after the last #include of the file's first block of them."""
    path = ROOT / relative
    text = path.read_text().splitlines(keepends=True)
    last = None
    for number, line in enumerate(text):
        if line.startswith("#include "):
            last = number
        elif last is not None and line.strip() and not line.startswith("#include"):
            break
    if last is None:
        return False
    text[last + 1:last + 1] = [f"{line}\n" for line in sorted(lines)]
    path.write_text("".join(text))
    return True


def main():
    parser = argparse.ArgumentParser(add_help=True)
    parser.add_argument("build")
    parser.add_argument("files", nargs="*")
    parser.add_argument("--fix", action="store_true")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    options = parser.parse_intermixed_args()

    tool = shutil.which(os.environ.get("IWYU", "include-what-you-use"))
    if tool is None:
        unchecked("include-what-you-use is not installed (apt-get install iwyu)")
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    found_version = re.search(r"include-what-you-use (\d+\.\d+)", version)
    if not found_version or found_version.group(1) != CHECKED_WITH:
        unchecked(f"include-what-you-use is {found_version.group(1) if found_version else '?'}; "
                  f"the tree is checked with {CHECKED_WITH}, whose findings differ")
    database = pathlib.Path(options.build) / "compile_commands.json"
    if not database.is_file():
        print(f"check_includes: {database} does not exist: configure the build first",
              file=sys.stderr)
        return 2
    wanted = {ours(ROOT / f) or ours(f) for f in options.files} - {None}
    entries = {}
    for entry in json.loads(database.read_text()):
        relative = ours(pathlib.Path(entry["directory"], entry["file"]))
        if relative is not None and (not wanted or relative in wanted):
            entries.setdefault(relative, entry)  # a file built into two targets: once

    missing = {}
    unparsed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        for relative, output in zip(entries, pool.map(lambda e: analyse(tool, e),
                                                      entries.values())):
            # A file clang cannot parse is not checked: that is a finding too (GCC accepts some
            # code the standard does not, which another compiler refuses).
            analysed = (f"{relative} should add" in output or
                        f"({ROOT / relative} has correct" in output or
                        f"{ROOT / relative} should add" in output)
            if not analysed or re.search(r"^\S+:\d+:\d+: (fatal )?error:", output, re.M):
                print(output, file=sys.stderr)
                unparsed.append(relative)
            for file, lines in missing_includes(output).items():
                missing.setdefault(file, {}).update(lines)
    for relative in unparsed:
        print(f"check_includes: {relative}: include-what-you-use could not analyse it (above)",
              file=sys.stderr)

    if options.fix and missing:
        unplaced = [str(r) for r, lines in missing.items() if not add_lines(r, lines)]
        subprocess.run([os.environ.get("CLANG_FORMAT", "clang-format"), "--style=file", "-i",
                        *[str(ROOT / r) for r in missing]], check=True)
        print(f"check_includes: added {sum(len(l) for l in missing.values())} lines to "
              f"{len(missing)} files")
        for relative in unplaced:
            print(f"check_includes: {relative}: no block of #includes to add to", file=sys.stderr)
        return 1 if unplaced else 0
    for relative in sorted(missing):
        for line, why in sorted(missing[relative].items()):
            print(f"check_includes: {relative}: add {line}" + (f"  // {why}" if why else ""),
                  file=sys.stderr)
    if missing:
        print(f"check_includes: {len(missing)} files lean on headers they do not include "
              f"({len(entries)} translation units and their headers checked); "
              f"scripts/check_includes.py {options.build} --fix adds the lines", file=sys.stderr)
    if missing or unparsed:
        return 1
    print(f"check_includes: {len(entries)} translation units and their headers include what "
          f"they use")
    return 0


if __name__ == "__main__":
    sys.exit(main())

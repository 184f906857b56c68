#!/usr/bin/env python3
"""A finding's words are written in harness/report/ alone, and nothing decides by them.

A finding is a typed value (harness/model/findings.def); report/findings_text.cpp and
report/diagnosis_text.cpp word it. Code that finds, compares or prefix-matches a sentence ("still
blank", "does not hold: ", " before any thread of its block wrote it") re-derives a diagnosis from
words written elsewhere, and a reworded sentence silently changes it; a sentence spelled again
outside report/ is said twice, and the two drift. This gate fails, naming the file and line:

1. Matched. In harness/checks/ and harness/report/, where a string search or comparison is
   handed words:
  - a string literal with a letter in it, given to find, rfind, compare, starts_with,
    ends_with, find_first_of, find_last_of or contains (the repository's helper);
  - a name bound to such a literal (constexpr std::string_view kX = "...") given to one of them;
  - the variable of a range-for over a braced list of such literals given to one of them.
   Searches for punctuation alone (a newline, ": " between fields) are not words and pass.
2. Spelled. Outside harness/report/, a string literal that repeats five words in a row of a
   literal in report/findings_text.cpp or report/diagnosis_text.cpp (comments aside). Not
   harness/sim/: the simulator's own LaunchResult sentences are its command line's and tests',
   and device/sim_device.cpp hands the grade its races and reads as findings, not as sentences.
Usage: scripts/check_messages.py [REPOSITORY_ROOT]     (exit 0: none, 1: some)
"""
import pathlib
import re
import sys

if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
    # The gate must fail on what it is for: each way of matching words, planted in a tree.
    import subprocess
    import tempfile
    worded = 'return "a thread reads words of the tile before the fill has written them";\n'
    planted = {
        "a literal": ("checks", 'if (detail.rfind("does not hold: ", 0) == 0) {}'),
        "a bound name":
            ("checks", 'constexpr std::string_view kNote = " wrote it";\nif (x.find(kNote)) {}'),
        "a range-for":
            ("checks", 'for (const std::string_view w : {"is undefined"}) { contains(e, w); }'),
        "a sentence spelled again":
            ("device", 'race.note = "reads words of the tile before the fill";'),
    }
    for what, (part, code) in planted.items():
        with tempfile.TemporaryDirectory() as tree:
            for folder in ("checks", "report", part):
                (pathlib.Path(tree) / "harness" / folder).mkdir(parents=True, exist_ok=True)
            (pathlib.Path(tree) / "harness" / "report" / "findings_text.cpp").write_text(worded)
            (pathlib.Path(tree) / "harness" / part / "planted.cpp").write_text(code + "\n")
            run = subprocess.run([sys.executable, __file__, tree], capture_output=True, text=True)
            if run.returncode != 1 or "planted.cpp:" not in run.stderr:
                print(f"check_messages --self-test: {what} was not caught", file=sys.stderr)
                sys.exit(1)
        # Four words in a row, or a comment, are not a sentence said again.
    with tempfile.TemporaryDirectory() as tree:
        for folder in ("checks", "report", "device"):
            (pathlib.Path(tree) / "harness" / folder).mkdir(parents=True)
        (pathlib.Path(tree) / "harness" / "report" / "findings_text.cpp").write_text(worded)
        (pathlib.Path(tree) / "harness" / "device" / "fine.cpp").write_text(
            'x = "words of the tile";  // reads words of the tile before the fill\n')
        run = subprocess.run([sys.executable, __file__, tree], capture_output=True, text=True)
        if run.returncode != 0:
            print("check_messages --self-test: four words or a comment were refused",
                  file=sys.stderr)
            sys.exit(1)
    print("check_messages --self-test: a literal, a bound name, a range-for and a sentence spelled "
          "again are each caught; four words or a comment pass")
    sys.exit(0)

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
FOLDERS = ["harness/checks", "harness/report"]
CALL = r"(?:\.(?:r?find|compare|starts_with|ends_with|find_first_of|find_last_of)|\bcontains)\s*\("
LITERAL = r'"((?:[^"\\]|\\.)*)"'


def has_words(literal):
    return re.search(r"[A-Za-z]", literal) is not None


def arguments(text, start):
    """The text of a call's arguments, from just after its opening parenthesis."""
    depth, at = 1, start
    while at < len(text) and depth > 0:
        if text[at] == "(":
            depth += 1
        elif text[at] == ")":
            depth -= 1
        elif text[at] == '"':
            at += 1
            while at < len(text) and text[at] != '"':
                at += 2 if text[at] == "\\" else 1
        at += 1
    return text[start:at - 1]


problems = []
files = 0
for folder in FOLDERS:
    for source in sorted((root / folder).rglob("*")):
        if source.suffix not in (".cpp", ".hpp"):
            continue
        files += 1
        text = source.read_text()
        # Names bound to a literal with words, and range-for variables over lists of them.
        worded_names = set()
        for match in re.finditer(r"\b(k\w+|\w+)\s*(?:\{|=)\s*" + LITERAL, text):
            if has_words(match.group(2)):
                worded_names.add(match.group(1))
        for match in re.finditer(
                r"for\s*\(\s*(?:const\s+)?[\w:<>]+\s*&?\s*(\w+)\s*:\s*\{([^{}]*)\}\s*\)", text):
            if any(has_words(literal) for literal in re.findall(LITERAL, match.group(2))):
                worded_names.add(match.group(1))
        for match in re.finditer(CALL, text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            if re.search(r"\b(bool|auto|void|int|std::\w+)\s+$", text[line_start:match.start()]):
                continue  # a declaration of the helper, not a call
            args = arguments(text, match.end())
            line = text.count("\n", 0, match.start()) + 1
            where = f"{source.relative_to(root)}:{line}"
            worded = [lit for lit in re.findall(LITERAL, args) if has_words(lit)]
            named = [n for n in re.findall(r"\b\w+\b", re.sub(LITERAL, "", args))
                     if n in worded_names]
            if worded:
                problems.append(f"{where}: matches the words \"{worded[0]}\"")
            elif named:
                problems.append(f"{where}: matches the words held by {named[0]}")


def without_comments(text):
    """The text with its // and /* */ comments blanked (string literals kept whole)."""
    return re.sub(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/',
                  lambda m: m.group(0) if m.group(0).startswith('"') else
                  re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


RUN = 5  # words in a row that make a sentence said again


def runs(literal):
    words = re.findall(r"[a-z_0-9']+", literal.lower())
    return {tuple(words[i:i + RUN]) for i in range(len(words) - RUN + 1)}


WORDERS = ["harness/report/findings_text.cpp", "harness/report/diagnosis_text.cpp"]
worded_runs = {}
for worder in WORDERS:
    if (root / worder).exists():
        for literal in re.findall(LITERAL, without_comments((root / worder).read_text())):
            for run in runs(literal):
                worded_runs.setdefault(run, worder)
spelled = 0
for source in sorted((root / "harness").rglob("*")):
    relative = source.relative_to(root).as_posix()
    if (source.suffix not in (".cpp", ".hpp") or relative.startswith("harness/report/") or
            relative.startswith("harness/sim/")):
        continue
    text = without_comments(source.read_text())
    spelled += 1
    for match in re.finditer(LITERAL, text):
        again = sorted(runs(match.group(1)) & worded_runs.keys())
        if again:
            line = text.count("\n", 0, match.start()) + 1
            problems.append(f"{relative}:{line}: spells \"{' '.join(again[0])}\", which "
                            f"{worded_runs[again[0]]} words")

for problem in problems:
    print(f"check_messages: {problem}", file=sys.stderr)
if problems:
    print("check_messages: decide on a finding's kind (harness/model/findings.def), not on its "
          "words, and word it in report/ alone", file=sys.stderr)
    sys.exit(1)
print(f"check_messages: {files} files in {' and '.join(FOLDERS)} match no message's words; "
      f"{spelled} outside report/ and sim/ spell none of report/'s")

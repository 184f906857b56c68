#!/usr/bin/env python3
"""No function in harness/ a reader must scroll: each body at most 100 lines.

A function's length is the lines its body spans, from the line of its opening brace to that of
its closing one, both counted: one more than clang-tidy's readability-function-size counts for its
LineThreshold, so that clang-tidy with LineThreshold 99 names the same functions (a lambda or a
local class counts toward the function it is written in, as a reader scrolls it). Comments and
blank lines inside count. The sources are read as C++ tokens (comments, strings, character
literals and preprocessor lines set aside), so this needs nothing but Python and gives the same
answer on every system.

Fails, naming each function's file, line and length, where one is over the limit and not in the
allow-list (scripts/function_length_allowed.txt: "path qualified-name" a line, for functions
in parts other work is reshaping now; an entry that names no long function is reported, not
failed, so that the list only shrinks). Prints the count over the limit and over 150 either way.
Usage: scripts/check_function_length.py [REPOSITORY_ROOT] [--limit N] [--list]
  --list   every function over the limit, allowed or not, longest first
Exit: 0 every long function is allowed, 1 one is not.
"""
import argparse
import pathlib
import re
import sys

SOURCES = (".cpp", ".hpp", ".h", ".cu", ".cuh")
ALSO_COUNTED = 150  # printed beside the limit: the second figure

TOKEN = re.compile(
    r"""(?P<raw>R"(?P<delim>[^()\\\s]{0,16})\()"""  # a raw string's start
    r"""|(?P<string>(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*")"""
    r"""|(?P<char>(?:u8|u|U|L)?'(?:\\.|[^'\\\n])+')"""
    r"""|(?P<line_comment>//[^\n]*)"""
    r"""|(?P<block_comment>/\*.*?\*/)"""
    r"""|(?P<number>\.?\d(?:[\w.']|[eEpP][+-])*)"""
    r"""|(?P<name>[A-Za-z_]\w*)"""
    r"""|(?P<punct>::|->|&&|\|\||<<=|>>=|==|!=|<=|>=|\+\+|--|[-+*/%^&|~!=<>?:;,.(){}\[\]#])"""
    r"""|(?P<newline>\n)"""
    r"""|(?P<space>[ \t\r\f\v]+|\\\n)""",
    re.S,
)


def tokens(text):
    """(kind, text, line) for each token outside comments, literals and preprocessor lines."""
    line = 1
    position = 0
    at_line_start = True
    in_directive = False
    while position < len(text):
        found = TOKEN.match(text, position)
        if not found:
            position += 1  # a stray byte (a '$', a non-ASCII letter in an identifier)
            continue
        kind = found.lastgroup
        value = found.group(0)
        if kind == "raw":
            end = text.find(")" + found.group("delim") + '"', found.end())
            end = len(text) if end < 0 else end + len(found.group("delim")) + 2
            value = text[position:end]
            kind = "string"
            position = end
        else:
            position = found.end()
        if kind == "newline":
            line += 1
            at_line_start = True
            in_directive = False
            continue
        if kind == "space":
            line += value.count("\n")  # a backslash's continuation keeps a directive going
            continue
        if kind in ("line_comment", "block_comment") or kind == "string" or kind == "char":
            line += value.count("\n")
            if kind in ("string", "char") and not in_directive:
                yield ("literal", "", line)
            continue
        if at_line_start and value == "#":
            in_directive = True
        at_line_start = False
        if in_directive:
            continue
        yield (kind, value, line)


# What may stand between a function's parameter list and its body ("}": the last of a
# constructor's member initializers written with braces).
AFTER_PARAMETERS = {")", "}", "const", "noexcept", "override", "final", "volatile", "&", "&&",
                    "try"}


def at_depth_zero(prefix):
    """The prefix's tokens outside any parentheses or brackets."""
    depth = 0
    kept = []
    for token in prefix:
        if token[1] in ("(", "["):
            depth += 1
        elif token[1] in (")", "]"):
            depth -= 1
        elif depth == 0:
            kept.append(token[1])
    return kept


def function_name(prefix, scope_names):
    """The qualified name of the function whose declaration is `prefix` (tokens before '{')."""
    values = [t[1] for t in prefix]
    if "operator" in values:
        first = values.index("operator")
        last = first + 3 if values[first + 1] == "(" else values.index("(", first + 1)
        name = "operator" + "".join(values[first + 1:last])
    else:
        # The parameter list's '(' is the first outside a template's angle brackets
        # (std::function<void(int)> make(...)).
        angle = 0
        first = None
        for index, value in enumerate(values):
            if value == "<" and index > 0 and re.match(r"\w", values[index - 1]):
                angle += 1
            elif value == ">" and angle > 0:
                angle -= 1
            elif value == "(" and angle == 0 and index > 0:
                first = index - 1
                break
        if first is None:
            return "::".join(scope_names + ["?"])
        name = values[first]
        if first > 0 and values[first - 1] == "~":
            first -= 1
            name = "~" + name
    while first >= 2 and values[first - 1] == "::" and re.match(r"\w", values[first - 2]):
        first -= 2
        name = values[first] + "::" + name
    return "::".join(scope_names + [name])


def classify(prefix):
    """What the '{' ending `prefix` opens at namespace or class scope: a namespace (or an extern
    block), a class, an enum, a function's body, or an initializer (whose braces hold data)."""
    values = [t[1] for t in prefix]
    if not values:
        return "block"
    if values[0] == "extern" or "namespace" in values[:2]:
        return "namespace"
    outside = at_depth_zero(prefix)
    assigned = "=" in outside and not any(
        values[i] == "operator" and values[i + 1] == "=" for i in range(len(values) - 1))
    if assigned:
        return "initializer"
    if "(" not in values:
        if "enum" in outside:
            return "enum"
        if any(keyword in outside for keyword in ("class", "struct", "union")):
            return "class"
        return "initializer"
    if values[-1] in AFTER_PARAMETERS or "->" in outside:  # "->": a trailing return type
        return "function"
    if any(keyword in outside[:3] for keyword in ("class", "struct", "union")):
        return "class"  # struct alignas(16) Vector {
    return "initializer"


def class_name(prefix):
    values = [t[1] for t in prefix]
    for index, value in enumerate(values):
        if value in ("class", "struct", "union") and index + 1 < len(values):
            following = values[index + 1]
            if re.match(r"[A-Za-z_]\w*$", following):
                return following
    return None


def functions(path):
    """(line, qualified name, lines) of every function body in the file."""
    found = []
    # Each open brace: (kind, name, line). Kinds: namespace, class, function, initializer, block.
    stack = []
    prefix = []
    for token in tokens(path.read_text(errors="replace")):
        kind, value, line = token
        inside_function = any(entry[0] in ("function", "initializer", "enum") for entry in stack)
        if value == "{":
            if inside_function:
                stack.append(("block", None, line))
                continue
            opened = classify(prefix)
            values = [t[1] for t in prefix]
            # A member initializer written with braces: `Grade(...) : budget_{limit} {`.
            if opened in ("initializer", "class") and ":" in values and "(" in values:
                colon = values.index(":")
                if ")" in values[:colon] and values[-1] not in ("{", ";"):
                    if re.match(r"\w", values[-1]) or values[-1] == ">":
                        stack.append(("member_initializer", None, line))
                        prefix.append(token)
                        continue
            scope_names = [entry[1] for entry in stack if entry[0] == "class" and entry[1]]
            name = None
            if opened == "function":
                name = function_name(prefix, scope_names)
            elif opened == "class":
                name = class_name(prefix)
            stack.append((opened, name, line))
            prefix = []
            continue
        if value == "}":
            if not stack:
                continue
            opened, name, first = stack.pop()
            if opened == "member_initializer":
                prefix.append(token)
                continue
            if opened == "function":
                found.append((first, name, line - first + 1))
            if not any(entry[0] in ("function", "initializer", "enum") for entry in stack):
                prefix = []
            continue
        if inside_function:
            continue
        if value == ";" or (value == ":" and prefix and prefix[-1][1] in
                            ("public", "private", "protected")):
            prefix = []
            continue
        prefix.append(token)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--list", action="store_true")
    arguments = parser.parse_args()
    root = pathlib.Path(arguments.root)
    allowed_file = root / "scripts" / "function_length_allowed.txt"
    allowed = set()
    if allowed_file.is_file():
        for entry in allowed_file.read_text().splitlines():
            entry = entry.split("#", 1)[0].strip()
            if entry:
                path, name = entry.split(None, 1)
                allowed.add((path, name.strip()))

    long_ones = []
    for path in sorted((root / "harness").rglob("*")):
        if path.suffix in SOURCES and path.is_file():
            relative = path.relative_to(root).as_posix()
            for line, name, length in functions(path):
                if length > arguments.limit:
                    long_ones.append((length, relative, line, name))
    long_ones.sort(key=lambda f: (-f[0], f[1], f[2]))

    problems = []
    seen = set()
    for length, relative, line, name in long_ones:
        seen.add((relative, name))
        if arguments.list:
            print(f"{length:5d}  {relative}:{line}  {name}")
        if (relative, name) not in allowed:
            problems.append(f"{relative}:{line}: {name} is {length} lines "
                            f"(at most {arguments.limit})")
    for path, name in sorted(allowed - seen):
        print(f"check_function_length: note: {allowed_file.relative_to(root)} allows {path} "
              f"{name}, which is no longer over {arguments.limit} lines: its line can go")
    for problem in problems:
        print(f"check_function_length: {problem}")
    over_also = sum(1 for f in long_ones if f[0] > ALSO_COUNTED)
    print(f"check_function_length: {len(long_ones)} functions in harness/ over {arguments.limit} "
          f"lines ({over_also} over {ALSO_COUNTED}); {len(long_ones) - len(problems)} of them "
          f"allowed for now by {allowed_file.relative_to(root)}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Makes a class of submissions for benchmarking `grader batch`, from the submission fixtures.

Usage: make_class.py OUT_DIR [--size 100] [--seed N] [--no-never-ends] [--with-prints-forever]
                     [--own-sentences] [--exercise padding] [--failing N] [--missing-barriers K]

Most of the class are copies of `correct` and `correct_four_accumulators`, each with its own
student id and claimed ratios (the grader does not score claimed ratios, so their verdict stays
"pass"). Then one of each failure fixture, and three hostile submissions made here: a 30 MB
probe.cu (over the exercise's source limit), a submission.yaml that is not UTF-8, and an empty
folder. Folders are named NNN-<kind>, so a gradebook row says what it was.

Writes OUT_DIR/expected.json: {student folder: expected verdict}, from each fixture's
expected.yaml ("any" where the fixture does not assert one), and OUT_DIR/kinds.json: {student
folder: kind}. `never_ends` costs the grader's whole run limit (30 s by default, or batch's
--timeout); `prints_forever` is left out unless asked for: it floods the kernel's output for as
long as the limit allows.

With --own-sentences the passing students write sentences as a class does: a fifth copy the
fixture's word for word, a few change one word of it, a few copy a classmate's, and the rest
write their own (composed from several phrasings, so no two are near-identical): the class page's
sentence clusters then look as they would for real.

With --failing N the class has N failing students (the failure fixtures and hostile
submissions in turn, as many rounds as it takes) rather than one of each; --missing-barriers K
makes K of them the commonest bug of all, `correct`'s probe without its __syncthreads() (kind
missing_barrier, expected to fail: the tile is read before the other warps have written it). The
class of issue 39: --failing 65 --missing-barriers 6.

With --exercise padding the class is Part 2's (`exercises/day15-padding`, from
tests/fixtures/padding/): most are copies of `correct_padded` and `correct_swizzled`, each with
its own student id and measured percentages, then one of each failure fixture and an empty
folder. Grade it with `grader batch OUT_DIR --exercise exercises/day15-padding`.
"""
import argparse
import json
import os
import random
import re
import shutil
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "submissions")
PASSING = ("correct", "correct_four_accumulators")
HOSTILE = ("huge_probe", "not_utf8_answers", "empty_folder")
MEASURED = "measured_ratio"
# Part 2's (--exercise padding).
PADDING = {"fixtures": os.path.join(REPO, "tests", "fixtures", "padding"),
           "passing": ("correct_padded", "correct_swizzled"), "hostile": ("empty_folder",),
           "measured": "percent_of_copy"}
HUGE_PROBE_BYTES = 30 * 1024 * 1024


def fixture_verdict(kind):
    """The `verdict:` of a fixture's expected.yaml (a plain scalar; no YAML parser needed)."""
    path = os.path.join(FIXTURES, kind, "expected.yaml")
    with open(path, encoding="utf-8") as f:
        for line in f:
            match = re.match(r"^verdict:\s*([A-Za-z_]+)\s*(#.*)?$", line)
            if match:
                return match.group(1)
    sys.exit(f"make_class: {path} has no 'verdict:' line")


def copy_submission(kind, dest):
    """The fixture's student files, without expected.yaml (a student hands in no expectation)."""
    os.makedirs(dest)
    source = os.path.join(FIXTURES, kind)
    for name in sorted(os.listdir(source)):
        if name != "expected.yaml" and os.path.isfile(os.path.join(source, name)):
            shutil.copy(os.path.join(source, name), os.path.join(dest, name))


OPENINGS = ["Stride 3 is odd", "3 and 32 are coprime", "Since gcd(3, 32) is 1",
            "An odd stride like 3 shares no factor with 32", "The stride 3 has no factor 2",
            "Because 3 does not divide 32 or share a factor with it"]
MIDDLES = ["so lane L lands in bank 3L mod 32", "so the 32 lanes of a warp hit 32 distinct banks",
           "so every bank is visited exactly once per warp", "so no two lanes of a warp collide",
           "so the addresses 3L mod 32 are a permutation of the banks",
           "so the warp's requests spread over all the banks"]
ENDINGS = ["and it runs like stride 1, while 2 and 4 are 2-way and 4-way conflicts",
           "which makes it conflict free although it is larger than 2",
           "so the degree follows gcd(stride, 32), not the stride's size",
           "and the time depends on the shared factor, not on how big the stride is",
           "unlike stride 4, where 4 lanes share each bank", "hence one wavefront per request",
           "just as stride 5 or 7 would be", "and only even strides make lanes share a bank",
           "so nothing is serialised"]
CLASSMATE = "Odd strides are conflict free because gcd(odd, 32) = 1, so 3 is as fast as 1."


def sentence_for(number, fixture_sentence, rng):
    """What the student numbered `number` writes (see --own-sentences)."""
    share = rng.random()
    if share < 0.2:
        return fixture_sentence
    if share < 0.27:
        return fixture_sentence.replace("different", "distinct", 1)
    if share < 0.32:
        return CLASSMATE
    # 6 x 6 x 9 phrasings: no two students up to 324 write the same one.
    return (f"{OPENINGS[number % len(OPENINGS)]}, {MIDDLES[(number // 6) % len(MIDDLES)]}, "
            f"{ENDINGS[(number // 36) % len(ENDINGS)]} (student {number}).")


def vary_answers(path, student_id, rng, sentence_number=None):
    """A student's own id and measured ratios (within 10% of the fixture's) in submission.yaml;
    with sentence_number, their own sentence too (sentence_for)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text, count = re.subn(r'^student_id:.*$', f'student_id: "{student_id}"', text, flags=re.M)
    if count != 1:
        sys.exit(f"make_class: {path}: expected one student_id line, found {count}")

    def scaled(match):
        value = float(match.group(1)) * rng.uniform(0.9, 1.1)
        return f"{MEASURED}: {value:.2f}"

    text = re.sub(MEASURED + r":\s*([0-9]+(?:\.[0-9]+)?)", scaled, text)
    gpus = ["Tesla T4", "NVIDIA GeForce RTX 3060", "NVIDIA A100-SXM4-40GB", "NVIDIA L4"]
    text = re.sub(r'^gpu:.*$', f'gpu: "{rng.choice(gpus)}"', text, flags=re.M)
    if sentence_number is not None:
        fixture = re.search(r'^sentence: "(.*)"$', text, flags=re.M)
        if not fixture:
            sys.exit(f"make_class: {path}: expected a one-line sentence")
        own = sentence_for(sentence_number, fixture.group(1), rng)
        text = text.replace(fixture.group(0), f'sentence: "{own}"', 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def make_hostile(kind, dest):
    correct = os.path.join(FIXTURES, "correct")
    if kind == "huge_probe":
        copy_submission("correct", dest)
        # The lesson's probe, then comment lines up to 30 MB: valid CUDA, far over the limit.
        line = "// " + "padding " * 15 + "\n"
        with open(os.path.join(dest, "probe.cu"), "a", encoding="ascii") as f:
            written = os.path.getsize(os.path.join(dest, "probe.cu"))
            block = line * 8192
            while written < HUGE_PROBE_BYTES:
                f.write(block)
                written += len(block)
    elif kind == "not_utf8_answers":
        copy_submission("correct", dest)
        # Latin-1 bytes (0xE9, 0xFC) and a lone UTF-8 continuation byte (0x80) in the id and the
        # sentence: a file saved by an old editor.
        with open(os.path.join(correct, "submission.yaml"), "rb") as f:
            data = f.read()
        data = re.sub(rb'^student_id:.*$', b'student_id: "ren\xe9-m\xfcller"', data, flags=re.M)
        data = re.sub(rb'^sentence:.*$', b'sentence: "Stride 3 is odd \x80 so it hits 32 banks."',
                      data, flags=re.M)
        with open(os.path.join(dest, "submission.yaml"), "wb") as f:
            f.write(data)
    elif kind == "empty_folder":
        os.makedirs(dest)
    elif kind == "missing_barrier":
        copy_submission("correct", dest)
        probe = os.path.join(dest, "probe.cu")
        with open(probe, encoding="utf-8") as f:
            text = f.read()
        text, count = re.subn(r"^\s*__syncthreads\(\);\n", "", text, flags=re.M)
        if count != 1:
            sys.exit(f"make_class: {probe}: expected one __syncthreads() line, found {count}")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        raise ValueError(kind)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-never-ends", action="store_true",
                        help="leave out never_ends, which costs the whole run limit")
    parser.add_argument("--with-prints-forever", action="store_true",
                        help="add prints_forever (verdict not asserted)")
    parser.add_argument("--own-sentences", action="store_true",
                        help="passing students write their own sentences, some copied")
    parser.add_argument("--exercise", choices=["probe", "padding"], default="probe",
                        help="Part 1 (the probe, by default) or Part 2 (the padded transpose)")
    parser.add_argument("--failing", type=int, default=None,
                        help="this many failing students (the failure kinds in turn)")
    parser.add_argument("--missing-barriers", type=int, default=0,
                        help="this many of the failing students miss the probe's barrier")
    args = parser.parse_args()
    if args.missing_barriers and args.exercise != "probe":
        sys.exit("make_class: --missing-barriers is for Part 1's probe")
    if args.exercise == "padding":
        global FIXTURES, PASSING, HOSTILE, MEASURED
        FIXTURES, PASSING = PADDING["fixtures"], PADDING["passing"]
        HOSTILE, MEASURED = PADDING["hostile"], PADDING["measured"]
        if args.own_sentences:
            sys.exit("make_class: --own-sentences is for Part 1's one-line sentences")

    failures = sorted(k for k in os.listdir(FIXTURES)
                      if os.path.isfile(os.path.join(FIXTURES, k, "expected.yaml"))
                      and k not in PASSING and k != "prints_forever")
    if args.no_never_ends and "never_ends" in failures:
        failures.remove("never_ends")
    if args.with_prints_forever:
        failures.append("prints_forever")
    kinds = failures + list(HOSTILE)
    if args.failing is not None:
        if args.missing_barriers > args.failing or args.failing > args.size:
            sys.exit("make_class: --missing-barriers <= --failing <= --size")
        others = kinds
        kinds = ["missing_barrier"] * args.missing_barriers
        kinds += [others[k % len(others)] for k in range(args.failing - len(kinds))]
        rng = random.Random(args.seed)
        kinds += [rng.choice(PASSING) for _ in range(args.size - len(kinds))]
    elif args.size < len(kinds):
        # A small class: a spread of kinds, always starting with the two passing ones.
        rng = random.Random(args.seed)
        kinds = list(PASSING) + rng.sample(kinds, max(0, args.size - len(PASSING)))
        kinds = kinds[:args.size]
    else:
        rng = random.Random(args.seed)
        kinds += [rng.choice(PASSING) for _ in range(args.size - len(kinds))]
    rng.shuffle(kinds)

    if os.path.exists(args.out_dir) and os.listdir(args.out_dir):
        sys.exit(f"make_class: {args.out_dir} exists and is not empty")
    os.makedirs(args.out_dir, exist_ok=True)
    expected, kind_of = {}, {}
    width = max(3, len(str(len(kinds))))
    for number, kind in enumerate(kinds, start=1):
        folder = f"{number:0{width}d}-{kind}"
        dest = os.path.join(args.out_dir, folder)
        if kind in HOSTILE or kind == "missing_barrier":
            make_hostile(kind, dest)
            # Each is refused by the answers-file or the compile check, whatever the GPU.
            verdict = "fail"
        else:
            copy_submission(kind, dest)
            verdict = fixture_verdict(kind)
            if kind in PASSING:
                vary_answers(os.path.join(dest, "submission.yaml"), f"student-{number:0{width}d}",
                             rng, number if args.own_sentences else None)
        expected[folder] = verdict
        kind_of[folder] = kind

    with open(os.path.join(args.out_dir, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(args.out_dir, "kinds.json"), "w", encoding="utf-8") as f:
        json.dump(kind_of, f, indent=2, sort_keys=True)
        f.write("\n")
    counts = {}
    for verdict in expected.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    print(f"make_class: {len(kinds)} submissions in {args.out_dir}: "
          + ", ".join(f"{n} expected {v}" for v, n in sorted(counts.items())))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Measures a class page in headless Chromium and takes its screenshots.

Usage: class_page_figures.py CLASS_REPORT_HTML OUT_DIR [--name class-page-300] [--runs 3]
                             [--students-view FRAGMENT]

Prints the page's height (CSS pixels, document.documentElement.scrollHeight at a 1280 px wide
window) and its load time: milliseconds from the start of navigation to the end of parsing and the
first layout, the median of --runs fresh Chromium starts. The copy measured drops the page's
Content-Security-Policy and adds one script at the end of the body that reports both figures in
the title, read back through --dump-dom. Writes, each 1280 x 1400 (the width measured) and checked
to be under 1 MB:
OUT_DIR/NAME-top.png, the top of the page; and, each on a copy of the page whose other sections
are hidden (display: none), its own policy and script kept: NAME-students.png, the students'
table as the page's script shows the view --students-view names (default
"verdict=fail&sort=score&order=desc": the failing students, highest score first);
NAME-numbers.png, what the students predicted and measured; NAME-sentences.png, the sentence
clusters. Chromium is Debian's `chromium`, or $GRADER_CHROMIUM.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
CSP = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>')
MEASURE = ("<script>const h = document.documentElement.scrollHeight; "
           "document.title = 'MEASURE ' + h + ' ' + Math.round(performance.now());</script>")
ONLY = ('<style>main > section:not([aria-labelledby="%s"]), nav.contents '
        '{ display: none; }</style>')
MAX_PNG_BYTES = 1024 * 1024


def chromium(work, profile, arguments):
    command = [os.environ.get("GRADER_CHROMIUM") or "chromium", *CHROMIUM_FLAGS,
               "--user-data-dir=" + os.path.join(work, profile), *arguments]
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          timeout=180, check=True).stdout.decode("utf-8", "replace")


def measure(html, work, runs):
    page = os.path.join(work, "measure.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write(CSP.sub("", html).replace("</body>", MEASURE + "</body>", 1))
    heights, times = [], []
    for run in range(runs):
        dom = chromium(work, "profile-measure-%d" % run,
                       ["--window-size=1280,900", "--dump-dom", "file://" + page])
        found = re.search(r"<title>MEASURE (\d+) (\d+)</title>", dom)
        if not found:
            sys.exit("class_page_figures: Chromium did not run the measuring script")
        heights.append(int(found.group(1)))
        times.append(int(found.group(2)))
    return heights, times


def screenshot(html, work, name, png, fragment=""):
    page = os.path.join(work, name + ".html")
    with open(page, "w", encoding="utf-8") as f:
        f.write(html)
    chromium(work, "profile-" + name, ["--hide-scrollbars", "--window-size=1280,1400",
                                       "--screenshot=" + png,
                                       "file://" + page + ("#" + fragment if fragment else "")])
    size = os.path.getsize(png)
    if size >= MAX_PNG_BYTES:
        sys.exit("class_page_figures: %s is %d bytes, over 1 MB" % (png, size))
    return size


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page")
    parser.add_argument("out_dir")
    parser.add_argument("--name", default="class-page-300")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--students-view", default="verdict=fail&sort=score&order=desc")
    args = parser.parse_args()
    with open(args.page, encoding="utf-8") as f:
        html = f.read()
    os.makedirs(args.out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="class-page-figures-")
    try:
        heights, times = measure(html, work, args.runs)
        print("page: %d bytes, %d px tall (1280 px wide), loaded in %d ms (median of %s ms)" %
              (len(html.encode("utf-8")), statistics.median(heights), statistics.median(times),
               ", ".join(str(t) for t in times)))
        top = os.path.join(args.out_dir, args.name + "-top.png")
        print("%s: %d bytes" % (top, screenshot(html, work, "top", top)))
        for part, title, fragment in (("students", "students-title", args.students_view),
                                      ("numbers", "claims-chart-title", ""),
                                      ("sentences", "sentences-title", "")):
            png = os.path.join(args.out_dir, args.name + "-" + part + ".png")
            only = html.replace("</head>", ONLY % title + "</head>", 1)
            print("%s: %d bytes" % (png, screenshot(only, work, part, png, fragment)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Issue 42's service goal for `grader serve`: it keeps grading through idle connections.

Usage: serve_hold_bench.py GRADER OUT_DIR [--seconds 30] [--students 12] [--open-files 1024]
                           [--scenarios one,four,proxy] [--backend auto|cuda|sim] [--label NAME]

For each scenario, starts `grader serve` (a fresh state folder, --rate none) under an open-file
limit of --open-files (soft and hard: the usual 1,024, which the service cannot raise), and holds
idle connections to it for --seconds: each connects and sends nothing, and is opened again as soon
as the service closes it, from its own loopback address (127.0.0.2 ...), as the fifth red-team
pass did. Meanwhile, from 127.0.0.1:
- a client asks GET /api/me every 0.1 s (a new connection each time, as a page's poll after a
  pause would), and the answers are counted by status (200, 503, no answer within 10 s);
- --students students each submit student/example once, at a random moment of the hold, and every
  attempt is then waited for (at most 300 s more) until all its lanes are done.
Scenarios:
  one    2,000 idle connections from one address (127.0.0.2), the default --per-address;
  four   4 x 256 from four addresses (127.0.0.2 to .5): the red team's;
  proxy  2,000 from 127.0.0.1 itself with --per-address 0, as behind a course's reverse proxy.
Figures per scenario: the service's CPU while held (seconds per second: 1.0 is a core spinning),
its open descriptors at the most, the idle connections it closed (and how often they were opened
again), the poll's answers by status and its slowest answer, and every attempt's end: graded
(pass or fail), ungradable with the machine's fault and why, refused (with the status), or lost
(accepted and never done).
Writes OUT_DIR/serve-hold-LABEL.json and prints a summary ending in one "goal" line per scenario,
PASS or MISS: every poll answered 200, every attempt graded, none lost or ungradable.
"""
import argparse
import json
import os
import random
import re
import resource
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIOS = {
    "one": {"holders": [("127.0.0.2", 2000)], "per_address": None},
    "four": {"holders": [(f"127.0.0.{i}", 256) for i in range(2, 6)], "per_address": None},
    "proxy": {"holders": [("127.0.0.1", 2000)], "per_address": "0"},
}


def example_files():
    folder = os.path.join(ROOT, "student", "example")
    files = {}
    for name in ("probe.cu", "submission.yaml"):
        with open(os.path.join(folder, name), "rb") as f:
            files[name] = f.read()
    return files


def multipart(files):
    boundary = "hold-" + uuid.uuid4().hex
    parts = [f"--{boundary}\r\nContent-Disposition: form-data; name=\"exercise\"\r\n\r\n"
             "day15-bank-conflicts\r\n".encode()]
    for name, data in files.items():
        parts.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
                     f"filename=\"{name}\"\r\n\r\n".encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), "multipart/form-data; boundary=" + boundary


def request(port, method, path, token, body=None, content_type=None, timeout=10):
    """(status, JSON or None); status 0 where no answer came (refused, reset, timed out)."""
    headers = {"Authorization": "Bearer " + token, "Connection": "close"}
    if content_type:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        try:
            return error.code, json.loads(error.read() or b"null")
        except (ValueError, OSError):
            return error.code, None
    except (OSError, ValueError):
        return 0, None


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def open_descriptors(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


class Holders:
    """Idle connections from given addresses, each opened again as soon as it is closed."""

    def __init__(self, port, holders):
        self.port = port
        self.selector = selectors.DefaultSelector()
        self.opened = 0
        self.closed_by_service = 0
        self.failed = 0
        self.stop = threading.Event()
        self.wanted = [address for address, count in holders for _ in range(count)]
        self.thread = threading.Thread(target=self.run)

    def connect(self, address):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((address, 0))
            sock.connect(("127.0.0.1", self.port))
        except OSError:
            sock.close()
            self.failed += 1
            return False
        sock.setblocking(False)
        self.selector.register(sock, selectors.EVENT_READ, address)
        self.opened += 1
        return True

    def run(self):
        for address in self.wanted:
            self.connect(address)
        while not self.stop.is_set():
            for key, _ in self.selector.select(timeout=0.2):
                try:
                    data = key.fileobj.recv(4096)
                except OSError:
                    data = b""
                if data:
                    continue  # a 503 before the close: read on until the close
                self.selector.unregister(key.fileobj)
                key.fileobj.close()
                self.closed_by_service += 1
                if not self.stop.is_set():
                    self.connect(key.data)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()

    def start(self):
        self.thread.start()

    def finish(self):
        self.stop.set()
        self.thread.join()


def scenario(grader, name, args, files, rng):
    setup = SCENARIOS[name]
    work = tempfile.mkdtemp(prefix=f"serve-hold-{name}-")
    state = os.path.join(work, "state")
    roster = os.path.join(work, "roster.csv")
    with open(roster, "w") as f:
        f.write("student_id\n" + "".join(f"s{i:03d}\n" for i in range(args.students + 1)))
    issued = subprocess.run([grader, "tokens", "issue", roster, "--state", state], check=True,
                            capture_output=True, text=True).stdout
    tokens = [line.split(",")[2] for line in issued.splitlines()[1:]]
    poller, students = tokens[0], tokens[1:]
    command = [grader, "serve", "--state", state, "--listen", "127.0.0.1:0", "--rate", "none",
               "--backend", args.backend]
    if setup["per_address"] is not None:
        command += ["--per-address", setup["per_address"]]
    log_path = os.path.join(work, "serve.log")
    log = open(log_path, "wb")
    limit = args.open_files

    def limits():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                               preexec_fn=limits)
    port = None
    deadline = time.time() + 120
    while port is None and time.time() < deadline and process.poll() is None:
        with open(log_path, "rb") as f:
            found = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", f.read())
        if found:
            port = int(found.group(1))
        time.sleep(0.05)
    if port is None:
        sys.exit(f"serve_hold_bench: grader serve did not start (log {log_path})")
    request(port, "GET", "/api/me", poller)  # the first answer: the service is up

    holders = Holders(port, setup["holders"])
    holders.start()
    time.sleep(2.0)  # every idle connection made
    polls, fds, sent = [], [], []
    lock = threading.Lock()
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            began = time.time()
            status, _ = request(port, "GET", "/api/me", poller)
            with lock:
                polls.append((status, time.time() - began))
            fds.append(open_descriptors(process.pid))
            stop.wait(max(0.0, 0.1 - (time.time() - began)))

    def submit(at, token):
        time.sleep(max(0.0, start + at - time.time()))
        body, content_type = multipart(files)
        status, attempt = request(port, "POST", "/api/attempts", token, body, content_type,
                                  timeout=60)
        with lock:
            sent.append({"token": token, "status": status,
                         "id": attempt.get("id") if status == 201 and attempt else None,
                         "error": (attempt or {}).get("error") if status != 201 else None})

    start = time.time()
    cpu_start = cpu_seconds(process.pid)
    poller_thread = threading.Thread(target=poll)
    poller_thread.start()
    senders = [threading.Thread(target=submit, args=(rng.uniform(0, args.seconds * 0.8), t))
               for t in students]
    for thread in senders:
        thread.start()
    time.sleep(max(0.0, start + args.seconds - time.time()))
    cpu_held = (cpu_seconds(process.pid) - cpu_start) / (time.time() - start)
    stop.set()
    poller_thread.join()
    for thread in senders:
        thread.join()
    holders.finish()

    # Every accepted attempt, until all its lanes are done.
    ends = {}
    deadline = time.time() + 300
    pending = [s for s in sent if s["status"] == 201]
    while pending and time.time() < deadline:
        left = []
        for s in pending:
            status, attempt = request(port, "GET", f"/api/attempts/{s['id']}", s["token"])
            lanes = (attempt or {}).get("lanes", {})
            if status == 200 and lanes and all(l["state"] == "done" for l in lanes.values()):
                ends[s["id"]] = {k: {"verdict": l.get("verdict"), "summary": l.get("summary"),
                                     "services_fault": l.get("services_fault", False)}
                                 for k, l in lanes.items()}
            else:
                left.append(s)
        pending = left
        time.sleep(1.0)
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()
    with open(log_path, "rb") as f:
        log_text = f.read().decode(errors="replace")
    shutil.rmtree(work, ignore_errors=True)

    statuses = {}
    for status, _ in polls:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    graded = [e for e in ends.values() if all(l["verdict"] in ("pass", "fail") for l in e.values())]
    ungradable = [e for e in ends.values() if e not in graded]
    refused = [s for s in sent if s["status"] != 201]
    lost = [s for s in sent if s["status"] == 201 and s["id"] not in ends]
    return {
        "scenario": name, "open_files": limit, "seconds": args.seconds,
        "idle_connections": len(holders.wanted), "holders_opened": holders.opened,
        "closed_by_service": holders.closed_by_service, "holder_connect_failures": holders.failed,
        "cpu_per_second_held": cpu_held, "descriptors_max": max(fds or [0]),
        "polls": statuses, "poll_seconds_max": max((d for _, d in polls), default=0.0),
        "poll_seconds_median": statistics.median([d for _, d in polls]) if polls else 0.0,
        "attempts_sent": len(sent), "graded": len(graded), "ungradable": len(ungradable),
        "ungradable_summaries": sorted({l["summary"] for e in ungradable for l in e.values()
                                        if l["verdict"] == "ungradable"})[:5],
        "refused": [(s["status"], s["error"]) for s in refused], "lost": len(lost),
        "too_many_open_files_in_log": log_text.count("Too many open files"),
        "log_tail": log_text.splitlines()[-5:],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("grader")
    parser.add_argument("out")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--open-files", type=int, default=1024)
    parser.add_argument("--scenarios", default="one,four,proxy")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--label", default="this")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard != resource.RLIM_INFINITY and hard < 4500:
        sys.exit(f"serve_hold_bench: this process may open {hard} files; 4500 are needed")
    rng = random.Random(args.seed)
    files = example_files()
    results = []
    for name in args.scenarios.split(","):
        results.append(scenario(args.grader, name, args, files, rng))
    with open(os.path.join(args.out, f"serve-hold-{args.label}.json"), "w") as f:
        json.dump(results, f, indent=1)

    lines, goals = [], []
    for r in results:
        polls = sum(r["polls"].values())
        answered = r["polls"].get("200", 0)
        lines.append(
            f"{args.label}, {r['scenario']}: {r['idle_connections']} idle connections held "
            f"{r['seconds']:.0f} s under {r['open_files']} open files; the service's CPU "
            f"{r['cpu_per_second_held']:.2f} s/s, {r['descriptors_max']} descriptors at most, "
            f"{r['closed_by_service']} idle connections closed by it")
        lines.append(
            f"  polls: {answered} of {polls} answered 200 ({r['polls']}), median "
            f"{r['poll_seconds_median']:.3f} s, slowest {r['poll_seconds_max']:.2f} s; attempts: "
            f"{r['attempts_sent']} sent, {r['graded']} graded, {r['ungradable']} ungradable, "
            f"{len(r['refused'])} refused, {r['lost']} lost; 'Too many open files' "
            f"{r['too_many_open_files_in_log']} times in the log")
        for summary in r["ungradable_summaries"]:
            lines.append(f"  ungradable: {summary}")
        ok = (polls > 0 and answered == polls and r["graded"] == r["attempts_sent"]
              and not r["lost"] and not r["ungradable"])
        goals.append(f"goal {'PASS' if ok else 'MISS'}: {args.label}, {r['scenario']}: every "
                     f"poll answered and every attempt graded through the idle connections")
    print("\n".join(lines + goals))
    return 0 if all(g.startswith("goal PASS") for g in goals) else 1


if __name__ == "__main__":
    sys.exit(main())

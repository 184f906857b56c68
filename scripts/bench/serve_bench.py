#!/usr/bin/env python3
"""Issue 35's goals for `grader serve`, measured against the grader itself on this machine.

Usage: serve_bench.py GRADER OUT_DIR [--students 300] [--heavy 10] [--per-heavy 10]
                      [--minute 60] [--self-checks 5] [--backend auto|cuda|sim]
                      [--sim-jobs N] [--gpu-jobs N] [--deadline 600]

Starts `grader serve` (a fresh state folder, a roster of --students, --rate none, no limit per
address: every client here is 127.0.0.1) and measures, through its HTTP API (Python's standard
library only):
1. Self-checks with the queue empty: --self-checks Part 1 uploads of student/example, one at a
   time. For each, the seconds from sending the upload to the simulator's report and to the
   GPU's, as the service recorded them (finished_at - created_at) and as a client polling every
   20 ms saw them. Goals: the simulator's report <= 0.6 s, the GPU's <= 1.5 s.
2. The rush: every student submits once within --minute seconds, at a random moment, except
   --heavy of them who submit --per-heavy times each within the same minute. Then waits (at most
   --deadline s) until every attempt has both reports. Goals: every attempt answered by the GPU
   within 120 s of its upload, none lost (every 201 has both reports, every report a verdict),
   fairness (the longest GPU wait of a student with one submission against a heavy student's
   first and last), the service's memory flat (its RSS sampled every second: at the start of the
   rush, its peak, at the end).
Writes OUT_DIR/serve-bench.json (every attempt's times) and prints a summary ending in one
"goal" line per goal, PASS or MISS. Exits 0 when every attempt got its reports, 1 otherwise.
Without a GPU (or --backend sim) there is no GPU lane: the simulator's figures alone are shown.
"""
import argparse
import json
import os
import random
import re
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


def example_files():
    folder = os.path.join(ROOT, "student", "example")
    files = {}
    for name in ("probe.cu", "submission.yaml"):
        with open(os.path.join(folder, name), "rb") as f:
            files[name] = f.read()
    return files


class Service:
    def __init__(self, grader, state, arguments):
        self.log_path = os.path.join(state, "..", "serve.log")
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [grader, "serve", "--state", state, "--listen", "127.0.0.1:0", "--rate", "none",
             "--per-address", "0"] + arguments,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.port = None
        deadline = time.time() + 120
        while self.port is None and time.time() < deadline:
            with open(self.log_path, "rb") as f:
                found = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", f.read())
            if found:
                self.port = int(found.group(1))
            elif self.process.poll() is not None:
                break
            time.sleep(0.05)
        if self.port is None:
            with open(self.log_path, "rb") as f:
                sys.exit("serve_bench: grader serve did not start:\n" + f.read().decode(errors="replace"))

    def rss_kb(self):
        try:
            with open(f"/proc/{self.process.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def request(port, method, path, token, body=None, content_type=None, timeout=60, retries=20):
    """(status, JSON). A 429 (a person's requests past the service's rate) is waited out as its
    Retry-After says and sent again, up to `retries` times; every other answer is returned."""
    headers = {"Authorization": "Bearer " + token}
    if content_type:
        headers["Content-Type"] = content_type
    for _ in range(retries + 1):
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            answer = json.loads(error.read() or b"null")
            if error.code != 429:
                return error.code, answer
            time.sleep(float(error.headers.get("Retry-After") or 1))
    return error.code, answer


def every_attempt(port, token):
    """Every attempt of the class, newest first, page by page (?all&before=...)."""
    attempts, query = [], "/api/attempts?all"
    while True:
        status, page = request(port, "GET", query, token)
        if status != 200:
            sys.exit(f"serve_bench: GET {query}: {status} {page}")
        attempts.extend(page["attempts"])
        if "next_before" not in page:
            return attempts
        query = f"/api/attempts?all&before={page['next_before']}"


def multipart(files, exercise="day15-bank-conflicts"):
    boundary = "bench-" + uuid.uuid4().hex
    parts = [f"--{boundary}\r\nContent-Disposition: form-data; name=\"exercise\"\r\n\r\n"
             f"{exercise}\r\n".encode()]
    for name, data in files.items():
        parts.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
                     f"filename=\"{name}\"\r\n\r\n".encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), "multipart/form-data; boundary=" + boundary


def submit(port, token, files):
    body, content_type = multipart(files)
    return request(port, "POST", "/api/attempts", token, body, content_type)


def lanes_done(attempt):
    lanes = attempt.get("lanes", {})
    return bool(lanes) and all(lane["state"] == "done" for lane in lanes.values())


def waits(attempt):
    out = {}
    for name, lane in attempt.get("lanes", {}).items():
        if lane["state"] == "done":
            out[name] = lane["finished_at"] - attempt["created_at"]
    return out


def self_checks(port, tokens, files, count):
    rows = []
    for i in range(count):
        sent = time.time()
        status, attempt = submit(port, tokens[i], files)
        if status != 201:
            rows.append({"error": attempt})
            continue
        seen = {}
        while time.time() - sent < 120:
            _, now = request(port, "GET", f"/api/attempts/{attempt['id']}", tokens[i])
            for name, lane in now["lanes"].items():
                if lane["state"] == "done" and name not in seen:
                    seen[name] = time.time() - sent
            if lanes_done(now):
                break
            time.sleep(0.02)
        # Where each lane's time went: its report's own stages, the queue's wait beside them.
        stages = {}
        for name, lane in now["lanes"].items():
            _, report = request(port, "GET", f"/api/attempts/{attempt['id']}/report?lane={name}"
                                "&format=json", tokens[i])
            stages[name] = {"queued": lane["started_at"] - lane["enqueued_at"],
                            "wall": report.get("wall_seconds"),
                            "stages": report.get("stage_seconds", {})}
        rows.append({"id": attempt["id"], "server": waits(now), "client": seen,
                     "verdicts": {k: v.get("verdict") for k, v in now["lanes"].items()},
                     "stages": stages})
        time.sleep(0.5)  # the queue empty again, the device server idle
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("grader")
    parser.add_argument("out")
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--heavy", type=int, default=10)
    parser.add_argument("--per-heavy", type=int, default=10)
    parser.add_argument("--minute", type=float, default=60.0)
    parser.add_argument("--self-checks", type=int, default=5)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--sim-jobs", type=int, default=0)
    parser.add_argument("--gpu-jobs", type=int, default=0)
    parser.add_argument("--deadline", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    random.seed(args.seed)
    work = tempfile.mkdtemp(prefix="serve-bench-")
    state = os.path.join(work, "state")
    roster = os.path.join(work, "roster.csv")
    with open(roster, "w") as f:
        f.write("student_id\n" + "".join(f"s{i:03d}\n" for i in range(args.students)))
    issued = subprocess.run([args.grader, "tokens", "issue", roster, "--state", state],
                            check=True, capture_output=True, text=True).stdout
    tokens = {}
    for line in issued.splitlines()[1:]:
        login, _, token = line.split(",")
        tokens[login] = token
    prof = subprocess.run([args.grader, "tokens", "instructor", "prof", "--state", state],
                          check=True, capture_output=True, text=True).stdout.splitlines()[1]
    prof_token = prof.split(",")[2]
    serve_args = ["--backend", args.backend]
    if args.sim_jobs:
        serve_args += ["--sim-jobs", str(args.sim_jobs)]
    if args.gpu_jobs:
        serve_args += ["--gpu-jobs", str(args.gpu_jobs)]
    service = Service(args.grader, state, serve_args)
    files = example_files()
    logins = sorted(tokens)
    results = {"students": args.students, "heavy": args.heavy, "per_heavy": args.per_heavy}
    try:
        # The device servers start with the service: wait for the first grade to find them warm.
        _, health = request(service.port, "GET", "/api/health", "")
        gpu = health["gpu"]
        warm = self_checks(service.port, [tokens[logins[-1]]], files, 1)
        results["warm_up"] = warm
        results["self_checks"] = self_checks(service.port, [tokens[l] for l in logins[-1 - args.self_checks:-1]],
                                             files, args.self_checks)

        # The rush.
        heavy = set(logins[:args.heavy])
        plan = []
        for login in logins:
            for _ in range(args.per_heavy if login in heavy else 1):
                plan.append((random.uniform(0, args.minute), login))
        plan.sort()
        sent = []
        lock = threading.Lock()
        rss = []
        stop_sampling = threading.Event()

        def sample():
            while not stop_sampling.is_set():
                rss.append((time.time(), service.rss_kb()))
                stop_sampling.wait(1.0)

        sampler = threading.Thread(target=sample)
        sampler.start()
        start = time.time()

        def send(at, login):
            time.sleep(max(0.0, start + at - time.time()))
            began = time.time()
            status, attempt = submit(service.port, tokens[login], files)
            with lock:
                sent.append({"login": login, "heavy": login in heavy, "status": status,
                             "sent_at": began, "upload_seconds": time.time() - began,
                             "id": attempt.get("id") if status == 201 else None,
                             "error": attempt.get("error") if status != 201 else None})

        senders = [threading.Thread(target=send, args=item) for item in plan]
        for thread in senders:
            thread.start()
        for thread in senders:
            thread.join()
        accepted = [s for s in sent if s["status"] == 201]
        by_id = {}
        deadline = time.time() + args.deadline
        while time.time() < deadline:
            by_id = {a["id"]: a for a in every_attempt(service.port, prof_token)}
            if all(lanes_done(by_id.get(s["id"], {})) for s in accepted):
                break
            time.sleep(2)
        stop_sampling.set()
        sampler.join()
        rush_end = time.time()
        for s in accepted:
            attempt = by_id.get(s["id"], {})
            s["waits"] = waits(attempt)
            s["verdicts"] = {k: v.get("verdict") for k, v in attempt.get("lanes", {}).items()}
        results["rush"] = {"sent": sent, "seconds": rush_end - start,
                           "rss_kb": [(t - start, kb) for t, kb in rss]}
    finally:
        service.stop()
    with open(os.path.join(args.out, "serve-bench.json"), "w") as f:
        json.dump(results, f, indent=1)

    # The summary.
    lines = []
    goals = []

    def goal(ok, text):
        goals.append(f"goal {'PASS' if ok else 'MISS'}: {text}")

    checks = results["self_checks"]
    for lane, limit in (("sim", 0.6), ("gpu", 1.5)):
        server = [c["server"][lane] for c in checks if lane in c.get("server", {})]
        client = [c["client"][lane] for c in checks if lane in c.get("client", {})]
        if not server:
            continue
        lines.append(f"self-check, {lane} report: server {statistics.median(server):.3f} s median "
                     f"(max {max(server):.3f}), client {statistics.median(client):.3f} s median "
                     f"(max {max(client):.3f}) over {len(server)}")
        spent = [c["stages"][lane] for c in checks if lane in c.get("stages", {})]
        if spent:
            names = sorted({n for c in spent for n in c["stages"]},
                           key=lambda n: -statistics.median(c["stages"].get(n, 0) for c in spent))
            lines.append(f"  {lane}: queued {statistics.median(c['queued'] for c in spent):.3f} s, "
                         f"the grade's wall {statistics.median(c['wall'] or 0 for c in spent):.3f} s"
                         " (medians); its stages: " + ", ".join(
                             f"{n} {statistics.median(c['stages'].get(n, 0) for c in spent):.3f}"
                             for n in names[:6]))
        goal(max(server) <= limit, f"Part 1 self-check, upload to the {lane} report <= {limit} s "
                                   f"(max {max(server):.3f} s)")
    rush = results["rush"]
    sent = rush["sent"]
    accepted = [s for s in sent if s["status"] == 201]
    lanes = sorted({lane for s in accepted for lane in s.get("verdicts", {})})
    lost = [s for s in accepted
            if set(s.get("waits", {})) != set(lanes) or not all(s["verdicts"].values())]
    refused = [s for s in sent if s["status"] != 201]
    lines.append(f"rush: {len(sent)} uploads by {args.students} students in {args.minute:.0f} s "
                 f"({args.heavy} of them {args.per_heavy} times); {len(accepted)} taken, "
                 f"{len(refused)} refused, {len(lost)} without every report; "
                 f"upload answered in {max(s['upload_seconds'] for s in sent):.2f} s at most")
    for s in refused[:5]:
        lines.append(f"  refused: {s['status']} {s['error']}")
    main_lane = "gpu" if "gpu" in lanes else "sim"
    for lane in lanes:
        all_waits = [s["waits"][lane] for s in accepted if lane in s.get("waits", {})]
        if all_waits:
            quantiles = statistics.quantiles(all_waits, n=20) if len(all_waits) > 1 else all_waits * 19
            lines.append(f"  {lane}: wait from upload to report: median {statistics.median(all_waits):.1f} s, "
                         f"p95 {quantiles[18]:.1f} s, max {max(all_waits):.1f} s")
    single = [s["waits"].get(main_lane, 1e9) for s in accepted if not s["heavy"]]
    heavy_by_login = {}
    for s in sorted((s for s in accepted if s["heavy"]), key=lambda s: s["sent_at"]):
        heavy_by_login.setdefault(s["login"], []).append(s["waits"].get(main_lane, 1e9))
    if single and heavy_by_login:
        first = [w[0] for w in heavy_by_login.values()]
        last = [w[-1] for w in heavy_by_login.values()]
        lines.append(f"  fairness ({main_lane}): longest wait of a student with one submission "
                     f"{max(single):.1f} s; of a student with {args.per_heavy}: first submission "
                     f"{max(first):.1f} s, last {max(last):.1f} s")
    all_main = [s["waits"].get(main_lane, 1e9) for s in accepted]
    goal(not lost and all_main and max(all_main) <= 120.0,
         f"every upload of the rush answered by the {main_lane} within 120 s, none lost "
         f"(max {max(all_main):.1f} s, {len(lost)} lost)")
    if rush["rss_kb"]:
        samples = [kb for _, kb in rush["rss_kb"] if kb > 0]
        lines.append(f"  memory (grader serve's RSS): {samples[0] / 1024:.0f} MB at the start, "
                     f"{max(samples) / 1024:.0f} MB at the peak, {samples[-1] / 1024:.0f} MB at "
                     f"the end ({len(samples)} samples)")
        goal(max(samples) <= samples[0] + 64 * 1024,
             "the service's memory flat across the rush (peak within 64 MB of the start)")
    if not gpu:
        lines.append("no GPU lane (no GPU, or --backend sim): the simulator's figures alone")
    print("\n".join(lines + goals))
    return 0 if not lost else 1


if __name__ == "__main__":
    sys.exit(main())

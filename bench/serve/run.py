#!/usr/bin/env python3
"""Load test of ember-serve (make bench-serve): the Fashion-MNIST CNN artifact served by

  ember          ember-serve with dynamic batching (max_batch_size 64, natural batching, 2 workers)
  ember-nobatch  ember-serve answering one request per inference (max_batch_size 1, a
                 worker per core): how TorchServe runs a model without batching
  fastapi        the same CNN in PyTorch 1.13 behind FastAPI + uvicorn (fastapi_server.py)

Each server runs in its own process, one at a time, in interleaved rounds; wrk (2 threads,
on the same 2 cores) sends the same KServe v2 JSON request (one 28x28 image) at each
concurrency level. Reported: requests/s, p50/p99 latency, non-2xx answers; the throughput
at p99 <= 50 ms; an overload run (10x the best level's connections) with the share of 503s
and the p99 of admitted requests from the server's own histogram; optionally a soak run
with the server's resident memory before and after.

    run.py --build build [--rounds 2] [--duration 5] [--levels 1,2,4,8,16,32,64,128]
           [--only ember,fastapi] [--soak 1000000] [--json out.json]
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, where python3-fastapi and python3-torch live


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_ready(port, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/v2/health/ready" % port, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server on port %d did not become ready" % port)


def make_artifact(build, work):
    path = os.path.join(work, "store", "cnn", "1", "model.ember")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run([os.path.join(build, "examples", "fashion_mnist"), "--epochs", "1", "--limit", "2000",
                        "--workers", "0", "--out", os.path.join(work, "train"), "--export", path],
                       check=True, stdout=subprocess.DEVNULL)
    return os.path.join(work, "store")


def request_body(work):
    import random
    rnd = random.Random(0)
    body = {"inputs": [{"name": "images", "shape": [1, 1, 28, 28], "datatype": "FP32",
                        "data": [round(rnd.uniform(-0.8, 2.0), 4) for _ in range(784)]}]}
    path = os.path.join(work, "body.json")
    with open(path, "w") as f:
        json.dump(body, f)
    return path


class Running:
    def __init__(self, name, build, store, work):
        self.name = name
        self.port = free_port()
        if name == "fastapi":
            cmd = [SYSTEM_PYTHON, os.path.join(HERE, "fastapi_server.py"), "--port", str(self.port)]
        else:
            batching = name == "ember"
            cfg = {"inference_address": "127.0.0.1:%d" % self.port, "management_address": "127.0.0.1:0",
                   "access_log": "", "auth": {"management": False},
                   "models": {"cnn": {"max_batch_size": 64 if batching else 1, "max_queue_delay_us": 0,
                                      "queue_capacity": 128, "workers": 2,
                                      "timeout_ms": 2000}}}
            cfg_path = os.path.join(work, name + ".json")
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            cmd = [os.path.join(build, "tools", "ember-serve"), "--model-store", store, "--config", cfg_path]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_ready(self.port)

    def url(self):
        return "http://127.0.0.1:%d/v2/models/cnn/infer" % self.port

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=5) as r:
            return r.read().decode()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wrk(url, body_path, connections, duration):
    env = dict(os.environ, BODY_FILE=body_path, CONTENT_TYPE="application/json")
    threads = min(2, connections)
    p = subprocess.run(["wrk", "-t%d" % threads, "-c%d" % connections, "-d%ds" % duration, "--timeout", "10s",
                        "-s", os.path.join(HERE, "wrk_report.lua"), url],
                       env=env, capture_output=True, text=True)
    line = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if not line:
        raise RuntimeError("wrk failed: " + p.stdout + p.stderr)
    r = json.loads(line[-1])
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
    return r


def histogram(text, name, **labels):
    """Buckets {le: cumulative count} of one histogram series."""
    want = ",".join('%s="%s"' % kv for kv in labels.items())
    out = {}
    for line in text.splitlines():
        m = re.match(r'^%s_bucket\{%s,le="([^"]+)"\} (\S+)$' % (re.escape(name), re.escape(want)), line)
        if m:
            out[float("inf") if m.group(1) == "+Inf" else float(m.group(1))] = float(m.group(2))
    return out


def quantile(buckets, q):
    items = sorted(buckets.items())
    total = items[-1][1] if items else 0
    if total == 0:
        return 0.0
    rank, prev_le, prev_c = q * total, 0.0, 0.0
    for le, c in items:
        if c >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_c) / max(c - prev_c, 1e-9)
        prev_le, prev_c = le, c
    return prev_le


def scalar(text, name):
    """The sum of a metric's samples over all label sets."""
    total = 0.0
    for line in text.splitlines():
        m = re.match(r'^%s(\{[^}]*\})? (\S+)$' % re.escape(name), line)
        if m:
            total += float(m.group(2))
    return total


def resident(text):
    m = re.search(r"^ember_process_resident_memory_bytes (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--levels", default="1,2,4,8,16,32,64,128")
    ap.add_argument("--only", default="ember,ember-nobatch,fastapi")
    ap.add_argument("--soak", type=int, default=0, help="requests for the memory soak run (0: skip)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    work = os.path.join(build, "bench_serve")
    os.makedirs(work, exist_ok=True)
    store = make_artifact(build, work)
    body = request_body(work)
    levels = [int(x) for x in args.levels.split(",")]
    servers = args.only.split(",")
    runs = {s: {c: [] for c in levels} for s in servers}
    compute = {s: [] for s in servers}  # model seconds per sample, from the server's histograms
    print("machine: %d cores shared by wrk and the server under test; request: one 28x28 image as KServe v2 JSON"
          % os.cpu_count())
    for rnd in range(args.rounds):
        for name in servers:
            srv = Running(name, build, store, work)
            try:
                wrk(srv.url(), body, 8, 2)  # warm-up
                for c in levels:
                    runs[name][c].append(wrk(srv.url(), body, c, args.duration))
                if name.startswith("ember"):
                    text = srv.metrics()
                    compute[name].append(scalar(text, "ember_inference_duration_seconds_sum") /
                                         max(scalar(text, "ember_batch_size_sum"), 1))
            finally:
                srv.stop()
            print("round %d: %s done" % (rnd + 1, name), file=sys.stderr)

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]

    print("\n| server | connections | req/s | p50 ms | p99 ms | non-2xx |")
    print("|---|---|---|---|---|---|")
    best = {}
    for name in servers:
        for c in levels:
            rs = runs[name][c]
            rps, p50, p99 = med([r["rps"] for r in rs]), med([r["p50_us"] for r in rs]) / 1e3, med([r["p99_us"] for r in rs]) / 1e3
            bad = sum(r["non2xx"] + r["errors"] + r["timeouts"] for r in rs)
            print("| %s | %d | %.0f | %.2f | %.2f | %d |" % (name, c, rps, p50, p99, bad))
            if p99 <= 50 and bad == 0 and rps > best.get(name, (0, 0))[0]:
                best[name] = (rps, c)
    print("\n| server | throughput at p99 <= 50 ms (req/s) | at connections | vs fastapi |")
    print("|---|---|---|---|")
    base = best.get("fastapi", (0, 0))[0]
    for name in servers:
        rps, c = best.get(name, (0, 0))
        ratio = "%.1fx" % (rps / base) if base else "-"
        print("| %s | %.0f | %d | %s |" % (name, rps, c, ratio))
    for name in servers:
        if compute[name]:
            per = med(compute[name])
            print("%s: the model alone takes %.0f us a sample (server histograms): %d cores of nothing but "
                  "inference would answer %.0f req/s, the machine's limit for this model" %
                  (name, per * 1e6, os.cpu_count(), os.cpu_count() / per))
    result = {"runs": runs, "best": best, "compute_seconds_per_sample": compute}
    if "ember" in servers:
        # Overload: 10x the connections of the best level (at least 10x the queue's worth).
        c = min(1024, max(10 * best.get("ember", (0, 16))[1], 256))
        srv = Running("ember", build, store, work)
        try:
            wrk(srv.url(), body, 8, 2)
            m0 = srv.metrics()
            r = wrk(srv.url(), body, c, args.duration * 2)
            m1 = srv.metrics()
        finally:
            srv.stop()
        h0 = histogram(m0, "ember_request_duration_seconds", model="cnn", version="1")
        h1 = histogram(m1, "ember_request_duration_seconds", model="cnn", version="1")
        delta = {le: h1[le] - h0.get(le, 0) for le in h1}
        admitted_p99 = quantile(delta, 0.99) * 1e3
        share = r["non2xx"] / max(r["requests"], 1)
        print("\noverload: %d connections: %.0f answers/s, %.1f%% refused (503), admitted p99 %.1f ms (server "
              "histogram), all answers p50 %.2f ms / p99 %.2f ms (wrk)"
              % (c, r["rps"], 100 * share, admitted_p99, r["p50_us"] / 1e3, r["p99_us"] / 1e3))
        result["overload"] = dict(r, connections=c, admitted_p99_ms=admitted_p99, refused_share=share)
    if args.soak and "ember" in servers:
        srv = Running("ember", build, store, work)
        try:
            wrk(srv.url(), body, 16, 3)
            rss0 = resident(srv.metrics())
            done, t0 = 0, time.time()
            while done < args.soak:
                r = wrk(srv.url(), body, 16, 10)
                done += r["requests"]
            rss1 = resident(srv.metrics())
        finally:
            srv.stop()
        print("soak: %d requests in %.0f s, resident memory %.1f MB -> %.1f MB (%+.1f%%)"
              % (done, time.time() - t0, rss0 / 1e6, rss1 / 1e6, 100 * (rss1 - rss0) / rss0))
        result["soak"] = {"requests": done, "rss_before": rss0, "rss_after": rss1}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()

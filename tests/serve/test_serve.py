#!/usr/bin/env python3
"""End-to-end tests of ember-serve (docs/serve.md).

Each test talks to the real server binary, started here on loopback ports (port 0: the
kernel picks free ones, read back from the server's "listening" log line), serving the
model store tests/serve/make_models.cpp wrote. Only the standard library is used on the
client side, plus promtool (Debian: prometheus) for the metrics format and chromium for
the status page.

    test_serve.py --server build/tools/ember-serve --store build/tests/serve_store --work DIR
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

ARGS = None
TOKEN = "test-management-token-0123456789"


def base_config(**overrides):
    cfg = {
        "inference_address": "127.0.0.1:0",
        "management_address": "127.0.0.1:0",
        "max_request_bytes": 1 << 20,
        "max_header_bytes": 8192,
        "request_timeout_ms": 1000,
        "auth": {"management_token": TOKEN},
        "model_defaults": {"max_batch_size": 16, "max_queue_delay_us": 2000},
        "models": {
            "mlp": {"max_batch_size": 32, "max_queue_delay_us": 5000, "default_version": "1",
                    "sticky_header": "X-User"},
            "slow": {"max_batch_size": 1, "queue_capacity": 2, "timeout_ms": 80, "workers": 1},
        },
    }
    cfg.update(overrides)
    return cfg


class Server:
    """The ember-serve process, its ports and its log lines."""

    def __init__(self, config, name, models=None):
        os.makedirs(ARGS.work, exist_ok=True)
        self.config_path = os.path.join(ARGS.work, name + ".json")
        with open(self.config_path, "w") as f:
            json.dump(config, f)
        self.stderr_path = os.path.join(ARGS.work, name + ".stderr")
        self.stderr = open(self.stderr_path, "w")  # a file: a full pipe would block the server
        cmd = [ARGS.server, "--config", self.config_path]
        cmd += ["--models", models] if models else ["--model-store", ARGS.store]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.lines = []
        self.lock = threading.Lock()
        self.listening = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.listening.wait(60):
            self.proc.kill()
            raise RuntimeError("ember-serve did not start: " + open(self.stderr_path).read())
        event = self.events("listening")[0]
        self.port = event["inference_port"]
        self.mport = event["management_port"]

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(line)
            if '"type":"listening"' in line:
                self.listening.set()

    def events(self, kind):
        with self.lock:
            lines = list(self.lines)
        out = []
        for line in lines:
            e = json.loads(line)  # every line must be JSON
            if e["type"] == kind:
                out.append(e)
        return out

    def request(self, method, path, body=None, headers=None, management=False, token=TOKEN, timeout=30):
        conn = http.client.HTTPConnection("127.0.0.1", self.mport if management else self.port, timeout=timeout)
        h = dict(headers or {})
        if management and token:
            h["Authorization"] = "Bearer " + token
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data

    def json(self, method, path, body=None, **kw):
        status, headers, data = self.request(method, path, body, **kw)
        return status, json.loads(data) if data else None

    def metrics(self):
        status, _, data = self.request("GET", "/metrics")
        assert status == 200
        return data.decode()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(10)
        self.proc.stdout.close()
        self.stderr.close()
        return self.proc.returncode


def metric(text, name, **labels):
    """The value of one sample in Prometheus text, or None."""
    want = ",".join('%s="%s"' % kv for kv in labels.items())
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$', line)
        if m and m.group(1) == name and (m.group(3) or "") == want:
            return float(m.group(4))
    return None


def infer_body(rows, name="features"):
    return {"inputs": [{"name": name, "shape": [len(rows), len(rows[0])], "datatype": "FP32",
                        "data": [x for r in rows for x in r]}]}


def close(a, b, rel=1e-5, abs_=1e-6):
    return len(a) == len(b) and all(abs(x - y) <= abs_ + rel * abs(y) for x, y in zip(a, b))


class ServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ARGS.store, "reference.json")) as f:
            cls.ref = json.load(f)
        cls.s = Server(base_config(), "main")

    @classmethod
    def tearDownClass(cls):
        code = cls.s.stop()
        assert code == 0, "ember-serve exited with %s" % code

    def rows(self, key):
        x = self.ref[key]["input"]
        return [x[i * 20:(i + 1) * 20] for i in range(len(x) // 20)]

    # ---- health and metadata

    def test_health_routes(self):
        s = self.s
        self.assertEqual(s.json("GET", "/ping"), (200, {"status": "Healthy"}))
        self.assertEqual(s.json("GET", "/v2/health/live"), (200, {"live": True}))
        self.assertEqual(s.json("GET", "/v2/health/ready"), (200, {"ready": True}))
        status, meta = s.json("GET", "/v2")
        self.assertEqual(status, 200)
        self.assertIn("binary_tensor_data", meta["extensions"])
        self.assertEqual(s.json("GET", "/v2/models/mlp/ready")[1]["ready"], True)

    def test_model_metadata(self):
        status, meta = self.s.json("GET", "/v2/models/mlp/versions/1")
        self.assertEqual(status, 200)
        self.assertEqual(meta["name"], "mlp")
        self.assertEqual(meta["versions"], ["1", "2", "3"])
        self.assertEqual(meta["inputs"], [{"name": "features", "datatype": "FP32", "shape": [-1, 20]}])
        self.assertEqual(meta["outputs"], [{"name": "logits", "datatype": "FP32", "shape": [-1, 3]}])
        self.assertEqual(meta["labels"], ["a", "b", "c"])
        status, meta = self.s.json("GET", "/v2/models/fixed")
        self.assertEqual(meta["inputs"][0]["shape"], [2, 4])

    # ---- inference

    def test_kserve_json_matches_eager(self):
        for version in ("1", "2"):
            status, out = self.s.json("POST", "/v2/models/mlp/versions/%s/infer" % version,
                                      dict(infer_body(self.rows("mlp1")), id="req-7"))
            self.assertEqual(status, 200, out)
            self.assertEqual(out["model_name"], "mlp")
            self.assertEqual(out["model_version"], version)
            self.assertEqual(out["id"], "req-7")
            o = out["outputs"][0]
            self.assertEqual((o["name"], o["datatype"], o["shape"]), ("logits", "FP32", [4, 3]))
            want = self.ref["mlp" + version]["output"]
            self.assertTrue(close(o["data"], want), (o["data"], want))

    def test_kserve_binary_extension(self):
        rows = self.rows("mlp1")
        header = json.dumps({"inputs": [{"name": "features", "shape": [4, 20], "datatype": "FP32",
                                         "parameters": {"binary_data_size": 320}}],
                             "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]}).encode()
        body = header + struct.pack("<80f", *[x for r in rows for x in r])
        status, headers, data = self.s.request("POST", "/v2/models/mlp/versions/1/infer", body,
                                               {"Inference-Header-Content-Length": str(len(header))})
        self.assertEqual(status, 200, data[:300])
        n = int(headers["inference-header-content-length"])
        meta = json.loads(data[:n])
        o = meta["outputs"][0]
        self.assertEqual((o["shape"], o["parameters"]["binary_data_size"]), ([4, 3], 48))
        values = struct.unpack("<12f", data[n:])
        self.assertTrue(close(values, self.ref["mlp1"]["output"]))
        # A binary size that runs past the body.
        bad = header.replace(b"320", b"999")
        status, _, data = self.s.request("POST", "/v2/models/mlp/versions/1/infer", bad + b"\0" * 320,
                                         {"Inference-Header-Content-Length": str(len(bad))})
        self.assertEqual(status, 400)
        self.assertIn("binary_data_size 999 runs past the end of the body", json.loads(data)["error"])

    def test_dynamic_batching_splits_answers_back(self):
        s = self.s
        import random
        rnd = random.Random(5)
        rows = [[rnd.uniform(-2, 2) for _ in range(20)] for _ in range(24)]
        singles = []
        for r in rows:
            status, out = s.json("POST", "/v2/models/mlp/versions/1/infer", infer_body([r]))
            self.assertEqual(status, 200)
            singles.append(out["outputs"][0]["data"])
        before = s.metrics()
        rows0 = metric(before, "ember_batch_size_sum", model="mlp", version="1")
        batches0 = metric(before, "ember_batch_size_count", model="mlp", version="1")
        with concurrent.futures.ThreadPoolExecutor(24) as pool:
            results = list(pool.map(lambda r: s.json("POST", "/v2/models/mlp/versions/1/infer", infer_body([r])), rows))
        for (status, out), want in zip(results, singles):
            self.assertEqual(status, 200)
            self.assertTrue(close(out["outputs"][0]["data"], want), (out, want))
        after = s.metrics()
        rows1 = metric(after, "ember_batch_size_sum", model="mlp", version="1")
        batches1 = metric(after, "ember_batch_size_count", model="mlp", version="1")
        self.assertEqual(rows1 - rows0, 24)
        self.assertLess(batches1 - batches0, 24, "no two requests met in a batch")

    def test_torchserve_predictions(self):
        s = self.s
        # JSON: one sample as a nested list -> the classifier's labels with probabilities.
        status, out = s.json("POST", "/predictions/mlp/1", self.rows("mlp1")[0])
        self.assertEqual(status, 200, out)
        logits = self.ref["mlp1"]["output"][:3]
        import math
        e = [math.exp(x - max(logits)) for x in logits]
        probs = {k: v / sum(e) for k, v in zip("abc", e)}
        self.assertEqual(set(out), {"a", "b", "c"})
        for k in "abc":
            self.assertAlmostEqual(out[k], probs[k], places=5)
        # Raw uint8 pixels through the artifact's normalization: two 8x8 images.
        pixels = bytes(self.ref["img"]["pixels"])
        status, headers, data = s.request("POST", "/predictions/img", pixels,
                                          {"Content-Type": "application/octet-stream"})
        self.assertEqual(status, 200, data)
        out = json.loads(data)
        self.assertEqual(len(out), 2)
        want = self.ref["img"]["output"]
        labels = ["zero", "one", "two", "three"]
        for i in range(2):
            for j, label in enumerate(labels):
                self.assertAlmostEqual(out[i][label], want[i * 4 + j], places=5)
        status, _, data = s.request("POST", "/predictions/img", pixels[:100], {"Content-Type": "image/x-raw"})
        self.assertEqual(status, 400)
        self.assertIn("not a whole number of samples of 64 uint8 values", json.loads(data)["error"])

    # ---- errors

    def test_errors_name_the_problem(self):
        s = self.s
        status, out = s.json("POST", "/v2/models/mlp/infer", infer_body([[1.0] * 19]))
        self.assertEqual(status, 400)
        self.assertIn('input "features" must be FP32[-1, 20] (-1: any batch size), got FP32[1, 19]', out["error"])
        body = infer_body([[1.0] * 20])
        body["inputs"][0]["datatype"] = "FP7"
        status, out = s.json("POST", "/v2/models/mlp/infer", body)
        self.assertEqual(status, 400)
        self.assertIn('unknown datatype "FP7"', out["error"])
        body["inputs"][0]["datatype"] = "FP64"
        status, out = s.json("POST", "/v2/models/mlp/infer", body)
        self.assertEqual(status, 400)
        self.assertIn("got FP64[1, 20]", out["error"])
        status, _, data = s.request("POST", "/v2/models/mlp/infer", b'{"inputs": [', {"Content-Type": "application/json"})
        self.assertEqual(status, 400)
        self.assertIn("not valid JSON", json.loads(data)["error"])
        status, out = s.json("POST", "/v2/models/mlp/infer", {"outputs": []})
        self.assertEqual(status, 400)
        self.assertIn('needs "inputs"', out["error"])
        status, out = s.json("POST", "/v2/models/nope/infer", infer_body([[1.0] * 20]))
        self.assertEqual(status, 404)
        self.assertIn('no model named "nope"', out["error"])
        status, out = s.json("POST", "/v2/models/mlp/versions/8/infer", infer_body([[1.0] * 20]))
        self.assertEqual(status, 404)
        self.assertIn('has no version "8"', out["error"])
        self.assertEqual(s.json("GET", "/v2/models/mlp/infer")[0], 405)
        self.assertEqual(s.json("GET", "/nothing/here")[0], 404)
        status, out = s.json("POST", "/v2/models/fixed/infer",
                             {"inputs": [{"name": "x", "shape": [3, 4], "datatype": "FP32", "data": [0] * 12}]})
        self.assertEqual(status, 400)
        self.assertIn("must be FP32[2, 4]", out["error"])
        status, out = s.json("POST", "/v2/models/fixed/infer",
                             {"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32", "data": list(range(8))}]})
        self.assertEqual(status, 200)
        self.assertEqual(out["outputs"][0]["data"], [2 * i + 1 for i in range(8)])

    def test_limits_413_431(self):
        s = self.s
        status, _, data = s.request("POST", "/v2/models/mlp/infer", b"x" * (2 << 20), {"Content-Type": "application/json"})
        self.assertEqual(status, 413)
        self.assertIn("max_request_bytes", json.loads(data)["error"])
        status, _, data = s.request("GET", "/ping", headers={"X-Big": "y" * 10000})
        self.assertEqual(status, 431)
        self.assertEqual(s.json("GET", "/ping")[0], 200)

    def test_backpressure_503_and_timeout_504(self):
        s = self.s
        x = {"inputs": [{"name": "x", "shape": [1, 128, 128], "datatype": "FP32",
                         "parameters": {"binary_data_size": 65536}}]}
        header = json.dumps(x).encode()
        body = header + b"\0" * 65536  # zeros: the chain stays at zero, the work is the same

        def call(_):
            return s.request("POST", "/v2/models/slow/infer", body,
                             {"Inference-Header-Content-Length": str(len(header))})

        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            results = list(pool.map(call, range(12)))
        codes = [r[0] for r in results]
        self.assertIn(200, codes)
        self.assertIn(503, codes, codes)
        self.assertIn(504, codes, codes)
        for status, headers, data in results:
            if status == 503:
                self.assertEqual(headers["retry-after"], "1")
                self.assertIn("queue_capacity", json.loads(data)["error"])
            if status == 504:
                self.assertIn("timeout_ms 80", json.loads(data)["error"])
        text = s.metrics()
        self.assertGreaterEqual(metric(text, "ember_requests_total", model="slow", version="1", code="503"), 1)

    def test_slow_and_malformed_clients(self):
        s = self.s
        rss0 = metric(s.metrics(), "ember_process_resident_memory_bytes")
        # Slowloris: half a request, then silence; the server closes it after request_timeout_ms.
        c = socket.create_connection(("127.0.0.1", s.port))
        c.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n")
        c.settimeout(5)
        t0 = time.time()
        data = c.recv(4096)
        self.assertLess(time.time() - t0, 3)
        self.assertTrue(data == b"" or b" 408 " in data.split(b"\r\n")[0], data)
        c.close()
        # Truncated body, garbage, a bad request line, an absurd Content-Length.
        for raw in (b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"in",
                    b"\x00\xff\xfe garbage \r\n\r\n",
                    b"GET  HTTP/1.1\r\n\r\n",
                    b"POST /ping HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"):
            c = socket.create_connection(("127.0.0.1", s.port))
            c.sendall(raw)
            c.shutdown(socket.SHUT_WR)
            c.settimeout(5)
            try:
                reply = c.recv(4096)
            except ConnectionResetError:
                reply = b""
            c.close()
            self.assertTrue(reply == b"" or reply.startswith(b"HTTP/1.1 4"), (raw, reply))
        # Many connections opened and dropped.
        for _ in range(200):
            c = socket.create_connection(("127.0.0.1", s.port))
            c.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n")
            c.close()
        self.assertEqual(s.json("GET", "/ping")[0], 200)
        rss1 = metric(s.metrics(), "ember_process_resident_memory_bytes")
        self.assertLess(rss1, rss0 + 64e6)

    def test_fuzzed_bodies_get_400_never_a_crash(self):
        s = self.s
        import random
        rnd = random.Random(11)
        good = json.dumps(dict(infer_body(self.rows("mlp1")), id="f")).encode()
        header = json.dumps({"inputs": [{"name": "features", "shape": [1, 20], "datatype": "FP32",
                                         "parameters": {"binary_data_size": 80}}]}).encode()
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        codes = {}
        for i in range(400):
            binary = i % 4 == 3
            body = bytearray(header + bytes(80) if binary else good)
            for _ in range(rnd.randrange(1, 6)):  # flip, insert, delete or truncate
                k = rnd.randrange(4)
                pos = rnd.randrange(len(body))
                if k == 0:
                    body[pos] = rnd.randrange(256)
                elif k == 1:
                    body[pos:pos] = rnd.choice([b"[", b"]", b"{", b"}", b",", b"-", b"1e999", b"\"", b"null", b"\xff"])
                elif k == 2:
                    del body[pos:pos + rnd.randrange(1, 20)]
                else:
                    del body[pos:]
            headers = {"Content-Type": "application/json"}
            if binary:
                headers["Inference-Header-Content-Length"] = str(rnd.choice([len(header), len(body), len(body) + 5, 0]))
            conn.request("POST", "/v2/models/mlp/versions/1/infer", bytes(body), headers)
            r = conn.getresponse()
            data = r.read()
            codes[r.status] = codes.get(r.status, 0) + 1
            self.assertIn(r.status, (200, 400), data[:300])
            if r.status == 400:
                self.assertIn("error", json.loads(data))
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        conn.close()
        self.assertGreater(codes.get(400, 0), 300)
        self.assertEqual(s.json("GET", "/ping")[0], 200)

    # ---- observability

    def test_metrics_pass_promtool(self):
        s = self.s
        s.json("POST", "/v2/models/mlp/versions/1/infer", infer_body([[0.5] * 20]))
        text = s.metrics()
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool (Debian: prometheus) is missing: run scripts/setup.sh")
        p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertGreaterEqual(metric(text, "ember_requests_total", model="mlp", version="1", code="200"), 1)
        self.assertGreaterEqual(metric(text, "ember_request_duration_seconds_bucket", model="mlp", version="1",
                                       le="+Inf"), 1)
        for name in ("ember_inference_duration_seconds_count", "ember_queue_duration_seconds_count",
                     "ember_batch_size_count"):
            self.assertGreaterEqual(metric(text, name, model="mlp", version="1"), 1, name)
        self.assertIsNotNone(metric(text, "ember_inflight_requests"))
        self.assertGreater(metric(text, "ember_process_resident_memory_bytes"), 1e6)
        # The management port serves the same metrics.
        status, _, data = s.request("GET", "/metrics", management=True, token=None)
        self.assertEqual(status, 200)
        self.assertIn("ember_requests_total", data.decode())

    def test_access_log_is_json_with_request_id(self):
        s = self.s
        status, headers, _ = s.request("POST", "/v2/models/mlp/versions/1/infer", json.dumps(infer_body([[0.1] * 20])),
                                       {"X-Request-Id": "abc-123", "Content-Type": "application/json"})
        self.assertEqual(status, 200)
        self.assertEqual(headers["x-request-id"], "abc-123")
        _, headers, _ = s.request("GET", "/ping")
        self.assertRegex(headers["x-request-id"], r"^[0-9a-f]{16}$")  # generated when absent
        for _ in range(100):
            hits = [e for e in s.events("access") if e["request_id"] == "abc-123"]
            if hits:
                break
            time.sleep(0.02)
        self.assertEqual(len(hits), 1)
        e = hits[0]
        self.assertEqual((e["status"], e["model"], e["version"], e["method"]), (200, "mlp", "1", "POST"))
        self.assertGreaterEqual(e["batch_size"], 1)
        self.assertIsInstance(e["latency_ms"], (int, float))

    def test_drift_statistics(self):
        s = self.s
        import random
        rnd = random.Random(9)
        # Pixels like the reference (uniform 0..255): small PSI.
        same = bytes(rnd.randrange(256) for _ in range(64 * 64))
        self.assertEqual(s.request("POST", "/predictions/img", same, {"Content-Type": "application/octet-stream"})[0], 200)
        status, d = s.json("GET", "/v2/models/img/drift")
        self.assertEqual(status, 200)
        self.assertTrue(d["reference"])
        self.assertLess(d["psi"], 0.1, d)
        # Bright images: the distribution moves.
        bright = bytes(rnd.randrange(200, 256) for _ in range(64 * 64 * 3))
        self.assertEqual(s.request("POST", "/predictions/img", bright, {"Content-Type": "application/octet-stream"})[0], 200)
        status, d = s.json("GET", "/v2/models/img/drift")
        self.assertGreater(d["psi"], 0.5, d)
        self.assertGreater(d["mean_shift"], 0.5, d)
        self.assertGreater(metric(s.metrics(), "ember_drift_psi", model="img", version="1"), 0.5)

    def test_status_page_in_headless_browser(self):
        s = self.s
        s.json("POST", "/v2/models/mlp/versions/1/infer", infer_body([[0.2] * 20]))
        status, st = s.json("GET", "/status")
        self.assertEqual(status, 200)
        mlp = [m for m in st["models"] if m["name"] == "mlp"][0]
        v1 = [v for v in mlp["versions"] if v["version"] == "1"][0]
        self.assertGreater(v1["requests"], 0)
        self.assertGreater(v1["p99_ms"], 0)
        browser = shutil.which("chromium")
        self.assertIsNotNone(browser, "chromium is missing: run scripts/setup.sh")
        p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                            "--virtual-time-budget=5000", "--dump-dom", "http://127.0.0.1:%d/" % s.port],
                           capture_output=True, text=True, timeout=120)
        dom = p.stdout
        self.assertIn('data-model="mlp"', dom, p.stderr[-2000:])
        self.assertIn('data-version="1"', dom)
        self.assertRegex(dom, r"\d+ model\(s\), \d+ request\(s\) in flight")

    # ---- management, rollouts

    def test_management_needs_token(self):
        s = self.s
        self.assertEqual(s.json("GET", "/models", management=True, token=None)[0], 401)
        self.assertEqual(s.json("GET", "/models", management=True, token="wrong-token-000000000000")[0], 401)
        status, out = s.json("GET", "/models", management=True)
        self.assertEqual(status, 200)
        names = sorted(m["modelName"] for m in out["models"])
        self.assertEqual(names, ["fixed", "img", "mlp", "slow"])
        # Management routes are not on the inference port.
        self.assertEqual(s.json("GET", "/models")[0], 404)

    def test_scale_and_default_version(self):
        s = self.s
        status, out = s.json("PUT", "/models/img?min_worker=2", management=True)
        self.assertEqual(status, 200, out)
        self.assertEqual(out["versions"][0]["workers"], 2)
        status, out = s.json("PUT", "/models/img?min_worker=1", management=True)
        self.assertEqual(out["versions"][0]["workers"], 1)
        status, out = s.json("PUT", "/models/mlp/2/set-default", management=True)
        self.assertEqual((status, out["default_version"]), (200, "2"))
        self.assertEqual(s.json("POST", "/v2/models/mlp/infer", infer_body([[0.0] * 20]))[1]["model_version"], "2")
        status, out = s.json("PUT", "/models/mlp/1/set-default", management=True)
        self.assertEqual(out["default_version"], "1")
        status, out = s.json("PUT", "/models/mlp/7/set-default", management=True)
        self.assertEqual(status, 400)
        self.assertIn('has no version "7"', out["error"])

    def test_canary_split_and_sticky(self):
        s = self.s
        status, out = s.json("PUT", "/models/mlp/traffic", {"1": 80, "2": 20}, management=True)
        self.assertEqual(status, 200, out)
        try:
            body = json.dumps(infer_body([[0.3] * 20]))
            counts = {"1": 0, "2": 0}
            lock = threading.Lock()

            def worker(n):
                conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
                local = {"1": 0, "2": 0}
                for _ in range(n):
                    conn.request("POST", "/v2/models/mlp/infer", body, {"Content-Type": "application/json"})
                    r = conn.getresponse()
                    local[json.loads(r.read())["model_version"]] += 1
                conn.close()
                with lock:
                    for k in local:
                        counts[k] += local[k]

            threads = [threading.Thread(target=worker, args=(1250,)) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(counts["1"] + counts["2"], 10000)
            self.assertAlmostEqual(counts["2"] / 10000, 0.20, delta=0.03)
            # Sticky: one user always lands on one version; users spread over both.
            seen = {}
            for user in range(40):
                versions = {s.json("POST", "/v2/models/mlp/infer", infer_body([[0.3] * 20]),
                                   headers={"X-User": "user-%d" % user})[1]["model_version"] for _ in range(5)}
                self.assertEqual(len(versions), 1)
                seen[user] = versions.pop()
            self.assertEqual(set(seen.values()), {"1", "2"})
        finally:
            s.json("PUT", "/models/mlp/traffic", {}, management=True)

    def test_shadow_compares_and_never_answers(self):
        s = self.s
        import random
        rnd = random.Random(3)
        rows = [[rnd.uniform(-2, 2) for _ in range(20)] for _ in range(40)]
        for shadow, disagree in (("2", True), ("3", False)):
            status, out = s.json("PUT", "/models/mlp/shadow?version=" + shadow, management=True)
            self.assertEqual(status, 200, out)
            before = metric(s.metrics(), "ember_shadow_requests_total", model="mlp", version=shadow) or 0
            for r in rows:
                status, out = s.json("POST", "/v2/models/mlp/versions/1/infer", infer_body([r]))
                self.assertEqual(out["model_version"], "1")  # the shadow never answers
            for _ in range(200):
                text = s.metrics()
                n = metric(text, "ember_shadow_requests_total", model="mlp", version=shadow) or 0
                if n - before >= len(rows):
                    break
                time.sleep(0.02)
            self.assertEqual(n - before, len(rows))
            d = metric(text, "ember_shadow_disagreements_total", model="mlp", version=shadow) or 0
            if disagree:
                self.assertGreater(d, 0)
            else:
                self.assertEqual(d, 0)
        s.json("PUT", "/models/mlp/shadow", management=True)

    def test_register_hot_swap_unregister_under_load(self):
        s = self.s
        q = "/models?url=mlp/2/model.ember&model_name=mlp&version=9"
        status, out = s.json("POST", q, management=True)
        self.assertEqual(status, 200, out)
        body = infer_body(self.rows("mlp1"))
        stop = threading.Event()
        failures, answers = [], []

        def load():
            while not stop.is_set():
                status, out = s.json("POST", "/v2/models/mlp/versions/9/infer", body)
                if status != 200:
                    failures.append((status, out))
                else:
                    answers.append(out["outputs"][0]["data"])

        threads = [threading.Thread(target=load) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        for src in ("mlp/1/model.ember", "mlp/2/model.ember", "mlp/1/model.ember"):
            status, out = s.json("POST", "/models?url=%s&model_name=mlp&version=9" % src, management=True)
            self.assertEqual(status, 200, out)
            time.sleep(0.2)
        stop.set()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])
        self.assertGreater(len(answers), 20)
        # Every answer came from one of the two weight sets; the last swap is live now.
        for a in answers:
            self.assertTrue(close(a, self.ref["mlp1"]["output"]) or close(a, self.ref["mlp2"]["output"]))
        self.assertTrue(close(s.json("POST", "/v2/models/mlp/versions/9/infer", body)[1]["outputs"][0]["data"],
                              self.ref["mlp1"]["output"]))
        status, out = s.json("POST", "/models?url=missing/model.ember&model_name=mlp&version=10", management=True)
        self.assertEqual(status, 400)
        self.assertIn("missing/model.ember", out["error"])
        self.assertEqual(s.json("DELETE", "/models/mlp/9", management=True)[0], 200)
        self.assertEqual(s.json("POST", "/v2/models/mlp/versions/9/infer", body)[0], 404)
        self.assertEqual(s.json("DELETE", "/models/mlp/9", management=True)[0], 404)


class LifecycleTest(unittest.TestCase):
    def test_unknown_config_key_fails_start_up(self):
        path = os.path.join(ARGS.work, "bad.json")
        with open(path, "w") as f:
            json.dump(base_config(max_batch=8), f)
        p = subprocess.run([ARGS.server, "--model-store", ARGS.store, "--config", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn('unknown setting "max_batch"', p.stderr)
        self.assertIn("serve.json accepts:", p.stderr)

    def test_inference_token(self):
        token = "inference-token-abcdefghijklmnop"
        s = Server(base_config(auth={"management": False, "inference_token": token}), "token")
        try:
            body = infer_body([[0.0] * 20])
            status, out = s.json("POST", "/v2/models/mlp/infer", body)
            self.assertEqual(status, 401)
            self.assertIn("Authorization: Bearer", out["error"])
            status, out = s.json("POST", "/v2/models/mlp/infer", body, headers={"Authorization": "Bearer " + token})
            self.assertEqual(status, 200, out)
            self.assertEqual(s.json("GET", "/ping")[0], 200)  # health stays open
            self.assertEqual(s.json("GET", "/models", management=True, token=None)[0], 200)  # management auth off
        finally:
            self.assertEqual(s.stop(), 0)

    def test_sigterm_drains_in_flight_requests(self):
        s = Server(base_config(drain_timeout_ms=20000, models={"slow": {"max_batch_size": 1, "timeout_ms": 20000}}),
                   "drain")
        x = {"inputs": [{"name": "x", "shape": [1, 128, 128], "datatype": "FP32",
                         "parameters": {"binary_data_size": 65536}}]}
        header = json.dumps(x).encode()
        body = header + b"\0" * 65536
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            futures = [pool.submit(s.request, "POST", "/v2/models/slow/infer", body,
                                   {"Inference-Header-Content-Length": str(len(header))}) for _ in range(6)]
            inflight = 0
            for _ in range(500):  # wait until all six are in flight (the /metrics call itself is one more)
                inflight = (metric(s.metrics(), "ember_inflight_requests") or 0) - 1
                if inflight >= 6:
                    break
                time.sleep(0.002)
            s.proc.send_signal(signal.SIGTERM)
            self.assertEqual(inflight, 6)
            codes = [f.result()[0] for f in futures]
        self.assertEqual(codes, [200] * 6)
        self.assertEqual(s.stop(), 0)
        stopped = s.events("stopped")
        self.assertEqual(stopped[0]["unanswered"], 0)
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", s.port), timeout=2)


class FashionTest(unittest.TestCase):
    """The main job's path end to end: the Fashion-MNIST CNN that examples/fashion_mnist
    trained and exported, served, classifying test images sent as raw IDX bytes."""

    @unittest.skipUnless(os.environ.get("FASHION_ARTIFACT"), "no FASHION_ARTIFACT")
    def test_serves_the_exported_cnn(self):
        import gzip
        data = "/usr/share/datasets/fashion-mnist/"
        images = gzip.open(data + "t10k-images-idx3-ubyte.gz").read()[16:]
        labels = gzip.open(data + "t10k-labels-idx1-ubyte.gz").read()[8:]
        s = Server(base_config(models={"fashion": {"max_batch_size": 64}}), "fashion",
                   models="fashion=" + os.environ["FASHION_ARTIFACT"])
        try:
            status, meta = s.json("GET", "/v2/models/fashion")
            self.assertEqual(meta["inputs"][0]["shape"], [-1, 1, 28, 28])
            names = meta["labels"]
            correct, n = 0, 1000
            for start in range(0, n, 100):
                chunk = images[start * 784:(start + 100) * 784]
                status, _, body = s.request("POST", "/predictions/fashion", chunk,
                                            {"Content-Type": "application/octet-stream"})
                self.assertEqual(status, 200, body[:200])
                for i, probs in enumerate(json.loads(body)):
                    top = max(probs, key=probs.get)
                    correct += top == names[labels[start + i]]
            self.assertGreater(correct / n, 0.6)
        finally:
            self.assertEqual(s.stop(), 0)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--work", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()

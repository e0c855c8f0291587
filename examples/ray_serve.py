"""Serves digits_cnn over HTTP with Ray Serve (pterun.ray.deployment) on
loopback, sends held-out digits from concurrent clients, and prints the
accuracy and the latency percentiles.

    pip install 'pterun[ray]'
    python3 examples/ray_serve.py [--replicas 1] [--clients 8] [--requests 800]

Each request is one image as an .npy body (the first half) or as JSON (the
second half); Serve joins concurrent requests into one pterun call.
"""

import argparse
import io
import json
import os
import pathlib
import socket
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import ray
from ray import serve

import pterun.ray

ROOT = pathlib.Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def classify(url, image, as_json):
    """(predicted digit, seconds) of one request."""
    if as_json:
        body, kind = json.dumps({"inputs": [image[None].tolist()]}).encode(), "application/json"
    else:
        buffer = io.BytesIO()
        np.save(buffer, image[None])
        body, kind = buffer.getvalue(), "application/x-npy"
    request = urllib.request.Request(url, data=body, headers={"Content-Type": kind})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as answer:
        payload = answer.read()
    elapsed = time.perf_counter() - start
    if as_json:
        logits = np.array(json.loads(payload)["outputs"][0]["data"])
    else:
        logits = np.load(io.BytesIO(payload))
    return int(logits.argmax()), elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", default=ROOT / "tests" / "fixtures" / "digits_cnn.pte")
    parser.add_argument("--data", default=ROOT / "tests" / "fixtures" / "digits_cnn_heldout.npz")
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--requests", type=int, default=800)
    args = parser.parse_args()

    held_out = np.load(args.data)
    images, labels = held_out["images"], held_out["labels"]

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(include_dashboard=False, log_to_driver=False)
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(pterun.ray.deployment(str(args.program), num_replicas=args.replicas,
                                    max_batch_size=16),
              name="digits", route_prefix="/digits")
    url = f"http://127.0.0.1:{port}/digits"
    with urllib.request.urlopen(url + "/healthz") as answer:  # the readiness check
        print(f"ready:      {json.loads(answer.read())}")

    picks = [i % len(images) for i in range(args.requests)]
    for i in picks[:20]:  # warm-up
        classify(url, images[i], False)
    start = time.perf_counter()
    with ThreadPoolExecutor(args.clients) as pool:
        results = list(pool.map(
            lambda k: classify(url, images[picks[k]], k >= args.requests // 2),
            range(args.requests)))
    elapsed = time.perf_counter() - start
    serve.shutdown()
    ray.shutdown()

    predicted = np.array([p for p, _ in results])
    latency_ms = np.array([t for _, t in results]) * 1e3
    correct = int((predicted == labels[picks]).sum())
    p50, p90, p99 = np.percentile(latency_ms, [50, 90, 99])
    print(f"requests:   {args.requests} single images from {args.clients} clients, "
          f"{args.replicas} replica(s), loopback")
    print(f"accuracy:   {correct / args.requests:.2%} ({correct}/{args.requests} correct)")
    print(f"latency:    p50 {p50:.1f} ms, p90 {p90:.1f} ms, p99 {p99:.1f} ms")
    print(f"throughput: {args.requests / elapsed:,.0f} requests/s")


if __name__ == "__main__":
    main()

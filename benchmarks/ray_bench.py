"""pterun on Ray, measured with digits_cnn on a local cluster.

Batch inference: rows/s of a plain loop of pterun calls of --batch-size
rows in one process beside Ray Data (pterun.ray.predict) on 1 and 2
actors, and Ray's own time per --batch-size rows: with Ray batches of
--batch-size rows (on blocks of 4096), and with predict's default Ray
batches (16384 rows for digits_cnn) run in pterun calls of --batch-size
rows (on blocks of --block-rows). --ray-defaults adds the same two with
map_batches' own defaults (a copy of every batch, the UDF on a thread of
its own) instead of predict's options. Serving: p50/p99 latency of the
Serve deployment under a bounded load (a fixed number of clients, each
sending its next request when the last is answered) on loopback.

    python3 benchmarks/ray_bench.py [--rows 262144] [--batch-size 256] [--repeat 2]
                                    [--block-rows 32768] [--ray-defaults]
                                    [--clients 8] [--requests 1600] [--skip-serve]

How Ray's time is measured: each actor runs a Predictor subclass that
writes, for every batch, its rows, when its call began and ended, the time
spent in pterun, and its process's CPU time (all threads) at both points.
From an actor's first batch to its last (start-up excluded), the time
between batch starts less the Predictor call is Ray's (handing blocks to
the actor, slicing batches, converting columns, building output blocks,
scheduling the next task), counted per --batch-size rows; the Predictor
call less pterun is pterun.ray's. Both wall and CPU time are printed: on a
loaded machine the wall times mostly measure who else ran. The plain loop
runs the same pterun calls with the same number of pterun threads (one
per actor: Ray reserves one CPU for each); plain-loop and Ray rounds
alternate, and the best round of each is printed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import ray
from ray import serve

import pterun
import pterun.ray

REPO = Path(__file__).resolve().parent.parent
PROGRAM = REPO / "tests" / "fixtures" / "digits_cnn.pte"
HELD_OUT = REPO / "tests" / "fixtures" / "digits_cnn_heldout.npz"


class TimedPredictor(pterun.ray.Predictor):
    """A Predictor that notes, for each batch, its rows, when its call began
    and ended, the time spent in pterun, and this process's CPU time at both
    points, one line per batch in a file of its own (columns would add Ray
    work of their own to every batch)."""

    def __init__(self, *args, stamps_dir, **kwargs):
        super().__init__(*args, **kwargs)
        self._stamps = open(Path(stamps_dir) / f"{os.getpid()}.txt", "a", buffering=1)

    def run_rows(self, arrays):
        start, cpu = time.perf_counter(), time.process_time()
        outputs = super().run_rows(arrays)
        self._pterun = (time.perf_counter() - start, time.process_time() - cpu, len(arrays[0]))
        return outputs

    def __call__(self, batch):
        begin, cpu_begin = time.perf_counter(), time.process_time()
        out = super().__call__(batch)
        end, cpu_end = time.perf_counter(), time.process_time()
        pt, pt_cpu, rows = self._pterun
        self._stamps.write(f"{begin} {end} {pt} {cpu_begin} {cpu_end} {pt_cpu} {rows}\n")
        return out  # (a line-buffered write)


def plain_loop(images, batch_size, threads, repeats=3):
    """(wall, CPU) seconds per batch of direct pterun calls, from the pass
    with the least wall time of ``repeats``."""
    pterun.set_num_threads(threads)
    method = pterun.load_program(str(PROGRAM)).load_method("forward")
    batches = [images[i:i + batch_size] for i in range(0, len(images), batch_size)]
    method([batches[0]])  # warm-up
    best = (float("inf"), 0.0)
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        for b in batches:
            method([b])
        best = min(best, ((time.perf_counter() - start) / len(batches),
                          (time.process_time() - cpu) / len(batches)))
    return best


def ray_data(images, actors, block_rows, batch_size=None, rows_per_call=None,
             ray_defaults=False):
    """End-to-end seconds, and each actor's steady state: from its first
    batch's start to its last batch's start, per row, the wall and CPU time
    of the whole cycle, of the Predictor calls, and of pterun; and the mean
    pause (wall, CPU) from the end of one Predictor call to the start of
    the next within a task (Ray's time per batch) and from a task's last
    call to the next task's first (Ray's time per batch and task). A task
    is one block (or, for Ray batches larger than a block, one batch), and
    an actor runs its tasks one after another, so a task ends every
    block_rows / batch rows batches.

    By default through pterun.ray.predict (its Ray batches when
    ``batch_size`` is None, its map_batches options); with ``ray_defaults``
    through map_batches with Ray's own options."""
    blocks = [images[i:i + block_rows] for i in range(0, len(images), block_rows)]
    dataset = ray.data.from_numpy(blocks).materialize()
    with tempfile.TemporaryDirectory() as stamps_dir:
        start = time.perf_counter()
        args = {"program": str(PROGRAM), "stamps_dir": stamps_dir,
                "rows_per_call": rows_per_call}
        if ray_defaults:
            out = dataset.map_batches(
                TimedPredictor, fn_constructor_kwargs=args, batch_size=batch_size,
                batch_format="numpy", num_cpus=1,
                compute=ray.data.ActorPoolStrategy(size=actors))
        else:
            out = pterun.ray.predict(dataset, predictor_class=TimedPredictor,
                                     batch_size=batch_size, concurrency=actors, num_cpus=1,
                                     **args)
        out = out.materialize()
        wall = time.perf_counter() - start
        assert out.count() == len(images)
        per_actor = [np.loadtxt(f, ndmin=2) for f in sorted(Path(stamps_dir).iterdir())]
    steady = []
    for stamps in per_actor:
        if len(stamps) < 3:  # an actor that got (almost) no work
            continue
        stamps = stamps[np.argsort(stamps[:, 0])]
        begin, end, pt, cpu_begin, cpu_end, pt_cpu, rows = stamps.T
        counted = rows[:-1].sum()  # the rows of every batch but the last
        per_task = max(1, block_rows // int(rows.max()))  # (bundled blocks: one batch a task)
        last_of_task = np.arange(1, len(stamps)) % per_task == 0
        pause = np.stack([begin[1:] - end[:-1], cpu_begin[1:] - cpu_end[:-1]])

        def mean_pause(where):
            return [float(p[where].mean()) if where.any() else 0.0 for p in pause]

        steady.append({"batches": len(stamps), "batch_rows": int(rows.max()),
                       "pause_batch": mean_pause(~last_of_task),
                       "pause_task": mean_pause(last_of_task),
                       "cycle": (begin[-1] - begin[0]) / counted,
                       "udf": float((end[:-1] - begin[:-1]).sum() / counted),
                       "pterun": float(pt[:-1].sum() / counted),
                       "cycle_cpu": (cpu_begin[-1] - cpu_begin[0]) / counted,
                       "udf_cpu": float((cpu_end[:-1] - cpu_begin[:-1]).sum() / counted),
                       "pterun_cpu": float(pt_cpu[:-1].sum() / counted)})
    return wall, steady


def serve_latency(images, clients, requests, replicas, port):
    """Latencies (s) of single-image .npy requests from ``clients`` closed-loop
    clients, and how many requests each answering call joined on average."""
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(pterun.ray.deployment(str(PROGRAM), num_replicas=replicas, num_cpus=1,
                                    max_batch_size=16, batch_wait_timeout_s=0.002),
              name="digits", route_prefix="/digits")
    url = f"http://127.0.0.1:{port}/digits"
    bodies = []
    for i in range(64):
        buffer = io.BytesIO()
        np.save(buffer, images[i:i + 1])
        bodies.append(buffer.getvalue())

    def one(body):
        request = urllib.request.Request(url, data=body,
                                         headers={"Content-Type": "application/x-npy"})
        start = time.perf_counter()
        with urllib.request.urlopen(request, timeout=60) as f:
            f.read()
            joined = int(f.headers[pterun.ray._serve.BATCH_HEADER])
        return time.perf_counter() - start, joined

    for b in bodies[:32]:  # warm-up: connections, first calls
        one(b)
    latencies, joined = [], []
    lock = threading.Lock()

    def client(k):
        for i in range(requests // clients):
            lat, j = one(bodies[(k * 7 + i) % len(bodies)])
            with lock:
                latencies.append(lat)
                joined.append(j)

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    wall = time.perf_counter() - start
    serve.shutdown()
    return np.array(latencies), float(np.mean(joined)), wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=262144)
    parser.add_argument("--batch-size", type=int, default=256,
                        help="rows of a pterun call (and of the small Ray batches)")
    parser.add_argument("--block-rows", type=int, default=32768,
                        help="rows of a block of the dataset for predict's default batches")
    parser.add_argument("--ray-defaults", action="store_true",
                        help="also run map_batches with Ray's own options")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=1600)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--cpus", type=int, default=2, help="the local cluster's CPUs")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of the batch figures")
    parser.add_argument("--skip-serve", action="store_true")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    held_out = np.load(HELD_OUT)["images"]
    images = np.concatenate([held_out] * (args.rows // len(held_out) + 1))[:args.rows]
    load = os.getloadavg()[0]  # other work on the machine skews every figure
    print(f"digits_cnn, {args.rows} rows, pterun calls of {args.batch_size} rows; "
          f"{os.cpu_count()} CPUs, load average {load:.1f}; Ray {ray.__version__}")

    figures = {"rows": args.rows, "batch_size": args.batch_size, "load_average": load}
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    print(f"\n== Batch inference: best of {args.repeat} rounds (plain loop and Ray alternate)")
    # (label, actors, Ray batch rows (None: predict's), rows per call, block rows, Ray defaults)
    configs = []
    for defaults in (False, True) if args.ray_defaults else (False,):
        how = "map_batches with Ray's options" if defaults else "predict"
        small = f"{how}, Ray batches of {args.batch_size} rows, blocks of 4096"
        configs += [(small, n, args.batch_size, None, 4096, defaults) for n in (1, 2)]
        big = 4096 if defaults else None
        label = (f"{how}, Ray batches of {big or 'its default'} rows, pterun calls of "
                 f"{args.batch_size}, blocks of {args.block_rows}")
        configs += [(label, n, big, args.batch_size, args.block_rows, defaults) for n in (1, 2)]
    plain = {1: [], 2: []}
    runs = {c: [] for c in configs}
    for _ in range(args.repeat):
        for n in (1, 2):  # pterun threads of the plain loop
            plain[n].append(plain_loop(images, args.batch_size, n))
        pterun.set_num_threads(os.cpu_count())
        for c in configs:
            runs[c].append(ray_data(images, c[1], c[4], c[2], c[3], c[5]))
    for n in (1, 2):
        wall, cpu = min(plain[n])
        figures[f"plain_{n}_thread"] = plain[n]
        print(f"plain loop, one process, {n} pterun thread(s): {args.batch_size / wall:>9,.0f} "
              f"rows/s  ({wall * 1e3:.2f} ms/call, CPU {cpu * 1e3:.2f} ms/call)")
    base = min(plain[1])[0]
    for c in configs:
        label, actors = c[:2]
        # The round whose slowest actor ran fastest in the steady state.
        wall, steady = min(runs[c], key=lambda r: max(s["cycle"] for s in r[1]))
        mean = {k: statistics.fmean(s[k] for s in steady) for k in steady[0]
                if not k.startswith("pause")}
        batch_pause, task_pause = ([statistics.fmean(s[k][i] for s in steady) for i in (0, 1)]
                                   for k in ("pause_batch", "pause_task"))
        figures[f"{label}, {actors} actor(s)"] = [{"wall_s": w, "steady": st}
                                                  for w, st in runs[c]]
        print(f"Ray Data, {label}, {actors} actor(s), 1 thread each (Ray batches of "
              f"{max(s['batch_rows'] for s in steady)} rows):\n"
              f"    {args.rows / wall:,.0f} rows/s end to end ({wall:.2f} s, start-up "
              f"included); {actors / mean['cycle']:,.0f} rows/s steady")
        for what, suffix in (("wall", ""), ("CPU", "_cpu")):
            cycle, udf, pt = (mean[k + suffix] * args.batch_size
                              for k in ("cycle", "udf", "pterun"))
            print(f"    {what} per {args.batch_size} rows in the actor: {cycle * 1e3:.3f} ms = "
                  f"pterun {pt * 1e3:.3f} + pterun.ray {max(udf - pt, 0) * 1e3:.3f} + Ray "
                  f"{(cycle - udf) * 1e3:.3f}: Ray's overhead {(cycle - udf) / pt:.1%} of the "
                  "pterun calls")
        print(f"    Ray's pause after a batch within a task: {batch_pause[0] * 1e3:.2f} ms "
              f"(CPU {batch_pause[1] * 1e3:.2f}); after a task's last batch: "
              f"{task_pause[0] * 1e3:.2f} ms (CPU {task_pause[1] * 1e3:.2f})")
        per_call = mean["cycle"] * args.batch_size
        print(f"    steady wall time per {args.batch_size} rows and actor against the plain "
              f"1-thread loop: {per_call * 1e3:.3f} vs {base * 1e3:.3f} ms "
              f"({per_call / base - 1:+.1%})")
    if args.skip_serve:
        ray.shutdown()
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=1))
        return

    print(f"\n== Serve: {args.clients} clients, closed loop, single-image .npy requests, loopback")
    method = pterun.load_program(str(PROGRAM)).load_method("forward")
    single = []
    for i in range(2000):
        start = time.perf_counter()
        method([held_out[i % 64:i % 64 + 1]])
        single.append(time.perf_counter() - start)
    print(f"direct pterun call, 1 image: p50 {np.percentile(single, 50) * 1e6:.0f} us")
    for replicas in (1, 2):
        lat, joined, wall = serve_latency(held_out, args.clients, args.requests, replicas,
                                          args.port)
        p50, p90, p99 = (np.percentile(lat, q) * 1e3 for q in (50, 90, 99))
        figures[f"serve_{replicas}"] = {"p50_ms": p50, "p90_ms": p90, "p99_ms": p99,
                                        "requests_per_s": len(lat) / wall, "joined": joined}
        print(f"{replicas} replica(s): p50 {p50:.2f} ms, p90 {p90:.2f} ms, p99 {p99:.2f} ms; "
              f"{len(lat) / wall:,.0f} requests/s; {joined:.1f} requests per call on average")
    ray.shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()

"""Two (or more) builds of pterun side by side: the same calls, alternating
builds round by round, so that a noisy machine weighs on both alike.

    python benchmarks/compare_builds.py OLD/python_pkg NEW/python_pkg \
        [--models add,mlp,cnn,gpt,llama_block,digits_cnn,chain8] [--rounds 12] [--threads 1]

Each round starts one child process per build (in alternating order) that
loads every model fixture of tests/fixtures (inputs `c0_in*` of its .npz;
digits_cnn on one image), warms it up, and times batches of full Python
calls `[o.numpy() for o in m(inputs)]`; the child prints the median batch
per call. The table gives, per model, the median over rounds for each build
and the ratio to the first build (above 1: slower than the first), with the
best batch of all rounds in brackets (on a shared machine the best batch is
the figure least touched by other processes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS = ["add", "mlp", "cnn", "gpt", "llama_block", "digits_cnn", "chain8"]

CHILD = r"""
import json, sys, time
import numpy as np
import pterun
models, threads, batch_s, batches = json.loads(sys.argv[1])
pterun.set_num_threads(threads)
out = {}
for name in models:
    m = pterun.load_program(f"tests/fixtures/{name}.pte").load_method("forward")
    d = np.load(f"tests/fixtures/{name}.npz")
    ins = [d[k] for k in sorted(k for k in d.files if k.startswith("c0_in"))]
    if name == "digits_cnn":
        ins = [ins[0][:1]]
    for _ in range(20):
        [o.numpy() for o in m(ins)]
    t0 = time.perf_counter(); n = 0
    while time.perf_counter() - t0 < batch_s:
        [o.numpy() for o in m(ins)]; n += 1
    per = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(n):
            [o.numpy() for o in m(ins)]
        per.append((time.perf_counter() - t0) / n)
    per.sort()
    out[name] = [per[len(per) // 2], per[0]]
print(json.dumps(out))
"""


def run_child(pkg: str, models: list[str], threads: int) -> dict[str, list[float]]:
    env = dict(os.environ, PYTHONPATH=str(Path(pkg).resolve()), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    arg = json.dumps([models, threads, 0.005, 15])
    res = subprocess.run([sys.executable, "-c", CHILD, arg], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def label_of(pkg: str) -> str:
    """The checkout a build belongs to: CHECKOUT/build/NAME/python_pkg."""
    p = Path(pkg).resolve()
    return p.parents[2].name if len(p.parents) > 2 else str(p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("builds", nargs="+", help="python_pkg folders of the builds (first = reference)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    models = args.models.split(",")
    times: dict[str, dict[str, list[float]]] = {b: {m: [] for m in models} for b in args.builds}
    best: dict[str, dict[str, float]] = {b: {m: float("inf") for m in models} for b in args.builds}
    load_before = os.getloadavg()[0]
    for r in range(args.rounds):
        order = args.builds if r % 2 == 0 else list(reversed(args.builds))
        for b in order:
            for m, (median, fastest) in run_child(b, models, args.threads).items():
                times[b][m].append(median)
                best[b][m] = min(best[b][m], fastest)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    load_after = os.getloadavg()[0]
    ref = args.builds[0]
    label = {b: label_of(b) for b in args.builds}
    head = "| model | " + " | ".join(label[b] for b in args.builds)
    print(f"threads {args.threads}, {args.rounds} rounds, load average {load_before:.2f} -> {load_after:.2f}")
    print(head + " | " + " | ".join(f"{label[b]} / {label[ref]}" for b in args.builds[1:]) + " |")
    print("|---|" + "---:|" * (2 * len(args.builds) - 1))
    for m in models:
        med = {b: statistics.median(times[b][m]) for b in args.builds}
        cells = [f"{med[b] * 1e6:.2f} us ({best[b][m] * 1e6:.2f})" for b in args.builds]
        ratios = [f"{med[b] / med[ref]:.3f} ({best[b][m] / best[ref][m]:.3f})" for b in args.builds[1:]]
        print(f"| {m} | " + " | ".join(cells + ratios) + " |")
    print("\nmedian over rounds of each round's median batch (best batch of all rounds)")


if __name__ == "__main__":
    main()

"""Single-operator probe: where do the model-level gaps come from?

    PYTHONPATH=build/bench/python_pkg /work/.venv-export/bin/python benchmarks/op_probe.py [FILTER ...]

Exports one-layer torch modules with the shapes the fixture models use (to
.pte with the default portable flow, and to ONNX), into build/bench-ops/,
checks pterun's output against torch, and times pterun, ExecuTorch's runtime
and ONNX Runtime on them, interleaved, single-threaded. Each figure is a whole
Python call, so it includes the fixed per-call cost (see call_overhead.py).
FILTER words keep only the cases whose label contains one of them.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _common as C  # noqa: E402

OUT_DIR = C.REPO / "build" / "bench-ops"


def cases():
    import torch.nn as nn
    import torch.nn.functional as F

    class Fn(nn.Module):
        def __init__(self, f):
            super().__init__()
            self.f = f

        def forward(self, *a):
            return self.f(*a)

    return [
        ("digits conv1 [359,1,8,8]", nn.Conv2d(1, 8, 3, padding=1), [(359, 1, 8, 8)]),
        ("digits conv2 [359,8,8,8]", nn.Conv2d(8, 16, 3, padding=1), [(359, 8, 8, 8)]),
        ("digits relu [359,16,8,8]", nn.ReLU(), [(359, 16, 8, 8)]),
        ("digits maxpool2d [359,16,8,8]", nn.MaxPool2d(2), [(359, 16, 8, 8)]),
        ("digits linear 256->10 [359,256]", nn.Linear(256, 10), [(359, 256)]),
        ("cnn conv1 [1,3,32,32]", nn.Conv2d(3, 8, 3, padding=1), [(1, 3, 32, 32)]),
        ("cnn conv2 [1,8,16,16]", nn.Conv2d(8, 16, 3, padding=1), [(1, 8, 16, 16)]),
        ("cnn batchnorm eval [1,8,32,32]", nn.BatchNorm2d(8), [(1, 8, 32, 32)]),
        ("cnn maxpool2d [1,8,32,32]", nn.MaxPool2d(2), [(1, 8, 32, 32)]),
        ("gpt linear 64->192 [16,64]", nn.Linear(64, 192), [(16, 64)]),
        ("gpt linear 64->256 no bias [16,64]", nn.Linear(64, 256, bias=False), [(16, 64)]),
        ("gpt layernorm [1,16,64]", nn.LayerNorm(64), [(1, 16, 64)]),
        ("gpt gelu [1,16,256]", nn.GELU(), [(1, 16, 256)]),
        ("gpt causal sdpa [1,4,16,16]",
         Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)), [(1, 4, 16, 16)] * 3),
        ("mlp linear 32->64 [8,32]", nn.Linear(32, 64), [(8, 32)]),
        ("add [1,16,64]", Fn(lambda a, b: a + b), [(1, 16, 64)] * 2),
        ("linear on a 3-D input [1,16,64] (view of an input)", nn.Linear(64, 64), [(1, 16, 64)]),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("filters", nargs="*")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    pterun = C.import_pterun()
    import torch
    from executorch.exir import to_edge
    from executorch.runtime import Runtime
    from torch.export import export

    pterun.set_num_threads(1)
    torch.set_num_threads(1)
    C.et_set_threads(1)
    torch.manual_seed(0)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for line in C.environment_lines(None, "not used here"):
        print("# " + line)
    rows = []
    for i, (label, mod, shapes) in enumerate(cases()):
        if args.filters and not any(f in label for f in args.filters):
            continue
        mod = mod.eval()
        rng = np.random.default_rng(i)
        ins = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
        targs = tuple(torch.from_numpy(a) for a in ins)
        pte, onx = OUT_DIR / f"case{i}.pte", OUT_DIR / f"case{i}.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pte.write_bytes(to_edge(export(mod, targs, strict=False)).to_executorch().buffer)
            torch.onnx.export(mod, targs, str(onx), dynamo=False, opset_version=17)
        with torch.no_grad():
            ref = [mod(*targs).numpy()]
        try:
            m = pterun.load_program(str(pte)).load_method("forward")
            got = [o.numpy() for o in m(ins)]
        except NotImplementedError:
            rows.append([label, "missing kernel"] + ["-"] * 6)
            continue
        ok, diff, why = C.compare(got, ref, 1e-4, 1e-4)
        if not ok:
            print(f"{label}: pterun WRONG RESULT ({why})", file=sys.stderr)
            rows.append([label, "wrong result"] + ["-"] * 6)
            continue
        em = Runtime.get().load_program(str(pte)).load_method("forward")
        sess = C.ort_session(onx, 1)
        feed = {x.name: a for x, a in zip(sess.get_inputs(), ins)}

        def timed(fn):
            def batch(n):
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    fn()
                return time.perf_counter_ns() - t0

            return batch

        peers = [
            C.Peer("pterun", timed(lambda: [o.numpy() for o in m(ins)])),
            C.Peer("ET", timed(lambda: [o.numpy() for o in em.execute(targs)])),
            C.Peer("ORT", timed(lambda: sess.run(None, feed))),
        ]
        C.run_interleaved(peers, args.repeat, target_s=0.003, max_n=100_000)
        pt, et, ort_ = peers
        rows.append([label] + [C.fmt_us(p.median_ns()) for p in peers]
                    + [C.fmt_us(p.min_ns()) for p in peers]
                    + [C.fmt_ratio(pt.median_ns(), ort_.median_ns())])
        print(f"  {label}: done", file=sys.stderr, flush=True)
    print()
    print("Single-operator programs, 1 thread, median (and best batch) per call, µs; last column pterun/ORT (>1: pterun slower)")
    C.print_table(["case", "pterun", "ET", "ORT", "pterun best", "ET best", "ORT best", "pterun/ORT"],
                  rows, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

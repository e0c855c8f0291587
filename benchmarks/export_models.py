"""Exports the benchmark networks of models.py's `xnnpack` set, three ways,
into build/bench-models/ (ignored by git: these files are large and made at
benchmark time, never committed).

    /work/venvs/export/bin/python benchmarks/export_models.py [--force] [NAME ...]

Each network is a module of tests/fixtures/models.py (XNNPACK_MODELS: the
MobileNet-like and ResNet-like CNNs, the transformer encoder, the LSTM and
the MLP) with the random weights of its seed, at the input size the
benchmark names (mobilenet_224 is MobileNetLike on 1x3x224x224). For each:

- NAME.pte: `to_edge(...).to_executorch()`, no delegate (what pterun runs);
- NAME.xnnpack.pte: the same exported program lowered with
  `to_edge_transform_and_lower(..., partitioner=[XnnpackPartitioner()])`
  (what ExecuTorch + XNNPACK runs);
- NAME.onnx: `torch.onnx.export` of the same module (opset 17; what ONNX
  Runtime runs);
- NAME.npz: the input (`in0`) and torch eager's output (`out0`).

A file set is rebuilt when this script or models.py changes (a hash in
NAME.key), or with --force.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import io
import sys
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "bench-models"
sys.path.insert(0, str(REPO / "tests" / "fixtures"))

# Benchmark name -> (XNNPACK_MODELS entry, input shape).
NETWORKS = {
    "mobilenet_64": ("mobilenet", (1, 3, 64, 64)),
    "mobilenet_224": ("mobilenet", (1, 3, 224, 224)),
    "resnet_32": ("resnet", (2, 3, 32, 32)),
    "resnet_128": ("resnet", (4, 3, 128, 128)),
    "encoder": ("transformer", (1, 16, 24)),
    "mlp": ("mlp", (4, 64)),
    "lstm": ("lstm", (1, 8, 16)),
}


def source_key() -> str:
    h = hashlib.sha256()
    h.update(Path(__file__).read_bytes())
    h.update((REPO / "tests" / "fixtures" / "models.py").read_bytes())
    return h.hexdigest()[:16]


def paths(name: str) -> dict[str, Path]:
    return {
        "pte": OUT / f"{name}.pte",
        "xnnpack": OUT / f"{name}.xnnpack.pte",
        "onnx": OUT / f"{name}.onnx",
        "npz": OUT / f"{name}.npz",
        "key": OUT / f"{name}.key",
    }


def up_to_date(name: str) -> bool:
    p = paths(name)
    return all(f.exists() for f in p.values()) and p["key"].read_text().strip() == source_key()


def export_one(name: str) -> None:
    import numpy as np
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge, to_edge_transform_and_lower
    from models import XNNPACK_MODELS, build_xnnpack, randn

    fixture, shape = NETWORKS[name]
    assert fixture in XNNPACK_MODELS, fixture
    module, gen = build_xnnpack(fixture)
    x = randn(*shape, gen=gen)
    with torch.no_grad():
        y = module(x)
    p = paths(name)
    OUT.mkdir(parents=True, exist_ok=True)

    ep = torch.export.export(module, (x,), strict=False)
    plain = to_edge(copy.deepcopy(ep), compile_config=EdgeCompileConfig()).to_executorch()
    p["pte"].write_bytes(plain.buffer)
    lowered = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    p["xnnpack"].write_bytes(lowered.buffer)

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), buf, dynamo=False, opset_version=17, input_names=["in0"],
                          output_names=["out0"], do_constant_folding=True)
    p["onnx"].write_bytes(buf.getvalue())
    np.savez(p["npz"], in0=x.numpy(), out0=y.numpy())
    p["key"].write_text(source_key() + "\n")


def ensure(names: list[str], force: bool = False, log=print) -> dict[str, dict[str, Path]]:
    """Exports the networks that are missing or stale; returns their paths."""
    for name in names:
        if force or not up_to_date(name):
            log(f"  exporting {name} into {OUT.relative_to(REPO)}/ ...")
            export_one(name)
    return {name: paths(name) for name in names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=list(NETWORKS), help="networks (default: all)")
    ap.add_argument("--force", action="store_true", help="export even when up to date")
    args = ap.parse_args()
    unknown = [n for n in args.names if n not in NETWORKS]
    if unknown:
        ap.error(f"unknown networks {unknown}; known: {list(NETWORKS)}")
    ensure(args.names, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())

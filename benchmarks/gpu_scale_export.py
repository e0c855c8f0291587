"""Exports the configurations of the larger GPU benchmark (gpu_scale.py)
into build/gpu-scale/ (ignored by git: made at benchmark time, never
committed).

    /work/venvs/export/bin/python benchmarks/gpu_scale_export.py [--only SUBSTRING] [--force]

The configurations are those of _gpu_scale_models.py: gpt and llama_block
at batch 1, 8 and 32 and sequence 128 and 512, MobileNetLike and ResNetLike
at batch 1 and 32 on 224x224 images, each in float32 and bfloat16 (the
module cast with .to(torch.bfloat16) before export; gpt's token ids stay
int64). For each configuration NAME:

- NAME.pte: `to_edge(torch.export.export(module, (x,))).to_executorch()`,
  no delegate, as benchmarks/export_models.py makes its plain files;
- NAME.npz: the module's state_dict under `w.KEY` (the CNNs' batch-norm
  statistics taken from their input, see calibrate_batch_norms), the input
  (`input_tokens`, or `input_codes`: int8 codes, the input being codes / 16,
  exact in both dtypes), torch eager's output on the CPU in the config's
  dtype under `expected` for the batch rows listed in `expected_rows` (all
  rows where the whole output is at most 1 MiB, else four of them: all
  rows of every config would not fit the size limit below; gpu_scale.py
  compares the other rows with torch eager on the device), and `meta`, a
  JSON string naming the config, its dtype, the arrays that hold bfloat16
  bits as uint16 (`bf16_bits`) and the torch version.

Existing files are kept unless --force; --only exports the configurations
whose name contains one of the comma-separated substrings. Each file's size
and the folder's total are printed: the folder travels to the GPU machine
in one carry of at most 64 MiB, so the total must stay under 60 MiB.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _gpu_scale_models as S  # noqa: E402

OUT = S.REPO / "build" / "gpu-scale"
SIZE_LIMIT = 60 << 20


def export_pte(module: torch.nn.Module, x: torch.Tensor) -> bytes:
    from executorch.exir import EdgeCompileConfig, to_edge

    ep = torch.export.export(module, (x,), strict=False)
    return to_edge(ep, compile_config=EdgeCompileConfig()).to_executorch().buffer


def calibrate_batch_norms(module: torch.nn.Module, x: torch.Tensor) -> None:
    """Sets every batch norm's running statistics to those of `x` (one
    forward in training mode), keeping the random scales and shifts. With
    the fixtures' random statistics the CNNs' outputs hardly depend on their
    input (about 1e-4 of the output's size), which no output check could
    tell from a wrong result; with statistics taken from the data the
    outputs of different images differ by 5-30%, as a trained network's do."""
    norms = [m for m in module.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a plain average: after one batch, that batch's statistics
    module.train()
    with torch.no_grad():
        module(x)
    module.eval()
    for m in norms:
        m.momentum = 0.1


def export_one(cfg: S.Config) -> None:
    module = S.build_module(cfg)
    inputs = S.make_input(cfg)
    if cfg.family in S.IMAGE_FAMILIES:
        calibrate_batch_norms(module, S.input_tensor(inputs, cfg).float())
    module = module.to(cfg.torch_dtype)
    x = S.input_tensor(inputs, cfg)
    with torch.no_grad():
        y = module(x)
    rows = S.expected_rows(cfg, y[0].numel())

    arrays: dict[str, np.ndarray] = dict(inputs)
    bf16_bits = []
    for key, t in module.state_dict().items():
        arrays[f"w.{key}"] = S.to_numpy(t)
        if t.dtype == torch.bfloat16:
            bf16_bits.append(f"w.{key}")
    arrays["expected"] = S.to_numpy(y[rows])
    if y.dtype == torch.bfloat16:
        bf16_bits.append("expected")
    arrays["expected_rows"] = np.array(rows, dtype=np.int64)
    meta = {"name": cfg.name, "dtype": cfg.dtype, "input_shape": list(cfg.input_shape),
            "output_shape": list(y.shape), "bf16_bits": bf16_bits, "torch": torch.__version__}
    arrays["meta"] = np.array(json.dumps(meta))

    pte = export_pte(module, x)
    OUT.mkdir(parents=True, exist_ok=True)
    # Each file is written under a temporary name first, so that an
    # interrupted run leaves no file that looks complete.
    tmp = OUT / f"{cfg.name}.npz.tmp"
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)
    tmp.replace(OUT / f"{cfg.name}.npz")
    tmp = OUT / f"{cfg.name}.pte.tmp"
    tmp.write_bytes(pte)
    tmp.replace(OUT / f"{cfg.name}.pte")


def mib(n: int) -> str:
    return f"{n / (1 << 20):6.2f} MiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated substrings of config names")
    ap.add_argument("--force", action="store_true", help="export even where the files exist")
    args = ap.parse_args()

    configs = S.select(args.only)
    if not configs:
        ap.error(f"no config name contains {args.only!r}; names: {[c.name for c in S.all_configs()]}")
    for cfg in configs:
        pte, npz = OUT / f"{cfg.name}.pte", OUT / f"{cfg.name}.npz"
        if args.force or not (pte.exists() and npz.exists()):
            t0 = time.perf_counter()
            export_one(cfg)
            took = f"exported in {time.perf_counter() - t0:.1f} s"
        else:
            took = "kept"
        print(f"{cfg.name:28s} pte {mib(pte.stat().st_size)}  npz {mib(npz.stat().st_size)}  ({took})",
              flush=True)

    total = sum(f.stat().st_size for f in OUT.iterdir() if f.suffix in (".pte", ".npz"))
    print(f"{OUT.relative_to(S.REPO)}/: {mib(total)} in all")
    if total > SIZE_LIMIT:
        print(f"warning: more than {mib(SIZE_LIMIT).strip()}: the folder will not fit one carry")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The quantized models of `benchmarks/models.py --quant`, exported on first use
into build/bench-quant/ (ignored by git): each model as a PT2E static int8
program without a delegate (XNNPACKQuantizer, per-channel weights; the
quantized_decomposed operators around float portable ones), NAME_int8.pte,
and as its float twin, NAME_fp32.pte, with one input and ExecuTorch's
outputs of both in NAME.npz. Needs torch and executorch (the export venv).

Models: the two static fixtures of tests/fixtures/quant (cnn_static,
mlp_static: their modules and seeds) and two larger ones where the
arithmetic, not the call overhead, dominates.

`ensure_xnnpack` gives the XNNPACK flows instead (`models.py --quant
--flow xnnpack-static|xnnpack-dynamic`): the model quantized with static
int8 activations, or dynamic ones (a Convert to qdint8 per linear), and
per-channel int8 weights, lowered with XnnpackPartitioner,
NAME_xnn_CONFIG.pte, and its float twin lowered the same way,
NAME_xnn_fp32.pte.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "build" / "bench-quant"
FIXTURES = REPO / "tests" / "fixtures"


def _modules():
    import torch.nn as nn
    import torch.nn.functional as F

    sys.path.insert(0, str(FIXTURES))
    from export_quant import QCNN, QMLP  # noqa: E402

    class CNN64(nn.Module):
        """Four 3x3 conv-ReLU stages (32-64-64-128 channels, two stride-2), a
        residual add, global average pool, linear; f32[1, 3, 64, 64]."""

        def __init__(self) -> None:
            super().__init__()
            self.c1 = nn.Conv2d(3, 32, 3, padding=1)
            self.c2 = nn.Conv2d(32, 64, 3, stride=2, padding=1)
            self.c3 = nn.Conv2d(64, 64, 3, padding=1)
            self.c4 = nn.Conv2d(64, 128, 3, stride=2, padding=1)
            self.fc = nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.c1(x))
            x = F.relu(self.c2(x))
            x = F.relu(self.c3(x)) + x
            x = F.relu(self.c4(x))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    class MLP1k(nn.Module):
        """Linear 256-1024, ReLU, 1024-1024, ReLU, 1024-256; f32[32, 256]."""

        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(256, 1024)
            self.b = nn.Linear(1024, 1024)
            self.c = nn.Linear(1024, 256)

        def forward(self, x):
            return self.c(F.relu(self.b(F.relu(self.a(x)))))

    return {
        "cnn_static": (QCNN, (1, 3, 16, 16), 11),
        "mlp_static": (QMLP, (4, 32), 12),
        "cnn64": (CNN64, (1, 3, 64, 64), 31),
        "mlp1k": (MLP1k, (32, 256), 32),
    }


MODELS = ["cnn_static", "mlp_static", "cnn64", "mlp1k"]


def _model_and_inputs(name: str):
    """Model `name` with its seeded weights, an example input, 8 calibration
    inputs and the input the benchmark times."""
    import torch

    cls, shape, seed = _modules()[name]
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    module = cls().eval()
    example = (torch.randn(*shape, generator=gen),)
    calib = [(torch.randn(*shape, generator=gen),) for _ in range(8)]
    return module, example, calib, torch.randn(*shape, generator=gen)


def _save(npz: Path, x, programs: dict[str, Path], **extra) -> None:
    """`x`, `extra` and ExecuTorch's outputs of each program on x
    (`TAG_out{i}`) into npz."""
    from executorch.runtime import Runtime

    arrays = {"x": x.numpy(), **extra}
    for tag, path in programs.items():
        outs = Runtime.get().load_program(str(path)).load_method("forward").execute([x])
        for i, o in enumerate(outs):
            arrays[f"{tag}_out{i}"] = o.numpy()
    np.savez(npz, **arrays)


def ensure(name: str, log=print) -> tuple[Path, Path, Path]:
    """(int8 .pte, fp32 .pte, .npz with `x`, `int8_out*`, `fp32_out*`, `step`),
    exported when missing."""
    int8, fp32, npz = (OUT / f"{name}_int8.pte", OUT / f"{name}_fp32.pte", OUT / f"{name}.npz")
    if int8.exists() and fp32.exists() and npz.exists():
        return int8, fp32, npz
    from torch.export import export

    import executorch.kernels.quantized  # noqa: F401
    from executorch.exir import to_edge

    sys.path.insert(0, str(FIXTURES))
    from export_quant import output_steps, quantize  # noqa: E402

    log(f"  exporting {name} into {OUT}")
    OUT.mkdir(parents=True, exist_ok=True)
    module, example, calib, x = _model_and_inputs(name)
    fp32.write_bytes(to_edge(export(module, example, strict=False)).to_executorch().buffer)
    converted = quantize(module, example, "static_pc", calib)
    pte = to_edge(export(converted, example, strict=False)).to_executorch().buffer
    int8.write_bytes(pte)
    _save(npz, x, {"int8": int8, "fp32": fp32}, step=np.array(output_steps(pte)[0] or 0.0))
    return int8, fp32, npz


def ensure_xnnpack(name: str, config: str, log=print) -> tuple[Path, Path, Path]:
    """(int8 XNNPACK .pte, fp32 XNNPACK .pte, .npz with `x`, `int8_out*`,
    `fp32_out*`), exported when missing: the model quantized with
    XNNPACKQuantizer's `config` (export_quant.CONFIGS: "static_pc" or
    "dynamic_pc") and its float twin, both lowered with XnnpackPartitioner."""
    int8 = OUT / f"{name}_xnn_{config}.pte"
    fp32, npz = OUT / f"{name}_xnn_fp32.pte", OUT / f"{name}_xnn_{config}.npz"
    if int8.exists() and fp32.exists() and npz.exists():
        return int8, fp32, npz
    from torch.export import export

    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    sys.path.insert(0, str(FIXTURES))
    from export_quant import quantize  # noqa: E402

    log(f"  exporting {name} (XNNPACK, {config}) into {OUT}")
    OUT.mkdir(parents=True, exist_ok=True)
    module, example, calib, x = _model_and_inputs(name)

    def lower(m) -> bytes:
        ep = export(m, example, strict=False)
        return to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch().buffer

    fp32.write_bytes(lower(module))
    int8.write_bytes(lower(quantize(module, example, config, calib)))
    _save(npz, x, {"int8": int8, "fp32": fp32})
    return int8, fp32, npz

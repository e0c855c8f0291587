"""The configurations of the larger GPU benchmark and the torch modules
behind them, shared by gpu_scale_export.py (which exports them) and
gpu_scale.py (which times them). Needs torch and numpy, no ExecuTorch.

A configuration is one fixture network of tests/fixtures/models.py at one
input shape and one dtype:

- gpt: GPT (width 64, 2 layers, 4 heads, vocabulary 256, as the `gpt`
  fixture) with its context set to the sequence length, on int64 token ids
  [batch, seq];
- llama_block: LlamaBlock (dim 64, 4 heads, 2 KV heads, as the
  `llama_block` fixture) with its rotary table sized to the sequence, on
  [batch, seq, 64];
- mobilenet, resnet: MobileNetLike and ResNetLike in eval mode with random
  batch-norm statistics (as the XNNPACK fixtures) on [batch, 3, 224, 224].

Names read FAMILY_bBATCH_tSEQ_DTYPE or FAMILY_bBATCH_224_DTYPE, e.g.
`gpt_b8_t512_bf16`, `resnet_b32_224_f32`. Weights come from seeded random
initialisation here; gpu_scale.py replaces them with the ones stored in
NAME.npz, so both sides run the exported weights even where torch's random
streams differ between versions.
"""

from __future__ import annotations

import functools
import importlib.util
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
FIXTURE_MODELS = REPO / "tests" / "fixtures" / "models.py"

SEQ_FAMILIES = ("gpt", "llama_block")
IMAGE_FAMILIES = ("mobilenet", "resnet")
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
IMAGE = 224

# Float inputs are drawn as int8 codes times INPUT_STEP: exact in float32
# and bfloat16 alike, and a quarter of float32's size in NAME.npz.
INPUT_STEP = 1.0 / 16.0


@dataclass(frozen=True)
class Config:
    family: str
    batch: int
    seq: int  # sequence length of gpt / llama_block; 0 for the CNNs
    dtype: str  # "f32" or "bf16"

    @property
    def name(self) -> str:
        size = f"t{self.seq}" if self.seq else str(IMAGE)
        return f"{self.family}_b{self.batch}_{size}_{self.dtype}"

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def input_shape(self) -> tuple[int, ...]:
        if self.family == "gpt":
            return (self.batch, self.seq)
        if self.family == "llama_block":
            return (self.batch, self.seq, 64)
        return (self.batch, 3, IMAGE, IMAGE)


def all_configs() -> list[Config]:
    """Every configuration, in the order the tables list them."""
    out = []
    for dtype in DTYPES:
        for family in SEQ_FAMILIES:
            for batch in (1, 8, 32):
                for seq in (128, 512):
                    out.append(Config(family, batch, seq, dtype))
        for family in IMAGE_FAMILIES:
            for batch in (1, 32):
                out.append(Config(family, batch, 0, dtype))
    return out


def select(substrings: str | None) -> list[Config]:
    """The configurations whose name contains one of the comma-separated
    substrings (all of them for None or '')."""
    parts = [s for s in (substrings or "").split(",") if s]
    return [c for c in all_configs() if not parts or any(p in c.name for p in parts)]


@functools.cache
def fixture_models():
    """tests/fixtures/models.py, loaded by path (benchmarks/ has a models.py
    of its own)."""
    spec = importlib.util.spec_from_file_location("pterun_fixture_models", FIXTURE_MODELS)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def build_module(cfg: Config) -> torch.nn.Module:
    """The eval-mode float32 module of `cfg` with seeded random weights."""
    models = fixture_models()
    if cfg.family == "gpt":
        models.seed(5)
        return models.GPT(ctx=cfg.seq).eval()
    if cfg.family == "llama_block":
        g = models.seed(6)
        m = models.LlamaBlock(seq=cfg.seq).eval()
        with torch.no_grad():
            m.attn_norm.weight.copy_(torch.rand(64, generator=g) + 0.5)
            m.ffn_norm.weight.copy_(torch.rand(64, generator=g) + 0.5)
        return m
    return models.build_xnnpack(cfg.family)[0]


def make_input(cfg: Config) -> dict[str, np.ndarray]:
    """The arrays NAME.npz stores for the input: `input_tokens` (int64 token
    ids) for gpt, `input_codes` (int8; the input is codes * INPUT_STEP) for
    the rest."""
    rng = np.random.default_rng(zlib.crc32(cfg.name.encode()))
    if cfg.family == "gpt":
        return {"input_tokens": rng.integers(0, 256, cfg.input_shape, dtype=np.int64)}
    x = rng.standard_normal(cfg.input_shape, dtype=np.float32)
    if cfg.family in IMAGE_FAMILIES:
        # Noise alone averages out in the global pool: every image would give
        # nearly the same output, and a result from the wrong image would pass
        # the check. A level and ramps along H and W, drawn per image and
        # channel, make the outputs differ (and depend on the orientation).
        b, c, h, w = cfg.input_shape
        level, slope_h, slope_w = (rng.standard_normal((b, c, 1, 1), dtype=np.float32) for _ in range(3))
        ramp_h = np.linspace(-1, 1, h, dtype=np.float32)[:, None]
        ramp_w = np.linspace(-1, 1, w, dtype=np.float32)[None, :]
        x = 0.5 * x + level + slope_h * ramp_h + slope_w * ramp_w
    codes = np.clip(np.rint(x / INPUT_STEP), -127, 127)
    return {"input_codes": codes.astype(np.int8)}


def input_tensor(arrays, cfg: Config) -> torch.Tensor:
    """The input as a CPU torch tensor in the config's dtype, from the arrays
    make_input returned (or NAME.npz holds)."""
    if cfg.family == "gpt":
        return torch.from_numpy(np.ascontiguousarray(arrays["input_tokens"]))
    x = torch.from_numpy(arrays["input_codes"].astype(np.float32) * INPUT_STEP)
    return x.to(cfg.torch_dtype)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A CPU numpy copy of `t`; bfloat16 becomes its raw bits as uint16."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def from_numpy(a: np.ndarray, bf16: bool) -> torch.Tensor:
    """Inverse of to_numpy: `bf16` says the uint16 array holds bfloat16 bits."""
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.view(torch.int16).view(torch.bfloat16) if bf16 else t


def expected_rows(cfg: Config, out_elems_per_row: int, limit_bytes: int = 1 << 20) -> list[int]:
    """Batch rows whose expected output NAME.npz keeps: all of them when the
    whole output fits in `limit_bytes` (as float32), else the first, two
    middle ones and the last."""
    if cfg.batch * out_elems_per_row * 4 <= limit_bytes:
        return list(range(cfg.batch))
    b = cfg.batch
    return sorted({0, b // 3, (2 * b) // 3, b - 1})

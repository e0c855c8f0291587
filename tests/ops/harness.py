"""Shared checks for tests/ops: run one kernel on the CPU and on cuda:0 with
the same arguments and compare the outputs.

Arguments are what `pterun._testing.call_kernel` takes: NumPy arrays, `T`
(a tensor with a dim order, or bfloat16 values), `Out` (an out tensor),
numbers, lists, None.
"""

from __future__ import annotations

import numpy as np
import pytest

import pterun
from pterun._testing import BFLOAT16, T, Out, call_kernel, time_kernel  # noqa: F401

PERF = False
PERF_ROWS: list[str] = []

needs_cuda = pytest.mark.skipif(pterun.cuda_device_count() == 0, reason="no CUDA device")

RNG = np.random.default_rng(1234)


def rand(shape, dtype=np.float32, low=-2.0, high=2.0):
    """Random values of `dtype` (integers in [low, high), bool half true)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        lo = max(0, int(low)) if dtype.kind == "u" else int(low)
        return RNG.integers(lo, max(int(high), lo + 1), size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def tolerance(dtype_name: str):
    return {
        "float16": (2e-3, 2e-3),
        "bfloat16": (1.6e-2, 1.6e-2),
        "float32": (1e-5, 1e-5),
        "float64": (1e-12, 1e-12),
    }.get(dtype_name, (0.0, 0.0))


def check(name, *args, rtol=None, atol=None, num_threads=1):
    """Runs `name` on CPU and CUDA and asserts every out tensor matches
    (NaNs in the same places). Returns the CUDA outputs."""
    cpu = call_kernel(name, *args, num_threads=num_threads)
    gpu = call_kernel(name, *args, device="cuda:0")
    assert len(cpu) == len(gpu)
    # bfloat16 outputs come back as float32 arrays: their tolerance is
    # bfloat16's.
    outs = [a for a in args if isinstance(a, Out)]
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        assert c.shape == g.shape, f"{name} output {i}: shape {g.shape} != CPU {c.shape}"
        assert c.dtype == g.dtype, f"{name} output {i}: dtype {g.dtype} != CPU {c.dtype}"
        if c.dtype.kind in "fc":
            bf16 = i < len(outs) and outs[i].dtype == BFLOAT16
            r, a = tolerance("bfloat16" if bf16 else c.dtype.name)
            np.testing.assert_allclose(g, c, rtol=r if rtol is None else rtol,
                                       atol=a if atol is None else atol,
                                       err_msg=f"{name} output {i}")
        else:
            np.testing.assert_array_equal(g, c, err_msg=f"{name} output {i}")
    return gpu


# Reference rates from torch, when it has CUDA: "copy" (a 64 MiB
# device-to-device copy, GB/s) and "mm <dtype>" (cuBLAS through torch.mm,
# TFLOP/s). Rows that name a reference print their share of it.
PERF_REFS: dict[str, float] = {}


def _record(label, seconds, nbytes, flops, ref):
    if nbytes:
        rate, unit = nbytes / seconds / 1e9, "GB/s"
    elif flops:
        rate, unit = flops / seconds / 1e12, "TFLOP/s"
    else:
        rate, unit = None, ""
    PERF_ROWS.append((label, seconds, rate, unit, ref))
    return rate


def perf(label, name, *args, nbytes=None, flops=None, iterations=50, ref=None):
    """With --perf: times `name` on cuda:0 and records achieved GB/s (from
    `nbytes`, the bytes read and written) or TFLOP/s (from `flops`), and its
    share of the reference rate `ref` (a PERF_REFS key) where measured."""
    if not PERF:
        return
    seconds = time_kernel(name, *args, device="cuda:0", iterations=iterations)
    _record(label, seconds, nbytes, flops, ref)


def perf_torch_reference(key, label, make, nbytes=None, flops=None, iterations=50):
    """With --perf and torch with CUDA: times `make()`'s returned callable on
    torch's current stream (median of per-launch CUDA event pairs) and
    stores its rate as PERF_REFS[key]."""
    if not PERF:
        return
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        return
    fn = make(torch)
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    seconds = sorted(times)[len(times) // 2]
    PERF_REFS[key] = _record(f"[reference] {label}", seconds, nbytes, flops, None)


def perf_lines():
    """The recorded rows, formatted, with shares of their references."""
    lines = []
    for label, seconds, rate, unit, ref in PERF_ROWS:
        line = f"{label:<52} {seconds * 1e6:10.2f} us"
        if rate is not None:
            line += f" {rate:10.1f} {unit:<7}"
        if ref is not None and PERF_REFS.get(ref):
            line += f" {100 * rate / PERF_REFS[ref]:5.0f}% of {ref}"
        lines.append(line)
    return lines

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
from pterun._testing import T, Out, call_kernel, time_kernel  # noqa: F401

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
        lo = 0 if dtype.kind == "u" else int(low)
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
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        assert c.shape == g.shape, f"{name} output {i}: shape {g.shape} != CPU {c.shape}"
        assert c.dtype == g.dtype, f"{name} output {i}: dtype {g.dtype} != CPU {c.dtype}"
        if c.dtype.kind in "fc":
            r, a = tolerance(c.dtype.name)
            np.testing.assert_allclose(g, c, rtol=r if rtol is None else rtol,
                                       atol=a if atol is None else atol,
                                       err_msg=f"{name} output {i}")
        else:
            np.testing.assert_array_equal(g, c, err_msg=f"{name} output {i}")
    return gpu


def perf(label, name, *args, nbytes=None, flops=None, iterations=50):
    """With --perf: times `name` on cuda:0 and records achieved GB/s (from
    `nbytes`, the bytes read and written) or TFLOP/s (from `flops`)."""
    if not PERF:
        return
    seconds = time_kernel(name, *args, device="cuda:0", iterations=iterations)
    rate = ""
    if nbytes:
        rate = f"{nbytes / seconds / 1e9:10.1f} GB/s"
    elif flops:
        rate = f"{flops / seconds / 1e12:10.1f} TFLOP/s"
    PERF_ROWS.append(f"{label:<48} {seconds * 1e6:10.2f} us {rate}")

"""The operator suite's runner: each operator's cases are listed once and run
on every device (the model is ggml's test-backend-ops).

A case is one registered kernel (by name), its arguments in schema order
with the out tensors last, as `pterun._testing.call_kernel` takes them
(NumPy arrays, `T` for a dim order or bfloat16 values, `Out`, numbers,
lists, None), and either a NumPy reference or an expected error:

- `check(device, name, *args)`: on "cpu" the CPU kernel's outs must match
  the reference (the op's NumPy model registered with `@reference`, or
  `expect=`), within the case's per-dtype tolerance `tol` (exact unless
  given); on "cuda:N" the CUDA kernel's outs must match the CPU kernel's on
  the same arguments (within `gpu_tol`, by default `tolerance(dtype)`).
- `check_error(device, name, *args, exc=..., match=...)`: on "cpu" the CPU
  kernel raises `exc` with a message matching `match`; on "cuda:N" the CPU
  kernel raises that and the CUDA kernel raises the same exception type
  with the same message (the argument checks are shared).

Tests take a `device` argument: conftest.py parametrises it over
`DEVICES`, "cpu" then every CUDA device ("cuda:0" is listed and skipped
without a GPU). Cases that only the CPU can run (errors that need the data,
such as an integer division by zero: the CUDA kernels never read device
data to raise) say `cpu_only=` with the reason; a whole test says it with
`@cpu_only(reason)`, and a test of kernels only CUDA has (the fused
mul_add) with `@cuda_only(reason)`: it compares them with other kernels on
the same device (`run_on`). An expected out given as `AnyValues(shape)`
checks only the shape (empty.out; indices a kernel does not write).

The random helpers below draw from a generator that conftest.py seeds per
test from its id (the device left out), so every device sees the same
inputs and any case reruns alone with the same data.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import pterun
from pterun._testing import (BFLOAT16, Out, Raw, T, call_kernel, from_bf16_bits, time_kernel,
                             to_bf16_bits)

PERF = False
PERF_ROWS: list[tuple] = []

CUDA_COUNT = pterun.cuda_device_count()
DEVICES = ["cpu"] + [f"cuda:{i}" for i in range(max(1, CUDA_COUNT))]

needs_cuda = pytest.mark.skipif(CUDA_COUNT == 0, reason="no CUDA device")

BF16 = "bfloat16"
CL = (0, 2, 3, 1)  # channels-last dim order of a 4-D tensor
EXACT = (0.0, 0.0)

# Kernels only the CPU has: their cases skip on CUDA devices.
CPU_ONLY_KERNELS = {"pterun::max_pool2d_values.out", "pterun::convolution_relu.out",
                    "pterun::convolution_hardtanh.out", "pterun::convolution_hardswish.out",
                    "pterun::convolution_add.out", "pterun::convolution_add_relu.out",
                    "pterun::quantized_linear_float.out", "xnnpack::quantized_conv2d_float"}


def device_params(cpu_only_reason=None, cuda_only_reason=None):
    """The `device` values of a test: GPU ones skip without that GPU, or all
    of them when the test is CPU only; "cpu" skips when it is CUDA only."""
    params = []
    for d in DEVICES:
        marks = []
        if d == "cpu" and cuda_only_reason:
            marks.append(pytest.mark.skip(reason=f"CUDA only: {cuda_only_reason}"))
        if d != "cpu":
            if cpu_only_reason:
                marks.append(pytest.mark.skip(reason=f"CPU only: {cpu_only_reason}"))
            elif int(d.split(":")[1]) >= CUDA_COUNT:
                marks.append(pytest.mark.skip(reason=f"no CUDA device {d}"))
        params.append(pytest.param(d, id=d, marks=marks))
    return params


def cpu_only(reason):
    """Marks a test whose cases run on the CPU only (its GPU params skip)."""
    return pytest.mark.cpu_only(reason=reason)


def cuda_only(reason):
    """Marks a test of kernels only CUDA has: it runs on the GPUs only."""
    return pytest.mark.cuda_only(reason=reason)


# ---- random inputs (seeded per test by conftest.py) -------------------------------------------

_rng = np.random.default_rng(1234)


def seed(value: int):
    global _rng
    _rng = np.random.default_rng(value)


def rng() -> np.random.Generator:
    return _rng


def rand(shape, dtype=np.float32, low=-2.0, high=2.0):
    """Uniform values of `dtype` in [low, high) (integers: [low, high),
    unsigned from 0; bool: half true; "bfloat16": float32 values, rounded
    when they are passed as `tensor(x, BF16)`)."""
    dtype = np.float32 if dtype == BF16 else np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(_rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        lo = max(0, int(low)) if dtype.kind == "u" else int(low)
        return _rng.integers(lo, max(int(high), lo + 1), size=shape).astype(dtype)
    return _rng.uniform(low, high, size=shape).astype(dtype)


def normal(shape, dtype=np.float32, scale=1.0, loc=0.0):
    """Normally distributed values (floating `dtype`)."""
    dtype = np.float32 if dtype == BF16 else dtype
    return np.asarray(_rng.standard_normal(shape) * scale + loc).astype(dtype)


def integers(low, high, shape, dtype=np.int64):
    """Integers in [low, high) as `dtype` (bool: nonzero)."""
    x = np.asarray(_rng.integers(low, high, size=shape))
    return np.asarray(x != 0) if np.dtype(dtype) == np.bool_ else x.astype(dtype)


def uniform(low, high, shape, dtype=np.float64):
    return np.asarray(_rng.uniform(low, high, size=shape)).astype(dtype)


def random(shape):
    """Uniform floats in [0, 1) (float64), for masks: `random(s) < p`."""
    return _rng.random(shape)


def permutation(n):
    return _rng.permutation(n)


# ---- dtypes, values and conversions for the NumPy models -------------------------------------


def bf16(x):
    """x rounded to bfloat16 (to nearest even), as float32."""
    a = np.asarray(x, dtype=np.float32)
    return from_bf16_bits(to_bf16_bits(a)).reshape(a.shape)


def tensor(x, dtype, order=None):
    """x (any numeric array) as an argument of `dtype` (BF16 allowed)."""
    if dtype == BF16:
        return T(np.asarray(x, dtype=np.float32), dim_order=order, bf16=True)
    with np.errstate(over="ignore"):  # e.g. 1e30 as float16: inf
        return T(np.asarray(x).astype(dtype), dim_order=order)


def dtype_of(x):
    """BF16 or the np.dtype of an argument (T, array, Out)."""
    if isinstance(x, Out):
        return BF16 if x.dtype == BFLOAT16 else np.dtype(_DTYPE_NAMES[x.dtype])
    if isinstance(x, T):
        return BF16 if x.bf16 else x.array.dtype
    return np.asarray(x).dtype


def value(x):
    """The logical values of a tensor argument as the kernel sees them
    (bfloat16 ones rounded, as float32); None stays None."""
    if x is None:
        return None
    if isinstance(x, T):
        return bf16(x.array) if x.bf16 else x.array
    return np.asarray(x)


def out_fill(out: Out):
    """The values an `Out` starts with (the test hook fills it with 0xA5
    bytes), as in-place kernels that take it as `self` read them."""
    dt = dtype_of(out)
    n = int(np.prod(out.shape))
    if dt == BF16:
        return from_bf16_bits(np.full(n, 0xA5A5, np.uint16)).reshape(out.shape)
    return np.frombuffer(b"\xa5" * (n * dt.itemsize), dt).reshape(out.shape).copy()


def norm(dt):
    """BF16 or an np.dtype."""
    return BF16 if dt == BF16 else np.dtype(dt)


def is_float(dt):
    return dt == BF16 or np.dtype(dt).kind == "f"


def is_int(dt):
    """Integral, bool excluded."""
    return dt != BF16 and np.dtype(dt).kind in "iu"


def compute_type(dt):
    """The type arithmetic runs in: float32 for float16 and bfloat16."""
    if dt == BF16 or np.dtype(dt) == np.float16:
        return np.dtype(np.float32)
    return np.dtype(dt)


def cast(x, dt):
    """x converted to `dt` as the kernels store it: floats to integers
    truncate toward zero through int64 (NaN gives 0, out-of-range values
    saturate at int64's limits), then wrap; anything to bool is `!= 0`;
    to bfloat16 rounds to nearest even (via float32, as float32 values)."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if dt == BF16:
            return bf16(x.astype(np.float32))
        dt = np.dtype(dt)
        if dt == np.bool_:
            return x != 0
        if dt.kind in "iu" and x.dtype.kind == "f":
            # NaN gives 0, values beyond int64 saturate, then the int64 wraps.
            x = x.astype(np.float64)
            big = x >= 2.0**63
            small = x <= -(2.0**63)
            i = np.where(np.isnan(x) | big | small, 0, x).astype(np.int64)
            i = np.where(big, np.iinfo(np.int64).max, np.where(small, np.iinfo(np.int64).min, i))
            return i.astype(np.int64).astype(dt)
        return x.astype(dt)


def storage(dt):
    """The NumPy dtype values of `dt` are held in (float32 for bfloat16)."""
    return np.dtype(np.float32) if dt == BF16 else np.dtype(dt)


_INT_WIDTH = {"int8": 1, "int16": 2, "int32": 3, "int64": 4}


def promote(a, b):
    """ATen's promoteTypes for the real dtypes: bool is below everything,
    integers combine like NumPy's, any float wins over integers, two
    different 16-bit floats give float32."""
    a, b = norm(a), norm(b)
    if a == b:
        return a
    if a == np.bool_:
        return b
    if b == np.bool_:
        return a
    fa, fb = is_float(a), is_float(b)
    if fa and fb:
        wide = any(d != BF16 and np.dtype(d) == np.float64 for d in (a, b))
        return np.dtype(np.float64 if wide else np.float32)
    if fa:
        return a
    if fb:
        return b
    a, b = np.dtype(a), np.dtype(b)
    if a == np.uint8 and b == np.int8 or b == np.uint8 and a == np.int8:
        return np.dtype(np.int16)
    if a == np.uint8:
        return b
    if b == np.uint8:
        return a
    return a if _INT_WIDTH[a.name] >= _INT_WIDTH[b.name] else b


def promote_scalar(dt, s):
    """promote_type_with_scalar: a float scalar makes a non-float tensor
    float32; an int scalar makes a bool tensor int64; bools change nothing."""
    dt = norm(dt)
    if isinstance(s, bool):
        return dt
    if isinstance(s, float):
        return dt if is_float(dt) else np.dtype(np.float32)
    return np.dtype(np.int64) if dt == np.bool_ else dt


def outs_of(args):
    """The Out arguments, lists included, in the order the kernel returns them."""
    outs = []
    for a in args:
        if isinstance(a, Out):
            outs.append(a)
        elif isinstance(a, (list, tuple)):
            outs.extend(x for x in a if isinstance(x, Out))
    return outs


# ---- references -------------------------------------------------------------------------------

REFERENCES: dict = {}


def reference(*names):
    """Registers a function as the NumPy model of kernels `names`: it takes
    the kernel's arguments (as a case lists them) and returns the expected
    outs (an array, or a list in out order)."""

    def register(fn):
        for name in names:
            REFERENCES[name] = fn
        return fn

    return register


class AnyValues:
    """An expected out whose values are unspecified (only its shape is
    checked), e.g. empty.out or indices a kernel does not write."""

    def __init__(self, shape):
        self.shape = tuple(shape)


def _expected(name, args, expect):
    if expect is None:
        if name not in REFERENCES:
            raise AssertionError(f"no NumPy reference for {name}: register one or pass expect=")
        expect = REFERENCES[name]
        want = expect(*args)
    elif callable(expect):
        want = expect()
    else:
        want = expect
    # A list of arrays is one per out; any other value is the only out.
    if isinstance(want, (list, tuple)) and want and all(
            isinstance(w, (np.ndarray, AnyValues)) for w in want):
        return list(want)
    return [want]


def _tol(spec, dt, default=EXACT):
    """(rtol, atol) for an out of dtype `dt` from a case's `tol`: None ->
    `default`, a pair, or a dict keyed by dtype name (missing: exact)."""
    if spec is None:
        return default
    if isinstance(spec, dict):
        return spec.get(dt if dt == BF16 else np.dtype(dt).name, EXACT)
    return spec


def _compare(got, want, rtol, atol, what, signed_zeros=False):
    if isinstance(want, AnyValues):
        assert got.shape == want.shape, f"{what}: shape {got.shape} != expected {want.shape}"
        return
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != expected {want.shape}"
    if got.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)
        if signed_zeros:
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want),
                                          err_msg=f"{what}: signs of zeros")
    else:
        assert want.dtype.kind != "f" or np.all(np.isfinite(want)), what
        np.testing.assert_array_equal(got, want, err_msg=what)


def tolerance(dtype_name: str):
    """GPU against CPU: the default tolerance of an out dtype."""
    return {
        "float16": (2e-3, 2e-3),
        "bfloat16": (1.6e-2, 1.6e-2),
        "float32": (1e-5, 1e-5),
        "float64": (1e-12, 1e-12),
    }.get(dtype_name, (0.0, 0.0))


def check(device, name, *args, expect=None, tol=None, gpu_tol=None, num_threads=1,
          signed_zeros=False, cpu_only=None):
    """One case (see the module docstring). `expect` overrides the
    registered reference (arrays, or a callable returning them); `tol` is
    the CPU-against-NumPy tolerance (a pair or a dict by dtype name, or a
    list of those, one per out; exact when None); `gpu_tol` the
    GPU-against-CPU one (a pair; by default `tolerance(dtype)`). Returns the
    device's outs (None for a CPU-only case on a GPU)."""
    outs = outs_of(args)
    if device == "cpu":
        got = call_kernel(name, *args, num_threads=num_threads)
        want = _expected(name, args, expect)
        assert len(got) == len(want), f"{name}: {len(got)} outs, expected {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            dt = dtype_of(outs[i]) if i < len(outs) else g.dtype
            r, a = _tol(tol[i] if isinstance(tol, list) else tol, dt)
            _compare(g, w, r, a, f"{name} output {i} (CPU against NumPy)", signed_zeros)
        return got
    if cpu_only or name in CPU_ONLY_KERNELS:
        return None
    cpu = call_kernel(name, *args, num_threads=num_threads)
    gpu = call_kernel(name, *args, device=device)
    assert len(cpu) == len(gpu)
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        assert c.shape == g.shape, f"{name} output {i}: shape {g.shape} != CPU {c.shape}"
        assert c.dtype == g.dtype, f"{name} output {i}: dtype {g.dtype} != CPU {c.dtype}"
        if c.dtype.kind in "fc":
            dt = dtype_of(outs[i]) if i < len(outs) else c.dtype
            if gpu_tol is not None:
                r, a = gpu_tol
            else:
                # The GPU may differ from the CPU by as much as the CPU may
                # differ from NumPy.
                r, a = tolerance(BF16 if dt == BF16 else np.dtype(dt).name)
                cr, ca = _tol(tol[i] if isinstance(tol, list) else tol, dt)
                r, a = max(r, cr), max(a, ca)
            np.testing.assert_allclose(g, c, rtol=r, atol=a,
                                       err_msg=f"{name} output {i} ({device} against CPU)")
        else:
            np.testing.assert_array_equal(g, c, err_msg=f"{name} output {i} ({device} against CPU)")
    return gpu


def _raised(name, args, **kw):
    try:
        call_kernel(name, *args, **kw)
    except Exception as e:  # noqa: BLE001 - any exception is the result
        return e
    return None


def check_error(device, name, *args, exc, match=None, num_threads=1, cpu_only=None):
    """An error case: `exc` (a type or a tuple) with a message matching the
    regex `match`, on the CPU; on a GPU also the same type and message."""
    cpu = _raised(name, args, num_threads=num_threads)
    assert cpu is not None, f"{name}: the CPU kernel raised nothing, expected {exc}"
    assert isinstance(cpu, exc), f"{name}: CPU raised {type(cpu).__name__}: {cpu}; expected {exc}"
    if match is not None:
        assert re.search(match, str(cpu)), f"{name}: CPU message {str(cpu)!r} !~ {match!r}"
    if device == "cpu" or cpu_only or name in CPU_ONLY_KERNELS:
        return
    gpu = _raised(name, args, device=device)
    assert gpu is not None, f"{name}: {device} raised nothing; the CPU raised {cpu!r}"
    assert type(gpu) is type(cpu) and str(gpu) == str(cpu), (
        f"{name}: {device} raised {type(gpu).__name__}: {gpu}; "
        f"the CPU raised {type(cpu).__name__}: {cpu}")


def run_on(device, name, *args, num_threads=1):
    """The outs of `name` run on `device` (for cases that compare a kernel
    with other kernels on the same device)."""
    if device == "cpu":
        return call_kernel(name, *args, num_threads=num_threads)
    return call_kernel(name, *args, device=device)


_DTYPE_NAMES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16",
                6: "float32", 7: "float64", 11: "bool", 27: "uint16", 28: "uint32", 29: "uint64"}


# ---- performance (--perf, GPU only) -------------------------------------------------------------

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
    share of the reference rate `ref` (a PERF_REFS key, or a tuple of keys)
    where measured."""
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
        for key in (ref if isinstance(ref, (tuple, list)) else (ref,)):
            if key is not None and rate is not None and PERF_REFS.get(key):
                line += f" {100 * rate / PERF_REFS[key]:5.0f}% of {key}"
        lines.append(line)
    return lines


__all__ = ["BF16", "CL", "EXACT", "Out", "Raw", "T", "AnyValues", "bf16", "call_kernel",
           "cast", "check", "check_error", "compute_type", "cpu_only", "cuda_only", "dtype_of",
           "integers",
           "is_float", "is_int", "needs_cuda", "normal", "out_fill", "outs_of", "perf",
           "permutation", "promote", "promote_scalar", "rand", "random", "reference", "run_on",
           "storage", "tensor", "tolerance", "uniform", "value"]

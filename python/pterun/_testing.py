"""Test helpers: run one kernel on NumPy arrays, on the CPU or a GPU (used by
the operator suite, tests/ops).

Not part of the public API.
"""

from __future__ import annotations

import numpy as np

from pterun import _pterun

_NUMPY_TO_DTYPE = {
    np.dtype(np.uint8): 0,
    np.dtype(np.int8): 1,
    np.dtype(np.int16): 2,
    np.dtype(np.int32): 3,
    np.dtype(np.int64): 4,
    np.dtype(np.float16): 5,
    np.dtype(np.float32): 6,
    np.dtype(np.float64): 7,
    np.dtype(np.bool_): 11,
    np.dtype(np.uint16): 27,
    np.dtype(np.uint32): 28,
    np.dtype(np.uint64): 29,
}
_DTYPE_TO_NUMPY = {v: k for k, v in _NUMPY_TO_DTYPE.items()}
BFLOAT16 = 15


def to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 values -> bfloat16 bit patterns (round to nearest even), uint16."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def from_bf16_bits(b: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) -> float32 values."""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


class T:
    """A tensor argument: `array` in logical order, stored with `dim_order`.
    bf16=True means `array` holds float values to be stored as bfloat16."""

    def __init__(self, array, dim_order=None, bf16=False):
        self.array = np.asarray(array)
        self.dim_order = dim_order
        self.bf16 = bf16

    def spec(self):
        a = self.array
        if self.bf16:
            dtype, raw = BFLOAT16, to_bf16_bits(a)
        else:
            dtype, raw = _NUMPY_TO_DTYPE[a.dtype], np.ascontiguousarray(a)
        order = list(self.dim_order) if self.dim_order is not None else list(range(a.ndim))
        shape = list(a.shape)
        return ("tensor", raw.tobytes(), dtype, shape, order, False, False, shape)


class Out:
    """An output tensor of dtype `dtype` (numpy dtype or "bfloat16") and
    `shape`; dynamic=True lets the kernel resize it within `capacity`."""

    def __init__(self, dtype, shape, dim_order=None, dynamic=False, capacity=None):
        self.dtype = BFLOAT16 if dtype == "bfloat16" else _NUMPY_TO_DTYPE[np.dtype(dtype)]
        self.shape = list(shape)
        self.dim_order = dim_order
        self.dynamic = dynamic
        self.capacity = list(capacity) if capacity is not None else self.shape

    def spec(self):
        order = list(self.dim_order) if self.dim_order is not None else list(range(len(self.shape)))
        return ("tensor", b"", self.dtype, self.shape, order, True, self.dynamic, self.capacity)


class InOut(T):
    """A tensor argument the kernel updates in place (a KV cache, say): it
    starts as `array` (like T) and comes back among the outs."""

    def spec(self):
        kind, raw, dtype, shape, order, _, dynamic, capacity = super().spec()
        return (kind, raw, dtype, shape, order, True, dynamic, capacity)


class Raw:
    """A value given as its spec tuple, e.g. Raw(("none",))."""

    def __init__(self, spec):
        self._spec = spec

    def spec(self):
        return self._spec


def _spec(arg):
    if isinstance(arg, (T, Out, Raw)):
        return arg.spec()
    if isinstance(arg, np.ndarray):
        return T(arg).spec()
    if arg is None:
        return ("none",)
    if isinstance(arg, bool):
        return ("bool", arg)
    if isinstance(arg, (int, np.integer)):
        return ("int", int(arg))
    if isinstance(arg, (float, np.floating)):
        return ("double", float(arg))
    if isinstance(arg, str):
        return ("str", arg)
    if isinstance(arg, (list, tuple)):
        items = list(arg)
        if any(isinstance(x, (T, Out, np.ndarray)) for x in items):
            optional = any(x is None for x in items)
            kind = "optional_tensor_list" if optional else "tensor_list"
            return (kind, [None if x is None else _spec(x) for x in items])
        if all(isinstance(x, bool) for x in items) and items:
            return ("bool_list", items)
        if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in items):
            return ("int_list", [int(x) for x in items])
        return ("double_list", [float(x) for x in items])
    raise TypeError(f"cannot pass {type(arg).__name__} to a kernel")


def _array(dtype, shape, raw):
    if dtype == BFLOAT16:
        return from_bf16_bits(np.frombuffer(raw, dtype=np.uint16)).reshape(shape)
    return np.frombuffer(raw, dtype=_DTYPE_TO_NUMPY[dtype]).reshape(shape).copy()


def call_kernel(name, *args, num_threads=1, return_scalars=False, device="cpu"):
    """Runs kernel `name` (e.g. "aten::add.out") on `args` in schema order,
    out arguments last, on `device` ("cpu" or "cuda:N": every tensor is
    uploaded with the same layout, the CUDA kernel runs on a stream of its
    own and the outs are downloaded). Returns the out tensors as NumPy arrays
    (bfloat16 as float32), in argument order; with return_scalars=True also
    the final values of the Int/Double/Bool arguments. NotImplementedError
    when `device` has no such kernel."""
    specs = [_spec(a) for a in args]
    outs, scalars = _pterun._testing_call_kernel(name, specs, num_threads, device)
    arrays = [_array(d, s, raw) for d, s, raw in outs]
    return (arrays, scalars) if return_scalars else arrays


def time_kernel(name, *args, device="cuda:0", iterations=50, num_threads=1):
    """Median seconds per run of kernel `name` on `args` (as call_kernel),
    after 3 warm-up runs: on a GPU the time between CUDA events recorded
    around each launch, on the CPU wall time."""
    specs = [_spec(a) for a in args]
    return _pterun._testing_time_kernel(name, specs, num_threads, device, iterations)

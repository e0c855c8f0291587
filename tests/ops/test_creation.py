"""Creation ops against NumPy and ATen's rules: full, full_like,
scalar_tensor, zeros / ones / empty (and the *_like forms), fill (scalar
and 0-dim tensor values), arange and linspace. The out's dtype decides the
element type: floats truncate into integers, negative values may wrap into
unsigned types, values an integer out cannot hold are refused; every
dtype, dim orders, dynamic outs, threads and argument errors."""

import math

import numpy as np
import pytest

from harness import (BF16, CL, AnyValues, Out, T, bf16, cast, check, check_error, dtype_of,
                     is_int, rand, reference, tensor, value)

ALL = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64,
       np.bool_, BF16]
DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
          np.float64, np.uint16, np.uint32, np.uint64]


# ---- NumPy models ------------------------------------------------------------------------------


def filled(shape, v, od):
    """`shape` of the scalar v stored as `od` (floats truncate into
    integers, ints wrap into unsigned types, anything nonzero is true)."""
    if isinstance(v, bool):
        v = int(v)
    return np.broadcast_to(cast(np.array(v), od), tuple(shape)).copy()


reference("aten::full.out")(lambda size, v, out: filled(size, v, dtype_of(out)))
reference("aten::full_like.out")(
    lambda a, v, memory_format, out: filled(value(a).shape, v, dtype_of(out)))
reference("aten::scalar_tensor.out")(lambda v, out: filled((), v, dtype_of(out)))
reference("aten::zeros.out")(lambda size, out: filled(size, 0, dtype_of(out)))
reference("aten::ones.out")(lambda size, out: filled(size, 1, dtype_of(out)))
reference("aten::zeros_like.out")(
    lambda a, memory_format, out: filled(value(a).shape, 0, dtype_of(out)))
reference("aten::ones_like.out")(
    lambda a, memory_format, out: filled(value(a).shape, 1, dtype_of(out)))
reference("aten::fill.Scalar_out")(lambda a, v, out: filled(value(a).shape, v, dtype_of(out)))
reference("aten::fill.Tensor_out")(
    lambda a, v, out: np.broadcast_to(cast(value(v), dtype_of(out)), value(a).shape))
reference("aten::empty.out")(lambda size, memory_format, out: AnyValues(size))
reference("aten::empty_like.out")(lambda a, memory_format, out: AnyValues(value(a).shape))


def arange_values(start, end, step, od):
    """ATen's arange: integer outs count from start and step truncated to
    int64 (int64 also sizes with them); floating outs size with
    ceil((end - start) / step) and compute in double (float for 16-bit)."""
    if is_int(od):
        s, st = int(start), int(step)
        if np.dtype(od) == np.int64:
            span = int(end) - s + st - (1 if st > 0 else -1)
            n = abs(span) // abs(st) * (1 if (span >= 0) == (st > 0) else -1)
        else:
            n = math.ceil((end - start) / step)
        return cast(np.array([s + i * st for i in range(n)], np.int64), od)
    n = math.ceil((end - start) / step)
    acc = np.float32 if od in (BF16, np.float16) else np.float64
    i = np.arange(n, dtype=acc)
    return cast(acc(start) + i * acc(step), od)


@reference("aten::arange.start_out")
def arange_start_model(start, end, step, out):
    return arange_values(start, end, step, dtype_of(out))


@reference("aten::arange.out")
def arange_model(end, out):
    return arange_values(0, end, 1, dtype_of(out))


@reference("aten::linspace.out")
def linspace_model(start, end, steps, out):
    """The first half counted from start, the second back from end (as
    ATen does); integer outs step in double from truncated bounds."""
    od = dtype_of(out)
    acc = np.float64 if (is_int(od) or od == np.float64) else np.float32
    s = acc(int(start)) if is_int(od) else acc(start)
    e = acc(int(end)) if is_int(od) else acc(end)
    step = (e - s) / acc(steps - 1) if steps > 1 else acc(0)
    half = steps // 2
    v = [s if steps == 1 else (s + step * acc(i) if i < half else e - step * acc(steps - i - 1))
         for i in range(steps)]
    return cast(np.array(v, acc), od)


# One ulp of the compute type either way (a fused multiply-add or not).
RANGE_TOL = {"float32": (1e-6, 1e-6), "float64": (1e-15, 1e-15), "float16": (1e-3, 1e-3),
             BF16: (8e-3, 8e-3)}


# ---- full / full_like / scalar_tensor ----------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("value", [7, -1, 1.9, -2.5, True, 0])
def test_full(device, dtype, value):
    check(device, "aten::full.out", [2, 3], value, Out(dtype, (2, 3)))
    check(device, "aten::full.out", [1, 2, 3, 4], value, Out(dtype, (1, 2, 3, 4), dim_order=CL))
    check(device, "aten::full.out", [1001], value, Out(dtype, (1001,)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_full_every_dtype(device, dtype):
    check(device, "aten::full.out", [2, 3], 7, Out(dtype, (2, 3)), expect=np.full((2, 3), 7, dtype))


def test_full_fixture_form_bool_true_and_bfloat16(device):
    check(device, "aten::full.out", [16, 16], True, Out(np.bool_, (16, 16)),
          expect=np.ones((16, 16), bool))
    check(device, "aten::full.out", [3], 1.1, Out(BF16, (3,)),
          expect=bf16(np.full(3, 1.1, np.float32)))


def test_full_float_values_into_integers_truncate_and_inf_into_floats(device):
    check(device, "aten::full.out", [2], 1.9, Out(np.int64, (2,)), expect=[1, 1])
    check(device, "aten::full.out", [2], -1.9, Out(np.int32, (2,)), expect=[-1, -1])
    check(device, "aten::full.out", [2], -1, Out(np.uint8, (2,)), expect=[255, 255])
    check(device, "aten::full.out", [2], float("-inf"), Out(np.float16, (2,)),
          expect=[-np.inf, -np.inf])
    check(device, "aten::full.out", [1], float("nan"), Out(np.bool_, (1,)), expect=[True])


@pytest.mark.parametrize("value,dtype", [(300, np.uint8), (-129, np.int8), (float("inf"), np.int64),
                                         (float("nan"), np.int32), (2.0**40, np.int32),
                                         (300, np.int8)])
def test_full_rejects_values_that_overflow_an_integer_output(device, value, dtype):
    check_error(device, "aten::full.out", [2], value, Out(dtype, (2,)), exc=ValueError,
                match="overflow")


def test_full_special_and_errors(device):
    check(device, "aten::full.out", [2], float("-inf"), Out(np.float16, (2,)))
    check(device, "aten::full.out", [3], float("nan"), Out(np.float32, (3,)))
    check(device, "aten::full.out", [1], float("nan"), Out(np.bool_, (1,)))
    check(device, "aten::full.out", [], 4, Out(np.int64, ()))
    check(device, "aten::full.out", [0, 4], 1, Out(np.float32, (0, 4)))
    check(device, "aten::full.out", [3, 5], 2.5,
          Out(np.float32, (1, 1), dynamic=True, capacity=(8, 8)))
    check_error(device, "aten::full.out", [3, 3], 1, Out(np.float32, (2, 2)),
                exc=NotImplementedError)


def test_full_resizes_dynamic_out_zero_dim_and_channels_last(device):
    check(device, "aten::full.out", [3, 5], 2.5,
          Out(np.float32, (1, 1), dynamic=True, capacity=(8, 8)),
          expect=np.full((3, 5), 2.5, np.float32))
    check(device, "aten::full.out", [], 4, Out(np.int64, ()), expect=np.array(4))
    check(device, "aten::full.out", [1, 2, 3, 4], -3, Out(np.int16, (1, 2, 3, 4), dim_order=CL),
          expect=np.full((1, 2, 3, 4), -3))
    check(device, "aten::full.out", [0, 4], 1, Out(np.float32, (0, 4)), expect=np.zeros((0, 4)))
    check_error(device, "aten::full.out", [3, 3], 1, Out(np.float32, (2, 2)),
                exc=NotImplementedError)


@pytest.mark.parametrize("memory_format", [None, 0, 1])
def test_full_like_fixture_form(device, memory_format):
    a = np.zeros((2, 3, 4), np.float64)
    check(device, "aten::full_like.out", a, 0, memory_format, Out(np.int64, (2, 3, 4)),
          expect=np.zeros((2, 3, 4), np.int64))
    check(device, "aten::full_like.out", a, -2.5, memory_format, Out(np.float32, (2, 3, 4)),
          expect=np.full((2, 3, 4), -2.5, np.float32))


def test_full_like_channels_last_memory_format(device):
    a = np.zeros((1, 2, 3, 4), np.float32)
    check(device, "aten::full_like.out", T(a, dim_order=CL), 1, 2,
          Out(np.float32, a.shape, dim_order=CL), expect=np.ones(a.shape))
    check_error(device, "aten::full_like.out", a, 1, 2, Out(np.float32, a.shape), exc=ValueError,
                match="memory format")
    check_error(device, "aten::full_like.out", a, 1, 5, Out(np.float32, a.shape), exc=ValueError,
                match="memory format")


@pytest.mark.parametrize("value,dtype,expected", [(float("-inf"), np.float32, -np.inf),
                                                  (3, np.int64, 3), (True, np.bool_, True),
                                                  (0.5, np.float16, 0.5), (7, np.float64, 7.0)])
def test_scalar_tensor(device, value, dtype, expected):
    check(device, "aten::scalar_tensor.out", value, Out(dtype, ()),
          expect=np.array(expected, dtype))


def test_scalar_tensor_needs_zero_dim_out(device):
    check_error(device, "aten::scalar_tensor.out", 1.0, Out(np.float32, (1,)), exc=ValueError,
                match="scalar_tensor")


# ---- zeros / ones / empty / fill ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16, BF16, np.bool_])
def test_like_and_fill(device, dtype):
    a = rand((2, 3, 4, 5))
    check(device, "aten::full_like.out", a, 3, None, Out(dtype, a.shape))
    check(device, "aten::full_like.out", T(a, dim_order=CL), 1, 2,
          Out(dtype, a.shape, dim_order=CL))
    check(device, "aten::zeros.out", [2, 4], Out(dtype, (2, 4)))
    check(device, "aten::ones.out", [2, 4], Out(dtype, (2, 4)))
    check(device, "aten::zeros_like.out", a, None, Out(dtype, a.shape))
    check(device, "aten::ones_like.out", a, 1, Out(dtype, a.shape))
    check(device, "aten::scalar_tensor.out", 2, Out(dtype, ()))
    x = tensor(rand((3, 4)), dtype)
    check(device, "aten::fill.Scalar_out", x, 1, Out(dtype, (3, 4)))
    for v in [np.array(2.5, np.float32), np.array(-3, np.int64), np.array(True)]:
        check(device, "aten::fill.Tensor_out", x, v, Out(dtype, (3, 4)))
    check_error(device, "aten::fill.Tensor_out", x, rand((2,)), Out(dtype, (3, 4)),
                exc=ValueError, match="rank")
    check_error(device, "aten::full_like.out", a, 1, 2, Out(np.float32, a.shape), exc=ValueError,
                match="channels")


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float16, np.float64])
def test_zeros_ones(device, dtype):
    check(device, "aten::zeros.out", [2, 4], Out(dtype, (2, 4)), expect=np.zeros((2, 4), dtype))
    check(device, "aten::ones.out", [2, 4], Out(dtype, (2, 4)), expect=np.ones((2, 4), dtype))
    a = np.empty((3, 1), np.int8)
    check(device, "aten::zeros_like.out", a, None, Out(dtype, (3, 1)),
          expect=np.zeros((3, 1), dtype))
    check(device, "aten::ones_like.out", a, 1, Out(dtype, (3, 1)), expect=np.ones((3, 1), dtype))


def test_empty_only_resizes(device):
    check(device, "aten::empty.out", [3, 2], None,
          Out(np.float32, (1, 1), dynamic=True, capacity=(4, 4)), expect=AnyValues((3, 2)))
    check(device, "aten::empty_like.out", np.zeros((2, 5), np.int8), None,
          Out(np.float32, (1, 1), dynamic=True, capacity=(4, 4)), expect=AnyValues((2, 5)))
    check(device, "aten::empty_like.out", np.zeros((2, 5), np.int8), None, Out(np.int8, (2, 5)))
    check_error(device, "aten::empty.out", [2, -1], None,
                Out(np.float32, (1, 1), dynamic=True, capacity=(4, 4)), exc=ValueError,
                match="empty")


def test_fill_scalar(device):
    a = np.zeros((2, 3), np.int32)
    check(device, "aten::fill.Scalar_out", a, 9, Out(np.int32, (2, 3)), expect=np.full((2, 3), 9))
    check_error(device, "aten::fill.Scalar_out", a, 9, Out(np.int64, (2, 3)), exc=ValueError,
                match="dtype")


@pytest.mark.parametrize("value,dtype", [(np.array(2.75, np.float64), np.float32),
                                         (np.array(-2.75, np.float32), np.int64),
                                         (np.array(5, np.int64), np.float16),
                                         (np.array(0, np.int32), np.bool_)])
def test_fill_tensor_converts_the_value(device, value, dtype):
    a = np.zeros((3, 2), dtype)
    expected = value.astype(np.int64).astype(dtype) if np.dtype(dtype).kind == "i" else value
    check(device, "aten::fill.Tensor_out", a, value, Out(dtype, (3, 2)),
          expect=np.full((3, 2), expected, dtype))


def test_fill_tensor_needs_zero_dim_value(device):
    check_error(device, "aten::fill.Tensor_out", np.zeros(3, np.float32), np.zeros(1, np.float32),
                Out(np.float32, (3,)), exc=ValueError, match="rank 0")


# ---- arange / linspace --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.int16, np.float32,
                                   np.float64, np.float16, BF16])
@pytest.mark.parametrize("args", [(0, 10, 1), (2, 20, 3), (10, -3, -2), (0.5, 7.25, 0.25),
                                  (-1.5, 1.5, 0.1)])
def test_arange(device, dtype, args):
    start, end, step = args
    if is_int(dtype) and int(step) == 0:
        # A step truncated to 0 is an error on every device.
        check_error(device, "aten::arange.start_out", start, end, step,
                    Out(dtype, (1,), dynamic=True, capacity=(4096,)), exc=ValueError,
                    match="truncates to zero")
        return
    if dtype == np.uint8 and min(start, end) < 0:
        pytest.skip("negative values in uint8: unspecified (the backends wrap differently)")
    length = len(arange_values(start, end, step, dtype))
    check(device, "aten::arange.start_out", start, end, step,
          Out(dtype, (length,), dynamic=True, capacity=(4096,)), tol=RANGE_TOL)
    if isinstance(end, int) and end > 0:
        check(device, "aten::arange.out", end, Out(dtype, (end,)))


def test_arange_fixture_form(device):
    check(device, "aten::arange.start_out", 0, 16, 1, Out(np.int64, (16,)), expect=np.arange(16))


@pytest.mark.parametrize("start,end,step", [(0, 10, 3), (5, -3, -2), (2, 2, 1), (-4, 7, 5),
                                            (0, 1, 0.1), (1.5, -2.25, -0.75), (0, 2.5, 0.5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arange_float(device, start, end, step, dtype):
    check(device, "aten::arange.start_out", start, end, step,
          Out(dtype, (1,), dynamic=True, capacity=(64,)),
          expect=np.arange(start, end, step, dtype=np.float64).astype(dtype))


@pytest.mark.parametrize("start,end,step,expected", [
    (0, 10, 3, [0, 3, 6, 9]), (5, -3, -2, [5, 3, 1, -1]),
    (0, 2.5, 1, [0, 1]),           # ATen sizes int64 ranges with truncated bounds
    (0, 5, 1.5, [0, 1, 2, 3, 4]),  # ... and a truncated step
])
def test_arange_int64_follows_aten(device, start, end, step, expected):
    check(device, "aten::arange.start_out", start, end, step,
          Out(np.int64, (1,), dynamic=True, capacity=(64,)), expect=expected)


def test_arange_other_dtypes_and_end_only_form(device):
    check(device, "aten::arange.start_out", 0.5, 3, 1, Out(np.int32, (3,)), expect=[0, 1, 2])
    check(device, "aten::arange.start_out", 0, 1, 0.25, Out(np.float16, (4,)),
          expect=[0, 0.25, 0.5, 0.75])
    check(device, "aten::arange.start_out", 0, 4, 1, Out(BF16, (4,)), expect=[0, 1, 2, 3])
    check(device, "aten::arange.out", 5, Out(np.int64, (5,)), expect=np.arange(5))
    check(device, "aten::arange.out", 2.5, Out(np.float32, (3,)), expect=[0, 1, 2])


@pytest.mark.parametrize("start,end,step,dtype", [(0, 5, 0, np.float32), (0, 5, -1, np.float32),
                                                  (5, 0, 1, np.int64), (0, 5, 0.5, np.int64),
                                                  (0, float("inf"), 1, np.float32),
                                                  (0, 10, 0, np.int64), (0, 10, -1, np.int64)])
def test_arange_rejects_bad_ranges(device, start, end, step, dtype):
    check_error(device, "aten::arange.start_out", start, end, step,
                Out(dtype, (1,), dynamic=True, capacity=(64,)), exc=ValueError, match="arange")


def test_arange_rejects_bool_out_and_wrong_length(device):
    check_error(device, "aten::arange.start_out", 0, 2, 1, Out(np.bool_, (2,)), exc=ValueError,
                match="bool")
    check_error(device, "aten::arange.start_out", 0, 4, 1, Out(np.int64, (3,)),
                exc=NotImplementedError)


def test_arange_errors_and_large(device):
    check_error(device, "aten::arange.start_out", 0, 10, 0, Out(np.int64, (10,)), exc=ValueError,
                match="step")
    check_error(device, "aten::arange.start_out", 0, 10, -1, Out(np.int64, (10,)),
                exc=ValueError, match="bound")
    check(device, "aten::arange.out", 100000, Out(np.float32, (100000,)))
    check(device, "aten::arange.out", 100000, Out(np.int64, (100000,)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16, np.int64, np.int32,
                                   np.uint8])
@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-3.5, 7.25, 11), (10, 0, 4), (2, 9, 1),
                                             (0, 100, 1000), (1, 2, 0)])
def test_linspace(device, dtype, start, end, steps):
    if dtype == np.uint8 and start < 0:
        pytest.skip("negative values in uint8: unspecified (the backends wrap differently)")
    check(device, "aten::linspace.out", start, end, steps, Out(dtype, (steps,)), tol=RANGE_TOL)


def test_linspace_values(device):
    # ATen counts the first half from start and the second half back from end.
    step = (1 - 0) / 6
    expected = [0 + step * i if i < 3 else 1 - step * (6 - i) for i in range(7)]
    check(device, "aten::linspace.out", 0, 1, 7, Out(np.float64, (7,)), expect=np.array(expected))
    r = check(device, "aten::linspace.out", 0, 1, 7, Out(np.float32, (7,)),
              expect=np.linspace(0, 1, 7), tol=(1e-6, 0))
    assert r[0][-1] == 1.0
    # ATen: bounds truncated first
    check(device, "aten::linspace.out", -3.7, 10.2, 5, Out(np.int32, (5,)),
          expect=[-3, 0, 3, 6, 10])
    check(device, "aten::linspace.out", 2, 9, 1, Out(np.float32, (1,)), expect=[2])
    check(device, "aten::linspace.out", 2, 9, 0, Out(np.float32, (0,)), expect=np.zeros(0))
    check_error(device, "aten::linspace.out", 0, 1, -1, Out(np.float32, (0,)), exc=ValueError,
                match="steps")


def test_large_fills_on_threads(device):
    check(device, "aten::full.out", [300, 400], -2, Out(np.int16, (300, 400)),
          expect=np.full((300, 400), -2), num_threads=4)
    check(device, "aten::arange.start_out", 3, 200003, 2, Out(np.int64, (100000,)),
          expect=np.arange(3, 200003, 2), num_threads=4)

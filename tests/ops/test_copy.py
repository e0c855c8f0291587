"""Copies and casts against NumPy: copy_ (in place, broadcasting,
converting), copy.out, clone, lift_fresh_copy, the dim-order copies
(layout changes and the dtype cast: floats reach integers truncating
through int64, NaN / inf / huge values included), _to_copy with its memory
formats and _empty_dim_order; every dtype pair, dim orders, 0-dim and
empty tensors, dynamic outs, threads and argument errors."""

import numpy as np
import pytest

from harness import (BF16, CL, AnyValues, Out, T, bf16, cast, check, check_error, dtype_of,
                     integers, normal, rand, reference, tensor, value)

ALL = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64,
       np.bool_, BF16]
NUMERIC = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
           np.float64]


def eighths(shape, dtype=np.float32):
    """bool half true, integers in [0, 100), floats multiples of 1/8 up to
    +-100: exact in every float type, with fractions to truncate."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return integers(0, 2, shape, bool)
    if dtype.kind in "iu":
        return integers(0, 100, shape, dtype)
    return np.asarray(integers(-800, 800, shape) / 8).astype(dtype)


# ---- NumPy models ------------------------------------------------------------------------------


@reference("aten::copy_")
def copy_inplace_model(self, src, non_blocking):
    return cast(np.broadcast_to(value(src), tuple(self.shape)), dtype_of(self))


@reference("aten::copy.out")
def copy_out_model(self, src, non_blocking, out):
    return cast(np.broadcast_to(value(src), value(self).shape), dtype_of(out))


reference("aten::clone.out")(lambda a, memory_format, out: cast(value(a), dtype_of(out)))
reference("aten::lift_fresh_copy.out")(lambda a, out: cast(value(a), dtype_of(out)))
reference("dim_order_ops::_clone_dim_order.out")(
    lambda a, non_blocking, dim_order, out: cast(value(a), dtype_of(out)))
reference("aten::_to_copy.out")(
    lambda a, non_blocking, memory_format, out: cast(value(a), dtype_of(out)))
reference("dim_order_ops::_to_dim_order_copy.out")(
    lambda a, non_blocking, dim_order, out: cast(value(a), dtype_of(out)))
reference("dim_order_ops::_empty_dim_order.out")(
    lambda size, dim_order, out: AnyValues(size))


# ---- casts --------------------------------------------------------------------------------------

CASTS = [(np.float32, np.float16), (np.float32, BF16), (np.float16, np.float32),
         (BF16, np.float32), (np.float32, np.int32), (np.float64, np.uint8),
         (np.int64, np.float64), (np.int32, np.bool_), (np.bool_, np.float32),
         (np.float16, BF16), (np.float32, np.float32), (np.int8, np.int8),
         (np.int64, np.int16), (np.uint8, np.int64)]


@pytest.mark.parametrize("src_dtype,dst_dtype", CASTS)
@pytest.mark.parametrize("in_order,out_order", [(None, None), (CL, None), (None, CL), (CL, CL)])
def test_to_copy(device, src_dtype, dst_dtype, in_order, out_order):
    x = rand((2, 3, 4, 5), np.float32, -300, 300)
    x[0, 0, 0, :4] = [np.nan, np.inf, -np.inf, 1e30]
    if src_dtype != BF16 and np.dtype(src_dtype).kind in "iub":
        with np.errstate(invalid="ignore"):  # 1e30 -> int64 (whatever NumPy makes of it)
            ints = np.nan_to_num(x, posinf=0, neginf=0).astype(np.int64) % 120
        src = tensor(ints, src_dtype, in_order)
    else:
        src = tensor(x, src_dtype, in_order)
    out_fmt = 2 if out_order == CL else None
    check(device, "aten::_to_copy.out", src, False, out_fmt,
          Out(dst_dtype, x.shape, dim_order=out_order))
    order_arg = list(out_order) if out_order else None
    check(device, "dim_order_ops::_to_dim_order_copy.out", src, False, order_arg,
          Out(dst_dtype, x.shape, dim_order=out_order))


@pytest.mark.parametrize("src_dtype", NUMERIC)
@pytest.mark.parametrize("dst_dtype", NUMERIC)
def test_to_dim_order_copy_every_dtype_pair(device, src_dtype, dst_dtype):
    a = eighths((3, 7), src_dtype)
    # NumPy's view of the portable cast: floats reach integers through int64.
    expected = (a.astype(np.int64).astype(dst_dtype)
                if a.dtype.kind == "f" and np.dtype(dst_dtype).kind in "iu"
                else a.astype(dst_dtype))
    check(device, "dim_order_ops::_to_dim_order_copy.out", a, False, [0, 1],
          Out(dst_dtype, (3, 7)), expect=expected)


def test_float_to_int_truncates_toward_zero(device):
    a = np.array([-2.9, -2.5, -0.5, 0.5, 1.5, 2.9, 127.9], dtype=np.float32)
    check(device, "dim_order_ops::_to_dim_order_copy.out", a, False, None, Out(np.int32, a.shape),
          expect=[-2, -2, 0, 0, 1, 2, 127])
    # via int64, then wraps
    check(device, "dim_order_ops::_to_dim_order_copy.out", np.array([-3.7], np.float32), False,
          None, Out(np.uint8, (1,)), expect=[253])


def test_to_bfloat16_rounds_and_back(device):
    a = normal((4, 6), scale=100)
    check(device, "dim_order_ops::_to_dim_order_copy.out", a, False, None, Out(BF16, a.shape),
          expect=bf16(a))
    check(device, "dim_order_ops::_to_dim_order_copy.out", T(bf16(a), bf16=True), False, None,
          Out(np.float64, a.shape), expect=bf16(a).astype(np.float64))


def test_to_dim_order_copy_casts_and_changes_layout_at_once(device):
    a = eighths((2, 3, 4, 5), np.float64)
    check(device, "dim_order_ops::_to_dim_order_copy.out", T(a, dim_order=CL), False,
          [0, 1, 2, 3], Out(np.float16, a.shape), expect=a.astype(np.float16))
    check(device, "dim_order_ops::_to_dim_order_copy.out", a, False, list(CL),
          Out(np.int32, a.shape, dim_order=CL), expect=a.astype(np.int64).astype(np.int32))


def test_to_dim_order_copy_zero_dim_and_dynamic(device):
    s = np.array(2.75, np.float64)
    check(device, "dim_order_ops::_to_dim_order_copy.out", s, False, [], Out(np.float32, ()),
          expect=np.array(2.75))
    a = eighths((5, 3), np.int64)
    check(device, "dim_order_ops::_to_dim_order_copy.out", a, False, None,
          Out(np.float32, (1, 3), dynamic=True, capacity=(8, 3)), expect=a.astype(np.float32))
    check_error(device, "dim_order_ops::_to_dim_order_copy.out", a, False, [1, 0],
                Out(np.float32, (5, 3)), exc=ValueError, match="dim_order")


@pytest.mark.parametrize("memory_format", [None, 0, 1])
def test_to_copy_memory_formats(device, memory_format):
    a = eighths((2, 3, 4), np.int16)
    check(device, "aten::_to_copy.out", a, False, memory_format, Out(np.float32, a.shape),
          expect=a.astype(np.float32))


def test_to_copy_memory_format_checks(device):
    a = eighths((1, 2, 3, 4))
    check(device, "aten::_to_copy.out", a, False, 2, Out(np.float64, a.shape, dim_order=CL),
          expect=a)
    check_error(device, "aten::_to_copy.out", a, False, 2, Out(np.float64, a.shape),
                exc=ValueError, match="channels-last")
    check_error(device, "aten::_to_copy.out", a, False, 9, Out(np.float64, a.shape),
                exc=ValueError, match="memory format")


def test_large_casts_on_threads(device):
    a = eighths((2, 64, 50, 50), np.float32)
    check(device, "dim_order_ops::_to_dim_order_copy.out", T(a, dim_order=CL), False, None,
          Out(np.int32, a.shape), expect=a.astype(np.int64).astype(np.int32), num_threads=4)
    check(device, "aten::copy_", Out(np.float16, (8, 50, 50)), a[0, 0], False,
          expect=np.broadcast_to(a[0, 0].astype(np.float16), (8, 50, 50)), num_threads=4)


# ---- copy_ / copy.out ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_copy_inplace_and_out(device, dtype):
    src = tensor(rand((3, 1, 5), np.float32, -9, 9), dtype)
    check(device, "aten::copy_", Out(dtype, (3, 4, 5)), src, False)
    check(device, "aten::copy_", Out(np.float32, (2, 3, 4, 5), dim_order=CL),
          tensor(rand((5,)), dtype), False)
    check(device, "aten::copy.out", tensor(rand((3, 4, 5)), dtype), src, False,
          Out(dtype, (3, 4, 5)))
    check(device, "aten::copy_", Out(np.float64, (2, 3)), tensor(rand((2, 3)), dtype), False)
    check_error(device, "aten::copy_", Out(np.float32, (2, 3)), rand((3, 2)), False,
                exc=ValueError, match="broadcast")


def test_copy_inplace_fixture_form(device):
    src = eighths((2, 3))
    check(device, "aten::copy_", Out(np.float32, (2, 3)), src, False, None, expect=src)


@pytest.mark.parametrize("src_shape", [(3,), (1, 3), (2, 1), (), (2, 3)])
def test_copy_inplace_broadcasts_src(device, src_shape):
    src = eighths(src_shape, np.int32)
    check(device, "aten::copy_", Out(np.int32, (2, 3)), src, False,
          expect=np.broadcast_to(src, (2, 3)))


@pytest.mark.parametrize("src_dtype", NUMERIC)
@pytest.mark.parametrize("dst_dtype", [np.uint8, np.float16])
def test_copy_inplace_converts_dtype(device, src_dtype, dst_dtype):
    src = eighths((4, 5), src_dtype)
    expected = (src.astype(np.int64).astype(dst_dtype)
                if src.dtype.kind == "f" and np.dtype(dst_dtype).kind in "iu"
                else src.astype(dst_dtype))
    check(device, "aten::copy_", Out(dst_dtype, (3, 4, 5)), src, False,
          expect=np.broadcast_to(expected, (3, 4, 5)))


def test_copy_inplace_channels_last_self_and_bfloat16_src(device):
    src = bf16(eighths((2, 3, 4, 5)))
    check(device, "aten::copy_", Out(np.float32, (2, 3, 4, 5), dim_order=CL), T(src, bf16=True),
          False, expect=src)


def test_copy_inplace_does_not_resize_self(device):
    check_error(device, "aten::copy_", Out(np.float32, (2, 3)), eighths((3, 2)), False,
                exc=ValueError, match="broadcast")
    check_error(device, "aten::copy_", Out(np.float32, (2, 3)), eighths((2, 2), np.int64), False,
                exc=ValueError, match="broadcast")


def test_copy_out_takes_self_shape_and_src_values(device):
    self_ = eighths((2, 3), np.float64)
    src = eighths((3,), np.int16)
    check(device, "aten::copy.out", self_, src, False,
          Out(np.float64, (1, 1), dynamic=True, capacity=(4, 4)),
          expect=np.broadcast_to(src.astype(np.float64), (2, 3)))
    check_error(device, "aten::copy.out", self_, src, False, Out(np.float32, (2, 3)),
                exc=ValueError, match="dtype")


# ---- clone / _clone_dim_order / lift_fresh_copy -------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("in_order,out_order", [(None, None), (CL, None), (None, CL), (CL, CL)])
def test_clones(device, dtype, in_order, out_order):
    a = tensor(rand((2, 3, 4, 5), np.float32, -9, 9), dtype, in_order)
    check(device, "aten::clone.out", a, None, Out(dtype, (2, 3, 4, 5), dim_order=out_order))
    check(device, "dim_order_ops::_clone_dim_order.out", a, False,
          list(out_order) if out_order else None, Out(dtype, (2, 3, 4, 5), dim_order=out_order))
    check(device, "aten::lift_fresh_copy.out", a, Out(dtype, (2, 3, 4, 5), dim_order=out_order))


@pytest.mark.parametrize("memory_format", [None, 0, 1])
def test_clone(device, memory_format):
    a = eighths((2, 3, 4, 5), np.int8)
    check(device, "aten::clone.out", a, memory_format, Out(np.int8, a.shape, dim_order=CL),
          expect=a)


def test_clone_rejects_channels_last_memory_format_and_other_dtype(device):
    check_error(device, "aten::clone.out", eighths((1, 2, 3, 4)), 2,
                Out(np.float32, (1, 2, 3, 4), dim_order=CL), exc=ValueError,
                match="memory format")
    check_error(device, "aten::clone.out", eighths((2,)), None, Out(np.float64, (2,)),
                exc=ValueError, match="dtype")


@pytest.mark.parametrize("in_order,out_order", [(None, CL), (CL, None), (CL, CL), (None, None)])
@pytest.mark.parametrize("dtype", [np.bool_, np.uint16, np.float16, np.int64])
def test_clone_dim_order_changes_layout(device, in_order, out_order, dtype):
    a = eighths((2, 3, 4, 5), dtype)
    dim_order = list(out_order or (0, 1, 2, 3))
    check(device, "dim_order_ops::_clone_dim_order.out", T(a, dim_order=in_order), False,
          dim_order, Out(dtype, a.shape, dim_order=out_order), expect=a)


def test_clone_dim_order_without_list_and_with_mismatch(device):
    a = eighths((2, 3))
    check(device, "dim_order_ops::_clone_dim_order.out", a, False, None, Out(np.float32, (2, 3)),
          expect=a)
    check_error(device, "dim_order_ops::_clone_dim_order.out", eighths((1, 2, 3, 4)), False,
                [0, 2, 3, 1], Out(np.float32, (1, 2, 3, 4)), exc=ValueError, match="dim_order")


def test_lift_fresh_copy(device):
    check(device, "aten::lift_fresh_copy.out", eighths((3, 0, 2)), Out(np.float32, (3, 0, 2)),
          expect=np.zeros((3, 0, 2)))
    check(device, "aten::lift_fresh_copy.out", np.array(True), Out(np.bool_, ()),
          expect=np.array(True))


def test_copy_edge_cases(device):
    check(device, "aten::clone.out", np.zeros((3, 0, 2), np.float32), None,
          Out(np.float32, (3, 0, 2)))
    check(device, "aten::lift_fresh_copy.out", np.array(True), Out(np.bool_, ()))
    check(device, "dim_order_ops::_to_dim_order_copy.out", np.array(2.75, np.float32), False, [],
          Out(np.float64, ()))
    check_error(device, "aten::clone.out", rand((2,)), None, Out(np.float64, (2,)),
                exc=ValueError, match="dtype")
    check_error(device, "dim_order_ops::_to_dim_order_copy.out", rand((3, 5)), False, [1, 0],
                Out(np.float32, (3, 5)), exc=ValueError, match="dim_order")
    check(device, "dim_order_ops::_empty_dim_order.out", [2, 7], None,
          Out(np.float32, (1, 1), dynamic=True, capacity=(4, 4)))


# ---- _empty_dim_order ---------------------------------------------------------------------------


def test_empty_dim_order_only_resizes(device):
    check(device, "dim_order_ops::_empty_dim_order.out", [3, 2], None,
          Out(np.float32, (1, 1), dynamic=True, capacity=(4, 4)), expect=AnyValues((3, 2)))
    check(device, "dim_order_ops::_empty_dim_order.out", [1, 2, 3, 4], list(CL),
          Out(np.int64, (1, 2, 3, 4), dim_order=CL), expect=AnyValues((1, 2, 3, 4)))
    check_error(device, "dim_order_ops::_empty_dim_order.out", [2, 2], [1, 0],
                Out(np.float32, (2, 2)), exc=ValueError, match="dim_order")
    check_error(device, "dim_order_ops::_empty_dim_order.out", [2, 5], None,
                Out(np.float32, (2, 2)), exc=NotImplementedError)

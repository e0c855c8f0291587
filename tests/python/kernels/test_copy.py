"""Copies and casts (copy.cpp) against NumPy: copy_ (in place, broadcasting,
converting), copy.out, clone, the dim-order copies (layout changes and the
dtype cast, float -> int truncating through int64), _to_copy,
_empty_dim_order and lift_fresh_copy."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(17)
CL = (0, 2, 3, 1)
NUMERIC = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
           np.float64]


def rand(shape, dtype=np.float32):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return RNG.integers(0, 100, shape).astype(dtype)
    # Multiples of 1/8 up to +-100: exact in every float type, with fractions to truncate.
    return np.asarray(RNG.integers(-800, 800, shape) / 8).astype(dtype)


def cast(a, dtype):
    """NumPy's view of the portable cast: floats reach integers through int64."""
    dtype = np.dtype(dtype)
    if a.dtype.kind == "f" and dtype.kind in "iu":
        return a.astype(np.int64).astype(dtype)
    return a.astype(dtype)


def run(name, *args):
    return call_kernel(name, *args)[0]


# ---- copy_ / copy.out ---------------------------------------------------------------------------


def test_copy_inplace_fixture_form():
    src = rand((2, 3))
    r = run("aten::copy_", Out(np.float32, (2, 3)), src, False, None)
    np.testing.assert_array_equal(r, src)


@pytest.mark.parametrize("src_shape", [(3,), (1, 3), (2, 1), (), (2, 3)])
def test_copy_inplace_broadcasts_src(src_shape):
    src = rand(src_shape, np.int32)
    r = run("aten::copy_", Out(np.int32, (2, 3)), src, False)
    np.testing.assert_array_equal(r, np.broadcast_to(src, (2, 3)))


@pytest.mark.parametrize("src_dtype", NUMERIC)
@pytest.mark.parametrize("dst_dtype", [np.uint8, np.float16])
def test_copy_inplace_converts_dtype(src_dtype, dst_dtype):
    src = rand((4, 5), src_dtype)
    r = run("aten::copy_", Out(dst_dtype, (3, 4, 5)), src, False)
    np.testing.assert_array_equal(r, np.broadcast_to(cast(src, dst_dtype), (3, 4, 5)))


def test_copy_inplace_channels_last_self_and_bfloat16_src():
    src = from_bf16_bits(to_bf16_bits(rand((2, 3, 4, 5))))
    r = run("aten::copy_", Out(np.float32, (2, 3, 4, 5), dim_order=CL), T(src, bf16=True), False)
    np.testing.assert_array_equal(r, src)


def test_copy_inplace_does_not_resize_self():
    with pytest.raises(ValueError, match="broadcast"):
        run("aten::copy_", Out(np.float32, (2, 3)), rand((3, 2)), False)
    with pytest.raises(ValueError, match="broadcast"):
        run("aten::copy_", Out(np.float32, (2, 3)), rand((2, 2), np.int64), False)


def test_copy_out_takes_self_shape_and_src_values():
    self_ = rand((2, 3), np.float64)
    src = rand((3,), np.int16)
    r = run("aten::copy.out", self_, src, False, Out(np.float64, (1, 1), dynamic=True,
                                                     capacity=(4, 4)))
    np.testing.assert_array_equal(r, np.broadcast_to(src.astype(np.float64), (2, 3)))
    with pytest.raises(ValueError, match="dtype"):
        run("aten::copy.out", self_, src, False, Out(np.float32, (2, 3)))


# ---- clone / _clone_dim_order / lift_fresh_copy --------------------------------------------------


@pytest.mark.parametrize("memory_format", [None, 0, 1])
def test_clone(memory_format):
    a = rand((2, 3, 4, 5), np.int8)
    np.testing.assert_array_equal(run("aten::clone.out", a, memory_format,
                                      Out(np.int8, a.shape, dim_order=CL)), a)


def test_clone_rejects_channels_last_memory_format_and_other_dtype():
    with pytest.raises(ValueError, match="memory format"):
        run("aten::clone.out", rand((1, 2, 3, 4)), 2, Out(np.float32, (1, 2, 3, 4), dim_order=CL))
    with pytest.raises(ValueError, match="dtype"):
        run("aten::clone.out", rand((2,)), None, Out(np.float64, (2,)))


@pytest.mark.parametrize("in_order,out_order", [(None, CL), (CL, None), (CL, CL), (None, None)])
@pytest.mark.parametrize("dtype", [np.bool_, np.uint16, np.float16, np.int64])
def test_clone_dim_order_changes_layout(in_order, out_order, dtype):
    a = rand((2, 3, 4, 5), dtype)
    dim_order = list(out_order or (0, 1, 2, 3))
    r = run("dim_order_ops::_clone_dim_order.out", T(a, dim_order=in_order), False, dim_order,
            Out(dtype, a.shape, dim_order=out_order))
    np.testing.assert_array_equal(r, a)


def test_clone_dim_order_without_list_and_with_mismatch():
    a = rand((2, 3))
    np.testing.assert_array_equal(run("dim_order_ops::_clone_dim_order.out", a, False, None,
                                      Out(np.float32, (2, 3))), a)
    with pytest.raises(ValueError, match="dim_order"):
        run("dim_order_ops::_clone_dim_order.out", rand((1, 2, 3, 4)), False, [0, 2, 3, 1],
            Out(np.float32, (1, 2, 3, 4)))


def test_lift_fresh_copy():
    a = rand((3, 0, 2))
    assert run("aten::lift_fresh_copy.out", a, Out(np.float32, a.shape)).shape == (3, 0, 2)
    s = np.array(True)
    assert run("aten::lift_fresh_copy.out", s, Out(np.bool_, ())) == True  # noqa: E712


# ---- _to_dim_order_copy / _to_copy (the casts) ---------------------------------------------------


@pytest.mark.parametrize("src_dtype", NUMERIC)
@pytest.mark.parametrize("dst_dtype", NUMERIC)
def test_to_dim_order_copy_every_dtype_pair(src_dtype, dst_dtype):
    a = rand((3, 7), src_dtype)
    r = run("dim_order_ops::_to_dim_order_copy.out", a, False, [0, 1], Out(dst_dtype, (3, 7)))
    assert r.dtype == np.dtype(dst_dtype)
    np.testing.assert_array_equal(r, cast(a, dst_dtype))


def test_float_to_int_truncates_toward_zero():
    a = np.array([-2.9, -2.5, -0.5, 0.5, 1.5, 2.9, 127.9], dtype=np.float32)
    r = run("dim_order_ops::_to_dim_order_copy.out", a, False, None, Out(np.int32, a.shape))
    np.testing.assert_array_equal(r, [-2, -2, 0, 0, 1, 2, 127])
    r = run("dim_order_ops::_to_dim_order_copy.out", np.array([-3.7], np.float32), False, None,
            Out(np.uint8, (1,)))
    np.testing.assert_array_equal(r, [253])  # via int64, then wraps


def test_to_bfloat16_rounds_and_back():
    a = (RNG.standard_normal((4, 6)) * 100).astype(np.float32)
    r = run("dim_order_ops::_to_dim_order_copy.out", a, False, None, Out("bfloat16", a.shape))
    np.testing.assert_array_equal(r, from_bf16_bits(to_bf16_bits(a)))
    b = run("dim_order_ops::_to_dim_order_copy.out", T(r, bf16=True), False, None,
            Out(np.float64, a.shape))
    np.testing.assert_array_equal(b, r.astype(np.float64))


def test_to_dim_order_copy_casts_and_changes_layout_at_once():
    a = rand((2, 3, 4, 5), np.float64)
    r = run("dim_order_ops::_to_dim_order_copy.out", T(a, dim_order=CL), False, [0, 1, 2, 3],
            Out(np.float16, a.shape))
    np.testing.assert_array_equal(r, a.astype(np.float16))
    r = run("dim_order_ops::_to_dim_order_copy.out", a, False, list(CL),
            Out(np.int32, a.shape, dim_order=CL))
    np.testing.assert_array_equal(r, cast(a, np.int32))


def test_to_dim_order_copy_zero_dim_and_dynamic():
    s = np.array(2.75, np.float64)
    assert run("dim_order_ops::_to_dim_order_copy.out", s, False, [], Out(np.float32, ())) == 2.75
    a = rand((5, 3), np.int64)
    r = run("dim_order_ops::_to_dim_order_copy.out", a, False, None,
            Out(np.float32, (1, 3), dynamic=True, capacity=(8, 3)))
    np.testing.assert_array_equal(r, a.astype(np.float32))
    with pytest.raises(ValueError, match="dim_order"):
        run("dim_order_ops::_to_dim_order_copy.out", a, False, [1, 0], Out(np.float32, (5, 3)))


@pytest.mark.parametrize("memory_format", [None, 0, 1])
def test_to_copy(memory_format):
    a = rand((2, 3, 4), np.int16)
    r = run("aten::_to_copy.out", a, False, memory_format, Out(np.float32, a.shape))
    np.testing.assert_array_equal(r, a.astype(np.float32))


def test_to_copy_memory_format_checks():
    a = rand((1, 2, 3, 4))
    r = run("aten::_to_copy.out", a, False, 2, Out(np.float64, a.shape, dim_order=CL))
    np.testing.assert_array_equal(r, a)
    with pytest.raises(ValueError, match="channels-last"):
        run("aten::_to_copy.out", a, False, 2, Out(np.float64, a.shape))
    with pytest.raises(ValueError, match="memory format"):
        run("aten::_to_copy.out", a, False, 9, Out(np.float64, a.shape))


# ---- _empty_dim_order ---------------------------------------------------------------------------


def test_empty_dim_order_only_resizes():
    r = run("dim_order_ops::_empty_dim_order.out", [3, 2], None,
            Out(np.float32, (1, 1), dynamic=True, capacity=(4, 4)))
    assert r.shape == (3, 2)
    r = run("dim_order_ops::_empty_dim_order.out", [1, 2, 3, 4], list(CL),
            Out(np.int64, (1, 2, 3, 4), dim_order=CL))
    assert r.shape == (1, 2, 3, 4)
    with pytest.raises(ValueError, match="dim_order"):
        run("dim_order_ops::_empty_dim_order.out", [2, 2], [1, 0], Out(np.float32, (2, 2)))
    with pytest.raises(NotImplementedError):
        run("dim_order_ops::_empty_dim_order.out", [2, 5], None, Out(np.float32, (2, 2)))


def test_large_casts_on_threads():
    a = rand((2, 64, 50, 50), np.float32)
    r = call_kernel("dim_order_ops::_to_dim_order_copy.out", T(a, dim_order=CL), False, None,
                    Out(np.int32, a.shape), num_threads=4)[0]
    np.testing.assert_array_equal(r, cast(a, np.int32))
    r = call_kernel("aten::copy_", Out(np.float16, (8, 50, 50)), a[0, 0], False,
                    num_threads=4)[0]
    np.testing.assert_array_equal(r, np.broadcast_to(a[0, 0].astype(np.float16), (8, 50, 50)))

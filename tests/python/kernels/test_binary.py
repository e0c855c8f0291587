"""Elementwise binary arithmetic (binary.cpp) against NumPy: promotion and
out-dtype rules, broadcasting, dim orders, Python division/remainder
semantics, integer division by zero, NaN propagation and scalar overloads."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(7)
CL = (0, 2, 3, 1)
INTS = [np.uint8, np.int8, np.int16, np.int32, np.int64]
FLOATS = [np.float16, np.float32, np.float64]


def bf16(x):
    return from_bf16_bits(to_bf16_bits(np.asarray(x, dtype=np.float32)))


def rand(shape, dtype, lo=-50, hi=50):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(lo, info.min), min(hi, info.max) + 1, shape).astype(dtype)
    return (RNG.standard_normal(shape) * 10).astype(dtype)


def run(name, *args, **kw):
    return call_kernel(name, *args, **kw)[0]


# ---- add / sub / mul (the fixture ops) ----------------------------------------------------


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("name,fn", [("aten::add.out", np.add), ("aten::sub.out", np.subtract)])
def test_add_sub_broadcast_every_dtype(dtype, name, fn):
    a, b = rand((3, 1, 5), dtype, 0, 60), rand((4, 1), dtype, 0, 60)
    r = run(name, a, b, 1, Out(dtype, (3, 4, 5)))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(r, fn(a, b))


@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_])
def test_mul_every_dtype(dtype):
    a, b = rand((2, 3, 4), dtype, -10, 10), rand((3, 1), dtype, -10, 10)
    with np.errstate(over="ignore"):
        expected = np.logical_and(a, b) if dtype == np.bool_ else a * b
    np.testing.assert_array_equal(run("aten::mul.out", a, b, Out(dtype, (2, 3, 4))), expected)


def test_add_alpha_and_bool():
    a, b = rand((4, 5), np.float32), rand((5,), np.float32)
    np.testing.assert_allclose(run("aten::add.out", a, b, 2.5, Out(np.float32, (4, 5))),
                               a + np.float32(2.5) * b, rtol=1e-6)
    # x - alpha * y may contract to one FMA, so compare with a tolerance.
    np.testing.assert_allclose(run("aten::sub.out", a, b, -3, Out(np.float32, (4, 5))),
                               a - np.float32(-3) * b, rtol=1e-6)
    x, y = rand((6,), np.bool_), rand((6,), np.bool_)
    np.testing.assert_array_equal(run("aten::add.out", x, y, 1, Out(np.bool_, (6,))), x | y)
    with pytest.raises(ValueError, match="sub.out"):
        run("aten::sub.out", x, y, 1, Out(np.bool_, (6,)))
    with pytest.raises(ValueError, match="alpha"):
        run("aten::add.out", rand((3,), np.int32), rand((3,), np.int32), 1.5, Out(np.int32, (3,)))


def test_promotion_and_out_cast():
    a, b = rand((3, 4), np.uint8, 0, 100), rand((3, 4), np.int8)
    # u8 + i8 -> i16, stored in an i16 out; also into f32 (castable).
    np.testing.assert_array_equal(run("aten::add.out", a, b, 1, Out(np.int16, (3, 4))),
                                  a.astype(np.int16) + b)
    np.testing.assert_array_equal(run("aten::add.out", a, b, 1, Out(np.float32, (3, 4))),
                                  (a.astype(np.int16) + b).astype(np.float32))
    # int + f16 -> f16, computed in f32.
    i, h = rand((5,), np.int32), rand((5,), np.float16)
    np.testing.assert_array_equal(run("aten::mul.out", i, h, Out(np.float16, (5,))),
                                  (i.astype(np.float32) * h.astype(np.float32)).astype(np.float16))
    with pytest.raises(ValueError, match="cannot store"):
        run("aten::add.out", h, h, 1, Out(np.int32, (5,)))
    with pytest.raises(ValueError):
        run("aten::add.out", a, b, 1, Out(np.bool_, (3, 4)))


def test_bf16_and_f16_mix_computes_in_float():
    x, y = bf16(rand((8,), np.float32)), rand((8,), np.float16)
    r = run("aten::add.out", T(x, bf16=True), y, 1, Out("bfloat16", (8,)))
    np.testing.assert_array_equal(r, bf16(x + y.astype(np.float32)))


@pytest.mark.parametrize("out_order", [None, CL])
def test_channels_last_inputs_and_out(out_order):
    a, b = rand((2, 3, 4, 5), np.float32), rand((2, 3, 4, 5), np.float32)
    r = run("aten::mul.out", T(a, dim_order=CL), b, Out(np.float32, a.shape, dim_order=out_order))
    np.testing.assert_array_equal(r, a * b)
    c = rand((3, 1, 1), np.float32)  # per-channel broadcast into channels-last
    r = run("aten::sub.out", T(a, dim_order=CL), c, 1, Out(np.float32, a.shape, dim_order=CL))
    np.testing.assert_array_equal(r, a - c)


@pytest.mark.parametrize("order", [None, CL])
def test_same_layout_operands_every_dtype_and_mixed(order):
    # Operands of one shape and dim order take one flat loop (the common
    # case); with other dtypes they still convert on load and store.
    for dtype in INTS + FLOATS:
        a, b = rand((2, 3, 4, 5), dtype, 0, 60), rand((2, 3, 4, 5), dtype, 0, 60)
        r = run("aten::add.out", T(a, dim_order=order), T(b, dim_order=order), 1,
                Out(dtype, a.shape, dim_order=order))
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(r, a + b)
    a, b = rand((2, 3, 4, 5), np.int16), rand((2, 3, 4, 5), np.float32)
    r = run("aten::mul.out", T(a, dim_order=order), T(b, dim_order=order),
            Out(np.float64, a.shape, dim_order=order))
    np.testing.assert_array_equal(r, (a.astype(np.float32) * b).astype(np.float64))
    # Same sizes in another memory order than the output: reordered.
    c = rand((2, 3, 4, 5), np.int16)
    r = run("aten::sub.out", T(a, dim_order=order), c, 2,
            Out(np.int16, a.shape, dim_order=None if order else CL))
    np.testing.assert_array_equal(r, a - 2 * c)


def test_same_layout_large_over_threads():
    a, b = rand((300, 517), np.float32), rand((300, 517), np.float32)
    r = run("aten::sub.out", a, b, 1, Out(np.float32, a.shape), num_threads=4)
    np.testing.assert_array_equal(r, a - b)


def test_empty_zero_dim_and_dynamic_out():
    e = np.zeros((0, 3), np.float32)
    assert run("aten::add.out", e, np.ones(3, np.float32), 1, Out(np.float32, (0, 3))).shape == (0, 3)
    s = np.array(2.5, np.float32)
    r = run("aten::mul.out", s, np.array(4.0, np.float32), Out(np.float32, ()))
    assert r.shape == () and r == 10.0
    r = run("aten::add.out", rand((2, 3), np.float32), s, 1,
            Out(np.float32, (4, 4), dynamic=True, capacity=(4, 4)))
    assert r.shape == (2, 3)
    with pytest.raises(ValueError):
        run("aten::add.out", rand((2, 3), np.float32), rand((4,), np.float32), 1,
            Out(np.float32, (2, 3)))


def test_threads_large():
    a, b = rand((300, 517), np.float32), rand((517,), np.float32)
    r = run("aten::add.out", a, b, 1, Out(np.float32, a.shape), num_threads=4)
    np.testing.assert_array_equal(r, a + b)


# ---- scalar overloads -------------------------------------------------------------------


def test_mul_scalar_promotion():
    x = rand((3, 4), np.float32)
    np.testing.assert_array_equal(run("aten::mul.Scalar_out", x, 0.5, Out(np.float32, x.shape)),
                                  x * np.float32(0.5))
    h = rand((6,), np.float16)
    np.testing.assert_array_equal(run("aten::mul.Scalar_out", h, 0.1, Out(np.float16, h.shape)),
                                  (h.astype(np.float32) * np.float32(0.1)).astype(np.float16))
    i = rand((5,), np.int32)
    np.testing.assert_array_equal(run("aten::mul.Scalar_out", i, 2.5, Out(np.float32, (5,))),
                                  i.astype(np.float32) * np.float32(2.5))
    np.testing.assert_array_equal(run("aten::mul.Scalar_out", i, 3, Out(np.int32, (5,))), i * 3)
    b = rand((5,), np.bool_)
    np.testing.assert_array_equal(run("aten::mul.Scalar_out", b, 3, Out(np.int64, (5,))),
                                  b.astype(np.int64) * 3)
    with pytest.raises(ValueError, match="out must be float32"):
        run("aten::mul.Scalar_out", i, 2.5, Out(np.float64, (5,)))
    with pytest.raises(ValueError, match="out must be int32"):
        run("aten::mul.Scalar_out", i, 2, Out(np.int64, (5,)))


def test_add_sub_rsub_scalar():
    x = rand((2, 5), np.float32)
    np.testing.assert_allclose(run("aten::add.Scalar_out", x, 1.5, 2, Out(np.float32, x.shape)),
                               x + np.float32(3.0))
    np.testing.assert_allclose(run("aten::sub.Scalar_out", x, 1.5, 1, Out(np.float32, x.shape)),
                               x - np.float32(1.5))
    np.testing.assert_allclose(run("aten::rsub.Scalar_out", x, 1.0, 2, Out(np.float32, x.shape)),
                               np.float32(1.0) - 2 * x, rtol=1e-6)
    i = rand((4,), np.int16)
    np.testing.assert_array_equal(run("aten::rsub.Scalar_out", i, 7, 1, Out(np.int16, (4,))), 7 - i)
    np.testing.assert_array_equal(run("aten::add.Scalar_out", i, 7, 2, Out(np.int16, (4,))), i + 14)
    with pytest.raises(ValueError):
        run("aten::sub.Scalar_out", rand((3,), np.bool_), True, 1, Out(np.bool_, (3,)))
    with pytest.raises(ValueError):
        run("aten::add.Scalar_out", i, 7, 0.5, Out(np.int16, (4,)))


# ---- division -------------------------------------------------------------------------


def test_div_true_division():
    a, b = rand((3, 4), np.int32), rand((4,), np.int32, 1, 9)
    np.testing.assert_allclose(run("aten::div.out", a, b, Out(np.float32, (3, 4))),
                               a.astype(np.float32) / b.astype(np.float32))
    f, d = rand((4,), np.float32), rand((4,), np.float64)
    np.testing.assert_array_equal(run("aten::div.out", f, d, Out(np.float64, (4,))),
                                  f.astype(np.float64) / d)
    z = run("aten::div.out", np.array([1, -1, 0], np.int64), np.zeros(3, np.int64),
            Out(np.float32, (3,)))
    assert z[0] == np.inf and z[1] == -np.inf and np.isnan(z[2])
    with pytest.raises(ValueError):
        run("aten::div.out", a, b, Out(np.int32, (3, 4)))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_div_floor_and_trunc_integers(dtype):
    a = rand((6, 7), dtype, -100, 100)
    b = rand((7,), dtype, -9, 9)
    b[b == 0] = 3
    r = run("aten::div.out_mode", a, b, "floor", Out(dtype, a.shape))
    np.testing.assert_array_equal(r, np.floor_divide(a, b))
    r = run("aten::div.out_mode", a, b, "trunc", Out(dtype, a.shape))
    np.testing.assert_array_equal(r, (np.trunc(a.astype(np.float64) / b)).astype(dtype))


def test_div_mode_edge_cases():
    m = np.iinfo(np.int32).min
    a, b = np.array([m, 7, -7], np.int32), np.array([-1, -2, 2], np.int32)
    np.testing.assert_array_equal(run("aten::div.out_mode", a, b, "floor", Out(np.int32, (3,))),
                                  [m, -4, -4])
    np.testing.assert_array_equal(run("aten::div.out_mode", a, b, "trunc", Out(np.int32, (3,))),
                                  [m, -3, -3])
    with pytest.raises(ValueError, match="division by zero"):
        run("aten::div.out_mode", a, np.array([1, 0, 1], np.int32), "floor", Out(np.int32, (3,)))
    with pytest.raises(ValueError, match="rounding_mode"):
        run("aten::div.out_mode", a, b, "round", Out(np.int32, (3,)))
    with pytest.raises(ValueError):
        run("aten::div.out_mode", a > 0, b > 0, "floor", Out(np.bool_, (3,)))
    # None: true division.
    np.testing.assert_allclose(run("aten::div.out_mode", a, b, None, Out(np.float32, (3,))),
                               a.astype(np.float32) / b)


def test_div_floor_float_python_semantics():
    a = np.array([1.0, -1.0, 7.5, -7.5, 1.0, 0.0, -0.0, 5.0], np.float64)
    b = np.array([0.1, 0.1, -2.0, 2.0, 0.0, -3.0, 3.0, np.inf], np.float64)
    with np.errstate(divide="ignore"):
        expected = np.floor_divide(a, b)
    r = run("aten::div.out_mode", a, b, "floor", Out(np.float64, a.shape))
    np.testing.assert_array_equal(r, expected)
    np.testing.assert_array_equal(np.signbit(r), np.signbit(expected))
    r = run("aten::floor_divide.out", a, b, Out(np.float64, a.shape))
    np.testing.assert_array_equal(r, expected)


def test_div_scalar_overloads():
    i = rand((5,), np.int64)
    np.testing.assert_allclose(run("aten::div.Scalar_out", i, 4, Out(np.float32, (5,))),
                               i.astype(np.float32) / 4)
    with pytest.raises(ValueError):
        run("aten::div.Scalar_out", i, 4, Out(np.float64, (5,)))
    np.testing.assert_array_equal(
        run("aten::div.Scalar_mode_out", i, -3, "floor", Out(np.int64, (5,))), i // -3)
    np.testing.assert_array_equal(
        run("aten::div.Scalar_mode_out", i, 2.5, "trunc", Out(np.float32, (5,))),
        np.trunc(i.astype(np.float32) / np.float32(2.5)))
    with pytest.raises(ValueError, match="division by zero"):
        run("aten::div.Scalar_mode_out", i, 0, "trunc", Out(np.int64, (5,)))
    f = rand((5,), np.float32)
    np.testing.assert_allclose(run("aten::div.Scalar_mode_out", f, 3, None, Out(np.float32, (5,))),
                               f / np.float32(3))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64])
def test_floor_divide_ints(dtype):
    a, b = rand((4, 6), dtype), rand((6,), dtype, -7, 7)
    b[b == 0] = 5
    np.testing.assert_array_equal(run("aten::floor_divide.out", a, b, Out(dtype, a.shape)), a // b)
    b[2] = 0
    with pytest.raises(ValueError, match="division by zero"):
        run("aten::floor_divide.out", a, b, Out(dtype, a.shape))


# ---- remainder / fmod --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.float32, np.float64])
def test_remainder_and_fmod_signs(dtype):
    a, b = rand((5, 6), dtype), rand((6,), dtype, -9, 9)
    b[b == 0] = 4
    r = run("aten::remainder.Tensor_out", a, b, Out(dtype, a.shape))
    np.testing.assert_allclose(r, np.remainder(a, b), rtol=1e-6, atol=1e-5)
    r = run("aten::fmod.Tensor_out", a, b, Out(dtype, a.shape))
    np.testing.assert_allclose(r, np.fmod(a, b), rtol=1e-6, atol=1e-5)
    r = run("aten::remainder.Scalar_out", a, -3, Out(dtype, a.shape))
    np.testing.assert_allclose(r, np.remainder(a, dtype(-3)), rtol=1e-6, atol=1e-5)
    r = run("aten::fmod.Scalar_out", a, -3, Out(dtype, a.shape))
    np.testing.assert_allclose(r, np.fmod(a, dtype(-3)), rtol=1e-6, atol=1e-5)


def test_remainder_fixture_pattern_and_zero():
    a = np.array([-7, 7, -7, 7, 0, -1], np.int64)
    b = np.array([3, -3, -3, 3, 5, 4], np.int64)
    np.testing.assert_array_equal(run("aten::remainder.Tensor_out", a, b, Out(np.int64, (6,))),
                                  [2, -2, -1, 1, 0, 3])
    for name in ("aten::remainder.Tensor_out", "aten::fmod.Tensor_out"):
        with pytest.raises(ValueError, match="division by zero"):
            run(name, a, np.zeros(1, np.int64), Out(np.int64, (6,)))
    for name in ("aten::remainder.Scalar_out", "aten::fmod.Scalar_out"):
        with pytest.raises(ValueError, match="division by zero"):
            run(name, a, 0, Out(np.int64, (6,)))
    # Float divisor zero is NaN, not an error; int tensor with float scalar is float.
    r = run("aten::remainder.Scalar_out", a, 0.0, Out(np.float32, (6,)))
    assert np.isnan(r).all()
    with pytest.raises(ValueError):
        run("aten::remainder.Tensor_out", a > 0, b > 0, Out(np.bool_, (6,)))


# ---- pow ---------------------------------------------------------------------------------


def test_pow_tensor_scalar():
    x = rand((3, 7), np.float32)
    np.testing.assert_array_equal(run("aten::pow.Tensor_Scalar_out", x, 2, Out(np.float32, x.shape)),
                                  x * x)
    np.testing.assert_allclose(run("aten::pow.Tensor_Scalar_out", np.abs(x), 1.7,
                                   Out(np.float32, x.shape)), np.abs(x) ** np.float32(1.7),
                               rtol=1e-6)
    np.testing.assert_allclose(run("aten::pow.Tensor_Scalar_out", np.abs(x), 0.5,
                                   Out(np.float32, x.shape)), np.sqrt(np.abs(x)), rtol=1e-6)
    i = rand((8,), np.int64, -5, 5)
    np.testing.assert_array_equal(run("aten::pow.Tensor_Scalar_out", i, 3, Out(np.int64, (8,))),
                                  i ** 3)
    big = np.array([3, -3, 2], np.int64)
    np.testing.assert_array_equal(run("aten::pow.Tensor_Scalar_out", big, 39, Out(np.int64, (3,))),
                                  [3 ** 39, -(3 ** 39), 2 ** 39])
    with np.errstate(invalid="ignore"):
        expected = np.float32(i) ** np.float32(0.5)
    np.testing.assert_allclose(run("aten::pow.Tensor_Scalar_out", i, 0.5, Out(np.float32, (8,))),
                               expected, rtol=1e-6)
    np.testing.assert_array_equal(
        run("aten::pow.Tensor_Scalar_out", np.array([1, -1, -1, 2, 0], np.int32), -3,
            Out(np.int32, (5,))), [1, -1, -1, 0, 0])
    h = rand((5,), np.float16)
    np.testing.assert_array_equal(run("aten::pow.Tensor_Scalar_out", h, 2, Out(np.float16, (5,))),
                                  (h.astype(np.float32) ** 2).astype(np.float16))
    with pytest.raises(ValueError):
        run("aten::pow.Tensor_Scalar_out", x, 2, Out(np.int32, x.shape))
    with pytest.raises(ValueError):
        run("aten::pow.Tensor_Scalar_out", x > 0, True, Out(np.bool_, x.shape))


def test_pow_tensor_tensor_and_scalar_base():
    a, e = np.abs(rand((4, 5), np.float64)) + 0.1, rand((5,), np.float64) / 10
    np.testing.assert_allclose(run("aten::pow.Tensor_Tensor_out", a, e, Out(np.float64, a.shape)),
                               a ** e, rtol=1e-14)
    ia, ie = rand((4, 5), np.int32, -4, 4), rand((5,), np.int32, 0, 6)
    np.testing.assert_array_equal(run("aten::pow.Tensor_Tensor_out", ia, ie, Out(np.int32, ia.shape)),
                                  ia ** ie)
    np.testing.assert_allclose(run("aten::pow.Scalar_out", 2.0, e, Out(np.float64, e.shape)),
                               2.0 ** e, rtol=1e-14)
    np.testing.assert_array_equal(run("aten::pow.Scalar_out", 2, ie, Out(np.int32, ie.shape)),
                                  2 ** ie)
    np.testing.assert_allclose(run("aten::pow.Scalar_out", 2.0, ie, Out(np.float32, ie.shape)),
                               np.float32(2.0) ** ie.astype(np.float32))


# ---- maximum / minimum / atan2 -----------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, np.float32, np.float16, np.bool_])
def test_maximum_minimum(dtype):
    a, b = rand((3, 4), dtype), rand((4,), dtype)
    np.testing.assert_array_equal(run("aten::maximum.out", a, b, Out(dtype, a.shape)),
                                  np.maximum(a, b))
    np.testing.assert_array_equal(run("aten::minimum.out", a, b, Out(dtype, a.shape)),
                                  np.minimum(a, b))


def test_maximum_minimum_nan_and_mixed():
    a = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    b = np.array([np.nan, 2.0, 1.0, np.nan], np.float32)
    for name, fn in (("aten::maximum.out", np.maximum), ("aten::minimum.out", np.minimum)):
        np.testing.assert_array_equal(run(name, a, b, Out(np.float32, (4,))), fn(a, b))
    i = np.array([1, 5, -3, 9], np.int32)
    np.testing.assert_array_equal(run("aten::maximum.out", i, a, Out(np.float32, (4,))),
                                  np.maximum(i.astype(np.float32), a))


def test_atan2():
    y, x = rand((3, 4), np.float32), rand((4,), np.float32)
    np.testing.assert_allclose(run("aten::atan2.out", y, x, Out(np.float32, y.shape)),
                               np.arctan2(y, x), rtol=1e-6)
    iy = rand((4,), np.int32)
    np.testing.assert_allclose(run("aten::atan2.out", iy, iy + 100, Out(np.float64, (4,))),
                               np.arctan2(np.float32(iy), np.float32(iy + 100)), rtol=1e-6)
    with pytest.raises(ValueError):
        run("aten::atan2.out", y, x, Out(np.int32, y.shape))


# ---- bitwise -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INTS + [np.bool_])
@pytest.mark.parametrize("op,fn", [("and", np.bitwise_and), ("or", np.bitwise_or),
                                   ("xor", np.bitwise_xor)])
def test_bitwise(dtype, op, fn):
    a, b = rand((3, 5), dtype, -100, 100), rand((5,), dtype, -100, 100)
    np.testing.assert_array_equal(
        run(f"aten::bitwise_{op}.Tensor_out", a, b, Out(dtype, a.shape)), fn(a, b))
    s = True if dtype == np.bool_ else 5
    np.testing.assert_array_equal(
        run(f"aten::bitwise_{op}.Scalar_out", a, s, Out(dtype, a.shape)), fn(a, dtype(s)))


def test_bitwise_promotion_and_errors():
    c, a = rand((4,), np.bool_), rand((4,), np.int64)
    np.testing.assert_array_equal(run("aten::bitwise_or.Tensor_out", c, a < 0, Out(np.bool_, (4,))),
                                  c | (a < 0))
    np.testing.assert_array_equal(run("aten::bitwise_or.Tensor_out", c, a, Out(np.int64, (4,))),
                                  c.astype(np.int64) | a)
    with pytest.raises(ValueError):
        run("aten::bitwise_and.Tensor_out", a.astype(np.float32), a, Out(np.float32, (4,)))
    with pytest.raises(ValueError):
        run("aten::bitwise_and.Scalar_out", a, 1.5, Out(np.float32, (4,)))

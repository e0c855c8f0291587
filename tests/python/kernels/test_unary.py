"""Elementwise unary math (unary.cpp) against NumPy: floating ops read any
real or bool dtype and write a floating one; neg/abs/rounding/sign keep the
dtype; bitwise_not, isnan/isinf and logit; dim orders, empty and 0-dim."""

import math

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(11)
CL = (0, 2, 3, 1)


def bf16(x):
    return from_bf16_bits(to_bf16_bits(np.asarray(x, dtype=np.float32)))


def run(name, *args, **kw):
    return call_kernel(name, *args, **kw)[0]


_erf = np.vectorize(math.erf, otypes=[np.float64])

# name -> (reference on float64, domain of test inputs)
FLOAT_OPS = {
    "exp": (np.exp, (-5, 5)),
    "expm1": (np.expm1, (-1e-3, 1e-3)),
    "log": (np.log, (0.01, 50)),
    "log1p": (np.log1p, (-0.5, 1e-3)),
    "log2": (np.log2, (0.01, 50)),
    "log10": (np.log10, (0.01, 50)),
    "sqrt": (np.sqrt, (0, 50)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 50)),
    "reciprocal": (lambda x: 1 / x, (0.5, 50)),
    "sin": (np.sin, (-6, 6)),
    "cos": (np.cos, (-6, 6)),
    "tan": (np.tan, (-1.2, 1.2)),
    "asin": (np.arcsin, (-0.99, 0.99)),
    "acos": (np.arccos, (-0.99, 0.99)),
    "atan": (np.arctan, (-20, 20)),
    "sinh": (np.sinh, (-4, 4)),
    "cosh": (np.cosh, (-4, 4)),
    "tanh": (np.tanh, (-4, 4)),
    "asinh": (np.arcsinh, (-20, 20)),
    "acosh": (np.arccosh, (1.01, 20)),
    "atanh": (np.arctanh, (-0.99, 0.99)),
    "erf": (_erf, (-3, 3)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-10, 10)),
}


def uniform(lo, hi, shape):
    return RNG.uniform(lo, hi, shape)


@pytest.mark.parametrize("op", sorted(FLOAT_OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_op(op, dtype):
    ref, (lo, hi) = FLOAT_OPS[op]
    x = uniform(lo, hi, (3, 41)).astype(dtype)
    r = run(f"aten::{op}.out", x, Out(dtype, x.shape))
    assert r.dtype == dtype
    rtol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(r, ref(x.astype(np.float64)), rtol=rtol, atol=rtol * 1e-3)


@pytest.mark.parametrize("op", ["sin", "exp", "tanh", "sigmoid", "rsqrt", "erf"])
def test_float_op_half_types(op):
    ref, (lo, hi) = FLOAT_OPS[op]
    x = uniform(max(lo, 0.1), hi, (2, 3, 4, 5)).astype(np.float32)
    h = x.astype(np.float16)
    r = run(f"aten::{op}.out", T(h, dim_order=CL), Out(np.float16, h.shape, dim_order=CL))
    np.testing.assert_allclose(r.astype(np.float64), ref(h.astype(np.float64)), rtol=1e-3,
                               atol=1e-4)
    b = bf16(x)
    r = run(f"aten::{op}.out", T(b, bf16=True), Out("bfloat16", b.shape))
    np.testing.assert_allclose(r, ref(b.astype(np.float64)), rtol=8e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_integer_and_bool_input_gives_float(dtype):
    x = RNG.integers(1, 9, (4, 6)).astype(dtype)
    r = run("aten::rsqrt.out", x, Out(np.float32, x.shape))
    np.testing.assert_allclose(r, 1 / np.sqrt(x.astype(np.float64)), rtol=1e-6)
    r = run("aten::sigmoid.out", x, Out(np.float64, x.shape))
    np.testing.assert_allclose(r, 1 / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6)
    with pytest.raises(ValueError):
        run("aten::exp.out", x, Out(np.int32, x.shape))


def test_float_op_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0], np.float32)
    with np.errstate(all="ignore"):
        for op, ref in [("sqrt", np.sqrt), ("log", np.log), ("exp", np.exp),
                        ("reciprocal", lambda v: 1 / v), ("tanh", np.tanh)]:
            r = run(f"aten::{op}.out", x, Out(np.float32, x.shape))
            np.testing.assert_allclose(r, ref(x.astype(np.float64)), rtol=1e-7)
        r = run("aten::sigmoid.out", x, Out(np.float32, x.shape))
        np.testing.assert_allclose(r, [0.5, 0.5, 1.0, 0.0, np.nan, 1 / (1 + np.e)], rtol=1e-7)


def test_empty_zero_dim_and_threads():
    r = run("aten::cos.out", np.zeros((0, 4), np.float32), Out(np.float32, (0, 4)))
    assert r.shape == (0, 4)
    r = run("aten::cos.out", np.array(0.5, np.float32), Out(np.float32, ()))
    assert r.shape == () and np.isclose(r, np.cos(0.5))
    x = uniform(-3, 3, (200, 333)).astype(np.float32)
    r = run("aten::tanh.out", x, Out(np.float32, x.shape), num_threads=4)
    np.testing.assert_allclose(r, np.tanh(x.astype(np.float64)), rtol=2e-6, atol=1e-7)
    r = run("aten::exp.out", x[:2], Out(np.float32, (5, 5), dynamic=True, capacity=(5, 5000)))
    assert r.shape == (2, 333)


# ---- same-dtype ops ---------------------------------------------------------------------


SAME_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.float16, np.float32,
               np.float64]


@pytest.mark.parametrize("dtype", SAME_DTYPES)
def test_neg_abs(dtype):
    if np.dtype(dtype).kind == "u":
        x = RNG.integers(0, 200, (3, 7)).astype(dtype)
    elif np.dtype(dtype).kind == "i":
        x = RNG.integers(-100, 100, (3, 7)).astype(dtype)
    else:
        x = (RNG.standard_normal((3, 7)) * 10).astype(dtype)
    np.testing.assert_array_equal(run("aten::neg.out", x, Out(dtype, x.shape)), -x)
    np.testing.assert_array_equal(run("aten::abs.out", x, Out(dtype, x.shape)), np.abs(x))
    with pytest.raises(ValueError, match="dtype"):
        run("aten::neg.out", x, Out(np.float64 if dtype != np.float64 else np.float32, x.shape))


def test_neg_abs_wrap_and_bf16():
    m = np.iinfo(np.int64).min
    x = np.array([m, -1, 5], np.int64)
    np.testing.assert_array_equal(run("aten::neg.out", x, Out(np.int64, (3,))), [m, 1, -5])
    np.testing.assert_array_equal(run("aten::abs.out", x, Out(np.int64, (3,))), [m, 1, 5])
    b = bf16(RNG.standard_normal(9))
    np.testing.assert_array_equal(run("aten::neg.out", T(b, bf16=True), Out("bfloat16", (9,))), -b)
    with pytest.raises(ValueError):
        run("aten::neg.out", x > 0, Out(np.bool_, (3,)))


@pytest.mark.parametrize("op,fn", [("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc),
                                   ("round", np.round)])
def test_rounding_ops(op, fn):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4, -2.6, 0.49999997, np.inf, np.nan,
                  -0.0], np.float32)
    r = run(f"aten::{op}.out", x, Out(np.float32, x.shape))
    np.testing.assert_array_equal(r, fn(x))  # np.round is half to even
    np.testing.assert_array_equal(np.signbit(r), np.signbit(fn(x)))
    h = x.astype(np.float16)
    np.testing.assert_array_equal(run(f"aten::{op}.out", h, Out(np.float16, x.shape)), fn(h))
    i = RNG.integers(-100, 100, (2, 5)).astype(np.int32)
    np.testing.assert_array_equal(run(f"aten::{op}.out", i, Out(np.int32, i.shape)), i)


def test_sign():
    x = np.array([-3.5, 0.0, -0.0, 2.0, np.nan, -np.inf], np.float32)
    np.testing.assert_array_equal(run("aten::sign.out", x, Out(np.float32, x.shape)), np.sign(x))
    i = np.array([-7, 0, 9], np.int16)
    np.testing.assert_array_equal(run("aten::sign.out", i, Out(np.int16, (3,))), [-1, 0, 1])
    u = np.array([0, 3], np.uint8)
    np.testing.assert_array_equal(run("aten::sign.out", u, Out(np.uint8, (2,))), [0, 1])
    b = np.array([True, False])
    np.testing.assert_array_equal(run("aten::sign.out", b, Out(np.bool_, (2,))), b)


def test_bitwise_not():
    for dtype in (np.int8, np.uint8, np.int32, np.int64):
        x = RNG.integers(0, 100, (3, 4)).astype(dtype)
        np.testing.assert_array_equal(run("aten::bitwise_not.out", x, Out(dtype, x.shape)), ~x)
    b = np.array([True, False, True])
    np.testing.assert_array_equal(run("aten::bitwise_not.out", b, Out(np.bool_, (3,))), ~b)
    with pytest.raises(ValueError):
        run("aten::bitwise_not.out", np.ones(3, np.float32), Out(np.float32, (3,)))
    # uint16 is integral but not computed: the same error on every backend.
    with pytest.raises(ValueError, match="dtype uint16 is not supported"):
        run("aten::bitwise_not.out", np.ones(3, np.uint16), Out(np.uint16, (3,)))


def test_isnan_isinf():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    np.testing.assert_array_equal(run("aten::isnan.out", x, Out(np.bool_, x.shape)), np.isnan(x))
    np.testing.assert_array_equal(run("aten::isinf.out", x, Out(np.bool_, x.shape)), np.isinf(x))
    h = x.astype(np.float16)
    np.testing.assert_array_equal(run("aten::isinf.out", T(h, dim_order=None),
                                      Out(np.bool_, x.shape)), np.isinf(x))
    i = np.arange(4, dtype=np.int32)
    assert not run("aten::isnan.out", i, Out(np.bool_, (4,))).any()
    with pytest.raises(ValueError):
        run("aten::isnan.out", x, Out(np.float32, x.shape))


def test_logit():
    x = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 0.3], np.float32)
    with np.errstate(divide="ignore"):
        ref = np.log(x / (1 - x))
        r = run("aten::logit.out", x, None, Out(np.float32, x.shape))
    np.testing.assert_allclose(r, ref, rtol=1e-6)
    xc = np.clip(x, 0.2, 0.8)
    r = run("aten::logit.out", x, 0.2, Out(np.float64, x.shape))
    np.testing.assert_allclose(r, np.log(xc / (1 - xc)), rtol=1e-6)
    with pytest.raises(ValueError):
        run("aten::logit.out", x, None, Out(np.int32, x.shape))

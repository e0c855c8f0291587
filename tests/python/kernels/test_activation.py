"""Activations (activation.cpp) against NumPy: relu/hardtanh/clamp for
every real dtype with NaN propagation, gelu (erf and tanh forms), the
floating activations, glu along any dim and dim order, errors."""

import math

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(3)
CL = (0, 2, 3, 1)
_erf = np.vectorize(math.erf, otypes=[np.float64])


def bf16(x):
    return from_bf16_bits(to_bf16_bits(np.asarray(x, dtype=np.float32)))


def run(name, *args, **kw):
    return call_kernel(name, *args, **kw)[0]


def values(shape, dtype):
    if np.dtype(dtype).kind in "iu":
        lo = 0 if np.dtype(dtype).kind == "u" else -20
        return RNG.integers(lo, 20, shape).astype(dtype)
    return (RNG.standard_normal(shape) * 4).astype(dtype)


REAL = [np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32, np.float64]


@pytest.mark.parametrize("dtype", REAL)
def test_relu(dtype):
    x = values((3, 17), dtype)
    np.testing.assert_array_equal(run("aten::relu.out", x, Out(dtype, x.shape)),
                                  np.maximum(x, 0))


def test_relu_nan_bf16_channels_last_and_errors():
    x = np.array([np.nan, -1.0, 2.0, -0.0], np.float32)
    np.testing.assert_array_equal(run("aten::relu.out", x, Out(np.float32, (4,))),
                                  [np.nan, 0.0, 2.0, 0.0])
    b = bf16(values((2, 3, 4, 5), np.float32))
    r = run("aten::relu.out", T(b, bf16=True, dim_order=CL), Out("bfloat16", b.shape))
    np.testing.assert_array_equal(r, np.maximum(b, 0))
    with pytest.raises(ValueError):
        run("aten::relu.out", x, Out(np.float64, (4,)))
    with pytest.raises(ValueError):
        run("aten::relu.out", x > 0, Out(np.bool_, (4,)))


@pytest.mark.parametrize("dtype", REAL)
def test_hardtanh_relu6(dtype):
    x = values((4, 9), dtype)
    r = run("aten::hardtanh.out", x, 0, 6, Out(dtype, x.shape))
    np.testing.assert_array_equal(r, np.clip(x, 0, 6))


def test_hardtanh_defaults_nan_and_range():
    x = np.array([-3.0, -0.5, 0.25, 7.0, np.nan], np.float32)
    r = run("aten::hardtanh.out", x, -1, 1, Out(np.float32, x.shape))
    np.testing.assert_array_equal(r, [-1.0, -0.5, 0.25, 1.0, np.nan])
    r = run("aten::hardtanh.out", x, -0.5, 0.5, Out(np.float32, x.shape))
    np.testing.assert_array_equal(r, [-0.5, -0.5, 0.25, 0.5, np.nan])
    with pytest.raises(ValueError, match="out of range"):
        run("aten::hardtanh.out", np.ones(3, np.uint8), -1, 1, Out(np.uint8, (3,)))


# ---- clamp --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL)
def test_clamp_scalar(dtype):
    x = values((5, 6), dtype)
    np.testing.assert_array_equal(run("aten::clamp.out", x, 2, 9, Out(dtype, x.shape)),
                                  np.clip(x, 2, 9))
    np.testing.assert_array_equal(run("aten::clamp.out", x, None, 3, Out(dtype, x.shape)),
                                  np.minimum(x, dtype(3)))
    np.testing.assert_array_equal(run("aten::clamp.out", x, 4, None, Out(dtype, x.shape)),
                                  np.maximum(x, dtype(4)))


def test_clamp_scalar_promotion_and_errors():
    i = np.array([-5, 0, 5], np.int32)
    np.testing.assert_array_equal(run("aten::clamp.out", i, -1.5, 2.5, Out(np.float32, (3,))),
                                  [-1.5, 0.0, 2.5])
    with pytest.raises(ValueError, match="out must be float32"):
        run("aten::clamp.out", i, -1.5, None, Out(np.int32, (3,)))
    with pytest.raises(ValueError, match="None"):
        run("aten::clamp.out", i, None, None, Out(np.int32, (3,)))
    with pytest.raises(ValueError, match="out of range"):
        run("aten::clamp.out", np.ones(3, np.int8), -1000, None, Out(np.int8, (3,)))
    x = np.array([np.nan, 1.0, 5.0], np.float32)
    np.testing.assert_array_equal(run("aten::clamp.out", x, 2.0, 3.0, Out(np.float32, (3,))),
                                  [np.nan, 2.0, 3.0])
    b = np.array([True, False])
    np.testing.assert_array_equal(run("aten::clamp.out", b, True, None, Out(np.bool_, (2,))),
                                  [True, True])
    h = values((6,), np.float16)
    np.testing.assert_array_equal(run("aten::clamp.out", h, -0.1, 0.1, Out(np.float16, (6,))),
                                  np.clip(h.astype(np.float32), np.float32(-0.1),
                                          np.float32(0.1)).astype(np.float16))


def test_clamp_tensor():
    x = values((3, 4, 5), np.float32)
    lo, hi = values((4, 1), np.float32) - 3, values((5,), np.float32) + 3
    r = run("aten::clamp.Tensor_out", x, lo, hi, Out(np.float32, x.shape))
    np.testing.assert_array_equal(r, np.minimum(np.maximum(x, lo), hi))
    r = run("aten::clamp.Tensor_out", x, None, hi, Out(np.float32, x.shape))
    np.testing.assert_array_equal(r, np.minimum(x, hi))
    r = run("aten::clamp.Tensor_out", x, lo, None, Out(np.float64, x.shape))
    np.testing.assert_array_equal(r, np.maximum(x, lo))
    i = values((6,), np.int32)
    r = run("aten::clamp.Tensor_out", i, np.array(-2.5, np.float32), None, Out(np.float32, (6,)))
    np.testing.assert_array_equal(r, np.maximum(i.astype(np.float32), -2.5))
    nan = np.array([np.nan, 1.0, 1.0], np.float32)
    r = run("aten::clamp.Tensor_out", np.array([0.0, np.nan, 0.0], np.float32), nan, None,
            Out(np.float32, (3,)))
    np.testing.assert_array_equal(r, [np.nan, np.nan, 1.0])
    with pytest.raises(ValueError):
        run("aten::clamp.Tensor_out", x, None, None, Out(np.float32, x.shape))
    with pytest.raises(ValueError):
        run("aten::clamp.Tensor_out", x, lo, None, Out(np.int32, x.shape))


# ---- floating activations -----------------------------------------------------------------


def gelu_ref(x, approximate):
    x = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu(approximate, dtype):
    x = values((4, 33), dtype)
    r = run("aten::gelu.out", x, approximate, Out(dtype, x.shape))
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(r, gelu_ref(x, approximate), rtol=tol, atol=tol)


def test_gelu_half_types_inf_and_errors():
    x = np.array([-np.inf, -2.0, 0.0, 1.5, np.inf], np.float32)
    for approximate in ("none", "tanh"):
        r = run("aten::gelu.out", x, approximate, Out(np.float32, x.shape))
        np.testing.assert_allclose(r[1:4], gelu_ref(x[1:4], approximate), rtol=2e-6, atol=1e-7)
        assert r[0] == 0 and r[4] == np.inf
    b = bf16(values((2, 3, 4, 5), np.float32))
    r = run("aten::gelu.out", T(b, bf16=True, dim_order=CL), "none",
            Out("bfloat16", b.shape, dim_order=CL))
    np.testing.assert_allclose(r, gelu_ref(b, "none"), rtol=8e-3, atol=1e-2)
    with pytest.raises(ValueError, match="approximate"):
        run("aten::gelu.out", x, "sigmoid", Out(np.float32, x.shape))
    with pytest.raises(ValueError):
        run("aten::gelu.out", np.ones(5, np.int32), "none", Out(np.int32, x.shape))


FLOAT_ACTS = {
    "silu": lambda x: x / (1 + np.exp(-x)),
    "hardsigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
}


@pytest.mark.parametrize("op", sorted(FLOAT_ACTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_activations(op, dtype):
    x = values((3, 25), dtype)
    r = run(f"aten::{op}.out", x, Out(dtype, x.shape))
    tol = {np.float32: 2e-6, np.float64: 1e-13, np.float16: 2e-3}[dtype]
    np.testing.assert_allclose(r, FLOAT_ACTS[op](x.astype(np.float64)), rtol=tol, atol=tol)


def test_leaky_relu_elu_softplus():
    x = values((5, 8), np.float32)
    x64 = x.astype(np.float64)
    r = run("aten::leaky_relu.out", x, 0.1, Out(np.float32, x.shape))
    np.testing.assert_allclose(r, np.where(x >= 0, x64, x64 * 0.1), rtol=1e-6)
    r = run("aten::elu.out", x, 1.5, 2.0, 0.5, Out(np.float32, x.shape))
    np.testing.assert_allclose(r, np.where(x > 0, 2 * x64, 3.0 * np.expm1(0.5 * x64)), rtol=2e-6)
    r = run("aten::softplus.out", x, 2, 3, Out(np.float32, x.shape))
    ref = np.where(2 * x64 > 3, x64, np.log1p(np.exp(2 * x64)) / 2)
    np.testing.assert_allclose(r, ref, rtol=2e-6)
    with pytest.raises(ValueError):
        run("aten::leaky_relu.out", x.astype(np.int32), 0.1, Out(np.int32, x.shape))
    with pytest.raises(ValueError):
        run("aten::elu.out", x, 1, 1, 1, Out(np.float64, x.shape))


# ---- glu ---------------------------------------------------------------------------------


def glu_ref(x, dim):
    a, b = np.split(x.astype(np.float64), 2, axis=dim)
    return a / (1 + np.exp(-b))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_glu_every_dim(dim):
    x = values((4, 6, 8), np.float32)
    shape = list(x.shape)
    shape[dim] //= 2
    r = run("aten::glu.out", x, dim, Out(np.float32, shape))
    np.testing.assert_allclose(r, glu_ref(x, dim), rtol=2e-6, atol=1e-7)


def test_glu_dim_orders_types_and_errors():
    x = values((2, 4, 3, 6), np.float32)
    r = run("aten::glu.out", T(x, dim_order=CL), 1, Out(np.float32, (2, 2, 3, 6), dim_order=CL))
    np.testing.assert_allclose(r, glu_ref(x, 1), rtol=2e-6, atol=1e-7)
    r = run("aten::glu.out", T(x, dim_order=CL), -1, Out(np.float64, (2, 4, 3, 3)))
    np.testing.assert_allclose(r, glu_ref(x, -1), rtol=2e-6, atol=1e-7)
    b = bf16(x)
    r = run("aten::glu.out", T(b, bf16=True), 3, Out("bfloat16", (2, 4, 3, 3)), num_threads=2)
    np.testing.assert_allclose(r, glu_ref(b, 3), rtol=8e-3, atol=1e-2)
    big = values((64, 1024), np.float32)
    r = run("aten::glu.out", big, 1, Out(np.float32, (64, 512)), num_threads=4)
    np.testing.assert_allclose(r, glu_ref(big, 1), rtol=2e-6, atol=1e-7)
    assert run("aten::glu.out", np.zeros((0, 4), np.float32), 1,
               Out(np.float32, (0, 2))).shape == (0, 2)
    with pytest.raises(ValueError, match="odd"):
        run("aten::glu.out", values((3, 5), np.float32), 1, Out(np.float32, (3, 2)))
    with pytest.raises(IndexError):
        run("aten::glu.out", x, 4, Out(np.float32, x.shape))
    with pytest.raises(ValueError):
        run("aten::glu.out", x.astype(np.int32), 1, Out(np.float32, (2, 2, 3, 6)))

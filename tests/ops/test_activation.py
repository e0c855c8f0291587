"""Activations against NumPy: relu / hardtanh / clamp for every real dtype
(NaN propagates, scalar bounds promote and must fit), clamp with tensor
bounds, gelu (erf and tanh forms), leaky_relu, elu, softplus, silu,
hardsigmoid, hardswish (float32 / float64 NumPy references; f16 and bf16
computed in float), glu along any dim and dim order, special values and
argument errors."""

import math

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, cast, check, check_error, compute_type, dtype_of,
                     is_int, normal, promote, promote_scalar, rand, reference, tensor, value)

INTS = [np.uint8, np.int8, np.int16, np.int32, np.int64]
FLOATS = [np.float32, np.float16, BF16, np.float64]
REAL = [np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32, np.float64]
_erf = np.vectorize(math.erf, otypes=[np.float64])

# Float functions computed in float (f16/bf16/f32) or double, against
# float64 NumPy: a few ulp of the compute type, then the out's rounding.
FLOAT_TOL = {"float32": (2e-6, 2e-6), "float64": (1e-13, 1e-13), "float16": (2e-3, 2e-3),
             BF16: (8e-3, 1e-2)}


def values(shape, dtype, low=-3.0, high=3.0):
    return rand(shape, np.float32 if dtype == BF16 else dtype, low, high)


def spread(shape, dtype):
    """Integers in [-20, 20) (unsigned from 0), floats normal * 4."""
    if np.dtype(dtype).kind in "iu":
        lo = 0 if np.dtype(dtype).kind == "u" else -20
        return rand(shape, dtype, lo, 20)
    return normal(shape, dtype, 4)


# ---- NumPy models ------------------------------------------------------------------------------


def _clamp(x, lo, hi):
    """max then min with compares and selects: NaN inputs stay NaN."""
    v = np.where(x < lo, lo, x)
    return np.where(v > hi, hi, v).astype(x.dtype)


@reference("aten::relu.out")
def relu_model(a, out):
    x = cast(value(a), compute_type(dtype_of(a)))
    return cast(np.where(x < 0, x.dtype.type(0), x), dtype_of(out))


def _scalar(s, c):
    return np.array(s).astype(c)[()]


@reference("aten::hardtanh.out")
def hardtanh_model(a, lo, hi, out):
    c = compute_type(dtype_of(a))
    x = cast(value(a), c)
    low, high = _scalar(lo, c), _scalar(hi, c)
    if np.isnan(low) or np.isnan(high):
        return cast(np.full(x.shape, np.nan), dtype_of(out))
    return cast(_clamp(x, low, high), dtype_of(out))


@reference("aten::clamp.out")
def clamp_model(a, lo, hi, out):
    common = dtype_of(a)
    for s in (lo, hi):
        if s is not None:
            common = promote_scalar(common, s)
    c = compute_type(common)
    x = cast(value(a), c)
    big = np.inf if c.kind == "f" else (True if c == np.bool_ else np.iinfo(c).max)
    small = -np.inf if c.kind == "f" else (False if c == np.bool_ else np.iinfo(c).min)
    low = _scalar(lo, c) if lo is not None else c.type(small)
    high = _scalar(hi, c) if hi is not None else c.type(big)
    if c.kind == "f" and (np.isnan(low) or np.isnan(high)):
        return cast(np.full(x.shape, np.nan), dtype_of(out))
    return cast(_clamp(x, low, high), dtype_of(out))


@reference("aten::clamp.Tensor_out")
def clamp_tensor_model(a, lo, hi, out):
    common = dtype_of(a)
    for t in (lo, hi):
        if t is not None:
            common = promote(common, dtype_of(t))
    c = compute_type(common)
    r = cast(value(a), c)
    if lo is not None:
        r = np.maximum(r, cast(value(lo), c))
    if hi is not None:
        r = np.minimum(r, cast(value(hi), c))
    return cast(r, dtype_of(out))


def float_model(fn):
    """fn on float64 values, rounded to the compute type, stored in out."""

    def model(a, *rest):
        *params, out = rest
        c = np.float64 if dtype_of(a) == np.float64 else np.float32
        with np.errstate(all="ignore"):
            r = np.asarray(fn(value(a).astype(np.float64), *params)).astype(c)
        return cast(r, dtype_of(out))

    return model


def gelu_ref(x, approximate):
    x = x.astype(np.float64)
    if approximate == "tanh":
        y = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    else:
        y = 0.5 * x * (1 + _erf(x / math.sqrt(2)))
    return np.where(np.isinf(x), np.where(x > 0, x, 0.0), y)


reference("aten::gelu.out")(float_model(gelu_ref))
reference("aten::silu.out")(float_model(lambda x: x / (1 + np.exp(-x))))


@reference("aten::leaky_relu.out")
def leaky_relu_model(a, slope, out):
    c = compute_type(dtype_of(a))
    x = cast(value(a), c)
    return cast(np.where(x >= 0, x, x * _scalar(slope, c)), dtype_of(out))


@reference("aten::elu.out")
def elu_model(a, alpha, scale, input_scale, out):
    c = compute_type(dtype_of(a))
    x = cast(value(a), c)
    neg = np.expm1((x * c.type(input_scale)).astype(np.float64)) * c.type(alpha * scale)
    r = np.where(x > 0, x * c.type(scale), neg.astype(c))
    return cast(r, dtype_of(out))


@reference("aten::softplus.out")
def softplus_model(a, beta, threshold, out):
    c = compute_type(dtype_of(a))
    x = cast(value(a), c)
    xb = (x * c.type(beta)).astype(c)
    with np.errstate(over="ignore"):
        soft = (np.log1p(np.exp(xb.astype(np.float64))) / c.type(beta)).astype(c)
    return cast(np.where(xb > c.type(threshold), x, soft), dtype_of(out))


@reference("aten::hardsigmoid.out")
def hardsigmoid_model(a, out):
    c = compute_type(dtype_of(a))
    x = cast(value(a), c)
    return cast(_clamp(x + c.type(3), c.type(0), c.type(6)) / c.type(6), dtype_of(out))


@reference("aten::hardswish.out")
def hardswish_model(a, out):
    c = compute_type(dtype_of(a))
    x = cast(value(a), c)
    with np.errstate(invalid="ignore"):
        r = x * (_clamp(x + c.type(3), c.type(0), c.type(6)) / c.type(6))
    return cast(r, dtype_of(out))


def glu_ref(x, dim):
    a, b = np.split(x.astype(np.float64), 2, axis=dim)
    return a / (1 + np.exp(-b))


@reference("aten::glu.out")
def glu_model(a, dim, out):
    c = np.float64 if dtype_of(a) == np.float64 else np.float32
    with np.errstate(over="ignore"):
        return cast(glu_ref(value(a), dim).astype(c), dtype_of(out))


# ---- relu / hardtanh ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL)
def test_relu(device, dtype):
    x = spread((3, 17), dtype)
    check(device, "aten::relu.out", x, Out(dtype, x.shape), expect=np.maximum(x, 0))


def test_relu_nan_bf16_channels_last_and_errors(device):
    x = np.array([np.nan, -1.0, 2.0, -0.0], np.float32)
    check(device, "aten::relu.out", x, Out(np.float32, (4,)), expect=[np.nan, 0.0, 2.0, 0.0])
    b = bf16(spread((2, 3, 4, 5), np.float32))
    check(device, "aten::relu.out", T(b, bf16=True, dim_order=CL), Out(BF16, b.shape),
          expect=np.maximum(b, 0))
    check_error(device, "aten::relu.out", x, Out(np.float64, (4,)), exc=ValueError)
    check_error(device, "aten::relu.out", x > 0, Out(np.bool_, (4,)), exc=ValueError)


@pytest.mark.parametrize("dtype", REAL)
def test_hardtanh_relu6(device, dtype):
    x = spread((4, 9), dtype)
    check(device, "aten::hardtanh.out", x, 0, 6, Out(dtype, x.shape), expect=np.clip(x, 0, 6))


def test_hardtanh_defaults_nan_and_range(device):
    x = np.array([-3.0, -0.5, 0.25, 7.0, np.nan], np.float32)
    check(device, "aten::hardtanh.out", x, -1, 1, Out(np.float32, x.shape),
          expect=[-1.0, -0.5, 0.25, 1.0, np.nan])
    check(device, "aten::hardtanh.out", x, -0.5, 0.5, Out(np.float32, x.shape),
          expect=[-0.5, -0.5, 0.25, 0.5, np.nan])
    check_error(device, "aten::hardtanh.out", np.ones(3, np.uint8), -1, 1, Out(np.uint8, (3,)),
                exc=ValueError, match="out of range")


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_relu_hardtanh(device, dtype):
    x = values((2, 3, 4, 5), dtype, -50, 50)
    check(device, "aten::relu.out", tensor(x, dtype), Out(dtype, x.shape))
    check(device, "aten::relu.out", tensor(x, dtype, CL), Out(dtype, x.shape))
    signed = dtype == BF16 or np.dtype(dtype).kind != "u"
    check(device, "aten::hardtanh.out", tensor(x, dtype), -1 if signed else 2, 6,
          Out(dtype, x.shape))
    check(device, "aten::hardtanh.out", tensor(x, dtype, CL), 0, 6,
          Out(dtype, x.shape, dim_order=CL))


# ---- clamp --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL)
def test_clamp_scalar(device, dtype):
    x = spread((5, 6), dtype)
    check(device, "aten::clamp.out", x, 2, 9, Out(dtype, x.shape), expect=np.clip(x, 2, 9))
    check(device, "aten::clamp.out", x, None, 3, Out(dtype, x.shape),
          expect=np.minimum(x, dtype(3)))
    check(device, "aten::clamp.out", x, 4, None, Out(dtype, x.shape),
          expect=np.maximum(x, dtype(4)))


def test_clamp_scalar_promotion_and_errors(device):
    i = np.array([-5, 0, 5], np.int32)
    check(device, "aten::clamp.out", i, -1.5, 2.5, Out(np.float32, (3,)), expect=[-1.5, 0.0, 2.5])
    check_error(device, "aten::clamp.out", i, -1.5, None, Out(np.int32, (3,)), exc=ValueError,
                match="out must be float32")
    check_error(device, "aten::clamp.out", i, None, None, Out(np.int32, (3,)), exc=ValueError,
                match="None")
    check_error(device, "aten::clamp.out", np.ones(3, np.int8), -1000, None, Out(np.int8, (3,)),
                exc=ValueError, match="out of range")
    x = np.array([np.nan, 1.0, 5.0], np.float32)
    check(device, "aten::clamp.out", x, 2.0, 3.0, Out(np.float32, (3,)), expect=[np.nan, 2.0, 3.0])
    b = np.array([True, False])
    check(device, "aten::clamp.out", b, True, None, Out(np.bool_, (2,)), expect=[True, True])
    h = spread((6,), np.float16)
    check(device, "aten::clamp.out", h, -0.1, 0.1, Out(np.float16, (6,)),
          expect=np.clip(h.astype(np.float32), np.float32(-0.1),
                         np.float32(0.1)).astype(np.float16))


@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_])
def test_clamp(device, dtype):
    x = values((4, 7), dtype, -50, 50)
    if dtype == np.bool_:
        check(device, "aten::clamp.out", x, False, True, Out(np.bool_, x.shape))
        return
    check(device, "aten::clamp.out", tensor(x, dtype), 1, 20, Out(dtype, x.shape))
    check(device, "aten::clamp.out", tensor(x, dtype), None, 5, Out(dtype, x.shape))
    check(device, "aten::clamp.out", tensor(x, dtype), 2, None, Out(dtype, x.shape))
    if is_int(dtype):
        check(device, "aten::clamp.out", tensor(x, dtype), 0.5, None, Out(np.float32, x.shape))
    lo, hi = values((7,), dtype, -20, 0), values((4, 1), dtype, 0, 20)
    check(device, "aten::clamp.Tensor_out", tensor(x, dtype), tensor(lo, dtype), tensor(hi, dtype),
          Out(dtype, x.shape))
    check(device, "aten::clamp.Tensor_out", tensor(x, dtype), tensor(lo, dtype), None,
          Out(dtype, x.shape))
    check(device, "aten::clamp.Tensor_out", tensor(x, dtype), None, tensor(hi, dtype),
          Out(dtype, x.shape))


def test_clamp_nan(device):
    x = np.array([np.nan, 1.0, -5.0, 9.0], dtype=np.float32)
    check(device, "aten::clamp.out", x, -1.0, 2.0, Out(np.float32, (4,)))
    check(device, "aten::clamp.out", x, float("nan"), 2.0, Out(np.float32, (4,)),
          expect=np.full(4, np.nan))
    check(device, "aten::clamp.Tensor_out", x, np.array([0, np.nan, 0, 0], np.float32), None,
          Out(np.float32, (4,)), expect=[np.nan, np.nan, 0, 9])
    check_error(device, "aten::clamp.out", x, None, None, Out(np.float32, (4,)), exc=ValueError,
                match="None")
    check_error(device, "aten::clamp.out", rand((3,), np.int8, -5, 5), 300, None,
                Out(np.int8, (3,)), exc=ValueError, match="range")


def test_clamp_tensor(device):
    x = spread((3, 4, 5), np.float32)
    lo, hi = spread((4, 1), np.float32) - 3, spread((5,), np.float32) + 3
    check(device, "aten::clamp.Tensor_out", x, lo, hi, Out(np.float32, x.shape),
          expect=np.minimum(np.maximum(x, lo), hi))
    check(device, "aten::clamp.Tensor_out", x, None, hi, Out(np.float32, x.shape),
          expect=np.minimum(x, hi))
    check(device, "aten::clamp.Tensor_out", x, lo, None, Out(np.float64, x.shape),
          expect=np.maximum(x, lo))
    i = spread((6,), np.int32)
    check(device, "aten::clamp.Tensor_out", i, np.array(-2.5, np.float32), None,
          Out(np.float32, (6,)), expect=np.maximum(i.astype(np.float32), -2.5))
    nan = np.array([np.nan, 1.0, 1.0], np.float32)
    check(device, "aten::clamp.Tensor_out", np.array([0.0, np.nan, 0.0], np.float32), nan, None,
          Out(np.float32, (3,)), expect=[np.nan, np.nan, 1.0])
    check_error(device, "aten::clamp.Tensor_out", x, None, None, Out(np.float32, x.shape),
                exc=ValueError)
    check_error(device, "aten::clamp.Tensor_out", x, lo, None, Out(np.int32, x.shape),
                exc=ValueError)


# ---- floating activations -----------------------------------------------------------------------


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu(device, approximate, dtype):
    x = spread((4, 33), dtype)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    check(device, "aten::gelu.out", x, approximate, Out(dtype, x.shape),
          expect=gelu_ref(x, approximate), tol=(tol, tol))


def test_gelu_half_types_inf_and_errors(device):
    x = np.array([-np.inf, -2.0, 0.0, 1.5, np.inf], np.float32)
    for approximate in ("none", "tanh"):
        expected = np.concatenate([[0.0], gelu_ref(x[1:4], approximate), [np.inf]])
        check(device, "aten::gelu.out", x, approximate, Out(np.float32, x.shape), expect=expected,
              tol=(2e-6, 1e-7))
    b = bf16(spread((2, 3, 4, 5), np.float32))
    check(device, "aten::gelu.out", T(b, bf16=True, dim_order=CL), "none",
          Out(BF16, b.shape, dim_order=CL), expect=gelu_ref(b, "none"), tol=(8e-3, 1e-2))
    check_error(device, "aten::gelu.out", x, "sigmoid", Out(np.float32, x.shape), exc=ValueError,
                match="approximate")
    check_error(device, "aten::gelu.out", np.ones(5, np.int32), "none", Out(np.int32, x.shape),
                exc=ValueError)


FLOAT_ACTS_REF = {
    "silu": lambda x: x / (1 + np.exp(-x)),
    "hardsigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
}


@pytest.mark.parametrize("op", sorted(FLOAT_ACTS_REF))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_activations_against_float64(device, op, dtype):
    x = spread((3, 25), dtype)
    tol = {np.float32: 2e-6, np.float64: 1e-13, np.float16: 2e-3}[dtype]
    check(device, f"aten::{op}.out", x, Out(dtype, x.shape),
          expect=FLOAT_ACTS_REF[op](x.astype(np.float64)), tol=(tol, tol))


def test_leaky_relu_elu_softplus(device):
    x = spread((5, 8), np.float32)
    x64 = x.astype(np.float64)
    check(device, "aten::leaky_relu.out", x, 0.1, Out(np.float32, x.shape),
          expect=np.where(x >= 0, x64, x64 * 0.1), tol=(1e-6, 0))
    check(device, "aten::elu.out", x, 1.5, 2.0, 0.5, Out(np.float32, x.shape),
          expect=np.where(x > 0, 2 * x64, 3.0 * np.expm1(0.5 * x64)), tol=(2e-6, 0))
    check(device, "aten::softplus.out", x, 2, 3, Out(np.float32, x.shape),
          expect=np.where(2 * x64 > 3, x64, np.log1p(np.exp(2 * x64)) / 2), tol=(2e-6, 0))
    check_error(device, "aten::leaky_relu.out", x.astype(np.int32), 0.1, Out(np.int32, x.shape),
                exc=ValueError)
    check_error(device, "aten::elu.out", x, 1, 1, 1, Out(np.float64, x.shape), exc=ValueError)


# Arithmetic and selects only: the NumPy model in the compute type is exact.
EXACT_ACTS = {"aten::leaky_relu.out", "aten::hardsigmoid.out", "aten::hardswish.out"}


def act_tol(name):
    return None if name in EXACT_ACTS else FLOAT_TOL


FLOAT_ACTS = [("aten::gelu.out", ["none"]), ("aten::gelu.out", ["tanh"]),
              ("aten::leaky_relu.out", [0.01]), ("aten::leaky_relu.out", [0.2]),
              ("aten::elu.out", [1.0, 1.0, 1.0]), ("aten::elu.out", [0.5, 2.0, 1.5]),
              ("aten::softplus.out", [1, 20]), ("aten::softplus.out", [2.0, 1.0]),
              ("aten::silu.out", []), ("aten::hardsigmoid.out", []), ("aten::hardswish.out", [])]


@pytest.mark.parametrize("name,params", FLOAT_ACTS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("order", [None, CL])
def test_float_activations(device, name, params, dtype, order):
    x = values((2, 3, 4, 5), dtype, -6, 6)
    check(device, name, tensor(x, dtype, order), *params, Out(dtype, x.shape), tol=act_tol(name))


def test_float_activation_special_values_and_errors(device):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 30.0, -30.0], dtype=np.float32)
    for name, params in FLOAT_ACTS:
        check(device, name, x, *params, Out(np.float32, x.shape), tol=act_tol(name))
    check_error(device, "aten::gelu.out", x, "fast", Out(np.float32, x.shape), exc=ValueError,
                match="approximate")
    check_error(device, "aten::silu.out", rand((3,), np.int32), Out(np.int32, (3,)),
                exc=ValueError)
    check_error(device, "aten::relu.out", rand((3,)), Out(np.float16, (3,)), exc=ValueError,
                match="dtype")


# ---- glu ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_glu_every_dim(device, dim):
    x = spread((4, 6, 8), np.float32)
    shape = list(x.shape)
    shape[dim] //= 2
    check(device, "aten::glu.out", x, dim, Out(np.float32, shape), expect=glu_ref(x, dim),
          tol=(2e-6, 1e-7))


@pytest.mark.parametrize("dim", [-1, 0, 1, 2])
@pytest.mark.parametrize("dtype", FLOATS)
def test_glu(device, dim, dtype):
    x = values((4, 6, 8), dtype)
    shape = list(x.shape)
    shape[dim] //= 2
    check(device, "aten::glu.out", tensor(x, dtype), dim, Out(dtype, shape), tol=FLOAT_TOL)
    y = values((2, 4, 6, 8), dtype)
    shape = list(y.shape)
    shape[dim] //= 2
    check(device, "aten::glu.out", tensor(y, dtype, CL), dim, Out(dtype, shape, dim_order=CL),
          tol=FLOAT_TOL)
    check(device, "aten::glu.out", tensor(y, dtype, CL), dim, Out(dtype, shape), tol=FLOAT_TOL)


def test_glu_dim_orders_types_and_errors(device):
    x = spread((2, 4, 3, 6), np.float32)
    check(device, "aten::glu.out", T(x, dim_order=CL), 1,
          Out(np.float32, (2, 2, 3, 6), dim_order=CL), expect=glu_ref(x, 1), tol=(2e-6, 1e-7))
    check(device, "aten::glu.out", T(x, dim_order=CL), -1, Out(np.float64, (2, 4, 3, 3)),
          expect=glu_ref(x, -1), tol=(2e-6, 1e-7))
    b = bf16(x)
    check(device, "aten::glu.out", T(b, bf16=True), 3, Out(BF16, (2, 4, 3, 3)),
          expect=glu_ref(b, 3), tol=(8e-3, 1e-2), num_threads=2)
    big = spread((64, 1024), np.float32)
    check(device, "aten::glu.out", big, 1, Out(np.float32, (64, 512)), expect=glu_ref(big, 1),
          tol=(2e-6, 1e-7), num_threads=4)
    check(device, "aten::glu.out", np.zeros((0, 4), np.float32), 1, Out(np.float32, (0, 2)),
          expect=np.zeros((0, 2)))
    check_error(device, "aten::glu.out", spread((3, 5), np.float32), 1, Out(np.float32, (3, 2)),
                exc=ValueError, match="odd")
    check_error(device, "aten::glu.out", x, 4, Out(np.float32, x.shape), exc=IndexError)
    check_error(device, "aten::glu.out", x.astype(np.int32), 1, Out(np.float32, (2, 2, 3, 6)),
                exc=ValueError)


def test_glu_mixed_and_errors(device):
    x = rand((3, 10))
    # float math, stored in double
    check(device, "aten::glu.out", x, 1, Out(np.float64, (3, 5)), tol=FLOAT_TOL["float32"],
          gpu_tol=(3e-7, 1e-7))
    check_error(device, "aten::glu.out", rand((3, 5)), 1, Out(np.float32, (3, 2)),
                exc=ValueError, match="odd")

"""Elementwise unary math against NumPy: the floating ops (exp, sin, rsqrt
...) read any real or bool dtype and write a floating one, computing in
double for double input and in float otherwise; neg/abs/rounding/sign keep
the dtype (integers wrap); bitwise_not, isnan/isinf and logit; dim orders,
special values, empty and 0-dim tensors, dynamic outs, threads."""

import math

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, call_kernel, cast, check, check_error, compute_type,
                     dtype_of, integers, is_float, normal, rand, reference, tensor, uniform, value)

INTS = [np.uint8, np.int8, np.int16, np.int32, np.int64]
FLOATS = [np.float32, np.float16, BF16, np.float64]
_erf = np.vectorize(math.erf, otypes=[np.float64])

# name -> (reference on float64, domain of the per-op test inputs)
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
FLOAT_UNARY = list(FLOAT_OPS)
# Domains of the every-dtype cases (-3, 3 elsewhere).
DOMAIN = {"log": (0.1, 5), "log1p": (0.1, 5), "log2": (0.1, 5), "log10": (0.1, 5),
          "sqrt": (0.1, 5), "rsqrt": (0.1, 5), "reciprocal": (0.5, 5), "asin": (-0.9, 0.9),
          "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9), "acosh": (1.1, 5), "tan": (-1.2, 1.2)}

# A libm result against float64 NumPy rounded to the compute type: within
# an ulp of that type (the relative error of one ulp of float16 / bfloat16
# is below 1e-3 / 8e-3).
LIBM = {"float32": (2e-6, 2e-9), "float64": (1e-13, 1e-16), "float16": (1e-3, 1e-4),
        BF16: (8e-3, 1e-3)}


def libm_tol(in_dtype, out_dtype):
    """Computed in double for double input, in float otherwise."""
    if np.dtype(storage_of(in_dtype)) != np.float64 and out_dtype == np.float64:
        return LIBM["float32"]
    return LIBM[out_dtype if out_dtype == BF16 else np.dtype(out_dtype).name]


def storage_of(dt):
    return np.float32 if dt == BF16 else dt


def values(shape, dtype, low=-3.0, high=3.0):
    return rand(shape, storage_of(dtype), low, high)


# ---- NumPy models ------------------------------------------------------------------------------


def float_unary_model(fn):
    def model(a, out):
        c = np.float64 if dtype_of(a) == np.float64 else np.float32
        with np.errstate(all="ignore"):
            r = np.asarray(fn(cast(value(a), c).astype(np.float64))).astype(c)
        return cast(r, dtype_of(out))

    return model


for _name, (_fn, _) in FLOAT_OPS.items():
    reference(f"aten::{_name}.out")(float_unary_model(_fn))


def _sign(x):
    if x.dtype == np.bool_:
        return x
    return np.sign(x)


SAME_OPS = {"neg": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
            "round": np.round, "trunc": np.trunc, "sign": _sign}
SAME_UNARY = list(SAME_OPS)


def same_type_model(fn):
    def model(a, out):
        c = compute_type(dtype_of(a))
        x = cast(value(a), c)
        with np.errstate(all="ignore"):
            r = x if (c.kind in "iub" and fn in (np.floor, np.ceil, np.round, np.trunc)) else fn(x)
        return cast(np.asarray(r).astype(c), dtype_of(out))

    return model


for _name, _fn in SAME_OPS.items():
    reference(f"aten::{_name}.out")(same_type_model(_fn))


@reference("aten::bitwise_not.out")
def bitwise_not_model(a, out):
    return np.invert(value(a))


def float_class_model(fn):
    def model(a, out):
        x = value(a)
        return fn(x) if is_float(dtype_of(a)) else np.zeros(x.shape, bool)

    return model


reference("aten::isnan.out")(float_class_model(np.isnan))
reference("aten::isinf.out")(float_class_model(np.isinf))


@reference("aten::logit.out")
def logit_model(a, eps, out):
    """log(x / (1 - x)) in double when self or out is double, else in
    float; x first clamped to [eps, 1 - eps] when eps >= 0."""
    c = np.dtype(np.float64 if np.float64 in (dtype_of(a), dtype_of(out)) else np.float32)
    x = cast(value(a), c)
    with np.errstate(all="ignore"):
        if eps is not None and eps >= 0:
            x = np.clip(x, c.type(eps), c.type(1 - eps))
        ratio = (x / (c.type(1) - x)).astype(c)
        r = np.log(ratio.astype(np.float64)).astype(c)
    return cast(r, dtype_of(out))


# ---- floating ops ------------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(FLOAT_OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_op(device, op, dtype):
    ref, (lo, hi) = FLOAT_OPS[op]
    x = uniform(lo, hi, (3, 41), dtype)
    check(device, f"aten::{op}.out", x, Out(dtype, x.shape), expect=ref(x.astype(np.float64)),
          tol=(2e-6, 2e-9) if dtype == np.float32 else (1e-13, 1e-16))


@pytest.mark.parametrize("op", ["sin", "exp", "tanh", "sigmoid", "rsqrt", "erf"])
def test_float_op_half_types(device, op):
    ref, (lo, hi) = FLOAT_OPS[op]
    x = uniform(max(lo, 0.1), hi, (2, 3, 4, 5), np.float32)
    h = x.astype(np.float16)
    check(device, f"aten::{op}.out", T(h, dim_order=CL), Out(np.float16, h.shape, dim_order=CL),
          expect=ref(h.astype(np.float64)), tol=(1e-3, 1e-4))
    b = bf16(x)
    check(device, f"aten::{op}.out", T(b, bf16=True), Out(BF16, b.shape),
          expect=ref(b.astype(np.float64)), tol=(8e-3, 1e-3))


@pytest.mark.parametrize("name", FLOAT_UNARY)
@pytest.mark.parametrize("dtype", FLOATS)
def test_float_unary(device, name, dtype):
    lo, hi = DOMAIN.get(name, (-3, 3))
    x = values((3, 4, 5, 6), dtype, lo, hi)
    tol = libm_tol(dtype, dtype)
    check(device, f"aten::{name}.out", tensor(x, dtype), Out(dtype, x.shape), tol=tol)
    check(device, f"aten::{name}.out", tensor(x, dtype, CL), Out(dtype, x.shape), tol=tol)
    check(device, f"aten::{name}.out", tensor(x, dtype), Out(dtype, x.shape, dim_order=CL),
          tol=tol)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sigmoid", "erf"])
@pytest.mark.parametrize("dtype,out", [(np.int32, np.float32), (np.uint8, np.float16),
                                       (np.bool_, np.float32), (np.float32, np.float64),
                                       (np.int64, np.float64), (np.float16, np.float32)])
def test_float_unary_mixed(device, name, dtype, out):
    x = rand((33, 7), dtype, 0, 9)
    # Computed in the input's float type (float for integers), then widened:
    # CPU and CUDA math may differ by one unit of float's last place.
    f32 = np.dtype(dtype) in (np.float32, np.int64) and out == np.float64
    check(device, f"aten::{name}.out", x, Out(out, x.shape), tol=libm_tol(dtype, out),
          gpu_tol=(3e-7, 1e-7) if f32 else None)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_integer_and_bool_input_gives_float(device, dtype):
    x = integers(1, 9, (4, 6), dtype)
    check(device, "aten::rsqrt.out", x, Out(np.float32, x.shape),
          expect=1 / np.sqrt(x.astype(np.float64)), tol=(1e-6, 0))
    check(device, "aten::sigmoid.out", x, Out(np.float64, x.shape),
          expect=1 / (1 + np.exp(-x.astype(np.float64))), tol=(1e-6, 0))
    check_error(device, "aten::exp.out", x, Out(np.int32, x.shape), exc=ValueError)


def test_float_op_special_values(device):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0], np.float32)
    with np.errstate(all="ignore"):
        for op, ref in [("sqrt", np.sqrt), ("log", np.log), ("exp", np.exp),
                        ("reciprocal", lambda v: 1 / v), ("tanh", np.tanh)]:
            check(device, f"aten::{op}.out", x, Out(np.float32, x.shape),
                  expect=ref(x.astype(np.float64)), tol=(1e-7, 0))
    check(device, "aten::sigmoid.out", x, Out(np.float32, x.shape),
          expect=[0.5, 0.5, 1.0, 0.0, np.nan, 1 / (1 + np.e)], tol=(1e-7, 0))


def test_tanh_float32_within_a_few_ulp(device):
    # The CPU's float32 tanh is its own (vec_math.h): a series below |x| =
    # 0.4, an exponential form above. Around the switch, tiny and large
    # magnitudes, within 5 ulp of float64's; -0 keeps its sign.
    rng = np.random.default_rng(11)
    x = np.concatenate([np.linspace(0.38, 0.42, 4001), rng.uniform(-12, 12, 20000),
                        10.0 ** rng.uniform(-40, 1.7, 20000)]).astype(np.float32)
    x = np.concatenate([x, -x])
    ref = np.tanh(x.astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    check(device, "aten::tanh.out", x, Out(np.float32, x.shape), expect=ref, tol=(3e-6, 1e-44))
    cpu = call_kernel("aten::tanh.out", x, Out(np.float32, x.shape))[0].astype(np.float64)
    assert (np.abs(cpu - ref) <= 5 * ulp).all()
    z = call_kernel("aten::tanh.out", np.array([-0.0, 0.0], np.float32),
                    Out(np.float32, (2,)))[0]
    assert np.signbit(z[0]) and not np.signbit(z[1])


def test_float_unary_special_values(device):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1e-30, 88.0, -100.0],
                 dtype=np.float32)
    for name in FLOAT_UNARY:
        check(device, f"aten::{name}.out", x, Out(np.float32, x.shape), tol=LIBM["float32"])


def test_empty_zero_dim_and_threads(device):
    check(device, "aten::cos.out", np.zeros((0, 4), np.float32), Out(np.float32, (0, 4)),
          expect=np.zeros((0, 4)))
    check(device, "aten::cos.out", np.array(0.5, np.float32), Out(np.float32, ()),
          expect=np.array(np.cos(0.5)), tol=(1e-5, 1e-8))
    x = uniform(-3, 3, (200, 333), np.float32)
    check(device, "aten::tanh.out", x, Out(np.float32, x.shape),
          expect=np.tanh(x.astype(np.float64)), tol=(2e-6, 1e-7), num_threads=4)
    check(device, "aten::exp.out", x[:2],
          Out(np.float32, (5, 5), dynamic=True, capacity=(5, 5000)),
          expect=np.exp(x[:2].astype(np.float64)), tol=(2e-6, 0))
    check(device, "aten::exp.out", np.zeros((0, 3), np.float32), Out(np.float32, (0, 3)))


# ---- same-dtype ops ----------------------------------------------------------------------------

SAME_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.float16, np.float32,
               np.float64]


@pytest.mark.parametrize("dtype", SAME_DTYPES)
def test_neg_abs(device, dtype):
    if np.dtype(dtype).kind == "u":
        x = integers(0, 200, (3, 7), dtype)
    elif np.dtype(dtype).kind == "i":
        x = integers(-100, 100, (3, 7), dtype)
    else:
        x = normal((3, 7), dtype, 10)
    check(device, "aten::neg.out", x, Out(dtype, x.shape), expect=-x)
    check(device, "aten::abs.out", x, Out(dtype, x.shape), expect=np.abs(x))
    check_error(device, "aten::neg.out", x,
                Out(np.float64 if dtype != np.float64 else np.float32, x.shape), exc=ValueError,
                match="dtype")


def test_neg_abs_wrap_and_bf16(device):
    m = np.iinfo(np.int64).min
    x = np.array([m, -1, 5], np.int64)
    check(device, "aten::neg.out", x, Out(np.int64, (3,)), expect=np.array([m, 1, -5]))
    check(device, "aten::abs.out", x, Out(np.int64, (3,)), expect=np.array([m, 1, 5]))
    b = bf16(normal(9))
    check(device, "aten::neg.out", T(b, bf16=True), Out(BF16, (9,)), expect=-b)
    check_error(device, "aten::neg.out", x > 0, Out(np.bool_, (3,)), exc=ValueError)


@pytest.mark.parametrize("op,fn", [("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc),
                                   ("round", np.round)])
def test_rounding_ops(device, op, fn):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4, -2.6, 0.49999997, np.inf, np.nan,
                  -0.0], np.float32)
    # np.round is half to even
    check(device, f"aten::{op}.out", x, Out(np.float32, x.shape), expect=fn(x), signed_zeros=True)
    h = x.astype(np.float16)
    check(device, f"aten::{op}.out", h, Out(np.float16, x.shape), expect=fn(h))
    i = integers(-100, 100, (2, 5), np.int32)
    check(device, f"aten::{op}.out", i, Out(np.int32, i.shape), expect=i)


@pytest.mark.parametrize("name", SAME_UNARY)
@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_same_type_unary(device, name, dtype):
    x = values((4, 3, 2, 5), dtype, -50, 50)
    if dtype != BF16 and np.dtype(dtype).kind == "f":
        x[0, 0, 0, :] = [0.5, 1.5, 2.5, -0.5, -2.5]
    check(device, f"aten::{name}.out", tensor(x, dtype, CL), Out(dtype, x.shape))
    check(device, f"aten::{name}.out", tensor(x[0], dtype), Out(dtype, x.shape[1:]))


def test_sign(device):
    x = np.array([-3.5, 0.0, -0.0, 2.0, np.nan, -np.inf], np.float32)
    check(device, "aten::sign.out", x, Out(np.float32, x.shape), expect=np.sign(x))
    i = np.array([-7, 0, 9], np.int16)
    check(device, "aten::sign.out", i, Out(np.int16, (3,)), expect=[-1, 0, 1])
    u = np.array([0, 3], np.uint8)
    check(device, "aten::sign.out", u, Out(np.uint8, (2,)), expect=[0, 1])
    b = np.array([True, False])
    check(device, "aten::sign.out", b, Out(np.bool_, (2,)), expect=b)


def test_unary_edge_cases(device):
    check(device, "aten::sign.out", rand((9,), np.bool_), Out(np.bool_, (9,)))
    check(device, "aten::neg.out", np.array([-128, 127, 0], dtype=np.int8), Out(np.int8, (3,)),
          expect=np.array([-128, -127, 0]))
    check(device, "aten::abs.out", np.array([-128, 5, -3], dtype=np.int8), Out(np.int8, (3,)),
          expect=np.array([-128, 5, 3]))
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 2.0], dtype=np.float32)
    for name in SAME_UNARY:
        check(device, f"aten::{name}.out", x, Out(np.float32, (5,)))
    check_error(device, "aten::neg.out", rand((3,), np.bool_), Out(np.bool_, (3,)),
                exc=ValueError)
    check_error(device, "aten::abs.out", rand((3,)), Out(np.float64, (3,)), exc=ValueError,
                match="dtype")


# ---- bitwise_not / isnan / isinf / logit ---------------------------------------------------------


@pytest.mark.parametrize("dtype", INTS + [np.bool_])
def test_bitwise_not(device, dtype):
    x = rand((5, 6), dtype, -100, 100)
    check(device, "aten::bitwise_not.out", x, Out(dtype, x.shape))


def test_bitwise_not_values_and_errors(device):
    for dtype in (np.int8, np.uint8, np.int32, np.int64):
        x = integers(0, 100, (3, 4), dtype)
        check(device, "aten::bitwise_not.out", x, Out(dtype, x.shape), expect=~x)
    b = np.array([True, False, True])
    check(device, "aten::bitwise_not.out", b, Out(np.bool_, (3,)), expect=~b)
    check_error(device, "aten::bitwise_not.out", np.ones(3, np.float32), Out(np.float32, (3,)),
                exc=ValueError)
    # uint16 is integral but not computed: the front-end's error on every
    # device (CUDA raised NotImplementedError before the move behind ops/).
    check_error(device, "aten::bitwise_not.out", np.ones(3, np.uint16), Out(np.uint16, (3,)),
                exc=ValueError, match="dtype uint16 is not supported")


@pytest.mark.parametrize("name", ["isnan", "isinf"])
@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.bool_])
def test_isnan_isinf(device, name, dtype):
    x = values((10,), dtype)
    if dtype != BF16 and np.dtype(dtype).kind == "f":
        x[:4] = [np.nan, np.inf, -np.inf, 0]
    check(device, f"aten::{name}.out", tensor(x, dtype), Out(np.bool_, (10,)))


def test_isnan_isinf_values_and_errors(device):
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    check(device, "aten::isnan.out", x, Out(np.bool_, x.shape), expect=np.isnan(x))
    check(device, "aten::isinf.out", x, Out(np.bool_, x.shape), expect=np.isinf(x))
    h = x.astype(np.float16)
    check(device, "aten::isinf.out", T(h, dim_order=None), Out(np.bool_, x.shape),
          expect=np.isinf(x))
    i = np.arange(4, dtype=np.int32)
    check(device, "aten::isnan.out", i, Out(np.bool_, (4,)), expect=np.zeros(4, bool))
    check_error(device, "aten::isnan.out", x, Out(np.float32, x.shape), exc=ValueError)


def test_logit_values_and_errors(device):
    x = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 0.3], np.float32)
    with np.errstate(divide="ignore"):
        ref = np.log(x / (1 - x))
    check(device, "aten::logit.out", x, None, Out(np.float32, x.shape), expect=ref, tol=(1e-6, 0))
    xc = np.clip(x, 0.2, 0.8)
    check(device, "aten::logit.out", x, 0.2, Out(np.float64, x.shape),
          expect=np.log(xc / (1 - xc)), tol=(1e-6, 0))
    check_error(device, "aten::logit.out", x, None, Out(np.int32, x.shape), exc=ValueError)


@pytest.mark.parametrize("eps", [None, 1e-3, -1.0])
@pytest.mark.parametrize("dtype,out", [(np.float32, np.float32), (np.float16, np.float16),
                                       (np.float64, np.float64), (np.int32, np.float32),
                                       (BF16, BF16), (np.float32, np.float64)])
def test_logit(device, eps, dtype, out):
    x = values((4, 6), dtype, 0, 1) if dtype != np.int32 else rand((4, 6), np.int32, 0, 2)
    check(device, "aten::logit.out", tensor(x, dtype), eps, Out(out, (4, 6)),
          tol=LIBM[out if out == BF16 else np.dtype(out).name])

"""Comparisons, logical ops and where against NumPy: the promoted comparison
type, scalar overloads (-inf, and integer scalars that wrap into an integer
tensor's type first), any real out dtype, truthiness (NaN is true), 3-way
broadcasting of where and its out-dtype rule, uint8 conditions, dim
orders, empty and 0-dim tensors, threads."""

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, cast, check, check_error, compute_type, dtype_of,
                     integers, normal, promote, promote_scalar, rand, reference, tensor, value)

INTS = [np.uint8, np.int8, np.int16, np.int32, np.int64]
FLOATS = [np.float32, np.float16, BF16, np.float64]
CMPS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def values(shape, dtype, low=-3.0, high=3.0):
    return rand(shape, np.float32 if dtype == BF16 else dtype, low, high)


def small(shape, dtype):
    """Integers in [-3, 4) as `dtype`: many equal pairs."""
    return integers(-3, 4, shape, dtype)


# ---- NumPy models ------------------------------------------------------------------------------


def compare_tensor_model(fn):
    def model(a, b, out):
        c = compute_type(promote(dtype_of(a), dtype_of(b)))
        with np.errstate(invalid="ignore"):
            return cast(fn(cast(value(a), c), cast(value(b), c)), dtype_of(out))

    return model


def compare_scalar_model(fn):
    def model(a, s, out):
        c = compute_type(promote_scalar(dtype_of(a), s))
        v = np.array(s).astype(c)  # an int scalar wraps into an integer type
        with np.errstate(invalid="ignore"):
            return cast(fn(cast(value(a), c), v), dtype_of(out))

    return model


for _cmp, _fn in CMPS.items():
    reference(f"aten::{_cmp}.Tensor_out")(compare_tensor_model(_fn))
    reference(f"aten::{_cmp}.Scalar_out")(compare_scalar_model(_fn))


@reference("aten::logical_not.out")
def logical_not_model(a, out):
    return cast(value(a) == 0, dtype_of(out))


def logical_model(fn):
    def model(a, b, out):
        return cast(fn(value(a) != 0, value(b) != 0), dtype_of(out))

    return model


reference("aten::logical_and.out")(logical_model(np.logical_and))
reference("aten::logical_or.out")(logical_model(np.logical_or))
reference("aten::logical_xor.out")(logical_model(np.logical_xor))


@reference("aten::where.self_out")
def where_model(cond, a, b, out):
    common = promote(dtype_of(a), dtype_of(b))
    c = compute_type(common)
    r = np.where(value(cond) != 0, cast(value(a), c), cast(value(b), c))
    return cast(r, dtype_of(out))


# ---- comparisons -------------------------------------------------------------------------------


@pytest.mark.parametrize("cmp", sorted(CMPS))
@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_])
def test_compare(device, cmp, dtype):
    a, b = values((3, 4, 5), dtype, -3, 3), values((4, 1), dtype, -3, 3)
    check(device, f"aten::{cmp}.Tensor_out", tensor(a, dtype), tensor(b, dtype),
          Out(np.bool_, (3, 4, 5)))
    check(device, f"aten::{cmp}.Tensor_out", tensor(a, dtype), tensor(a, dtype),
          Out(np.bool_, (3, 4, 5)))
    s = True if dtype == np.bool_ else 1
    check(device, f"aten::{cmp}.Scalar_out", tensor(a, dtype), s, Out(np.bool_, (3, 4, 5)))
    check(device, f"aten::{cmp}.Scalar_out", tensor(a, dtype), 0.5, Out(np.float32, (3, 4, 5)))


@pytest.mark.parametrize("cmp", sorted(CMPS))
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float16, np.float32, np.float64,
                                   np.bool_])
def test_compare_tensor(device, cmp, dtype):
    a, b = small((3, 4, 5), dtype), small((4, 1), dtype)
    check(device, f"aten::{cmp}.Tensor_out", a, b, Out(np.bool_, (3, 4, 5)),
          expect=CMPS[cmp](a, b))


@pytest.mark.parametrize("cmp", sorted(CMPS))
def test_compare_scalar(device, cmp):
    x = small((2, 3, 4, 5), np.float32)
    check(device, f"aten::{cmp}.Scalar_out", T(x, dim_order=CL), 0, Out(np.bool_, x.shape),
          expect=CMPS[cmp](x, 0))
    i = small((7,), np.int32)
    check(device, f"aten::{cmp}.Scalar_out", i, 0.5, Out(np.bool_, (7,)),
          expect=CMPS[cmp](i, 0.5))
    # An int scalar wraps into an integer tensor's type first (like PyTorch).
    u = np.array([0, 5, 200, 255], np.uint8)
    for s in (200, -2, 300):
        check(device, f"aten::{cmp}.Scalar_out", u, s, Out(np.bool_, (4,)),
              expect=CMPS[cmp](u, np.uint8(s % 256)))


def test_compare_mixed_types_and_out_dtypes(device):
    i, f = np.array([1, 2, 3], np.int64), np.array([1.5, 2.0, 2.5], np.float32)
    check(device, "aten::gt.Tensor_out", i, f, Out(np.bool_, (3,)), expect=[False, False, True])
    check(device, "aten::eq.Tensor_out", i, f, Out(np.float32, (3,)), expect=[0.0, 1.0, 0.0])
    check(device, "aten::le.Scalar_out", i, 2, Out(np.int32, (3,)), expect=[1, 1, 0])
    b = bf16([1.0, -2.0, 3.0])
    check(device, "aten::lt.Scalar_out", T(b, bf16=True), 0, Out(np.uint8, (3,)),
          expect=[0, 1, 0])


def test_compare_mixed_and_nan(device):
    a = np.array([np.nan, 1.0, 2.0, -np.inf], dtype=np.float32)
    for cmp in CMPS:
        check(device, f"aten::{cmp}.Tensor_out", a, np.array([1, 1, 3, 0], np.int32),
              Out(np.bool_, (4,)))
        check(device, f"aten::{cmp}.Scalar_out", a, 1.0, Out(np.int32, (4,)))
        check(device, f"aten::{cmp}.Scalar_out", rand((4,), np.uint8, 0, 255), -2,
              Out(np.bool_, (4,)))
    x = rand((2, 3, 4, 5))
    check(device, "aten::lt.Tensor_out", T(x, dim_order=CL), rand((5,)), Out(np.bool_, x.shape))


def test_eq_minus_inf_and_nan(device):
    x = np.array([-np.inf, 0.0, np.nan, np.inf], np.float32)
    check(device, "aten::eq.Scalar_out", x, float("-inf"), Out(np.bool_, (4,)),
          expect=[True, False, False, False])
    check(device, "aten::ne.Tensor_out", x, x, Out(np.bool_, (4,)),
          expect=[False, False, True, False])


def test_compare_empty_zero_dim_threads(device):
    check(device, "aten::gt.Scalar_out", np.zeros((0, 2), np.float32), 0, Out(np.bool_, (0, 2)),
          expect=np.zeros((0, 2), bool))
    check(device, "aten::gt.Scalar_out", np.array(3.0, np.float32), 0, Out(np.bool_, ()),
          expect=np.array(True))
    x = normal((300, 300))
    check(device, "aten::ge.Tensor_out", x, x.T.copy(), Out(np.bool_, x.shape), expect=x >= x.T,
          num_threads=3)
    check_error(device, "aten::gt.Tensor_out", x, np.ones(7, np.float32), Out(np.bool_, x.shape),
                exc=ValueError)


# ---- logical ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, np.float32, np.float16])
def test_logical_not(device, dtype):
    x = small((4, 5), dtype)
    check(device, "aten::logical_not.out", x, Out(np.bool_, x.shape), expect=np.logical_not(x))
    check(device, "aten::logical_not.out", x, Out(np.float32, x.shape),
          expect=np.logical_not(x).astype(np.float32))
    y = np.array([np.nan, 0.0, -0.0], np.float32)
    check(device, "aten::logical_not.out", y, Out(np.bool_, (3,)), expect=[False, True, True])


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_logical_binary(device, op):
    fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
    a, b = small((2, 3, 4), np.bool_), small((3, 1), np.bool_)
    check(device, f"aten::logical_{op}.out", a, b, Out(np.bool_, (2, 3, 4)), expect=fn(a, b))
    i, f = small((5,), np.int64), small((5,), np.float32)
    check(device, f"aten::logical_{op}.out", i, f, Out(np.int32, (5,)),
          expect=fn(i, f).astype(np.int32))


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int64, np.uint8, BF16])
def test_logical(device, dtype):
    a, b = values((4, 5), dtype, -2, 2), values((5,), dtype, -2, 2)
    for op in ["and", "or", "xor"]:
        check(device, f"aten::logical_{op}.out", tensor(a, dtype), tensor(b, dtype),
              Out(np.bool_, (4, 5)))
        check(device, f"aten::logical_{op}.out", tensor(a, dtype), rand((4, 5), np.int8, -1, 2),
              Out(np.float32, (4, 5)))
    check(device, "aten::logical_not.out", tensor(a, dtype), Out(np.bool_, (4, 5)))
    check(device, "aten::logical_not.out", tensor(a, dtype), Out(np.int32, (4, 5)))


# ---- where ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_])
def test_where(device, dtype):
    cond = rand((3, 1, 5), np.bool_)
    a, b = values((4, 5), dtype), values((3, 4, 1), dtype)
    check(device, "aten::where.self_out", cond, tensor(a, dtype), tensor(b, dtype),
          Out(dtype, (3, 4, 5)))
    check(device, "aten::where.self_out", cond.astype(np.uint8), tensor(a, dtype),
          tensor(b, dtype), Out(dtype, (3, 4, 5)))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.bool_])
def test_where_three_way_broadcast(device, dtype):
    c = small((3, 1, 5), np.bool_)
    a, b = small((4, 1), dtype), small((5,), dtype)
    check(device, "aten::where.self_out", c, a, b, Out(dtype, (3, 4, 5)), expect=np.where(c, a, b))


def test_where_uint8_condition_bf16_and_promotion(device):
    c = np.array([0, 1, 2, 0], np.uint8)
    a, b = bf16([1.5, 2.5, 3.5, 4.5]), bf16([-1, -2, -3, -4])
    check(device, "aten::where.self_out", c, T(a, bf16=True), T(b, bf16=True), Out(BF16, (4,)),
          expect=np.where(c != 0, a, b))
    i, f = np.array([1, 2, 3, 4], np.int32), np.array([0.5, 0.5, 0.5, 0.5], np.float32)
    check(device, "aten::where.self_out", c, i, f, Out(np.float32, (4,)), expect=[0.5, 2, 3, 0.5])
    check_error(device, "aten::where.self_out", c, i, f, Out(np.float64, (4,)), exc=ValueError,
                match="out must be float32")
    check_error(device, "aten::where.self_out", c.astype(np.int32), i, f, Out(np.float32, (4,)),
                exc=ValueError, match="condition")


def test_where_promotion_and_layout(device):
    cond = rand((2, 3, 4, 5), np.bool_)
    check(device, "aten::where.self_out", T(cond, dim_order=CL),
          rand((2, 3, 4, 5), np.int32, -9, 9), rand((5,), np.float32),
          Out(np.float32, (2, 3, 4, 5), dim_order=CL))
    check_error(device, "aten::where.self_out", rand((3,), np.int32, 0, 2), rand((3,)), rand((3,)),
                Out(np.float32, (3,)), exc=ValueError, match="condition")


def test_where_dim_orders_and_empty(device):
    c = small((2, 3, 4, 5), np.bool_)
    a = normal((2, 3, 4, 5))
    b = np.float32(-1.0) * np.ones((1, 3, 1, 1), np.float32)
    check(device, "aten::where.self_out", T(c, dim_order=CL), a, b,
          Out(np.float32, a.shape, dim_order=CL), expect=np.where(c, a, b))
    check(device, "aten::where.self_out", np.array(True), np.array(1.0, np.float32),
          np.array(2.0, np.float32), Out(np.float32, ()), expect=np.array(1.0))
    check(device, "aten::where.self_out", np.zeros((0,), bool), np.ones(1, np.float32),
          np.ones(1, np.float32), Out(np.float32, (0,)), expect=np.zeros(0))

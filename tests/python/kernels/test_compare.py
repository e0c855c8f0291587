"""Comparisons, logical ops and where (compare.cpp) against NumPy: promoted
comparison type, scalar overloads (incl. -inf and wrapped integers),
any real out dtype, truthiness, 3-way broadcasting of where and its
out-dtype rule, dim orders, empty and 0-dim tensors."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(5)
CL = (0, 2, 3, 1)
CMPS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def bf16(x):
    return from_bf16_bits(to_bf16_bits(np.asarray(x, dtype=np.float32)))


def run(name, *args, **kw):
    return call_kernel(name, *args, **kw)[0]


def small(shape, dtype):
    return RNG.integers(-3, 4, shape).astype(dtype)


@pytest.mark.parametrize("cmp", sorted(CMPS))
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float16, np.float32, np.float64,
                                   np.bool_])
def test_compare_tensor(cmp, dtype):
    a, b = small((3, 4, 5), dtype), small((4, 1), dtype)
    r = run(f"aten::{cmp}.Tensor_out", a, b, Out(np.bool_, (3, 4, 5)))
    np.testing.assert_array_equal(r, CMPS[cmp](a, b))


@pytest.mark.parametrize("cmp", sorted(CMPS))
def test_compare_scalar(cmp):
    x = small((2, 3, 4, 5), np.float32)
    r = run(f"aten::{cmp}.Scalar_out", T(x, dim_order=CL), 0, Out(np.bool_, x.shape))
    np.testing.assert_array_equal(r, CMPS[cmp](x, 0))
    i = small((7,), np.int32)
    r = run(f"aten::{cmp}.Scalar_out", i, 0.5, Out(np.bool_, (7,)))
    np.testing.assert_array_equal(r, CMPS[cmp](i, 0.5))
    # An int scalar wraps into an integer tensor's type first (like PyTorch).
    u = np.array([0, 5, 200, 255], np.uint8)
    for s in (200, -2, 300):
        r = run(f"aten::{cmp}.Scalar_out", u, s, Out(np.bool_, (4,)))
        np.testing.assert_array_equal(r, CMPS[cmp](u, np.uint8(s % 256)))


def test_compare_mixed_types_and_out_dtypes():
    i, f = np.array([1, 2, 3], np.int64), np.array([1.5, 2.0, 2.5], np.float32)
    np.testing.assert_array_equal(run("aten::gt.Tensor_out", i, f, Out(np.bool_, (3,))),
                                  [False, False, True])
    np.testing.assert_array_equal(run("aten::eq.Tensor_out", i, f, Out(np.float32, (3,))),
                                  [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(run("aten::le.Scalar_out", i, 2, Out(np.int32, (3,))),
                                  [1, 1, 0])
    b = bf16([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(run("aten::lt.Scalar_out", T(b, bf16=True), 0,
                                      Out(np.uint8, (3,))), [0, 1, 0])


def test_eq_minus_inf_and_nan():
    x = np.array([-np.inf, 0.0, np.nan, np.inf], np.float32)
    np.testing.assert_array_equal(run("aten::eq.Scalar_out", x, float("-inf"), Out(np.bool_, (4,))),
                                  [True, False, False, False])
    np.testing.assert_array_equal(run("aten::ne.Tensor_out", x, x, Out(np.bool_, (4,))),
                                  [False, False, True, False])


def test_compare_empty_zero_dim_threads():
    assert run("aten::gt.Scalar_out", np.zeros((0, 2), np.float32), 0,
               Out(np.bool_, (0, 2))).shape == (0, 2)
    r = run("aten::gt.Scalar_out", np.array(3.0, np.float32), 0, Out(np.bool_, ()))
    assert r.shape == () and r
    x = RNG.standard_normal((300, 300)).astype(np.float32)
    np.testing.assert_array_equal(
        run("aten::ge.Tensor_out", x, x.T.copy(), Out(np.bool_, x.shape), num_threads=3), x >= x.T)
    with pytest.raises(ValueError):
        run("aten::gt.Tensor_out", x, np.ones(7, np.float32), Out(np.bool_, x.shape))


# ---- logical ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, np.float32, np.float16])
def test_logical_not(dtype):
    x = small((4, 5), dtype)
    np.testing.assert_array_equal(run("aten::logical_not.out", x, Out(np.bool_, x.shape)),
                                  np.logical_not(x))
    np.testing.assert_array_equal(run("aten::logical_not.out", x, Out(np.float32, x.shape)),
                                  np.logical_not(x).astype(np.float32))
    y = np.array([np.nan, 0.0, -0.0], np.float32)
    np.testing.assert_array_equal(run("aten::logical_not.out", y, Out(np.bool_, (3,))),
                                  [False, True, True])


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_logical_binary(op):
    fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
    a, b = small((2, 3, 4), np.bool_), small((3, 1), np.bool_)
    np.testing.assert_array_equal(run(f"aten::logical_{op}.out", a, b, Out(np.bool_, (2, 3, 4))),
                                  fn(a, b))
    i, f = small((5,), np.int64), small((5,), np.float32)
    np.testing.assert_array_equal(run(f"aten::logical_{op}.out", i, f, Out(np.int32, (5,))),
                                  fn(i, f).astype(np.int32))


# ---- where --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.bool_])
def test_where_three_way_broadcast(dtype):
    c = small((3, 1, 5), np.bool_)
    a, b = small((4, 1), dtype), small((5,), dtype)
    r = run("aten::where.self_out", c, a, b, Out(dtype, (3, 4, 5)))
    np.testing.assert_array_equal(r, np.where(c, a, b))


def test_where_uint8_condition_bf16_and_promotion():
    c = np.array([0, 1, 2, 0], np.uint8)
    a, b = bf16([1.5, 2.5, 3.5, 4.5]), bf16([-1, -2, -3, -4])
    r = run("aten::where.self_out", c, T(a, bf16=True), T(b, bf16=True), Out("bfloat16", (4,)))
    np.testing.assert_array_equal(r, np.where(c != 0, a, b))
    i, f = np.array([1, 2, 3, 4], np.int32), np.array([0.5, 0.5, 0.5, 0.5], np.float32)
    r = run("aten::where.self_out", c, i, f, Out(np.float32, (4,)))
    np.testing.assert_array_equal(r, [0.5, 2, 3, 0.5])
    with pytest.raises(ValueError, match="out must be float32"):
        run("aten::where.self_out", c, i, f, Out(np.float64, (4,)))
    with pytest.raises(ValueError, match="condition"):
        run("aten::where.self_out", c.astype(np.int32), i, f, Out(np.float32, (4,)))


def test_where_dim_orders_and_empty():
    c = small((2, 3, 4, 5), np.bool_)
    a = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = np.float32(-1.0) * np.ones((1, 3, 1, 1), np.float32)
    r = run("aten::where.self_out", T(c, dim_order=CL), a, b,
            Out(np.float32, a.shape, dim_order=CL))
    np.testing.assert_array_equal(r, np.where(c, a, b))
    r = run("aten::where.self_out", np.array(True), np.array(1.0, np.float32),
            np.array(2.0, np.float32), Out(np.float32, ()))
    assert r.shape == () and r == 1.0
    r = run("aten::where.self_out", np.zeros((0,), bool), np.ones(1, np.float32),
            np.ones(1, np.float32), Out(np.float32, (0,)))
    assert r.shape == (0,)

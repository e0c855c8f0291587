"""Elementwise binary arithmetic (add, sub, mul, div, floor_divide,
remainder, fmod, pow, maximum, minimum, atan2, bitwise and/or/xor)
against NumPy models of ATen's promotion and
out-dtype rules: every dtype, broadcasting, dim orders, Python
division/remainder semantics, integer division by zero (CPU only: the CUDA
kernels never read device data to raise), NaN propagation, scalar
overloads, threads; and the same cases on every CUDA device against the
CPU."""

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, cast, check, check_error, compute_type, cpu_only,
                     dtype_of, integers, is_float, is_int, normal, promote, promote_scalar, rand,
                     reference, tensor, value)

INTS = [np.uint8, np.int8, np.int16, np.int32, np.int64]
FLOATS = [np.float32, np.float16, BF16, np.float64]
ZERO_DIVISION = "integer division by zero needs the data (the CUDA kernels give 0)"

# x - alpha * y (alpha != 1) may contract to one fused multiply-add.
FMA = {"float32": (1e-6, 1e-6), "float64": (1e-14, 1e-14), "float16": (1e-3, 1e-3),
       BF16: (8e-3, 8e-3)}
# Libm functions (pow, atan2) against float64 NumPy.
LIBM = {"float32": (2e-6, 1e-6), "float64": (1e-13, 1e-13), "float16": (1e-3, 1e-3),
        BF16: (8e-3, 8e-3)}


def values(shape, dtype, low=-3.0, high=3.0):
    return rand(shape, np.float32 if dtype == BF16 else dtype, low, high)


def nonzero_values(shape, dtype):
    """Divisors: no zeros for integers, none near zero for floats."""
    x = values(shape, dtype, 1, 9)
    if dtype != BF16 and np.dtype(dtype) == np.bool_:
        return np.ones(shape, dtype=bool)
    if dtype != BF16 and np.dtype(dtype).kind == "u":
        return x
    sign = np.where(rand(shape, np.bool_), -1, 1)
    return (x * sign).astype(x.dtype)


def wide(shape, dtype, low=-50, high=50):
    """Integers in [low, high) (clipped to the dtype), bool half true,
    floats normal * 10: the value spread of the per-dtype cases."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return integers(0, 2, shape, bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return integers(max(low, info.min), min(high, info.max) + 1, shape, dtype)
    return normal(shape, dtype, 10)


# ---- NumPy models ------------------------------------------------------------------------------


def _apply(fn, *xs):
    with np.errstate(all="ignore"):
        return np.asarray(fn(*xs))


def _scalar(s, c):
    """A Scalar argument as compute type `c` (scalar_as<C>)."""
    return np.array(s).astype(c)[()]


def binary_model(fn, bool_fn=None, bool_ok=True):
    """out = fn(a, b) in the compute type of promote(a, b), stored in out."""

    def model(a, b, out):
        common = promote(dtype_of(a), dtype_of(b))
        c = compute_type(common)
        x, y = cast(value(a), c), cast(value(b), c)
        r = _apply(bool_fn if bool_fn and common == np.bool_ else fn, x, y)
        return cast(r.astype(c), dtype_of(out))

    return model


def add_sub_model(sign):
    def model(a, b, alpha, out):
        common = promote(dtype_of(a), dtype_of(b))
        c = compute_type(common)
        x, y = cast(value(a), c), cast(value(b), c)
        if common == np.bool_:
            return cast(x | (bool(alpha) & y), dtype_of(out))
        al = _scalar(alpha, c)
        op = np.add if sign > 0 else np.subtract
        r = _apply(lambda u, v: op(u, v) if al == 1 else op(u, al * v), x, y)
        return cast(r.astype(c), dtype_of(out))

    return model


reference("aten::add.out")(add_sub_model(1))
reference("aten::sub.out")(add_sub_model(-1))
reference("aten::mul.out")(binary_model(np.multiply, np.logical_and))
reference("aten::maximum.out")(binary_model(np.maximum))
reference("aten::minimum.out")(binary_model(np.minimum))
for _op, _fn in [("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor)]:
    reference(f"aten::bitwise_{_op}.Tensor_out")(binary_model(_fn))


def scalar_model(fn, bool_fn=None):
    """out = fn(a, s) in the compute type of promote_scalar(a, s)."""

    def model(a, s, out):
        common = promote_scalar(dtype_of(a), s)
        c = compute_type(common)
        x = cast(value(a), c)
        r = _apply(bool_fn if bool_fn and common == np.bool_ else fn, x, _scalar(s, c))
        return cast(r.astype(c), dtype_of(out))

    return model


reference("aten::mul.Scalar_out")(scalar_model(np.multiply, np.logical_and))
for _op, _fn in [("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor)]:
    reference(f"aten::bitwise_{_op}.Scalar_out")(scalar_model(_fn))


def add_sub_scalar_model(sign):
    def model(a, s, alpha, out):
        common = promote_scalar(dtype_of(a), s)
        c = compute_type(common)
        x = cast(value(a), c)
        if common == np.bool_:
            return cast(x | (bool(alpha) and bool(s)), dtype_of(out))
        v = _apply(np.multiply, _scalar(alpha, c), _scalar(s, c)).astype(c)
        op = np.add if sign > 0 else np.subtract
        return cast(_apply(op, x, v).astype(c), dtype_of(out))

    return model


reference("aten::add.Scalar_out")(add_sub_scalar_model(1))
reference("aten::sub.Scalar_out")(add_sub_scalar_model(-1))


@reference("aten::rsub.Scalar_out")
def rsub_scalar_model(a, s, alpha, out):
    c = compute_type(promote_scalar(dtype_of(a), s))
    x = cast(value(a), c)
    r = _apply(lambda u: _scalar(s, c) - _scalar(alpha, c) * u, x)
    return cast(r.astype(c), dtype_of(out))


def true_division_type(a, b):
    common = promote(a, b)
    return common if is_float(common) else np.dtype(np.float32)


@reference("aten::div.out")
def div_model(a, b, out):
    c = compute_type(true_division_type(dtype_of(a), dtype_of(b)))
    r = _apply(np.divide, cast(value(a), c), cast(value(b), c))
    return cast(r.astype(c), dtype_of(out))


def trunc_div(x, y):
    if x.dtype.kind in "iu":
        q = _apply(np.floor_divide, x, y)
        fix = (_apply(np.remainder, x, y) != 0) & ((x < 0) != (y < 0))
        return (q + fix).astype(x.dtype)
    return _apply(lambda u, v: np.trunc(u / v), x, y)


def rounded_division(x, y, mode):
    if mode is None:
        return _apply(np.divide, x, y)
    if mode == "trunc":
        return trunc_div(x, y)
    return _apply(np.floor_divide, x, y)  # Python's //, floats included


@reference("aten::div.out_mode")
def div_mode_model(a, b, mode, out):
    if mode is None:
        return div_model(a, b, out)
    c = compute_type(promote(dtype_of(a), dtype_of(b)))
    r = rounded_division(cast(value(a), c), cast(value(b), c), mode)
    return cast(r.astype(c), dtype_of(out))


@reference("aten::div.Scalar_out")
def div_scalar_model(a, s, out):
    dt = dtype_of(a)
    c = compute_type(dt if is_float(dt) else np.float32)
    return cast(_apply(np.divide, cast(value(a), c), _scalar(s, c)).astype(c), dtype_of(out))


@reference("aten::div.Scalar_mode_out")
def div_scalar_mode_model(a, s, mode, out):
    if mode is None:
        return div_scalar_model(a, s, out)
    c = compute_type(promote_scalar(dtype_of(a), s))
    x = cast(value(a), c)
    r = rounded_division(x, np.full(x.shape, _scalar(s, c), c), mode)
    return cast(r.astype(c), dtype_of(out))


reference("aten::floor_divide.out")(binary_model(np.floor_divide))
reference("aten::remainder.Tensor_out")(binary_model(np.remainder))
reference("aten::fmod.Tensor_out")(binary_model(np.fmod))
reference("aten::remainder.Scalar_out")(scalar_model(np.remainder))
reference("aten::fmod.Scalar_out")(scalar_model(np.fmod))


@reference("aten::atan2.out")
def atan2_model(a, b, out):
    c = compute_type(true_division_type(dtype_of(a), dtype_of(b)))
    r = _apply(np.arctan2, cast(value(a), np.float64), cast(value(b), np.float64))
    return cast(r.astype(c), dtype_of(out))


def int_pow(base, exp):
    """base ** exp wrapping in base's integer type; negative exponents give
    1 for base 1, +-1 for base -1, else 0."""
    base, exp = np.broadcast_arrays(np.asarray(base), np.asarray(exp))
    result = np.empty(base.shape, base.dtype)
    bits = base.dtype.itemsize * 8
    for i in np.ndindex(base.shape):
        b, e = int(base[i]), int(exp[i])
        if e < 0:
            r = 1 if b == 1 else ((-1 if e & 1 else 1) if b == -1 else 0)
        else:
            r = pow(b, e, 1 << bits)
        result[i] = np.array(r % (1 << bits), np.uint64).astype(
            np.dtype(f"u{bits // 8}")).view(base.dtype)
    return result


def float_pow(x, e):
    """pow computed in float64 (exponents 2, 3, 1, 0.5, -1 as arithmetic)."""
    return _apply(np.power, x.astype(np.float64), np.asarray(e, np.float64))


@reference("aten::pow.Tensor_Tensor_out")
def pow_tensor_tensor_model(a, b, out):
    c = compute_type(promote(dtype_of(a), dtype_of(b)))
    x, e = cast(value(a), c), cast(value(b), c)
    r = int_pow(x, e) if c.kind in "iu" else float_pow(x, e)
    return cast(np.asarray(r).astype(c), dtype_of(out))


@reference("aten::pow.Tensor_Scalar_out")
def pow_tensor_scalar_model(a, s, out):
    c = compute_type(promote_scalar(dtype_of(a), s))
    x = cast(value(a), c)
    r = int_pow(x, np.full(x.shape, int(s))) if c.kind in "iu" else float_pow(x, _scalar(s, c))
    return cast(np.asarray(r).astype(c), dtype_of(out))


@reference("aten::pow.Scalar_out")
def pow_scalar_model(s, b, out):
    c = compute_type(promote_scalar(dtype_of(b), s))
    e = cast(value(b), c)
    base = np.full(e.shape, _scalar(s, c), c)
    r = int_pow(base, e) if c.kind in "iu" else float_pow(base, e)
    return cast(np.asarray(r).astype(c), dtype_of(out))


# ---- add / sub / mul --------------------------------------------------------------------------

# (6, 64) + (64,) and (2, 4, 32) + (1, 4, 32) take the vectorised CUDA
# kernel with a repeating (bias) input.
BROADCASTS = [((3, 4, 5), (3, 4, 5)), ((3, 1, 5), (4, 1)), ((2, 3, 4), ()), ((), (5,)),
              ((1000,), (1000,)), ((7, 33), (33,)), ((0, 4), (4,)), ((6, 64), (64,)),
              ((64,), (6, 64)), ((2, 4, 32), (1, 4, 32))]


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("name", ["aten::add.out", "aten::sub.out"])
@pytest.mark.parametrize("shapes", BROADCASTS)
def test_add_sub(device, dtype, name, shapes):
    a, b = values(shapes[0], dtype), values(shapes[1], dtype)
    out = np.broadcast_shapes(shapes[0], shapes[1])
    check(device, name, tensor(a, dtype), tensor(b, dtype), 1, Out(dtype, out))
    check(device, name, tensor(a, dtype), tensor(b, dtype), 3, Out(dtype, out), tol=FMA)


@pytest.mark.parametrize("dtype", INTS + [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name", ["aten::add.out", "aten::sub.out"])
def test_add_sub_broadcast_wide_values(device, dtype, name):
    # Integers up to 60: uint8 subtraction wraps.
    a, b = wide((3, 1, 5), dtype, 0, 60), wide((4, 1), dtype, 0, 60)
    fn = np.add if name == "aten::add.out" else np.subtract
    check(device, name, a, b, 1, Out(dtype, (3, 4, 5)), expect=_apply(fn, a, b))


@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_])
@pytest.mark.parametrize("shapes", BROADCASTS)
def test_mul(device, dtype, shapes):
    a, b = values(shapes[0], dtype), values(shapes[1], dtype)
    check(device, "aten::mul.out", tensor(a, dtype), tensor(b, dtype),
          Out(dtype, np.broadcast_shapes(shapes[0], shapes[1])))


@pytest.mark.parametrize("dtype", INTS + [np.float16, np.float32, np.float64, np.bool_])
def test_mul_wide_values(device, dtype):
    a, b = wide((2, 3, 4), dtype, -10, 10), wide((3, 1), dtype, -10, 10)
    expected = np.logical_and(a, b) if dtype == np.bool_ else _apply(np.multiply, a, b)
    check(device, "aten::mul.out", a, b, Out(dtype, (2, 3, 4)), expect=expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.int64])
def test_integer_overflow_wraps(device, dtype):
    # Integers wrap modulo 2**bits (as in PyTorch and NumPy) instead of
    # overflowing, which would be undefined behaviour in C++.
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max - 3, info.max // 3 + 1, -1 if info.min else 7], dtype=dtype)
    b = np.array([info.max, -1 if info.min else 3, 7, info.max, info.min], dtype=dtype)
    n = a.shape
    with np.errstate(all="ignore"):
        check(device, "aten::mul.out", a, b, Out(dtype, n), expect=a * b)
        check(device, "aten::add.out", a, b, 1, Out(dtype, n), expect=a + b)
        check(device, "aten::add.out", a, b, 3, Out(dtype, n), expect=a + b * dtype(3))
        check(device, "aten::sub.out", a, b, 1, Out(dtype, n), expect=a - b)
        check(device, "aten::sub.out", a, b, 5, Out(dtype, n), expect=a - b * dtype(5))
        big = int(info.max // 2 + 1)
        check(device, "aten::mul.Scalar_out", a, big, Out(dtype, n), expect=a * dtype(big))
        check(device, "aten::add.Scalar_out", a, big, 3, Out(dtype, n),
              expect=a + dtype(big) * dtype(3))
        check(device, "aten::rsub.Scalar_out", a, big, 3, Out(dtype, n),
              expect=dtype(big) - a * dtype(3))


def test_add_alpha_and_bool(device):
    a, b = wide((4, 5), np.float32), wide((5,), np.float32)
    check(device, "aten::add.out", a, b, 2.5, Out(np.float32, (4, 5)),
          expect=a + np.float32(2.5) * b, tol=(1e-6, 0))
    # x - alpha * y may contract to one FMA, so compare with a tolerance.
    check(device, "aten::sub.out", a, b, -3, Out(np.float32, (4, 5)),
          expect=a - np.float32(-3) * b, tol=(1e-6, 0))
    x, y = wide((6,), np.bool_), wide((6,), np.bool_)
    check(device, "aten::add.out", x, y, 1, Out(np.bool_, (6,)), expect=x | y)
    check_error(device, "aten::sub.out", x, y, 1, Out(np.bool_, (6,)), exc=ValueError,
                match="sub.out")
    check_error(device, "aten::add.out", wide((3,), np.int32), wide((3,), np.int32), 1.5,
                Out(np.int32, (3,)), exc=ValueError, match="alpha")


def test_add_bool_alpha_promotion_and_out_cast(device):
    x, y = rand((6,), np.bool_), rand((6,), np.bool_)
    check(device, "aten::add.out", x, y, 1, Out(np.bool_, (6,)))
    a, b = rand((3, 4), np.uint8, 0, 100), rand((3, 4), np.int8, -50, 50)
    check(device, "aten::add.out", a, b, 1, Out(np.int16, (3, 4)))
    check(device, "aten::add.out", a, b, 2, Out(np.float32, (3, 4)))
    check(device, "aten::add.out", rand((4, 5)), rand((5,)), 2.5, Out(np.float32, (4, 5)),
          tol=FMA)
    # int8 arithmetic wraps in int8 before the store into a wider out.
    i = np.array([100, -100, 127], dtype=np.int8)
    check(device, "aten::add.out", i, i, 1, Out(np.int32, (3,)), expect=[-56, 56, -2])
    check(device, "aten::mul.out", rand((5,), np.int32), rand((5,), np.float16),
          Out(np.float16, (5,)))
    check(device, "aten::add.out", rand((5,), np.float32), tensor(rand((5,)), BF16), 1,
          Out(np.float32, (5,)))
    check_error(device, "aten::sub.out", x, y, 1, Out(np.bool_, (6,)), exc=ValueError,
                match="sub.out")
    check_error(device, "aten::add.out", rand((3,), np.int32), rand((3,), np.int32), 1.5,
                Out(np.int32, (3,)), exc=ValueError, match="alpha")
    check_error(device, "aten::add.out", rand((3,)), rand((3,)), 1, Out(np.int32, (3,)),
                exc=ValueError, match="cannot store")


def test_promotion_and_out_cast(device):
    a, b = wide((3, 4), np.uint8, 0, 100), wide((3, 4), np.int8)
    # u8 + i8 -> i16, stored in an i16 out; also into f32 (castable).
    check(device, "aten::add.out", a, b, 1, Out(np.int16, (3, 4)),
          expect=a.astype(np.int16) + b)
    check(device, "aten::add.out", a, b, 1, Out(np.float32, (3, 4)),
          expect=(a.astype(np.int16) + b).astype(np.float32))
    # int + f16 -> f16, computed in f32.
    i, h = wide((5,), np.int32), wide((5,), np.float16)
    check(device, "aten::mul.out", i, h, Out(np.float16, (5,)),
          expect=(i.astype(np.float32) * h.astype(np.float32)).astype(np.float16))
    check_error(device, "aten::add.out", h, h, 1, Out(np.int32, (5,)), exc=ValueError,
                match="cannot store")
    check_error(device, "aten::add.out", a, b, 1, Out(np.bool_, (3, 4)), exc=ValueError)


def test_bf16_and_f16_mix_computes_in_float(device):
    x, y = bf16(wide((8,), np.float32)), wide((8,), np.float16)
    check(device, "aten::add.out", T(x, bf16=True), y, 1, Out(BF16, (8,)),
          expect=bf16(x + y.astype(np.float32)))


@pytest.mark.parametrize("out_order", [None, CL])
def test_channels_last_inputs_and_out(device, out_order):
    a, b = wide((2, 3, 4, 5), np.float32), wide((2, 3, 4, 5), np.float32)
    check(device, "aten::mul.out", T(a, dim_order=CL), b,
          Out(np.float32, a.shape, dim_order=out_order), expect=a * b)
    c = wide((3, 1, 1), np.float32)  # per-channel broadcast into channels-last
    check(device, "aten::sub.out", T(a, dim_order=CL), c, 1,
          Out(np.float32, a.shape, dim_order=CL), expect=a - c)


@pytest.mark.parametrize("order", [None, CL])
def test_same_layout_operands_every_dtype_and_mixed(device, order):
    # Operands of one shape and dim order take one flat loop (the common
    # case); with other dtypes they still convert on load and store.
    for dtype in INTS + [np.float16, np.float32, np.float64]:
        a, b = wide((2, 3, 4, 5), dtype, 0, 60), wide((2, 3, 4, 5), dtype, 0, 60)
        check(device, "aten::add.out", T(a, dim_order=order), T(b, dim_order=order), 1,
              Out(dtype, a.shape, dim_order=order), expect=_apply(np.add, a, b))
    a, b = wide((2, 3, 4, 5), np.int16), wide((2, 3, 4, 5), np.float32)
    check(device, "aten::mul.out", T(a, dim_order=order), T(b, dim_order=order),
          Out(np.float64, a.shape, dim_order=order),
          expect=(a.astype(np.float32) * b).astype(np.float64))
    # Same sizes in another memory order than the output: reordered.
    c = wide((2, 3, 4, 5), np.int16)
    check(device, "aten::sub.out", T(a, dim_order=order), c, 2,
          Out(np.int16, a.shape, dim_order=None if order else CL), expect=a - 2 * c)


@pytest.mark.parametrize("b_shape", [(300, 517), (517,)])
@pytest.mark.parametrize("name", ["aten::add.out", "aten::sub.out"])
def test_large_over_threads(device, b_shape, name):
    a, b = wide((300, 517), np.float32), wide(b_shape, np.float32)
    fn = np.add if name == "aten::add.out" else np.subtract
    check(device, name, a, b, 1, Out(np.float32, a.shape), expect=fn(a, b), num_threads=4)


def test_empty_zero_dim_and_dynamic_out(device):
    e = np.zeros((0, 3), np.float32)
    check(device, "aten::add.out", e, np.ones(3, np.float32), 1, Out(np.float32, (0, 3)),
          expect=np.zeros((0, 3)))
    s = np.array(2.5, np.float32)
    check(device, "aten::mul.out", s, np.array(4.0, np.float32), Out(np.float32, ()),
          expect=np.array(10.0))
    x = wide((2, 3), np.float32)
    check(device, "aten::add.out", x, s, 1,
          Out(np.float32, (4, 4), dynamic=True, capacity=(4, 4)), expect=x + s)
    check_error(device, "aten::add.out", wide((2, 3), np.float32), wide((4,), np.float32), 1,
                Out(np.float32, (2, 3)), exc=ValueError)


@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
def test_binary_dim_orders(device, order, dtype):
    a, b = values((2, 3, 4, 5), dtype), values((2, 3, 4, 5), dtype)
    for out_order in [None, CL]:
        check(device, "aten::add.out", tensor(a, dtype, order), tensor(b, dtype), 1,
              Out(dtype, a.shape, dim_order=out_order))
        check(device, "aten::mul.out", tensor(a, dtype, CL), tensor(b, dtype, order),
              Out(dtype, a.shape, dim_order=out_order))
    bias = values((3, 1, 1), dtype)
    check(device, "aten::add.out", tensor(a, dtype, CL), tensor(bias, dtype), 1,
          Out(dtype, a.shape, dim_order=CL))


# ---- scalar overloads ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_scalar_ops(device, dtype):
    a = tensor(values((4, 7), dtype), dtype)
    int_like = is_int(dtype)
    s = 3 if int_like else 1.5
    check(device, "aten::add.Scalar_out", a, s, 2, Out(dtype, (4, 7)))
    check(device, "aten::sub.Scalar_out", a, s, 1, Out(dtype, (4, 7)))
    check(device, "aten::mul.Scalar_out", a, s, Out(dtype, (4, 7)))
    check(device, "aten::rsub.Scalar_out", a, s, 2, Out(dtype, (4, 7)), tol=FMA)
    if not int_like:
        check(device, "aten::div.Scalar_out", a, 0.75, Out(dtype, (4, 7)))
    check(device, "aten::maximum.out", a, tensor(values((7,), dtype), dtype), Out(dtype, (4, 7)))
    check(device, "aten::minimum.out", a, tensor(values((4, 1), dtype), dtype),
          Out(dtype, (4, 7)))


def test_scalar_promotion(device):
    check(device, "aten::add.Scalar_out", rand((5,), np.int32, -9, 9), 1.5, 1,
          Out(np.float32, (5,)))
    check(device, "aten::mul.Scalar_out", rand((5,), np.bool_), 3, Out(np.int64, (5,)))
    check(device, "aten::add.Scalar_out", rand((5,), np.bool_), True, 1, Out(np.bool_, (5,)))
    check(device, "aten::div.Scalar_out", rand((5,), np.int64, -9, 9), 2, Out(np.float32, (5,)))


def test_mul_scalar_promotion(device):
    x = wide((3, 4), np.float32)
    check(device, "aten::mul.Scalar_out", x, 0.5, Out(np.float32, x.shape),
          expect=x * np.float32(0.5))
    h = wide((6,), np.float16)
    check(device, "aten::mul.Scalar_out", h, 0.1, Out(np.float16, h.shape),
          expect=(h.astype(np.float32) * np.float32(0.1)).astype(np.float16))
    i = wide((5,), np.int32)
    check(device, "aten::mul.Scalar_out", i, 2.5, Out(np.float32, (5,)),
          expect=i.astype(np.float32) * np.float32(2.5))
    check(device, "aten::mul.Scalar_out", i, 3, Out(np.int32, (5,)), expect=i * 3)
    b = wide((5,), np.bool_)
    check(device, "aten::mul.Scalar_out", b, 3, Out(np.int64, (5,)), expect=b.astype(np.int64) * 3)
    check_error(device, "aten::mul.Scalar_out", i, 2.5, Out(np.float64, (5,)), exc=ValueError,
                match="out must be float32")
    check_error(device, "aten::mul.Scalar_out", i, 2, Out(np.int64, (5,)), exc=ValueError,
                match="out must be int32")


def test_add_sub_rsub_scalar(device):
    x = wide((2, 5), np.float32)
    check(device, "aten::add.Scalar_out", x, 1.5, 2, Out(np.float32, x.shape),
          expect=x + np.float32(3.0), tol=(1e-7, 0))
    check(device, "aten::sub.Scalar_out", x, 1.5, 1, Out(np.float32, x.shape),
          expect=x - np.float32(1.5), tol=(1e-7, 0))
    check(device, "aten::rsub.Scalar_out", x, 1.0, 2, Out(np.float32, x.shape),
          expect=np.float32(1.0) - 2 * x, tol=(1e-6, 0))
    i = wide((4,), np.int16)
    check(device, "aten::rsub.Scalar_out", i, 7, 1, Out(np.int16, (4,)), expect=7 - i)
    check(device, "aten::add.Scalar_out", i, 7, 2, Out(np.int16, (4,)), expect=i + 14)
    check_error(device, "aten::sub.Scalar_out", wide((3,), np.bool_), True, 1, Out(np.bool_, (3,)),
                exc=ValueError)
    check_error(device, "aten::add.Scalar_out", i, 7, 0.5, Out(np.int16, (4,)), exc=ValueError)


# ---- division -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div(device, dtype, mode):
    a, b = values((3, 8), dtype, -20, 20), nonzero_values((8,), dtype)
    out_dtype = dtype if (is_float(dtype) or mode is not None) else np.float32
    if mode is None:
        check(device, "aten::div.out", tensor(a, dtype), tensor(b, dtype), Out(out_dtype, (3, 8)))
    check(device, "aten::div.out_mode", tensor(a, dtype), tensor(b, dtype), mode,
          Out(out_dtype, (3, 8)))
    if mode is not None:
        check(device, "aten::div.Scalar_mode_out", tensor(a, dtype), -3, mode, Out(dtype, (3, 8)))


def test_div_true_division(device):
    a, b = wide((3, 4), np.int32), wide((4,), np.int32, 1, 9)
    check(device, "aten::div.out", a, b, Out(np.float32, (3, 4)),
          expect=a.astype(np.float32) / b.astype(np.float32), tol=(1e-7, 0))
    f, d = wide((4,), np.float32), wide((4,), np.float64)
    check(device, "aten::div.out", f, d, Out(np.float64, (4,)), expect=f.astype(np.float64) / d)
    check(device, "aten::div.out", np.array([1, -1, 0], np.int64), np.zeros(3, np.int64),
          Out(np.float32, (3,)), expect=[np.inf, -np.inf, np.nan])
    check_error(device, "aten::div.out", a, b, Out(np.int32, (3, 4)), exc=ValueError)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_div_floor_and_trunc_integers(device, dtype):
    a = wide((6, 7), dtype, -100, 100)
    b = wide((7,), dtype, -9, 9)
    b[b == 0] = 3
    check(device, "aten::div.out_mode", a, b, "floor", Out(dtype, a.shape),
          expect=np.floor_divide(a, b))
    check(device, "aten::div.out_mode", a, b, "trunc", Out(dtype, a.shape),
          expect=np.trunc(a.astype(np.float64) / b).astype(dtype))


def test_div_mode_edge_cases(device):
    m = np.iinfo(np.int32).min
    a, b = np.array([m, 7, -7], np.int32), np.array([-1, -2, 2], np.int32)
    check(device, "aten::div.out_mode", a, b, "floor", Out(np.int32, (3,)), expect=[m, -4, -4])
    check(device, "aten::div.out_mode", a, b, "trunc", Out(np.int32, (3,)), expect=[m, -3, -3])
    check_error(device, "aten::div.out_mode", a, b, "round", Out(np.int32, (3,)), exc=ValueError,
                match="rounding_mode")
    check_error(device, "aten::div.out_mode", a > 0, b > 0, "floor", Out(np.bool_, (3,)),
                exc=ValueError)
    # None: true division.
    check(device, "aten::div.out_mode", a, b, None, Out(np.float32, (3,)),
          expect=a.astype(np.float32) / b, tol=(1e-7, 0))


@cpu_only(ZERO_DIVISION)
def test_integer_division_by_zero(device):
    a = np.array([7, -7, 5], np.int32)
    check_error(device, "aten::div.out_mode", a, np.array([1, 0, 1], np.int32), "floor",
                Out(np.int32, (3,)), exc=ValueError, match="division by zero")
    for dtype in (np.uint8, np.int16, np.int64):
        x, y = wide((4, 6), dtype), wide((6,), dtype, -7, 7)
        y[y == 0] = 5
        y[2] = 0
        check_error(device, "aten::floor_divide.out", x, y, Out(dtype, x.shape), exc=ValueError,
                    match="division by zero")
    x = np.array([-7, 7, -7, 7, 0, -1], np.int64)
    for name in ("aten::remainder.Tensor_out", "aten::fmod.Tensor_out"):
        check_error(device, name, x, np.zeros(1, np.int64), Out(np.int64, (6,)), exc=ValueError,
                    match="division by zero")


def test_div_floor_float_python_semantics(device):
    a = np.array([1.0, -1.0, 7.5, -7.5, 1.0, 0.0, -0.0, 5.0], np.float64)
    b = np.array([0.1, 0.1, -2.0, 2.0, 0.0, -3.0, 3.0, np.inf], np.float64)
    expected = _apply(np.floor_divide, a, b)
    check(device, "aten::div.out_mode", a, b, "floor", Out(np.float64, a.shape), expect=expected,
          signed_zeros=True)
    check(device, "aten::floor_divide.out", a, b, Out(np.float64, a.shape), expect=expected)


def test_div_scalar_overloads(device):
    i = wide((5,), np.int64)
    check(device, "aten::div.Scalar_out", i, 4, Out(np.float32, (5,)),
          expect=i.astype(np.float32) / 4, tol=(1e-7, 0))
    check_error(device, "aten::div.Scalar_out", i, 4, Out(np.float64, (5,)), exc=ValueError)
    check(device, "aten::div.Scalar_mode_out", i, -3, "floor", Out(np.int64, (5,)), expect=i // -3)
    check(device, "aten::div.Scalar_mode_out", i, 2.5, "trunc", Out(np.float32, (5,)),
          expect=np.trunc(i.astype(np.float32) / np.float32(2.5)))
    check_error(device, "aten::div.Scalar_mode_out", i, 0, "trunc", Out(np.int64, (5,)),
                exc=ValueError, match="division by zero")
    f = wide((5,), np.float32)
    check(device, "aten::div.Scalar_mode_out", f, 3, None, Out(np.float32, (5,)),
          expect=f / np.float32(3), tol=(1e-7, 0))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64])
def test_floor_divide_ints(device, dtype):
    a, b = wide((4, 6), dtype), wide((6,), dtype, -7, 7)
    b[b == 0] = 5
    check(device, "aten::floor_divide.out", a, b, Out(dtype, a.shape), expect=a // b)


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("name", ["aten::floor_divide.out", "aten::remainder.Tensor_out",
                                  "aten::fmod.Tensor_out"])
def test_floor_divide_remainder(device, dtype, name):
    a, b = values((5, 6), dtype, -20, 20), nonzero_values((5, 1), dtype)
    check(device, name, tensor(a, dtype), tensor(b, dtype), Out(dtype, (5, 6)))


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("name", ["aten::remainder.Scalar_out", "aten::fmod.Scalar_out"])
def test_remainder_scalar(device, dtype, name):
    a = values((5, 6), dtype, -20, 20)
    check(device, name, tensor(a, dtype), -3, Out(dtype, (5, 6)))
    check_error(device, name, rand((3,), np.int32, -5, 5), 0, Out(np.int32, (3,)),
                exc=ValueError, match="zero")


def test_float_division_by_zero_and_nan(device):
    a = np.array([1.0, -1.0, 0.0, np.nan, 5.5, -7.25], dtype=np.float32)
    b = np.array([0.0, 0.0, 0.0, 1.0, -2.0, 2.0], dtype=np.float32)
    for mode in [None, "trunc", "floor"]:
        check(device, "aten::div.out_mode", a, b, mode, Out(np.float32, (6,)))
    check(device, "aten::floor_divide.out", a, b, Out(np.float32, (6,)))
    check(device, "aten::remainder.Tensor_out", a, b, Out(np.float32, (6,)))
    check(device, "aten::fmod.Tensor_out", a, b, Out(np.float32, (6,)))
    check(device, "aten::maximum.out", a, b, Out(np.float32, (6,)))
    check(device, "aten::minimum.out", a, b, Out(np.float32, (6,)))


# ---- remainder / fmod ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.float32, np.float64])
def test_remainder_and_fmod_signs(device, dtype):
    a, b = wide((5, 6), dtype), wide((6,), dtype, -9, 9)
    b[b == 0] = 4
    tol = (1e-6, 1e-5)
    check(device, "aten::remainder.Tensor_out", a, b, Out(dtype, a.shape),
          expect=np.remainder(a, b), tol=tol)
    check(device, "aten::fmod.Tensor_out", a, b, Out(dtype, a.shape), expect=np.fmod(a, b),
          tol=tol)
    check(device, "aten::remainder.Scalar_out", a, -3, Out(dtype, a.shape),
          expect=np.remainder(a, dtype(-3)), tol=tol)
    check(device, "aten::fmod.Scalar_out", a, -3, Out(dtype, a.shape),
          expect=np.fmod(a, dtype(-3)), tol=tol)


def test_remainder_fixture_pattern_and_zero(device):
    a = np.array([-7, 7, -7, 7, 0, -1], np.int64)
    b = np.array([3, -3, -3, 3, 5, 4], np.int64)
    check(device, "aten::remainder.Tensor_out", a, b, Out(np.int64, (6,)),
          expect=[2, -2, -1, 1, 0, 3])
    for name in ("aten::remainder.Scalar_out", "aten::fmod.Scalar_out"):
        check_error(device, name, a, 0, Out(np.int64, (6,)), exc=ValueError,
                    match="division by zero")
    # Float divisor zero is NaN, not an error; int tensor with float scalar is float.
    check(device, "aten::remainder.Scalar_out", a, 0.0, Out(np.float32, (6,)),
          expect=np.full(6, np.nan))
    check_error(device, "aten::remainder.Tensor_out", a > 0, b > 0, Out(np.bool_, (6,)),
                exc=ValueError)


# ---- pow ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_pow(device, dtype):
    int_like = is_int(dtype)
    a = values((4, 5), dtype, 0 if int_like else 0.1, 4)
    e = values((5,), dtype, 0, 3)
    check(device, "aten::pow.Tensor_Tensor_out", tensor(a, dtype), tensor(e, dtype),
          Out(dtype, (4, 5)), tol=LIBM)
    for s in ([0, 1, 2, 3, 5] if int_like else [2.0, 3.0, 1.0, 0.5, -1.0, 1.7]):
        check(device, "aten::pow.Tensor_Scalar_out", tensor(a, dtype), s, Out(dtype, (4, 5)),
              tol=LIBM)
    check(device, "aten::pow.Scalar_out", 2, tensor(e, dtype), Out(dtype, (5,)), tol=LIBM)
    check(device, "aten::pow.Scalar_out", 1.5, tensor(e, dtype),
          Out(np.float32 if int_like else dtype, (5,)), tol=LIBM)


def test_pow_integer_negative_exponent(device):
    base = np.array([1, -1, 2, -2, 0, 3], dtype=np.int64)
    exp = np.array([-1, -3, -1, 2, 3, -2], dtype=np.int64)
    check(device, "aten::pow.Tensor_Tensor_out", base, exp, Out(np.int64, (6,)),
          expect=[1, -1, 0, 4, 0, 0])


def test_pow_tensor_scalar(device):
    x = wide((3, 7), np.float32)
    check(device, "aten::pow.Tensor_Scalar_out", x, 2, Out(np.float32, x.shape), expect=x * x)
    check(device, "aten::pow.Tensor_Scalar_out", np.abs(x), 1.7, Out(np.float32, x.shape),
          expect=np.abs(x) ** np.float32(1.7), tol=(1e-6, 0))
    check(device, "aten::pow.Tensor_Scalar_out", np.abs(x), 0.5, Out(np.float32, x.shape),
          expect=np.sqrt(np.abs(x)), tol=(1e-6, 0))
    i = wide((8,), np.int64, -5, 5)
    check(device, "aten::pow.Tensor_Scalar_out", i, 3, Out(np.int64, (8,)), expect=i ** 3)
    big = np.array([3, -3, 2], np.int64)
    check(device, "aten::pow.Tensor_Scalar_out", big, 39, Out(np.int64, (3,)),
          expect=[3 ** 39, -(3 ** 39), 2 ** 39])
    check(device, "aten::pow.Tensor_Scalar_out", i, 0.5, Out(np.float32, (8,)),
          expect=_apply(np.power, np.float32(i), np.float32(0.5)), tol=(1e-6, 0))
    check(device, "aten::pow.Tensor_Scalar_out", np.array([1, -1, -1, 2, 0], np.int32), -3,
          Out(np.int32, (5,)), expect=[1, -1, -1, 0, 0])
    h = wide((5,), np.float16)
    check(device, "aten::pow.Tensor_Scalar_out", h, 2, Out(np.float16, (5,)),
          expect=(h.astype(np.float32) ** 2).astype(np.float16))
    check_error(device, "aten::pow.Tensor_Scalar_out", x, 2, Out(np.int32, x.shape),
                exc=ValueError)
    check_error(device, "aten::pow.Tensor_Scalar_out", x > 0, True, Out(np.bool_, x.shape),
                exc=ValueError)


def test_pow_tensor_tensor_and_scalar_base(device):
    a, e = np.abs(wide((4, 5), np.float64)) + 0.1, wide((5,), np.float64) / 10
    check(device, "aten::pow.Tensor_Tensor_out", a, e, Out(np.float64, a.shape), expect=a ** e,
          tol=(1e-14, 0))
    ia, ie = wide((4, 5), np.int32, -4, 4), wide((5,), np.int32, 0, 6)
    check(device, "aten::pow.Tensor_Tensor_out", ia, ie, Out(np.int32, ia.shape), expect=ia ** ie)
    check(device, "aten::pow.Scalar_out", 2.0, e, Out(np.float64, e.shape), expect=2.0 ** e,
          tol=(1e-14, 0))
    check(device, "aten::pow.Scalar_out", 2, ie, Out(np.int32, ie.shape), expect=2 ** ie)
    check(device, "aten::pow.Scalar_out", 2.0, ie, Out(np.float32, ie.shape),
          expect=np.float32(2.0) ** ie.astype(np.float32), tol=(1e-7, 0))


# ---- maximum / minimum / atan2 ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, np.float32, np.float16, np.bool_])
def test_maximum_minimum(device, dtype):
    a, b = wide((3, 4), dtype), wide((4,), dtype)
    check(device, "aten::maximum.out", a, b, Out(dtype, a.shape), expect=np.maximum(a, b))
    check(device, "aten::minimum.out", a, b, Out(dtype, a.shape), expect=np.minimum(a, b))


def test_maximum_minimum_nan_and_mixed(device):
    a = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    b = np.array([np.nan, 2.0, 1.0, np.nan], np.float32)
    for name, fn in (("aten::maximum.out", np.maximum), ("aten::minimum.out", np.minimum)):
        check(device, name, a, b, Out(np.float32, (4,)), expect=fn(a, b))
    i = np.array([1, 5, -3, 9], np.int32)
    check(device, "aten::maximum.out", i, a, Out(np.float32, (4,)),
          expect=np.maximum(i.astype(np.float32), a))


@pytest.mark.parametrize("dtype", FLOATS + [np.int32])
def test_atan2(device, dtype):
    out = np.float32 if dtype == np.int32 else dtype
    check(device, "aten::atan2.out", tensor(values((3, 4), dtype), dtype),
          tensor(values((4,), dtype), dtype), Out(out, (3, 4)), tol=LIBM)


def test_atan2_promotion_and_errors(device):
    y, x = wide((3, 4), np.float32), wide((4,), np.float32)
    check(device, "aten::atan2.out", y, x, Out(np.float32, y.shape), expect=np.arctan2(y, x),
          tol=(1e-6, 0))
    iy = wide((4,), np.int32)
    check(device, "aten::atan2.out", iy, iy + 100, Out(np.float64, (4,)),
          expect=np.arctan2(np.float32(iy), np.float32(iy + 100)), tol=(1e-6, 0))
    check_error(device, "aten::atan2.out", y, x, Out(np.int32, y.shape), exc=ValueError)


# ---- bitwise ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INTS + [np.bool_])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise(device, dtype, op):
    a, b = rand((3, 5), dtype, -100, 100), rand((5,), dtype, -100, 100)
    check(device, f"aten::bitwise_{op}.Tensor_out", a, b, Out(dtype, (3, 5)))
    s = True if dtype == np.bool_ else 6
    check(device, f"aten::bitwise_{op}.Scalar_out", a, s, Out(dtype, (3, 5)))
    check_error(device, f"aten::bitwise_{op}.Tensor_out", rand((3,)), rand((3,)),
                Out(np.float32, (3,)), exc=ValueError)


@pytest.mark.parametrize("dtype", INTS + [np.bool_])
@pytest.mark.parametrize("op,fn", [("and", np.bitwise_and), ("or", np.bitwise_or),
                                   ("xor", np.bitwise_xor)])
def test_bitwise_wide_values(device, dtype, op, fn):
    a, b = wide((3, 5), dtype, -100, 100), wide((5,), dtype, -100, 100)
    check(device, f"aten::bitwise_{op}.Tensor_out", a, b, Out(dtype, a.shape), expect=fn(a, b))
    s = True if dtype == np.bool_ else 5
    check(device, f"aten::bitwise_{op}.Scalar_out", a, s, Out(dtype, a.shape),
          expect=fn(a, dtype(s)))


def test_bitwise_promotion_and_errors(device):
    c, a = wide((4,), np.bool_), wide((4,), np.int64)
    check(device, "aten::bitwise_or.Tensor_out", c, a < 0, Out(np.bool_, (4,)), expect=c | (a < 0))
    check(device, "aten::bitwise_or.Tensor_out", c, a, Out(np.int64, (4,)),
          expect=c.astype(np.int64) | a)
    check_error(device, "aten::bitwise_and.Tensor_out", a.astype(np.float32), a,
                Out(np.float32, (4,)), exc=ValueError)
    check_error(device, "aten::bitwise_and.Scalar_out", a, 1.5, Out(np.float32, (4,)),
                exc=ValueError)

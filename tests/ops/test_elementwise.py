"""CUDA elementwise kernels against the CPU kernels: binary arithmetic,
unary math, comparisons / logical / where, activations. Creation and copy
ops are in test_creation_copy.py.

Integer divisions never divide by zero here: the CPU raises for them, the
CUDA kernels (which cannot look at device data without a wait) give 0."""

import numpy as np
import pytest

import harness
from harness import Out, T, call_kernel, check, perf, rand

pytestmark = harness.needs_cuda

CL = (0, 2, 3, 1)
INTS = [np.uint8, np.int8, np.int16, np.int32, np.int64]
FLOATS = [np.float32, np.float16, "bfloat16", np.float64]


def tensor(x, dtype, order=None):
    """x (any numeric array) as a T of `dtype` ("bfloat16" allowed)."""
    if dtype == "bfloat16":
        return T(np.asarray(x, dtype=np.float32), dim_order=order, bf16=True)
    return T(np.asarray(x).astype(dtype), dim_order=order)


def values(shape, dtype, low=-3.0, high=3.0):
    if dtype == "bfloat16":
        return rand(shape, np.float32, low, high)
    return rand(shape, dtype, low, high)


def nonzero(shape, dtype):
    """Divisors: no zeros for integers, none near zero for floats."""
    x = values(shape, dtype, 1, 9)
    if dtype != "bfloat16" and np.dtype(dtype) == np.bool_:
        return np.ones(shape, dtype=bool)
    sign = np.where(rand(shape, np.bool_), -1, 1)
    if dtype != "bfloat16" and np.dtype(dtype).kind == "u":
        return x
    return (x * sign).astype(x.dtype)


def cuda_raises(name, *args, match=None):
    with pytest.raises(Exception, match=match):
        call_kernel(name, *args, device="cuda:0")


# ---- binary ----------------------------------------------------------------------------------

# (6, 64) + (64,) and (2, 4, 32) + (1, 4, 32) take the vectorised kernel with
# a repeating (bias) input.
BROADCASTS = [((3, 4, 5), (3, 4, 5)), ((3, 1, 5), (4, 1)), ((2, 3, 4), ()), ((), (5,)),
              ((1000,), (1000,)), ((7, 33), (33,)), ((0, 4), (4,)), ((6, 64), (64,)),
              ((64,), (6, 64)), ((2, 4, 32), (1, 4, 32))]


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("name", ["aten::add.out", "aten::sub.out"])
@pytest.mark.parametrize("shapes", BROADCASTS)
def test_add_sub(dtype, name, shapes):
    a, b = values(shapes[0], dtype), values(shapes[1], dtype)
    out = np.broadcast_shapes(shapes[0], shapes[1])
    check(name, tensor(a, dtype), tensor(b, dtype), 1, Out(dtype, out))
    check(name, tensor(a, dtype), tensor(b, dtype), 3, Out(dtype, out))


@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_])
@pytest.mark.parametrize("shapes", BROADCASTS)
def test_mul(dtype, shapes):
    a, b = values(shapes[0], dtype), values(shapes[1], dtype)
    check("aten::mul.out", tensor(a, dtype), tensor(b, dtype),
          Out(dtype, np.broadcast_shapes(shapes[0], shapes[1])))


def test_add_bool_alpha_promotion_and_out_cast():
    x, y = rand((6,), np.bool_), rand((6,), np.bool_)
    check("aten::add.out", x, y, 1, Out(np.bool_, (6,)))
    a, b = rand((3, 4), np.uint8, 0, 100), rand((3, 4), np.int8, -50, 50)
    check("aten::add.out", a, b, 1, Out(np.int16, (3, 4)))
    check("aten::add.out", a, b, 2, Out(np.float32, (3, 4)))
    check("aten::add.out", rand((4, 5)), rand((5,)), 2.5, Out(np.float32, (4, 5)))
    # int8 arithmetic wraps in int8 before the store into a wider out.
    i = np.array([100, -100, 127], dtype=np.int8)
    check("aten::add.out", i, i, 1, Out(np.int32, (3,)))
    check("aten::mul.out", rand((5,), np.int32), rand((5,), np.float16), Out(np.float16, (5,)))
    check("aten::add.out", rand((5,), np.float32), tensor(rand((5,)), "bfloat16"), 1,
          Out(np.float32, (5,)))
    cuda_raises("aten::sub.out", x, y, 1, Out(np.bool_, (6,)), match="sub.out")
    cuda_raises("aten::add.out", rand((3,), np.int32), rand((3,), np.int32), 1.5,
                Out(np.int32, (3,)), match="alpha")
    cuda_raises("aten::add.out", rand((3,)), rand((3,)), 1, Out(np.int32, (3,)))


@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bfloat16"])
def test_binary_dim_orders(order, dtype):
    a, b = values((2, 3, 4, 5), dtype), values((2, 3, 4, 5), dtype)
    for out_order in [None, CL]:
        check("aten::add.out", tensor(a, dtype, order), tensor(b, dtype), 1,
              Out(dtype, a.shape, dim_order=out_order))
        check("aten::mul.out", tensor(a, dtype, CL), tensor(b, dtype, order),
              Out(dtype, a.shape, dim_order=out_order))
    bias = values((3, 1, 1), dtype)
    check("aten::add.out", tensor(a, dtype, CL), tensor(bias, dtype), 1,
          Out(dtype, a.shape, dim_order=CL))


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_scalar_ops(dtype):
    a = tensor(values((4, 7), dtype), dtype)
    int_like = dtype != "bfloat16" and np.dtype(dtype).kind in "iu"
    s = 3 if int_like else 1.5
    check("aten::add.Scalar_out", a, s, 2, Out(dtype, (4, 7)))
    check("aten::sub.Scalar_out", a, s, 1, Out(dtype, (4, 7)))
    check("aten::mul.Scalar_out", a, s, Out(dtype, (4, 7)))
    check("aten::rsub.Scalar_out", a, s, 2, Out(dtype, (4, 7)))
    if not int_like:
        check("aten::div.Scalar_out", a, 0.75, Out(dtype, (4, 7)))
    check("aten::maximum.out", a, tensor(values((7,), dtype), dtype), Out(dtype, (4, 7)))
    check("aten::minimum.out", a, tensor(values((4, 1), dtype), dtype), Out(dtype, (4, 7)))


def test_scalar_promotion():
    check("aten::add.Scalar_out", rand((5,), np.int32, -9, 9), 1.5, 1, Out(np.float32, (5,)))
    check("aten::mul.Scalar_out", rand((5,), np.bool_), 3, Out(np.int64, (5,)))
    check("aten::add.Scalar_out", rand((5,), np.bool_), True, 1, Out(np.bool_, (5,)))
    check("aten::div.Scalar_out", rand((5,), np.int64, -9, 9), 2, Out(np.float32, (5,)))


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div(dtype, mode):
    a, b = values((3, 8), dtype, -20, 20), nonzero((8,), dtype)
    float_like = dtype == "bfloat16" or np.dtype(dtype).kind == "f"
    out_dtype = dtype if (float_like or mode is not None) else np.float32
    if mode is None:
        check("aten::div.out", tensor(a, dtype), tensor(b, dtype), Out(out_dtype, (3, 8)))
    check("aten::div.out_mode", tensor(a, dtype), tensor(b, dtype), mode, Out(out_dtype, (3, 8)))
    if mode is not None:
        check("aten::div.Scalar_mode_out", tensor(a, dtype), -3, mode, Out(dtype, (3, 8)))


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("name", ["aten::floor_divide.out", "aten::remainder.Tensor_out",
                                  "aten::fmod.Tensor_out"])
def test_floor_divide_remainder(dtype, name):
    a, b = values((5, 6), dtype, -20, 20), nonzero((5, 1), dtype)
    check(name, tensor(a, dtype), tensor(b, dtype), Out(dtype, (5, 6)))


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("name", ["aten::remainder.Scalar_out", "aten::fmod.Scalar_out"])
def test_remainder_scalar(dtype, name):
    a = values((5, 6), dtype, -20, 20)
    check(name, tensor(a, dtype), -3, Out(dtype, (5, 6)))
    cuda_raises(name, rand((3,), np.int32, -5, 5), 0, Out(np.int32, (3,)), match="zero")


def test_float_division_by_zero_and_nan():
    a = np.array([1.0, -1.0, 0.0, np.nan, 5.5, -7.25], dtype=np.float32)
    b = np.array([0.0, 0.0, 0.0, 1.0, -2.0, 2.0], dtype=np.float32)
    for mode in [None, "trunc", "floor"]:
        check("aten::div.out_mode", a, b, mode, Out(np.float32, (6,)))
    check("aten::floor_divide.out", a, b, Out(np.float32, (6,)))
    check("aten::remainder.Tensor_out", a, b, Out(np.float32, (6,)))
    check("aten::fmod.Tensor_out", a, b, Out(np.float32, (6,)))
    check("aten::maximum.out", a, b, Out(np.float32, (6,)))
    check("aten::minimum.out", a, b, Out(np.float32, (6,)))


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_pow(dtype):
    int_like = dtype != "bfloat16" and np.dtype(dtype).kind in "iu"
    a = values((4, 5), dtype, 0 if int_like else 0.1, 4)
    e = values((5,), dtype, 0, 3)
    check("aten::pow.Tensor_Tensor_out", tensor(a, dtype), tensor(e, dtype), Out(dtype, (4, 5)))
    for s in ([0, 1, 2, 3, 5] if int_like else [2.0, 3.0, 1.0, 0.5, -1.0, 1.7]):
        check("aten::pow.Tensor_Scalar_out", tensor(a, dtype), s, Out(dtype, (4, 5)))
    check("aten::pow.Scalar_out", 2, tensor(e, dtype), Out(dtype, (5,)))
    check("aten::pow.Scalar_out", 1.5, tensor(e, dtype),
          Out(np.float32 if int_like else dtype, (5,)))


def test_pow_integer_negative_exponent():
    base = np.array([1, -1, 2, -2, 0, 3], dtype=np.int64)
    exp = np.array([-1, -3, -1, 2, 3, -2], dtype=np.int64)
    check("aten::pow.Tensor_Tensor_out", base, exp, Out(np.int64, (6,)))


@pytest.mark.parametrize("dtype", FLOATS + [np.int32])
def test_atan2(dtype):
    out = np.float32 if dtype == np.int32 else dtype
    check("aten::atan2.out", tensor(values((3, 4), dtype), dtype),
          tensor(values((4,), dtype), dtype), Out(out, (3, 4)))


@pytest.mark.parametrize("dtype", INTS + [np.bool_])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise(dtype, op):
    a, b = rand((3, 5), dtype, -100, 100), rand((5,), dtype, -100, 100)
    check(f"aten::bitwise_{op}.Tensor_out", a, b, Out(dtype, (3, 5)))
    s = True if dtype == np.bool_ else 6
    check(f"aten::bitwise_{op}.Scalar_out", a, s, Out(dtype, (3, 5)))
    cuda_raises(f"aten::bitwise_{op}.Tensor_out", rand((3,)), rand((3,)), Out(np.float32, (3,)))


# ---- unary -----------------------------------------------------------------------------------

FLOAT_UNARY = ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "reciprocal",
               "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
               "acosh", "atanh", "erf", "sigmoid"]
DOMAIN = {"log": (0.1, 5), "log1p": (0.1, 5), "log2": (0.1, 5), "log10": (0.1, 5),
          "sqrt": (0.1, 5), "rsqrt": (0.1, 5), "reciprocal": (0.5, 5), "asin": (-0.9, 0.9),
          "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9), "acosh": (1.1, 5), "tan": (-1.2, 1.2)}


@pytest.mark.parametrize("name", FLOAT_UNARY)
@pytest.mark.parametrize("dtype", FLOATS)
def test_float_unary(name, dtype):
    lo, hi = DOMAIN.get(name, (-3, 3))
    x = values((3, 4, 5, 6), dtype, lo, hi)
    check(f"aten::{name}.out", tensor(x, dtype), Out(dtype, x.shape))
    check(f"aten::{name}.out", tensor(x, dtype, CL), Out(dtype, x.shape))
    check(f"aten::{name}.out", tensor(x, dtype), Out(dtype, x.shape, dim_order=CL))


@pytest.mark.parametrize("name", ["exp", "sqrt", "sigmoid", "erf"])
@pytest.mark.parametrize("dtype,out", [(np.int32, np.float32), (np.uint8, np.float16),
                                       (np.bool_, np.float32), (np.float32, np.float64),
                                       (np.int64, np.float64), (np.float16, np.float32)])
def test_float_unary_mixed(name, dtype, out):
    x = rand((33, 7), dtype, 0, 9)
    # Computed in the input's float type (float for integers), then widened:
    # CPU and CUDA math may differ by one unit of float's last place.
    f32 = np.dtype(dtype) in (np.float32, np.int64) and out == np.float64
    check(f"aten::{name}.out", x, Out(out, x.shape), **({"rtol": 3e-7, "atol": 1e-7} if f32 else {}))


def test_float_unary_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1e-30, 88.0, -100.0],
                 dtype=np.float32)
    for name in FLOAT_UNARY:
        check(f"aten::{name}.out", x, Out(np.float32, x.shape))


SAME_UNARY = ["neg", "abs", "floor", "ceil", "round", "trunc", "sign"]


@pytest.mark.parametrize("name", SAME_UNARY)
@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_same_type_unary(name, dtype):
    x = values((4, 3, 2, 5), dtype, -50, 50)
    if dtype != "bfloat16" and np.dtype(dtype).kind == "f":
        x[0, 0, 0, :] = [0.5, 1.5, 2.5, -0.5, -2.5]
    check(f"aten::{name}.out", tensor(x, dtype, CL), Out(dtype, x.shape))
    check(f"aten::{name}.out", tensor(x[0], dtype), Out(dtype, x.shape[1:]))


def test_unary_edge_cases():
    check("aten::sign.out", rand((9,), np.bool_), Out(np.bool_, (9,)))
    check("aten::neg.out", np.array([-128, 127, 0], dtype=np.int8), Out(np.int8, (3,)))
    check("aten::abs.out", np.array([-128, 5, -3], dtype=np.int8), Out(np.int8, (3,)))
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 2.0], dtype=np.float32)
    for name in SAME_UNARY:
        check(f"aten::{name}.out", x, Out(np.float32, (5,)))
    cuda_raises("aten::neg.out", rand((3,), np.bool_), Out(np.bool_, (3,)))
    cuda_raises("aten::abs.out", rand((3,)), Out(np.float64, (3,)), match="dtype")
    check("aten::exp.out", np.zeros((0, 3), np.float32), Out(np.float32, (0, 3)))


@pytest.mark.parametrize("dtype", INTS + [np.bool_])
def test_bitwise_not(dtype):
    x = rand((5, 6), dtype, -100, 100)
    check("aten::bitwise_not.out", x, Out(dtype, x.shape))


def test_bitwise_not_of_unsupported_unsigned_is_a_value_error():
    # Raised by the front-end, as the CPU kernel raised it (CUDA used to
    # raise NotImplementedError).
    with pytest.raises(ValueError, match="dtype uint16 is not supported"):
        call_kernel("aten::bitwise_not.out", np.ones(3, np.uint16), Out(np.uint16, (3,)),
                    device="cuda:0")


@pytest.mark.parametrize("name", ["isnan", "isinf"])
@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.bool_])
def test_isnan_isinf(name, dtype):
    x = values((10,), dtype)
    if dtype != "bfloat16" and np.dtype(dtype).kind == "f":
        x[:4] = [np.nan, np.inf, -np.inf, 0]
    check(f"aten::{name}.out", tensor(x, dtype), Out(np.bool_, (10,)))


@pytest.mark.parametrize("eps", [None, 1e-3, -1.0])
@pytest.mark.parametrize("dtype,out", [(np.float32, np.float32), (np.float16, np.float16),
                                       (np.float64, np.float64), (np.int32, np.float32),
                                       ("bfloat16", "bfloat16"), (np.float32, np.float64)])
def test_logit(eps, dtype, out):
    x = values((4, 6), dtype, 0, 1) if dtype != np.int32 else rand((4, 6), np.int32, 0, 2)
    check("aten::logit.out", tensor(x, dtype), eps, Out(out, (4, 6)))


# ---- compare / logical / where ---------------------------------------------------------------

CMPS = ["eq", "ne", "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("cmp", CMPS)
@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_])
def test_compare(cmp, dtype):
    a, b = values((3, 4, 5), dtype, -3, 3), values((4, 1), dtype, -3, 3)
    check(f"aten::{cmp}.Tensor_out", tensor(a, dtype), tensor(b, dtype), Out(np.bool_, (3, 4, 5)))
    check(f"aten::{cmp}.Tensor_out", tensor(a, dtype), tensor(a, dtype), Out(np.bool_, (3, 4, 5)))
    s = True if dtype == np.bool_ else 1
    check(f"aten::{cmp}.Scalar_out", tensor(a, dtype), s, Out(np.bool_, (3, 4, 5)))
    check(f"aten::{cmp}.Scalar_out", tensor(a, dtype), 0.5, Out(np.float32, (3, 4, 5)))


def test_compare_mixed_and_nan():
    a = np.array([np.nan, 1.0, 2.0, -np.inf], dtype=np.float32)
    for cmp in CMPS:
        check(f"aten::{cmp}.Tensor_out", a, np.array([1, 1, 3, 0], np.int32), Out(np.bool_, (4,)))
        check(f"aten::{cmp}.Scalar_out", a, 1.0, Out(np.int32, (4,)))
        check(f"aten::{cmp}.Scalar_out", rand((4,), np.uint8, 0, 255), -2, Out(np.bool_, (4,)))
    x = rand((2, 3, 4, 5))
    check("aten::lt.Tensor_out", T(x, dim_order=CL), rand((5,)), Out(np.bool_, x.shape))


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int64, np.uint8, "bfloat16"])
def test_logical(dtype):
    a, b = values((4, 5), dtype, -2, 2), values((5,), dtype, -2, 2)
    for op in ["and", "or", "xor"]:
        check(f"aten::logical_{op}.out", tensor(a, dtype), tensor(b, dtype), Out(np.bool_, (4, 5)))
        check(f"aten::logical_{op}.out", tensor(a, dtype), rand((4, 5), np.int8, -1, 2),
              Out(np.float32, (4, 5)))
    check("aten::logical_not.out", tensor(a, dtype), Out(np.bool_, (4, 5)))
    check("aten::logical_not.out", tensor(a, dtype), Out(np.int32, (4, 5)))


@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_])
def test_where(dtype):
    cond = rand((3, 1, 5), np.bool_)
    a, b = values((4, 5), dtype), values((3, 4, 1), dtype)
    check("aten::where.self_out", cond, tensor(a, dtype), tensor(b, dtype), Out(dtype, (3, 4, 5)))
    check("aten::where.self_out", cond.astype(np.uint8), tensor(a, dtype), tensor(b, dtype),
          Out(dtype, (3, 4, 5)))


def test_where_promotion_and_layout():
    cond = rand((2, 3, 4, 5), np.bool_)
    check("aten::where.self_out", T(cond, dim_order=CL), rand((2, 3, 4, 5), np.int32, -9, 9),
          rand((5,), np.float32), Out(np.float32, (2, 3, 4, 5), dim_order=CL))
    cuda_raises("aten::where.self_out", rand((3,), np.int32, 0, 2), rand((3,)), rand((3,)),
                Out(np.float32, (3,)), match="condition")


# ---- activations -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_relu_hardtanh(dtype):
    x = values((2, 3, 4, 5), dtype, -50, 50)
    check("aten::relu.out", tensor(x, dtype), Out(dtype, x.shape))
    check("aten::relu.out", tensor(x, dtype, CL), Out(dtype, x.shape))
    signed = dtype == "bfloat16" or np.dtype(dtype).kind != "u"
    check("aten::hardtanh.out", tensor(x, dtype), -1 if signed else 2, 6, Out(dtype, x.shape))
    check("aten::hardtanh.out", tensor(x, dtype, CL), 0, 6, Out(dtype, x.shape, dim_order=CL))


@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_])
def test_clamp(dtype):
    x = values((4, 7), dtype, -50, 50)
    int_like = dtype == np.bool_ or (dtype != "bfloat16" and np.dtype(dtype).kind in "iu")
    if dtype == np.bool_:
        check("aten::clamp.out", x, False, True, Out(np.bool_, x.shape))
        return
    check("aten::clamp.out", tensor(x, dtype), 1, 20, Out(dtype, x.shape))
    check("aten::clamp.out", tensor(x, dtype), None, 5, Out(dtype, x.shape))
    check("aten::clamp.out", tensor(x, dtype), 2, None, Out(dtype, x.shape))
    if int_like:
        check("aten::clamp.out", tensor(x, dtype), 0.5, None, Out(np.float32, x.shape))
    lo, hi = values((7,), dtype, -20, 0), values((4, 1), dtype, 0, 20)
    check("aten::clamp.Tensor_out", tensor(x, dtype), tensor(lo, dtype), tensor(hi, dtype),
          Out(dtype, x.shape))
    check("aten::clamp.Tensor_out", tensor(x, dtype), tensor(lo, dtype), None, Out(dtype, x.shape))
    check("aten::clamp.Tensor_out", tensor(x, dtype), None, tensor(hi, dtype), Out(dtype, x.shape))


def test_clamp_nan():
    x = np.array([np.nan, 1.0, -5.0, 9.0], dtype=np.float32)
    check("aten::clamp.out", x, -1.0, 2.0, Out(np.float32, (4,)))
    check("aten::clamp.out", x, float("nan"), 2.0, Out(np.float32, (4,)))
    check("aten::clamp.Tensor_out", x, np.array([0, np.nan, 0, 0], np.float32), None,
          Out(np.float32, (4,)))
    cuda_raises("aten::clamp.out", x, None, None, Out(np.float32, (4,)), match="None")
    cuda_raises("aten::clamp.out", rand((3,), np.int8, -5, 5), 300, None, Out(np.int8, (3,)),
                match="range")


FLOAT_ACTS = [("aten::gelu.out", ["none"]), ("aten::gelu.out", ["tanh"]),
              ("aten::leaky_relu.out", [0.01]), ("aten::leaky_relu.out", [0.2]),
              ("aten::elu.out", [1.0, 1.0, 1.0]), ("aten::elu.out", [0.5, 2.0, 1.5]),
              ("aten::softplus.out", [1, 20]), ("aten::softplus.out", [2.0, 1.0]),
              ("aten::silu.out", []), ("aten::hardsigmoid.out", []), ("aten::hardswish.out", [])]


@pytest.mark.parametrize("name,params", FLOAT_ACTS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("order", [None, CL])
def test_float_activations(name, params, dtype, order):
    x = values((2, 3, 4, 5), dtype, -6, 6)
    check(name, tensor(x, dtype, order), *params, Out(dtype, x.shape))


def test_float_activation_special_values_and_errors():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 30.0, -30.0], dtype=np.float32)
    for name, params in FLOAT_ACTS:
        check(name, x, *params, Out(np.float32, x.shape))
    cuda_raises("aten::gelu.out", x, "fast", Out(np.float32, x.shape), match="approximate")
    cuda_raises("aten::silu.out", rand((3,), np.int32), Out(np.int32, (3,)))
    cuda_raises("aten::relu.out", rand((3,)), Out(np.float16, (3,)), match="dtype")


@pytest.mark.parametrize("dim", [-1, 0, 1, 2])
@pytest.mark.parametrize("dtype", FLOATS)
def test_glu(dim, dtype):
    x = values((4, 6, 8), dtype)
    shape = list(x.shape)
    shape[dim] //= 2
    check("aten::glu.out", tensor(x, dtype), dim, Out(dtype, shape))
    y = values((2, 4, 6, 8), dtype)
    shape = list(y.shape)
    shape[dim] //= 2
    check("aten::glu.out", tensor(y, dtype, CL), dim, Out(dtype, shape, dim_order=CL))
    check("aten::glu.out", tensor(y, dtype, CL), dim, Out(dtype, shape))


def test_glu_mixed_and_errors():
    x = rand((3, 10))
    check("aten::glu.out", x, 1, Out(np.float64, (3, 5)), rtol=3e-7, atol=1e-7)  # float math
    cuda_raises("aten::glu.out", rand((3, 5)), 1, Out(np.float32, (3, 2)), match="odd")


# ---- mul then add, fused (internal kernels the executor substitutes) ---------------------------

FUSED_SHAPES = [((4096,), (), ()), ((3, 4, 5), (3, 4, 5), (5,)), ((6, 64), (64,), (6, 64)),
                ((1000,), (1,), (1000,)), ((2, 1, 4), (3, 1), (4,)), ((0, 4), (), (4,))]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kernel,second",
                         [("pterun::mul_add.out", "aten::add.out"),
                          ("pterun::mul_sub.out", "aten::sub.out")])
@pytest.mark.parametrize("shapes", FUSED_SHAPES)
@pytest.mark.parametrize("alpha", [1, 2.5])
def test_fused_mul_add_equals_mul_then_add(dtype, kernel, second, shapes, alpha):
    # Bit for bit the two kernels it replaces (on the GPU; the CPU's are
    # checked against those by the tests above): the product is rounded to
    # the dtype before the add, never contracted into a fused multiply-add.
    x, m, a = (values(s, dtype) for s in shapes)
    product = np.broadcast_shapes(shapes[0], shapes[1])
    out = np.broadcast_shapes(*shapes)
    t = call_kernel("aten::mul.out", tensor(x, dtype), tensor(m, dtype), Out(dtype, product),
                    device="cuda:0")[0]
    expected = call_kernel(second, tensor(t, dtype), tensor(a, dtype), alpha, Out(dtype, out),
                           device="cuda:0")[0]
    got = call_kernel(kernel, tensor(x, dtype), tensor(m, dtype), tensor(a, dtype), alpha,
                      Out(dtype, out), device="cuda:0")[0]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


# ---- performance ------------------------------------------------------------------------------

MIB64 = 64 << 20


@pytest.mark.parametrize("dtype", [np.float32, "bfloat16"])
def test_perf_elementwise(dtype):
    elem = 4 if dtype == np.float32 else 2
    n = MIB64 // elem
    a = tensor(rand((n,)), dtype)
    b = tensor(rand((n,)), dtype)
    perf(f"add {dtype if isinstance(dtype, str) else 'float32'} 64 MiB", "aten::add.out", a, b, 1,
         Out(dtype, (n,)), nbytes=3 * n * elem, ref="copy")
    perf(f"mul {dtype if isinstance(dtype, str) else 'float32'} 64 MiB", "aten::mul.out", a, b,
         Out(dtype, (n,)), nbytes=3 * n * elem, ref="copy")
    perf(f"relu {dtype if isinstance(dtype, str) else 'float32'} 64 MiB", "aten::relu.out", a,
         Out(dtype, (n,)), nbytes=2 * n * elem, ref="copy")
    perf(f"gelu {dtype if isinstance(dtype, str) else 'float32'} 64 MiB", "aten::gelu.out", a,
         "none", Out(dtype, (n,)), nbytes=2 * n * elem, ref="copy")
    perf(f"x * 2 + 1 {dtype if isinstance(dtype, str) else 'float32'} 64 MiB, fused",
         "pterun::mul_add.out", a, tensor(np.float32(2), dtype), tensor(np.float32(1), dtype), 1,
         Out(dtype, (n,)), nbytes=2 * n * elem, ref="copy")
    perf(f"add {dtype if isinstance(dtype, str) else 'float32'} 64 MiB + [4096] bias",
         "aten::add.out", tensor(rand((n // 4096, 4096)), dtype), tensor(rand((4096,)), dtype), 1,
         Out(dtype, (n // 4096, 4096)), nbytes=2 * n * elem, ref="copy")

"""Reductions against NumPy: sum, mean, prod, any/all, amax/amin,
argmax/argmin, max/min (dim and unary), var, var_mean and cumsum: dims and
keepdim, dim orders, every dtype with the out dtype choosing the
accumulator (float for f16/bf16/f32, double for f64, wrapping int64 for
integers), ties (first index wins), NaN, empty and 0-dim inputs, long rows
and threads, argument errors."""

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, cast, check, check_error, dtype_of, integers,
                     is_float, normal, rand, random, reference, tensor, uniform, value)

FLOATS = [np.float32, np.float16, BF16, np.float64]


def reduced_shape(shape, dims, keepdim):
    if dims is None or len(dims) == 0:
        dims = range(len(shape))
    dims = {d % len(shape) for d in dims} if shape else set()
    return [1 if i in dims else s for i, s in enumerate(shape) if keepdim or i not in dims]


def np_axes(dims, rank):
    """NumPy axes of a dim list (None or [] reduce everything)."""
    if dims is None or len(dims) == 0 or rank == 0:
        return None
    return tuple(d % rank for d in dims)


def acc_tol(dtype, n, scale=2.0):
    """Sums of n terms of magnitude <= scale accumulated in float (f16, bf16,
    f32) or double, in another order than NumPy's float64."""
    if dtype == np.float64:
        return (1e-12, 1e-15 * n * scale)
    if dtype == np.float16:
        return (2e-3, 1e-3 * scale)
    if dtype == BF16:
        return (1.6e-2, 1e-2 * scale)
    return (1e-5, 1e-7 * n * scale + 1e-6)


# ---- NumPy models ------------------------------------------------------------------------------


def _sum(x, axes, keepdim, od):
    """The sum stored in `od`: float64 for floating outs, wrapping int64
    (each element first converted, floats truncated) for integer ones,
    "any" for bool."""
    if od == np.bool_:
        return np.any(x != 0, axis=axes, keepdims=keepdim)
    if is_float(od):
        return cast(np.sum(x.astype(np.float64), axis=axes, keepdims=keepdim), od)
    with np.errstate(over="ignore"):
        return cast(np.sum(cast(x, np.int64), axis=axes, keepdims=keepdim), od)


@reference("aten::sum.IntList_out")
def sum_model(a, dims, keepdim, dtype, out):
    x = value(a)
    return _sum(x, np_axes(dims, x.ndim), keepdim, dtype_of(out))


@reference("aten::sum.out")
def sum_all_model(a, dtype, out):
    return _sum(value(a), None, False, dtype_of(out))


@reference("aten::mean.out")
def mean_model(a, dims, keepdim, dtype, out):
    x = value(a).astype(np.float64)
    axes = np_axes(dims, x.ndim)
    n = x.size if axes is None else int(np.prod([x.shape[d] for d in axes]))
    with np.errstate(invalid="ignore", divide="ignore"):
        return cast(np.sum(x, axis=axes, keepdims=keepdim) / n, dtype_of(out))


@reference("aten::mean.dtype_out")
def mean_all_model(a, dtype, out):
    return mean_model(a, None, False, dtype, out)


def _prod(x, axes, keepdim, od):
    if od == np.bool_:
        return np.all(x != 0, axis=axes, keepdims=keepdim)
    if is_float(od):
        return cast(np.prod(x.astype(np.float64), axis=axes, keepdims=keepdim), od)
    with np.errstate(over="ignore"):
        return cast(np.prod(cast(x, np.int64), axis=axes, keepdims=keepdim), od)


@reference("aten::prod.out")
def prod_all_model(a, dtype, out):
    return _prod(value(a), None, False, dtype_of(out))


@reference("aten::prod.int_out")
def prod_model(a, dim, keepdim, dtype, out):
    x = value(a)
    return _prod(x, np_axes([dim], x.ndim), keepdim, dtype_of(out))


def any_all_model(fn, dims_form):
    def model(a, *args):
        x = value(a) != 0
        if dims_form == "all":
            return cast(fn(x), dtype_of(args[-1]))
        dims, keepdim, out = args
        if dims_form == "one":
            dims = [dims]
        if dims is not None and len(dims) == 0:
            return cast(x, dtype_of(out))  # an empty list reduces nothing here
        return cast(fn(x, axis=np_axes(dims, x.ndim), keepdims=keepdim), dtype_of(out))

    return model


for _name, _fn in [("any", np.any), ("all", np.all)]:
    reference(f"aten::{_name}.out")(any_all_model(_fn, "one"))
    reference(f"aten::{_name}.dims_out")(any_all_model(_fn, "list"))
    reference(f"aten::{_name}.all_out")(any_all_model(_fn, "all"))


def extreme_model(fn):
    def model(a, dims, keepdim, out):
        x = value(a)
        return cast(fn(x, axis=np_axes(dims, x.ndim), keepdims=keepdim), dtype_of(out))

    return model


reference("aten::amax.out")(extreme_model(np.max))
reference("aten::amin.out")(extreme_model(np.min))
reference("aten::max.unary_out")(lambda a, out: cast(np.max(value(a)), dtype_of(out)))
reference("aten::min.unary_out")(lambda a, out: cast(np.min(value(a)), dtype_of(out)))


def arg_model(fn):
    """First index of the extreme; NaN counts as both (NumPy agrees)."""

    def model(a, dim, keepdim, out):
        x = value(a)
        if dim is None or x.ndim == 0:
            r = np.asarray(fn(x))
            return r.reshape([1] * x.ndim) if keepdim else r
        return fn(x, axis=dim, keepdims=keepdim)

    return model


reference("aten::argmax.out")(arg_model(np.argmax))
reference("aten::argmin.out")(arg_model(np.argmin))


def dim_extreme_model(fn, argfn):
    def model(a, dim, keepdim, values, indices):
        x = value(a)
        return [cast(fn(x, axis=dim, keepdims=keepdim), dtype_of(values)),
                argfn(x, axis=dim, keepdims=keepdim)]

    return model


reference("aten::max.dim_max")(dim_extreme_model(np.max, np.argmax))
reference("aten::min.dim_min")(dim_extreme_model(np.min, np.argmin))


def _var(x, dims, correction, keepdim):
    """Variance in float64, dividing by max(0, count - correction)."""
    x = x.astype(np.float64)
    axes = np_axes(dims, x.ndim)
    n = x.size if axes is None else int(np.prod([x.shape[d] for d in axes]))
    mean = x.mean(axis=axes, keepdims=True)
    ss = ((x - mean) ** 2).sum(axis=axes, keepdims=keepdim)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ss / max(0.0, n - correction), x.mean(axis=axes, keepdims=keepdim)


@reference("aten::var.correction_out")
def var_model(a, dims, correction, keepdim, out):
    c = 1.0 if correction is None else float(correction)
    return cast(_var(value(a), dims, c, keepdim)[0], dtype_of(out))


@reference("aten::var.out")
def var_unbiased_model(a, dims, unbiased, keepdim, out):
    return cast(_var(value(a), dims, 1.0 if unbiased else 0.0, keepdim)[0], dtype_of(out))


@reference("aten::var_mean.correction_out")
def var_mean_model(a, dims, correction, keepdim, out0, out1):
    c = 1.0 if correction is None else float(correction)
    v, m = _var(value(a), dims, c, keepdim)
    return [cast(v, dtype_of(out0)), cast(m, dtype_of(out1))]


@reference("aten::cumsum.out")
def cumsum_model(a, dim, dtype, out):
    """A running sum in float (or double for a double out) in order, or
    wrapping int64: NumPy's cumsum in that type is the same sequence."""
    od = dtype_of(out)
    x = value(a)
    if is_float(od):
        acc = np.float64 if od == np.float64 else np.float32
        return cast(np.cumsum(x.astype(acc), axis=dim, dtype=acc), od)
    return cast(np.cumsum(cast(x, np.int64), axis=dim, dtype=np.int64), od)


# ---- sum --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [None, [], [0], [-1], [0, 2], [-1, -2], [1, 2, 3], [1]])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("order", [None, CL])
def test_sum_dims(device, dims, keepdim, order):
    x = rand((2, 3, 4, 5))
    shape = reduced_shape(x.shape, dims, keepdim)
    check(device, "aten::sum.IntList_out", T(x, dim_order=order), dims, keepdim, None,
          Out(np.float32, shape), tol=acc_tol(np.float32, 120))


@pytest.mark.parametrize("dims", [None, [], [0], [-1], [0, 2], [-1, -2], [1, 2, 3]])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("order", [None, CL])
def test_sum_dims_keepdim_and_layouts(device, dims, keepdim, order):
    x = normal((2, 3, 4, 5))
    shape = reduced_shape(x.shape, dims, keepdim)
    out_order = order if keepdim and order else None
    ref = x.sum(axis=np_axes(dims, 4), keepdims=keepdim)
    check(device, "aten::sum.IntList_out", T(x, dim_order=order), dims, keepdim, None,
          Out(np.float32, shape, dim_order=out_order), expect=np.reshape(ref, shape),
          tol=(1e-5, 1e-5))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dims", [((7, 1000), [1]), ((1000, 7), [0]),
                                        ((3, 5000), [0, 1]), ((64, 33), [0]),
                                        ((2, 100000), [1]), ((300, 4, 50), [0, 2])])
def test_sum_mean_float_dtypes(device, dtype, shape, dims):
    x = rand(shape)
    out = reduced_shape(shape, dims, False)
    n = int(np.prod([shape[d] for d in dims]))
    rtol, atol = acc_tol(dtype, n)
    gpu32 = dtype == np.float32
    check(device, "aten::sum.IntList_out", tensor(x, dtype), dims, False, None, Out(dtype, out),
          tol=(rtol, atol), gpu_tol=(1e-4, 1e-3) if gpu32 else None)
    check(device, "aten::mean.out", tensor(x, dtype), dims, False, None, Out(dtype, out),
          tol=(rtol, atol / n), gpu_tol=(1e-4, 1e-5) if gpu32 else None)


@pytest.mark.parametrize("dtype,out_dtype", [(np.int32, np.int64), (np.bool_, np.int64),
                                             (np.uint8, np.int64), (np.float64, np.float64),
                                             (np.int8, np.int8), (np.int64, np.int64),
                                             (np.int16, np.int32), (np.float32, np.int64),
                                             (np.int32, np.float32), (np.bool_, np.bool_)])
def test_sum_integer_and_bool(device, dtype, out_dtype):
    x = rand((3, 70), dtype, -50, 50)
    check(device, "aten::sum.IntList_out", x, [1], False, None, Out(out_dtype, [3]),
          tol=acc_tol(out_dtype, 70, 50) if is_float(out_dtype) else None)
    check(device, "aten::sum.out", x, None, Out(out_dtype, []),
          tol=acc_tol(out_dtype, 210, 50) if is_float(out_dtype) else None)


@pytest.mark.parametrize("dtype,out_dtype", [(np.int32, np.int64), (np.bool_, np.int64),
                                             (np.uint8, np.int64), (np.float64, np.float64),
                                             (np.int8, np.int8), (np.int64, np.int64)])
def test_sum_integer_and_bool_inputs(device, dtype, out_dtype):
    x = integers(-50, 50, (3, 7)) if dtype != np.bool_ else integers(0, 2, (3, 7))
    x = x.astype(dtype)
    check(device, "aten::sum.IntList_out", x, [1], False, None, Out(out_dtype, [3]),
          expect=x.astype(np.int64).sum(1).astype(out_dtype))


def test_sum_f16_and_bf16_accumulate_in_float(device):
    x = normal((4, 1000))
    check(device, "aten::sum.IntList_out", x.astype(np.float16), [-1], False, None,
          Out(np.float16, [4]), expect=x.astype(np.float16).astype(np.float64).sum(-1),
          tol=(2e-3, 2e-2))
    check(device, "aten::sum.IntList_out", T(x, bf16=True), [-1], False, None, Out(BF16, [4]),
          expect=bf16(x).astype(np.float64).sum(-1), tol=(1e-2, 5e-2))


def test_sum_dtype_argument_sets_out_dtype(device):
    x = integers(0, 10, (3, 4), np.int32)
    check(device, "aten::sum.IntList_out", x, [0], False, 7, Out(np.float64, [4]),
          expect=x.sum(0).astype(np.float64))
    check_error(device, "aten::sum.IntList_out", x, [0], False, 6, Out(np.float64, [4]),
                exc=ValueError)


def test_sum_whole_tensor_threads_and_sum_out(device):
    x = normal((300, 1000))
    check(device, "aten::sum.IntList_out", x, None, False, None, Out(np.float32, []),
          expect=x.astype(np.float64).sum(), tol=(1e-4, 0), num_threads=4)
    check(device, "aten::sum.out", x, None, Out(np.float32, []), expect=x.astype(np.float64).sum(),
          tol=(1e-4, 0), num_threads=2)


def test_sum_outer_dim_large_and_threads(device):
    x = normal((64, 3000))
    check(device, "aten::sum.IntList_out", x, [0], True, None, Out(np.float32, [1, 3000]),
          expect=x.sum(0, keepdims=True), tol=(1e-4, 1e-4), num_threads=3)


def test_sum_outer_dim_narrow_blocks_for_threads(device):
    x = normal((5000, 200))
    check(device, "aten::mean.out", x, [0], False, None, Out(np.float32, [200]),
          expect=x.astype(np.float64).mean(0), tol=(1e-4, 1e-5), num_threads=4)


def test_sum_all_and_empty(device):
    x = rand((0, 4))
    check(device, "aten::sum.IntList_out", x, [0], False, None, Out(np.float32, [4]))
    check(device, "aten::sum.out", x, None, Out(np.float32, []))
    check(device, "aten::mean.out", x, [0], False, None, Out(np.float32, [4]))
    check(device, "aten::sum.IntList_out", rand((3, 0)), [0], False, None, Out(np.float32, [0]))


def test_sum_empty_and_rank0(device):
    x = np.zeros((3, 0), np.float32)
    check(device, "aten::sum.IntList_out", x, [1], False, None, Out(np.float32, [3]),
          expect=np.zeros(3))
    check(device, "aten::sum.IntList_out", x, [0], False, None, Out(np.float32, [0]),
          expect=np.zeros(0))
    check(device, "aten::sum.IntList_out", np.zeros((0, 8), np.float32), [0], True, None,
          Out(np.float32, [1, 8]), expect=np.zeros((1, 8)))
    check(device, "aten::prod.int_out", np.zeros((2, 0, 8), np.float32), 1, False, None,
          Out(np.float32, [2, 8]), expect=np.ones((2, 8)))
    s = np.array(2.5, np.float32)
    check(device, "aten::sum.IntList_out", s, [0], False, None, Out(np.float32, []),
          expect=np.array(2.5))
    check(device, "aten::sum.IntList_out", s, None, True, None, Out(np.float32, []),
          expect=np.array(2.5))


def test_sum_rejects_bad_dims(device):
    x = np.ones((2, 3), np.float32)
    check_error(device, "aten::sum.IntList_out", x, [0, -2], False, None, Out(np.float32, [3]),
                exc=ValueError)
    check_error(device, "aten::sum.IntList_out", x, [2], False, None, Out(np.float32, [2]),
                exc=IndexError)
    check_error(device, "aten::sum.IntList_out", x, [1], False, None, Out(np.float32, [2, 1]),
                exc=ValueError)  # wrong out rank


# ---- mean -------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("shape", [(2, 8, 7, 7), (1, 64, 3, 5), (1, 3, 1, 1), (2, 45, 6, 5)])
def test_mean_global_pool_fixture_case(device, order, shape):
    x = normal(shape)
    out_shape = [shape[0], shape[1], 1, 1]
    check(device, "aten::mean.out", T(x, dim_order=order), [-1, -2], True, None,
          Out(np.float32, out_shape, dim_order=order), expect=x.mean((-1, -2), keepdims=True),
          tol=(1e-5, 1e-6))


@pytest.mark.parametrize("dims", [None, [], [1], [0, -1]])
def test_mean_dims(device, dims):
    x = normal((3, 4, 5), np.float64)
    shape = reduced_shape(x.shape, dims, False)
    check(device, "aten::mean.out", x, dims, False, None, Out(np.float64, shape),
          expect=np.reshape(x.mean(axis=np_axes(dims, 3)), shape), tol=(1e-12, 0))


def test_mean_half_types(device):
    x = normal((2, 3, 16))
    check(device, "aten::mean.out", x.astype(np.float16), [-1], False, None,
          Out(np.float16, [2, 3]), expect=x.astype(np.float16).astype(np.float32).mean(-1),
          tol=(1e-7, 2e-3))
    check(device, "aten::mean.out", T(x, bf16=True), [-1], True, None, Out(BF16, [2, 3, 1]),
          expect=bf16(x).mean(-1, keepdims=True), tol=(1e-7, 1e-2))


def test_mean_int_input_needs_floating_dtype(device):
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    check_error(device, "aten::mean.out", x, [1], False, None, Out(np.float32, [3]),
                exc=ValueError)
    check_error(device, "aten::mean.out", x, [1], False, 4, Out(np.int64, [3]), exc=ValueError)
    check(device, "aten::mean.out", x, [1], False, 6, Out(np.float32, [3]), expect=x.mean(1),
          tol=(1e-7, 0))


def test_mean_of_empty_is_nan_and_dtype_out(device):
    check(device, "aten::mean.out", np.zeros((2, 0), np.float32), [1], False, None,
          Out(np.float32, [2]), expect=np.full(2, np.nan))
    x = normal((5, 6))
    check(device, "aten::mean.dtype_out", x, 7, Out(np.float64, []),
          expect=x.astype(np.float64).mean(), tol=(1e-6, 0))


def test_mean_dtype_and_big(device):
    x = rand((1 << 20,))
    check(device, "aten::mean.dtype_out", x, None, Out(np.float32, []), tol=(1e-5, 1e-6),
          gpu_tol=(1e-4, 1e-5))
    check(device, "aten::mean.out", x.astype(np.int32), [0], False, 6, Out(np.float32, []),
          tol=(1e-6, 1e-7), gpu_tol=(1e-5, 1e-5))
    check(device, "aten::mean.dtype_out", rand((5, 6)), 7, Out(np.float64, []), tol=(1e-12, 1e-15))


def test_mean_errors_match(device):
    check_error(device, "aten::mean.out", rand((3,), np.int32), [0], False, None,
                Out(np.int32, []), exc=ValueError)


# ---- prod -------------------------------------------------------------------------------------


@pytest.mark.parametrize("with_dim", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_prod(device, with_dim, dtype):
    x = rand((4, 6), dtype, -2, 3)
    if dtype in (np.float32, np.float64):
        x = rand((4, 6), dtype, 0.5, 1.5)
    out_dtype = np.int64 if np.dtype(dtype).kind in "biu" else dtype
    tol = acc_tol(dtype, 24) if is_float(dtype) else None
    if with_dim:
        check(device, "aten::prod.int_out", x, -1, True, None, Out(out_dtype, [4, 1]), tol=tol)
    else:
        check(device, "aten::prod.out", x, None, Out(out_dtype, []), tol=tol)


def test_prod_all_and_dim(device):
    x = uniform(0.5, 1.5, (3, 4), np.float32)
    check(device, "aten::prod.out", x, None, Out(np.float32, []), expect=x.prod(), tol=(1e-5, 0))
    check(device, "aten::prod.int_out", x, -1, True, None, Out(np.float32, [3, 1]),
          expect=x.prod(-1, keepdims=True), tol=(1e-5, 0))
    xi = integers(-3, 4, (5, 3), np.int32)
    check(device, "aten::prod.int_out", xi, 0, False, None, Out(np.int64, [3]),
          expect=xi.astype(np.int64).prod(0))
    check_error(device, "aten::prod.int_out", xi, 0, False, None, Out(np.int32, [3]),
                exc=ValueError)
    check(device, "aten::prod.out", np.zeros((0,), np.float32), None, Out(np.float32, []),
          expect=np.array(1.0))


# ---- any / all ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["any", "all"])
@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int32, np.uint8])
@pytest.mark.parametrize("order", [None, CL])
def test_any_all(device, name, dtype, order):
    x = rand((2, 3, 4, 5), dtype, 0, 2)
    if dtype == np.float32:
        x = np.where(rand((2, 3, 4, 5)) > 0, x, 0).astype(np.float32)
    check(device, f"aten::{name}.out", T(x, dim_order=order), 1, False, Out(np.bool_, [2, 4, 5]))
    check(device, f"aten::{name}.dims_out", T(x, dim_order=order), [0, -1], True,
          Out(np.bool_, [1, 3, 4, 1]))
    check(device, f"aten::{name}.dims_out", T(x, dim_order=order), [], False,
          Out(np.uint8, [2, 3, 4, 5]))
    check(device, f"aten::{name}.all_out", T(x, dim_order=order), Out(np.bool_, []))


@pytest.mark.parametrize("out_dtype", [np.bool_, np.uint8])
@pytest.mark.parametrize("keepdim", [False, True])
def test_any_single_dim(device, out_dtype, keepdim):
    x = np.array([[0.0, 0.5, 0.0], [0.0, 0.0, 0.0], [np.nan, 0.0, 0.0]], np.float32)
    shape = [3, 1] if keepdim else [3]
    check(device, "aten::any.out", x, -1, keepdim, Out(out_dtype, shape),
          expect=np.array([1, 0, 1], out_dtype).reshape(shape))


def test_any_fixture_bool_mask_channels_last_and_ints(device):
    m = random((2, 4, 3, 5)) < 0.05
    check(device, "aten::any.out", T(m, dim_order=CL), 1, True, Out(np.bool_, [2, 1, 3, 5]),
          expect=m.any(1, keepdims=True))
    xi = integers(-1, 2, (6, 9), np.int16)
    check(device, "aten::any.out", xi, 0, False, Out(np.bool_, [9]), expect=(xi != 0).any(0))


def test_any_all_dims_and_all_out(device):
    x = random((3, 4, 5)) < 0.3
    check(device, "aten::any.dims_out", x, [0, 2], False, Out(np.bool_, [4]), expect=x.any((0, 2)))
    check(device, "aten::any.dims_out", x, None, True, Out(np.bool_, [1, 1, 1]),
          expect=np.full((1, 1, 1), x.any()))
    check(device, "aten::any.dims_out", x, [], False, Out(np.bool_, [3, 4, 5]), expect=x)
    check(device, "aten::any.all_out", x, Out(np.bool_, []), expect=np.array(x.any()))
    check(device, "aten::all.out", x, 1, False, Out(np.bool_, [3, 5]), expect=x.all(1))
    check(device, "aten::all.all_out", np.ones((2, 2), np.float32), Out(np.uint8, []),
          expect=np.array(1))
    check(device, "aten::any.all_out", np.zeros((0,), np.float32), Out(np.bool_, []),
          expect=np.array(False))


def test_any_rejects_float_out(device):
    check_error(device, "aten::any.out", np.ones((2, 2), np.float32), 0, False,
                Out(np.float32, [2]), exc=ValueError)


# ---- amax / amin / max / min --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int8, np.int64, np.bool_, np.uint8])
def test_amax_amin_every_dtype(device, name, dtype):
    x = rand((5, 6, 7), np.float32 if dtype == BF16 else dtype, -100, 100)
    if dtype == np.float32:
        x[1, 2, 3] = np.nan
    check(device, f"aten::{name}.out", tensor(x, dtype), [1], False, Out(dtype, [5, 7]))
    check(device, f"aten::{name}.out", tensor(x, dtype), [0, 2], True, Out(dtype, [1, 6, 1]))
    check(device, f"aten::{name}.out", tensor(x, dtype), [], False, Out(dtype, []))


@pytest.mark.parametrize("dims,keepdim", [([1], False), ([0, 2], True), ([], False)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, np.uint8])
def test_amax_amin(device, dims, keepdim, dtype):
    x = (normal((4, 5, 6), np.float64) * 20).astype(dtype)
    shape = reduced_shape(x.shape, dims, keepdim)
    for name, fn in (("aten::amax.out", np.max), ("aten::amin.out", np.min)):
        check(device, name, x, dims, keepdim, Out(dtype, shape),
              expect=np.reshape(fn(x, axis=np_axes(dims, 3), keepdims=keepdim), shape))


def test_amax_nan_propagates_and_channels_last(device):
    x = normal((2, 3, 4, 5))
    x[1, 2, 3, 0] = np.nan
    check(device, "aten::amax.out", T(x, dim_order=CL), [1], False, Out(np.float32, [2, 4, 5]),
          expect=np.max(x, axis=1))
    check(device, "aten::amin.out", x, [-1, -2], False, Out(np.float32, [2, 3]),
          expect=np.min(x, axis=(-1, -2)))


def test_channels_last_pixels_fold_side_by_side(device):
    # Channels-last pixels reduced over H and W: 32 channels at a time in registers, the rest
    # (7 here) in the general loop; NaN still wins in amax, integers sum exactly.
    x = normal((2, 39, 5, 6))
    x[1, 33, 2, 4] = np.nan
    x[0, 3, 0, 0] = np.nan
    check(device, "aten::amax.out", T(x, dim_order=CL), [2, 3], True,
          Out(np.float32, [2, 39, 1, 1], dim_order=CL), expect=np.max(x, axis=(2, 3), keepdims=True))
    y = normal((2, 70, 4, 3))
    check(device, "aten::sum.IntList_out", T(y, dim_order=CL), [2, 3], False, None,
          Out(np.float32, [2, 70]), expect=y.sum((2, 3)), tol=(1e-5, 1e-5))
    i = integers(-1000, 1000, (2, 40, 3, 3), np.int32)
    check(device, "aten::sum.IntList_out", T(i, dim_order=CL), [2, 3], False, None,
          Out(np.int64, [2, 40]), expect=i.astype(np.int64).sum((2, 3)))


def test_amax_errors(device):
    check_error(device, "aten::amax.out", np.zeros((2, 0), np.float32), [1], False,
                Out(np.float32, [2]), exc=ValueError)
    check_error(device, "aten::amax.out", np.zeros((2, 3), np.float32), [1], False,
                Out(np.float64, [2]), exc=ValueError)
    check_error(device, "aten::amax.out", rand((0, 3)), [0], False, Out(np.float32, [3]),
                exc=ValueError)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_unary_dtypes(device, name):
    check(device, f"aten::{name}.unary_out", rand((100, 37)), Out(np.float32, []))
    check(device, f"aten::{name}.unary_out", rand((100, 37), np.int32, -9, 9), Out(np.int64, []))
    check(device, f"aten::{name}.unary_out", T(rand((4, 5, 6, 7)), dim_order=CL),
          Out(np.float64, []))


def test_max_min_unary(device):
    x = normal((7, 9))
    check(device, "aten::max.unary_out", x, Out(np.float32, []), expect=np.array(x.max()))
    check(device, "aten::min.unary_out", x, Out(np.float64, []), expect=np.array(x.min()))
    x[3, 3] = np.nan
    check(device, "aten::max.unary_out", x, Out(np.float32, []), expect=np.array(np.nan))
    check_error(device, "aten::max.unary_out", np.zeros((0,), np.float32), Out(np.float32, []),
                exc=ValueError)


@pytest.mark.parametrize("name", ["max.dim_max", "min.dim_min"])
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int64, np.bool_])
def test_max_min_dim(device, name, dtype):
    x = rand((6, 7, 8), np.int32, -3, 3).astype(np.float32)
    if dtype == np.bool_:
        x = x > 0
    t = tensor(x, dtype)
    check(device, f"aten::{name}", t, 1, False, Out(dtype, [6, 8]), Out(np.int64, [6, 8]))
    check(device, f"aten::{name}", t, -1, True, Out(dtype, [6, 7, 1]), Out(np.int64, [6, 7, 1]))


def test_max_min_dim_values_and_indices(device):
    x = integers(0, 4, (3, 6, 5), np.float32)  # many ties: first index wins
    for name, fv, fi in (("aten::max.dim_max", np.max, np.argmax),
                         ("aten::min.dim_min", np.min, np.argmin)):
        for dim in (0, 1, -1):
            shape = list(x.shape)
            del shape[dim]
            check(device, name, x, dim, False, Out(np.float32, shape), Out(np.int64, shape),
                  expect=[fv(x, axis=dim), fi(x, axis=dim)])
    check(device, "aten::max.dim_max", T(np.ones((2, 3, 1, 1), np.float32), dim_order=CL), 1, True,
          Out(np.float32, [2, 1, 1, 1]), Out(np.int64, [2, 1, 1, 1]),
          expect=[np.ones((2, 1, 1, 1)), np.zeros((2, 1, 1, 1), np.int64)])


# ---- argmax / argmin ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64, np.int32, np.uint8])
@pytest.mark.parametrize("order", [None, CL])
def test_argmax_argmin(device, name, dtype, order):
    # Few distinct values: ties must pick the first index.
    x = rand((3, 4, 5, 6), np.int32, -3, 3).astype(np.float32)
    if dtype == np.uint8:
        x = np.abs(x)
    t = tensor(x, dtype, order)
    for dim, keep in [(None, False), (1, False), (-1, True), (0, False), (3, False)]:
        if dim is None:
            check(device, f"aten::{name}.out", t, None, keep, Out(np.int64, []))
        else:
            shape = reduced_shape(x.shape, [dim], keep)
            check(device, f"aten::{name}.out", t, dim, keep, Out(np.int64, shape))


@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin_ties_first(device, dim, keepdim):
    x = integers(0, 3, (4, 50, 6), np.float32)
    for name, fn in (("aten::argmax.out", np.argmax), ("aten::argmin.out", np.argmin)):
        ref = fn(x, axis=dim, keepdims=keepdim)
        check(device, name, x, dim, keepdim, Out(np.int64, list(np.shape(ref))), expect=ref)


def test_argmax_nan_and_long_rows(device):
    x = rand((4, 10000))
    x[1, 500] = np.nan
    x[1, 7000] = np.nan
    check(device, "aten::argmax.out", x, 1, False, Out(np.int64, [4]))
    check(device, "aten::argmin.out", x, 1, False, Out(np.int64, [4]))
    check(device, "aten::argmax.out", x.T.copy(), 0, False, Out(np.int64, [4]))
    check(device, "aten::argmax.out", rand((3000, 2000)), None, False, Out(np.int64, []))


def test_argmax_nan_is_max_and_layouts(device):
    x = normal((2, 5, 3, 4))
    x[1, 3, 2, 1] = np.nan
    x[1, 4, 2, 1] = np.nan
    # NumPy also picks the first NaN.
    check(device, "aten::argmax.out", T(x, dim_order=CL), 1, False, Out(np.int64, [2, 3, 4]),
          expect=np.argmax(x, axis=1))
    check(device, "aten::argmin.out", T(x, dim_order=CL), None, False, Out(np.int64, []),
          expect=np.array(np.argmin(x)))
    check(device, "aten::argmax.out", x.astype(np.float16), -1, False, Out(np.int64, [2, 5, 3]),
          expect=np.argmax(x.astype(np.float16), axis=-1))


def test_argmax_int_rank0_and_errors(device):
    x = integers(-100, 100, (1, 1000), np.int64)
    check(device, "aten::argmax.out", x, -1, False, Out(np.int64, [1]),
          expect=np.array([np.argmax(x)]))
    check(device, "aten::argmax.out", np.array(3.0, np.float32), 0, False, Out(np.int64, []),
          expect=np.array(0))
    check_error(device, "aten::argmax.out", np.zeros((0, 3), np.float32), None, False,
                Out(np.int64, []), exc=ValueError)
    check_error(device, "aten::argmax.out", np.zeros((2, 3), np.float32), 1, False,
                Out(np.int32, [2]), exc=ValueError)


# ---- var / cumsum -------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [None, [1], [0, 2], [-1]])
@pytest.mark.parametrize("dtype", FLOATS)
def test_var(device, dims, dtype):
    x = rand((6, 50, 7))
    shape = reduced_shape(x.shape, dims, True)
    tol = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-15), "float16": (2e-3, 1e-4),
           BF16: (1.6e-2, 1e-3)}
    check(device, "aten::var.correction_out", tensor(x, dtype), dims, 1, True, Out(dtype, shape),
          tol=tol)
    check(device, "aten::var.correction_out", tensor(x, dtype), dims, None, True,
          Out(dtype, shape), tol=tol)
    check(device, "aten::var.out", tensor(x, dtype), dims, False, True, Out(dtype, shape), tol=tol)
    check(device, "aten::var_mean.correction_out", tensor(x, dtype), dims, 0, True,
          Out(dtype, shape), Out(dtype, shape), tol=tol)


@pytest.mark.parametrize("correction", [None, 0, 1, 2.5])
def test_var_correction(device, correction):
    x = normal((4, 6, 5)) * 3 + 10
    ddof = 1 if correction is None else correction
    check(device, "aten::var.correction_out", x, [1, 2], correction, False, Out(np.float32, [4]),
          expect=x.astype(np.float64).var(axis=(1, 2), ddof=ddof), tol=(1e-5, 0))


def test_var_mean_and_var_out(device):
    x = normal((3, 8), np.float64)
    check(device, "aten::var_mean.correction_out", x, [-1], 0, True, Out(np.float64, [3, 1]),
          Out(np.float64, [3, 1]), expect=[x.var(-1, keepdims=True), x.mean(-1, keepdims=True)],
          tol=(1e-12, 0))
    check(device, "aten::var.out", x, None, True, False, Out(np.float64, []),
          expect=np.array(x.var(ddof=1)), tol=(1e-12, 0))
    # One element with correction 1: 0 / 0.
    check(device, "aten::var.correction_out", np.ones((2, 1), np.float32), [1], None, False,
          Out(np.float32, [2]), expect=np.full(2, np.nan))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype,out_dtype", [(np.float32, np.float32), (np.float64, np.float64),
                                             (np.int32, np.int64), (np.bool_, np.int64),
                                             (np.float16, np.float16), (np.int8, np.int8)])
def test_cumsum_dtypes(device, dim, dtype, out_dtype):
    x = rand((5, 6, 7), dtype, -5, 5)
    check(device, "aten::cumsum.out", x, dim, None, Out(out_dtype, [5, 6, 7]),
          gpu_tol=(1e-5, 1e-5))
    check(device, "aten::cumsum.out", T(rand((2, 3, 4, 5), dtype, -5, 5), dim_order=CL), dim, None,
          Out(out_dtype, [2, 3, 4, 5]))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum(device, dim):
    x = normal((5, 300, 7))
    check(device, "aten::cumsum.out", x, dim, None, Out(np.float32, x.shape),
          expect=np.cumsum(x.astype(np.float64), axis=dim), tol=(1e-4, 1e-4))
    check(device, "aten::cumsum.out", x, dim, None, Out(np.float32, x.shape))


def test_cumsum_dtypes_and_layouts(device):
    xi = integers(-5, 5, (3, 10), np.int32)
    check(device, "aten::cumsum.out", xi, 1, 4, Out(np.int64, [3, 10]),
          expect=np.cumsum(xi, axis=1))
    xb = random((4, 6)) < 0.5
    check(device, "aten::cumsum.out", xb, 0, None, Out(np.int64, [4, 6]),
          expect=np.cumsum(xb, axis=0))
    x = normal((2, 3, 4, 5))
    check(device, "aten::cumsum.out", T(x, dim_order=CL), 1, None,
          Out(np.float32, x.shape, dim_order=CL), expect=np.cumsum(x, axis=1), tol=(1e-5, 1e-5))
    check(device, "aten::cumsum.out", x.astype(np.float16), -1, None, Out(np.float16, x.shape),
          expect=np.cumsum(x.astype(np.float16).astype(np.float32), -1), tol=(0, 1e-2))
    check_error(device, "aten::cumsum.out", x, 0, 7, Out(np.float32, x.shape), exc=ValueError)


@pytest.mark.parametrize("shape,dims", [((1027, 256), [0]), ((1027, 258), [0]),
                                        ((3, 1027, 64), [1]), ((2051, 8), [0])])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_columns_split_over_blocks(device, shape, dims, dtype):
    # Columns (a kept dim innermost) folded in parts by several blocks and
    # finished by a second pass on CUDA, in 16-byte packs of neighbouring
    # outputs where they are dense and aligned; whole-tensor sums likewise.
    x = normal(shape).astype(dtype)
    tol = (1e-4, 1e-4) if dtype == np.float32 else (1e-10, 1e-10)
    out = [s for i, s in enumerate(shape) if i not in dims]
    check(device, "aten::sum.IntList_out", x, dims, False, None, Out(dtype, out),
          expect=x.astype(np.float64).sum(tuple(dims)), tol=tol)
    check(device, "aten::sum.out", x, None, Out(dtype, []), expect=x.astype(np.float64).sum(),
          tol=tol)

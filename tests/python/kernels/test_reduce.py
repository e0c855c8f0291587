"""Reductions: sum, mean, prod, any/all, amax/amin, argmax/argmin, max/min
(dim and unary), var, var_mean and cumsum against NumPy."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(0)
CL = (0, 2, 3, 1)  # channels-last dim order of a 4-D tensor


def bf16_round(a):
    return from_bf16_bits(to_bf16_bits(np.asarray(a, dtype=np.float32)))


def reduced_shape(shape, dims, keepdim):
    if dims is None or len(dims) == 0:
        dims = range(len(shape))
    dims = {d % len(shape) for d in dims} if shape else set()
    return [1 if i in dims else s for i, s in enumerate(shape) if keepdim or i not in dims]


def np_axes(dims, rank):
    if dims is None or len(dims) == 0:
        return None
    return tuple(d % rank for d in dims)


# ---- sum ------------------------------------------------------------------


@pytest.mark.parametrize("dims", [None, [], [0], [-1], [0, 2], [-1, -2], [1, 2, 3]])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("order", [None, CL])
def test_sum_dims_keepdim_and_layouts(dims, keepdim, order):
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    shape = reduced_shape(x.shape, dims, keepdim)
    out_order = order if keepdim and order else None
    (r,) = call_kernel("aten::sum.IntList_out", T(x, dim_order=order), dims, keepdim, None,
                       Out(np.float32, shape, dim_order=out_order))
    ref = x.sum(axis=np_axes(dims, 4), keepdims=keepdim)
    np.testing.assert_allclose(r, np.reshape(ref, shape), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype,out_dtype", [(np.int32, np.int64), (np.bool_, np.int64),
                                             (np.uint8, np.int64), (np.float64, np.float64),
                                             (np.int8, np.int8), (np.int64, np.int64)])
def test_sum_integer_and_bool_inputs(dtype, out_dtype):
    x = (RNG.integers(-50, 50, (3, 7)) if dtype != np.bool_ else RNG.integers(0, 2, (3, 7)))
    x = x.astype(dtype)
    (r,) = call_kernel("aten::sum.IntList_out", x, [1], False, None, Out(out_dtype, [3]))
    ref = x.astype(np.int64).sum(1).astype(out_dtype)
    np.testing.assert_array_equal(r, ref)


def test_sum_f16_and_bf16_accumulate_in_float():
    x = RNG.standard_normal((4, 1000)).astype(np.float32)
    (r16,) = call_kernel("aten::sum.IntList_out", x.astype(np.float16), [-1], False, None,
                         Out(np.float16, [4]))
    ref = x.astype(np.float16).astype(np.float64).sum(-1)
    np.testing.assert_allclose(r16.astype(np.float64), ref, rtol=2e-3, atol=2e-2)
    (rb,) = call_kernel("aten::sum.IntList_out", T(x, bf16=True), [-1], False, None,
                        Out("bfloat16", [4]))
    refb = bf16_round(x).astype(np.float64).sum(-1)
    np.testing.assert_allclose(rb, refb, rtol=1e-2, atol=5e-2)


def test_sum_dtype_argument_sets_out_dtype():
    x = RNG.integers(0, 10, (3, 4)).astype(np.int32)
    (r,) = call_kernel("aten::sum.IntList_out", x, [0], False, 7, Out(np.float64, [4]))
    np.testing.assert_allclose(r, x.sum(0))
    with pytest.raises(ValueError):
        call_kernel("aten::sum.IntList_out", x, [0], False, 6, Out(np.float64, [4]))


def test_sum_whole_tensor_threads_and_sum_out():
    x = RNG.standard_normal((300, 1000)).astype(np.float32)
    (r,) = call_kernel("aten::sum.IntList_out", x, None, False, None, Out(np.float32, []),
                       num_threads=4)
    np.testing.assert_allclose(r, x.astype(np.float64).sum(), rtol=1e-4)
    (r2,) = call_kernel("aten::sum.out", x, None, Out(np.float32, []), num_threads=2)
    np.testing.assert_allclose(r2, x.astype(np.float64).sum(), rtol=1e-4)


def test_sum_outer_dim_large_and_threads():
    x = RNG.standard_normal((64, 3000)).astype(np.float32)
    (r,) = call_kernel("aten::sum.IntList_out", x, [0], True, None, Out(np.float32, [1, 3000]),
                       num_threads=3)
    np.testing.assert_allclose(r, x.sum(0, keepdims=True), rtol=1e-4, atol=1e-4)


def test_sum_outer_dim_narrow_blocks_for_threads():
    x = RNG.standard_normal((5000, 200)).astype(np.float32)
    (r,) = call_kernel("aten::mean.out", x, [0], False, None, Out(np.float32, [200]),
                       num_threads=4)
    np.testing.assert_allclose(r, x.astype(np.float64).mean(0), rtol=1e-4, atol=1e-5)


def test_sum_empty_and_rank0():
    x = np.zeros((3, 0), np.float32)
    (r,) = call_kernel("aten::sum.IntList_out", x, [1], False, None, Out(np.float32, [3]))
    np.testing.assert_array_equal(r, np.zeros(3))
    (r,) = call_kernel("aten::sum.IntList_out", x, [0], False, None, Out(np.float32, [0]))
    assert r.shape == (0,)
    (r,) = call_kernel("aten::sum.IntList_out", np.zeros((0, 8), np.float32), [0], True, None,
                       Out(np.float32, [1, 8]))
    np.testing.assert_array_equal(r, np.zeros((1, 8)))
    (r,) = call_kernel("aten::prod.int_out", np.zeros((2, 0, 8), np.float32), 1, False, None,
                       Out(np.float32, [2, 8]))
    np.testing.assert_array_equal(r, np.ones((2, 8)))
    s = np.array(2.5, np.float32)
    (r,) = call_kernel("aten::sum.IntList_out", s, [0], False, None, Out(np.float32, []))
    assert r == 2.5
    (r,) = call_kernel("aten::sum.IntList_out", s, None, True, None, Out(np.float32, []))
    assert r == 2.5


def test_sum_rejects_bad_dims():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError):
        call_kernel("aten::sum.IntList_out", x, [0, -2], False, None, Out(np.float32, [3]))
    with pytest.raises(IndexError):
        call_kernel("aten::sum.IntList_out", x, [2], False, None, Out(np.float32, [2]))
    with pytest.raises(ValueError):  # wrong out rank
        call_kernel("aten::sum.IntList_out", x, [1], False, None, Out(np.float32, [2, 1]))


# ---- mean -----------------------------------------------------------------


@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("shape", [(2, 8, 7, 7), (1, 64, 3, 5), (1, 3, 1, 1)])
def test_mean_global_pool_fixture_case(order, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    out_shape = [shape[0], shape[1], 1, 1]
    (r,) = call_kernel("aten::mean.out", T(x, dim_order=order), [-1, -2], True, None,
                       Out(np.float32, out_shape, dim_order=order))
    np.testing.assert_allclose(r, x.mean((-1, -2), keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dims", [None, [], [1], [0, -1]])
def test_mean_dims(dims):
    x = RNG.standard_normal((3, 4, 5)).astype(np.float64)
    shape = reduced_shape(x.shape, dims, False)
    (r,) = call_kernel("aten::mean.out", x, dims, False, None, Out(np.float64, shape))
    np.testing.assert_allclose(r, np.reshape(x.mean(axis=np_axes(dims, 3)), shape), rtol=1e-12)


def test_mean_half_types():
    x = RNG.standard_normal((2, 3, 16)).astype(np.float32)
    (r,) = call_kernel("aten::mean.out", x.astype(np.float16), [-1], False, None,
                       Out(np.float16, [2, 3]))
    np.testing.assert_allclose(r, x.astype(np.float16).astype(np.float32).mean(-1), atol=2e-3)
    (r,) = call_kernel("aten::mean.out", T(x, bf16=True), [-1], True, None,
                       Out("bfloat16", [2, 3, 1]))
    np.testing.assert_allclose(r, bf16_round(x).mean(-1, keepdims=True), atol=1e-2)


def test_mean_int_input_needs_floating_dtype():
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    with pytest.raises(ValueError):
        call_kernel("aten::mean.out", x, [1], False, None, Out(np.float32, [3]))
    with pytest.raises(ValueError):
        call_kernel("aten::mean.out", x, [1], False, 4, Out(np.int64, [3]))
    (r,) = call_kernel("aten::mean.out", x, [1], False, 6, Out(np.float32, [3]))
    np.testing.assert_allclose(r, x.mean(1))


def test_mean_of_empty_is_nan_and_dtype_out():
    (r,) = call_kernel("aten::mean.out", np.zeros((2, 0), np.float32), [1], False, None,
                       Out(np.float32, [2]))
    assert np.isnan(r).all()
    x = RNG.standard_normal((5, 6)).astype(np.float32)
    (r,) = call_kernel("aten::mean.dtype_out", x, 7, Out(np.float64, []))
    np.testing.assert_allclose(r, x.astype(np.float64).mean(), rtol=1e-6)


# ---- any / all ------------------------------------------------------------


@pytest.mark.parametrize("out_dtype", [np.bool_, np.uint8])
@pytest.mark.parametrize("keepdim", [False, True])
def test_any_single_dim(out_dtype, keepdim):
    x = np.array([[0.0, 0.5, 0.0], [0.0, 0.0, 0.0], [np.nan, 0.0, 0.0]], np.float32)
    shape = [3, 1] if keepdim else [3]
    (r,) = call_kernel("aten::any.out", x, -1, keepdim, Out(out_dtype, shape))
    np.testing.assert_array_equal(r.reshape(-1), [1, 0, 1])
    assert r.dtype == out_dtype


def test_any_fixture_bool_mask_channels_last_and_ints():
    m = RNG.random((2, 4, 3, 5)) < 0.05
    (r,) = call_kernel("aten::any.out", T(m, dim_order=CL), 1, True, Out(np.bool_, [2, 1, 3, 5]))
    np.testing.assert_array_equal(r, m.any(1, keepdims=True))
    xi = RNG.integers(-1, 2, (6, 9)).astype(np.int16)
    (r,) = call_kernel("aten::any.out", xi, 0, False, Out(np.bool_, [9]))
    np.testing.assert_array_equal(r, (xi != 0).any(0))


def test_any_all_dims_and_all_out():
    x = RNG.random((3, 4, 5)) < 0.3
    (r,) = call_kernel("aten::any.dims_out", x, [0, 2], False, Out(np.bool_, [4]))
    np.testing.assert_array_equal(r, x.any((0, 2)))
    (r,) = call_kernel("aten::any.dims_out", x, None, True, Out(np.bool_, [1, 1, 1]))
    assert r.reshape(()) == x.any()
    (r,) = call_kernel("aten::any.dims_out", x, [], False, Out(np.bool_, [3, 4, 5]))
    np.testing.assert_array_equal(r, x)
    (r,) = call_kernel("aten::any.all_out", x, Out(np.bool_, []))
    assert r == x.any()
    (r,) = call_kernel("aten::all.out", x, 1, False, Out(np.bool_, [3, 5]))
    np.testing.assert_array_equal(r, x.all(1))
    (r,) = call_kernel("aten::all.all_out", np.ones((2, 2), np.float32), Out(np.uint8, []))
    assert r == 1
    (r,) = call_kernel("aten::any.all_out", np.zeros((0,), np.float32), Out(np.bool_, []))
    assert not r


def test_any_rejects_float_out():
    with pytest.raises(ValueError):
        call_kernel("aten::any.out", np.ones((2, 2), np.float32), 0, False,
                    Out(np.float32, [2]))


# ---- amax / amin / max / min ----------------------------------------------


@pytest.mark.parametrize("dims,keepdim", [([1], False), ([0, 2], True), ([], False)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, np.uint8])
def test_amax_amin(dims, keepdim, dtype):
    x = (RNG.standard_normal((4, 5, 6)) * 20).astype(dtype)
    shape = reduced_shape(x.shape, dims, keepdim)
    for name, fn in (("aten::amax.out", np.max), ("aten::amin.out", np.min)):
        (r,) = call_kernel(name, x, dims, keepdim, Out(dtype, shape))
        np.testing.assert_array_equal(r, np.reshape(fn(x, axis=np_axes(dims, 3), keepdims=keepdim),
                                                    shape))


def test_amax_nan_propagates_and_channels_last():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    x[1, 2, 3, 0] = np.nan
    (r,) = call_kernel("aten::amax.out", T(x, dim_order=CL), [1], False, Out(np.float32, [2, 4, 5]))
    np.testing.assert_array_equal(r, np.max(x, axis=1))
    (r,) = call_kernel("aten::amin.out", x, [-1, -2], False, Out(np.float32, [2, 3]))
    np.testing.assert_array_equal(r, np.min(x, axis=(-1, -2)))


def test_amax_errors():
    with pytest.raises(ValueError):
        call_kernel("aten::amax.out", np.zeros((2, 0), np.float32), [1], False,
                    Out(np.float32, [2]))
    with pytest.raises(ValueError):
        call_kernel("aten::amax.out", np.zeros((2, 3), np.float32), [1], False,
                    Out(np.float64, [2]))


def test_max_min_unary():
    x = RNG.standard_normal((7, 9)).astype(np.float32)
    (r,) = call_kernel("aten::max.unary_out", x, Out(np.float32, []))
    assert r == x.max()
    (r,) = call_kernel("aten::min.unary_out", x, Out(np.float64, []))
    assert r == x.min()
    x[3, 3] = np.nan
    (r,) = call_kernel("aten::max.unary_out", x, Out(np.float32, []))
    assert np.isnan(r)
    with pytest.raises(ValueError):
        call_kernel("aten::max.unary_out", np.zeros((0,), np.float32), Out(np.float32, []))


def test_max_min_dim_values_and_indices():
    x = RNG.integers(0, 4, (3, 6, 5)).astype(np.float32)  # many ties: first index wins
    for name, fv, fi in (("aten::max.dim_max", np.max, np.argmax),
                         ("aten::min.dim_min", np.min, np.argmin)):
        for dim in (0, 1, -1):
            shape = list(x.shape)
            del shape[dim]
            v, i = call_kernel(name, x, dim, False, Out(np.float32, shape), Out(np.int64, shape))
            np.testing.assert_array_equal(v, fv(x, axis=dim))
            np.testing.assert_array_equal(i, fi(x, axis=dim))
    v, i = call_kernel("aten::max.dim_max", T(np.ones((2, 3, 1, 1), np.float32), dim_order=CL),
                       1, True, Out(np.float32, [2, 1, 1, 1]), Out(np.int64, [2, 1, 1, 1]))
    np.testing.assert_array_equal(i, 0)


# ---- argmax / argmin ------------------------------------------------------


@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin_ties_first(dim, keepdim):
    x = RNG.integers(0, 3, (4, 50, 6)).astype(np.float32)
    for name, fn in (("aten::argmax.out", np.argmax), ("aten::argmin.out", np.argmin)):
        ref = fn(x, axis=dim, keepdims=keepdim)
        shape = list(np.shape(ref))
        (r,) = call_kernel(name, x, dim, keepdim, Out(np.int64, shape))
        np.testing.assert_array_equal(r, ref)


def test_argmax_nan_is_max_and_layouts():
    x = RNG.standard_normal((2, 5, 3, 4)).astype(np.float32)
    x[1, 3, 2, 1] = np.nan
    x[1, 4, 2, 1] = np.nan
    (r,) = call_kernel("aten::argmax.out", T(x, dim_order=CL), 1, False, Out(np.int64, [2, 3, 4]))
    np.testing.assert_array_equal(r, np.argmax(x, axis=1))  # numpy also picks the first NaN
    (r,) = call_kernel("aten::argmin.out", T(x, dim_order=CL), None, False, Out(np.int64, []))
    assert r == np.argmin(x)
    (r,) = call_kernel("aten::argmax.out", x.astype(np.float16), -1, False,
                       Out(np.int64, [2, 5, 3]))
    np.testing.assert_array_equal(r, np.argmax(x.astype(np.float16), axis=-1))


def test_argmax_int_rank0_and_errors():
    x = RNG.integers(-100, 100, (1, 1000)).astype(np.int64)
    (r,) = call_kernel("aten::argmax.out", x, -1, False, Out(np.int64, [1]))
    assert r[0] == np.argmax(x)
    (r,) = call_kernel("aten::argmax.out", np.array(3.0, np.float32), 0, False, Out(np.int64, []))
    assert r == 0
    with pytest.raises(ValueError):
        call_kernel("aten::argmax.out", np.zeros((0, 3), np.float32), None, False,
                    Out(np.int64, []))
    with pytest.raises(ValueError):
        call_kernel("aten::argmax.out", np.zeros((2, 3), np.float32), 1, False,
                    Out(np.int32, [2]))


# ---- prod / var / cumsum ----------------------------------------------------


def test_prod_all_and_dim():
    x = RNG.uniform(0.5, 1.5, (3, 4)).astype(np.float32)
    (r,) = call_kernel("aten::prod.out", x, None, Out(np.float32, []))
    np.testing.assert_allclose(r, x.prod(), rtol=1e-5)
    (r,) = call_kernel("aten::prod.int_out", x, -1, True, None, Out(np.float32, [3, 1]))
    np.testing.assert_allclose(r, x.prod(-1, keepdims=True), rtol=1e-5)
    xi = RNG.integers(-3, 4, (5, 3)).astype(np.int32)
    (r,) = call_kernel("aten::prod.int_out", xi, 0, False, None, Out(np.int64, [3]))
    np.testing.assert_array_equal(r, xi.astype(np.int64).prod(0))
    with pytest.raises(ValueError):
        call_kernel("aten::prod.int_out", xi, 0, False, None, Out(np.int32, [3]))
    (r,) = call_kernel("aten::prod.out", np.zeros((0,), np.float32), None, Out(np.float32, []))
    assert r == 1


@pytest.mark.parametrize("correction", [None, 0, 1, 2.5])
def test_var_correction(correction):
    x = RNG.standard_normal((4, 6, 5)).astype(np.float32) * 3 + 10
    ddof = 1 if correction is None else correction
    (r,) = call_kernel("aten::var.correction_out", x, [1, 2], correction, False,
                       Out(np.float32, [4]))
    np.testing.assert_allclose(r, x.astype(np.float64).var(axis=(1, 2), ddof=ddof), rtol=1e-5)


def test_var_mean_and_var_out():
    x = RNG.standard_normal((3, 8)).astype(np.float64)
    v, m = call_kernel("aten::var_mean.correction_out", x, [-1], 0, True, Out(np.float64, [3, 1]),
                       Out(np.float64, [3, 1]))
    np.testing.assert_allclose(v, x.var(-1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(m, x.mean(-1, keepdims=True), rtol=1e-12)
    (r,) = call_kernel("aten::var.out", x, None, True, False, Out(np.float64, []))
    np.testing.assert_allclose(r, x.var(ddof=1), rtol=1e-12)
    (r,) = call_kernel("aten::var.correction_out", np.ones((2, 1), np.float32), [1], None, False,
                       Out(np.float32, [2]))
    assert np.isnan(r).all()  # one element with correction 1: 0 / 0


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum(dim):
    x = RNG.standard_normal((5, 300, 7)).astype(np.float32)
    (r,) = call_kernel("aten::cumsum.out", x, dim, None, Out(np.float32, x.shape))
    np.testing.assert_allclose(r, np.cumsum(x.astype(np.float64), axis=dim), rtol=1e-4, atol=1e-4)


def test_cumsum_dtypes_and_layouts():
    xi = RNG.integers(-5, 5, (3, 10)).astype(np.int32)
    (r,) = call_kernel("aten::cumsum.out", xi, 1, 4, Out(np.int64, [3, 10]))
    np.testing.assert_array_equal(r, np.cumsum(xi, axis=1))
    xb = RNG.random((4, 6)) < 0.5
    (r,) = call_kernel("aten::cumsum.out", xb, 0, None, Out(np.int64, [4, 6]))
    np.testing.assert_array_equal(r, np.cumsum(xb, axis=0))
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    (r,) = call_kernel("aten::cumsum.out", T(x, dim_order=CL), 1, None,
                       Out(np.float32, x.shape, dim_order=CL))
    np.testing.assert_allclose(r, np.cumsum(x, axis=1), rtol=1e-5, atol=1e-5)
    (r,) = call_kernel("aten::cumsum.out", x.astype(np.float16), -1, None,
                       Out(np.float16, x.shape))
    np.testing.assert_allclose(r, np.cumsum(x.astype(np.float16).astype(np.float32), -1),
                               atol=1e-2)
    with pytest.raises(ValueError):
        call_kernel("aten::cumsum.out", x, 0, 7, Out(np.float32, x.shape))

"""CUDA reductions against the CPU kernels: sum / mean / prod / any / all /
amax / amin / max / min / argmax / argmin / var / var_mean / cumsum."""

import numpy as np
import pytest

import harness
from harness import Out, T, check, perf, rand

pytestmark = harness.needs_cuda

CL = (0, 2, 3, 1)


def reduced_shape(shape, dims, keepdim):
    if dims is None or len(dims) == 0:
        dims = range(len(shape))
    dims = {d % len(shape) for d in dims} if shape else set()
    return [1 if i in dims else s for i, s in enumerate(shape) if keepdim or i not in dims]


def tensor(x, dtype, order=None):
    if dtype == "bfloat16":
        return T(x.astype(np.float32), dim_order=order, bf16=True)
    return T(x.astype(dtype), dim_order=order)


FLOATS = [np.float32, np.float16, "bfloat16", np.float64]


@pytest.mark.parametrize("dims", [None, [], [0], [-1], [0, 2], [-1, -2], [1, 2, 3], [1]])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("order", [None, CL])
def test_sum_dims(dims, keepdim, order):
    x = rand((2, 3, 4, 5))
    shape = reduced_shape(x.shape, dims, keepdim)
    check("aten::sum.IntList_out", T(x, dim_order=order), dims, keepdim, None,
          Out(np.float32, shape))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dims", [((7, 1000), [1]), ((1000, 7), [0]), ((3, 5000), [0, 1]),
                                        ((64, 33), [0]), ((2, 100000), [1]), ((300, 4, 50), [0, 2])])
def test_sum_mean_float_dtypes(dtype, shape, dims):
    x = rand(shape)
    out = reduced_shape(shape, dims, False)
    check("aten::sum.IntList_out", tensor(x, dtype), dims, False, None, Out(dtype, out),
          rtol=1e-4 if dtype == np.float32 else None, atol=1e-3 if dtype == np.float32 else None)
    check("aten::mean.out", tensor(x, dtype), dims, False, None, Out(dtype, out),
          rtol=1e-4 if dtype == np.float32 else None)


@pytest.mark.parametrize("dtype,out_dtype", [(np.int32, np.int64), (np.bool_, np.int64),
                                             (np.uint8, np.int64), (np.float64, np.float64),
                                             (np.int8, np.int8), (np.int64, np.int64),
                                             (np.int16, np.int32), (np.float32, np.int64),
                                             (np.int32, np.float32), (np.bool_, np.bool_)])
def test_sum_integer_and_bool(dtype, out_dtype):
    x = rand((3, 70), dtype, -50, 50)
    check("aten::sum.IntList_out", x, [1], False, None, Out(out_dtype, [3]))
    check("aten::sum.out", x, None, Out(out_dtype, []))


def test_sum_all_and_empty():
    x = rand((0, 4))
    check("aten::sum.IntList_out", x, [0], False, None, Out(np.float32, [4]))
    check("aten::sum.out", x, None, Out(np.float32, []))
    check("aten::mean.out", x, [0], False, None, Out(np.float32, [4]))
    check("aten::sum.IntList_out", rand((3, 0)), [0], False, None, Out(np.float32, [0]))


def test_mean_dtype_and_big():
    x = rand((1 << 20,))
    check("aten::mean.dtype_out", x, None, Out(np.float32, []), rtol=1e-4)
    check("aten::mean.out", x.astype(np.int32), [0], False, 6, Out(np.float32, []), rtol=1e-5)
    check("aten::mean.dtype_out", rand((5, 6)), 7, Out(np.float64, []))


@pytest.mark.parametrize("with_dim", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_prod(with_dim, dtype):
    x = rand((4, 6), dtype, -2, 3)
    if dtype in (np.float32, np.float64):
        x = rand((4, 6), dtype, 0.5, 1.5)
    out_dtype = np.int64 if np.dtype(dtype).kind in "biu" else dtype
    if with_dim:
        check("aten::prod.int_out", x, -1, True, None, Out(out_dtype, [4, 1]))
    else:
        check("aten::prod.out", x, None, Out(out_dtype, []))


@pytest.mark.parametrize("name", ["any", "all"])
@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int32, np.uint8])
@pytest.mark.parametrize("order", [None, CL])
def test_any_all(name, dtype, order):
    x = rand((2, 3, 4, 5), dtype, 0, 2)
    if dtype == np.float32:
        x = np.where(rand((2, 3, 4, 5)) > 0, x, 0).astype(np.float32)
    check(f"aten::{name}.out", T(x, dim_order=order), 1, False, Out(np.bool_, [2, 4, 5]))
    check(f"aten::{name}.dims_out", T(x, dim_order=order), [0, -1], True,
          Out(np.bool_, [1, 3, 4, 1]))
    check(f"aten::{name}.dims_out", T(x, dim_order=order), [], False, Out(np.uint8, [2, 3, 4, 5]))
    check(f"aten::{name}.all_out", T(x, dim_order=order), Out(np.bool_, []))


@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int8, np.int64, np.bool_, np.uint8])
def test_amax_amin(name, dtype):
    x = rand((5, 6, 7), np.float32 if dtype == "bfloat16" else dtype, -100, 100)
    if dtype == np.float32:
        x[1, 2, 3] = np.nan
    check(f"aten::{name}.out", tensor(x, dtype), [1], False, Out(dtype, [5, 7]))
    check(f"aten::{name}.out", tensor(x, dtype), [0, 2], True, Out(dtype, [1, 6, 1]))
    check(f"aten::{name}.out", tensor(x, dtype), [], False, Out(dtype, []))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_unary(name):
    check(f"aten::{name}.unary_out", rand((100, 37)), Out(np.float32, []))
    check(f"aten::{name}.unary_out", rand((100, 37), np.int32, -9, 9), Out(np.int64, []))
    check(f"aten::{name}.unary_out", T(rand((4, 5, 6, 7)), dim_order=CL), Out(np.float64, []))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bfloat16", np.float64, np.int32,
                                   np.uint8])
@pytest.mark.parametrize("order", [None, CL])
def test_argmax_argmin(name, dtype, order):
    # Few distinct values: ties must pick the first index.
    x = rand((3, 4, 5, 6), np.int32, -3, 3).astype(np.float32)
    if dtype == np.uint8:
        x = np.abs(x)
    t = tensor(x, dtype, order)
    for dim, keep in [(None, False), (1, False), (-1, True), (0, False), (3, False)]:
        if dim is None:
            check(f"aten::{name}.out", t, None, keep, Out(np.int64, []))
        else:
            shape = reduced_shape(x.shape, [dim], keep)
            check(f"aten::{name}.out", t, dim, keep, Out(np.int64, shape))


def test_argmax_nan_and_long_rows():
    x = rand((4, 10000))
    x[1, 500] = np.nan
    x[1, 7000] = np.nan
    check("aten::argmax.out", x, 1, False, Out(np.int64, [4]))
    check("aten::argmin.out", x, 1, False, Out(np.int64, [4]))
    check("aten::argmax.out", x.T.copy(), 0, False, Out(np.int64, [4]))
    check("aten::argmax.out", rand((3000, 2000)), None, False, Out(np.int64, []))


@pytest.mark.parametrize("name", ["max.dim_max", "min.dim_min"])
@pytest.mark.parametrize("dtype", [np.float32, "bfloat16", np.int64, np.bool_])
def test_max_min_dim(name, dtype):
    x = rand((6, 7, 8), np.int32, -3, 3).astype(np.float32)
    if dtype == np.bool_:
        x = x > 0
    t = tensor(x, dtype)
    check(f"aten::{name}", t, 1, False, Out(dtype, [6, 8]), Out(np.int64, [6, 8]))
    check(f"aten::{name}", t, -1, True, Out(dtype, [6, 7, 1]), Out(np.int64, [6, 7, 1]))


@pytest.mark.parametrize("dims", [None, [1], [0, 2], [-1]])
@pytest.mark.parametrize("dtype", FLOATS)
def test_var(dims, dtype):
    x = rand((6, 50, 7))
    shape = reduced_shape(x.shape, dims, True)
    check("aten::var.correction_out", tensor(x, dtype), dims, 1, True, Out(dtype, shape))
    check("aten::var.correction_out", tensor(x, dtype), dims, None, True, Out(dtype, shape))
    check("aten::var.out", tensor(x, dtype), dims, False, True, Out(dtype, shape))
    check("aten::var_mean.correction_out", tensor(x, dtype), dims, 0, True, Out(dtype, shape),
          Out(dtype, shape))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype,out_dtype", [(np.float32, np.float32), (np.float64, np.float64),
                                             (np.int32, np.int64), (np.bool_, np.int64),
                                             (np.float16, np.float16), (np.int8, np.int8)])
def test_cumsum(dim, dtype, out_dtype):
    x = rand((5, 6, 7), dtype, -5, 5)
    check("aten::cumsum.out", x, dim, None, Out(out_dtype, [5, 6, 7]), rtol=1e-5, atol=1e-5)
    check("aten::cumsum.out", T(rand((2, 3, 4, 5), dtype, -5, 5), dim_order=CL), dim, None,
          Out(out_dtype, [2, 3, 4, 5]))


def test_errors_match():
    with pytest.raises(Exception):
        harness.call_kernel("aten::amax.out", rand((0, 3)), [0], False, Out(np.float32, [3]),
                            device="cuda:0")
    with pytest.raises(Exception):
        harness.call_kernel("aten::mean.out", rand((3,), np.int32), [0], False, None,
                            Out(np.int32, []), device="cuda:0")


def test_perf_sum_64mib():
    x = rand((16 * 1024 * 1024,))
    perf("sum float32 64 MiB", "aten::sum.out", x, None, Out(np.float32, []), nbytes=x.nbytes)
    perf("sum float32 [4096, 4096] dim=1", "aten::sum.IntList_out", x.reshape(4096, 4096), [1],
         False, None, Out(np.float32, [4096]), nbytes=x.nbytes)
    perf("sum float32 [4096, 4096] dim=0", "aten::sum.IntList_out", x.reshape(4096, 4096), [0],
         False, None, Out(np.float32, [4096]), nbytes=x.nbytes)

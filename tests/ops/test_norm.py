"""CUDA softmax / log_softmax, layer norm, batch norm (inference) and group
norm against the CPU kernels, over dtypes and layouts."""

import numpy as np
import pytest

import harness
from harness import Out, T, check, perf, rand

pytestmark = harness.needs_cuda

CL = (0, 2, 3, 1)
FLOATS = [np.float32, np.float16, "bfloat16", np.float64]


def tensor(x, dtype, order=None):
    if dtype == "bfloat16":
        return T(x.astype(np.float32), dim_order=order, bf16=True)
    return T(x.astype(dtype), dim_order=order)


@pytest.mark.parametrize("name", ["_softmax", "_log_softmax"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim", [((4, 10), 1), ((4, 10), 0), ((2, 3, 4, 5), -1),
                                       ((2, 3, 4, 5), 1), ((3, 5000), -1), ((5000, 3), 0),
                                       ((7,), 0), ((), 0), ((64, 3000), 1)])
def test_softmax(name, dtype, shape, dim):
    x = rand(shape, low=-8, high=8)
    check(f"aten::{name}.out", tensor(x, dtype), dim, False, Out(dtype, shape))


@pytest.mark.parametrize("name", ["_softmax", "_log_softmax"])
@pytest.mark.parametrize("dim", [1, -1, 2])
def test_softmax_channels_last_and_special(name, dim):
    x = rand((2, 3, 4, 5), low=-8, high=8)
    check(f"aten::{name}.out", T(x, dim_order=CL), dim, False, Out(np.float32, x.shape))
    check(f"aten::{name}.out", T(x, dim_order=CL), dim, False,
          Out(np.float32, x.shape, dim_order=CL))
    y = x.copy()
    y[0, 1, 2, 3] = -np.inf
    y[1, 0, 0, 0] = np.nan
    check(f"aten::{name}.out", y, dim, False, Out(np.float32, x.shape))
    check(f"aten::{name}.out", rand((0, 4)), 1, False, Out(np.float32, [0, 4]))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,k", [((4, 16), 1), ((2, 3, 8), 2), ((3, 4096), 1),
                                     ((2, 3, 4, 5), 1), ((5, 7), 2)])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm(dtype, shape, k, affine):
    x = rand(shape)
    norm = list(shape[len(shape) - k:])
    w = tensor(rand(norm), dtype) if affine[0] else None
    b = tensor(rand(norm), dtype) if affine[1] else None
    stat = [s if i < len(shape) - k else 1 for i, s in enumerate(shape)]
    tol = {} if dtype != np.float32 else {"rtol": 1e-4, "atol": 1e-4}
    check("aten::native_layer_norm.out", tensor(x, dtype), norm, w, b, 1e-5, Out(dtype, shape),
          Out(dtype, stat), Out(dtype, stat), **tol)


def test_layer_norm_channels_last_and_empty():
    x = rand((2, 3, 4, 5))
    check("aten::native_layer_norm.out", T(x, dim_order=CL), [4, 5], rand((4, 5)), rand((4, 5)),
          1e-5, Out(np.float32, x.shape, dim_order=CL), Out(np.float32, [2, 3, 1, 1]),
          Out(np.float32, [2, 3, 1, 1]), rtol=1e-4, atol=1e-4)
    check("aten::native_layer_norm.out", rand((0, 8)), [8], None, None, 1e-5,
          Out(np.float32, [0, 8]), Out(np.float32, [0, 1]), Out(np.float32, [0, 1]))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm(dtype, order, affine):
    c = 6
    x = rand((2, c, 5, 7))
    w = tensor(rand((c,)), dtype) if affine else None
    b = tensor(rand((c,)), dtype) if affine else None
    mean = tensor(rand((c,)), dtype)
    var = tensor(rand((c,), low=0.5, high=2.0), dtype)
    check("aten::_native_batch_norm_legit_no_training.out", tensor(x, dtype, order), w, b, mean,
          var, 0.1, 1e-5, Out(dtype, x.shape, dim_order=order), Out(dtype, [0]), Out(dtype, [0]))


def test_batch_norm_3d_input():
    x = rand((4, 3, 9))
    check("aten::_native_batch_norm_legit_no_training.out", x, rand((3,)), rand((3,)),
          rand((3,)), rand((3,), low=0.5, high=2), 0.1, 1e-5, Out(np.float32, x.shape),
          Out(np.float32, [0]), Out(np.float32, [0]))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm(dtype, order, groups):
    n, c, h, w = 2, 6, 5, 4
    x = rand((n, c, h, w))
    tol = {} if dtype != np.float32 else {"rtol": 1e-4, "atol": 1e-4}
    check("aten::native_group_norm.out", tensor(x, dtype, order), tensor(rand((c,)), dtype),
          tensor(rand((c,)), dtype), n, c, h * w, groups, 1e-5,
          Out(dtype, x.shape, dim_order=order), Out(dtype, [n, groups]), Out(dtype, [n, groups]),
          **tol)
    check("aten::native_group_norm.out", tensor(x, dtype, order), None, None, n, c, h * w, groups,
          1e-5, Out(dtype, x.shape), Out(dtype, [n, groups]), Out(dtype, [n, groups]), **tol)


def test_perf_softmax_and_layer_norm():
    x = rand((4096, 4096))
    perf("softmax float32 [4096, 4096] dim=-1", "aten::_softmax.out", x, -1, False,
         Out(np.float32, x.shape), nbytes=2 * x.nbytes)
    perf("layer_norm float32 [4096, 4096]", "aten::native_layer_norm.out", x, [4096],
         rand((4096,)), rand((4096,)), 1e-5, Out(np.float32, x.shape), Out(np.float32, [4096, 1]),
         Out(np.float32, [4096, 1]), nbytes=2 * x.nbytes)

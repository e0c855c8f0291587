"""CUDA convolution, pooling and upsampling against the CPU kernels."""

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


def conv_out(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def conv_tol(dtype):
    return {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {}


@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int64])
@pytest.mark.parametrize("geom", [(1, 0, 1), (2, 1, 1), (1, 2, 2), (3, 1, 2)])
@pytest.mark.parametrize("groups,cin,cout", [(1, 4, 6), (2, 4, 6), (4, 4, 4), (4, 4, 8)])
@pytest.mark.parametrize("order", [None, CL])
def test_conv2d(dtype, geom, groups, cin, cout, order):
    s, p, d = geom
    ints = np.dtype(dtype).kind in "iu" if dtype != "bfloat16" else False
    x = rand((2, cin, 9, 8), np.int64, -3, 3) if ints else rand((2, cin, 9, 8))
    w = rand((cout, cin // groups, 3, 3), np.int64, -3, 3) if ints else rand((cout, cin // groups, 3, 3))
    b = rand((cout,), np.int64, -3, 3) if ints else rand((cout,))
    oh, ow = conv_out(9, 3, s, p, d), conv_out(8, 3, s, p, d)
    check("aten::convolution.out", tensor(x, dtype, order), tensor(w, dtype, order),
          tensor(b, dtype), [s], [p], [d], False, [0], groups,
          Out(dtype, [2, cout, oh, ow], dim_order=order), **conv_tol(dtype))


# Shapes that take the im2col + cuBLAS path (>= 8 output channels per group,
# a reduction of >= 8): every pair of input / weight / output layouts, the
# odd output layout (0, 2, 1, 3) that falls back to the direct kernel, groups,
# no bias, and a batch whose patches need two chunks of scratch.
@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bfloat16"])
@pytest.mark.parametrize("geom", [(1, 1, 1), (2, 0, 1), (1, 2, 2)])
@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("orders", [(None, None, None), (CL, CL, CL), (None, CL, None),
                                    (CL, None, CL), (None, None, CL), (CL, CL, (0, 2, 1, 3))])
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_gemm(dtype, geom, groups, orders, bias):
    s, p, d = geom
    xo, wo, oo = orders
    x, w, b = rand((3, 16, 11, 10)), rand((24, 16 // groups, 3, 3)), rand((24,))
    oh, ow = conv_out(11, 3, s, p, d), conv_out(10, 3, s, p, d)
    # Both sides accumulate in float; the output's rounding may differ by
    # one unit of its last place.
    tol = {"rtol": 2e-4, "atol": 2e-4} if dtype == np.float32 else {"rtol": 5e-3, "atol": 5e-3}
    if dtype == "bfloat16":
        tol = {}
    check("aten::convolution.out", tensor(x, dtype, xo), tensor(w, dtype, wo),
          tensor(b, dtype) if bias else None, [s], [p], [d], False, [0], groups,
          Out(dtype, [3, 24, oh, ow], dim_order=oo), **tol)


@pytest.mark.parametrize("order", [None, CL])
def test_conv2d_gemm_chunked_batch(order):
    x, w = rand((12, 64, 56, 56)), rand((16, 64, 3, 3))
    check("aten::convolution.out", T(x, dim_order=order), w, rand((16,)), [1], [1], [1], False,
          [0], 1, Out(np.float32, [12, 16, 56, 56], dim_order=order), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("s,p,op,d", [(1, 0, 0, 1), (2, 1, 1, 1), (2, 0, 0, 2), (3, 1, 2, 1)])
@pytest.mark.parametrize("groups", [1, 2])
def test_conv_transposed(dtype, s, p, op, d, groups):
    x = rand((2, 4, 5, 6))
    w = rand((4, 6 // groups * groups // groups, 3, 3))
    cout = w.shape[1] * groups
    oh = (5 - 1) * s - 2 * p + d * 2 + op + 1
    ow = (6 - 1) * s - 2 * p + d * 2 + op + 1
    check("aten::convolution.out", tensor(x, dtype), tensor(w, dtype), None, [s], [p], [d], True,
          [op], groups, Out(dtype, [2, cout, oh, ow]), **conv_tol(dtype))


@pytest.mark.parametrize("order", [None, (0, 2, 1)])
def test_conv1d(order):
    x = rand((2, 4, 20))
    w = rand((6, 4, 3))
    check("aten::convolution.out", T(x, dim_order=order), w, rand((6,)), [2], [1], [2], False,
          [0], 1, Out(np.float32, [2, 6, conv_out(20, 3, 2, 1, 2)]), **conv_tol(np.float32))


def test_conv_no_bias_empty_and_1x1():
    check("aten::convolution.out", rand((1, 3, 4, 4)), rand((5, 3, 1, 1)), None, [1], [0], [1],
          False, [0], 1, Out(np.float32, [1, 5, 4, 4]), **conv_tol(np.float32))
    check("aten::convolution.out", rand((0, 3, 4, 4)), rand((5, 3, 3, 3)), None, [1], [1], [1],
          False, [0], 1, Out(np.float32, [0, 5, 4, 4]))


@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("k,s,p,d,ceil", [((2, 2), (2, 2), (0, 0), (1, 1), False),
                                          ((3, 3), (1, 1), (1, 1), (1, 1), False),
                                          ((3, 3), (2, 2), (1, 1), (2, 2), True),
                                          ((2, 3), (), (1, 0), (1, 1), True)])
@pytest.mark.parametrize("order", [None, CL])
def test_max_pool(dtype, k, s, p, d, ceil, order):
    x = rand((2, 3, 9, 10), np.int32, -4, 4).astype(np.float32)  # ties
    if dtype == np.uint8:
        x = np.abs(x)
    r = lambda v: (v - 1) // 1
    _ = r
    pool_out = []
    for i, size in enumerate((9, 10)):
        si = s[i] if s else k[i]
        num = size + 2 * p[i] - d[i] * (k[i] - 1) - 1 + (si - 1 if ceil else 0)
        o = num // si + 1
        if ceil and (o - 1) * si >= size + p[i]:
            o -= 1
        pool_out.append(o)
    check("aten::max_pool2d_with_indices.out", tensor(x, dtype, order), list(k), list(s), list(p),
          list(d), ceil, Out(dtype, [2, 3] + pool_out, dim_order=order),
          Out(np.int64, [2, 3] + pool_out, dim_order=order))


def test_max_pool_nan_3d():
    x = rand((3, 8, 8))
    x[0, 1, 1] = np.nan
    check("aten::max_pool2d_with_indices.out", x, [2, 2], [2, 2], [0, 0], [1, 1], False,
          Out(np.float32, [3, 4, 4]), Out(np.int64, [3, 4, 4]))


@pytest.mark.parametrize("dtype", FLOATS + [np.int64])
@pytest.mark.parametrize("k,s,p,ceil,cip,div", [((2, 2), (2, 2), (0, 0), False, True, None),
                                                ((3, 3), (2, 2), (1, 1), True, True, None),
                                                ((3, 3), (2, 2), (1, 1), True, False, None),
                                                ((3, 2), (1, 2), (1, 1), False, True, 5)])
@pytest.mark.parametrize("order", [None, CL])
def test_avg_pool(dtype, k, s, p, ceil, cip, div, order):
    x = rand((2, 3, 9, 10), np.int64, -20, 20) if dtype == np.int64 else rand((2, 3, 9, 10))
    out = []
    for i, size in enumerate((9, 10)):
        num = size + 2 * p[i] - (k[i] - 1) - 1 + (s[i] - 1 if ceil else 0)
        o = num // s[i] + 1
        if ceil and (o - 1) * s[i] >= size + p[i]:
            o -= 1
        out.append(o)
    check("aten::avg_pool2d.out", tensor(x, dtype, order), list(k), list(s), list(p), ceil, cip,
          div, Out(dtype, [2, 3] + out, dim_order=order))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size", [(1, 1), (3, 4), (7, 5), (9, 10), (12, 11)])
@pytest.mark.parametrize("order", [None, CL])
def test_adaptive_avg_pool(dtype, size, order):
    x = rand((2, 3, 9, 10))
    check("aten::_adaptive_avg_pool2d.out", tensor(x, dtype, order), list(size),
          Out(dtype, [2, 3] + list(size), dim_order=order))


@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("size,scales", [((10, 12), None), ((7, 9), None), ((3, 4), None),
                                         (None, [2.0, 2.0]), (None, [1.5, 0.7])])
@pytest.mark.parametrize("order", [None, CL])
def test_upsample_nearest(dtype, size, scales, order):
    x = rand((2, 3, 5, 6), np.int32, 0, 9) if dtype in (np.int32, np.uint8, np.bool_) else rand(
        (2, 3, 5, 6))
    out = list(size) if size else [int(5 * scales[0]), int(6 * scales[1])]
    check("aten::upsample_nearest2d.vec_out", tensor(x, dtype, order), list(size) if size else None,
          scales, Out(dtype, [2, 3] + out, dim_order=order))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size,scales", [((10, 12), None), ((7, 9), None), ((3, 4), None),
                                         (None, [2.0, 2.0]), (None, [1.5, 0.7])])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("order", [None, CL])
def test_upsample_bilinear(dtype, size, scales, align, order):
    x = rand((2, 3, 5, 6))
    out = list(size) if size else [int(5 * scales[0]), int(6 * scales[1])]
    check("aten::upsample_bilinear2d.vec_out", tensor(x, dtype, order),
          list(size) if size else None, align, scales, Out(dtype, [2, 3] + out, dim_order=order),
          **({"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {}))


def test_perf_conv_pool():
    x = rand((32, 64, 56, 56))
    w = rand((64, 64, 3, 3))
    perf("conv2d f32 32x64x56x56 3x3", "aten::convolution.out", x, w, None, [1], [1], [1], False,
         [0], 1, Out(np.float32, [32, 64, 56, 56]), flops=2 * 32 * 64 * 56 * 56 * 64 * 9,
         iterations=5)
    perf("max_pool2d f32 32x64x56x56 2x2", "aten::max_pool2d_with_indices.out", x, [2, 2], [2, 2],
         [0, 0], [1, 1], False, Out(np.float32, [32, 64, 28, 28]), Out(np.int64, [32, 64, 28, 28]),
         nbytes=x.nbytes * 2)

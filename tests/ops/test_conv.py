"""convolution.out against a NumPy reference: conv1d / conv2d, stride,
padding, dilation, groups and depthwise, transposed with output_padding,
dim orders of input / weight / out (the CPU's own f32 kernel, oneDNN, and
the CUDA direct and im2col + cuBLAS paths), every floating dtype and the
integers (exact, wrapping), bias or none, empty batches, weights changing
between calls, threads, dynamic outs and argument errors."""

import os
import subprocess
import sys

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, cast, check, check_error, cpu_only, dtype_of,
                     integers, is_float, normal, rand, reference, tensor, value)

FLOATS = [np.float32, np.float16, BF16, np.float64]
# Against float64 NumPy: float accumulation, then the out's rounding.
TOL = {"float32": (1e-4, 1e-4), "float64": (1e-10, 1e-10), "float16": (1e-2, 2e-2),
       BF16: (2e-2, 6e-2)}


def normals(*shape, dtype=np.float32):
    if np.issubdtype(dtype, np.integer):
        return integers(-20, 20, shape, dtype)
    return normal(shape, dtype)


def conv_out(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def conv_tol(dtype):
    return (1e-4, 1e-4) if dtype == np.float32 else None


# ---- NumPy reference ---------------------------------------------------------------------------


def ref_conv2d(x, w, b, stride, padding, dilation, groups):
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, oc, oh, ow))
    ocg = oc // groups
    for g in range(groups):
        for ky in range(kh):
            for kx in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg,
                           ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                           kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
                # (n, c, oh, ow) x (o, c) -> (n, oh, ow, o)
                part = np.tensordot(patch, w[g * ocg:(g + 1) * ocg, :, ky, kx], axes=([1], [1]))
                out[:, g * ocg:(g + 1) * ocg] += part.transpose(0, 3, 1, 2)
    if b is not None:
        out += b.astype(np.float64)[None, :, None, None]
    return out


def ref_conv_transpose2d(x, w, b, stride, padding, dilation, groups, output_padding):
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    _, ocg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw), (oph, opw) = stride, padding, dilation, output_padding
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    full = np.zeros((n, ocg * groups, (h - 1) * sh + dh * (kh - 1) + 1 + oph,
                     (wd - 1) * sw + dw * (kw - 1) + 1 + opw))
    cg = c // groups
    for g in range(groups):
        for ky in range(kh):
            for kx in range(kw):
                contrib = np.einsum("nchw,co->nohw", x[:, g * cg:(g + 1) * cg],
                                    w[g * cg:(g + 1) * cg, :, ky, kx])
                full[:, g * ocg:(g + 1) * ocg,
                     ky * dh:ky * dh + sh * (h - 1) + 1:sh,
                     kx * dw:kx * dw + sw * (wd - 1) + 1:sw] += contrib
    out = full[:, :, ph:ph + oh, pw:pw + ow]
    if b is not None:
        out = out + b.astype(np.float64)[None, :, None, None]
    return out


def _pair(v):
    v = list(v)
    return v * 2 if len(v) == 1 else v


@reference("aten::convolution.out")
def conv_model(x, w, b, stride, padding, dilation, transposed, output_padding, groups, out):
    """Either form in float64 (exact for the small integers of the cases);
    1-D as 2-D with a unit height; integer outs wrap."""
    xv, wv, bv = value(x), value(w), value(b)
    one_d = xv.ndim == 3
    if one_d:
        xv, wv = xv[:, :, None], wv[:, :, None]
        geometry = [[1] + list(a) for a in (stride, padding, dilation, output_padding)]
        geometry[1][0] = geometry[3][0] = 0
    else:
        geometry = [_pair(a) for a in (stride, padding, dilation, output_padding)]
    s, p, d, op = geometry
    if transposed:
        r = ref_conv_transpose2d(xv, wv, bv, s, p, d, groups, op)
    else:
        r = ref_conv2d(xv, wv, bv, s, p, d, groups)
    if one_d:
        r = r[:, :, 0]
    od = dtype_of(out)
    return cast(r if is_float(od) else np.round(r).astype(np.int64), od)


@reference("pterun::convolution_relu.out")
def conv_relu_model(x, w, b, stride, padding, dilation, transposed, output_padding, groups, out):
    r = conv_model(x, w, b, stride, padding, dilation, transposed, output_padding, groups, out)
    return np.maximum(r, 0)


@reference("pterun::convolution_hardtanh.out")
def conv_hardtanh_model(x, w, b, stride, padding, dilation, transposed, output_padding, groups,
                        lo, hi, out):
    r = conv_model(x, w, b, stride, padding, dilation, transposed, output_padding, groups, out)
    return np.minimum(np.maximum(r, lo), hi)


def hardswish_f32(r):
    """torch's decomposition, each step rounded to float32."""
    r = np.asarray(r, np.float32)
    t = np.minimum(np.maximum(r + np.float32(3), np.float32(0)), np.float32(6))
    return (r * t) / np.float32(6)


@reference("pterun::convolution_hardswish.out")
def conv_hardswish_model(x, w, b, stride, padding, dilation, transposed, output_padding, groups,
                         out):
    r = conv_model(x, w, b, stride, padding, dilation, transposed, output_padding, groups, out)
    return hardswish_f32(r)


@reference("pterun::convolution_add.out")
def conv_add_model(x, w, b, stride, padding, dilation, transposed, output_padding, groups,
                   residual, out):
    r = conv_model(x, w, b, stride, padding, dilation, transposed, output_padding, groups, out)
    return (np.asarray(r, np.float64) + value(residual)).astype(np.asarray(r).dtype)


@reference("pterun::convolution_add_relu.out")
def conv_add_relu_model(*args):
    return np.maximum(conv_add_model(*args), 0)


def conv(device, x, w, b, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
         transposed=False, output_padding=(0, 0), x_order=None, w_order=None, out_order=None,
         dtype=np.float32, num_threads=1, as_bf16=False, tol=(1e-4, 1e-4)):
    """A 2-D case against the reference of its arguments."""
    if transposed:
        expected = ref_conv_transpose2d(x, w, b, stride, padding, dilation, groups, output_padding)
    else:
        expected = ref_conv2d(x, w, b, stride, padding, dilation, groups)
    out_dtype = BF16 if as_bf16 else dtype
    bias = None if b is None else T(b, bf16=as_bf16)
    if not is_float(out_dtype):
        # Exact in int64, then wrapped to the dtype as same-dtype arithmetic does.
        expected = np.round(expected).astype(np.int64).astype(dtype)
    return check(device, "aten::convolution.out", T(x, dim_order=x_order, bf16=as_bf16),
          T(w, dim_order=w_order, bf16=as_bf16), bias, list(stride), list(padding),
          list(dilation), transposed, list(output_padding), groups,
          Out(out_dtype, expected.shape, dim_order=out_order), expect=expected, tol=tol,
          num_threads=num_threads)


# ---- every dtype, the CUDA direct and gemm paths ---------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int64])
@pytest.mark.parametrize("geom", [(1, 0, 1), (2, 1, 1), (1, 2, 2), (3, 1, 2)])
@pytest.mark.parametrize("groups,cin,cout", [(1, 4, 6), (2, 4, 6), (4, 4, 4), (4, 4, 8)])
@pytest.mark.parametrize("order", [None, CL])
def test_conv2d(device, dtype, geom, groups, cin, cout, order):
    s, p, d = geom
    ints = dtype != BF16 and np.dtype(dtype).kind in "iu"
    x = rand((2, cin, 9, 8), np.int64, -3, 3) if ints else rand((2, cin, 9, 8))
    w = (rand((cout, cin // groups, 3, 3), np.int64, -3, 3) if ints
         else rand((cout, cin // groups, 3, 3)))
    b = rand((cout,), np.int64, -3, 3) if ints else rand((cout,))
    oh, ow = conv_out(9, 3, s, p, d), conv_out(8, 3, s, p, d)
    check(device, "aten::convolution.out", tensor(x, dtype, order), tensor(w, dtype, order),
          tensor(b, dtype), [s], [p], [d], False, [0], groups,
          Out(dtype, [2, cout, oh, ow], dim_order=order), tol=TOL, gpu_tol=conv_tol(dtype))


# Shapes that take the CUDA im2col + cuBLAS path (>= 8 output channels per
# group, a reduction of >= 8): every pair of input / weight / output
# layouts, the odd output layout (0, 2, 1, 3) that falls back to the direct
# kernel, groups, no bias, and a batch whose patches need two chunks of
# scratch.
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
@pytest.mark.parametrize("geom", [(1, 1, 1), (2, 0, 1), (1, 2, 2)])
@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("orders", [(None, None, None), (CL, CL, CL), (None, CL, None),
                                    (CL, None, CL), (None, None, CL), (CL, CL, (0, 2, 1, 3))])
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_gemm(device, dtype, geom, groups, orders, bias):
    s, p, d = geom
    xo, wo, oo = orders
    x, w, b = rand((3, 16, 11, 10)), rand((24, 16 // groups, 3, 3)), rand((24,))
    oh, ow = conv_out(11, 3, s, p, d), conv_out(10, 3, s, p, d)
    # Both sides accumulate in float; the output's rounding may differ by
    # one unit of its last place.
    gpu_tol = (2e-4, 2e-4) if dtype == np.float32 else (5e-3, 5e-3)
    if dtype == BF16:
        gpu_tol = None
    check(device, "aten::convolution.out", tensor(x, dtype, xo), tensor(w, dtype, wo),
          tensor(b, dtype) if bias else None, [s], [p], [d], False, [0], groups,
          Out(dtype, [3, 24, oh, ow], dim_order=oo), tol=TOL, gpu_tol=gpu_tol)


@pytest.mark.parametrize("order", [None, CL])
def test_conv2d_gemm_chunked_batch(device, order):
    x, w = rand((12, 64, 56, 56)), rand((16, 64, 3, 3))
    check(device, "aten::convolution.out", T(x, dim_order=order), w, rand((16,)), [1], [1], [1],
          False, [0], 1, Out(np.float32, [12, 16, 56, 56], dim_order=order), tol=(1e-4, 2e-4),
          gpu_tol=(2e-4, 2e-4))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("s,p,op,d", [(1, 0, 0, 1), (2, 1, 1, 1), (2, 0, 0, 2), (3, 1, 2, 1)])
@pytest.mark.parametrize("groups", [1, 2])
def test_conv_transposed(device, dtype, s, p, op, d, groups):
    x = rand((2, 4, 5, 6))
    w = rand((4, 6 // groups * groups // groups, 3, 3))
    cout = w.shape[1] * groups
    oh = (5 - 1) * s - 2 * p + d * 2 + op + 1
    ow = (6 - 1) * s - 2 * p + d * 2 + op + 1
    check(device, "aten::convolution.out", tensor(x, dtype), tensor(w, dtype), None, [s], [p], [d],
          True, [op], groups, Out(dtype, [2, cout, oh, ow]), tol=TOL, gpu_tol=conv_tol(dtype))


@pytest.mark.parametrize("order", [None, (0, 2, 1)])
def test_conv1d_strided(device, order):
    x = rand((2, 4, 20))
    w = rand((6, 4, 3))
    check(device, "aten::convolution.out", T(x, dim_order=order), w, rand((6,)), [2], [1], [2],
          False, [0], 1, Out(np.float32, [2, 6, conv_out(20, 3, 2, 1, 2)]), tol=TOL,
          gpu_tol=conv_tol(np.float32))


def test_conv_no_bias_empty_and_1x1(device):
    check(device, "aten::convolution.out", rand((1, 3, 4, 4)), rand((5, 3, 1, 1)), None, [1], [0],
          [1], False, [0], 1, Out(np.float32, [1, 5, 4, 4]), tol=TOL,
          gpu_tol=conv_tol(np.float32))
    check(device, "aten::convolution.out", rand((0, 3, 4, 4)), rand((5, 3, 3, 3)), None, [1], [1],
          [1], False, [0], 1, Out(np.float32, [0, 5, 4, 4]))


# ---- geometry, layouts and the CPU's kernels ---------------------------------------------------


def test_fixture_conv_3x3_pad1(device):
    x, w, b = normals(1, 3, 32, 32), normals(16, 3, 3, 3), normals(16)
    conv(device, x, w, b, padding=(1, 1))


def test_conv2d_new_weights_each_call(device):
    # oneDNN plans keep reordered weights while the weight bytes stay the
    # same; new values (at a reused address or not) must be reordered again.
    x, b = normals(2, 8, 8, 8), normals(16)
    for _ in range(6):
        w = normals(16, 8, 3, 3)
        conv(device, x, w, b, padding=(1, 1))


@pytest.mark.parametrize("stride,padding,dilation", [
    ((1, 1), (0, 0), (1, 1)), ((2, 2), (1, 1), (1, 1)), ((2, 1), (0, 2), (1, 1)),
    ((1, 1), (2, 2), (2, 2)), ((3, 2), (1, 0), (2, 1)),
])
def test_conv2d_geometry(device, stride, padding, dilation):
    x, w, b = normals(2, 4, 11, 9), normals(6, 4, 3, 3), normals(6)
    conv(device, x, w, b, stride, padding, dilation)


@pytest.mark.parametrize("groups,cin,cout", [(2, 4, 6), (8, 8, 8), (8, 8, 16), (3, 3, 3)])
def test_conv2d_groups_and_depthwise(device, groups, cin, cout):
    x, w, b = normals(1, cin, 10, 10), normals(cout, cin // groups, 3, 3), normals(cout)
    conv(device, x, w, b, padding=(1, 1), groups=groups)


@pytest.mark.parametrize("x_order,w_order,out_order", [
    (CL, None, CL), (CL, None, None), (None, None, CL), (None, CL, None), (CL, CL, CL),
])
def test_conv2d_dim_orders(device, x_order, w_order, out_order):
    x, w, b = normals(2, 8, 9, 7), normals(16, 8, 3, 3), normals(16)
    conv(device, x, w, b, padding=(1, 1), x_order=x_order, w_order=w_order, out_order=out_order)


def test_conv2d_depthwise_channels_last(device):
    x, w = normals(1, 16, 12, 12), normals(16, 1, 3, 3)
    conv(device, x, w, None, stride=(2, 2), padding=(1, 1), groups=16, x_order=CL, out_order=CL)


def test_conv2d_1x1_no_bias_two_threads(device):
    x, w = normals(2, 32, 28, 28), normals(64, 32, 1, 1)
    conv(device, x, w, None, num_threads=2)


def test_conv2d_larger_two_threads(device):
    x, w, b = normals(1, 16, 24, 24), normals(32, 16, 3, 3), normals(32)
    conv(device, x, w, b, padding=(1, 1), num_threads=2)


# Forward stride-1 f32 convolutions with at least 4 output channels per
# group run the CPU's own kernel (conv_f32.cpp): output channels in blocks
# of 16/8/4/2/1, runs of 8 or 16 columns with a partial last one, output
# rows grouped by which kernel rows fall inside the image (some rows may
# have none: only the bias), images split over two threads above 2^20
# multiply-adds.
@pytest.mark.parametrize("n,cin,cout,hw,k,padding,dilation,groups,threads", [
    (3, 5, 23, (9, 37), (3, 3), (1, 1), (1, 1), 1, 1),
    (2, 3, 12, (6, 5), (2, 3), (0, 2), (1, 2), 1, 1),
    (2, 4, 8, (5, 6), (1, 1), (2, 3), (1, 1), 1, 1),
    (1, 6, 9, (7, 19), (3, 2), (3, 1), (3, 1), 1, 1),
    (2, 8, 16, (8, 8), (3, 3), (1, 1), (1, 1), 2, 1),
    (9, 8, 16, (16, 16), (3, 3), (1, 1), (1, 1), 1, 2),
    (5, 1, 8, (8, 8), (3, 3), (1, 1), (1, 1), 1, 2),
])
def test_conv2d_own_kernel_shapes(device, n, cin, cout, hw, k, padding, dilation, groups,
                                  threads):
    x = normals(n, cin, *hw)
    w, b = normals(cout, cin // groups, *k), normals(cout)
    conv(device, x, w, b, padding=padding, dilation=dilation, groups=groups, num_threads=threads)
    conv(device, x, w, None, padding=padding, dilation=dilation, groups=groups, x_order=CL,
         w_order=CL, out_order=CL, num_threads=threads)


# Channels-last f32 convolutions (input and output NHWC) run the CPU's
# channels-last kernel (conv_f32_nhwc.cpp): dense ones as tiles of pixels x
# one or two vectors of output channels (a partial last block, tiles that
# cross rows and images, pixels past the end), each pixel reading whole
# kernel rows (with copies of those that cross the left or right border)
# or, with a column dilation, one tap at a time; depthwise ones as vectors
# of channels with a partial last one. Every epilogue (bias, clamp,
# hardswish, residual) and two threads over 2^20 multiply-adds.
@pytest.mark.parametrize("n,cin,cout,hw,k,stride,padding,dilation", [
    (1, 5, 1, (5, 4), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 8, 10, (9, 7), (3, 3), (2, 1), (1, 0), (1, 1)),
    (3, 6, 17, (6, 11), (2, 3), (1, 2), (0, 2), (1, 1)),
    (1, 33, 40, (8, 8), (1, 1), (1, 1), (0, 0), (1, 1)),
    (2, 7, 33, (10, 9), (5, 5), (1, 1), (2, 2), (1, 2)),
    (1, 16, 16, (13, 13), (3, 3), (3, 3), (1, 1), (2, 1)),
    (2, 12, 48, (4, 5), (3, 3), (1, 1), (3, 3), (1, 1)),
    # Rows of whole 8-pixel tiles; short kernel rows read a copy of the
    # input padded left and right (a stem's three channels, 16 channels),
    # longer ones copy the kernel rows that cross a border.
    (2, 3, 16, (32, 32), (3, 3), (1, 1), (1, 1), (1, 1)),
    (1, 4, 12, (15, 16), (3, 3), (1, 2), (1, 1), (1, 1)),
    (2, 16, 16, (8, 16), (3, 3), (1, 1), (1, 1), (1, 1)),
    (1, 24, 16, (6, 16), (3, 3), (1, 1), (1, 1), (1, 1)),
    # Three-channel stems in strips of one row (inputs 3 or 6 floats apart),
    # one or two vectors of output channels (24 channels take tiles of
    # blocks of 24 instead where those apply, see below).
    (1, 3, 16, (31, 32), (3, 3), (2, 2), (1, 1), (1, 1)),
    (1, 3, 24, (9, 16), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 3, 32, (8, 16), (3, 3), (2, 2), (1, 1), (1, 1)),
    # Layers of 16 input channels in strips too (inputs 16 or 32 floats
    # apart: stride 1 or 2), each over its padded copy of the input rows it
    # reads; a row dilation; two blocks of output channels (or blocks of 24).
    (2, 16, 32, (9, 32), (3, 3), (2, 2), (1, 1), (1, 1)),
    (1, 16, 16, (12, 16), (3, 3), (2, 1), (2, 1), (2, 1)),
    (2, 16, 48, (5, 16), (3, 3), (1, 1), (1, 1), (1, 1)),
    # With one column of padding, strips read a channels-last input where
    # it lies, leaving out the first tap of a row's first pixel and the last
    # tap of its last where it falls right of the input (stride 2 over an
    # odd width; a two-tap row whose only strip holds both ends; 32
    # channels at stride 1; a stem of three channels).
    (2, 16, 16, (7, 31), (3, 3), (2, 2), (1, 1), (1, 1)),
    (1, 16, 16, (6, 15), (3, 2), (1, 1), (1, 1), (1, 1)),
    (1, 32, 16, (6, 16), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 32, 32, (5, 16), (3, 3), (1, 1), (0, 1), (1, 1)),
    (2, 3, 16, (8, 32), (3, 3), (1, 1), (1, 1), (1, 1)),
    # Rows of two or more strips with the right edge alone (stride 2, a
    # two-tap row at stride 2); one and two channels (1 or 2 floats apart).
    (1, 16, 16, (4, 63), (3, 3), (2, 2), (1, 1), (1, 1)),
    (1, 16, 16, (3, 63), (3, 2), (2, 2), (1, 1), (1, 1)),
    (2, 1, 16, (5, 32), (3, 3), (1, 1), (1, 1), (1, 1)),
    (1, 2, 16, (4, 63), (3, 3), (2, 2), (1, 1), (1, 1)),
    # 1x1 layers in strips (a strided downsample; 32 channels at stride 1),
    # and a one-column kernel of three rows.
    (2, 16, 32, (8, 32), (1, 1), (2, 2), (0, 0), (1, 1)),
    (1, 32, 16, (3, 16), (1, 1), (1, 1), (0, 0), (1, 1)),
    (1, 16, 16, (6, 16), (3, 1), (1, 1), (1, 0), (2, 1)),
    # Where a 16-float multiply-add runs as two halves (AMD Zen 4), output
    # channels in blocks of 24 (three 8-float vectors): 20 (a partial third
    # vector), 72 (three blocks), 40 (24 + 16), besides 17, 24, 33, 48 above.
    (1, 8, 20, (10, 12), (3, 3), (2, 2), (1, 1), (1, 1)),
    (2, 16, 72, (7, 9), (1, 1), (1, 1), (0, 0), (1, 1)),
    (1, 24, 40, (9, 17), (3, 3), (1, 1), (1, 1), (1, 1)),
])
def test_conv2d_channels_last_kernel(device, n, cin, cout, hw, k, stride, padding, dilation):
    x = normals(n, cin, *hw)
    w, b = normals(cout, cin, *k), normals(cout)
    conv(device, x, w, b, stride=stride, padding=padding, dilation=dilation, x_order=CL,
         out_order=CL)
    conv(device, x, w, None, stride=stride, padding=padding, dilation=dilation, x_order=CL,
         w_order=CL, out_order=CL)


@pytest.mark.parametrize("c,hw,k,stride,padding,dilation", [
    (3, (7, 6), (3, 3), (1, 1), (1, 1), (1, 1)),
    (8, (9, 12), (3, 3), (2, 2), (1, 1), (1, 1)),
    (20, (11, 10), (5, 5), (1, 2), (2, 2), (1, 1)),
    (35, (6, 13), (3, 3), (1, 1), (2, 2), (2, 2)),
    (48, (4, 4), (3, 2), (2, 1), (0, 1), (1, 1)),
    # 3x3 rows wide enough for steps of 8 and 4 pixels with the weights in
    # registers, the edge pixels apart; 16 + 8 channels, stride 2.
    (32, (10, 21), (3, 3), (1, 1), (1, 1), (1, 1)),
    (24, (9, 30), (3, 3), (2, 2), (1, 1), (1, 1)),
])
def test_conv2d_channels_last_depthwise(device, c, hw, k, stride, padding, dilation):
    x = normals(2, c, *hw)
    w, b = normals(c, 1, *k), normals(c)
    conv(device, x, w, b, stride=stride, padding=padding, dilation=dilation, groups=c,
         x_order=CL, out_order=CL)


@pytest.mark.parametrize("kernel", ["pterun::convolution_relu.out",
                                    "pterun::convolution_hardswish.out",
                                    "pterun::convolution_add_relu.out"])
@pytest.mark.parametrize("groups", [1, 24])
def test_conv2d_channels_last_epilogues_two_threads(device, kernel, groups):
    # 2 x 24 x 40 x 40 -> 24 channels, 3x3: over 2^20 multiply-adds for
    # the dense case (split over the threads), fewer for the depthwise one.
    x = normals(2, 24, 40, 40) * 2
    w, b = normals(24, 24 // groups, 3, 3), normals(24)
    expected = ref_conv2d(x, w, b, (1, 1), (1, 1), (1, 1), groups)
    args = [T(x, dim_order=CL), w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], groups]
    if kernel.endswith("add_relu.out"):
        res = normals(*expected.shape)
        expected = np.maximum(expected + res, 0)
        args.append(T(res, dim_order=CL))
    elif kernel.endswith("hardswish.out"):
        expected = hardswish_f32(expected)
    else:
        expected = np.maximum(expected, 0)
    check(device, kernel, *args, Out(np.float32, expected.shape, dim_order=CL), expect=expected,
          tol=(1e-4, 1e-4), num_threads=2)


# Residual and ReLU in the stores of layers whose last block of output
# channels is partial (20 channels: 20 of a block of 24, or 16 + 4; 40:
# 24 + 16, or 32 + 8) and whose last tile has pixels past the end (35 and
# 54 pixels: not whole tiles of 8 or 10), on one and two threads.
@pytest.mark.parametrize("n,cin,cout,hw,k", [(1, 6, 20, (5, 7), 3), (2, 16, 40, (3, 9), 1)])
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_channels_last_residual_partial_blocks(device, n, cin, cout, hw, k, threads):
    x = normals(n, cin, *hw)
    w, b = normals(cout, cin, k, k), normals(cout)
    pad = k // 2
    expected = ref_conv2d(x, w, b, (1, 1), (pad, pad), (1, 1), 1)
    res = normals(*expected.shape)
    expected = np.maximum(expected + res, 0)
    check(device, "pterun::convolution_add_relu.out", T(x, dim_order=CL), w, b, [1, 1],
          [pad, pad], [1, 1], False, [0, 0], 1, T(res, dim_order=CL),
          Out(np.float32, expected.shape, dim_order=CL), expect=expected, tol=(1e-4, 1e-4),
          num_threads=threads)


@cpu_only("the block shapes are the CPU kernel's")
def test_conv2d_channels_last_both_block_shapes(device):
    # Where a 16-float multiply-add runs as two halves (AMD Zen 4), layers
    # of 17-24, 33-48, ... output channels take blocks of 24 (three 8-float
    # vectors), elsewhere blocks of 32. PTERUN_SPLIT_FMA (read once per
    # process) forces either, so both run here whatever the CPU.
    for split in ("0", "1"):
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
             "(channels_last_kernel or residual_partial_blocks or epilogues_two_threads or "
             "strips_residual) "
             "and cpu"],
            env={**os.environ, "PTERUN_SPLIT_FMA": split}, capture_output=True, text=True,
            timeout=900)
        assert run.returncode == 0, f"PTERUN_SPLIT_FMA={split}:\n{run.stdout[-4000:]}"
        assert " passed" in run.stdout, run.stdout[-2000:]


# An NCHW image into a channels-last network (the stem of a plain MobileNet
# whose activations pterun keeps channels-last): up to 4 input channels run as
# strips over the planes, or are copied channels-last (and padded) once, then
# the channels-last kernel runs; a transposed (non-contiguous) input takes the
# copy.
@pytest.mark.parametrize("n,cin,cout,hw,k,stride,padding", [
    (1, 3, 16, (31, 32), (3, 3), (2, 2), (1, 1)),
    (2, 3, 24, (9, 16), (3, 3), (1, 1), (1, 1)),
    # Strips read the planes where they lie: stride 2 over an odd width
    # (the last tap outside), two vectors of channels, one and four planes,
    # a two-tap row, no padding.
    (2, 3, 16, (7, 31), (3, 3), (2, 2), (1, 1)),
    (1, 3, 16, (4, 63), (3, 3), (2, 2), (1, 1)),
    (1, 3, 32, (5, 16), (3, 3), (1, 1), (1, 1)),
    (1, 1, 16, (4, 16), (3, 3), (1, 1), (1, 1)),
    (2, 4, 16, (6, 15), (2, 2), (1, 1), (1, 1)),
    (1, 3, 16, (6, 18), (3, 3), (1, 1), (0, 0)),
    (1, 3, 16, (4, 16), (1, 1), (1, 1), (0, 0)),
    (1, 4, 16, (20, 16), (17, 1), (1, 1), (8, 0)),
    (1, 4, 8, (7, 9), (3, 3), (1, 1), (0, 0)),
    (2, 2, 5, (6, 10), (2, 3), (2, 1), (1, 2)),
    (1, 1, 16, (12, 8), (5, 5), (1, 1), (2, 2)),
])
def test_conv2d_nchw_image_into_channels_last(device, n, cin, cout, hw, k, stride, padding):
    x = normals(n, cin, *hw)
    w, b = normals(cout, cin, *k), normals(cout)
    conv(device, x, w, b, stride=stride, padding=padding, out_order=CL)
    conv(device, x, w, b, stride=stride, padding=padding, x_order=(0, 1, 3, 2), out_order=CL)


@pytest.mark.parametrize("cin,cout,hw,stride,x_order", [
    (3, 16, (64, 64), 1, CL), (3, 16, (64, 64), 1, None), (3, 16, (64, 64), 1, (0, 1, 3, 2)),
    (16, 16, (32, 32), 1, CL), (16, 32, (48, 64), 2, CL), (32, 32, (32, 32), 1, CL)])
def test_conv2d_channels_last_strips_residual_two_threads(device, cin, cout, hw, stride, x_order):
    # Layers over 2^20 multiply-adds in strips (a 3-channel stem,
    # channels-last, NCHW or with its rows and columns swapped; 16 channels
    # at stride 1 and 2; 32 at stride 1): the output rows are split over the
    # threads, each reading the input where it lies (the planes of the NCHW
    # image) or, for the swapped image, copying the input rows its own rows
    # read into its own slot.
    x = normals(2, cin, *hw)
    w, b = normals(cout, cin, 3, 3), normals(cout)
    expected = ref_conv2d(x, w, b, (stride, stride), (1, 1), (1, 1), 1)
    res = normals(*expected.shape)
    expected = np.maximum(expected + res, 0)
    check(device, "pterun::convolution_add_relu.out", T(x, dim_order=x_order), w, b,
          [stride, stride], [1, 1], [1, 1], False, [0, 0], 1, T(res, dim_order=CL),
          Out(np.float32, expected.shape, dim_order=CL), expect=expected, tol=(1e-4, 1e-4),
          num_threads=2)


# 3x3 layers of stride 1 whose channels are whole vectors: the CPU runs them
# as Winograd F(2x2, 3x3) (conv_f32_nhwc_winograd.cpp), whose transforms
# round differently from the direct sum; its error stays within the float
# tolerance of the direct kernels. Odd output sizes (tiles past the edge),
# no, one and two pixels of padding, 16 to 64 input channels (64 and 48:
# the compile-time and general channel loops), blocks of one and two
# vectors of output channels, residual and ReLU, one and two threads.
@pytest.mark.parametrize("n,cin,cout,hw,padding", [
    (1, 16, 16, (8, 8), (1, 1)),
    (2, 32, 48, (9, 11), (1, 1)),
    (1, 16, 64, (5, 7), (0, 0)),
    (1, 48, 32, (6, 5), (2, 2)),
    (3, 64, 32, (13, 4), (1, 0)),
])
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_channels_last_3x3_stride1(device, n, cin, cout, hw, padding, threads):
    x = normals(n, cin, *hw)
    w, b = normals(cout, cin, 3, 3), normals(cout)
    conv(device, x, w, b, padding=padding, x_order=CL, out_order=CL, num_threads=threads)
    expected = ref_conv2d(x, w, b, (1, 1), padding, (1, 1), 1)
    res = normals(*expected.shape)
    expected = np.maximum(expected + res, 0)
    check(device, "pterun::convolution_add_relu.out", T(x, dim_order=CL), w, b, [1, 1],
          list(padding), [1, 1], False, [0, 0], 1, T(res, dim_order=CL),
          Out(np.float32, expected.shape, dim_order=CL), expect=expected, tol=(1e-4, 1e-4),
          num_threads=threads)


def test_conv2d_channels_last_3x3_stride1_infinities(device):
    # An infinite input gives +-inf in the outputs that read it, as the
    # direct sum does (the Winograd transforms' sums of opposite signs
    # would make NaN of it: such tiles are computed directly); a NaN input
    # gives NaN in the outputs that read it and nowhere else.
    x = normals(1, 16, 6, 7)
    x[0, 3, 2, 2] = np.inf
    x[0, 5, 4, 5] = -np.inf
    x[0, 7, 0, 6] = np.nan
    w, b = normals(32, 16, 3, 3), normals(32)
    got = conv(device, x, w, b, padding=(1, 1), x_order=CL, out_order=CL)
    assert np.isinf(got).any() and np.isnan(got).any()


def test_conv1d_stride1_own_kernel(device):
    x, w, b = normals(3, 5, 40), normals(8, 5, 3), normals(8)
    expected = ref_conv2d(x[:, :, None], w[:, :, None], b, (1, 1), (0, 1), (1, 1), 1)[:, :, 0]
    check(device, "aten::convolution.out", x, w, b, [1], [1], [1], False, [0], 1,
          Out(np.float32, expected.shape), expect=expected, tol=(1e-4, 1e-4))


@pytest.mark.parametrize("order", [None, (0, 2, 1)])
def test_conv1d(device, order):
    x, w, b = normals(2, 5, 17), normals(7, 5, 3), normals(7)
    expected = ref_conv2d(x[:, :, None], w[:, :, None], b, (1, 2), (0, 1), (1, 2), 1)[:, :, 0]
    check(device, "aten::convolution.out", T(x, dim_order=order), w, b, [2], [1], [2], False, [0],
          1, Out(np.float32, expected.shape, dim_order=order), expect=expected, tol=(1e-4, 1e-4))


def test_conv1d_depthwise_transposed(device):
    x, w = normals(1, 4, 6), normals(4, 1, 3)
    expected = ref_conv_transpose2d(x[:, :, None], w[:, :, None], None, (1, 2), (0, 1), (1, 1), 4,
                                    (0, 1))[:, :, 0]
    check(device, "aten::convolution.out", x, w, None, [2], [1], [1], True, [1], 4,
          Out(np.float32, expected.shape), expect=expected, tol=(1e-4, 1e-4))


@pytest.mark.parametrize("stride,padding,dilation,output_padding,groups", [
    ((2, 2), (0, 0), (1, 1), (0, 0), 1), ((2, 2), (1, 1), (1, 1), (1, 1), 1),
    ((2, 3), (0, 1), (1, 1), (1, 2), 1), ((1, 1), (1, 1), (2, 2), (1, 1), 2),
    ((2, 2), (1, 0), (1, 1), (0, 1), 2),
])
def test_conv_transpose2d(device, stride, padding, dilation, output_padding, groups):
    x, w, b = normals(2, 4, 5, 6), normals(4, 3, 3, 3), normals(3 * groups)
    conv(device, x, w, b, stride, padding, dilation, groups, True, output_padding)


def test_conv_transpose2d_channels_last(device):
    x, w, b = normals(1, 8, 6, 6), normals(8, 4, 2, 2), normals(4)
    conv(device, x, w, b, (2, 2), transposed=True, x_order=CL, w_order=CL, out_order=CL)


def test_conv2d_float64(device):
    x, w = normals(1, 4, 7, 7, dtype=np.float64), normals(6, 2, 3, 3, dtype=np.float64)
    b = normals(6).astype(np.float64)
    conv(device, x, w, b, (2, 1), (1, 1), (1, 2), groups=2, x_order=CL, dtype=np.float64,
         tol=(1e-10, 1e-10))


def test_conv_transpose2d_float64(device):
    x, w = normals(1, 2, 4, 4, dtype=np.float64), normals(2, 3, 3, 3, dtype=np.float64)
    conv(device, x, w, None, (2, 2), (1, 1), transposed=True, output_padding=(1, 1),
         dtype=np.float64, tol=(1e-10, 1e-10))


def test_conv2d_float16(device):
    x, w = normals(1, 4, 8, 8, dtype=np.float16), normals(8, 4, 3, 3, dtype=np.float16)
    conv(device, x, w, normals(8, dtype=np.float16), padding=(1, 1), dtype=np.float16,
         tol=(1e-2, 2e-2))


def test_conv2d_bfloat16_channels_last(device):
    x, w, b = bf16(normals(1, 4, 8, 8)), bf16(normals(8, 4, 3, 3)), bf16(normals(8))
    conv(device, x, w, b, padding=(1, 1), x_order=CL, out_order=CL, as_bf16=True,
         tol=(2e-2, 6e-2))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_conv2d_integers(device, dtype):
    x, w = normals(1, 3, 6, 6, dtype=dtype), normals(4, 3, 3, 3, dtype=dtype)
    conv(device, x, w, normals(4, dtype=dtype), padding=(1, 1), dtype=dtype, tol=None)


def test_conv2d_empty_batch(device):
    check(device, "aten::convolution.out", normals(0, 3, 5, 5), normals(4, 3, 3, 3), None, [1, 1],
          [1, 1], [1, 1], False, [0, 0], 1, Out(np.float32, (0, 4, 5, 5)),
          expect=np.zeros((0, 4, 5, 5)))


def test_conv2d_resizes_dynamic_out(device):
    x, w = normals(1, 2, 6, 6), normals(3, 2, 3, 3)
    expected = ref_conv2d(x, w, None, (1, 1), (0, 0), (1, 1), 1)
    check(device, "aten::convolution.out", x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
          Out(np.float32, (1, 3, 6, 6), dynamic=True), expect=expected, tol=(1e-5, 1e-5))


def conv_error(device, x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1),
               transposed=False, output_padding=(0, 0), groups=1, out_shape=(1, 1, 1, 1),
               out_dtype=np.float32):
    check_error(device, "aten::convolution.out", x, w, b, list(stride), list(padding),
                list(dilation), transposed, list(output_padding), groups,
                Out(out_dtype, out_shape), exc=ValueError)


def test_conv_errors(device):
    # channel mismatch
    conv_error(device, normals(1, 3, 5, 5), normals(4, 2, 3, 3), out_shape=(1, 4, 3, 3))
    # bias length
    conv_error(device, normals(1, 3, 5, 5), normals(4, 3, 3, 3), normals(3),
               out_shape=(1, 4, 3, 3))
    # rank
    conv_error(device, normals(3, 5, 5), normals(4, 3, 3, 3), out_shape=(1, 4, 3, 3))
    # dtype mismatch
    conv_error(device, normals(1, 3, 5, 5), normals(4, 3, 3, 3, dtype=np.float64),
               out_shape=(1, 4, 3, 3))
    # kernel larger than the input
    conv_error(device, normals(1, 3, 2, 2), normals(4, 3, 3, 3), out_shape=(1, 4, 1, 1))
    # groups do not divide
    conv_error(device, normals(1, 4, 5, 5), normals(3, 2, 3, 3), groups=2, out_shape=(1, 3, 3, 3))
    # output_padding >= stride and dilation
    conv_error(device, normals(1, 2, 3, 3), normals(2, 2, 3, 3), transposed=True,
               output_padding=(1, 1), out_shape=(1, 2, 6, 6))
    # stride 0
    conv_error(device, normals(1, 3, 5, 5), normals(4, 3, 3, 3), stride=(0, 1),
               out_shape=(1, 4, 3, 3))
    # bool
    conv_error(device, np.ones((1, 1, 3, 3), bool), np.ones((1, 1, 1, 1), bool),
               out_shape=(1, 1, 3, 3), out_dtype=np.bool_)


# ---- the CPU's own f32 kernel: strides, depthwise, bands, in-place 1x1, fused clamps -----------


# Any stride (the padded rows split into phases), depthwise and channel
# multipliers (one input channel per group), images larger than a band of
# L2 (several bands, and bands over threads for a single image), 1x1
# convolutions read in place as wide rows, each in NCHW and channels-last.
@pytest.mark.parametrize("n,cin,cout,hw,k,stride,padding,dilation,groups,threads", [
    (1, 16, 16, (12, 12), (3, 3), (2, 2), (1, 1), (1, 1), 16, 1),
    (2, 24, 24, (17, 15), (3, 3), (1, 1), (1, 1), (1, 1), 24, 1),
    (1, 8, 16, (13, 11), (3, 3), (2, 2), (1, 1), (1, 1), 8, 1),
    (1, 6, 6, (9, 10), (5, 3), (3, 2), (2, 1), (1, 2), 6, 1),
    (2, 3, 16, (32, 32), (3, 3), (2, 2), (1, 1), (1, 1), 1, 1),
    (1, 16, 32, (16, 16), (1, 1), (2, 2), (0, 0), (1, 1), 1, 1),
    (2, 16, 24, (16, 16), (1, 1), (1, 1), (0, 0), (1, 1), 1, 1),
    (1, 24, 40, (7, 7), (1, 1), (1, 1), (0, 0), (1, 1), 1, 1),
    (1, 16, 8, (96, 80), (3, 3), (1, 1), (1, 1), (1, 1), 1, 2),
    (1, 32, 32, (60, 64), (3, 3), (2, 2), (1, 1), (1, 1), 32, 2),
    (1, 64, 64, (40, 40), (3, 3), (1, 1), (1, 1), (1, 1), 64, 2),
    (3, 32, 48, (24, 24), (1, 1), (1, 1), (0, 0), (1, 1), 1, 2),
    (1, 8, 16, (20, 20), (3, 3), (2, 2), (1, 1), (1, 1), 2, 2),
    (1, 64, 128, (16, 16), (1, 1), (1, 1), (0, 0), (1, 1), 1, 2),  # output channels split
    (1, 64, 72, (2, 40), (3, 3), (1, 1), (1, 1), (1, 1), 1, 2),
])
def test_conv2d_own_kernel_strides_depthwise_bands(device, n, cin, cout, hw, k, stride, padding,
                                                    dilation, groups, threads):
    x = normals(n, cin, *hw)
    w, b = normals(cout, cin // groups, *k), normals(cout)
    conv(device, x, w, b, stride, padding, dilation, groups, num_threads=threads)
    conv(device, x, w, None, stride, padding, dilation, groups, x_order=CL, w_order=CL,
         out_order=CL, num_threads=threads)


def fused(device, kernel, x, w, b, stride, padding, groups, bounds=(), x_order=None,
          out_order=None, dtype=np.float32, tol=(1e-4, 1e-4), threads=1):
    expected = ref_conv2d(x, w, b, stride, padding, (1, 1), groups)
    lo, hi = bounds if bounds else (0.0, np.inf)
    expected = np.minimum(np.maximum(expected, lo), hi)
    check(device, kernel, tensor(x, dtype, x_order), tensor(w, dtype),
          None if b is None else tensor(b, dtype), list(stride), list(padding), [1, 1], False,
          [0, 0], groups, *bounds, Out(dtype, expected.shape, dim_order=out_order),
          expect=expected, tol=tol, num_threads=threads)


# The kernels a batch norm and relu / hardtanh fold into at load
# (executor/rewrite.h): the clamp in the own kernel's stores, and after the
# other paths (oneDNN for float16, the direct loops for float64).
@pytest.mark.parametrize("dtype,tol", [(np.float32, (1e-4, 1e-4)), (np.float16, (1e-2, 2e-2)),
                                       (np.float64, (1e-10, 1e-10))])
@pytest.mark.parametrize("order", [None, CL])
def test_conv_fused_relu_and_hardtanh(device, dtype, tol, order):
    x = normals(2, 8, 10, 9)
    for w, stride, padding, groups in [(normals(16, 8, 3, 3), (1, 1), (1, 1), 1),
                                       (normals(8, 1, 3, 3), (2, 2), (1, 1), 8),
                                       (normals(12, 8, 1, 1), (1, 1), (0, 0), 1)]:
        b = normals(w.shape[0])
        fused(device, "pterun::convolution_relu.out", x, w, b, stride, padding, groups,
              x_order=order, out_order=order, dtype=dtype, tol=tol)
        fused(device, "pterun::convolution_hardtanh.out", x, w, None, stride, padding, groups,
              bounds=(-0.5, 1.5), x_order=order, out_order=order, dtype=dtype, tol=tol)


@pytest.mark.parametrize("order", [None, CL])
def test_conv_fused_hardswish(device, order):
    x = normals(2, 8, 10, 9) * 2
    for w, stride, padding, groups in [(normals(16, 8, 3, 3), (1, 1), (1, 1), 1),
                                       (normals(8, 1, 3, 3), (2, 2), (1, 1), 8),
                                       (normals(12, 8, 1, 1), (1, 1), (0, 0), 1)]:
        expected = hardswish_f32(ref_conv2d(x, w, None, stride, padding, (1, 1), groups))
        check(device, "pterun::convolution_hardswish.out", T(x, dim_order=order), w, None,
              list(stride), list(padding), [1, 1], False, [0, 0], groups,
              Out(np.float32, expected.shape, dim_order=order), expect=expected, tol=(1e-4, 1e-4))


# A residual connection added in the convolution's stores (then relu):
# the own kernel with whole and partial runs, channels-last outputs and
# residuals, the wide-row 1x1 path, and float16 through oneDNN.
@pytest.mark.parametrize("kernel", ["pterun::convolution_add.out",
                                    "pterun::convolution_add_relu.out"])
@pytest.mark.parametrize("dtype,tol", [(np.float32, (1e-4, 1e-4)), (np.float16, (1e-2, 2e-2))])
@pytest.mark.parametrize("orders", [(None, None, None), (CL, CL, CL), (None, CL, None),
                                    (CL, None, CL)])
def test_conv_fused_residual(device, kernel, dtype, tol, orders):
    xo, ro, oo = orders
    x = normals(2, 8, 10, 9)
    for w, stride, padding, groups in [(normals(16, 8, 3, 3), (1, 1), (1, 1), 1),
                                       (normals(8, 1, 3, 3), (2, 2), (1, 1), 8),
                                       (normals(12, 8, 1, 1), (1, 1), (0, 0), 1)]:
        expected = ref_conv2d(x, w, None, stride, padding, (1, 1), groups)
        res = normals(*expected.shape)
        expected = expected + res
        if kernel.endswith("relu.out"):
            expected = np.maximum(expected, 0)
        check(device, kernel, tensor(x, dtype, xo), tensor(w, dtype), None, list(stride),
              list(padding), [1, 1], False, [0, 0], groups, tensor(res, dtype, ro),
              Out(dtype, expected.shape, dim_order=oo), expect=expected, tol=tol)
    x = normals(1, 16, 16, 16)
    w = normals(24, 16, 1, 1)
    expected = ref_conv2d(x, w, None, (1, 1), (0, 0), (1, 1), 1)
    res = normals(*expected.shape)
    expected = expected + res
    if kernel.endswith("relu.out"):
        expected = np.maximum(expected, 0)
    check(device, kernel, tensor(x, dtype, xo), tensor(w, dtype), None, [1, 1], [0, 0], [1, 1],
          False, [0, 0], 1, tensor(res, dtype, ro), Out(dtype, expected.shape, dim_order=oo),
          expect=expected, tol=tol)


def test_conv_fused_residual_shape_error(device):
    check_error(device, "pterun::convolution_add.out", normals(1, 4, 6, 6), normals(8, 4, 3, 3),
                None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, normals(1, 8, 5, 5),
                Out(np.float32, (1, 8, 6, 6)), exc=ValueError, cpu_only="a CPU kernel")


def test_conv_fused_hardtanh_keeps_nan_and_two_threads(device):
    x = normals(1, 16, 32, 32)
    x[0, 3, 5, 7] = np.nan
    w = normals(16, 16, 3, 3)
    fused(device, "pterun::convolution_hardtanh.out", x, w, normals(16), (1, 1), (1, 1), 1,
          bounds=(0.0, 6.0), threads=2)

"""The integer kernels the loader runs in place of dequantize -> op ->
quantize chains (pterun::quantized_linear / conv2d / mean / weight_sums)
against NumPy: exact int64 sums, then the requantization in float32
(float(acc) * float32(input_scale * weight_scale) + bias, ExecuTorch's
rounding, the output clamp). Shapes cover the GEMM's tile edges and depth
tails, groups (depthwise), strides, dilation, padding, both layouts of
input and weight, uint8 activations, threads, and the argument errors."""

import numpy as np
import pytest

from harness import CL, Out, T, check, check_error, cpu_only, normal, rand, reference, value

LINEAR = "pterun::quantized_linear.out"
LINEAR_FLOAT = "pterun::quantized_linear_float.out"
XCONV_FLOAT = "xnnpack::quantized_conv2d_float"
CONV = "pterun::quantized_conv2d.out"
MEAN = "pterun::quantized_mean.out"
SUMS = "pterun::quantized_weight_sums.out"
F32 = np.float32


def requantize(acc, in_scale, w_scales, bias, out_scale, out_zp, lo, hi, dt, channel_axis):
    """ExecuTorch's quantization of float32(acc) * multiplier + bias."""
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    ws = np.broadcast_to(np.asarray(w_scales).astype(F32).reshape(-1), (acc.shape[channel_axis],))
    mult = (F32(in_scale) * ws).astype(F32).reshape(shape)
    y = (acc.astype(F32) * mult).astype(F32)
    if bias is not None:
        y = (y + np.asarray(bias, F32).reshape(shape)).astype(F32)
    inv = F32(1) / F32(out_scale)
    s = (F32(out_zp) + np.rint((y * inv).astype(F32))).astype(np.float64)
    return np.where(np.isnan(s), lo, np.clip(s, lo, hi)).astype(np.int64).astype(dt)


@reference(SUMS)
def sums_model(w, out):
    w = value(w)
    return w.reshape(w.shape[0], -1).astype(np.int64).sum(axis=1).astype(np.int32)


@reference(LINEAR)
def linear_model(x, sx, zx, w, ws, sums, bias, so, zo, lo, hi, out):
    x, w = value(x).astype(np.int64), value(w).astype(np.int64)
    acc = (x - zx) @ w.T
    return requantize(acc, sx, value(ws), value(bias), so, zo, lo, hi, out.dtype_np, -1)


@reference(LINEAR_FLOAT)
def linear_float_model(x, sx, zx, w, ws, sums, bias, so, zo, lo, hi, out):
    """A float32 input quantized to int8 as quantize_per_tensor does; a
    float32 out dequantized as dequantize_per_tensor does."""
    x = value(x)
    if x.dtype == F32:
        p = (F32(1) / F32(sx)) * x
        x = np.clip(F32(zx) + np.rint(p), -128, 127).astype(np.int8)
    acc = (x.astype(np.int64) - zx) @ value(w).astype(np.int64).T
    float_out = out.dtype_np == F32
    q = requantize(acc, sx, value(ws), value(bias), so, zo, lo, hi,
                   np.int8 if float_out else out.dtype_np, -1)
    return ((q.astype(np.int64) - zo).astype(F32) * F32(so)).astype(F32) if float_out else q


def conv_acc(x, w, stride, padding, dilation, groups):
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    og = oc // groups
    acc = np.zeros((n, oc, oh, ow), np.int64)
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i * dilation[0]:i * dilation[0] + stride[0] * (oh - 1) + 1:stride[0],
                           j * dilation[1]:j * dilation[1] + stride[1] * (ow - 1) + 1:stride[1]]
                acc[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                         w[g * og:(g + 1) * og, :, i, j])
    return acc


@reference(CONV)
def conv_model(x, sx, zx, w, ws, sums, bias, stride, padding, dilation, groups, so, zo, lo, hi,
               out):
    x = value(x).astype(np.int64) - zx  # padding then reads a real 0
    acc = conv_acc(x, value(w).astype(np.int64), stride, padding, dilation, groups)
    return requantize(acc, sx, value(ws), value(bias), so, zo, lo, hi, out.dtype_np, 1)


def quantize_f32(x, scale, zp):
    """quantize_per_tensor to int8: zp + rint(float32(1 / scale) * x), clamped (NaN: -128)."""
    p = (F32(1) / F32(scale)) * value(x).astype(F32)
    q = F32(zp) + np.rint(p)
    return np.where(np.isnan(q), -128, np.clip(q, -128, 127)).astype(np.int8)


@reference(XCONV_FLOAT)
def xconv_float_model(x, sx, zx, w, ws, sums, bias, padding, stride, dilation, groups, so, zo, lo,
                      hi, out):
    q = quantize_f32(x, sx, zx).astype(np.int64) - zx
    acc = conv_acc(q, value(w).astype(np.int64), stride, padding, dilation, groups)
    y = requantize(acc, sx, value(ws), value(bias), so, zo, lo, hi, np.int8, 1)
    return np.ascontiguousarray(y.transpose(0, 2, 3, 1))  # NHWC, as XNNPACK's nodes


@reference(MEAN)
def mean_model(x, sx, zx, dims, so, zo, lo, hi, out):
    x = value(x).astype(np.int64)
    total = x.sum(axis=tuple(dims), keepdims=True)
    count = np.prod([x.shape[d] for d in dims])
    y = ((total - count * zx).astype(F32) * F32(sx)).astype(F32) / F32(count)
    inv = F32(1) / F32(so)
    s = (F32(zo) + np.rint((y.astype(F32) * inv).astype(F32))).astype(np.float64)
    return np.clip(s, lo, hi).astype(np.int64).astype(out.dtype_np)


class QOut(Out):
    """An Out that remembers its NumPy dtype for the models."""

    def __init__(self, dtype, shape, dim_order=None):
        super().__init__(dtype, shape, dim_order=dim_order)
        self.dtype_np = np.dtype(dtype)


def weights(n, k_shape, low=-127, high=128):
    w = rand((n,) + tuple(k_shape), np.int8, low, high)
    return w, w.reshape(n, -1).astype(np.int64).sum(axis=1).astype(np.int32)


@pytest.mark.parametrize("m,k,n", [(1, 8, 10), (4, 32, 64), (5, 64, 3), (7, 65, 9), (3, 200, 17),
                                   (66, 31, 5), (1, 1, 1), (40, 130, 70)])
@pytest.mark.parametrize("in_dt", [np.int8, np.uint8])
def test_quantized_linear(device, m, k, n, in_dt):
    lo, hi = (-128, 127) if in_dt == np.int8 else (0, 255)
    x = rand((m, k), in_dt, lo, hi + 1)
    w, sums = weights(n, (k,))
    ws = rand((n,), F32, 0.001, 0.01)
    bias = normal((n,), F32)
    zx = (lo + hi) // 2 + 3
    check(device, LINEAR, x, 0.02, zx, w, ws, sums, bias, 0.05, -5, -128, 127,
          QOut(np.int8, (m, n)))
    # No bias, one weight scale, a relu-narrowed clamp, a uint8 out, 3-D input.
    x3 = x.reshape(1, m, k)
    check(device, LINEAR, x3, 0.02, zx, w, ws[:1].astype(np.float64), sums, None, 0.05, 100, 100,
          255, QOut(np.uint8, (1, m, n)))


@cpu_only("the quantize and dequantize around a linear layer fuse on the CPU")
@pytest.mark.parametrize("m,k,n", [(4, 32, 64), (1, 8, 10), (40, 130, 70), (3, 200, 17)])
def test_quantized_linear_float(device, m, k, n):
    # The quantize before and/or the dequantize after the layer inside it
    # (executor find_quant_io_fusions): a float32 input, out, or both; the
    # input's range crosses the clamp; 1 and 2 threads.
    x = (normal((m, k), F32) * 4).astype(F32)
    x8 = rand((m, k), np.int8, -128, 128)
    w, sums = weights(n, (k,))
    ws = rand((n,), F32, 0.001, 0.01)
    bias = normal((n,), F32)
    for threads in (1, 2):
        check(device, LINEAR_FLOAT, x, 0.02, 3, w, ws, sums, bias, 0.05, -5, -128, 127,
              QOut(np.int8, (m, n)), num_threads=threads)
        check(device, LINEAR_FLOAT, x8, 0.02, 3, w, ws, sums, None, 0.05, -5, -20, 127,
              QOut(F32, (m, n)), num_threads=threads)
        check(device, LINEAR_FLOAT, x.reshape(1, m, k), 0.02, 3, w, ws, sums, bias, 0.05, -5, -128,
              127, QOut(F32, (1, m, n)), num_threads=threads)


def test_quantized_linear_float_errors(device):
    x = normal((2, 8), F32)
    x8 = rand((2, 8), np.int8, -128, 128)
    w, sums = weights(3, (8,))
    ws = rand((3,), F32, 0.001, 0.01)

    def error(inp, out, in_scale=0.02, match=None):
        check_error(device, LINEAR_FLOAT, inp, in_scale, 0, w, ws, sums, None, 0.05, 0, -128, 127,
                    out, exc=ValueError, match=match)

    error(x8, QOut(np.int8, (2, 3)), match="float32")   # neither side float32
    error(x, QOut(F32, (2, 3)), in_scale=0.0, match="scale")
    error(x.astype(np.float64), QOut(F32, (2, 3)), match="int8 or uint8")
    # The plain layer takes no float32 side.
    check_error(device, LINEAR, x, 0.02, 0, w, ws, sums, None, 0.05, 0, -128, 127,
                QOut(F32, (2, 3)), exc=ValueError)


@pytest.mark.parametrize("in_dt", [np.int8, np.uint8])
@pytest.mark.parametrize("m,k,n", [
    (33, 520, 96),     # 16 rows and more, weights kept packed: rows broadcast against them
    (33, 520, 24),     # the same below AMX's 32 channels (the vector kernel on any CPU)
    (20, 1040, 1024),  # weights over 1 MiB: packed rows, the weights read in place
])
def test_quantized_linear_many_rows(device, m, k, n, in_dt):
    lo, hi = (-128, 127) if in_dt == np.int8 else (0, 255)
    x = rand((m, k), in_dt, lo, hi + 1)
    w, sums = weights(n, (k,))
    ws = rand((n,), F32, 0.0005, 0.002)
    bias = normal((n,), F32)
    check(device, LINEAR, x, 0.02, (lo + hi) // 2 - 7, w, ws, sums, bias, 0.2, 3, -128, 127,
          QOut(np.int8, (m, n)))


@pytest.mark.parametrize("m,n", [(300, 40), (3, 600), (40, 250)])  # by rows; by channels
def test_quantized_linear_threads(device, m, n):
    x = rand((m, 96), np.int8, -128, 128)
    w, sums = weights(n, (96,))
    ws = rand((n,), F32, 0.001, 0.01)
    bias = normal((n,), F32)
    check(device, LINEAR, x, 0.02, 0, w, ws, sums, bias, 0.1, 0, -128, 127,
          QOut(np.int8, (m, n)), num_threads=2)


def test_weight_sums(device):
    w = rand((6, 3, 3, 3), np.int8, -128, 128)
    check(device, SUMS, w, Out(np.int32, (6,)))
    check(device, SUMS, T(w, dim_order=CL), Out(np.int32, (6,)))


CONV_CASES = [
    # (n, c, h, w), (oc, kh, kw), stride, padding, dilation, groups
    ((1, 3, 16, 16), (8, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 8, 9, 7), (16, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    ((1, 8, 8, 8), (8, 3, 3), (1, 1), (1, 1), (1, 1), 8),      # depthwise
    ((2, 40, 9, 11), (40, 3, 3), (2, 1), (1, 2), (1, 2), 40),  # depthwise, 16 + 16 + 8 channels
    ((1, 8, 10, 10), (4, 1, 1), (1, 1), (0, 0), (1, 1), 2),    # 1x1, grouped
    ((1, 4, 12, 11), (6, 3, 2), (1, 2), (2, 0), (2, 1), 1),    # dilation, uneven
    ((1, 70, 5, 5), (3, 1, 1), (1, 1), (0, 0), (1, 1), 1),     # K past one 64-byte step
    ((1, 8, 10, 9), (6, 3, 3), (1, 1), (1, 1), (2, 2), 2),     # windows in place: groups of 4
    ((2, 68, 7, 6), (40, 3, 2), (2, 1), (1, 0), (1, 1), 1),    # windows in place, 64 + 4 a tap
    # A few channels widened to a multiple of 4 (their weights 0), read in
    # place; unpadded, so staged only for the widening.
    ((2, 5, 9, 8), (12, 3, 3), (2, 1), (0, 0), (2, 1), 1),
    ((3, 2, 6, 5), (7, 2, 3), (1, 1), (1, 1), (1, 1), 1),
    # Unpadded: a channels-last int8 image read in place, with its sums.
    ((2, 8, 7, 9), (12, 3, 3), (1, 2), (0, 0), (1, 1), 1),
    # Padded 1x1 convolutions: their border pixels read the zero point
    # (whole groups of 4 channels, and 3 widened to 4).
    ((1, 8, 8, 8), (8, 1, 1), (1, 1), (1, 1), (1, 1), 1),
    ((1, 3, 9, 10), (6, 1, 1), (1, 1), (1, 1), (1, 1), 1),
    # The products on AMX tiles where the CPU has them (32 channels or more,
    # K of 64 or more): K 99 (a partial group of 4 and a partial step of 64),
    # 48 channels (a panel pair and a single panel), 90 pixels (a partial
    # block of rows); then two groups of 32 channels, K 288.
    ((1, 11, 9, 10), (48, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 64, 6, 7), (64, 3, 3), (1, 2), (1, 1), (1, 1), 2),
]


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("in_order", [None, CL])
@pytest.mark.parametrize("w_order", [None, CL])
def test_quantized_conv2d(device, case, in_order, w_order):
    shape, (oc, kh, kw), stride, padding, dilation, groups = CONV_CASES[case]
    x = rand(shape, np.int8, -128, 128)
    w, sums = weights(oc, (shape[1] // groups, kh, kw))
    ws = rand((oc,), F32, 0.001, 0.01)
    bias = normal((oc,), F32)
    acc_shape = conv_acc(np.zeros(shape, np.int64), w.astype(np.int64), stride, padding, dilation,
                         groups).shape
    check(device, CONV, T(x, dim_order=in_order), 0.03, -7, T(w, dim_order=w_order), ws, sums,
          bias, list(stride), list(padding), list(dilation), groups, 0.08, 4, -128, 127,
          QOut(np.int8, acc_shape, dim_order=in_order))


@cpu_only("the quantize and transpose before a convolution fuse on the CPU")
@pytest.mark.parametrize("shape,oc,k,stride,padding,groups", [
    ((1, 3, 16, 16), 8, 3, 1, 1, 1),    # an RGB stem: 3 channels widened to 4
    ((2, 3, 9, 21), 16, 3, 2, 1, 1),    # rows of 16 + 5 pixels staged, stride 2
    ((1, 5, 7, 10), 6, 3, 1, 0, 1),     # 5 channels (widened to 8), no padding
    ((1, 8, 6, 6), 12, 2, 1, 1, 1),     # whole groups of 4: read in place
    ((2, 4, 5, 19), 4, 3, 1, 1, 4),     # depthwise
])
def test_xnnpack_quantized_conv2d_float(device, shape, oc, k, stride, padding, groups):
    # xnnpack::quantized_conv2d of a float32 NCHW input (the quantize and the
    # transpose to NHWC before an XNNPACK int8 graph's first convolution,
    # folded in at load): values past the int8 range, NaN and infinities.
    x = (normal(shape, F32) * 3).astype(F32)
    x.flat[::17] = 40.0
    x.flat[5] = np.nan
    x.flat[7] = -np.inf
    w, sums = weights(oc, (shape[1] // groups, k, k))
    ws = rand((oc,), F32, 0.001, 0.01)
    bias = normal((oc,), F32)
    oh = (shape[2] + 2 * padding - k) // stride + 1
    ow = (shape[3] + 2 * padding - k) // stride + 1
    for threads in (1, 2):
        check(device, XCONV_FLOAT, x, 0.05, -3, w, ws, sums, bias, [padding, padding],
              [stride, stride], [1, 1], groups, 0.08, 4, -128, 127,
              QOut(np.int8, (shape[0], oh, ow, oc)), num_threads=threads)


def test_quantized_conv2d_uint8_and_threads(device):
    x = rand((2, 6, 14, 14), np.uint8, 0, 256)
    w, sums = weights(12, (6, 3, 3))
    ws = rand((12,), F32, 0.001, 0.01)
    check(device, CONV, x, 0.03, 128, w, ws, sums, None, [1, 1], [1, 1], [1, 1], 1, 0.08, 0, 0,
          255, QOut(np.uint8, (2, 12, 14, 14)), num_threads=2)
    # uint8 windows read in place (a channels-last weight, 8 channels a tap).
    x = rand((1, 8, 9, 9), np.uint8, 0, 256)
    w, sums = weights(20, (8, 3, 3))
    ws = rand((20,), F32, 0.001, 0.01)
    check(device, CONV, T(x, dim_order=CL), 0.03, 120, T(w, dim_order=CL), ws, sums, None, [1, 1],
          [1, 1], [1, 1], 1, 0.08, 0, 0, 255, QOut(np.uint8, (1, 20, 9, 9), dim_order=CL))
    # uint8 rows on AMX tiles where the CPU has them: 40 channels, K 144.
    x = rand((1, 16, 11, 9), np.uint8, 0, 256)
    w, sums = weights(40, (16, 3, 3))
    ws = rand((40,), F32, 0.001, 0.01)
    check(device, CONV, x, 0.03, 125, w, ws, sums, None, [1, 1], [1, 1], [1, 1], 1, 0.08, 2, 0,
          255, QOut(np.uint8, (1, 40, 11, 9)), num_threads=2)
    # Depthwise over uint8, 16 + 5 channels, channels-last.
    x = rand((2, 21, 7, 9), np.uint8, 0, 256)
    w, sums = weights(21, (1, 5, 3))
    ws = rand((21,), F32, 0.001, 0.01)
    check(device, CONV, T(x, dim_order=CL), 0.03, 131, w, ws, sums, None, [1, 2], [2, 1], [1, 1],
          21, 0.08, 3, 0, 255, QOut(np.uint8, (2, 21, 7, 5), dim_order=CL), num_threads=2)


@pytest.mark.parametrize("order,dims,shape", [
    (None, [2, 3], (2, 5, 4, 6)), (None, [-1, -2], (2, 5, 4, 6)), (CL, [2, 3], (2, 5, 4, 6)),
    (None, [1], (2, 5, 4, 6)),
    (CL, [2, 3], (2, 300, 3, 5)),  # channels-last global pool: 256 + 44 channels side by side
])
def test_quantized_mean(device, order, dims, shape):
    x = rand(shape, np.int8, -128, 128)
    shape = [1 if d in [dd % 4 for dd in dims] else s for d, s in enumerate(x.shape)]
    check(device, MEAN, T(x, dim_order=order), 0.02, -10, dims, 0.015, 3, -128, 127,
          QOut(np.int8, shape, dim_order=order))


def test_fused_kernel_errors(device):
    x = rand((2, 8), np.int8, -128, 128)
    w, sums = weights(4, (8,))
    ws = rand((4,), F32, 0.001, 0.01)
    out = QOut(np.int8, (2, 4))
    check_error(device, LINEAR, x, 0.0, 0, w, ws, sums, None, 0.1, 0, -128, 127, out,
                exc=ValueError, match="input scale 0 is not a usable")
    check_error(device, LINEAR, x, 0.1, 0, w[:, :7].copy(), ws, sums, None, 0.1, 0, -128, 127,
                out, exc=ValueError, match="does not match the input's last dim 8")
    check_error(device, LINEAR, x, 0.1, 0, w, ws[:3].copy(), sums, None, 0.1, 0, -128, 127, out,
                exc=ValueError, match="weight_scales .* should hold 1 or 4 values")
    check_error(device, LINEAR, x, 0.1, 0, w, ws, sums, None, 0.1, 0, -128, 200, out,
                exc=ValueError, match=r"quant range \[-128, 200\] exceeds int8")
    check_error(device, LINEAR, x, 0.1, 300, w, ws, sums, None, 0.1, 0, -128, 127, out,
                exc=ValueError, match="input zero point 300 lies outside")
    xi = rand((1, 4, 5, 5), np.int8, -128, 128)
    wc, sc = weights(6, (3, 3, 3))
    check_error(device, CONV, xi, 0.1, 0, wc, rand((6,), F32, 0.001, 0.01), sc, None, [1, 1],
                [1, 1], [1, 1], 1, 0.1, 0, -128, 127, QOut(np.int8, (1, 6, 5, 5)),
                exc=ValueError, match="groups do not match the input")
    check_error(device, MEAN, rand((2, 3, 4), np.int8, -128, 128), 0.1, 0, [0, 2], 0.1, 0, -128,
                127, QOut(np.int8, (1, 3, 1)), exc=NotImplementedError,
                match="not adjacent in memory")

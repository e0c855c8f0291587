"""convolution.out against a NumPy reference: conv1d/conv2d, stride,
padding, dilation, groups, transposed with output_padding, dim orders of
input/weight/out, dtypes and argument errors."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(11)
CL = (0, 2, 3, 1)  # channels-last dim order


def rand(*shape, dtype=np.float32):
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-20, 20, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def bf16(a):
    return from_bf16_bits(to_bf16_bits(a)).reshape(np.shape(a))


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
                out[:, g * ocg:(g + 1) * ocg] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * ocg:(g + 1) * ocg, :, ky, kx])
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


def conv(x, w, b, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, transposed=False,
         output_padding=(0, 0), x_order=None, w_order=None, out_order=None, dtype=np.float32,
         num_threads=1, as_bf16=False):
    if transposed:
        expected = ref_conv_transpose2d(x, w, b, stride, padding, dilation, groups, output_padding)
    else:
        expected = ref_conv2d(x, w, b, stride, padding, dilation, groups)
    out_dtype = "bfloat16" if as_bf16 else dtype
    bias = None if b is None else T(b, bf16=as_bf16)
    (out,) = call_kernel("aten::convolution.out", T(x, dim_order=x_order, bf16=as_bf16),
                         T(w, dim_order=w_order, bf16=as_bf16), bias, list(stride), list(padding),
                         list(dilation), transposed, list(output_padding), groups,
                         Out(out_dtype, expected.shape, dim_order=out_order),
                         num_threads=num_threads)
    return out, expected


def test_fixture_conv_3x3_pad1():
    x, w, b = rand(1, 3, 32, 32), rand(16, 3, 3, 3), rand(16)
    out, expected = conv(x, w, b, padding=(1, 1))
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_conv2d_new_weights_each_call():
    # oneDNN plans keep reordered weights while the weight bytes stay the
    # same; new values (at a reused address or not) must be reordered again.
    x, b = rand(2, 8, 8, 8), rand(16)
    for _ in range(6):
        w = rand(16, 8, 3, 3)
        out, expected = conv(x, w, b, padding=(1, 1))
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride,padding,dilation", [
    ((1, 1), (0, 0), (1, 1)), ((2, 2), (1, 1), (1, 1)), ((2, 1), (0, 2), (1, 1)),
    ((1, 1), (2, 2), (2, 2)), ((3, 2), (1, 0), (2, 1)),
])
def test_conv2d_geometry(stride, padding, dilation):
    x, w, b = rand(2, 4, 11, 9), rand(6, 4, 3, 3), rand(6)
    out, expected = conv(x, w, b, stride, padding, dilation)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups,cin,cout", [(2, 4, 6), (8, 8, 8), (8, 8, 16), (3, 3, 3)])
def test_conv2d_groups_and_depthwise(groups, cin, cout):
    x, w, b = rand(1, cin, 10, 10), rand(cout, cin // groups, 3, 3), rand(cout)
    out, expected = conv(x, w, b, padding=(1, 1), groups=groups)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x_order,w_order,out_order", [
    (CL, None, CL), (CL, None, None), (None, None, CL), (None, CL, None), (CL, CL, CL),
])
def test_conv2d_dim_orders(x_order, w_order, out_order):
    x, w, b = rand(2, 8, 9, 7), rand(16, 8, 3, 3), rand(16)
    out, expected = conv(x, w, b, padding=(1, 1), x_order=x_order, w_order=w_order,
                         out_order=out_order)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_conv2d_depthwise_channels_last():
    x, w = rand(1, 16, 12, 12), rand(16, 1, 3, 3)
    out, expected = conv(x, w, None, stride=(2, 2), padding=(1, 1), groups=16, x_order=CL,
                         out_order=CL)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_conv2d_1x1_no_bias_two_threads():
    x, w = rand(2, 32, 28, 28), rand(64, 32, 1, 1)
    out, expected = conv(x, w, None, num_threads=2)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_conv2d_larger_two_threads():
    x, w, b = rand(1, 16, 24, 24), rand(32, 16, 3, 3), rand(32)
    out, expected = conv(x, w, b, padding=(1, 1), num_threads=2)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


# Forward stride-1 f32 convolutions with at least 4 output channels per
# group run our own kernel (conv_f32.cpp): output channels in blocks of
# 16/8/4/2/1, runs of 8 or 16 columns with a partial last one, output rows
# grouped by which kernel rows fall inside the image (some rows may have
# none: only the bias), images split over two threads above 2^20
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
def test_conv2d_own_kernel_shapes(n, cin, cout, hw, k, padding, dilation, groups, threads):
    x = rand(n, cin, *hw)
    w, b = rand(cout, cin // groups, *k), rand(cout)
    out, expected = conv(x, w, b, padding=padding, dilation=dilation, groups=groups,
                         num_threads=threads)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    out, expected = conv(x, w, None, padding=padding, dilation=dilation, groups=groups,
                         x_order=CL, w_order=CL, out_order=CL, num_threads=threads)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_conv1d_stride1_own_kernel():
    x, w, b = rand(3, 5, 40), rand(8, 5, 3), rand(8)
    expected = ref_conv2d(x[:, :, None], w[:, :, None], b, (1, 1), (0, 1), (1, 1), 1)[:, :, 0]
    (out,) = call_kernel("aten::convolution.out", x, w, b, [1], [1], [1], False, [0], 1,
                         Out(np.float32, expected.shape))
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("order", [None, (0, 2, 1)])
def test_conv1d(order):
    x, w, b = rand(2, 5, 17), rand(7, 5, 3), rand(7)
    expected = ref_conv2d(x[:, :, None], w[:, :, None], b, (1, 2), (0, 1), (1, 2), 1)[:, :, 0]
    (out,) = call_kernel("aten::convolution.out", T(x, dim_order=order), w, b, [2], [1], [2],
                         False, [0], 1, Out(np.float32, expected.shape, dim_order=order))
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_conv1d_depthwise_transposed():
    x, w = rand(1, 4, 6), rand(4, 1, 3)
    expected = ref_conv_transpose2d(x[:, :, None], w[:, :, None], None, (1, 2), (0, 1), (1, 1), 4,
                                    (0, 1))[:, :, 0]
    (out,) = call_kernel("aten::convolution.out", x, w, None, [2], [1], [1], True, [1], 4,
                         Out(np.float32, expected.shape))
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride,padding,dilation,output_padding,groups", [
    ((2, 2), (0, 0), (1, 1), (0, 0), 1), ((2, 2), (1, 1), (1, 1), (1, 1), 1),
    ((2, 3), (0, 1), (1, 1), (1, 2), 1), ((1, 1), (1, 1), (2, 2), (1, 1), 2),
    ((2, 2), (1, 0), (1, 1), (0, 1), 2),
])
def test_conv_transpose2d(stride, padding, dilation, output_padding, groups):
    x, w, b = rand(2, 4, 5, 6), rand(4, 3, 3, 3), rand(3 * groups)
    out, expected = conv(x, w, b, stride, padding, dilation, groups, True, output_padding)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_conv_transpose2d_channels_last():
    x, w, b = rand(1, 8, 6, 6), rand(8, 4, 2, 2), rand(4)
    out, expected = conv(x, w, b, (2, 2), transposed=True, x_order=CL, w_order=CL, out_order=CL)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_conv2d_float64():
    x, w, b = rand(1, 4, 7, 7, dtype=np.float64), rand(6, 2, 3, 3, dtype=np.float64), rand(6).astype(np.float64)
    out, expected = conv(x, w, b, (2, 1), (1, 1), (1, 2), groups=2, x_order=CL, dtype=np.float64)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-10)


def test_conv_transpose2d_float64():
    x, w = rand(1, 2, 4, 4, dtype=np.float64), rand(2, 3, 3, 3, dtype=np.float64)
    out, expected = conv(x, w, None, (2, 2), (1, 1), transposed=True, output_padding=(1, 1),
                         dtype=np.float64)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-10)


def test_conv2d_float16():
    x, w, b = rand(1, 4, 8, 8, dtype=np.float16), rand(8, 4, 3, 3, dtype=np.float16), rand(8, dtype=np.float16)
    out, expected = conv(x, w, b, padding=(1, 1), dtype=np.float16)
    np.testing.assert_allclose(out.astype(np.float32), expected, rtol=1e-2, atol=2e-2)


def test_conv2d_bfloat16_channels_last():
    x, w, b = bf16(rand(1, 4, 8, 8)), bf16(rand(8, 4, 3, 3)), bf16(rand(8))
    out, expected = conv(x, w, b, padding=(1, 1), x_order=CL, out_order=CL, as_bf16=True)
    np.testing.assert_allclose(out, expected, rtol=2e-2, atol=6e-2)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_conv2d_integers(dtype):
    x, w, b = rand(1, 3, 6, 6, dtype=dtype), rand(4, 3, 3, 3, dtype=dtype), rand(4, dtype=dtype)
    out, expected = conv(x, w, b, padding=(1, 1), dtype=dtype)
    # Exact in int64, then wrapped to the dtype as same-dtype arithmetic does.
    np.testing.assert_array_equal(out, np.round(expected).astype(np.int64).astype(dtype))


def test_conv2d_empty_batch():
    (out,) = call_kernel("aten::convolution.out", rand(0, 3, 5, 5), rand(4, 3, 3, 3), None,
                         [1, 1], [1, 1], [1, 1], False, [0, 0], 1, Out(np.float32, (0, 4, 5, 5)))
    assert out.shape == (0, 4, 5, 5)


def test_conv2d_resizes_dynamic_out():
    x, w = rand(1, 2, 6, 6), rand(3, 2, 3, 3)
    expected = ref_conv2d(x, w, None, (1, 1), (0, 0), (1, 1), 1)
    (out,) = call_kernel("aten::convolution.out", x, w, None, [1, 1], [0, 0], [1, 1], False,
                         [0, 0], 1, Out(np.float32, (1, 3, 6, 6), dynamic=True))
    assert out.shape == (1, 3, 4, 4)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def call_conv(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), transposed=False,
              output_padding=(0, 0), groups=1, out_shape=(1, 1, 1, 1), out_dtype=np.float32):
    return call_kernel("aten::convolution.out", x, w, b, list(stride), list(padding),
                       list(dilation), transposed, list(output_padding), groups,
                       Out(out_dtype, out_shape))


def test_conv_errors():
    with pytest.raises(ValueError):  # channel mismatch
        call_conv(rand(1, 3, 5, 5), rand(4, 2, 3, 3), out_shape=(1, 4, 3, 3))
    with pytest.raises(ValueError):  # bias length
        call_conv(rand(1, 3, 5, 5), rand(4, 3, 3, 3), rand(3), out_shape=(1, 4, 3, 3))
    with pytest.raises(ValueError):  # rank
        call_conv(rand(3, 5, 5), rand(4, 3, 3, 3), out_shape=(1, 4, 3, 3))
    with pytest.raises(ValueError):  # dtype mismatch
        call_conv(rand(1, 3, 5, 5), rand(4, 3, 3, 3, dtype=np.float64), out_shape=(1, 4, 3, 3))
    with pytest.raises(ValueError):  # kernel larger than the input
        call_conv(rand(1, 3, 2, 2), rand(4, 3, 3, 3), out_shape=(1, 4, 1, 1))
    with pytest.raises(ValueError):  # groups do not divide
        call_conv(rand(1, 4, 5, 5), rand(3, 2, 3, 3), groups=2, out_shape=(1, 3, 3, 3))
    with pytest.raises(ValueError):  # output_padding >= stride and dilation
        call_conv(rand(1, 2, 3, 3), rand(2, 2, 3, 3), transposed=True, output_padding=(1, 1),
                  out_shape=(1, 2, 6, 6))
    with pytest.raises(ValueError):  # stride 0
        call_conv(rand(1, 3, 5, 5), rand(4, 3, 3, 3), stride=(0, 1), out_shape=(1, 4, 3, 3))
    with pytest.raises(ValueError):  # bool
        call_conv(np.ones((1, 1, 3, 3), bool), np.ones((1, 1, 1, 1), bool),
                  out_shape=(1, 1, 3, 3), out_dtype=np.bool_)

"""Pooling and resampling kernels against pure NumPy/Python references:
max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d,
upsample_nearest2d and upsample_bilinear2d."""

import math

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(5)
CL = (0, 2, 3, 1)


def rand(*shape, dtype=np.float32):
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-50, 50, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def pooled(size, k, s, p, d, ceil_mode):
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def ref_max_pool(x, k, s, p, d, ceil_mode):
    """Values and flat H*W indices; the first maximum of each window wins."""
    *lead, h, w = x.shape
    oh = pooled(h, k[0], s[0], p[0], d[0], ceil_mode)
    ow = pooled(w, k[1], s[1], p[1], d[1], ceil_mode)
    vals = np.zeros(tuple(lead) + (oh, ow), x.dtype)
    idx = np.zeros(tuple(lead) + (oh, ow), np.int64)
    for pos in np.ndindex(*lead):
        plane = x[pos]
        for oy in range(oh):
            for ox in range(ow):
                best, best_i = None, None
                for ky in range(k[0]):
                    y = oy * s[0] - p[0] + ky * d[0]
                    if not 0 <= y < h:
                        continue
                    for kx in range(k[1]):
                        xx = ox * s[1] - p[1] + kx * d[1]
                        if not 0 <= xx < w:
                            continue
                        v = plane[y, xx]
                        if best is None or v > best or (v != v):  # NaN wins, as in torch
                            best, best_i = plane[y, xx], y * w + xx
                vals[pos + (oy, ox)] = best
                idx[pos + (oy, ox)] = best_i
    return vals, idx


def max_pool(x, k, s=(), p=(0, 0), d=(1, 1), ceil_mode=False, order=None, out_order=None,
             dtype=None, num_threads=1):
    sx = list(s) if s else list(k)
    expected = ref_max_pool(x, k, sx, p, d, ceil_mode)
    shape = expected[0].shape
    dt = dtype or x.dtype
    out, idx = call_kernel("aten::max_pool2d_with_indices.out", T(x, dim_order=order), list(k),
                           list(s), list(p), list(d), ceil_mode, Out(dt, shape, dim_order=out_order),
                           Out(np.int64, shape, dim_order=out_order), num_threads=num_threads)
    return (out, idx), expected


def test_fixture_max_pool_2x2():
    x = rand(1, 16, 32, 32)
    (out, idx), (ev, ei) = max_pool(x, (2, 2), (2, 2))
    np.testing.assert_array_equal(out, ev)
    np.testing.assert_array_equal(idx, ei)


@pytest.mark.parametrize("k,s,p,d,ceil_mode", [
    ((3, 3), (2, 2), (1, 1), (1, 1), False), ((3, 3), (2, 2), (1, 1), (1, 1), True),
    ((2, 3), (), (0, 1), (1, 1), True), ((3, 2), (1, 2), (1, 0), (2, 1), False),
    ((2, 2), (3, 3), (0, 0), (1, 1), True), ((1, 1), (2, 2), (0, 0), (1, 1), False),
])
def test_max_pool_geometry(k, s, p, d, ceil_mode):
    x = rand(2, 3, 9, 10)
    (out, idx), (ev, ei) = max_pool(x, k, s, p, d, ceil_mode)
    np.testing.assert_array_equal(out, ev)
    np.testing.assert_array_equal(idx, ei)


@pytest.mark.parametrize("order,out_order", [(CL, CL), (CL, None), (None, CL)])
def test_max_pool_channels_last(order, out_order):
    x = rand(2, 5, 8, 7)
    (out, idx), (ev, ei) = max_pool(x, (3, 3), (2, 2), (1, 1), order=order, out_order=out_order)
    np.testing.assert_array_equal(out, ev)
    np.testing.assert_array_equal(idx, ei)


def test_max_pool_3d_input_and_threads():
    x = rand(64, 20, 20)
    (out, idx), (ev, ei) = max_pool(x, (2, 2), num_threads=2)
    np.testing.assert_array_equal(out, ev)
    np.testing.assert_array_equal(idx, ei)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float64, np.float16])
def test_max_pool_dtypes(dtype):
    x = rand(1, 2, 6, 6, dtype=dtype)
    (out, idx), (ev, ei) = max_pool(x, (2, 2), (2, 2))
    np.testing.assert_array_equal(out, ev)
    np.testing.assert_array_equal(idx, ei)


def test_max_pool_bfloat16():
    x = from_bf16_bits(to_bf16_bits(rand(1, 2, 6, 6))).reshape(1, 2, 6, 6)
    sx = [2, 2]
    ev, ei = ref_max_pool(x, sx, sx, (0, 0), (1, 1), False)
    out, idx = call_kernel("aten::max_pool2d_with_indices.out", T(x, bf16=True), sx, sx, [0, 0],
                           [1, 1], False, Out("bfloat16", ev.shape), Out(np.int64, ev.shape))
    np.testing.assert_array_equal(out, ev)
    np.testing.assert_array_equal(idx, ei)


@pytest.mark.parametrize("w", [8, 16, 25, 27, 34])
@pytest.mark.parametrize("order", [None, CL])
def test_max_pool_2x2_ties_and_nans(w, order):
    # Few distinct values (ties everywhere) and some NaNs, on widths that
    # exercise the vectorised 2x2 path's 8- and 4-wide blocks and its tail.
    x = RNG.integers(0, 3, size=(2, 3, 6, w)).astype(np.float32)
    x[RNG.random(x.shape) < 0.05] = np.nan
    (out, idx), (ev, ei) = max_pool(x, (2, 2), (2, 2), order=order)
    np.testing.assert_array_equal(out, ev)
    np.testing.assert_array_equal(idx, ei)


def test_max_pool_ties_take_first_and_padding_is_minus_infinity():
    x = np.full((1, 1, 2, 2), -np.inf, np.float32)
    out, idx = call_kernel("aten::max_pool2d_with_indices.out", x, [3, 3], [1, 1], [1, 1], [1, 1],
                           False, Out(np.float32, (1, 1, 2, 2)), Out(np.int64, (1, 1, 2, 2)))
    np.testing.assert_array_equal(out, x)
    # Every window's first in-bounds element is (0, 0).
    np.testing.assert_array_equal(idx, np.zeros((1, 1, 2, 2), np.int64))


def test_max_pool_nan_propagates():
    x = np.array([[[[1.0, np.nan], [3.0, 2.0]]]], np.float32)
    out, idx = call_kernel("aten::max_pool2d_with_indices.out", x, [2, 2], [2, 2], [0, 0], [1, 1],
                           False, Out(np.float32, (1, 1, 1, 1)), Out(np.int64, (1, 1, 1, 1)))
    assert np.isnan(out[0, 0, 0, 0]) and idx[0, 0, 0, 0] == 1


@pytest.mark.parametrize("shape,k,s,p,order", [
    ((359, 16, 8, 8), (2, 2), (2, 2), (0, 0), None),  # digits_cnn: the values-only loop
    ((2, 3, 9, 37), (2, 2), (2, 2), (0, 0), None),  # odd sizes: vector blocks and a tail
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (0, 2, 3, 1)),  # channels-last: the full kernel
    ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1), None),  # not 2x2: the full kernel
])
def test_max_pool_values_only_kernel(shape, k, s, p, order):
    # The kernel the executor runs when nothing reads the indices
    # (executor/rewrite.h): the same values; the indices are not written.
    x = rand(*shape)
    x[RNG.random(x.shape) < 0.02] = np.nan
    ev, _ = ref_max_pool(x, k, s, p, (1, 1), False)
    out, _ = call_kernel("pterun::max_pool2d_values.out", T(x, dim_order=order), list(k), list(s),
                         list(p), [1, 1], False, Out(np.float32, ev.shape),
                         Out(np.int64, ev.shape))
    np.testing.assert_array_equal(out, ev)


def test_max_pool_errors():
    x = rand(1, 1, 4, 4)
    shape = (1, 1, 2, 2)

    def call(*args, out_dtype=np.float32, idx_dtype=np.int64, inp=x):
        return call_kernel("aten::max_pool2d_with_indices.out", inp, *args,
                           Out(out_dtype, shape), Out(idx_dtype, shape))

    with pytest.raises(ValueError):  # padding above half the kernel
        call([2, 2], [2, 2], [2, 2], [1, 1], False)
    with pytest.raises(ValueError):  # int32 indices
        call([2, 2], [2, 2], [0, 0], [1, 1], False, idx_dtype=np.int32)
    with pytest.raises(ValueError):  # dtype mismatch
        call([2, 2], [2, 2], [0, 0], [1, 1], False, out_dtype=np.float64)
    with pytest.raises(ValueError):  # kernel 0
        call([0, 2], [2, 2], [0, 0], [1, 1], False)
    with pytest.raises(ValueError):  # 2-D input
        call([2, 2], [2, 2], [0, 0], [1, 1], False, inp=rand(4, 4))
    with pytest.raises(ValueError):  # window larger than the input
        call([5, 5], [1, 1], [0, 0], [1, 1], False)


# --------------------------------------------------------------------- avg_pool2d


def ref_avg_pool(x, k, s, p, ceil_mode, count_include_pad, divisor):
    *lead, h, w = x.shape
    oh, ow = pooled(h, k[0], s[0], p[0], 1, ceil_mode), pooled(w, k[1], s[1], p[1], 1, ceil_mode)
    out = np.zeros(tuple(lead) + (oh, ow))
    xf = x.astype(np.float64)
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * s[0] - p[0], ox * s[1] - p[1]
            y1, x1 = min(y0 + k[0], h + p[0]), min(x0 + k[1], w + p[1])
            padded = (y1 - y0) * (x1 - x0)
            y0, x0, y1, x1 = max(y0, 0), max(x0, 0), min(y1, h), min(x1, w)
            total = xf[..., y0:y1, x0:x1].sum(axis=(-1, -2))
            count = divisor if divisor else (padded if count_include_pad else (y1 - y0) * (x1 - x0))
            out[..., oy, ox] = total / count
    return out


@pytest.mark.parametrize("k,s,p,ceil_mode,include,divisor", [
    ((2, 2), (2, 2), (0, 0), False, True, None), ((3, 3), (2, 2), (1, 1), False, True, None),
    ((3, 3), (2, 2), (1, 1), False, False, None), ((3, 3), (2, 2), (1, 1), True, True, None),
    ((3, 2), (2, 3), (1, 1), True, False, None), ((2, 2), (1, 1), (1, 0), False, True, 3),
])
@pytest.mark.parametrize("order", [None, CL])
def test_avg_pool(k, s, p, ceil_mode, include, divisor, order):
    x = rand(2, 3, 7, 8)
    expected = ref_avg_pool(x, k, s, p, ceil_mode, include, divisor)
    (out,) = call_kernel("aten::avg_pool2d.out", T(x, dim_order=order), list(k), list(s), list(p),
                         ceil_mode, include, divisor, Out(np.float32, expected.shape,
                                                          dim_order=order))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_avg_pool_empty_stride_means_kernel_and_3d_input():
    x = rand(3, 6, 6)
    expected = ref_avg_pool(x, (3, 3), (3, 3), (0, 0), False, True, None)
    (out,) = call_kernel("aten::avg_pool2d.out", x, [3], [], [0], False, True, None,
                         Out(np.float32, expected.shape))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_avg_pool_int64_truncates():
    x = np.array([[[[1, 2], [3, 5]]]], np.int64)
    (out,) = call_kernel("aten::avg_pool2d.out", x, [2, 2], [2, 2], [0, 0], False, True, None,
                         Out(np.int64, (1, 1, 1, 1)))
    assert out[0, 0, 0, 0] == 2  # 11 // 4


def test_avg_pool_float16():
    x = rand(1, 2, 4, 4, dtype=np.float16)
    expected = ref_avg_pool(x, (2, 2), (2, 2), (0, 0), False, True, None)
    (out,) = call_kernel("aten::avg_pool2d.out", x, [2, 2], [2, 2], [0, 0], False, True, None,
                         Out(np.float16, expected.shape))
    np.testing.assert_allclose(out.astype(np.float32), expected, rtol=2e-3, atol=2e-3)


def test_avg_pool_errors():
    x = rand(1, 1, 4, 4)
    with pytest.raises(ValueError):  # divisor 0
        call_kernel("aten::avg_pool2d.out", x, [2, 2], [2, 2], [0, 0], False, True, 0,
                    Out(np.float32, (1, 1, 2, 2)))
    with pytest.raises(ValueError):  # int32 not supported
        call_kernel("aten::avg_pool2d.out", x.astype(np.int32), [2, 2], [2, 2], [0, 0], False,
                    True, None, Out(np.int32, (1, 1, 2, 2)))


# --------------------------------------------------------------------- adaptive avg


def ref_adaptive_avg(x, oh, ow):
    *lead, h, w = x.shape
    out = np.zeros(tuple(lead) + (oh, ow))
    for oy in range(oh):
        y0, y1 = (oy * h) // oh, -((-(oy + 1) * h) // oh)
        for ox in range(ow):
            x0, x1 = (ox * w) // ow, -((-(ox + 1) * w) // ow)
            out[..., oy, ox] = x[..., y0:y1, x0:x1].astype(np.float64).mean(axis=(-1, -2))
    return out


@pytest.mark.parametrize("size", [(1, 1), (3, 3), (2, 5), (7, 7)])
@pytest.mark.parametrize("order", [None, CL])
def test_adaptive_avg_pool(size, order):
    x = rand(2, 4, 7, 10)
    expected = ref_adaptive_avg(x, *size)
    (out,) = call_kernel("aten::_adaptive_avg_pool2d.out", T(x, dim_order=order), list(size),
                         Out(np.float32, expected.shape, dim_order=order))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_adaptive_avg_pool_rejects_integers():
    with pytest.raises(ValueError):
        call_kernel("aten::_adaptive_avg_pool2d.out", np.ones((1, 1, 4, 4), np.int64), [2, 2],
                    Out(np.int64, (1, 1, 2, 2)))


# --------------------------------------------------------------------- upsampling


def ref_nearest(x, oh, ow, scales):
    *lead, h, w = x.shape

    def src(o, n_in, n_out, scale):
        if n_out == n_in:
            return o
        if n_out == 2 * n_in:
            return o >> 1
        s = np.float32(1.0 / scale) if scale else np.float32(n_in) / np.float32(n_out)
        return min(int(math.floor(np.float32(o) * s)), n_in - 1)

    ys = [src(o, h, oh, scales[0]) for o in range(oh)]
    xs = [src(o, w, ow, scales[1]) for o in range(ow)]
    return x[..., ys, :][..., xs]


@pytest.mark.parametrize("size,scales", [((8, 10), None), ((5, 7), None), (None, (2.0, 3.0)),
                                         (None, (1.5, 0.5)), ((4, 5), None)])
@pytest.mark.parametrize("order", [None, CL])
def test_upsample_nearest(size, scales, order):
    x = rand(2, 3, 4, 5)
    oh, ow = size if size else (int(4 * scales[0]), int(5 * scales[1]))
    expected = ref_nearest(x, oh, ow, scales or (None, None))
    (out,) = call_kernel("aten::upsample_nearest2d.vec_out", T(x, dim_order=order),
                         list(size) if size else None, list(scales) if scales else None,
                         Out(np.float32, expected.shape, dim_order=order))
    np.testing.assert_array_equal(out, expected)


def ref_bilinear(x, oh, ow, align_corners, scales):
    *lead, h, w = x.shape

    def coords(n_in, n_out, scale):
        res = []
        for o in range(n_out):
            if n_in == n_out:
                res.append((o, o, 1.0, 0.0))
                continue
            if align_corners:
                ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
                src = ratio * o
            else:
                ratio = 1.0 / scale if scale else n_in / n_out
                src = max(ratio * (o + 0.5) - 0.5, 0.0)
            i0 = min(int(math.floor(src)), n_in - 1)
            i1 = i0 + (1 if i0 < n_in - 1 else 0)
            l1 = min(max(src - i0, 0.0), 1.0)
            res.append((i0, i1, 1.0 - l1, l1))
        return res

    xf = x.astype(np.float64)
    out = np.zeros(tuple(lead) + (oh, ow))
    for oy, (y0, y1, wy0, wy1) in enumerate(coords(h, oh, scales[0])):
        for ox, (x0, x1, wx0, wx1) in enumerate(coords(w, ow, scales[1])):
            out[..., oy, ox] = (wy0 * (wx0 * xf[..., y0, x0] + wx1 * xf[..., y0, x1]) +
                                wy1 * (wx0 * xf[..., y1, x0] + wx1 * xf[..., y1, x1]))
    return out


@pytest.mark.parametrize("size,scales", [((8, 10), None), ((3, 7), None), (None, (2.0, 1.5)),
                                         ((1, 1), None), ((4, 5), None)])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("order", [None, CL])
def test_upsample_bilinear(size, scales, align_corners, order):
    x = rand(1, 3, 4, 5)
    oh, ow = size if size else (int(4 * scales[0]), int(5 * scales[1]))
    expected = ref_bilinear(x, oh, ow, align_corners, scales or (None, None))
    (out,) = call_kernel("aten::upsample_bilinear2d.vec_out", T(x, dim_order=order),
                         list(size) if size else None, align_corners,
                         list(scales) if scales else None,
                         Out(np.float32, expected.shape, dim_order=order))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_upsample_errors():
    x = rand(1, 1, 2, 2)
    with pytest.raises(ValueError):  # both size and scales
        call_kernel("aten::upsample_nearest2d.vec_out", x, [4, 4], [2.0, 2.0],
                    Out(np.float32, (1, 1, 4, 4)))
    with pytest.raises(ValueError):  # neither
        call_kernel("aten::upsample_nearest2d.vec_out", x, None, None,
                    Out(np.float32, (1, 1, 4, 4)))
    with pytest.raises(ValueError):  # 3-D input
        call_kernel("aten::upsample_bilinear2d.vec_out", rand(1, 2, 2), [4, 4], False, None,
                    Out(np.float32, (1, 4, 4)))
    with pytest.raises(ValueError):  # integer bilinear
        call_kernel("aten::upsample_bilinear2d.vec_out", np.ones((1, 1, 2, 2), np.int32), [4, 4],
                    False, None, Out(np.int32, (1, 1, 4, 4)))

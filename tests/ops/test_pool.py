"""Pooling and resampling against NumPy references written from torch's
rules: max_pool2d_with_indices (flat H*W indices, the first maximum of a
window wins, NaN wins, padding is -inf), the CPU's values-only max pool,
avg_pool2d (ceil mode, count_include_pad, divisor_override, int64
truncating), _adaptive_avg_pool2d, upsample_nearest2d and
upsample_bilinear2d (sizes or scales, align_corners); every dtype, 3-D and
4-D inputs, dim orders, ties, threads and argument errors."""

import math

import numpy as np
import pytest

from harness import (BF16, CL, AnyValues, Out, T, bf16, cast, check, check_error, cpu_only,
                     dtype_of, integers, normal, rand, random, reference, tensor, value)

FLOATS = [np.float32, np.float16, BF16, np.float64]
# Averages: float sums of a few terms against float64 NumPy.
AVG_TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12), "float16": (2e-3, 2e-3),
           BF16: (1.6e-2, 1.6e-2)}


def normals(*shape, dtype=np.float32):
    if np.issubdtype(dtype, np.integer):
        return integers(-50, 50, shape, dtype)
    return normal(shape, dtype)


def _pair(v, default=None):
    v = list(v) if v else list(default)
    return v * 2 if len(v) == 1 else v


def pooled(size, k, s, p, d, ceil_mode):
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


# ---- max pool ------------------------------------------------------------------------------------


def ref_max_pool(x, k, s, p, d, ceil_mode):
    """Values and flat H*W indices. The first in-bounds element of a window
    starts it; a later one replaces it when larger or NaN (torch's rule)."""
    *lead, h, w = x.shape
    oh = pooled(h, k[0], s[0], p[0], d[0], ceil_mode)
    ow = pooled(w, k[1], s[1], p[1], d[1], ceil_mode)
    vals = np.zeros(tuple(lead) + (oh, ow), x.dtype)
    idx = np.zeros(tuple(lead) + (oh, ow), np.int64)
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
                    v = x[..., y, xx]
                    if best is None:
                        best, best_i = v.copy(), np.full(v.shape, y * w + xx)
                        continue
                    take = v > best
                    if x.dtype.kind == "f":
                        take |= np.isnan(v)
                    best = np.where(take, v, best)
                    best_i = np.where(take, y * w + xx, best_i)
            vals[..., oy, ox] = best
            idx[..., oy, ox] = best_i
    return vals, idx


@reference("aten::max_pool2d_with_indices.out")
def max_pool_model(a, k, s, p, d, ceil_mode, out, indices):
    k = _pair(k)
    vals, idx = ref_max_pool(value(a), k, _pair(s, k), _pair(p), _pair(d), ceil_mode)
    return [cast(vals, dtype_of(out)), idx]


@reference("pterun::max_pool2d_values.out")
def max_pool_values_model(a, k, s, p, d, ceil_mode, out, indices):
    vals, _ = max_pool_model(a, k, s, p, d, ceil_mode, out, indices)
    return [vals, AnyValues(vals.shape)]  # the indices are not written


def max_pool(device, x, k, s=(), p=(0, 0), d=(1, 1), ceil_mode=False, order=None,
             out_order=None, dtype=None, num_threads=1):
    sx = list(s) if s else list(k)
    ev, ei = ref_max_pool(x, k, sx, p, d, ceil_mode)
    dt = dtype or x.dtype
    check(device, "aten::max_pool2d_with_indices.out", T(x, dim_order=order), list(k), list(s),
          list(p), list(d), ceil_mode, Out(dt, ev.shape, dim_order=out_order),
          Out(np.int64, ev.shape, dim_order=out_order), expect=[ev, ei], num_threads=num_threads)


@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("k,s,p,d,ceil", [((2, 2), (2, 2), (0, 0), (1, 1), False),
                                          ((3, 3), (1, 1), (1, 1), (1, 1), False),
                                          ((3, 3), (2, 2), (1, 1), (2, 2), True),
                                          ((2, 3), (), (1, 0), (1, 1), True)])
@pytest.mark.parametrize("order", [None, CL])
def test_max_pool(device, dtype, k, s, p, d, ceil, order):
    x = rand((2, 3, 9, 10), np.int32, -4, 4).astype(np.float32)  # ties
    if dtype == np.uint8:
        x = np.abs(x)
    shape = [pooled(size, k[i], s[i] if s else k[i], p[i], d[i], ceil)
             for i, size in enumerate((9, 10))]
    check(device, "aten::max_pool2d_with_indices.out", tensor(x, dtype, order), list(k), list(s),
          list(p), list(d), ceil, Out(dtype, [2, 3] + shape, dim_order=order),
          Out(np.int64, [2, 3] + shape, dim_order=order))


def test_max_pool_nan_3d(device):
    x = rand((3, 8, 8))
    x[0, 1, 1] = np.nan
    check(device, "aten::max_pool2d_with_indices.out", x, [2, 2], [2, 2], [0, 0], [1, 1], False,
          Out(np.float32, [3, 4, 4]), Out(np.int64, [3, 4, 4]))


def test_fixture_max_pool_2x2(device):
    max_pool(device, normals(1, 16, 32, 32), (2, 2), (2, 2))


@pytest.mark.parametrize("k,s,p,d,ceil_mode", [
    ((3, 3), (2, 2), (1, 1), (1, 1), False), ((3, 3), (2, 2), (1, 1), (1, 1), True),
    ((2, 3), (), (0, 1), (1, 1), True), ((3, 2), (1, 2), (1, 0), (2, 1), False),
    ((2, 2), (3, 3), (0, 0), (1, 1), True), ((1, 1), (2, 2), (0, 0), (1, 1), False),
])
def test_max_pool_geometry(device, k, s, p, d, ceil_mode):
    max_pool(device, normals(2, 3, 9, 10), k, s, p, d, ceil_mode)


@pytest.mark.parametrize("order,out_order", [(CL, CL), (CL, None), (None, CL)])
def test_max_pool_channels_last(device, order, out_order):
    max_pool(device, normals(2, 5, 8, 7), (3, 3), (2, 2), (1, 1), order=order,
             out_order=out_order)


def test_max_pool_3d_input_and_threads(device):
    max_pool(device, normals(64, 20, 20), (2, 2), num_threads=2)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float64, np.float16])
def test_max_pool_dtypes(device, dtype):
    max_pool(device, normals(1, 2, 6, 6, dtype=dtype), (2, 2), (2, 2))


def test_max_pool_bfloat16(device):
    x = bf16(normals(1, 2, 6, 6))
    ev, ei = ref_max_pool(x, [2, 2], [2, 2], (0, 0), (1, 1), False)
    check(device, "aten::max_pool2d_with_indices.out", T(x, bf16=True), [2, 2], [2, 2], [0, 0],
          [1, 1], False, Out(BF16, ev.shape), Out(np.int64, ev.shape), expect=[ev, ei])


@pytest.mark.parametrize("w", [8, 16, 25, 27, 34])
@pytest.mark.parametrize("order", [None, CL])
def test_max_pool_2x2_ties_and_nans(device, w, order):
    # Few distinct values (ties everywhere) and some NaNs, on widths that
    # exercise the vectorised 2x2 path's 8- and 4-wide blocks and its tail.
    x = integers(0, 3, (2, 3, 6, w), np.float32)
    x[random(x.shape) < 0.05] = np.nan
    max_pool(device, x, (2, 2), (2, 2), order=order)


def test_max_pool_ties_take_first_and_padding_is_minus_infinity(device):
    x = np.full((1, 1, 2, 2), -np.inf, np.float32)
    # Every window's first in-bounds element is (0, 0).
    check(device, "aten::max_pool2d_with_indices.out", x, [3, 3], [1, 1], [1, 1], [1, 1], False,
          Out(np.float32, (1, 1, 2, 2)), Out(np.int64, (1, 1, 2, 2)),
          expect=[x, np.zeros((1, 1, 2, 2), np.int64)])


def test_max_pool_nan_propagates(device):
    x = np.array([[[[1.0, np.nan], [3.0, 2.0]]]], np.float32)
    check(device, "aten::max_pool2d_with_indices.out", x, [2, 2], [2, 2], [0, 0], [1, 1], False,
          Out(np.float32, (1, 1, 1, 1)), Out(np.int64, (1, 1, 1, 1)),
          expect=[np.full((1, 1, 1, 1), np.nan), np.ones((1, 1, 1, 1), np.int64)])


@cpu_only("pterun::max_pool2d_values.out is a CPU kernel")
@pytest.mark.parametrize("shape,k,s,p,d,ceil,order,out_order", [
    ((359, 16, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False, None, None),  # digits_cnn: 2x2 loop
    ((2, 3, 9, 37), (2, 2), (2, 2), (0, 0), (1, 1), False, None, None),  # vector blocks and a tail
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False, CL, None),  # the full kernel
    ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1), (1, 1), False, None, None),  # row by row
    ((2, 5, 17, 15), (3, 3), (2, 2), (1, 1), (1, 1), True, None, None),  # ceil mode
    ((1, 3, 12, 11), (3, 2), (1, 2), (1, 1), (2, 1), False, None, None),  # dilation
    # Channels-last, dense pixels: window rows, then window columns, of a padded row.
    ((2, 16, 16, 16), (3, 3), (2, 2), (1, 1), (1, 1), False, CL, CL),
    # Whole vectors of 16 channels along the row (32 here), dilated columns.
    ((1, 32, 7, 11), (2, 3), (1, 2), (1, 1), (1, 2), True, CL, CL),
    ((1, 5, 9, 8), (2, 3), (2, 1), (1, 1), (1, 2), True, CL, CL),  # dilation, ceil mode
    ((3, 41, 6, 7), (3, 3), (2, 2), (1, 1), (1, 1), True, CL, CL),  # 32 + 8 + 1 channels
    ((1, 3, 5, 6), (4, 4), (1, 1), (2, 2), (1, 1), False, CL, CL),  # padding of half the window
    # 2x2 and 3x3 windows over multiples of 16 channels: a column's maximum carried to the
    # next window (clamped taps at the borders, ceil mode's short last windows, one row).
    ((3, 32, 13, 11), (3, 3), (2, 2), (1, 1), (1, 1), True, CL, CL),
    ((2, 48, 6, 9), (3, 3), (1, 1), (1, 0), (1, 1), False, CL, CL),
    ((1, 16, 1, 7), (3, 3), (1, 1), (1, 1), (1, 1), False, CL, CL),
    ((2, 16, 9, 9), (2, 2), (2, 2), (0, 0), (1, 1), True, CL, CL),
    ((1, 32, 5, 8), (2, 2), (1, 1), (1, 1), (1, 1), False, CL, CL),
    # A row wider than the padded-row buffer (16,384 floats): channels at once.
    ((1, 70, 5, 240), (3, 3), (2, 2), (1, 1), (1, 1), False, CL, CL),
    ((1, 41, 4, 420), (2, 3), (1, 2), (0, 1), (1, 1), True, CL, CL),
])
def test_max_pool_values_only_kernel(device, shape, k, s, p, d, ceil, order, out_order):
    # The kernel the executor runs when nothing reads the indices
    # (executor/rewrite.h): the same values; the indices are not written.
    x = normals(*shape)
    x[random(x.shape) < 0.02] = np.nan
    ev, _ = ref_max_pool(x, k, s, p, d, ceil)
    check(device, "pterun::max_pool2d_values.out", T(x, dim_order=order), list(k), list(s),
          list(p), list(d), ceil, Out(np.float32, ev.shape, dim_order=out_order),
          Out(np.int64, ev.shape), expect=[ev, AnyValues(ev.shape)])
    check(device, "pterun::max_pool2d_values.out", T(x, dim_order=order), list(k), list(s),
          list(p), list(d), ceil, Out(np.float32, ev.shape, dim_order=out_order),
          Out(np.int64, ev.shape), num_threads=2)


@cpu_only("pterun::max_pool2d_values.out is a CPU kernel")
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("shape,k,s,p,d,ceil", [
    ((2, 8, 16, 16), (2, 2), (2, 2), (0, 0), (1, 1), False),  # XNNPACK's int8 2x2 pooling
    ((1, 70, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1), True),  # 64 + 6 channels, border windows
    ((1, 64, 5, 6), (3, 3), (1, 2), (1, 1), (1, 1), False),  # 64 channels in one register
    ((1, 5, 9, 8), (2, 3), (2, 1), (1, 1), (1, 2), True),  # dilation
])
def test_max_pool_values_only_integers_channels_last(device, dtype, shape, k, s, p, d, ceil):
    # Integers of channels-last input take their own loop over all channels.
    info = np.iinfo(dtype)
    x = np.random.default_rng(5).integers(info.min, info.max, size=shape, endpoint=True,
                                          dtype=dtype)
    ev, _ = ref_max_pool(x, k, s, p, d, ceil)
    for threads in (1, 2):
        check(device, "pterun::max_pool2d_values.out", T(x, dim_order=CL), list(k), list(s),
              list(p), list(d), ceil, Out(dtype, ev.shape, dim_order=CL), Out(np.int64, ev.shape),
              expect=[ev, AnyValues(ev.shape)], num_threads=threads)


def test_max_pool_errors(device):
    x = normals(1, 1, 4, 4)
    shape = (1, 1, 2, 2)

    def error(*args, out_dtype=np.float32, idx_dtype=np.int64, inp=x):
        check_error(device, "aten::max_pool2d_with_indices.out", inp, *args,
                    Out(out_dtype, shape), Out(idx_dtype, shape), exc=ValueError)

    error([2, 2], [2, 2], [2, 2], [1, 1], False)  # padding above half the kernel
    error([2, 2], [2, 2], [0, 0], [1, 1], False, idx_dtype=np.int32)  # int32 indices
    error([2, 2], [2, 2], [0, 0], [1, 1], False, out_dtype=np.float64)  # dtype mismatch
    error([0, 2], [2, 2], [0, 0], [1, 1], False)  # kernel 0
    error([2, 2], [2, 2], [0, 0], [1, 1], False, inp=normals(4, 4))  # 2-D input
    error([5, 5], [1, 1], [0, 0], [1, 1], False)  # window larger than the input


# ---- avg_pool2d ----------------------------------------------------------------------------------


def ref_avg_pool(x, k, s, p, ceil_mode, count_include_pad, divisor):
    """float64 averages; int64 sums divide as int64 (toward zero)."""
    *lead, h, w = x.shape
    oh, ow = pooled(h, k[0], s[0], p[0], 1, ceil_mode), pooled(w, k[1], s[1], p[1], 1, ceil_mode)
    ints = x.dtype.kind in "iu"
    out = np.zeros(tuple(lead) + (oh, ow), np.int64 if ints else np.float64)
    xf = x.astype(np.int64 if ints else np.float64)
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * s[0] - p[0], ox * s[1] - p[1]
            y1, x1 = min(y0 + k[0], h + p[0]), min(x0 + k[1], w + p[1])
            padded = (y1 - y0) * (x1 - x0)
            y0, x0, y1, x1 = max(y0, 0), max(x0, 0), min(y1, h), min(x1, w)
            if y0 >= y1 or x0 >= x1:
                continue
            total = xf[..., y0:y1, x0:x1].sum(axis=(-1, -2))
            count = divisor if divisor else (padded if count_include_pad else (y1 - y0) * (x1 - x0))
            if ints:
                out[..., oy, ox] = np.sign(total) * (np.abs(total) // count) * np.sign(count)
            else:
                out[..., oy, ox] = total / count
    return out


@reference("aten::avg_pool2d.out")
def avg_pool_model(a, k, s, p, ceil_mode, count_include_pad, divisor, out):
    k = _pair(k)
    r = ref_avg_pool(value(a), k, _pair(s, k), _pair(p), ceil_mode, count_include_pad, divisor)
    return cast(r, dtype_of(out))


@pytest.mark.parametrize("dtype", FLOATS + [np.int64])
@pytest.mark.parametrize("k,s,p,ceil,cip,div", [((2, 2), (2, 2), (0, 0), False, True, None),
                                                ((3, 3), (2, 2), (1, 1), True, True, None),
                                                ((3, 3), (2, 2), (1, 1), True, False, None),
                                                ((3, 2), (1, 2), (1, 1), False, True, 5)])
@pytest.mark.parametrize("order", [None, CL])
def test_avg_pool_every_dtype(device, dtype, k, s, p, ceil, cip, div, order):
    x = rand((2, 3, 9, 10), np.int64, -20, 20) if dtype == np.int64 else rand((2, 3, 9, 10))
    shape = [pooled(size, k[i], s[i], p[i], 1, ceil) for i, size in enumerate((9, 10))]
    check(device, "aten::avg_pool2d.out", tensor(x, dtype, order), list(k), list(s), list(p), ceil,
          cip, div, Out(dtype, [2, 3] + shape, dim_order=order), tol=AVG_TOL)


@pytest.mark.parametrize("k,s,p,ceil_mode,include,divisor", [
    ((2, 2), (2, 2), (0, 0), False, True, None), ((3, 3), (2, 2), (1, 1), False, True, None),
    ((3, 3), (2, 2), (1, 1), False, False, None), ((3, 3), (2, 2), (1, 1), True, True, None),
    ((3, 2), (2, 3), (1, 1), True, False, None), ((2, 2), (1, 1), (1, 0), False, True, 3),
])
@pytest.mark.parametrize("order", [None, CL])
def test_avg_pool(device, k, s, p, ceil_mode, include, divisor, order):
    x = normals(2, 3, 7, 8)
    expected = ref_avg_pool(x, k, s, p, ceil_mode, include, divisor)
    check(device, "aten::avg_pool2d.out", T(x, dim_order=order), list(k), list(s), list(p),
          ceil_mode, include, divisor, Out(np.float32, expected.shape, dim_order=order),
          expect=expected, tol=(1e-5, 1e-6))


def test_avg_pool_empty_stride_means_kernel_and_3d_input(device):
    x = normals(3, 6, 6)
    expected = ref_avg_pool(x, (3, 3), (3, 3), (0, 0), False, True, None)
    check(device, "aten::avg_pool2d.out", x, [3], [], [0], False, True, None,
          Out(np.float32, expected.shape), expect=expected, tol=(1e-5, 1e-6))


def test_avg_pool_int64_truncates(device):
    x = np.array([[[[1, 2], [3, 5]]]], np.int64)
    check(device, "aten::avg_pool2d.out", x, [2, 2], [2, 2], [0, 0], False, True, None,
          Out(np.int64, (1, 1, 1, 1)), expect=np.full((1, 1, 1, 1), 2))  # 11 // 4
    check(device, "aten::avg_pool2d.out", -x, [2, 2], [2, 2], [0, 0], False, True, None,
          Out(np.int64, (1, 1, 1, 1)), expect=np.full((1, 1, 1, 1), -2))  # toward zero


def test_avg_pool_float16(device):
    x = normals(1, 2, 4, 4, dtype=np.float16)
    expected = ref_avg_pool(x, (2, 2), (2, 2), (0, 0), False, True, None)
    check(device, "aten::avg_pool2d.out", x, [2, 2], [2, 2], [0, 0], False, True, None,
          Out(np.float16, expected.shape), expect=expected, tol=(2e-3, 2e-3))


def test_avg_pool_errors(device):
    x = normals(1, 1, 4, 4)
    check_error(device, "aten::avg_pool2d.out", x, [2, 2], [2, 2], [0, 0], False, True, 0,
                Out(np.float32, (1, 1, 2, 2)), exc=ValueError)  # divisor 0
    check_error(device, "aten::avg_pool2d.out", x.astype(np.int32), [2, 2], [2, 2], [0, 0], False,
                True, None, Out(np.int32, (1, 1, 2, 2)), exc=ValueError)  # no int32


# ---- adaptive avg pool ---------------------------------------------------------------------------


def ref_adaptive_avg(x, oh, ow):
    *lead, h, w = x.shape
    out = np.zeros(tuple(lead) + (oh, ow))
    for oy in range(oh):
        y0, y1 = (oy * h) // oh, -((-(oy + 1) * h) // oh)
        for ox in range(ow):
            x0, x1 = (ox * w) // ow, -((-(ox + 1) * w) // ow)
            out[..., oy, ox] = x[..., y0:y1, x0:x1].astype(np.float64).mean(axis=(-1, -2))
    return out


@reference("aten::_adaptive_avg_pool2d.out")
def adaptive_avg_model(a, size, out):
    oh, ow = _pair(size)
    return cast(ref_adaptive_avg(value(a), oh, ow), dtype_of(out))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size", [(1, 1), (3, 4), (7, 5), (9, 10), (12, 11)])
@pytest.mark.parametrize("order", [None, CL])
def test_adaptive_avg_pool_every_dtype(device, dtype, size, order):
    x = rand((2, 3, 9, 10))
    check(device, "aten::_adaptive_avg_pool2d.out", tensor(x, dtype, order), list(size),
          Out(dtype, [2, 3] + list(size), dim_order=order), tol=AVG_TOL)


@pytest.mark.parametrize("size", [(1, 1), (3, 3), (2, 5), (7, 7)])
@pytest.mark.parametrize("order", [None, CL])
def test_adaptive_avg_pool(device, size, order):
    x = normals(2, 4, 7, 10)
    expected = ref_adaptive_avg(x, *size)
    check(device, "aten::_adaptive_avg_pool2d.out", T(x, dim_order=order), list(size),
          Out(np.float32, expected.shape, dim_order=order), expect=expected, tol=(1e-5, 1e-6))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size", [(1, 1), (4, 3), (9, 10)])
def test_adaptive_avg_pool_channels_last_blocks(device, dtype, size):
    # Channels-last pixels of 37 channels: two blocks of 16 summed side by side, then 5 alone.
    x = rand((2, 37, 9, 10))
    check(device, "aten::_adaptive_avg_pool2d.out", tensor(x, dtype, CL), list(size),
          Out(dtype, [2, 37] + list(size), dim_order=CL), tol=AVG_TOL, num_threads=2)


def test_adaptive_avg_pool_rejects_integers(device):
    check_error(device, "aten::_adaptive_avg_pool2d.out", np.ones((1, 1, 4, 4), np.int64), [2, 2],
                Out(np.int64, (1, 1, 2, 2)), exc=ValueError)


# ---- upsampling ----------------------------------------------------------------------------------


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


def _resampled_size(x, size, scales):
    if size is not None:
        return list(size)
    return [int(x.shape[-2] * scales[0]), int(x.shape[-1] * scales[1])]


@reference("aten::upsample_nearest2d.vec_out")
def nearest_model(a, size, scales, out):
    x = value(a)
    oh, ow = _resampled_size(x, size, scales)
    return cast(ref_nearest(x, oh, ow, scales or (None, None)), dtype_of(out))


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


@reference("aten::upsample_bilinear2d.vec_out")
def bilinear_model(a, size, align_corners, scales, out):
    x = value(a)
    oh, ow = _resampled_size(x, size, scales)
    return cast(ref_bilinear(x, oh, ow, align_corners, scales or (None, None)), dtype_of(out))


@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("size,scales", [((10, 12), None), ((7, 9), None), ((3, 4), None),
                                         (None, [2.0, 2.0]), (None, [1.5, 0.7])])
@pytest.mark.parametrize("order", [None, CL])
def test_upsample_nearest_every_dtype(device, dtype, size, scales, order):
    ints = dtype in (np.int32, np.uint8, np.bool_)
    x = rand((2, 3, 5, 6), np.int32, 0, 9) if ints else rand((2, 3, 5, 6))
    out = list(size) if size else [int(5 * scales[0]), int(6 * scales[1])]
    check(device, "aten::upsample_nearest2d.vec_out", tensor(x, dtype, order),
          list(size) if size else None, scales, Out(dtype, [2, 3] + out, dim_order=order))


@pytest.mark.parametrize("size,scales", [((8, 10), None), ((5, 7), None), (None, (2.0, 3.0)),
                                         (None, (1.5, 0.5)), ((4, 5), None)])
@pytest.mark.parametrize("order", [None, CL])
def test_upsample_nearest(device, size, scales, order):
    x = normals(2, 3, 4, 5)
    oh, ow = size if size else (int(4 * scales[0]), int(5 * scales[1]))
    expected = ref_nearest(x, oh, ow, scales or (None, None))
    check(device, "aten::upsample_nearest2d.vec_out", T(x, dim_order=order),
          list(size) if size else None, list(scales) if scales else None,
          Out(np.float32, expected.shape, dim_order=order), expect=expected)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size,scales", [((10, 12), None), ((7, 9), None), ((3, 4), None),
                                         (None, [2.0, 2.0]), (None, [1.5, 0.7])])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("order", [None, CL])
def test_upsample_bilinear_every_dtype(device, dtype, size, scales, align, order):
    x = rand((2, 3, 5, 6))
    out = list(size) if size else [int(5 * scales[0]), int(6 * scales[1])]
    check(device, "aten::upsample_bilinear2d.vec_out", tensor(x, dtype, order),
          list(size) if size else None, align, scales, Out(dtype, [2, 3] + out, dim_order=order),
          tol=AVG_TOL, gpu_tol=(1e-5, 1e-5) if dtype == np.float32 else None)


@pytest.mark.parametrize("size,scales", [((8, 10), None), ((3, 7), None), (None, (2.0, 1.5)),
                                         ((1, 1), None), ((4, 5), None)])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("order", [None, CL])
def test_upsample_bilinear(device, size, scales, align_corners, order):
    x = normals(1, 3, 4, 5)
    oh, ow = size if size else (int(4 * scales[0]), int(5 * scales[1]))
    expected = ref_bilinear(x, oh, ow, align_corners, scales or (None, None))
    check(device, "aten::upsample_bilinear2d.vec_out", T(x, dim_order=order),
          list(size) if size else None, align_corners, list(scales) if scales else None,
          Out(np.float32, expected.shape, dim_order=order), expect=expected, tol=(1e-5, 1e-5))


def test_upsample_errors(device):
    x = normals(1, 1, 2, 2)
    # both size and scales
    check_error(device, "aten::upsample_nearest2d.vec_out", x, [4, 4], [2.0, 2.0],
                Out(np.float32, (1, 1, 4, 4)), exc=ValueError)
    # neither
    check_error(device, "aten::upsample_nearest2d.vec_out", x, None, None,
                Out(np.float32, (1, 1, 4, 4)), exc=ValueError)
    # 3-D input
    check_error(device, "aten::upsample_bilinear2d.vec_out", normals(1, 2, 2), [4, 4], False,
                None, Out(np.float32, (1, 4, 4)), exc=ValueError)
    # integer bilinear
    check_error(device, "aten::upsample_bilinear2d.vec_out", np.ones((1, 1, 2, 2), np.int32),
                [4, 4], False, None, Out(np.int32, (1, 1, 4, 4)), exc=ValueError)

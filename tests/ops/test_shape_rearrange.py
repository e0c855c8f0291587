"""Rearranging and padding against NumPy: repeat, flip, roll, tril / triu,
constant_pad_nd (negative pads crop), pixel_shuffle / pixel_unshuffle:
several dtypes (bf16 and bool included), dim orders on either side, empty
tensors, threads and argument errors."""

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, cast, check, check_error, dtype_of, integers, normal,
                     rand, reference, tensor, value)


def values(shape, dtype):
    return rand(shape, np.float32 if dtype == BF16 else dtype)


def spread(shape, dtype=np.float32):
    """bool half true, integers in [1, 100), floats normal * 10."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return integers(0, 2, shape, bool)
    if dtype.kind in "iu":
        return integers(1, 100, shape, dtype)
    return normal(shape, dtype, 10)


# ---- NumPy models ------------------------------------------------------------------------------


def np_pad(a, pad, fill):
    """constant_pad_nd: pad with max(0, p), then crop with max(0, -p); the
    pairs run from the last dim backwards."""
    widths = [(0, 0)] * a.ndim
    crops = [slice(None)] * a.ndim
    for k in range(len(pad) // 2):
        d = a.ndim - 1 - k
        b, e = pad[2 * k], pad[2 * k + 1]
        widths[d] = (max(b, 0), max(e, 0))
        n = a.shape[d] + max(b, 0) + max(e, 0)
        crops[d] = slice(max(-b, 0), n - max(-e, 0))
    return np.pad(a, widths, constant_values=fill)[tuple(crops)]


def np_pixel_shuffle(a, r):
    *lead, c, h, w = a.shape
    x = a.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    x = x.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def np_pixel_unshuffle(a, r):
    *lead, c, h, w = a.shape
    x = a.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    x = x.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


reference("aten::repeat.out")(lambda x, repeats, out: np.tile(value(x), repeats))
reference("aten::flip.out")(lambda x, dims, out: np.flip(value(x), dims) if dims else value(x))
reference("aten::roll.out")(
    lambda x, shifts, dims, out: np.roll(value(x), shifts, dims) if dims
    else np.roll(value(x), shifts[0]))
reference("aten::tril.out")(lambda x, diagonal, out: np.tril(value(x), diagonal))
reference("aten::triu.out")(lambda x, diagonal, out: np.triu(value(x), diagonal))
reference("aten::constant_pad_nd.out")(
    lambda x, pad, fill, out: np_pad(value(x), pad, cast(np.array(fill), dtype_of(out))))
reference("aten::pixel_shuffle.out")(lambda x, r, out: np_pixel_shuffle(value(x), r))
reference("aten::pixel_unshuffle.out")(lambda x, r, out: np_pixel_unshuffle(value(x), r))


# ---- repeat -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int64, BF16])
def test_repeat(device, dtype):
    a = values((2, 3), dtype)
    check(device, "aten::repeat.out", tensor(a, dtype), [2, 1, 3], Out(dtype, (2, 2, 9)))
    check(device, "aten::repeat.out", tensor(a, dtype), [0, 2], Out(dtype, (0, 6)))
    b = values((1, 2, 3, 2), dtype)
    check(device, "aten::repeat.out", tensor(b, dtype, CL), [2, 1, 2, 2],
          Out(dtype, (2, 2, 6, 4), dim_order=CL))


@pytest.mark.parametrize("shape,repeats", [((2, 3), [2, 2]), ((2, 3), [3, 1, 2]),
                                           ((3,), [2, 1, 4]), ((), [3, 2]), ((2, 1), [0, 5]),
                                           ((1, 2, 1, 3), [2, 1, 3, 1])])
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float16, np.float64])
def test_repeat_matches_tile(device, shape, repeats, dtype):
    a = spread(shape, dtype)
    expected = np.tile(a, repeats)
    check(device, "aten::repeat.out", a, repeats, Out(dtype, expected.shape), expect=expected)


def test_repeat_channels_last_and_errors(device):
    a = spread((1, 2, 3, 4))
    check(device, "aten::repeat.out", T(a, dim_order=CL), [2, 1, 2, 1],
          Out(np.float32, (2, 2, 6, 4), dim_order=CL), expect=np.tile(a, [2, 1, 2, 1]))
    check_error(device, "aten::repeat.out", a, [2, 2], Out(np.float32, (2, 4, 3, 4)),
                exc=ValueError, match="repeat")
    check_error(device, "aten::repeat.out", a, [1, 1, -1, 1], Out(np.float32, (1, 2, 3, 4)),
                exc=ValueError, match="negative")


# ---- flip / roll --------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [[0], [-1], [0, 2], [1, 2, 3], [], [1, 3], [0, 1, 2, 3]])
@pytest.mark.parametrize("order", [None, CL])
def test_flip(device, dims, order):
    a = spread((2, 3, 4, 5), np.int64)
    check(device, "aten::flip.out", T(a, dim_order=order), dims,
          Out(np.int64, a.shape, dim_order=order), expect=np.flip(a, dims) if dims else a)
    check(device, "aten::flip.out", T(a.astype(np.float16), dim_order=order), dims,
          Out(np.float16, a.shape))


def test_flip_errors_and_empty(device):
    check_error(device, "aten::flip.out", spread((2, 3)), [0, -2], Out(np.float32, (2, 3)),
                exc=ValueError, match="repeats")
    check(device, "aten::flip.out", spread((0, 3)), [0], Out(np.float32, (0, 3)),
          expect=np.zeros((0, 3)))


@pytest.mark.parametrize("shifts,dims", [([1], []), ([-7], []), ([2], [1]), ([1, -2], [0, -1]),
                                         ([3, 5], [1, 1]), ([0], [2]), ([1], [0]), ([-2], [1]),
                                         ([7], [-1]), ([1, 2], [0, 2]), ([3, -1], [1, 1]),
                                         ([5], []), ([-13], [])])
@pytest.mark.parametrize("orders", [(None, None), (CL, None), (None, CL), (CL, CL)])
def test_roll(device, shifts, dims, orders):
    a = rand((2, 3, 4, 5), np.float32)
    check(device, "aten::roll.out", T(a, dim_order=orders[0]), shifts, dims,
          Out(np.float32, a.shape, dim_order=orders[1]))


def test_roll_errors(device):
    check_error(device, "aten::roll.out", spread((3,)), [1, 2], [], Out(np.float32, (3,)),
                exc=ValueError, match="roll")
    check_error(device, "aten::roll.out", spread((3,)), [1, 2], [0], Out(np.float32, (3,)),
                exc=ValueError, match="roll")


# ---- tril / triu --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["aten::tril.out", "aten::triu.out"])
@pytest.mark.parametrize("diagonal", [0, 1, -1, 3, -5, 100, -100])
def test_tril_triu(device, name, diagonal):
    a = spread((2, 4, 5), np.int32)
    fn = np.tril if name == "aten::tril.out" else np.triu
    check(device, name, a, diagonal, Out(np.int32, a.shape), expect=fn(a, diagonal))
    check(device, name, rand((2, 4, 5), np.int32), diagonal, Out(np.int32, a.shape))
    b = rand((2, 3, 4, 5), np.bool_)
    check(device, name, T(b, dim_order=CL), diagonal, Out(np.bool_, b.shape, dim_order=CL))
    check(device, name, T(rand((3, 6)), bf16=True), diagonal, Out(BF16, (3, 6)))
    check(device, name, rand((0, 3), np.float64), diagonal, Out(np.float64, (0, 3)))


def test_tril_channels_last_bool_and_errors(device):
    a = spread((2, 3, 4, 4), np.bool_)
    check(device, "aten::tril.out", T(a, dim_order=CL), 0, Out(np.bool_, a.shape, dim_order=CL),
          expect=np.tril(a))
    check_error(device, "aten::tril.out", spread((4,)), 0, Out(np.float32, (4,)), exc=ValueError,
                match="rank")


# ---- constant_pad_nd ----------------------------------------------------------------------------


@pytest.mark.parametrize("pad", [[1, 2], [0, 0, 2, 1], [1, 1, 1, 1, 1, 1], [-1, 2], [2, -3, -1, 0],
                                 [-4, 0], [0, -4, 1, 1]])
def test_constant_pad(device, pad):
    a = spread((2, 3, 4))
    check(device, "aten::constant_pad_nd.out", a, pad, 1.5,
          Out(np.float32, np_pad(a, pad, 1.5).shape), expect=np_pad(a, pad, 1.5))


@pytest.mark.parametrize("pad", [[1, 2], [0, 0, 2, 1], [-1, 2, 1, -1], [1, 1, 1, 1, 1, 1],
                                 [-3, 0]])
def test_constant_pad_nd(device, pad):
    a = rand((1, 2, 3, 4), np.float32)
    shape = list(a.shape)
    for k in range(len(pad) // 2):
        shape[3 - k] += pad[2 * k] + pad[2 * k + 1]
    check(device, "aten::constant_pad_nd.out", a, pad, 1.5, Out(np.float32, tuple(shape)))
    check(device, "aten::constant_pad_nd.out", T(a.astype(np.int64), dim_order=CL), pad, -3,
          Out(np.int64, tuple(shape), dim_order=CL))
    check(device, "aten::constant_pad_nd.out", T(a, bf16=True), pad, 0.25, Out(BF16, tuple(shape)))
    check(device, "aten::constant_pad_nd.out", a.astype(np.uint8), pad, 7,
          Out(np.uint8, tuple(shape)))


def test_constant_pad_channels_last_int_and_errors(device):
    a = spread((1, 2, 3, 3), np.int64)
    check(device, "aten::constant_pad_nd.out", T(a, dim_order=CL), [1, 1, 2, 0], -7,
          Out(np.int64, (1, 2, 5, 5), dim_order=CL),
          expect=np.pad(a, [(0, 0), (0, 0), (2, 0), (1, 1)], constant_values=-7))
    check_error(device, "aten::constant_pad_nd.out", a, [1], 0, Out(np.int64, (1, 2, 3, 4)),
                exc=ValueError, match="padding")
    check_error(device, "aten::constant_pad_nd.out", a, [-2, -2], 0, Out(np.int64, (1, 2, 3, 0)),
                exc=ValueError, match="padding")
    check_error(device, "aten::constant_pad_nd.out", a.astype(np.uint8), [1, 1], 300,
                Out(np.uint8, (1, 2, 3, 5)), exc=ValueError, match="overflow")


# ---- pixel_shuffle / pixel_unshuffle ------------------------------------------------------------


@pytest.mark.parametrize("order", [None, CL])
def test_pixel_shuffle_unshuffle(device, order):
    a = rand((2, 8, 3, 5), np.float32)
    check(device, "aten::pixel_shuffle.out", T(a, dim_order=order), 2,
          Out(np.float32, (2, 2, 6, 10), dim_order=order))
    b = rand((2, 3, 4, 6), np.float16)
    check(device, "aten::pixel_unshuffle.out", T(b, dim_order=order), 2,
          Out(np.float16, (2, 12, 2, 3), dim_order=order))


@pytest.mark.parametrize("shape,r,order", [((1, 8, 3, 2), 2, None), ((1, 8, 3, 2), 2, CL),
                                           ((2, 9, 2, 2), 3, CL), ((4, 2, 3), 1, None),
                                           ((2, 1, 4, 1, 1), 2, None)])
def test_pixel_shuffle_round_trip(device, shape, r, order):
    a = spread(shape)
    expected = np_pixel_shuffle(a, r)
    check(device, "aten::pixel_shuffle.out", T(a, dim_order=order), r,
          Out(np.float32, expected.shape, dim_order=order), expect=expected)
    # The unshuffle of the shuffle is the input again.
    check(device, "aten::pixel_unshuffle.out", T(expected, dim_order=order), r,
          Out(np.float32, shape, dim_order=order), expect=a)


def test_pixel_shuffle_errors(device):
    check_error(device, "aten::pixel_shuffle.out", spread((1, 6, 2, 2)), 2,
                Out(np.float32, (1, 1, 4, 4)), exc=ValueError, match="divisible")
    check_error(device, "aten::pixel_unshuffle.out", spread((1, 1, 3, 4)), 2,
                Out(np.float32, (1, 4, 1, 2)), exc=ValueError, match="divisible")
    check_error(device, "aten::pixel_shuffle.out", spread((4, 4)), 2, Out(np.float32, (4, 4)),
                exc=ValueError, match="rank")
    check_error(device, "aten::pixel_shuffle.out", spread((1, 4, 2, 2)), 0,
                Out(np.float32, (1, 4, 2, 2)), exc=ValueError, match="factor")


def test_large_rearrangements_on_threads(device):
    a = spread((3, 64, 40, 40))
    check(device, "aten::roll.out", T(a, dim_order=CL), [5, -7], [2, 3], Out(np.float32, a.shape),
          expect=np.roll(a, [5, -7], [2, 3]), num_threads=4)
    check(device, "aten::repeat.out", a, [2, 1, 1, 2], Out(np.float32, (6, 64, 40, 80)),
          expect=np.tile(a, [2, 1, 1, 2]), num_threads=4)
    check(device, "aten::constant_pad_nd.out", a, [1, 2, 3, 4], 0.5,
          Out(np.float32, (3, 64, 47, 43)),
          expect=np.pad(a, [(0, 0), (0, 0), (3, 4), (1, 2)], constant_values=0.5), num_threads=4)

"""Rearranging and padding ops (shape_rearrange.cpp) against NumPy: repeat,
flip, roll, tril/triu, constant_pad_nd, pixel_shuffle/unshuffle, with dim
orders, empty tensors and argument errors."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel

RNG = np.random.default_rng(3)
CL = (0, 2, 3, 1)


def rand(shape, dtype=np.float32):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return RNG.integers(1, 100, shape).astype(dtype)
    return np.asarray(RNG.standard_normal(shape) * 10).astype(dtype)


def run(name, *args):
    return call_kernel(name, *args)[0]


# ---- repeat -------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,repeats", [((2, 3), [2, 2]), ((2, 3), [3, 1, 2]),
                                           ((3,), [2, 1, 4]), ((), [3, 2]), ((2, 1), [0, 5]),
                                           ((1, 2, 1, 3), [2, 1, 3, 1])])
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float16, np.float64])
def test_repeat_matches_tile(shape, repeats, dtype):
    a = rand(shape, dtype)
    expected = np.tile(a, repeats)
    r = run("aten::repeat.out", a, repeats, Out(dtype, expected.shape))
    np.testing.assert_array_equal(r, expected)


def test_repeat_channels_last_and_errors():
    a = rand((1, 2, 3, 4))
    r = run("aten::repeat.out", T(a, dim_order=CL), [2, 1, 2, 1],
            Out(np.float32, (2, 2, 6, 4), dim_order=CL))
    np.testing.assert_array_equal(r, np.tile(a, [2, 1, 2, 1]))
    with pytest.raises(ValueError, match="repeat"):
        run("aten::repeat.out", a, [2, 2], Out(np.float32, (2, 4, 3, 4)))
    with pytest.raises(ValueError, match="negative"):
        run("aten::repeat.out", a, [1, 1, -1, 1], Out(np.float32, (1, 2, 3, 4)))


# ---- flip / roll --------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [[0], [-1], [1, 3], [0, 1, 2, 3], []])
@pytest.mark.parametrize("order", [None, CL])
def test_flip(dims, order):
    a = rand((2, 3, 4, 5), np.int64)
    r = run("aten::flip.out", T(a, dim_order=order), dims, Out(np.int64, a.shape, dim_order=order))
    np.testing.assert_array_equal(r, np.flip(a, dims) if dims else a)


def test_flip_errors_and_empty():
    with pytest.raises(ValueError, match="repeats"):
        run("aten::flip.out", rand((2, 3)), [0, -2], Out(np.float32, (2, 3)))
    assert run("aten::flip.out", rand((0, 3)), [0], Out(np.float32, (0, 3))).shape == (0, 3)


@pytest.mark.parametrize("shifts,dims", [([1], [0]), ([-2], [1]), ([7], [-1]), ([1, 2], [0, 2]),
                                         ([3, -1], [1, 1]), ([0], [2]), ([5], []), ([-13], [])])
@pytest.mark.parametrize("in_order,out_order", [(None, None), (CL, None), (CL, CL)])
def test_roll(shifts, dims, in_order, out_order):
    a = rand((2, 3, 4, 5))
    expected = np.roll(a, shifts, dims if dims else None)
    if not dims:
        expected = np.roll(a, shifts[0])
    r = run("aten::roll.out", T(a, dim_order=in_order), shifts, dims,
            Out(np.float32, a.shape, dim_order=out_order))
    np.testing.assert_array_equal(r, expected)


def test_roll_errors():
    with pytest.raises(ValueError, match="roll"):
        run("aten::roll.out", rand((3,)), [1, 2], [], Out(np.float32, (3,)))
    with pytest.raises(ValueError, match="roll"):
        run("aten::roll.out", rand((3,)), [1, 2], [0], Out(np.float32, (3,)))


# ---- tril / triu --------------------------------------------------------------------------------


@pytest.mark.parametrize("diagonal", [0, 1, -1, 3, -5, 100, -100])
@pytest.mark.parametrize("name,fn", [("aten::tril.out", np.tril), ("aten::triu.out", np.triu)])
def test_triangles(diagonal, name, fn):
    a = rand((2, 4, 5), np.int32)
    r = run(name, a, diagonal, Out(np.int32, a.shape))
    np.testing.assert_array_equal(r, fn(a, diagonal))


def test_tril_channels_last_bool_and_errors():
    a = rand((2, 3, 4, 4), np.bool_)
    r = run("aten::tril.out", T(a, dim_order=CL), 0, Out(np.bool_, a.shape, dim_order=CL))
    np.testing.assert_array_equal(r, np.tril(a))
    with pytest.raises(ValueError, match="rank"):
        run("aten::tril.out", rand((4,)), 0, Out(np.float32, (4,)))


# ---- constant_pad_nd ----------------------------------------------------------------------------


@pytest.mark.parametrize("pad", [[1, 2], [0, 0, 2, 1], [1, 1, 1, 1, 1, 1], [-1, 2], [2, -3, -1, 0],
                                 [-4, 0], [0, -4, 1, 1]])
def test_constant_pad(pad):
    a = rand((2, 3, 4))
    # Reference: pad with max(0, p), then crop with max(0, -p).
    widths = [(0, 0)] * 3
    crops = [slice(None)] * 3
    for k in range(len(pad) // 2):
        d = 2 - k
        b, e = pad[2 * k], pad[2 * k + 1]
        widths[d] = (max(b, 0), max(e, 0))
        n = a.shape[d] + max(b, 0) + max(e, 0)
        crops[d] = slice(max(-b, 0), n - max(-e, 0))
    expected = np.pad(a, widths, constant_values=1.5)[tuple(crops)]
    r = run("aten::constant_pad_nd.out", a, pad, 1.5, Out(np.float32, expected.shape))
    np.testing.assert_array_equal(r, expected)


def test_constant_pad_channels_last_int_and_errors():
    a = rand((1, 2, 3, 3), np.int64)
    r = run("aten::constant_pad_nd.out", T(a, dim_order=CL), [1, 1, 2, 0], -7,
            Out(np.int64, (1, 2, 5, 5), dim_order=CL))
    np.testing.assert_array_equal(r, np.pad(a, [(0, 0), (0, 0), (2, 0), (1, 1)],
                                            constant_values=-7))
    with pytest.raises(ValueError, match="padding"):
        run("aten::constant_pad_nd.out", a, [1], 0, Out(np.int64, (1, 2, 3, 4)))
    with pytest.raises(ValueError, match="padding"):
        run("aten::constant_pad_nd.out", a, [-2, -2], 0, Out(np.int64, (1, 2, 3, 0)))
    with pytest.raises(ValueError, match="overflow"):
        run("aten::constant_pad_nd.out", a.astype(np.uint8), [1, 1], 300,
            Out(np.uint8, (1, 2, 3, 5)))


# ---- pixel_shuffle / pixel_unshuffle -------------------------------------------------------------


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


@pytest.mark.parametrize("shape,r,order", [((1, 8, 3, 2), 2, None), ((1, 8, 3, 2), 2, CL),
                                           ((2, 9, 2, 2), 3, CL), ((4, 2, 3), 1, None),
                                           ((2, 1, 4, 1, 1), 2, None)])
def test_pixel_shuffle_round_trip(shape, r, order):
    a = rand(shape)
    expected = np_pixel_shuffle(a, r)
    out = run("aten::pixel_shuffle.out", T(a, dim_order=order), r,
              Out(np.float32, expected.shape, dim_order=order))
    np.testing.assert_array_equal(out, expected)
    back = run("aten::pixel_unshuffle.out", T(expected, dim_order=order), r,
               Out(np.float32, shape, dim_order=order))
    np.testing.assert_array_equal(back, np_pixel_unshuffle(expected, r))
    np.testing.assert_array_equal(back, a)


def test_pixel_shuffle_errors():
    with pytest.raises(ValueError, match="divisible"):
        run("aten::pixel_shuffle.out", rand((1, 6, 2, 2)), 2, Out(np.float32, (1, 1, 4, 4)))
    with pytest.raises(ValueError, match="divisible"):
        run("aten::pixel_unshuffle.out", rand((1, 1, 3, 4)), 2, Out(np.float32, (1, 4, 1, 2)))
    with pytest.raises(ValueError, match="rank"):
        run("aten::pixel_shuffle.out", rand((4, 4)), 2, Out(np.float32, (4, 4)))
    with pytest.raises(ValueError, match="factor"):
        run("aten::pixel_shuffle.out", rand((1, 4, 2, 2)), 0, Out(np.float32, (1, 4, 2, 2)))


def test_large_rearrangements_on_threads():
    a = rand((3, 64, 40, 40))
    r = call_kernel("aten::roll.out", T(a, dim_order=CL), [5, -7], [2, 3],
                    Out(np.float32, a.shape), num_threads=4)[0]
    np.testing.assert_array_equal(r, np.roll(a, [5, -7], [2, 3]))
    r = call_kernel("aten::repeat.out", a, [2, 1, 1, 2], Out(np.float32, (6, 64, 40, 80)),
                    num_threads=4)[0]
    np.testing.assert_array_equal(r, np.tile(a, [2, 1, 1, 2]))
    r = call_kernel("aten::constant_pad_nd.out", a, [1, 2, 3, 4], 0.5,
                    Out(np.float32, (3, 64, 47, 43)), num_threads=4)[0]
    np.testing.assert_array_equal(r, np.pad(a, [(0, 0), (0, 0), (3, 4), (1, 2)],
                                            constant_values=0.5))

"""View-style shape ops (shape.cpp) against NumPy: view_copy, permute, expand,
(un)squeeze, slice, select, narrow, transpose, t, as_strided, alias/detach,
unfold, diagonal. Every dtype (they are byte copies), both dim orders on
either side, empty and 0-dim tensors, dynamic outputs and argument errors."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(11)
CL = (0, 2, 3, 1)
INT64_MAX = 2**63 - 1
DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
          np.float64, np.uint16, np.uint32, np.uint64]


def rand(shape, dtype=np.float32):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return RNG.integers(0, 100, shape).astype(dtype)
    return np.asarray(RNG.standard_normal(shape) * 10).astype(dtype)


def run(name, *args):
    return call_kernel(name, *args)[0]


# ---- view_copy ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_view_copy_every_dtype(dtype):
    a = rand((2, 3, 4), dtype)
    np.testing.assert_array_equal(run("aten::view_copy.out", a, [4, 6], Out(dtype, (4, 6))),
                                  a.reshape(4, 6))


def test_view_copy_bfloat16():
    a = from_bf16_bits(to_bf16_bits(rand((2, 6))))
    r = run("aten::view_copy.out", T(a, bf16=True), [3, -1], Out("bfloat16", (3, 4)))
    np.testing.assert_array_equal(r, a.reshape(3, 4))


@pytest.mark.parametrize("in_order,out_order", [(None, CL), (CL, None), (CL, CL)])
def test_view_copy_reshapes_in_logical_order_for_any_dim_order(in_order, out_order):
    a = rand((2, 3, 4, 5))
    r = run("aten::view_copy.out", T(a, dim_order=in_order), [5, 4, 3, 2],
            Out(np.float32, (5, 4, 3, 2), dim_order=out_order))
    np.testing.assert_array_equal(r, a.reshape(5, 4, 3, 2))


def test_view_copy_infers_minus_one_and_resizes_dynamic_out():
    a = rand((4, 6))
    r = run("aten::view_copy.out", a, [-1, 8], Out(np.float32, (1, 1), dynamic=True,
                                                   capacity=(8, 8)))
    np.testing.assert_array_equal(r, a.reshape(3, 8))


def test_view_copy_zero_dim_and_empty():
    s = np.array(3.5, dtype=np.float32)
    np.testing.assert_array_equal(run("aten::view_copy.out", s, [1, 1], Out(np.float32, (1, 1))),
                                  [[3.5]])
    np.testing.assert_array_equal(run("aten::view_copy.out", np.array([[7]], np.int64), [],
                                      Out(np.int64, ())), 7)
    e = np.zeros((0, 3), np.float32)
    assert run("aten::view_copy.out", e, [3, 0], Out(np.float32, (3, 0))).shape == (3, 0)


@pytest.mark.parametrize("size", [[-1, -1], [5, 5], [-1, 7], [-2, 12]])
def test_view_copy_rejects_bad_sizes(size):
    with pytest.raises(ValueError, match="view_copy"):
        run("aten::view_copy.out", rand((4, 6)), size, Out(np.float32, (1, 1), dynamic=True,
                                                            capacity=(30, 30)))


def test_view_copy_rejects_minus_one_with_zero_elements():
    with pytest.raises(ValueError, match="infer"):
        run("aten::view_copy.out", np.zeros((0, 4), np.float32), [0, -1],
            Out(np.float32, (0, 4)))


def test_view_copy_rejects_other_dtype():
    with pytest.raises(ValueError, match="dtype"):
        run("aten::view_copy.out", rand((2, 3)), [6], Out(np.float64, (6,)))


# ---- permute / transpose / t ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_permute_every_dtype(dtype):
    a = rand((2, 3, 4), dtype)
    r = run("aten::permute_copy.out", a, [2, 0, 1], Out(dtype, (4, 2, 3)))
    np.testing.assert_array_equal(r, a.transpose(2, 0, 1))


@pytest.mark.parametrize("in_order", [None, CL])
@pytest.mark.parametrize("out_order", [None, CL])
def test_permute_negative_dims_any_dim_order(in_order, out_order):
    a = rand((2, 3, 4, 5))
    r = run("aten::permute_copy.out", T(a, dim_order=in_order), [0, -1, 1, -2],
            Out(np.float32, (2, 5, 3, 4), dim_order=out_order))
    np.testing.assert_array_equal(r, a.transpose(0, 3, 1, 2))


def test_permute_bfloat16_and_zero_dim():
    a = from_bf16_bits(to_bf16_bits(rand((16, 10))))
    r = run("aten::permute_copy.out", T(a, bf16=True), [1, 0], Out("bfloat16", (10, 16)))
    np.testing.assert_array_equal(r, a.T)
    assert run("aten::permute_copy.out", np.array(2.0), [], Out(np.float64, ())) == 2.0


@pytest.mark.parametrize("dims", [[0, 0, 1], [0, 1], [0, 1, 3]])
def test_permute_rejects_bad_dims(dims):
    with pytest.raises((ValueError, IndexError), match="permute_copy"):
        run("aten::permute_copy.out", rand((2, 3, 4)), dims, Out(np.float32, (2, 3, 4)))


def test_transpose_and_t():
    a = rand((2, 3, 4, 5))
    r = run("aten::transpose_copy.int_out", T(a, dim_order=CL), -1, 1,
            Out(np.float32, (2, 5, 4, 3)))
    np.testing.assert_array_equal(r, a.swapaxes(-1, 1))
    m = rand((3, 7), np.int32)
    np.testing.assert_array_equal(run("aten::t_copy.out", m, Out(np.int32, (7, 3))), m.T)
    v = rand((5,), np.int16)
    np.testing.assert_array_equal(run("aten::t_copy.out", v, Out(np.int16, (5,))), v)
    with pytest.raises(ValueError, match="t_copy"):
        run("aten::t_copy.out", a, Out(np.float32, (2, 3, 4, 5)))


# ---- expand -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.bool_, np.int64, np.float16, np.float32])
def test_expand_new_leading_dims_and_minus_one(dtype):
    a = rand((3, 1), dtype)
    r = run("aten::expand_copy.out", a, [2, -1, 4], False, Out(dtype, (2, 3, 4)))
    np.testing.assert_array_equal(r, np.broadcast_to(a, (2, 3, 4)))


def test_expand_into_channels_last_out_and_from_zero_dim():
    a = rand((1, 3, 1, 1))
    r = run("aten::expand_copy.out", a, [2, 3, 4, 5], True,
            Out(np.float32, (2, 3, 4, 5), dim_order=CL))
    np.testing.assert_array_equal(r, np.broadcast_to(a, (2, 3, 4, 5)))
    s = np.array(4, np.int32)
    np.testing.assert_array_equal(run("aten::expand_copy.out", s, [2, 2], False,
                                      Out(np.int32, (2, 2))), np.full((2, 2), 4))


def test_expand_to_zero_size():
    a = rand((1, 3))
    assert run("aten::expand_copy.out", a, [0, 3], False, Out(np.float32, (0, 3))).shape == (0, 3)


@pytest.mark.parametrize("size", [[3, 3], [-1, 2, 3], [2]])
def test_expand_rejects_bad_sizes(size):
    with pytest.raises(ValueError, match="expand_copy"):
        run("aten::expand_copy.out", rand((2, 3)), size, False,
            Out(np.float32, (2, 3), dynamic=True, capacity=(9, 9)))


# ---- unsqueeze / squeeze ------------------------------------------------------------------------


@pytest.mark.parametrize("dim,shape", [(0, (1, 2, 3)), (2, (2, 3, 1)), (-1, (2, 3, 1)),
                                       (-2, (2, 1, 3)), (-3, (1, 2, 3))])
def test_unsqueeze_dims_count_from_output_rank(dim, shape):
    a = rand((2, 3), np.int8)
    np.testing.assert_array_equal(run("aten::unsqueeze_copy.out", a, dim, Out(np.int8, shape)),
                                  a.reshape(shape))


def test_unsqueeze_zero_dim_and_errors():
    np.testing.assert_array_equal(
        run("aten::unsqueeze_copy.out", np.array(1.5, np.float32), 0, Out(np.float32, (1,))),
        [1.5])
    with pytest.raises(IndexError, match="unsqueeze_copy"):
        run("aten::unsqueeze_copy.out", rand((2, 3)), 3, Out(np.float32, (2, 3, 1)))


def test_squeeze_variants():
    a = rand((1, 3, 1, 2))
    np.testing.assert_array_equal(
        run("aten::squeeze_copy.dim_out", a, -2, Out(np.float32, (1, 3, 2))), a.reshape(1, 3, 2))
    # A dim whose size is not 1 is left alone.
    np.testing.assert_array_equal(
        run("aten::squeeze_copy.dim_out", a, 1, Out(np.float32, (1, 3, 1, 2))), a)
    np.testing.assert_array_equal(
        run("aten::squeeze_copy.dims_out", a, [0, 1, -2], Out(np.float32, (3, 2))),
        a.reshape(3, 2))
    np.testing.assert_array_equal(run("aten::squeeze_copy.out", a, Out(np.float32, (3, 2))),
                                  a.reshape(3, 2))
    s = np.array(5, np.int64)
    assert run("aten::squeeze_copy.dims_out", s, [0], Out(np.int64, ())) == 5
    with pytest.raises(ValueError, match="repeats"):
        run("aten::squeeze_copy.dims_out", a, [0, -4], Out(np.float32, (3, 1, 2)))


# ---- slice / select / narrow ------------------------------------------------------------------


def py_slice_cases():
    return [(0, None, None, 1), (1, 1, None, 1), (1, -2, None, 1), (2, None, -1, 2),
            (2, 1, INT64_MAX, 2), (-1, -100, 100, 3), (0, 5, 2, 1), (1, 3, 3, 1),
            (2, -3, -1, 1), (2, 4, INT64_MAX, 1), (1, -(2**63), 2, 1)]


@pytest.mark.parametrize("dim,start,end,step", py_slice_cases())
def test_slice_follows_python_slice_rules(dim, start, end, step):
    a = rand((2, 3, 5), np.int32)
    index = [slice(None)] * 3
    index[dim] = slice(start, end, step)
    expected = a[tuple(index)]
    r = run("aten::slice_copy.Tensor_out", a, dim, start, end, step,
            Out(np.int32, (1, 1, 1), dynamic=True, capacity=(2, 3, 5)))
    np.testing.assert_array_equal(r, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_fixture_form_every_dtype(dtype):
    a = rand((1, 16, 4, 16), dtype)
    r = run("aten::slice_copy.Tensor_out", a, 3, 8, INT64_MAX, 1, Out(dtype, (1, 16, 4, 8)))
    np.testing.assert_array_equal(r, a[..., 8:])


def test_slice_channels_last_both_sides():
    a = rand((2, 6, 3, 4))
    r = run("aten::slice_copy.Tensor_out", T(a, dim_order=CL), 1, 1, 6, 2,
            Out(np.float32, (2, 3, 3, 4), dim_order=CL))
    np.testing.assert_array_equal(r, a[:, 1:6:2])


@pytest.mark.parametrize("args,exc", [((0, 0, 2, 0), ValueError), ((3, 0, 2, 1), IndexError)])
def test_slice_rejects_bad_step_and_dim(args, exc):
    with pytest.raises(exc, match="slice_copy"):
        run("aten::slice_copy.Tensor_out", rand((4, 4)), *args, Out(np.float32, (2, 4)))


def test_slice_rejects_zero_dim():
    with pytest.raises(ValueError, match="0-dimensional"):
        run("aten::slice_copy.Tensor_out", np.array(1.0), 0, None, None, 1, Out(np.float64, ()))


@pytest.mark.parametrize("dim,index", [(0, 1), (1, -1), (-1, 2), (2, -5)])
def test_select(dim, index):
    a = rand((2, 3, 5), np.float64)
    expected = np.take(a, index, axis=dim)
    r = run("aten::select_copy.int_out", a, dim, index, Out(np.float64, expected.shape))
    np.testing.assert_array_equal(r, expected)


def test_select_channels_last_and_errors():
    a = rand((2, 3, 4, 5))
    r = run("aten::select_copy.int_out", T(a, dim_order=CL), 1, 2, Out(np.float32, (2, 4, 5)))
    np.testing.assert_array_equal(r, a[:, 2])
    with pytest.raises(IndexError, match="select_copy"):
        run("aten::select_copy.int_out", a, 1, 3, Out(np.float32, (2, 4, 5)))
    with pytest.raises(IndexError, match="select_copy"):
        run("aten::select_copy.int_out", a, 1, -4, Out(np.float32, (2, 4, 5)))
    with pytest.raises(ValueError, match="0-dimensional"):
        run("aten::select_copy.int_out", np.array(1.0), 0, 0, Out(np.float64, ()))


def test_narrow():
    a = rand((4, 6), np.uint8)
    np.testing.assert_array_equal(run("aten::narrow_copy.out", a, 1, -4, 3, Out(np.uint8, (4, 3))),
                                  a[:, 2:5])
    np.testing.assert_array_equal(run("aten::narrow_copy.out", a, 0, 4, 0, Out(np.uint8, (0, 6))),
                                  a[4:4])
    with pytest.raises(ValueError, match="narrow_copy"):
        run("aten::narrow_copy.out", a, 1, 4, 3, Out(np.uint8, (4, 3)))


# ---- as_strided / alias / detach ----------------------------------------------------------------


def test_as_strided_fixture_form():
    a = rand((1, 16, 1, 1))
    r = run("aten::as_strided_copy.out", a, [1, 16, 1, 1], [16, 1, 16, 16], None,
            Out(np.float32, (1, 16, 1, 1)))
    np.testing.assert_array_equal(r, a)


def test_as_strided_overlapping_windows_with_offset():
    a = np.arange(10, dtype=np.int64)
    r = run("aten::as_strided_copy.out", a, [3, 4], [2, 1], 1, Out(np.int64, (3, 4)))
    np.testing.assert_array_equal(r, np.lib.stride_tricks.as_strided(a[1:], (3, 4), (16, 8)))


def test_as_strided_reads_the_storage_of_a_channels_last_input():
    a = rand((1, 2, 2, 3))
    storage = a.transpose(0, 2, 3, 1).ravel()  # memory order of the channels-last tensor
    r = run("aten::as_strided_copy.out", T(a, dim_order=CL), [12], [1], 0, Out(np.float32, (12,)))
    np.testing.assert_array_equal(r, storage)


@pytest.mark.parametrize("size,stride,offset", [([3, 4], [4, 1], 0), ([10], [1], 1),
                                                ([2], [-1], 5), ([2], [1], -1),
                                                ([2, 2], [2**62, 2**62], 0)])
def test_as_strided_never_reads_outside_the_input(size, stride, offset):
    with pytest.raises((IndexError, ValueError), match="as_strided_copy"):
        run("aten::as_strided_copy.out", np.arange(10, dtype=np.float32), size, stride, offset,
            Out(np.float32, size))


def test_as_strided_empty_view_reads_nothing():
    r = run("aten::as_strided_copy.out", np.arange(4, dtype=np.float32), [0, 3], [100, 100], 0,
            Out(np.float32, (0, 3)))
    assert r.shape == (0, 3)


@pytest.mark.parametrize("name", ["aten::alias_copy.out", "aten::detach_copy.out"])
def test_alias_and_detach_copy_into_other_dim_order(name):
    a = rand((2, 3, 4, 5), np.int16)
    np.testing.assert_array_equal(run(name, a, Out(np.int16, a.shape, dim_order=CL)), a)


# ---- unfold / diagonal --------------------------------------------------------------------------


@pytest.mark.parametrize("dim,size,step", [(1, 3, 2), (-1, 2, 1), (0, 2, 5), (1, 0, 1),
                                           (1, 7, 1)])
def test_unfold(dim, size, step):
    a = rand((2, 7, 3))
    d = dim % 3
    n = (a.shape[d] - size) // step + 1
    windows = [np.take(a, range(i * step, i * step + size), axis=d) for i in range(n)]
    expected = np.moveaxis(np.stack(windows, axis=d), d + 1, -1)
    r = run("aten::unfold_copy.out", a, dim, size, step, Out(np.float32, expected.shape))
    np.testing.assert_array_equal(r, expected)


def test_unfold_rejects_big_window():
    with pytest.raises(ValueError, match="unfold_copy"):
        run("aten::unfold_copy.out", rand((2, 3)), 1, 4, 1, Out(np.float32, (2, 0, 4)))


@pytest.mark.parametrize("offset,d1,d2", [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (2, -1, 0),
                                          (5, 0, 1), (-4, 1, 2), (0, 2, 0)])
def test_diagonal(offset, d1, d2):
    a = rand((3, 4, 5))
    expected = np.diagonal(a, offset, d1, d2)
    r = run("aten::diagonal_copy.out", a, offset, d1, d2, Out(np.float32, expected.shape))
    np.testing.assert_array_equal(r, expected)


def test_large_views_on_threads():
    a = rand((64, 128, 33))
    r = call_kernel("aten::permute_copy.out", a, [2, 0, 1], Out(np.float32, (33, 64, 128)),
                    num_threads=4)[0]
    np.testing.assert_array_equal(r, a.transpose(2, 0, 1))
    r = call_kernel("aten::expand_copy.out", a[:1], [8, 128, 33], False,
                    Out(np.float32, (8, 128, 33)), num_threads=4)[0]
    np.testing.assert_array_equal(r, np.broadcast_to(a[:1], (8, 128, 33)))
    r = call_kernel("aten::view_copy.out", T(a.reshape(64, 128, 33, 1), dim_order=CL),
                    [33, 128, 64, 1], Out(np.float32, (33, 128, 64, 1), dim_order=CL),
                    num_threads=4)[0]
    np.testing.assert_array_equal(r, a.reshape(33, 128, 64, 1))

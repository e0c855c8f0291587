"""View-style shape ops against NumPy: view_copy, permute, expand,
(un)squeeze, slice, select, narrow, transpose, t, as_strided, alias /
detach, unfold, diagonal, and et_copy_index. They move bytes, so every
dtype (bf16 and the unsigned ones included), both dim orders on either
side, negative dims, Python slice rules, empty and 0-dim tensors, dynamic
outs, threads and argument errors."""

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, check, check_error, dtype_of, integers, normal,
                     out_fill, rand, reference, tensor, value)

INT64_MAX = 2**63 - 1
DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
          np.float64, np.uint16, np.uint32, np.uint64]
ALL = DTYPES + [BF16]


def values(shape, dtype):
    return rand(shape, np.float32 if dtype == BF16 else dtype)


def spread(shape, dtype=np.float32):
    """bool half true, integers in [0, 100), floats normal * 10."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return integers(0, 2, shape, bool)
    if dtype.kind in "iu":
        return integers(0, 100, shape, dtype)
    return normal(shape, dtype, 10)


# ---- NumPy models ------------------------------------------------------------------------------


def _sl(ndim, dim, index):
    s = [slice(None)] * ndim
    s[dim] = index
    return tuple(s)


reference("aten::view_copy.out")(lambda x, size, out: value(x).reshape(size))
reference("aten::permute_copy.out")(lambda x, dims, out: np.transpose(value(x), dims))
reference("aten::alias_copy.out")(lambda x, out: value(x))
reference("aten::detach_copy.out")(lambda x, out: value(x))
reference("aten::transpose_copy.int_out")(lambda x, a, b, out: np.swapaxes(value(x), a, b))
reference("aten::t_copy.out")(lambda x, out: value(x).T)
reference("aten::unsqueeze_copy.out")(lambda x, dim, out: np.expand_dims(value(x), dim))
reference("aten::select_copy.int_out")(lambda x, dim, i, out: np.take(value(x), i, axis=dim))
reference("aten::diagonal_copy.out")(lambda x, off, d1, d2, out: np.diagonal(value(x), off, d1, d2))


@reference("aten::expand_copy.out")
def expand_model(x, size, implicit, out):
    xv = value(x)
    lead = len(size) - xv.ndim
    shape = [xv.shape[d - lead] if s == -1 else s for d, s in enumerate(size)]
    return np.broadcast_to(xv, shape)


def _squeeze(x, dims):
    dims = {d % x.ndim for d in dims} if x.ndim else set()
    return x.reshape([s for d, s in enumerate(x.shape) if not (d in dims and s == 1)])


reference("aten::squeeze_copy.dim_out")(lambda x, dim, out: _squeeze(value(x), [dim]))
reference("aten::squeeze_copy.dims_out")(lambda x, dims, out: _squeeze(value(x), dims))
reference("aten::squeeze_copy.out")(lambda x, out: _squeeze(value(x), range(value(x).ndim)))


@reference("aten::slice_copy.Tensor_out")
def slice_model(x, dim, start, end, step, out):
    xv = value(x)
    return xv[_sl(xv.ndim, dim, slice(start, end, step))]


@reference("aten::narrow_copy.out")
def narrow_model(x, dim, start, length, out):
    xv = value(x)
    start %= xv.shape[dim]
    return xv[_sl(xv.ndim, dim, slice(start, start + length))]


@reference("aten::as_strided_copy.out")
def as_strided_model(x, size, stride, offset, out):
    """Elements of x's storage: its values in memory (dim) order."""
    xv = value(x)
    order = x.dim_order if isinstance(x, T) and x.dim_order is not None else range(xv.ndim)
    storage = np.transpose(xv, list(order)).ravel()
    flat = np.full(tuple(size), offset or 0, np.int64)
    for d, (n, st) in enumerate(zip(size, stride)):
        flat += (np.arange(n) * st).reshape([n if k == d else 1 for k in range(len(size))])
    return storage[flat]


@reference("aten::unfold_copy.out")
def unfold_model(x, dim, size, step, out):
    xv = value(x)
    if xv.ndim == 0:
        return xv.reshape(1)
    d = dim % xv.ndim
    n = (xv.shape[d] - size) // step + 1
    windows = [np.take(xv, range(i * step, i * step + size), axis=d) for i in range(n)]
    shape = list(xv.shape)
    shape[d] = n
    if not windows:
        return np.zeros(shape + [size], xv.dtype)
    return np.moveaxis(np.stack(windows, axis=d), d + 1, -1)


@reference("executorch_prim::et_copy_index.tensor")
def et_copy_index_model(to, src, index):
    """to[index] = src, growing to's first dim (new rows keep the fill)."""
    shape = list(to.shape)
    shape[0] = max(shape[0], index + 1)
    base = out_fill(Out(dtype_of(to), shape))
    base[index] = value(src)
    return base


# ---- view_copy ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_view_copy_every_dtype(device, dtype):
    a = spread((2, 3, 4), dtype)
    check(device, "aten::view_copy.out", a, [4, 6], Out(dtype, (4, 6)), expect=a.reshape(4, 6))


def test_view_copy_bfloat16(device):
    a = bf16(spread((2, 6)))
    check(device, "aten::view_copy.out", T(a, bf16=True), [3, -1], Out(BF16, (3, 4)),
          expect=a.reshape(3, 4))


@pytest.mark.parametrize("in_order,out_order", [(None, None), (None, CL), (CL, None), (CL, CL)])
@pytest.mark.parametrize("dtype", [np.float32, np.bool_, BF16])
def test_view_copy_any_dim_order(device, in_order, out_order, dtype):
    a = values((2, 3, 4, 5), dtype)
    check(device, "aten::view_copy.out", tensor(a, dtype, in_order), [5, 4, -1, 2],
          Out(dtype, (5, 4, 3, 2), dim_order=out_order))


@pytest.mark.parametrize("in_order,out_order", [(None, CL), (CL, None), (CL, CL)])
def test_view_copy_reshapes_in_logical_order_for_any_dim_order(device, in_order, out_order):
    a = spread((2, 3, 4, 5))
    check(device, "aten::view_copy.out", T(a, dim_order=in_order), [5, 4, 3, 2],
          Out(np.float32, (5, 4, 3, 2), dim_order=out_order), expect=a.reshape(5, 4, 3, 2))


def test_view_copy_infers_minus_one_and_resizes_dynamic_out(device):
    a = spread((4, 6))
    check(device, "aten::view_copy.out", a, [-1, 8],
          Out(np.float32, (1, 1), dynamic=True, capacity=(8, 8)), expect=a.reshape(3, 8))


def test_view_copy_zero_dim_and_empty(device):
    s = np.array(3.5, dtype=np.float32)
    check(device, "aten::view_copy.out", s, [1, 1], Out(np.float32, (1, 1)), expect=[[3.5]])
    check(device, "aten::view_copy.out", np.array([[7]], np.int64), [], Out(np.int64, ()),
          expect=np.array(7))
    check(device, "aten::view_copy.out", np.zeros((0, 3), np.float32), [3, 0],
          Out(np.float32, (3, 0)), expect=np.zeros((3, 0)))
    check(device, "aten::view_copy.out", np.array(4.0, np.float32), [1], Out(np.float32, (1,)))


@pytest.mark.parametrize("size", [[-1, -1], [5, 5], [-1, 7], [-2, 12]])
def test_view_copy_rejects_bad_sizes(device, size):
    check_error(device, "aten::view_copy.out", spread((4, 6)), size,
                Out(np.float32, (1, 1), dynamic=True, capacity=(30, 30)), exc=ValueError,
                match="view_copy")


def test_view_copy_rejects_minus_one_with_zero_elements(device):
    check_error(device, "aten::view_copy.out", np.zeros((0, 4), np.float32), [0, -1],
                Out(np.float32, (0, 4)), exc=ValueError, match="infer")


def test_view_copy_rejects_other_dtype(device):
    check_error(device, "aten::view_copy.out", spread((2, 3)), [6], Out(np.float64, (6,)),
                exc=ValueError, match="dtype")


# ---- permute / transpose / t ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("order", [None, CL])
def test_permute_any_dtype_and_order(device, dtype, order):
    a = values((2, 3, 4, 5), dtype)
    check(device, "aten::permute_copy.out", tensor(a, dtype, order), [3, -4, 1, 2],
          Out(dtype, (5, 2, 3, 4)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_permute_every_dtype(device, dtype):
    a = spread((2, 3, 4), dtype)
    check(device, "aten::permute_copy.out", a, [2, 0, 1], Out(dtype, (4, 2, 3)),
          expect=a.transpose(2, 0, 1))


@pytest.mark.parametrize("dims,shape", [([1, 0], (33, 70)), ([2, 0, 1], (3, 40, 65)),
                                        ([0, 2, 1], (7, 64, 96)), ([1, 0], (1, 5)),
                                        ([0, 2, 3, 1], (2, 3, 33, 35)),
                                        ([0, 3, 1, 2], (2, 9, 7, 16)), ([1, 0], (3, 4)),
                                        # NCHW to NHWC of 2-4 channels: lines of a few
                                        # elements, in chunks (a partial last one)
                                        ([0, 2, 3, 1], (2, 3, 45, 70)),
                                        ([0, 2, 3, 1], (1, 2, 5, 7)),
                                        ([0, 2, 3, 1], (3, 4, 33, 40))])
def test_permute_tiled_transposes(device, dims, shape):
    a = rand(shape, np.float32)
    out_shape = tuple(shape[d] for d in dims)
    check(device, "aten::permute_copy.out", a, dims, Out(np.float32, out_shape))
    check(device, "aten::permute_copy.out", a.astype(np.int16), dims, Out(np.int16, out_shape))
    check(device, "aten::permute_copy.out", a.astype(np.float64), dims, Out(np.float64, out_shape))
    q = (a * 250).astype(np.uint8)
    check(device, "aten::permute_copy.out", q, dims, Out(np.uint8, out_shape))


@pytest.mark.parametrize("in_order", [None, CL])
@pytest.mark.parametrize("out_order", [None, CL])
def test_permute_negative_dims_any_dim_order(device, in_order, out_order):
    a = spread((2, 3, 4, 5))
    check(device, "aten::permute_copy.out", T(a, dim_order=in_order), [0, -1, 1, -2],
          Out(np.float32, (2, 5, 3, 4), dim_order=out_order), expect=a.transpose(0, 3, 1, 2))


def test_permute_bfloat16_and_zero_dim(device):
    a = bf16(spread((16, 10)))
    check(device, "aten::permute_copy.out", T(a, bf16=True), [1, 0], Out(BF16, (10, 16)),
          expect=a.T)
    check(device, "aten::permute_copy.out", np.array(2.0), [], Out(np.float64, ()),
          expect=np.array(2.0))


@pytest.mark.parametrize("dims", [[0, 0, 1], [0, 1], [0, 1, 3]])
def test_permute_rejects_bad_dims(device, dims):
    check_error(device, "aten::permute_copy.out", spread((2, 3, 4)), dims,
                Out(np.float32, (2, 3, 4)), exc=(ValueError, IndexError), match="permute_copy")


def test_transpose_and_t(device):
    a = spread((2, 3, 4, 5))
    check(device, "aten::transpose_copy.int_out", T(a, dim_order=CL), -1, 1,
          Out(np.float32, (2, 5, 4, 3)), expect=a.swapaxes(-1, 1))
    m = spread((3, 7), np.int32)
    check(device, "aten::t_copy.out", m, Out(np.int32, (7, 3)), expect=m.T)
    v = spread((5,), np.int16)
    check(device, "aten::t_copy.out", v, Out(np.int16, (5,)), expect=v)
    check_error(device, "aten::t_copy.out", a, Out(np.float32, (2, 3, 4, 5)), exc=ValueError,
                match="t_copy")


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, BF16])
def test_select_narrow_transpose_t(device, dtype):
    a = values((3, 4, 5, 6), dtype)
    check(device, "aten::select_copy.int_out", tensor(a, dtype, CL), -2, -1, Out(dtype, (3, 4, 6)))
    check(device, "aten::select_copy.int_out", tensor(a, dtype), 0, 2, Out(dtype, (4, 5, 6)))
    check(device, "aten::narrow_copy.out", tensor(a, dtype), -1, -4, 3, Out(dtype, (3, 4, 5, 3)))
    check(device, "aten::narrow_copy.out", tensor(a, dtype), 1, 1, 0, Out(dtype, (3, 0, 5, 6)))
    check(device, "aten::transpose_copy.int_out", tensor(a, dtype, CL), 1, -1,
          Out(dtype, (3, 6, 5, 4)))
    b = values((7, 130), dtype)
    check(device, "aten::t_copy.out", tensor(b, dtype), Out(dtype, (130, 7)))
    check(device, "aten::t_copy.out", tensor(values((5,), dtype), dtype), Out(dtype, (5,)))


# ---- expand --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float16, BF16])
def test_expand(device, dtype):
    a = values((3, 1), dtype)
    check(device, "aten::expand_copy.out", tensor(a, dtype), [2, 3, 4], False,
          Out(dtype, (2, 3, 4)))
    check(device, "aten::expand_copy.out", tensor(a, dtype), [-1, 300], False, Out(dtype, (3, 300)))
    b = values((1, 3, 1, 4), dtype)
    check(device, "aten::expand_copy.out", tensor(b, dtype, CL), [2, 3, 5, 4], False,
          Out(dtype, (2, 3, 5, 4), dim_order=CL))
    check(device, "aten::expand_copy.out", tensor(a, dtype), [0, 3, 4], False,
          Out(dtype, (0, 3, 4)))


@pytest.mark.parametrize("dtype", [np.bool_, np.int64, np.float16, np.float32])
def test_expand_new_leading_dims_and_minus_one(device, dtype):
    a = spread((3, 1), dtype)
    check(device, "aten::expand_copy.out", a, [2, -1, 4], False, Out(dtype, (2, 3, 4)),
          expect=np.broadcast_to(a, (2, 3, 4)))


def test_expand_into_channels_last_out_and_from_zero_dim(device):
    a = spread((1, 3, 1, 1))
    check(device, "aten::expand_copy.out", a, [2, 3, 4, 5], True,
          Out(np.float32, (2, 3, 4, 5), dim_order=CL), expect=np.broadcast_to(a, (2, 3, 4, 5)))
    s = np.array(4, np.int32)
    check(device, "aten::expand_copy.out", s, [2, 2], False, Out(np.int32, (2, 2)),
          expect=np.full((2, 2), 4))


def test_expand_to_zero_size(device):
    check(device, "aten::expand_copy.out", spread((1, 3)), [0, 3], False, Out(np.float32, (0, 3)),
          expect=np.zeros((0, 3)))


@pytest.mark.parametrize("size", [[3, 3], [-1, 2, 3], [2]])
def test_expand_rejects_bad_sizes(device, size):
    check_error(device, "aten::expand_copy.out", spread((2, 3)), size, False,
                Out(np.float32, (2, 3), dynamic=True, capacity=(9, 9)), exc=ValueError,
                match="expand_copy")


# ---- unsqueeze / squeeze -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.bool_, BF16])
def test_unsqueeze_squeeze(device, dtype):
    a = values((2, 1, 3, 1), dtype)
    for dim in [0, 2, 4, -1, -5]:
        shape = list(a.shape)
        shape.insert(dim % 5, 1)
        check(device, "aten::unsqueeze_copy.out", tensor(a, dtype), dim, Out(dtype, tuple(shape)))
    check(device, "aten::squeeze_copy.dim_out", tensor(a, dtype), -3, Out(dtype, (2, 3, 1)))
    check(device, "aten::squeeze_copy.dim_out", tensor(a, dtype), 0, Out(dtype, (2, 1, 3, 1)))
    check(device, "aten::squeeze_copy.dims_out", tensor(a, dtype), [1, -1], Out(dtype, (2, 3)))
    check(device, "aten::squeeze_copy.out", tensor(a, dtype), Out(dtype, (2, 3)))


@pytest.mark.parametrize("dim,shape", [(0, (1, 2, 3)), (2, (2, 3, 1)), (-1, (2, 3, 1)),
                                       (-2, (2, 1, 3)), (-3, (1, 2, 3))])
def test_unsqueeze_dims_count_from_output_rank(device, dim, shape):
    a = spread((2, 3), np.int8)
    check(device, "aten::unsqueeze_copy.out", a, dim, Out(np.int8, shape), expect=a.reshape(shape))


def test_unsqueeze_zero_dim_and_errors(device):
    check(device, "aten::unsqueeze_copy.out", np.array(1.5, np.float32), 0, Out(np.float32, (1,)),
          expect=[1.5])
    check_error(device, "aten::unsqueeze_copy.out", spread((2, 3)), 3, Out(np.float32, (2, 3, 1)),
                exc=IndexError, match="unsqueeze_copy")


def test_squeeze_variants(device):
    a = spread((1, 3, 1, 2))
    check(device, "aten::squeeze_copy.dim_out", a, -2, Out(np.float32, (1, 3, 2)),
          expect=a.reshape(1, 3, 2))
    # A dim whose size is not 1 is left alone.
    check(device, "aten::squeeze_copy.dim_out", a, 1, Out(np.float32, (1, 3, 1, 2)), expect=a)
    check(device, "aten::squeeze_copy.dims_out", a, [0, 1, -2], Out(np.float32, (3, 2)),
          expect=a.reshape(3, 2))
    check(device, "aten::squeeze_copy.out", a, Out(np.float32, (3, 2)), expect=a.reshape(3, 2))
    check(device, "aten::squeeze_copy.dims_out", np.array(5, np.int64), [0], Out(np.int64, ()),
          expect=np.array(5))
    check_error(device, "aten::squeeze_copy.dims_out", a, [0, -4], Out(np.float32, (3, 1, 2)),
                exc=ValueError, match="repeats")


# ---- slice / select / narrow ---------------------------------------------------------------------


@pytest.mark.parametrize("dim,start,end,step", [(0, 1, None, 1), (1, -3, -1, 1), (2, 0, 5, 2),
                                                (-1, None, None, 3), (3, 4, 2, 1),
                                                (1, -100, 100, 2)])
@pytest.mark.parametrize("order", [None, CL])
def test_slice(device, dim, start, end, step, order):
    a = rand((3, 4, 5, 6), np.float32)
    expected = a[tuple(slice(start, end, step) if d == dim % 4 else slice(None) for d in range(4))]
    check(device, "aten::slice_copy.Tensor_out", T(a, dim_order=order), dim, start, end, step,
          Out(np.float32, expected.shape, dim_order=order))


@pytest.mark.parametrize("dim,start,end,step", [
    (0, None, None, 1), (1, 1, None, 1), (1, -2, None, 1), (2, None, -1, 2), (2, 1, INT64_MAX, 2),
    (-1, -100, 100, 3), (0, 5, 2, 1), (1, 3, 3, 1), (2, -3, -1, 1), (2, 4, INT64_MAX, 1),
    (1, -(2**63), 2, 1)])
def test_slice_follows_python_slice_rules(device, dim, start, end, step):
    a = spread((2, 3, 5), np.int32)
    index = [slice(None)] * 3
    index[dim] = slice(start, end, step)
    check(device, "aten::slice_copy.Tensor_out", a, dim, start, end, step,
          Out(np.int32, (1, 1, 1), dynamic=True, capacity=(2, 3, 5)), expect=a[tuple(index)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_fixture_form_every_dtype(device, dtype):
    a = spread((1, 16, 4, 16), dtype)
    check(device, "aten::slice_copy.Tensor_out", a, 3, 8, INT64_MAX, 1, Out(dtype, (1, 16, 4, 8)),
          expect=a[..., 8:])


def test_slice_channels_last_both_sides(device):
    a = spread((2, 6, 3, 4))
    check(device, "aten::slice_copy.Tensor_out", T(a, dim_order=CL), 1, 1, 6, 2,
          Out(np.float32, (2, 3, 3, 4), dim_order=CL), expect=a[:, 1:6:2])


@pytest.mark.parametrize("args,exc", [((0, 0, 2, 0), ValueError), ((3, 0, 2, 1), IndexError)])
def test_slice_rejects_bad_step_and_dim(device, args, exc):
    check_error(device, "aten::slice_copy.Tensor_out", spread((4, 4)), *args,
                Out(np.float32, (2, 4)), exc=exc, match="slice_copy")


def test_slice_rejects_zero_dim(device):
    check_error(device, "aten::slice_copy.Tensor_out", np.array(1.0), 0, None, None, 1,
                Out(np.float64, ()), exc=ValueError, match="0-dimensional")


@pytest.mark.parametrize("dim,index", [(0, 1), (1, -1), (-1, 2), (2, -5)])
def test_select(device, dim, index):
    a = spread((2, 3, 5), np.float64)
    expected = np.take(a, index, axis=dim)
    check(device, "aten::select_copy.int_out", a, dim, index, Out(np.float64, expected.shape),
          expect=expected)


def test_select_channels_last_and_errors(device):
    a = spread((2, 3, 4, 5))
    check(device, "aten::select_copy.int_out", T(a, dim_order=CL), 1, 2,
          Out(np.float32, (2, 4, 5)), expect=a[:, 2])
    check_error(device, "aten::select_copy.int_out", a, 1, 3, Out(np.float32, (2, 4, 5)),
                exc=IndexError, match="select_copy")
    check_error(device, "aten::select_copy.int_out", a, 1, -4, Out(np.float32, (2, 4, 5)),
                exc=IndexError, match="select_copy")
    check_error(device, "aten::select_copy.int_out", np.array(1.0), 0, 0, Out(np.float64, ()),
                exc=ValueError, match="0-dimensional")


def test_narrow(device):
    a = spread((4, 6), np.uint8)
    check(device, "aten::narrow_copy.out", a, 1, -4, 3, Out(np.uint8, (4, 3)), expect=a[:, 2:5])
    check(device, "aten::narrow_copy.out", a, 0, 4, 0, Out(np.uint8, (0, 6)), expect=a[4:4])
    check_error(device, "aten::narrow_copy.out", a, 1, 4, 3, Out(np.uint8, (4, 3)),
                exc=ValueError, match="narrow_copy")


# ---- as_strided / alias / detach -----------------------------------------------------------------


def test_as_strided_alias_detach_unfold_diagonal(device):
    a = rand((4, 5, 6), np.float32)
    check(device, "aten::as_strided_copy.out", a, [3, 4], [7, 2], 3, Out(np.float32, (3, 4)))
    check(device, "aten::as_strided_copy.out", T(a, dim_order=(2, 0, 1)), [2, 2], [1, 5], None,
          Out(np.float32, (2, 2)))
    check(device, "aten::alias_copy.out", a, Out(np.float32, a.shape))
    check(device, "aten::detach_copy.out", T(rand((2, 3, 4, 5), np.int16), dim_order=CL),
          Out(np.int16, (2, 3, 4, 5)))
    check(device, "aten::unfold_copy.out", a, -1, 3, 2, Out(np.float32, (4, 5, 2, 3)))
    check(device, "aten::unfold_copy.out", np.array(2.0, np.float32), 0, 1, 1,
          Out(np.float32, (1,)))
    for offset, d1, d2 in [(0, 0, 1), (1, 1, 2), (-2, -1, 0), (10, 0, 2)]:
        n1, n2 = a.shape[d1], a.shape[d2]
        rest = [a.shape[d] for d in range(3) if d not in (d1 % 3, d2 % 3)]
        if offset >= 0:
            length = max(0, min(n1, n2 - offset))
        else:
            length = max(0, min(n1 + offset, n2))
        check(device, "aten::diagonal_copy.out", a, offset, d1, d2,
              Out(np.float32, (*rest, length)))


def test_as_strided_fixture_form(device):
    a = spread((1, 16, 1, 1))
    check(device, "aten::as_strided_copy.out", a, [1, 16, 1, 1], [16, 1, 16, 16], None,
          Out(np.float32, (1, 16, 1, 1)), expect=a)


def test_as_strided_overlapping_windows_with_offset(device):
    a = np.arange(10, dtype=np.int64)
    check(device, "aten::as_strided_copy.out", a, [3, 4], [2, 1], 1, Out(np.int64, (3, 4)),
          expect=np.lib.stride_tricks.as_strided(a[1:], (3, 4), (16, 8)))


def test_as_strided_reads_the_storage_of_a_channels_last_input(device):
    a = spread((1, 2, 2, 3))
    storage = a.transpose(0, 2, 3, 1).ravel()  # memory order of the channels-last tensor
    check(device, "aten::as_strided_copy.out", T(a, dim_order=CL), [12], [1], 0,
          Out(np.float32, (12,)), expect=storage)


@pytest.mark.parametrize("size,stride,offset", [([3, 4], [4, 1], 0), ([10], [1], 1),
                                                ([2], [-1], 5), ([2], [1], -1),
                                                ([2, 2], [2**62, 2**62], 0)])
def test_as_strided_never_reads_outside_the_input(device, size, stride, offset):
    check_error(device, "aten::as_strided_copy.out", np.arange(10, dtype=np.float32), size,
                stride, offset, Out(np.float32, size), exc=(IndexError, ValueError),
                match="as_strided_copy")


def test_as_strided_empty_view_reads_nothing(device):
    check(device, "aten::as_strided_copy.out", np.arange(4, dtype=np.float32), [0, 3], [100, 100],
          0, Out(np.float32, (0, 3)), expect=np.zeros((0, 3)))


@pytest.mark.parametrize("name", ["aten::alias_copy.out", "aten::detach_copy.out"])
def test_alias_and_detach_copy_into_other_dim_order(device, name):
    a = spread((2, 3, 4, 5), np.int16)
    check(device, name, a, Out(np.int16, a.shape, dim_order=CL), expect=a)


# ---- unfold / diagonal ---------------------------------------------------------------------------


@pytest.mark.parametrize("dim,size,step", [(1, 3, 2), (-1, 2, 1), (0, 2, 5), (1, 0, 1),
                                           (1, 7, 1)])
def test_unfold(device, dim, size, step):
    a = spread((2, 7, 3))
    d = dim % 3
    n = (a.shape[d] - size) // step + 1
    windows = [np.take(a, range(i * step, i * step + size), axis=d) for i in range(n)]
    expected = np.moveaxis(np.stack(windows, axis=d), d + 1, -1)
    check(device, "aten::unfold_copy.out", a, dim, size, step, Out(np.float32, expected.shape),
          expect=expected)


def test_unfold_rejects_big_window(device):
    check_error(device, "aten::unfold_copy.out", spread((2, 3)), 1, 4, 1,
                Out(np.float32, (2, 0, 4)), exc=ValueError, match="unfold_copy")


@pytest.mark.parametrize("offset,d1,d2", [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (2, -1, 0),
                                          (5, 0, 1), (-4, 1, 2), (0, 2, 0)])
def test_diagonal(device, offset, d1, d2):
    a = spread((3, 4, 5))
    expected = np.diagonal(a, offset, d1, d2)
    check(device, "aten::diagonal_copy.out", a, offset, d1, d2, Out(np.float32, expected.shape),
          expect=expected)


def test_large_views_on_threads(device):
    a = spread((64, 128, 33))
    check(device, "aten::permute_copy.out", a, [2, 0, 1], Out(np.float32, (33, 64, 128)),
          expect=a.transpose(2, 0, 1), num_threads=4)
    check(device, "aten::expand_copy.out", a[:1], [8, 128, 33], False,
          Out(np.float32, (8, 128, 33)), expect=np.broadcast_to(a[:1], (8, 128, 33)),
          num_threads=4)
    check(device, "aten::view_copy.out", T(a.reshape(64, 128, 33, 1), dim_order=CL),
          [33, 128, 64, 1], Out(np.float32, (33, 128, 64, 1), dim_order=CL),
          expect=a.reshape(33, 128, 64, 1), num_threads=4)


# ---- et_copy_index -------------------------------------------------------------------------------


def test_et_copy_index(device):
    src = rand((3, 4), np.float32)
    check(device, "executorch_prim::et_copy_index.tensor", Out(np.float32, (5, 3, 4)), src, 2)
    check(device, "executorch_prim::et_copy_index.tensor",
          Out(np.float32, (1, 3, 4), dynamic=True, capacity=(8, 3, 4)), src, 4)

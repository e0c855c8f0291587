"""Indexing kernels against NumPy: embedding, index_select, gather,
scatter (src / value / add), masked_fill, index.Tensor (integer and bool
indices, adjacent and separated), index_put (and in place, with
accumulation), nonzero, slice / select scatter: every dtype (bf16 and bool
included), channels-last inputs, negative dims and indices, int32 and
int64 indices, empty and 0-dim tensors, threads, argument errors.
Out-of-range index values are errors only the CPU raises (the CUDA kernels
never read device data to check them); scatters without accumulation use
distinct positions (duplicates race on a GPU)."""

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, cast, check, check_error, cpu_only, cuda_only,
                     dtype_of, integers, normal, out_fill, permutation, rand, random, reference, tensor,
                     value)
from pterun._testing import call_kernel

DTYPES = [np.float32, np.float16, BF16, np.float64, np.int64, np.int32, np.int8, np.uint8,
          np.bool_]
FLOAT = (np.float32, np.float16, BF16, np.float64)
INDEX_VALUES = "an index value out of range needs the data (the CUDA kernels cannot raise)"
MASKS = "a boolean mask index sizes the result by its data (CUDA refuses it: see test_cuda_refuses_masks)"


def values(shape, dtype):
    return rand(shape, np.float32 if dtype == BF16 else dtype)


def distinct_index(shape, dim, size):
    """An index of `shape` whose entries along `dim` are distinct (a
    permutation prefix per line), so scatter positions never repeat."""
    idx = np.zeros(shape, np.int64)
    for line in np.ndindex(*[s for d, s in enumerate(shape) if d != dim]):
        line = list(line)
        line.insert(dim, slice(None))
        idx[tuple(line)] = permutation(size)[:shape[dim]]
    return idx


# ---- NumPy models ------------------------------------------------------------------------------


@reference("aten::embedding.out")
def embedding_model(w, idx, padding_idx, scale_grad, sparse, out):
    return cast(value(w)[value(idx)], dtype_of(out))


@reference("aten::index_select.out")
def index_select_model(x, dim, idx, out):
    xv = value(x)
    if xv.ndim == 0:
        return xv.copy()
    return np.take(xv, value(idx).reshape(-1), axis=dim)


@reference("aten::gather.out")
def gather_model(x, dim, idx, sparse_grad, out):
    xv, iv = value(x), value(idx).astype(np.int64)
    d = dim % xv.ndim
    # take_along_axis needs the index no larger than x off the axis: slice x.
    sl = tuple(slice(0, s) if k != d else slice(None) for k, s in enumerate(iv.shape))
    return np.take_along_axis(xv[sl], iv, axis=d)


def np_scatter(x, dim, idx, src, add):
    out = x.copy()
    dim %= x.ndim
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        v = src[pos] if isinstance(src, np.ndarray) else src
        if add and out.dtype == np.bool_:
            out[tuple(tgt)] |= v
        elif add:
            out[tuple(tgt)] += v
        else:
            out[tuple(tgt)] = v
    return out


@reference("aten::scatter.src_out")
def scatter_src_model(x, dim, idx, src, out):
    return np_scatter(value(x), dim, value(idx), value(src), False)


@reference("aten::scatter.value_out")
def scatter_value_model(x, dim, idx, v, out):
    xv = value(x)
    return np_scatter(xv, dim, value(idx), cast(np.array(v), xv.dtype)[()], False)


@reference("aten::scatter_add.out")
def scatter_add_model(x, dim, idx, src, out):
    """Sums in float64 (float types) or the integer type, then the out."""
    xv, sv = value(x), value(src)
    wide = np.float64 if xv.dtype.kind == "f" else xv.dtype
    with np.errstate(over="ignore"):
        return cast(np_scatter(xv.astype(wide), dim, value(idx), sv.astype(wide), True),
                    dtype_of(out))


@reference("aten::masked_fill.Scalar_out")
def masked_fill_model(x, mask, v, out):
    xv = value(x)
    return cast(np.where(value(mask), cast(np.array(v), dtype_of(out)), xv), dtype_of(out))


def _numpy_index(indices):
    """index.Tensor's indices as a NumPy index: None is a full slice, uint8
    masks are bool masks."""
    return tuple(slice(None) if i is None else
                 (value(i) != 0 if value(i).dtype == np.uint8 else value(i)) for i in indices)


@reference("aten::index.Tensor_out")
def index_tensor_model(x, indices, out):
    return value(x)[_numpy_index(indices)]


def index_put(base, indices, v, accumulate):
    ref = base.copy()
    idx = _numpy_index(indices)
    if accumulate:
        wide = np.float64 if ref.dtype.kind == "f" else ref.dtype
        acc = ref.astype(wide)
        np.add.at(acc, idx, value(v).astype(wide))
        return acc.astype(ref.dtype)
    ref[idx] = value(v)
    return ref


@reference("aten::index_put.out")
def index_put_model(x, indices, v, accumulate, out):
    return cast(index_put(value(x), indices, v, accumulate), dtype_of(out))


@reference("aten::index_put_")
def index_put_inplace_model(self, indices, v, accumulate):
    return index_put(out_fill(self), indices, v, accumulate)


@reference("aten::nonzero.out")
def nonzero_model(x, out):
    return np.argwhere(value(x) != 0)


@reference("aten::slice_scatter.out")
def slice_scatter_model(x, src, dim, start, end, step, out):
    ref = value(x).copy()
    sl = [slice(None)] * ref.ndim
    sl[dim] = slice(start, end, step)
    ref[tuple(sl)] = value(src)
    return ref


@reference("aten::select_scatter.out")
def select_scatter_model(x, src, dim, index, out):
    ref = value(x).copy()
    sl = [slice(None)] * ref.ndim
    sl[dim] = index
    ref[tuple(sl)] = value(src)
    return ref


# ---- embedding ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_embedding(device, dtype, index_dtype):
    w = values((10, 16), dtype)
    idx = integers(0, 10, (2, 7), index_dtype)
    check(device, "aten::embedding.out", tensor(w, dtype), idx, -1, False, False,
          Out(dtype, (2, 7, 16)))
    check(device, "aten::embedding.out", tensor(w, dtype), np.array(5, index_dtype), -1, False,
          False, Out(dtype, (16,)))
    check(device, "aten::embedding.out", tensor(w, dtype), np.zeros((0, 3), index_dtype), -1,
          False, False, Out(dtype, (0, 3, 16)))


@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("w_dtype", [np.float32, np.float16, np.int64, np.uint8])
def test_embedding_rows(device, idx_dtype, w_dtype):
    w = (normal((50, 16), np.float64) * 10).astype(w_dtype)
    idx = integers(0, 50, (2, 7), idx_dtype)
    check(device, "aten::embedding.out", w, idx, -1, False, False, Out(w_dtype, [2, 7, 16]),
          expect=w[idx])


def test_embedding_bf16_threads_and_scalar_index(device):
    w = normal((1000, 64))
    idx = integers(0, 1000, (4, 256))
    check(device, "aten::embedding.out", T(w, bf16=True), idx, -1, False, False,
          Out(BF16, [4, 256, 64]), expect=bf16(w)[idx], num_threads=3)
    check(device, "aten::embedding.out", w, np.array(5), -1, False, False, Out(np.float32, [64]),
          expect=w[5])


def test_embedding_channels_last_indices_and_large_table(device):
    w = rand((1000, 300), np.float32)
    idx = integers(0, 1000, (3, 4, 5))
    check(device, "aten::embedding.out", w, T(idx, dim_order=(2, 0, 1)), -1, False, False,
          Out(np.float32, (3, 4, 5, 300)))


def test_embedding_strided_indices_and_float_index(device):
    w = normal((10, 3))
    idx = integers(0, 10, (3, 4, 2))
    check(device, "aten::embedding.out", w, T(idx, dim_order=(2, 0, 1)), -1, False, False,
          Out(np.float32, [3, 4, 2, 3]), expect=w[idx])
    check_error(device, "aten::embedding.out", w, np.array([1.0]), -1, False, False,
                Out(np.float32, [1, 3]), exc=TypeError)


@cpu_only(INDEX_VALUES)
def test_embedding_out_of_range(device):
    w = normal((10, 3))
    for bad in (10, -1):
        check_error(device, "aten::embedding.out", w, np.array([1, bad]), -1, False, False,
                    Out(np.float32, [2, 3]), exc=IndexError)


# ---- index_select / gather -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1, -4])
def test_index_select_every_dtype(device, dtype, dim):
    x = values((3, 4, 5, 6), dtype)
    size = x.shape[dim]
    idx = np.array([size - 1, 0, 1, 0])
    shape = list(x.shape)
    shape[dim] = len(idx)
    check(device, "aten::index_select.out", tensor(x, dtype), dim, idx, Out(dtype, tuple(shape)))
    check(device, "aten::index_select.out", tensor(x, dtype, CL), dim, idx.astype(np.int32),
          Out(dtype, tuple(shape)))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(device, dim):
    x = normal((4, 5, 6))
    idx = np.array([3, 0, 0, 2], np.int32)
    ref = np.take(x, idx, axis=dim)
    check(device, "aten::index_select.out", x, dim, idx, Out(np.float32, ref.shape), expect=ref,
          num_threads=2)


def test_index_select_zero_dim_and_empty(device):
    check(device, "aten::index_select.out", np.array(7.0, np.float32), 0, np.array([0]),
          Out(np.float32, ()))
    check(device, "aten::index_select.out", rand((3, 4)), 1, np.array(2), Out(np.float32, (3, 1)))
    check(device, "aten::index_select.out", rand((3, 4)), 1, np.zeros((0,), np.int64),
          Out(np.float32, (3, 0)))


def test_index_select_layouts_scalar_and_errors(device):
    x = normal((2, 3, 4, 5))
    idx = np.array([2, 1])
    check(device, "aten::index_select.out", T(x, dim_order=CL), 1, idx,
          Out(np.float32, [2, 2, 4, 5], dim_order=CL), expect=x[:, idx])
    check(device, "aten::index_select.out", np.array(7.0, np.float32), 0, np.array([0]),
          Out(np.float32, []), expect=np.array(7.0))
    check_error(device, "aten::index_select.out", x, 1, np.zeros((1, 1), np.int64),
                Out(np.float32, [2, 1, 4, 5]), exc=ValueError)
    check_error(device, "aten::index_select.out", x, 1, np.array([3]),
                Out(np.float32, [2, 1, 4, 5]), exc=IndexError, cpu_only=INDEX_VALUES)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_every_dtype(device, dtype, dim):
    x = values((4, 5, 6), dtype)
    shape = (3, 4, 5)
    idx = integers(0, x.shape[dim], shape)
    check(device, "aten::gather.out", tensor(x, dtype), dim, idx, False, Out(dtype, shape))
    check(device, "aten::gather.out", tensor(x, dtype), dim, idx.astype(np.int32), False,
          Out(dtype, shape))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(device, dim):
    x = normal((4, 5, 6))
    shape = [3, 4, 5]
    idx = integers(0, x.shape[dim], shape)
    sl = tuple(slice(0, s) if d != dim % 3 else slice(None) for d, s in enumerate(shape))
    check(device, "aten::gather.out", x, dim, idx, False, Out(np.float32, shape),
          expect=np.take_along_axis(x[sl], idx, axis=dim))


def test_gather_empty_index(device):
    check(device, "aten::gather.out", rand((4, 5)), 1, np.zeros((4, 0), np.int64), False,
          Out(np.float32, (4, 0)))


def test_gather_errors(device):
    x = np.zeros((3, 4), np.float32)
    check_error(device, "aten::gather.out", x, 1, np.zeros((4, 1), np.int64), False,
                Out(np.float32, [4, 1]), exc=ValueError)
    check_error(device, "aten::gather.out", x, 1, np.zeros((3,), np.int64), False,
                Out(np.float32, [3]), exc=ValueError)
    for bad in (4, -1):
        check_error(device, "aten::gather.out", x, 1, np.array([[bad]]), False,
                    Out(np.float32, [1, 1]), exc=IndexError, cpu_only=INDEX_VALUES)


# ---- scatter ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_src_and_value(device, dtype, dim):
    x = values((5, 6, 7), dtype)
    shape = (4, 5, 6)
    idx = distinct_index(shape, dim % 3, x.shape[dim])
    src = values((5, 6, 7), dtype)
    check(device, "aten::scatter.src_out", tensor(x, dtype), dim, idx, tensor(src, dtype),
          Out(dtype, x.shape))
    check(device, "aten::scatter.value_out", tensor(x, dtype), dim, idx.astype(np.int32),
          2.5 if dtype in FLOAT else 1, Out(dtype, x.shape))


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_src_value_add(device, dim):
    x = normal((4, 5))
    src = normal((3, 4))
    # Distinct positions along dim: which of two writes to one place wins is
    # unspecified (and differs between the CPU and a GPU).
    n = x.shape[dim]
    if dim == 0:
        idx = np.stack([permutation(n)[:2] for _ in range(3)], axis=1)
    else:
        idx = np.stack([permutation(n)[:3] for _ in range(2)], axis=0)
    check(device, "aten::scatter.src_out", x, dim, idx, src, Out(np.float32, x.shape),
          expect=np_scatter(x, dim, idx, src, False))
    check(device, "aten::scatter.value_out", x, dim, idx, 2.5, Out(np.float32, x.shape),
          expect=np_scatter(x, dim, idx, 2.5, False))
    check(device, "aten::scatter_add.out", x, dim, idx, src, Out(np.float32, x.shape),
          expect=np_scatter(x, dim, idx, src, True), tol=(1e-6, 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.int8,
                                   np.bool_])
def test_scatter_add_repeated_positions(device, dtype):
    x = values((5, 6), dtype)
    idx = integers(0, 5, (8, 6))
    src = values((8, 6), dtype)
    check(device, "aten::scatter_add.out", tensor(x, dtype), 0, idx, tensor(src, dtype),
          Out(dtype, x.shape), tol=(1e-6, 1e-6))


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_scatter_add_half_distinct_positions(device, dtype):
    # Distinct positions: the sum order cannot change the rounding.
    x = values((5, 6), dtype)
    idx = distinct_index((3, 6), 0, 5)
    src = values((3, 6), dtype)
    check(device, "aten::scatter_add.out", tensor(x, dtype), 0, idx, tensor(src, dtype),
          Out(dtype, x.shape))


def test_scatter_add_int_duplicates_and_errors(device):
    x = np.zeros((5,), np.int64)
    idx = np.array([1, 1, 3, 1])
    src = np.array([1, 2, 3, 4], np.int64)
    check(device, "aten::scatter_add.out", x, 0, idx, src, Out(np.int64, [5]),
          expect=[0, 7, 0, 3, 0])
    check_error(device, "aten::scatter.src_out", x, 0, idx, src.astype(np.int32),
                Out(np.int64, [5]), exc=ValueError)
    check_error(device, "aten::scatter.src_out", x, 0, np.array([5]), src, Out(np.int64, [5]),
                exc=IndexError, cpu_only=INDEX_VALUES)


# ---- slice / select scatter ----------------------------------------------------------------------


@pytest.mark.parametrize("start,end,step", [(None, None, 1), (1, 5, 2), (-3, None, 1),
                                            (2, 100, 3), (4, 2, 1)])
def test_slice_scatter(device, start, end, step):
    x = normal((3, 7, 2))
    target = x[:, slice(start, end, step)]
    src = normal(target.shape)
    ref = x.copy()
    ref[:, slice(start, end, step)] = src
    check(device, "aten::slice_scatter.out", x, src, 1, start, end, step,
          Out(np.float32, x.shape), expect=ref)


@pytest.mark.parametrize("dtype", [np.float32, np.bool_, np.int16, BF16])
def test_slice_select_scatter(device, dtype):
    x = values((3, 8), dtype)
    check(device, "aten::slice_scatter.out", tensor(x, dtype), tensor(values((3, 3), dtype), dtype),
          1, 1, 7, 2, Out(dtype, (3, 8)))
    check(device, "aten::slice_scatter.out", tensor(x, dtype), tensor(values((3, 0), dtype), dtype),
          -1, 5, 2, 1, Out(dtype, (3, 8)))
    check(device, "aten::select_scatter.out", tensor(x, dtype), tensor(values((3,), dtype), dtype),
          1, -1, Out(dtype, (3, 8)))
    y = values((2, 3, 4, 5), dtype)
    check(device, "aten::select_scatter.out", tensor(y, dtype, CL),
          tensor(values((2, 4, 5), dtype), dtype), 1, 2, Out(dtype, (2, 3, 4, 5), dim_order=CL))


def test_slice_and_select_scatter_errors_and_select(device):
    x = normal((3, 4))
    check_error(device, "aten::slice_scatter.out", x, np.zeros((3, 2), np.float32), 1, 0, 3, 1,
                Out(np.float32, [3, 4]), exc=ValueError)
    src = normal(3)
    ref = x.copy()
    ref[:, -1] = src
    check(device, "aten::select_scatter.out", x, src, 1, -1, Out(np.float32, [3, 4]), expect=ref)
    check_error(device, "aten::select_scatter.out", x, src, 1, 4, Out(np.float32, [3, 4]),
                exc=IndexError)
    check_error(device, "aten::select_scatter.out", x, src[:2], 1, 0, Out(np.float32, [3, 4]),
                exc=ValueError)


# ---- masked_fill ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill(device, dtype):
    x = values((2, 3, 4, 5), dtype)
    mask = rand((3, 1, 5), np.bool_)
    v = float("-inf") if dtype in FLOAT else 7
    check(device, "aten::masked_fill.Scalar_out", tensor(x, dtype), mask, v, Out(dtype, x.shape))
    check(device, "aten::masked_fill.Scalar_out", tensor(x, dtype, CL), mask, 1,
          Out(dtype, x.shape, dim_order=CL))


def test_masked_fill_broadcast_and_dtypes(device):
    x = normal((2, 3, 4))
    mask = random((3, 4)) < 0.5
    check(device, "aten::masked_fill.Scalar_out", x, mask, float("-inf"), Out(np.float32, x.shape),
          expect=np.where(mask, -np.inf, x))
    xi = integers(0, 9, (4, 4), np.int32)
    m = np.eye(4, dtype=bool)
    check(device, "aten::masked_fill.Scalar_out", xi, m, 7, Out(np.int32, [4, 4]),
          expect=np.where(m, 7, xi))
    check_error(device, "aten::masked_fill.Scalar_out", xi, m.astype(np.int32), 7,
                Out(np.int32, [4, 4]), exc=ValueError)


# ---- index.Tensor --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("indices", [
    lambda: [np.array([2, 0, -1])],
    lambda: [None, np.array([[1, 2], [0, 0]])],
    lambda: [np.array([0, 1]), None, np.array([3, -4])],
    lambda: [None, np.array([1]), np.array([[0], [2]])],
    lambda: [None, None, None, np.array([4, 0, 1], np.int32)],
    lambda: [np.zeros((0,), np.int64)],
])
def test_index_tensor(device, dtype, indices):
    x = values((3, 4, 5, 6), dtype)
    idx = indices()
    shape = x[_numpy_index(idx)].shape
    check(device, "aten::index.Tensor_out", tensor(x, dtype), idx, Out(dtype, shape))
    check(device, "aten::index.Tensor_out", tensor(x, dtype, CL), idx, Out(dtype, shape))


def index_case(device, x, indices, ref, **kw):
    check(device, "aten::index.Tensor_out", x, indices, Out(x.dtype, ref.shape), expect=ref, **kw)


def test_index_tensor_single_and_negative(device):
    x = normal((5, 6, 7))
    idx = np.array([[0, -1], [4, 2]])
    index_case(device, x, [idx], x[idx])
    index_case(device, x, [None, idx.astype(np.int32)], x[:, idx])
    index_case(device, x, [None, None, idx], x[:, :, idx])


def test_index_tensor_broadcast_adjacent_and_separated(device):
    x = normal((5, 6, 7, 3))
    a = np.array([[0], [4], [2]])
    b = np.array([1, 5])
    index_case(device, x, [a, b], x[a, b])
    index_case(device, x, [None, a, b], x[:, a, b])  # adjacent: result dims stay in place
    index_case(device, x, [a, None, b], x[a, :, b])  # separated: index dims come first
    index_case(device, x, [None, a, None, np.array([0, 2])], x[:, a, :, np.array([0, 2])])


@cpu_only(MASKS)
def test_index_tensor_bool_masks(device):
    x = normal((4, 5, 3))
    m = random((4, 5)) < 0.4
    index_case(device, x, [m], x[m])
    m1 = np.array([True, False, True])
    index_case(device, x, [None, None, m1], x[:, :, m1])
    m0 = np.array([True, False, False, True])
    index_case(device, x, [m0, None, np.array([0, 2])], x[m0, :, np.array([0, 2])])
    index_case(device, x, [m.astype(np.uint8)], x[m])


def test_index_tensor_layouts_threads_and_errors(device):
    x = normal((2, 3, 4, 5))
    idx = np.array([3, 0])
    check(device, "aten::index.Tensor_out", T(x, dim_order=CL), [None, None, idx],
          Out(np.float32, [2, 3, 2, 5]), expect=x[:, :, idx], num_threads=2)
    big = normal((1000, 64))
    bi = integers(0, 1000, 700)
    index_case(device, big, [bi], big[bi], num_threads=3)
    check_error(device, "aten::index.Tensor_out", x, [None, None, None, None, np.array([0])],
                Out(np.float32, [1]), exc=IndexError)
    check_error(device, "aten::index.Tensor_out", x, [np.array([0.0])],
                Out(np.float32, [1, 3, 4, 5]), exc=TypeError)
    check_error(device, "aten::index.Tensor_out", x, [np.ones(3, bool)],
                Out(np.float32, [3, 3, 4, 5]), exc=IndexError)
    check_error(device, "aten::index.Tensor_out", x, [np.array([0, 1]), np.array([0, 1, 2])],
                Out(np.float32, [2, 4, 5]), exc=IndexError)
    check_error(device, "aten::index.Tensor_out", x, [np.array([2])],
                Out(np.float32, [1, 3, 4, 5]), exc=IndexError, cpu_only=INDEX_VALUES)


@cuda_only("the CUDA kernels' refusal of mask indices")
def test_cuda_refuses_masks(device):
    x = normal((3, 4))
    m = x > 0
    with pytest.raises(NotImplementedError, match="boolean mask indices are not supported on CUDA"):
        call_kernel("aten::index.Tensor_out", x, [m], Out(np.float32, [int(m.sum()), 4]),
                    device=device)
    with pytest.raises(NotImplementedError, match="boolean mask indices are not supported on CUDA"):
        call_kernel("aten::index_put.out", x, [m], np.zeros(1, np.float32), False,
                    Out(np.float32, [3, 4]), device=device)


# ---- index_put -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int64, np.bool_])
def test_index_put(device, dtype):
    x = values((5, 4), dtype)
    v = values((2, 4), dtype)
    check(device, "aten::index_put.out", tensor(x, dtype), [np.array([0, -2])], tensor(v, dtype),
          False, Out(dtype, (5, 4)))
    check(device, "aten::index_put.out", tensor(x, dtype), [None, np.array([1])],
          tensor(values((1,), dtype), dtype), False, Out(dtype, (5, 4)))
    y = values((1, 2, 8, 4), dtype)
    check(device, "aten::index_put.out", tensor(y, dtype, CL), [None, None, np.array([3, 4])],
          tensor(values((1, 2, 2, 4), dtype), dtype), False, Out(dtype, y.shape, dim_order=CL))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_index_put_accumulate_repeated(device, dtype):
    x = values((5, 4), dtype)
    v = values((3, 4), dtype)
    check(device, "aten::index_put.out", tensor(x, dtype), [np.array([1, 1, 2])], tensor(v, dtype),
          True, Out(dtype, (5, 4)), tol=(1e-6, 1e-6), gpu_tol=(1e-6, 1e-6))


def test_index_put_inplace(device):
    v = rand((1, 2, 2, 4), np.float32)
    check(device, "aten::index_put_", Out(np.float32, (1, 2, 8, 4)), [None, None, np.array([3, 4])],
          v, False)


def test_index_put_out_and_accumulate(device):
    x = normal((5, 4))
    idx = np.array([0, 3])
    v = normal((2, 4))
    ref = x.copy()
    ref[idx] = v
    check(device, "aten::index_put.out", x, [idx], v, False, Out(np.float32, [5, 4]), expect=ref)
    dup = np.array([1, 1, 2])
    v3 = normal((3, 4))
    ref = x.copy()
    np.add.at(ref, dup, v3)
    check(device, "aten::index_put.out", x, [dup], v3, True, Out(np.float32, [5, 4]), expect=ref,
          tol=(1e-6, 0))
    ref = x.copy()
    ref[:, 1] = 9
    check(device, "aten::index_put.out", x, [None, np.array([1])],
          np.float32(9.0) * np.ones(1, np.float32), False, Out(np.float32, [5, 4]), expect=ref)


def test_index_put_inplace_kv_cache_and_mask(device):
    pos = np.array([3, 4])
    v = normal((1, 2, 2, 4))
    # index_put_ writes into self: pass self as an out tensor to read it back
    # (the test hook fills out tensors with 0xA5 bytes).
    fill = np.frombuffer(b"\xa5" * 4, np.float32)[0]
    ref = np.full((1, 2, 8, 4), fill, np.float32)
    ref[:, :, pos] = v
    check(device, "aten::index_put_", Out(np.float32, [1, 2, 8, 4]), [None, None, pos], v, False,
          expect=ref)
    x = normal((3, 4))
    m = x > 0
    check(device, "aten::index_put.out", x, [m], np.zeros(1, np.float32), False,
          Out(np.float32, [3, 4]), expect=np.where(m, 0, x), cpu_only=MASKS)
    check_error(device, "aten::index_put.out", x, [np.array([0])], np.zeros((2, 4), np.float32),
                False, Out(np.float32, [3, 4]), exc=ValueError)
    check_error(device, "aten::index_put.out", x, [np.array([3])], np.zeros(4, np.float32), False,
                Out(np.float32, [3, 4]), exc=IndexError, cpu_only=INDEX_VALUES)


# ---- nonzero (the CUDA kernel waits for the count) -----------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("shape,order", [((3, 4, 5), None), ((3, 4, 5), (2, 0, 1)),
                                         ((1000,), None), ((6, 0, 2), None), ((), None)])
def test_nonzero(device, dtype, shape, order):
    x = np.where(rand(shape, np.float32, 0, 1) < 0.3, rand(shape, np.float32, 1, 3), 0)
    cap = [max(1, int(np.prod(shape))), len(shape)]
    check(device, "aten::nonzero.out", T(x.astype(dtype), dim_order=order),
          Out(np.int64, [0, len(shape)], dynamic=True, capacity=cap), expect=np.argwhere(x))


def test_nonzero_dynamic_out(device):
    x = random((3, 4, 5)) < 0.3
    ref = np.argwhere(x)
    check(device, "aten::nonzero.out", x.astype(np.float32),
          Out(np.int64, [0, 3], dynamic=True, capacity=[60, 3]), expect=ref)
    check(device, "aten::nonzero.out", T(x, dim_order=(2, 0, 1)),
          Out(np.int64, [0, 3], dynamic=True, capacity=[60, 3]), expect=ref)


def test_nonzero_all_false_and_too_many_rows(device):
    check(device, "aten::nonzero.out", np.zeros((4, 4), np.float32),
          Out(np.int64, [0, 2], dynamic=True, capacity=[16, 2]), expect=np.zeros((0, 2)))
    # more rows than the out can hold
    check_error(device, "aten::nonzero.out", np.ones(8, np.int32),
                Out(np.int64, [0, 1], dynamic=True, capacity=[4, 1]), exc=ValueError)

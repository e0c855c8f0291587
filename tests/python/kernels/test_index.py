"""Indexing kernels against NumPy: embedding, index_select, gather, scatter,
slice/select_scatter, masked_fill, nonzero, index.Tensor and index_put."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(3)
CL = (0, 2, 3, 1)


# ---- embedding --------------------------------------------------------------


@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("w_dtype", [np.float32, np.float16, np.int64, np.uint8])
def test_embedding_rows(idx_dtype, w_dtype):
    w = (RNG.standard_normal((50, 16)) * 10).astype(w_dtype)
    idx = RNG.integers(0, 50, (2, 7)).astype(idx_dtype)
    (r,) = call_kernel("aten::embedding.out", w, idx, -1, False, False, Out(w_dtype, [2, 7, 16]))
    np.testing.assert_array_equal(r, w[idx])


def test_embedding_bf16_threads_and_scalar_index():
    w = RNG.standard_normal((1000, 64)).astype(np.float32)
    idx = RNG.integers(0, 1000, (4, 256))
    (r,) = call_kernel("aten::embedding.out", T(w, bf16=True), idx, -1, False, False,
                       Out("bfloat16", [4, 256, 64]), num_threads=3)
    np.testing.assert_array_equal(r, from_bf16_bits(to_bf16_bits(w))[idx])
    (r,) = call_kernel("aten::embedding.out", w, np.array(5), -1, False, False,
                       Out(np.float32, [64]))
    np.testing.assert_array_equal(r, w[5])


def test_embedding_strided_indices_and_out_of_range():
    w = RNG.standard_normal((10, 3)).astype(np.float32)
    idx = RNG.integers(0, 10, (3, 4, 2))
    (r,) = call_kernel("aten::embedding.out", w, T(idx, dim_order=(2, 0, 1)), -1, False, False,
                       Out(np.float32, [3, 4, 2, 3]))
    np.testing.assert_array_equal(r, w[idx])
    for bad in (10, -1):
        with pytest.raises(IndexError):
            call_kernel("aten::embedding.out", w, np.array([1, bad]), -1, False, False,
                        Out(np.float32, [2, 3]))
    with pytest.raises(TypeError):
        call_kernel("aten::embedding.out", w, np.array([1.0]), -1, False, False,
                    Out(np.float32, [1, 3]))


# ---- index_select / gather ------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(dim):
    x = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    idx = np.array([3, 0, 0, 2], np.int32)
    ref = np.take(x, idx, axis=dim)
    (r,) = call_kernel("aten::index_select.out", x, dim, idx, Out(np.float32, ref.shape),
                       num_threads=2)
    np.testing.assert_array_equal(r, ref)


def test_index_select_layouts_scalar_and_errors():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    idx = np.array([2, 1])
    (r,) = call_kernel("aten::index_select.out", T(x, dim_order=CL), 1, idx,
                       Out(np.float32, [2, 2, 4, 5], dim_order=CL))
    np.testing.assert_array_equal(r, x[:, idx])
    (r,) = call_kernel("aten::index_select.out", np.array(7.0, np.float32), 0, np.array([0]),
                       Out(np.float32, []))
    assert r == 7.0
    with pytest.raises(IndexError):
        call_kernel("aten::index_select.out", x, 1, np.array([3]), Out(np.float32, [2, 1, 4, 5]))
    with pytest.raises(ValueError):
        call_kernel("aten::index_select.out", x, 1, np.zeros((1, 1), np.int64),
                    Out(np.float32, [2, 1, 4, 5]))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dim):
    x = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    shape = [3, 4, 5]
    idx = RNG.integers(0, x.shape[dim], shape)
    (r,) = call_kernel("aten::gather.out", x, dim, idx, False, Out(np.float32, shape))
    # take_along_axis needs index no larger than x off-axis: slice x to match.
    sl = tuple(slice(0, s) if d != dim % 3 else slice(None) for d, s in enumerate(shape))
    np.testing.assert_array_equal(r, np.take_along_axis(x[sl], idx, axis=dim))


def test_gather_errors():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(IndexError):
        call_kernel("aten::gather.out", x, 1, np.array([[4]]), False, Out(np.float32, [1, 1]))
    with pytest.raises(IndexError):
        call_kernel("aten::gather.out", x, 1, np.array([[-1]]), False, Out(np.float32, [1, 1]))
    with pytest.raises(ValueError):
        call_kernel("aten::gather.out", x, 1, np.zeros((4, 1), np.int64), False,
                    Out(np.float32, [4, 1]))
    with pytest.raises(ValueError):
        call_kernel("aten::gather.out", x, 1, np.zeros((3,), np.int64), False,
                    Out(np.float32, [3]))


# ---- scatter ----------------------------------------------------------------


def np_scatter(x, dim, idx, src, add):
    out = x.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        v = src[pos] if isinstance(src, np.ndarray) else src
        if add:
            out[tuple(tgt)] += v
        else:
            out[tuple(tgt)] = v
    return out


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_src_value_add(dim):
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    src = RNG.standard_normal((3, 4)).astype(np.float32)
    idx = RNG.integers(0, x.shape[dim], (2, 3))
    (r,) = call_kernel("aten::scatter.src_out", x, dim, idx, src, Out(np.float32, x.shape))
    np.testing.assert_array_equal(r, np_scatter(x, dim, idx, src, False))
    (r,) = call_kernel("aten::scatter.value_out", x, dim, idx, 2.5, Out(np.float32, x.shape))
    np.testing.assert_array_equal(r, np_scatter(x, dim, idx, 2.5, False))
    (r,) = call_kernel("aten::scatter_add.out", x, dim, idx, src, Out(np.float32, x.shape))
    np.testing.assert_allclose(r, np_scatter(x, dim, idx, src, True), rtol=1e-6)


def test_scatter_add_int_duplicates_and_errors():
    x = np.zeros((5,), np.int64)
    idx = np.array([1, 1, 3, 1])
    src = np.array([1, 2, 3, 4], np.int64)
    (r,) = call_kernel("aten::scatter_add.out", x, 0, idx, src, Out(np.int64, [5]))
    np.testing.assert_array_equal(r, [0, 7, 0, 3, 0])
    with pytest.raises(IndexError):
        call_kernel("aten::scatter.src_out", x, 0, np.array([5]), src, Out(np.int64, [5]))
    with pytest.raises(ValueError):
        call_kernel("aten::scatter.src_out", x, 0, idx, src.astype(np.int32), Out(np.int64, [5]))


# ---- slice / select scatter --------------------------------------------------


@pytest.mark.parametrize("start,end,step", [(None, None, 1), (1, 5, 2), (-3, None, 1),
                                            (2, 100, 3), (4, 2, 1)])
def test_slice_scatter(start, end, step):
    x = RNG.standard_normal((3, 7, 2)).astype(np.float32)
    target = x[:, slice(start, end, step)]
    src = RNG.standard_normal(target.shape).astype(np.float32)
    (r,) = call_kernel("aten::slice_scatter.out", x, src, 1, start, end, step,
                       Out(np.float32, x.shape))
    ref = x.copy()
    ref[:, slice(start, end, step)] = src
    np.testing.assert_array_equal(r, ref)


def test_slice_and_select_scatter_errors_and_select():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    with pytest.raises(ValueError):
        call_kernel("aten::slice_scatter.out", x, np.zeros((3, 2), np.float32), 1, 0, 3, 1,
                    Out(np.float32, [3, 4]))
    src = RNG.standard_normal(3).astype(np.float32)
    (r,) = call_kernel("aten::select_scatter.out", x, src, 1, -1, Out(np.float32, [3, 4]))
    ref = x.copy()
    ref[:, -1] = src
    np.testing.assert_array_equal(r, ref)
    with pytest.raises(IndexError):
        call_kernel("aten::select_scatter.out", x, src, 1, 4, Out(np.float32, [3, 4]))
    with pytest.raises(ValueError):
        call_kernel("aten::select_scatter.out", x, src[:2], 1, 0, Out(np.float32, [3, 4]))


# ---- masked_fill / nonzero -----------------------------------------------------


def test_masked_fill_broadcast_and_dtypes():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    mask = RNG.random((3, 4)) < 0.5
    (r,) = call_kernel("aten::masked_fill.Scalar_out", x, mask, float("-inf"),
                       Out(np.float32, x.shape))
    np.testing.assert_array_equal(r, np.where(mask, -np.inf, x))
    xi = RNG.integers(0, 9, (4, 4)).astype(np.int32)
    m = np.eye(4, dtype=bool)
    (r,) = call_kernel("aten::masked_fill.Scalar_out", xi, m, 7, Out(np.int32, [4, 4]))
    np.testing.assert_array_equal(r, np.where(m, 7, xi))
    with pytest.raises(ValueError):
        call_kernel("aten::masked_fill.Scalar_out", xi, m.astype(np.int32), 7,
                    Out(np.int32, [4, 4]))


def test_nonzero_dynamic_out():
    x = RNG.random((3, 4, 5)) < 0.3
    ref = np.argwhere(x)
    (r,) = call_kernel("aten::nonzero.out", x.astype(np.float32),
                       Out(np.int64, [0, 3], dynamic=True, capacity=[60, 3]))
    np.testing.assert_array_equal(r, ref)
    (r,) = call_kernel("aten::nonzero.out", T(x, dim_order=(2, 0, 1)),
                       Out(np.int64, [0, 3], dynamic=True, capacity=[60, 3]))
    np.testing.assert_array_equal(r, ref)
    with pytest.raises(ValueError):  # more rows than the out can hold
        call_kernel("aten::nonzero.out", np.ones(8, np.int32),
                    Out(np.int64, [0, 1], dynamic=True, capacity=[4, 1]))


# ---- index.Tensor ----------------------------------------------------------


def index_tensor(x, indices, ref, **kw):
    (r,) = call_kernel("aten::index.Tensor_out", x, indices, Out(x.dtype, ref.shape), **kw)
    np.testing.assert_array_equal(r, ref)


def test_index_tensor_single_and_negative():
    x = RNG.standard_normal((5, 6, 7)).astype(np.float32)
    idx = np.array([[0, -1], [4, 2]])
    index_tensor(x, [idx], x[idx])
    index_tensor(x, [None, idx.astype(np.int32)], x[:, idx])
    index_tensor(x, [None, None, idx], x[:, :, idx])


def test_index_tensor_broadcast_adjacent_and_separated():
    x = RNG.standard_normal((5, 6, 7, 3)).astype(np.float32)
    a = np.array([[0], [4], [2]])
    b = np.array([1, 5])
    index_tensor(x, [a, b], x[a, b])
    index_tensor(x, [None, a, b], x[:, a, b])  # adjacent: result dims stay in place
    index_tensor(x, [a, None, b], x[a, :, b])  # separated: index dims come first
    index_tensor(x, [None, a, None, np.array([0, 2])], x[:, a, :, np.array([0, 2])])


def test_index_tensor_bool_masks():
    x = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    m = RNG.random((4, 5)) < 0.4
    index_tensor(x, [m], x[m])
    m1 = np.array([True, False, True])
    index_tensor(x, [None, None, m1], x[:, :, m1])
    m0 = np.array([True, False, False, True])
    index_tensor(x, [m0, None, np.array([0, 2])], x[m0, :, np.array([0, 2])])
    index_tensor(x, [m.astype(np.uint8)], x[m])


def test_index_tensor_layouts_threads_and_errors():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    idx = np.array([3, 0])
    (r,) = call_kernel("aten::index.Tensor_out", T(x, dim_order=CL), [None, None, idx],
                       Out(np.float32, [2, 3, 2, 5]), num_threads=2)
    np.testing.assert_array_equal(r, x[:, :, idx])
    big = RNG.standard_normal((1000, 64)).astype(np.float32)
    bi = RNG.integers(0, 1000, 700)
    index_tensor(big, [bi], big[bi], num_threads=3)
    with pytest.raises(IndexError):
        call_kernel("aten::index.Tensor_out", x, [np.array([2])], Out(np.float32, [1, 3, 4, 5]))
    with pytest.raises(IndexError):
        call_kernel("aten::index.Tensor_out", x, [None, None, None, None, np.array([0])],
                    Out(np.float32, [1]))
    with pytest.raises(TypeError):
        call_kernel("aten::index.Tensor_out", x, [np.array([0.0])], Out(np.float32, [1, 3, 4, 5]))
    with pytest.raises(IndexError):
        call_kernel("aten::index.Tensor_out", x, [np.ones(3, bool)], Out(np.float32, [3, 3, 4, 5]))
    with pytest.raises(IndexError):
        call_kernel("aten::index.Tensor_out", x, [np.array([0, 1]), np.array([0, 1, 2])],
                    Out(np.float32, [2, 4, 5]))


# ---- index_put ---------------------------------------------------------------


def test_index_put_out_and_accumulate():
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    idx = np.array([0, 3])
    v = RNG.standard_normal((2, 4)).astype(np.float32)
    (r,) = call_kernel("aten::index_put.out", x, [idx], v, False, Out(np.float32, [5, 4]))
    ref = x.copy()
    ref[idx] = v
    np.testing.assert_array_equal(r, ref)
    dup = np.array([1, 1, 2])
    v3 = RNG.standard_normal((3, 4)).astype(np.float32)
    (r,) = call_kernel("aten::index_put.out", x, [dup], v3, True, Out(np.float32, [5, 4]))
    ref = x.copy()
    np.add.at(ref, dup, v3)
    np.testing.assert_allclose(r, ref, rtol=1e-6)
    (r,) = call_kernel("aten::index_put.out", x, [None, np.array([1])], np.float32(9.0) *
                       np.ones(1, np.float32), False, Out(np.float32, [5, 4]))
    ref = x.copy()
    ref[:, 1] = 9
    np.testing.assert_array_equal(r, ref)


def test_index_put_inplace_kv_cache_and_mask():
    pos = np.array([3, 4])
    v = RNG.standard_normal((1, 2, 2, 4)).astype(np.float32)
    # index_put_ writes into self: pass self as an out tensor to read it back
    # (the test hook fills out tensors with 0xA5 bytes).
    (r,) = call_kernel("aten::index_put_", Out(np.float32, [1, 2, 8, 4]), [None, None, pos], v,
                       False)
    fill = np.frombuffer(b"\xa5" * 4, np.float32)[0]
    ref = np.full((1, 2, 8, 4), fill, np.float32)
    ref[:, :, pos] = v
    np.testing.assert_array_equal(r, ref)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    m = x > 0
    (r,) = call_kernel("aten::index_put.out", x, [m], np.zeros(1, np.float32), False,
                       Out(np.float32, [3, 4]))
    np.testing.assert_array_equal(r, np.where(m, 0, x))
    with pytest.raises(ValueError):
        call_kernel("aten::index_put.out", x, [np.array([0])], np.zeros((2, 4), np.float32),
                    False, Out(np.float32, [3, 4]))
    with pytest.raises(IndexError):
        call_kernel("aten::index_put.out", x, [np.array([3])], np.zeros(4, np.float32), False,
                    Out(np.float32, [3, 4]))

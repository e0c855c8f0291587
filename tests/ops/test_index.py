"""CUDA indexing kernels against the CPU ones: embedding, index_select,
gather, scatter (src / value / add), masked_fill, index.Tensor and
index_put, over several dtypes (bf16 and bool included), channels-last
inputs, negative dims and indices, int32 and int64 indices, empty tensors.
Indices are in range (the CUDA kernels cannot raise on bad ones) and
scatters without accumulation use distinct positions (duplicates race)."""

import numpy as np
import pytest

import harness
from harness import Out, T, call_kernel, check, perf, rand

pytestmark = harness.needs_cuda

CL = (0, 2, 3, 1)
RNG = np.random.default_rng(7)
DTYPES = [np.float32, np.float16, "bfloat16", np.float64, np.int64, np.int32, np.int8, np.uint8,
          np.bool_]


def arg(x, dtype, dim_order=None):
    if dtype == "bfloat16":
        return T(x.astype(np.float32), bf16=True, dim_order=dim_order)
    return T(x.astype(dtype), dim_order=dim_order)


def values(shape, dtype):
    return rand(shape, np.float32 if dtype == "bfloat16" else dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_embedding(dtype, index_dtype):
    w = values((10, 16), dtype)
    idx = RNG.integers(0, 10, (2, 7)).astype(index_dtype)
    check("aten::embedding.out", arg(w, dtype), idx, -1, False, False, Out(dtype, (2, 7, 16)))
    check("aten::embedding.out", arg(w, dtype), np.array(5, index_dtype), -1, False, False,
          Out(dtype, (16,)))
    check("aten::embedding.out", arg(w, dtype), np.zeros((0, 3), index_dtype), -1, False, False,
          Out(dtype, (0, 3, 16)))


def test_embedding_channels_last_indices_and_large_table():
    w = rand((1000, 300), np.float32)
    idx = RNG.integers(0, 1000, (3, 4, 5))
    check("aten::embedding.out", w, T(idx, dim_order=(2, 0, 1)), -1, False, False,
          Out(np.float32, (3, 4, 5, 300)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1, -4])
def test_index_select(dtype, dim):
    x = values((3, 4, 5, 6), dtype)
    size = x.shape[dim]
    idx = np.array([size - 1, 0, 1, 0])
    shape = list(x.shape)
    shape[dim] = len(idx)
    check("aten::index_select.out", arg(x, dtype), dim, idx, Out(dtype, tuple(shape)))
    check("aten::index_select.out", arg(x, dtype, CL), dim, idx.astype(np.int32),
          Out(dtype, tuple(shape)))


def test_index_select_zero_dim_and_empty():
    check("aten::index_select.out", np.array(7.0, np.float32), 0, np.array([0]),
          Out(np.float32, ()))
    check("aten::index_select.out", rand((3, 4)), 1, np.array(2), Out(np.float32, (3, 1)))
    check("aten::index_select.out", rand((3, 4)), 1, np.zeros((0,), np.int64),
          Out(np.float32, (3, 0)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dtype, dim):
    x = values((4, 5, 6), dtype)
    shape = (3, 4, 5)
    idx = RNG.integers(0, x.shape[dim], shape)
    check("aten::gather.out", arg(x, dtype), dim, idx, False, Out(dtype, shape))
    check("aten::gather.out", arg(x, dtype), dim, idx.astype(np.int32), False, Out(dtype, shape))


def test_gather_empty_index():
    check("aten::gather.out", rand((4, 5)), 1, np.zeros((4, 0), np.int64), False,
          Out(np.float32, (4, 0)))


def distinct_index(shape, dim, size):
    """An index of `shape` whose entries along `dim` are distinct (a
    permutation prefix per line), so scatter positions never repeat."""
    idx = np.zeros(shape, np.int64)
    it = np.nditer(np.zeros([s for d, s in enumerate(shape) if d != dim]), flags=["multi_index"])
    for _ in it:
        line = list(it.multi_index)
        line.insert(dim, slice(None))
        idx[tuple(line)] = RNG.permutation(size)[:shape[dim]]
    return idx


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_src_and_value(dtype, dim):
    x = values((5, 6, 7), dtype)
    shape = (4, 5, 6)
    idx = distinct_index(shape, dim % 3, x.shape[dim])
    src = values((5, 6, 7), dtype)
    check("aten::scatter.src_out", arg(x, dtype), dim, idx, arg(src, dtype), Out(dtype, x.shape))
    check("aten::scatter.value_out", arg(x, dtype), dim, idx.astype(np.int32), 2.5 if dtype in (
        np.float32, np.float16, "bfloat16", np.float64) else 1, Out(dtype, x.shape))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.int8,
                                   np.bool_])
def test_scatter_add_repeated_positions(dtype):
    x = values((5, 6), dtype)
    idx = RNG.integers(0, 5, (8, 6))
    src = values((8, 6), dtype)
    check("aten::scatter_add.out", arg(x, dtype), 0, idx, arg(src, dtype), Out(dtype, x.shape))


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_scatter_add_half_distinct_positions(dtype):
    # Distinct positions: the sum order cannot change the rounding.
    x = values((5, 6), dtype)
    idx = distinct_index((3, 6), 0, 5)
    src = values((3, 6), dtype)
    check("aten::scatter_add.out", arg(x, dtype), 0, idx, arg(src, dtype), Out(dtype, x.shape))


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill(dtype):
    x = values((2, 3, 4, 5), dtype)
    mask = rand((3, 1, 5), np.bool_)
    value = float("-inf") if dtype in (np.float32, np.float16, "bfloat16", np.float64) else 7
    check("aten::masked_fill.Scalar_out", arg(x, dtype), mask, value, Out(dtype, x.shape))
    check("aten::masked_fill.Scalar_out", arg(x, dtype, CL), mask, 1, Out(dtype, x.shape,
                                                                            dim_order=CL))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("indices", [
    lambda: [np.array([2, 0, -1])],
    lambda: [None, np.array([[1, 2], [0, 0]])],
    lambda: [np.array([0, 1]), None, np.array([3, -4])],
    lambda: [None, np.array([1]), np.array([[0], [2]])],
    lambda: [None, None, None, np.array([4, 0, 1], np.int32)],
    lambda: [np.zeros((0,), np.int64)],
])
def test_index_tensor(dtype, indices):
    x = values((3, 4, 5, 6), dtype)
    idx = indices()
    ref_idx = tuple(slice(None) if i is None else i for i in idx)
    shape = x[ref_idx].shape
    check("aten::index.Tensor_out", arg(x, dtype), idx, Out(dtype, shape))
    check("aten::index.Tensor_out", arg(x, dtype, CL), idx, Out(dtype, shape))


@pytest.mark.parametrize("dtype", [np.float32, "bfloat16", np.int64, np.bool_])
def test_index_put(dtype):
    x = values((5, 4), dtype)
    v = values((2, 4), dtype)
    check("aten::index_put.out", arg(x, dtype), [np.array([0, -2])], arg(v, dtype), False,
          Out(dtype, (5, 4)))
    check("aten::index_put.out", arg(x, dtype), [None, np.array([1])], arg(values((1,), dtype),
                                                                           dtype),
          False, Out(dtype, (5, 4)))
    y = values((1, 2, 8, 4), dtype)
    check("aten::index_put.out", arg(y, dtype, CL), [None, None, np.array([3, 4])],
          arg(values((1, 2, 2, 4), dtype), dtype), False, Out(dtype, y.shape, dim_order=CL))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_index_put_accumulate_repeated(dtype):
    x = values((5, 4), dtype)
    v = values((3, 4), dtype)
    check("aten::index_put.out", arg(x, dtype), [np.array([1, 1, 2])], arg(v, dtype), True,
          Out(dtype, (5, 4)), rtol=1e-6, atol=1e-6)


def test_index_put_inplace():
    v = rand((1, 2, 2, 4), np.float32)
    check("aten::index_put_", Out(np.float32, (1, 2, 8, 4)), [None, None, np.array([3, 4])], v,
          False)


def test_perf_gathers():
    w = rand((32000, 4096), np.float16)  # 250 MiB table
    idx = RNG.integers(0, 32000, (8, 512))
    perf("embedding f16 [32000,4096] x 4096 rows", "aten::embedding.out", w, idx, -1, False,
         False, Out(np.float16, (8, 512, 4096)), nbytes=2 * 8 * 512 * 4096 * 2)
    x = rand((4096, 4096), np.float32)
    perf("index_select f32 [4096,4096] dim 0, 4096 rows", "aten::index_select.out", x, 0,
         RNG.integers(0, 4096, 4096), Out(np.float32, (4096, 4096)), nbytes=2 * x.nbytes)


# ---- nonzero (waits for the count) ---------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("shape,order", [((3, 4, 5), None), ((3, 4, 5), (2, 0, 1)),
                                         ((1000,), None), ((6, 0, 2), None), ((), None)])
def test_nonzero(dtype, shape, order):
    x = np.where(rand(shape, np.float32, 0, 1) < 0.3, rand(shape, np.float32, 1, 3), 0)
    cap = [max(1, int(np.prod(shape))), len(shape)]
    (g,) = check("aten::nonzero.out", T(x.astype(dtype), dim_order=order),
                 Out(np.int64, [0, len(shape)], dynamic=True, capacity=cap))
    np.testing.assert_array_equal(g, np.argwhere(x))


def test_nonzero_all_false_and_too_many_rows():
    (g,) = check("aten::nonzero.out", np.zeros((4, 4), np.float32),
                 Out(np.int64, [0, 2], dynamic=True, capacity=[16, 2]))
    assert g.shape == (0, 2)
    with pytest.raises(ValueError):
        call_kernel("aten::nonzero.out", np.ones(8, np.int32),
                    Out(np.int64, [0, 1], dynamic=True, capacity=[4, 1]), device="cuda:0")

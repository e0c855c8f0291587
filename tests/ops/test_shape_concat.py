"""Joining and splitting against NumPy: cat (mixed dtypes promoted into the
out's, legacy empty tensors skipped, negative dims, any dim order, many
inputs), stack, split_with_sizes, split and unbind: every dtype, dynamic
and empty outs, threads and argument errors."""

import numpy as np
import pytest

from harness import (BF16, CL, Out, Raw, T, bf16, cast, check, check_error, dtype_of, integers,
                     normal, rand, reference, tensor, value)

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


@reference("aten::cat.out")
def cat_model(tensors, dim, out):
    """Each input stored as the out's dtype; 1-D empty ("legacy") ones are
    skipped."""
    parts = [cast(value(t), dtype_of(out)) for t in tensors]
    parts = [p for p in parts if not (p.ndim == 1 and p.size == 0)]
    if not parts:
        return np.zeros((0,))
    return np.concatenate(parts, dim)


reference("aten::stack.out")(
    lambda tensors, dim, out: np.stack([value(t) for t in tensors], dim))


def _split(x, sizes, dim):
    bounds = np.cumsum(sizes)[:-1]
    return np.split(x, bounds, axis=dim)


reference("aten::split_with_sizes_copy.out")(
    lambda x, sizes, dim, outs: _split(value(x), sizes, dim))


@reference("aten::split_copy.Tensor_out")
def split_model(x, size, dim, outs):
    xv = value(x)
    n = xv.shape[dim]
    return _split(xv, [min(size, n - i) for i in range(0, n, size)], dim)


@reference("aten::unbind_copy.int_out")
def unbind_model(x, dim, outs):
    xv = value(x)
    return [np.take(xv, i, axis=dim) for i in range(xv.shape[dim])]


# ---- cat ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_cat_every_dtype(device, dtype):
    a, b = values((2, 4, 3, 8), dtype), values((2, 4, 3, 5), dtype)
    check(device, "aten::cat.out", [tensor(a, dtype), tensor(b, dtype)], -1,
          Out(dtype, (2, 4, 3, 13)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_last_dim_every_dtype(device, dtype):
    a, b = spread((1, 4, 16, 8), dtype), spread((1, 4, 16, 8), dtype)
    check(device, "aten::cat.out", [a, b], -1, Out(dtype, (1, 4, 16, 16)),
          expect=np.concatenate([a, b], -1))


@pytest.mark.parametrize("dim", [0, 1, 2, 3, -3])
@pytest.mark.parametrize("orders", [(None, None, None), (CL, None, CL), (None, CL, None)])
def test_cat_any_dim_any_dim_order(device, dim, orders):
    shapes = [[2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5]]
    shapes[1][dim] = 1
    shapes[2][dim] = 2
    for make in (rand, spread):
        arrays = [make(s) for s in shapes]
        expected = np.concatenate(arrays, dim)
        check(device, "aten::cat.out", [T(x, dim_order=o) for x, o in zip(arrays, orders)], dim,
              Out(np.float32, expected.shape, dim_order=orders[0]), expect=expected)


def test_cat_promotes_inputs_into_out_dtype(device):
    a = spread((2, 3), np.int32)
    b = spread((2, 2), np.bool_)
    c = spread((2, 1), np.float16)
    check(device, "aten::cat.out", [a, b, c], 1, Out(np.float32, (2, 6)),
          expect=np.concatenate([a, b, c], 1).astype(np.float32))
    bf = bf16(spread((2, 2)))
    check(device, "aten::cat.out", [a.astype(np.float32), T(bf, bf16=True)], 1,
          Out(BF16, (2, 5)), expect=bf16(np.concatenate([a.astype(np.float32), bf], 1)))


def test_cat_converts_dtypes_and_skips_legacy_empty(device):
    a, b, c = rand((2, 3), np.int32), rand((2, 2), np.bool_), rand((2, 1), np.float16)
    check(device, "aten::cat.out", [a, b, c], 1, Out(np.float32, (2, 6)))
    check(device, "aten::cat.out", [a.astype(np.float32), T(rand((2, 2)), bf16=True)], 1,
          Out(BF16, (2, 5)))
    empty = np.zeros((0,), np.float32)
    check(device, "aten::cat.out", [empty, rand((2, 3)), empty, rand((1, 3))], 0,
          Out(np.float32, (1, 3), dynamic=True, capacity=(8, 3)))
    check(device, "aten::cat.out", [empty, empty], 0, Out(np.float32, (0,)))
    check(device, "aten::cat.out", [np.zeros((2, 0), np.float32), rand((2, 3))], 1,
          Out(np.float32, (2, 3)))


def test_cat_skips_legacy_empty_tensors_and_resizes_dynamic_out(device):
    a, b = spread((2, 3)), spread((1, 3))
    empty = np.zeros((0,), np.float32)
    check(device, "aten::cat.out", [empty, a, empty, b], 0,
          Out(np.float32, (1, 3), dynamic=True, capacity=(8, 3)), expect=np.concatenate([a, b]))
    check(device, "aten::cat.out", [empty, empty], 0, Out(np.float32, (0,)), expect=np.zeros(0))
    check(device, "aten::cat.out", [np.zeros((2, 0), np.float32), a], 1, Out(np.float32, (2, 3)),
          expect=a)


def test_cat_many_inputs_long_rows(device):
    arrays = [rand((3, 200 + i), np.float16) for i in range(20)]
    expected = np.concatenate(arrays, 1)
    check(device, "aten::cat.out", arrays, 1, Out(np.float16, expected.shape))


def test_cat_errors(device):
    a = spread((2, 3))
    check_error(device, "aten::cat.out", [a, spread((3, 3))], 1, Out(np.float32, (2, 6)),
                exc=ValueError, match="differ")
    check_error(device, "aten::cat.out", [a, spread((2, 3, 1))], 1, Out(np.float32, (2, 6)),
                exc=ValueError, match="rank")
    check_error(device, "aten::cat.out", [np.array(1.0, np.float32)], 0, Out(np.float32, (1,)),
                exc=ValueError, match="0-dimensional")
    check_error(device, "aten::cat.out", [a, a], 2, Out(np.float32, (2, 6)), exc=IndexError,
                match="cat")
    check_error(device, "aten::cat.out", [a, a], 0, Out(np.int32, (4, 3)), exc=ValueError,
                match="cannot store")
    check_error(device, "aten::cat.out", Raw(("tensor_list", [])), 0, Out(np.float32, (0,)),
                exc=ValueError, match="non-empty")


def test_large_cat_and_split_on_threads(device):
    a, b = spread((4, 100, 300)), spread((4, 60, 300), np.float16)
    check(device, "aten::cat.out", [a, b], 1, Out(np.float32, (4, 160, 300)),
          expect=np.concatenate([a, b.astype(np.float32)], 1), num_threads=4)
    check(device, "aten::split_with_sizes_copy.out", a, [100, 200], -1,
          [Out(np.float32, (4, 100, 100)), Out(np.float32, (4, 100, 200))],
          expect=[a[..., :100], a[..., 100:]], num_threads=4)


# ---- stack --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", [np.int64, np.bool_, BF16])
def test_stack_dtypes(device, dim, dtype):
    arrays = [values((2, 3), dtype) for _ in range(4)]
    expected = np.stack(arrays, dim)
    check(device, "aten::stack.out", [tensor(x, dtype) for x in arrays], dim,
          Out(dtype, expected.shape))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack(device, dim):
    arrays = [spread((2, 3), np.int64) for _ in range(4)]
    expected = np.stack(arrays, dim)
    check(device, "aten::stack.out", arrays, dim, Out(np.int64, expected.shape), expect=expected)


def test_stack_channels_last_out_and_zero_dim_inputs(device):
    arrays = [spread((2, 3, 4)) for _ in range(5)]
    check(device, "aten::stack.out", arrays, 1, Out(np.float32, (2, 5, 3, 4), dim_order=CL),
          expect=np.stack(arrays, 1))
    s = [np.array(i, np.int32) for i in range(3)]
    check(device, "aten::stack.out", s, 0, Out(np.int32, (3,)), expect=[0, 1, 2])
    check_error(device, "aten::stack.out", [spread((2,)), spread((3,))], 0,
                Out(np.float32, (2, 2)), exc=ValueError, match="one shape")


def test_stack_channels_last_and_zero_dim(device):
    arrays = [rand((2, 3, 4)) for _ in range(5)]
    check(device, "aten::stack.out", arrays, 1, Out(np.float32, (2, 5, 3, 4), dim_order=CL))
    check(device, "aten::stack.out", [np.array(i, np.int32) for i in range(3)], 0,
          Out(np.int32, (3,)))


# ---- split_with_sizes / split / unbind ----------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_split_with_sizes(device, dtype):
    a = values((1, 16, 192), dtype)
    check(device, "aten::split_with_sizes_copy.out", tensor(a, dtype), [64, 96, 32], 2,
          [Out(dtype, (1, 16, 64)), Out(dtype, (1, 16, 96)), Out(dtype, (1, 16, 32))])


@pytest.mark.parametrize("dtype", DTYPES)
def test_split_with_sizes_fixture_form(device, dtype):
    a = spread((1, 16, 192), dtype)
    check(device, "aten::split_with_sizes_copy.out", a, [64, 64, 64], 2,
          [Out(dtype, (1, 16, 64)) for _ in range(3)], expect=np.split(a, 3, axis=2))


def test_split_with_sizes_uneven_zero_and_channels_last(device):
    a = spread((2, 6, 3, 4))
    outs = [Out(np.float32, (2, 1, 3, 4), dim_order=CL), Out(np.float32, (2, 0, 3, 4)),
            Out(np.float32, (1, 1, 1, 1), dynamic=True, capacity=(2, 6, 3, 4))]
    check(device, "aten::split_with_sizes_copy.out", T(a, dim_order=CL), [1, 0, 5], -3, outs,
          expect=[a[:, :1], a[:, 1:1], a[:, 1:]])


def test_split_uneven_zero_channels_last_and_unbind(device):
    a = rand((2, 6, 3, 4))
    check(device, "aten::split_with_sizes_copy.out", T(a, dim_order=CL), [1, 0, 5], -3,
          [Out(np.float32, (2, 1, 3, 4), dim_order=CL), Out(np.float32, (2, 0, 3, 4)),
           Out(np.float32, (1, 1, 1, 1), dynamic=True, capacity=(2, 6, 3, 4))])
    check(device, "aten::split_copy.Tensor_out", a, 4, 1,
          [Out(np.float32, (2, 4, 3, 4)), Out(np.float32, (2, 2, 3, 4))])
    check(device, "aten::unbind_copy.int_out", T(a, dim_order=CL), -1,
          [Out(np.float32, (2, 6, 3)) for _ in range(4)])


@pytest.mark.parametrize("sizes", [[2, 2], [3, 3, 1], [7, -1], [3]])
def test_split_with_sizes_must_sum_to_the_dim(device, sizes):
    check_error(device, "aten::split_with_sizes_copy.out", spread((6, 2)), sizes, 0,
                [Out(np.float32, (1, 2), dynamic=True, capacity=(8, 2)) for _ in sizes[:2]],
                exc=ValueError, match="split_with_sizes_copy")


@pytest.mark.parametrize("size,n", [(2, 3), (4, 2), (6, 1), (10, 1), (1, 6)])
def test_split_copy(device, size, n):
    a = spread((3, 6), np.int16)
    pieces = [a[:, i:i + size] for i in range(0, 6, size)]
    assert len(pieces) == n
    check(device, "aten::split_copy.Tensor_out", a, size, 1,
          [Out(np.int16, p.shape) for p in pieces], expect=pieces)


def test_split_copy_errors(device):
    check_error(device, "aten::split_copy.Tensor_out", spread((6,)), 4, 0, [Out(np.float32, (4,))],
                exc=ValueError, match="outputs")
    check_error(device, "aten::split_copy.Tensor_out", spread((6,)), 0, 0, [Out(np.float32, (6,))],
                exc=ValueError, match="split size")


def test_unbind(device):
    a = spread((2, 3, 4), np.uint8)
    check(device, "aten::unbind_copy.int_out", a, -2, [Out(np.uint8, (2, 4)) for _ in range(3)],
          expect=[a[:, i] for i in range(3)])
    check_error(device, "aten::unbind_copy.int_out", a, 0, [Out(np.uint8, (3, 4))],
                exc=ValueError, match="outputs")
    check_error(device, "aten::unbind_copy.int_out", a, 0,
                [Out(np.int8, (3, 4)), Out(np.int8, (3, 4))], exc=ValueError, match="dtype")

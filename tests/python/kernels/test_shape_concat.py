"""Joining and splitting (shape_concat.cpp) against NumPy: cat (mixed dtypes,
legacy empty tensors, negative dims, dim orders), stack, split_with_sizes,
split, unbind, and their argument errors."""

import numpy as np
import pytest

from pterun._testing import Out, Raw, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(5)
CL = (0, 2, 3, 1)
DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
          np.float64, np.uint64]


def rand(shape, dtype=np.float32):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return RNG.integers(0, 100, shape).astype(dtype)
    return np.asarray(RNG.standard_normal(shape) * 10).astype(dtype)


def run(name, *args):
    return call_kernel(name, *args)


# ---- cat ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_last_dim_every_dtype(dtype):
    a, b = rand((1, 4, 16, 8), dtype), rand((1, 4, 16, 8), dtype)
    r = run("aten::cat.out", [a, b], -1, Out(dtype, (1, 4, 16, 16)))[0]
    np.testing.assert_array_equal(r, np.concatenate([a, b], -1))


@pytest.mark.parametrize("dim", [0, 1, 2, 3, -3])
@pytest.mark.parametrize("orders", [(None, None, None), (CL, None, CL), (None, CL, None)])
def test_cat_any_dim_any_dim_order(dim, orders):
    shapes = [[2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5]]
    shapes[1][dim] = 1
    shapes[2][dim] = 2
    arrays = [rand(s) for s in shapes]
    expected = np.concatenate(arrays, dim)
    r = run("aten::cat.out", [T(x, dim_order=o) for x, o in zip(arrays, orders)], dim,
            Out(np.float32, expected.shape, dim_order=orders[0]))[0]
    np.testing.assert_array_equal(r, expected)


def test_cat_promotes_inputs_into_out_dtype():
    a = rand((2, 3), np.int32)
    b = rand((2, 2), np.bool_)
    c = rand((2, 1), np.float16)
    r = run("aten::cat.out", [a, b, c], 1, Out(np.float32, (2, 6)))[0]
    np.testing.assert_array_equal(r, np.concatenate([a, b, c], 1).astype(np.float32))
    bf = from_bf16_bits(to_bf16_bits(rand((2, 2))))
    r = run("aten::cat.out", [a.astype(np.float32), T(bf, bf16=True)], 1,
            Out("bfloat16", (2, 5)))[0]
    np.testing.assert_array_equal(r, from_bf16_bits(to_bf16_bits(
        np.concatenate([a.astype(np.float32), bf], 1))))


def test_cat_skips_legacy_empty_tensors_and_resizes_dynamic_out():
    a, b = rand((2, 3)), rand((1, 3))
    empty = np.zeros((0,), np.float32)
    r = run("aten::cat.out", [empty, a, empty, b], 0,
            Out(np.float32, (1, 3), dynamic=True, capacity=(8, 3)))[0]
    np.testing.assert_array_equal(r, np.concatenate([a, b]))
    r = run("aten::cat.out", [empty, empty], 0, Out(np.float32, (0,)))[0]
    assert r.shape == (0,)
    r = run("aten::cat.out", [np.zeros((2, 0), np.float32), a], 1, Out(np.float32, (2, 3)))[0]
    np.testing.assert_array_equal(r, a)


def test_cat_errors():
    a = rand((2, 3))
    with pytest.raises(ValueError, match="differ"):
        run("aten::cat.out", [a, rand((3, 3))], 1, Out(np.float32, (2, 6)))
    with pytest.raises(ValueError, match="rank"):
        run("aten::cat.out", [a, rand((2, 3, 1))], 1, Out(np.float32, (2, 6)))
    with pytest.raises(ValueError, match="0-dimensional"):
        run("aten::cat.out", [np.array(1.0, np.float32)], 0, Out(np.float32, (1,)))
    with pytest.raises(IndexError, match="cat"):
        run("aten::cat.out", [a, a], 2, Out(np.float32, (2, 6)))
    with pytest.raises(ValueError, match="cannot store"):
        run("aten::cat.out", [a, a], 0, Out(np.int32, (4, 3)))
    with pytest.raises(ValueError, match="non-empty"):
        run("aten::cat.out", Raw(("tensor_list", [])), 0, Out(np.float32, (0,)))


# ---- stack --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack(dim):
    arrays = [rand((2, 3), np.int64) for _ in range(4)]
    expected = np.stack(arrays, dim)
    r = run("aten::stack.out", arrays, dim, Out(np.int64, expected.shape))[0]
    np.testing.assert_array_equal(r, expected)


def test_stack_channels_last_out_and_zero_dim_inputs():
    arrays = [rand((2, 3, 4)) for _ in range(5)]
    r = run("aten::stack.out", arrays, 1, Out(np.float32, (2, 5, 3, 4), dim_order=CL))[0]
    np.testing.assert_array_equal(r, np.stack(arrays, 1))
    s = [np.array(i, np.int32) for i in range(3)]
    np.testing.assert_array_equal(run("aten::stack.out", s, 0, Out(np.int32, (3,)))[0], [0, 1, 2])
    with pytest.raises(ValueError, match="one shape"):
        run("aten::stack.out", [rand((2,)), rand((3,))], 0, Out(np.float32, (2, 2)))


# ---- split_with_sizes / split / unbind -----------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_split_with_sizes_fixture_form(dtype):
    a = rand((1, 16, 192), dtype)
    outs = run("aten::split_with_sizes_copy.out", a, [64, 64, 64], 2,
               [Out(dtype, (1, 16, 64)) for _ in range(3)])
    for r, e in zip(outs, np.split(a, 3, axis=2)):
        np.testing.assert_array_equal(r, e)


def test_split_with_sizes_uneven_zero_and_channels_last():
    a = rand((2, 6, 3, 4))
    outs = run("aten::split_with_sizes_copy.out", T(a, dim_order=CL), [1, 0, 5], -3,
               [Out(np.float32, (2, 1, 3, 4), dim_order=CL), Out(np.float32, (2, 0, 3, 4)),
                Out(np.float32, (1, 1, 1, 1), dynamic=True, capacity=(2, 6, 3, 4))])
    np.testing.assert_array_equal(outs[0], a[:, :1])
    assert outs[1].shape == (2, 0, 3, 4)
    np.testing.assert_array_equal(outs[2], a[:, 1:])


@pytest.mark.parametrize("sizes", [[2, 2], [3, 3, 1], [7, -1], [3]])
def test_split_with_sizes_must_sum_to_the_dim(sizes):
    with pytest.raises(ValueError, match="split_with_sizes_copy"):
        run("aten::split_with_sizes_copy.out", rand((6, 2)), sizes, 0,
            [Out(np.float32, (1, 2), dynamic=True, capacity=(8, 2)) for _ in sizes[:2]])


@pytest.mark.parametrize("size,n", [(2, 3), (4, 2), (6, 1), (10, 1), (1, 6)])
def test_split_copy(size, n):
    a = rand((3, 6), np.int16)
    pieces = [a[:, i:i + size] for i in range(0, 6, size)]
    assert len(pieces) == n
    outs = run("aten::split_copy.Tensor_out", a, size, 1, [Out(np.int16, p.shape) for p in pieces])
    for r, e in zip(outs, pieces):
        np.testing.assert_array_equal(r, e)


def test_split_copy_errors():
    with pytest.raises(ValueError, match="outputs"):
        run("aten::split_copy.Tensor_out", rand((6,)), 4, 0, [Out(np.float32, (4,))])
    with pytest.raises(ValueError, match="split size"):
        run("aten::split_copy.Tensor_out", rand((6,)), 0, 0, [Out(np.float32, (6,))])


def test_unbind():
    a = rand((2, 3, 4), np.uint8)
    outs = run("aten::unbind_copy.int_out", a, -2, [Out(np.uint8, (2, 4)) for _ in range(3)])
    for i, r in enumerate(outs):
        np.testing.assert_array_equal(r, a[:, i])
    with pytest.raises(ValueError, match="outputs"):
        run("aten::unbind_copy.int_out", a, 0, [Out(np.uint8, (3, 4))])
    with pytest.raises(ValueError, match="dtype"):
        run("aten::unbind_copy.int_out", a, 0, [Out(np.int8, (3, 4)), Out(np.int8, (3, 4))])


def test_large_cat_and_split_on_threads():
    a, b = rand((4, 100, 300)), rand((4, 60, 300), np.float16)
    r = call_kernel("aten::cat.out", [a, b], 1, Out(np.float32, (4, 160, 300)), num_threads=4)[0]
    np.testing.assert_array_equal(r, np.concatenate([a, b.astype(np.float32)], 1))
    outs = call_kernel("aten::split_with_sizes_copy.out", a, [100, 200], -1,
                       [Out(np.float32, (4, 100, 100)), Out(np.float32, (4, 100, 200))],
                       num_threads=4)
    np.testing.assert_array_equal(outs[0], a[..., :100])
    np.testing.assert_array_equal(outs[1], a[..., 100:])

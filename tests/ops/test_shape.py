"""CUDA shape kernels against the CPU ones: views (permute, expand, slice,
select ...), concatenation and splitting, rearrangement (repeat, flip, roll,
tril/triu, pad, pixel shuffle), slice/select scatter and et_copy_index.
They move bytes, so every dtype is checked, with channels-last inputs and
outputs, negative dims and empty tensors; plus copy bandwidth."""

import numpy as np
import pytest

import harness
from harness import Out, T, check, perf, rand

pytestmark = harness.needs_cuda

CL = (0, 2, 3, 1)
DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
          np.float64, np.uint16, np.uint32, np.uint64]


def arg(x, dtype, dim_order=None):
    """x as a kernel argument of `dtype` ("bfloat16" or a NumPy dtype)."""
    if dtype == "bfloat16":
        return T(x.astype(np.float32), bf16=True, dim_order=dim_order)
    return T(x.astype(dtype), dim_order=dim_order)


def values(shape, dtype):
    return rand(shape, np.float32 if dtype == "bfloat16" else dtype)


ALL = DTYPES + ["bfloat16"]


# ---- views ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("order", [None, CL])
def test_permute_every_dtype(dtype, order):
    a = values((2, 3, 4, 5), dtype)
    check("aten::permute_copy.out", arg(a, dtype, order), [3, -4, 1, 2],
          Out(dtype, (5, 2, 3, 4)))


@pytest.mark.parametrize("dims,shape", [([1, 0], (33, 70)), ([2, 0, 1], (3, 40, 65)),
                                         ([0, 2, 1], (7, 64, 96)), ([1, 0], (1, 5))])
def test_permute_tiled_transposes(dims, shape):
    a = rand(shape, np.float32)
    out_shape = tuple(shape[d] for d in dims)
    check("aten::permute_copy.out", a, dims, Out(np.float32, out_shape))
    check("aten::permute_copy.out", a.astype(np.int16), dims, Out(np.int16, out_shape))
    check("aten::permute_copy.out", a.astype(np.float64), dims, Out(np.float64, out_shape))


@pytest.mark.parametrize("in_order,out_order", [(None, None), (None, CL), (CL, None), (CL, CL)])
@pytest.mark.parametrize("dtype", [np.float32, np.bool_, "bfloat16"])
def test_view_copy_any_dim_order(in_order, out_order, dtype):
    a = values((2, 3, 4, 5), dtype)
    check("aten::view_copy.out", arg(a, dtype, in_order), [5, 4, -1, 2],
          Out(dtype, (5, 4, 3, 2), dim_order=out_order))


def test_view_copy_empty_and_zero_dim():
    check("aten::view_copy.out", np.zeros((0, 3), np.float32), [3, 0], Out(np.float32, (3, 0)))
    check("aten::view_copy.out", np.array(4.0, np.float32), [1], Out(np.float32, (1,)))


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float16, "bfloat16"])
def test_expand(dtype):
    a = values((3, 1), dtype)
    check("aten::expand_copy.out", arg(a, dtype), [2, 3, 4], False, Out(dtype, (2, 3, 4)))
    check("aten::expand_copy.out", arg(a, dtype), [-1, 300], False, Out(dtype, (3, 300)))
    b = values((1, 3, 1, 4), dtype)
    check("aten::expand_copy.out", arg(b, dtype, CL), [2, 3, 5, 4], False,
          Out(dtype, (2, 3, 5, 4), dim_order=CL))
    check("aten::expand_copy.out", arg(a, dtype), [0, 3, 4], False, Out(dtype, (0, 3, 4)))


@pytest.mark.parametrize("dtype", [np.float32, np.bool_, "bfloat16"])
def test_unsqueeze_squeeze(dtype):
    a = values((2, 1, 3, 1), dtype)
    for dim in [0, 2, 4, -1, -5]:
        shape = list(a.shape)
        shape.insert(dim % 5, 1)
        check("aten::unsqueeze_copy.out", arg(a, dtype), dim, Out(dtype, tuple(shape)))
    check("aten::squeeze_copy.dim_out", arg(a, dtype), -3, Out(dtype, (2, 3, 1)))
    check("aten::squeeze_copy.dim_out", arg(a, dtype), 0, Out(dtype, (2, 1, 3, 1)))
    check("aten::squeeze_copy.dims_out", arg(a, dtype), [1, -1], Out(dtype, (2, 3)))
    check("aten::squeeze_copy.out", arg(a, dtype), Out(dtype, (2, 3)))


@pytest.mark.parametrize("dim,start,end,step", [(0, 1, None, 1), (1, -3, -1, 1), (2, 0, 5, 2),
                                                (-1, None, None, 3), (3, 4, 2, 1),
                                                (1, -100, 100, 2)])
@pytest.mark.parametrize("order", [None, CL])
def test_slice(dim, start, end, step, order):
    a = rand((3, 4, 5, 6), np.float32)
    expected = a[tuple(slice(start, end, step) if d == dim % 4 else slice(None) for d in range(4))]
    check("aten::slice_copy.Tensor_out", T(a, dim_order=order), dim, start, end, step,
          Out(np.float32, expected.shape, dim_order=order))


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, "bfloat16"])
def test_select_narrow_transpose_t(dtype):
    a = values((3, 4, 5, 6), dtype)
    check("aten::select_copy.int_out", arg(a, dtype, CL), -2, -1, Out(dtype, (3, 4, 6)))
    check("aten::select_copy.int_out", arg(a, dtype), 0, 2, Out(dtype, (4, 5, 6)))
    check("aten::narrow_copy.out", arg(a, dtype), -1, -4, 3, Out(dtype, (3, 4, 5, 3)))
    check("aten::narrow_copy.out", arg(a, dtype), 1, 1, 0, Out(dtype, (3, 0, 5, 6)))
    check("aten::transpose_copy.int_out", arg(a, dtype, CL), 1, -1, Out(dtype, (3, 6, 5, 4)))
    b = values((7, 130), dtype)
    check("aten::t_copy.out", arg(b, dtype), Out(dtype, (130, 7)))
    check("aten::t_copy.out", arg(values((5,), dtype), dtype), Out(dtype, (5,)))


def test_as_strided_alias_detach_unfold_diagonal():
    a = rand((4, 5, 6), np.float32)
    check("aten::as_strided_copy.out", a, [3, 4], [7, 2], 3, Out(np.float32, (3, 4)))
    check("aten::as_strided_copy.out", T(a, dim_order=(2, 0, 1)), [2, 2], [1, 5], None,
          Out(np.float32, (2, 2)))
    check("aten::alias_copy.out", a, Out(np.float32, a.shape))
    check("aten::detach_copy.out", T(rand((2, 3, 4, 5), np.int16), dim_order=CL),
          Out(np.int16, (2, 3, 4, 5)))
    check("aten::unfold_copy.out", a, -1, 3, 2, Out(np.float32, (4, 5, 2, 3)))
    check("aten::unfold_copy.out", np.array(2.0, np.float32), 0, 1, 1, Out(np.float32, (1,)))
    for offset, d1, d2 in [(0, 0, 1), (1, 1, 2), (-2, -1, 0), (10, 0, 2)]:
        n1, n2 = a.shape[d1], a.shape[d2]
        rest = [a.shape[d] for d in range(3) if d not in (d1 % 3, d2 % 3)]
        if offset >= 0:
            length = max(0, min(n1, n2 - offset))
        else:
            length = max(0, min(n1 + offset, n2))
        check("aten::diagonal_copy.out", a, offset, d1, d2, Out(np.float32, (*rest, length)))


# ---- cat / stack / split / unbind ---------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_cat_every_dtype(dtype):
    a, b = values((2, 4, 3, 8), dtype), values((2, 4, 3, 5), dtype)
    check("aten::cat.out", [arg(a, dtype), arg(b, dtype)], -1, Out(dtype, (2, 4, 3, 13)))


@pytest.mark.parametrize("dim", [0, 1, 2, 3, -3])
@pytest.mark.parametrize("orders", [(None, None, None), (CL, None, CL), (None, CL, None)])
def test_cat_any_dim_any_dim_order(dim, orders):
    shapes = [[2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5]]
    shapes[1][dim] = 1
    shapes[2][dim] = 2
    arrays = [rand(s, np.float32) for s in shapes]
    expected = np.concatenate(arrays, dim)
    check("aten::cat.out", [T(x, dim_order=o) for x, o in zip(arrays, orders)], dim,
          Out(np.float32, expected.shape, dim_order=orders[0]))


def test_cat_converts_dtypes_and_skips_legacy_empty():
    a, b, c = rand((2, 3), np.int32), rand((2, 2), np.bool_), rand((2, 1), np.float16)
    check("aten::cat.out", [a, b, c], 1, Out(np.float32, (2, 6)))
    check("aten::cat.out", [a.astype(np.float32), T(rand((2, 2)), bf16=True)], 1,
          Out("bfloat16", (2, 5)))
    empty = np.zeros((0,), np.float32)
    check("aten::cat.out", [empty, rand((2, 3)), empty, rand((1, 3))], 0,
          Out(np.float32, (1, 3), dynamic=True, capacity=(8, 3)))
    check("aten::cat.out", [empty, empty], 0, Out(np.float32, (0,)))
    check("aten::cat.out", [np.zeros((2, 0), np.float32), rand((2, 3))], 1,
          Out(np.float32, (2, 3)))


def test_cat_many_inputs_long_rows():
    arrays = [rand((3, 200 + i), np.float16) for i in range(20)]
    expected = np.concatenate(arrays, 1)
    check("aten::cat.out", arrays, 1, Out(np.float16, expected.shape))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", [np.int64, np.bool_, "bfloat16"])
def test_stack(dim, dtype):
    arrays = [values((2, 3), dtype) for _ in range(4)]
    expected = np.stack(arrays, dim)
    check("aten::stack.out", [arg(x, dtype) for x in arrays], dim, Out(dtype, expected.shape))


def test_stack_channels_last_and_zero_dim():
    arrays = [rand((2, 3, 4)) for _ in range(5)]
    check("aten::stack.out", arrays, 1, Out(np.float32, (2, 5, 3, 4), dim_order=CL))
    check("aten::stack.out", [np.array(i, np.int32) for i in range(3)], 0, Out(np.int32, (3,)))


@pytest.mark.parametrize("dtype", ALL)
def test_split_with_sizes(dtype):
    a = values((1, 16, 192), dtype)
    check("aten::split_with_sizes_copy.out", arg(a, dtype), [64, 96, 32], 2,
          [Out(dtype, (1, 16, 64)), Out(dtype, (1, 16, 96)), Out(dtype, (1, 16, 32))])


def test_split_uneven_zero_channels_last_and_unbind():
    a = rand((2, 6, 3, 4))
    check("aten::split_with_sizes_copy.out", T(a, dim_order=CL), [1, 0, 5], -3,
          [Out(np.float32, (2, 1, 3, 4), dim_order=CL), Out(np.float32, (2, 0, 3, 4)),
           Out(np.float32, (1, 1, 1, 1), dynamic=True, capacity=(2, 6, 3, 4))])
    check("aten::split_copy.Tensor_out", a, 4, 1,
          [Out(np.float32, (2, 4, 3, 4)), Out(np.float32, (2, 2, 3, 4))])
    check("aten::unbind_copy.int_out", T(a, dim_order=CL), -1,
          [Out(np.float32, (2, 6, 3)) for _ in range(4)])


# ---- rearrangement ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int64, "bfloat16"])
def test_repeat(dtype):
    a = values((2, 3), dtype)
    check("aten::repeat.out", arg(a, dtype), [2, 1, 3], Out(dtype, (2, 2, 9)))
    check("aten::repeat.out", arg(a, dtype), [0, 2], Out(dtype, (0, 6)))
    b = values((1, 2, 3, 2), dtype)
    check("aten::repeat.out", arg(b, dtype, CL), [2, 1, 2, 2], Out(dtype, (2, 2, 6, 4),
                                                                   dim_order=CL))


@pytest.mark.parametrize("dims", [[0], [-1], [0, 2], [1, 2, 3], []])
@pytest.mark.parametrize("order", [None, CL])
def test_flip(dims, order):
    a = rand((2, 3, 4, 5), np.int64)
    check("aten::flip.out", T(a, dim_order=order), dims, Out(np.int64, a.shape, dim_order=order))
    check("aten::flip.out", T(a.astype(np.float16), dim_order=order), dims,
          Out(np.float16, a.shape))


@pytest.mark.parametrize("shifts,dims", [([1], []), ([-7], []), ([2], [1]), ([1, -2], [0, -1]),
                                         ([3, 5], [1, 1]), ([0], [2])])
@pytest.mark.parametrize("orders", [(None, None), (CL, None), (None, CL), (CL, CL)])
def test_roll(shifts, dims, orders):
    a = rand((2, 3, 4, 5), np.float32)
    check("aten::roll.out", T(a, dim_order=orders[0]), shifts, dims,
          Out(np.float32, a.shape, dim_order=orders[1]))


@pytest.mark.parametrize("name", ["aten::tril.out", "aten::triu.out"])
@pytest.mark.parametrize("diagonal", [0, 1, -1, 3, -5, 100, -100])
def test_tril_triu(name, diagonal):
    a = rand((2, 4, 5), np.int32)
    check(name, a, diagonal, Out(np.int32, a.shape))
    b = rand((2, 3, 4, 5), np.bool_)
    check(name, T(b, dim_order=CL), diagonal, Out(np.bool_, b.shape, dim_order=CL))
    check(name, T(rand((3, 6)), bf16=True), diagonal, Out("bfloat16", (3, 6)))
    check(name, rand((0, 3), np.float64), diagonal, Out(np.float64, (0, 3)))


@pytest.mark.parametrize("pad", [[1, 2], [0, 0, 2, 1], [-1, 2, 1, -1], [1, 1, 1, 1, 1, 1],
                                 [-3, 0]])
def test_constant_pad_nd(pad):
    a = rand((1, 2, 3, 4), np.float32)
    shape = list(a.shape)
    for k in range(len(pad) // 2):
        shape[3 - k] += pad[2 * k] + pad[2 * k + 1]
    check("aten::constant_pad_nd.out", a, pad, 1.5, Out(np.float32, tuple(shape)))
    check("aten::constant_pad_nd.out", T(a.astype(np.int64), dim_order=CL), pad, -3,
          Out(np.int64, tuple(shape), dim_order=CL))
    check("aten::constant_pad_nd.out", T(a, bf16=True), pad, 0.25, Out("bfloat16", tuple(shape)))
    check("aten::constant_pad_nd.out", a.astype(np.uint8), pad, 7, Out(np.uint8, tuple(shape)))


@pytest.mark.parametrize("order", [None, CL])
def test_pixel_shuffle_unshuffle(order):
    a = rand((2, 8, 3, 5), np.float32)
    check("aten::pixel_shuffle.out", T(a, dim_order=order), 2,
          Out(np.float32, (2, 2, 6, 10), dim_order=order))
    b = rand((2, 3, 4, 6), np.float16)
    check("aten::pixel_unshuffle.out", T(b, dim_order=order), 2,
          Out(np.float16, (2, 12, 2, 3), dim_order=order))


# ---- slice / select scatter, et_copy_index --------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.bool_, np.int16, "bfloat16"])
def test_slice_select_scatter(dtype):
    x = values((3, 8), dtype)
    check("aten::slice_scatter.out", arg(x, dtype), arg(values((3, 3), dtype), dtype), 1, 1, 7, 2,
          Out(dtype, (3, 8)))
    check("aten::slice_scatter.out", arg(x, dtype), arg(values((3, 0), dtype), dtype), -1, 5, 2,
          1, Out(dtype, (3, 8)))
    check("aten::select_scatter.out", arg(x, dtype), arg(values((3,), dtype), dtype), 1, -1,
          Out(dtype, (3, 8)))
    y = values((2, 3, 4, 5), dtype)
    check("aten::select_scatter.out", arg(y, dtype, CL), arg(values((2, 4, 5), dtype), dtype),
          1, 2, Out(dtype, (2, 3, 4, 5), dim_order=CL))


def test_et_copy_index():
    src = rand((3, 4), np.float32)
    check("executorch_prim::et_copy_index.tensor", Out(np.float32, (5, 3, 4)), src, 2)
    check("executorch_prim::et_copy_index.tensor",
          Out(np.float32, (1, 3, 4), dynamic=True, capacity=(8, 3, 4)), src, 4)


# ---- performance --------------------------------------------------------------------------


def test_perf_copies():
    a = rand((4096, 4096), np.float32)  # 64 MiB
    nbytes = 2 * a.nbytes
    perf("permute_copy f32 [4096,4096] (1,0)", "aten::permute_copy.out", a, [1, 0],
         Out(np.float32, (4096, 4096)), nbytes=nbytes)
    perf("alias_copy f32 [4096,4096] contiguous", "aten::alias_copy.out", a,
         Out(np.float32, (4096, 4096)), nbytes=nbytes)
    b = rand((64, 256, 32, 32), np.float32)  # 64 MiB
    perf("alias_copy f32 [64,256,32,32] -> channels last", "aten::alias_copy.out", b,
         Out(np.float32, b.shape, dim_order=CL), nbytes=2 * b.nbytes)
    half = rand((4096, 2048), np.float32)
    perf("cat f32 2x[4096,2048] dim 1", "aten::cat.out", [half, half], 1,
         Out(np.float32, (4096, 4096)), nbytes=nbytes)
    perf("slice_copy f32 [4096,4096] -> [4096,2048]", "aten::slice_copy.Tensor_out", a, 1, 0,
         2048, 1, Out(np.float32, (4096, 2048)), nbytes=a.nbytes)

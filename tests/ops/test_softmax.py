"""_softmax and _log_softmax against float64 NumPy: contiguous rows,
strided dims, channels-last in and out, every floating dtype (f16 / bf16
computed in float), long rows over threads, -inf masks, NaN rows, 0-dim
and empty tensors, argument errors."""

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, cast, check, check_error, dtype_of, normal, rand,
                     reference, tensor, value)

FLOATS = [np.float32, np.float16, BF16, np.float64]
TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14), "float16": (2e-3, 2e-3),
       BF16: (1e-2, 1e-2)}


def np_softmax(x, dim):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=dim, keepdims=True))
        return e / e.sum(axis=dim, keepdims=True)


def np_log_softmax(x, dim):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = x.max(axis=dim, keepdims=True)
        return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


@reference("aten::_softmax.out")
def softmax_model(a, dim, half_to_float, out):
    x = value(a)
    return cast(np_softmax(x, dim if x.ndim else None), dtype_of(out))


@reference("aten::_log_softmax.out")
def log_softmax_model(a, dim, half_to_float, out):
    x = value(a)
    return cast(np_log_softmax(x, dim if x.ndim else None), dtype_of(out))


CASES = [("aten::_softmax.out", np_softmax), ("aten::_log_softmax.out", np_log_softmax)]


@pytest.mark.parametrize("name", ["_softmax", "_log_softmax"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim", [((4, 10), 1), ((4, 10), 0), ((2, 3, 4, 5), -1),
                                       ((2, 3, 4, 5), 1), ((3, 5000), -1), ((5000, 3), 0),
                                       ((7,), 0), ((), 0), ((64, 3000), 1), ((5, 128), -1),
                                       ((3, 768), -1)])
def test_softmax(device, name, dtype, shape, dim):
    x = rand(shape, low=-8, high=8)
    check(device, f"aten::{name}.out", tensor(x, dtype), dim, False, Out(dtype, shape), tol=TOL)


@pytest.mark.parametrize("name,ref", CASES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_softmax_every_dim(device, name, ref, dim):
    x = normal((3, 40, 37), scale=4)
    check(device, name, x, dim, False, Out(np.float32, x.shape), expect=ref(x, dim),
          tol=(1e-5, 1e-6))


@pytest.mark.parametrize("name,ref", CASES)
@pytest.mark.parametrize("dim", [1, -1])
def test_softmax_channels_last(device, name, ref, dim):
    x = normal((2, 5, 3, 4))
    check(device, name, T(x, dim_order=CL), dim, False, Out(np.float32, x.shape, dim_order=CL),
          expect=ref(x, dim), tol=(1e-5, 1e-6))
    check(device, name, T(x, dim_order=CL), dim, False, Out(np.float32, x.shape),
          expect=ref(x, dim), tol=(1e-5, 1e-6))


@pytest.mark.parametrize("name", ["_softmax", "_log_softmax"])
@pytest.mark.parametrize("dim", [1, -1, 2])
def test_softmax_channels_last_and_special(device, name, dim):
    x = rand((2, 3, 4, 5), low=-8, high=8)
    check(device, f"aten::{name}.out", T(x, dim_order=CL), dim, False, Out(np.float32, x.shape),
          tol=TOL)
    check(device, f"aten::{name}.out", T(x, dim_order=CL), dim, False,
          Out(np.float32, x.shape, dim_order=CL), tol=TOL)
    y = x.copy()
    y[0, 1, 2, 3] = -np.inf
    y[1, 0, 0, 0] = np.nan
    check(device, f"aten::{name}.out", y, dim, False, Out(np.float32, x.shape), tol=TOL)
    check(device, f"aten::{name}.out", rand((0, 4)), 1, False, Out(np.float32, [0, 4]))


@pytest.mark.parametrize("name,ref", CASES)
def test_softmax_half_types_and_double(device, name, ref):
    x = normal((4, 8, 33))
    for dim in (-1, 1):
        check(device, name, x.astype(np.float16), dim, False, Out(np.float16, x.shape),
              expect=ref(x.astype(np.float16), dim), tol=(2e-3, 2e-3))
        check(device, name, T(x, bf16=True), dim, False, Out(BF16, x.shape),
              expect=ref(bf16(x), dim), tol=(1e-2, 1e-2))
        check(device, name, x.astype(np.float64), dim, False, Out(np.float64, x.shape),
              expect=ref(x, dim), tol=(1e-12, 1e-14))


def test_softmax_attention_mask_and_large_values(device):
    x = normal((2, 4, 16, 16), scale=30)
    mask = np.triu(np.ones((16, 16), bool), 1)
    x[..., mask] = -np.inf
    r = check(device, "aten::_softmax.out", x, -1, False, Out(np.float32, x.shape),
              expect=np_softmax(x, -1), tol=(1e-5, 1e-7), num_threads=2)
    assert (r[0][..., mask] == 0).all()
    np.testing.assert_allclose(r[0].sum(-1), 1, rtol=1e-5)
    r = check(device, "aten::_log_softmax.out", x, -1, False, Out(np.float32, x.shape),
              expect=np_log_softmax(x, -1), tol=(1e-5, 1e-5))
    assert np.isneginf(r[0][..., mask]).all()


def test_softmax_long_rows_threads(device):
    x = normal((64, 5000), scale=3)
    check(device, "aten::_softmax.out", x, 1, False, Out(np.float32, x.shape),
          expect=np_softmax(x, 1), tol=(2e-5, 1e-9), num_threads=4)
    check(device, "aten::_softmax.out", x, 0, False, Out(np.float32, x.shape),
          expect=np_softmax(x, 0), tol=(2e-5, 1e-9), num_threads=4)


def test_softmax_nan_row_and_edge_shapes(device):
    x = np.array([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]], np.float32)
    check(device, "aten::_softmax.out", x, 1, False, Out(np.float32, [2, 3]),
          expect=np.concatenate([np.full((1, 3), np.nan), np_softmax(x[1:], 1)]), tol=(1e-6, 0))
    check(device, "aten::_softmax.out", np.array(5.0, np.float32), 0, False, Out(np.float32, []),
          expect=np.array(1.0))
    check(device, "aten::_log_softmax.out", np.array(5.0, np.float32), -1, False,
          Out(np.float32, []), expect=np.array(0.0))
    check(device, "aten::_softmax.out", np.zeros((0, 4), np.float32), 1, False,
          Out(np.float32, [0, 4]), expect=np.zeros((0, 4)))


def test_softmax_errors(device):
    x = np.zeros((2, 3), np.float32)
    check_error(device, "aten::_softmax.out", x, 1, True, Out(np.float32, [2, 3]), exc=ValueError)
    check_error(device, "aten::_softmax.out", x, 1, False, Out(np.float64, [2, 3]),
                exc=ValueError)
    check_error(device, "aten::_softmax.out", x.astype(np.int32), 1, False, Out(np.int32, [2, 3]),
                exc=ValueError)
    check_error(device, "aten::_softmax.out", x, 2, False, Out(np.float32, [2, 3]),
                exc=IndexError)


@pytest.mark.parametrize("name,ref", CASES)
@pytest.mark.parametrize("width", [12, 13, 1024, 1028, 2049, 8192, 8196, 16384, 16392])
@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_softmax_row_widths(device, name, ref, width, dtype):
    # Each of the CUDA kernel's paths: lines held in registers by a warp or
    # by the block, in 16-byte packs or single elements, and lines too long
    # for registers; the same lines on the CPU.
    x = normal((3, width), scale=3)
    x[1, width // 2] = -np.inf
    expect = ref(bf16(x) if dtype == BF16 else x, -1)
    tol = (1e-2, 1e-2) if dtype == BF16 else (1e-5, 1e-7)
    check(device, name, tensor(x, dtype), -1, False, Out(dtype, x.shape), expect=expect, tol=tol)


# ---- safe softmax (pterun::safe_softmax.out, the executor's fusion of torch's decomposed
# attention softmax): lines of nothing but -inf give zeros ---------------------------------------

def np_safe_softmax(x, dim):
    y = np_softmax(x, dim)
    dead = np.all(np.isneginf(x), axis=dim, keepdims=True)
    return np.where(dead, 0.0, y)


@reference("pterun::safe_softmax.out")
def safe_softmax_model(a, dim, half_to_float, out):
    x = value(a)
    return cast(np_safe_softmax(x, dim if x.ndim else None), dtype_of(out))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim", [((6, 16), 1), ((6, 16), 0), ((2, 4, 8, 8), -1),
                                       ((4, 3000), -1), ((3000, 4), 0), ((2, 4, 64, 64), -1)])
def test_safe_softmax_zeroes_dead_lines(device, dtype, shape, dim):
    # Masked scores as a causal mask writes them, a dead line (all -inf),
    # a line with a NaN (stays NaN, as the decomposition leaves it) and a
    # line with one live element.
    x = rand(shape, low=-8, high=8)
    lines = np.moveaxis(x, dim, -1)
    lines[..., 0, :] = -np.inf
    lines[..., 1, 1::2] = -np.inf
    lines[..., 2, 3] = np.nan
    lines[..., 3, 1:] = -np.inf
    x = np.moveaxis(lines, -1, dim)
    for name in ("pterun::safe_softmax.out", "aten::_softmax.out"):
        got = check(device, name, tensor(x, dtype), dim, False, Out(dtype, shape), tol=TOL)[0]
        dead = np.moveaxis(got, dim, -1)[..., 0, :]
        assert (np.all(dead == 0) if name.startswith("pterun") else np.all(np.isnan(dead)))


def test_safe_softmax_errors(device):
    check_error(device, "pterun::safe_softmax.out", np.zeros((2, 3), np.int64), 1, False,
                Out(np.int64, (2, 3)), exc=ValueError, match="pterun::safe_softmax.out: input")

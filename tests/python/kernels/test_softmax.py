"""_softmax and _log_softmax against NumPy: contiguous rows, strided dims,
channels-last, every floating dtype, -inf masks and errors."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(1)
CL = (0, 2, 3, 1)


def np_softmax(x, dim):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def np_log_softmax(x, dim):
    x = x.astype(np.float64)
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


CASES = [("aten::_softmax.out", np_softmax), ("aten::_log_softmax.out", np_log_softmax)]


@pytest.mark.parametrize("name,ref", CASES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_softmax_every_dim(name, ref, dim):
    x = (RNG.standard_normal((3, 40, 37)) * 4).astype(np.float32)
    (r,) = call_kernel(name, x, dim, False, Out(np.float32, x.shape))
    np.testing.assert_allclose(r, ref(x, dim), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,ref", CASES)
@pytest.mark.parametrize("dim", [1, -1])
def test_softmax_channels_last(name, ref, dim):
    x = RNG.standard_normal((2, 5, 3, 4)).astype(np.float32)
    (r,) = call_kernel(name, T(x, dim_order=CL), dim, False, Out(np.float32, x.shape, dim_order=CL))
    np.testing.assert_allclose(r, ref(x, dim), rtol=1e-5, atol=1e-6)
    (r,) = call_kernel(name, T(x, dim_order=CL), dim, False, Out(np.float32, x.shape))
    np.testing.assert_allclose(r, ref(x, dim), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,ref", CASES)
def test_softmax_half_types_and_double(name, ref):
    x = RNG.standard_normal((4, 8, 33)).astype(np.float32)
    for dim in (-1, 1):
        (r,) = call_kernel(name, x.astype(np.float16), dim, False, Out(np.float16, x.shape))
        np.testing.assert_allclose(r.astype(np.float32), ref(x.astype(np.float16), dim),
                                   rtol=2e-3, atol=2e-3)
        (r,) = call_kernel(name, T(x, bf16=True), dim, False, Out("bfloat16", x.shape))
        xb = from_bf16_bits(to_bf16_bits(x))
        np.testing.assert_allclose(r, ref(xb, dim), rtol=1e-2, atol=1e-2)
        (r,) = call_kernel(name, x.astype(np.float64), dim, False, Out(np.float64, x.shape))
        np.testing.assert_allclose(r, ref(x, dim), rtol=1e-12, atol=1e-14)


def test_softmax_attention_mask_and_large_values():
    x = (RNG.standard_normal((2, 4, 16, 16)) * 30).astype(np.float32)
    mask = np.triu(np.ones((16, 16), bool), 1)
    x[..., mask] = -np.inf
    (r,) = call_kernel("aten::_softmax.out", x, -1, False, Out(np.float32, x.shape),
                       num_threads=2)
    np.testing.assert_allclose(r, np_softmax(x, -1), rtol=1e-5, atol=1e-7)
    assert (r[..., mask] == 0).all()
    np.testing.assert_allclose(r.sum(-1), 1, rtol=1e-5)
    (r,) = call_kernel("aten::_log_softmax.out", x, -1, False, Out(np.float32, x.shape))
    assert np.isneginf(r[..., mask]).all()


def test_softmax_long_rows_threads():
    x = (RNG.standard_normal((64, 5000)) * 3).astype(np.float32)
    (r,) = call_kernel("aten::_softmax.out", x, 1, False, Out(np.float32, x.shape), num_threads=4)
    np.testing.assert_allclose(r, np_softmax(x, 1), rtol=2e-5, atol=1e-9)
    (r,) = call_kernel("aten::_softmax.out", x, 0, False, Out(np.float32, x.shape), num_threads=4)
    np.testing.assert_allclose(r, np_softmax(x, 0), rtol=2e-5, atol=1e-9)


def test_softmax_nan_row_and_edge_shapes():
    x = np.array([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]], np.float32)
    (r,) = call_kernel("aten::_softmax.out", x, 1, False, Out(np.float32, [2, 3]))
    assert np.isnan(r[0]).all()
    np.testing.assert_allclose(r[1], np_softmax(x[1:], 1)[0], rtol=1e-6)
    (r,) = call_kernel("aten::_softmax.out", np.array(5.0, np.float32), 0, False,
                       Out(np.float32, []))
    assert r == 1.0
    (r,) = call_kernel("aten::_log_softmax.out", np.array(5.0, np.float32), -1, False,
                       Out(np.float32, []))
    assert r == 0.0
    (r,) = call_kernel("aten::_softmax.out", np.zeros((0, 4), np.float32), 1, False,
                       Out(np.float32, [0, 4]))
    assert r.shape == (0, 4)


def test_softmax_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError):
        call_kernel("aten::_softmax.out", x, 1, True, Out(np.float32, [2, 3]))
    with pytest.raises(ValueError):
        call_kernel("aten::_softmax.out", x, 1, False, Out(np.float64, [2, 3]))
    with pytest.raises(ValueError):
        call_kernel("aten::_softmax.out", x.astype(np.int32), 1, False, Out(np.int32, [2, 3]))
    with pytest.raises(IndexError):
        call_kernel("aten::_softmax.out", x, 2, False, Out(np.float32, [2, 3]))

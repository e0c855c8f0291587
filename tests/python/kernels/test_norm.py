"""native_layer_norm, _native_batch_norm_legit_no_training and
native_group_norm against NumPy, in every floating dtype and layout."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(2)
CL = (0, 2, 3, 1)


def bf16_round(a):
    return from_bf16_bits(to_bf16_bits(np.asarray(a, dtype=np.float32)))


def np_layer_norm(x, k, w, b, eps):
    axes = tuple(range(x.ndim - k, x.ndim))
    x = x.astype(np.float64)
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    y = (x - mean) * rstd
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mean, rstd


def layer_norm(x, shape, w, b, eps, dtype=np.float32, order=None, bf16=False):
    k = len(shape)
    stat = list(x.shape[: x.ndim - k]) + [1] * k
    wrap = (lambda a: None if a is None else T(a, bf16=True)) if bf16 else (lambda a: a)
    odt = "bfloat16" if bf16 else dtype
    return call_kernel("aten::native_layer_norm.out", T(x, dim_order=order, bf16=bf16), shape,
                       wrap(w), wrap(b), eps, Out(odt, x.shape, dim_order=order),
                       Out(odt, stat), Out(odt, stat))


@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("k", [1, 2])
def test_layer_norm_affine_variants(affine, k):
    x = (RNG.standard_normal((3, 5, 64)) * 2 + 1).astype(np.float32)
    shape = list(x.shape[-k:])
    w = RNG.standard_normal(shape).astype(np.float32) if affine[0] else None
    b = RNG.standard_normal(shape).astype(np.float32) if affine[1] else None
    out, mean, rstd = layer_norm(x, shape, w, b, 1e-5)
    ry, rm, rr = np_layer_norm(x, k, w, b, 1e-5)
    np.testing.assert_allclose(out, ry, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean, rm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, rr, rtol=1e-4)
    assert mean.shape == rm.shape


def test_layer_norm_gpt_shape_threads_and_offset_data():
    # Large offset: two-pass variance must not lose precision.
    x = (RNG.standard_normal((2, 64, 768)) + 1000).astype(np.float32)
    w = RNG.standard_normal(768).astype(np.float32)
    b = RNG.standard_normal(768).astype(np.float32)
    out, mean, rstd = call_kernel("aten::native_layer_norm.out", x, [768], w, b, 1e-5,
                                  Out(np.float32, x.shape), Out(np.float32, [2, 64, 1]),
                                  Out(np.float32, [2, 64, 1]), num_threads=4)
    ry, rm, rr = np_layer_norm(x, 1, w, b, 1e-5)
    np.testing.assert_allclose(out, ry, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(rstd, rr, rtol=2e-3)


def test_layer_norm_half_double_and_channels_last():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    w = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    b = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    ry, _, _ = np_layer_norm(x, 3, w, b, 1e-5)
    out, _, _ = layer_norm(x, [3, 4, 5], w, b, 1e-5, order=CL)
    np.testing.assert_allclose(out, ry, rtol=1e-4, atol=1e-5)
    out, _, _ = layer_norm(x.astype(np.float64), [3, 4, 5], w.astype(np.float64),
                           b.astype(np.float64), 1e-5, dtype=np.float64)
    np.testing.assert_allclose(out, ry, rtol=1e-10)
    x16, w16, b16 = (a.astype(np.float16) for a in (x, w, b))
    out, _, _ = layer_norm(x16, [5], w16[0, 0], b16[0, 0], 1e-5, dtype=np.float16)
    r16, _, _ = np_layer_norm(x16, 1, w16[0, 0].astype(np.float64), b16[0, 0], 1e-5)
    np.testing.assert_allclose(out.astype(np.float64), r16, rtol=5e-3, atol=5e-3)
    out, _, _ = layer_norm(x, [5], w[0, 0], b[0, 0], 1e-5, bf16=True)
    rb, _, _ = np_layer_norm(bf16_round(x), 1, bf16_round(w[0, 0]), bf16_round(b[0, 0]), 1e-5)
    np.testing.assert_allclose(out, rb, rtol=3e-2, atol=3e-2)


def test_layer_norm_errors_and_empty():
    x = np.ones((2, 4), np.float32)
    with pytest.raises(ValueError):
        layer_norm(x, [3], None, None, 1e-5)
    with pytest.raises(ValueError):
        layer_norm(x, [], None, None, 1e-5)
    with pytest.raises(ValueError):
        layer_norm(x, [4], np.ones(3, np.float32), None, 1e-5)
    with pytest.raises(ValueError):
        layer_norm(x, [4], np.ones(4, np.float64), None, 1e-5)
    out, mean, rstd = layer_norm(np.zeros((0, 4), np.float32), [4], None, None, 1e-5)
    assert out.shape == (0, 4) and mean.shape == (0, 1)


def np_batch_norm(x, w, b, mean, var, eps):
    shape = [1, -1] + [1] * (x.ndim - 2)
    y = (x.astype(np.float64) - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


def batch_norm(x, w, b, mean, var, eps, dtype=np.float32, order=None, bf16=False):
    wrap = (lambda a: None if a is None else T(a, bf16=True)) if bf16 else (lambda a: a)
    odt = "bfloat16" if bf16 else dtype
    return call_kernel("aten::_native_batch_norm_legit_no_training.out",
                       T(x, dim_order=order, bf16=bf16), wrap(w), wrap(b), wrap(mean), wrap(var),
                       0.1, eps, Out(odt, x.shape, dim_order=order),
                       Out(odt, [5], dynamic=True), Out(odt, [5], dynamic=True))


@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_layouts(order, affine):
    x = RNG.standard_normal((2, 6, 5, 7)).astype(np.float32)
    mean = RNG.standard_normal(6).astype(np.float32)
    var = RNG.uniform(0.5, 2, 6).astype(np.float32)
    w = RNG.standard_normal(6).astype(np.float32) if affine else None
    b = RNG.standard_normal(6).astype(np.float32) if affine else None
    out, o1, o2 = batch_norm(x, w, b, mean, var, 1e-5, order=order)
    np.testing.assert_allclose(out, np_batch_norm(x, w, b, mean, var, 1e-5), rtol=1e-5,
                               atol=1e-5)
    assert o1.shape == (0,) and o2.shape == (0,)


def test_batch_norm_ranks_and_dtypes():
    for shape in [(4, 3), (2, 3, 9), (1, 3, 2, 2, 2)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        mean, var = RNG.standard_normal(3).astype(np.float32), np.full(3, 0.7, np.float32)
        w, b = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
        (out, _, _) = batch_norm(x, w, b, mean, var, 1e-3)
        np.testing.assert_allclose(out, np_batch_norm(x, w, b, mean, var, 1e-3), rtol=1e-5,
                                   atol=1e-5)
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    mean, var = RNG.standard_normal(3).astype(np.float32), np.full(3, 0.7, np.float32)
    w, b = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    out, _, _ = batch_norm(*(a.astype(np.float16) for a in (x, w, b, mean, var)), 1e-3,
                           dtype=np.float16)
    ref = np_batch_norm(*(a.astype(np.float16).astype(np.float64) for a in (x, w, b, mean, var)),
                        1e-3)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=5e-3, atol=5e-3)
    out, _, _ = batch_norm(x, w, b, mean, var, 1e-3, bf16=True)
    ref = np_batch_norm(*(bf16_round(a) for a in (x, w, b, mean, var)), 1e-3)
    np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2)


def test_batch_norm_errors():
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(ValueError):
        batch_norm(x, None, None, np.zeros(4, np.float32), np.ones(3, np.float32), 1e-5)
    with pytest.raises(ValueError):
        batch_norm(x, None, None, np.zeros(3, np.float64), np.ones(3, np.float32), 1e-5)
    with pytest.raises(ValueError):
        batch_norm(np.ones(3, np.float32), None, None, np.zeros(3, np.float32),
                   np.ones(3, np.float32), 1e-5)


def np_group_norm(x, w, b, groups, eps):
    n, c = x.shape[:2]
    g = x.astype(np.float64).reshape(n, groups, -1)
    mean = g.mean(-1)
    rstd = 1 / np.sqrt(g.var(-1) + eps)
    y = ((g - mean[..., None]) * rstd[..., None]).reshape(x.shape)
    shape = [1, c] + [1] * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y, mean, rstd


@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("groups", [1, 2, 8])
def test_group_norm(order, groups):
    x = (RNG.standard_normal((2, 8, 5, 6)) * 3 + 2).astype(np.float32)
    w = RNG.standard_normal(8).astype(np.float32)
    b = RNG.standard_normal(8).astype(np.float32)
    out, mean, rstd = call_kernel("aten::native_group_norm.out", T(x, dim_order=order), w, b, 2, 8,
                                  30, groups, 1e-5, Out(np.float32, x.shape, dim_order=order),
                                  Out(np.float32, [2, groups]), Out(np.float32, [2, groups]))
    ry, rm, rr = np_group_norm(x, w, b, groups, 1e-5)
    np.testing.assert_allclose(out, ry, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mean, rm, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, rr, rtol=1e-4)


def test_group_norm_no_affine_3d_and_errors():
    x = RNG.standard_normal((3, 6, 10)).astype(np.float64)
    out, _, _ = call_kernel("aten::native_group_norm.out", x, None, None, 3, 6, 10, 3, 1e-6,
                            Out(np.float64, x.shape), Out(np.float64, [3, 3]),
                            Out(np.float64, [3, 3]))
    np.testing.assert_allclose(out, np_group_norm(x, None, None, 3, 1e-6)[0], rtol=1e-10)
    with pytest.raises(ValueError):
        call_kernel("aten::native_group_norm.out", x, None, None, 3, 6, 10, 4, 1e-6,
                    Out(np.float64, x.shape), Out(np.float64, [3, 4]), Out(np.float64, [3, 4]))
    with pytest.raises(ValueError):
        call_kernel("aten::native_group_norm.out", x, None, None, 3, 6, 11, 3, 1e-6,
                    Out(np.float64, x.shape), Out(np.float64, [3, 3]), Out(np.float64, [3, 3]))

"""mm, bmm, addmm and linear against NumPy: layouts, dtypes, broadcasting,
empty shapes and argument errors."""

import numpy as np
import pytest

from pterun._testing import Out, T, call_kernel, from_bf16_bits, to_bf16_bits

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -100), min(info.max, 100)
        return RNG.integers(lo, hi, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def bf16(a):
    """a rounded to bfloat16, as float32."""
    return from_bf16_bits(to_bf16_bits(a)).reshape(np.shape(a))


# Shapes on both sides of the size where gemm() moves from its own small
# kernel to oneDNN (2^18 multiply-adds).
SIZES = {"small": (6, 9, 5), "large": (64, 80, 72)}


def ref_mm(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def transposed_2d(a):
    """a stored column-major."""
    return T(a, dim_order=(1, 0))


# --------------------------------------------------------------------- mm


@pytest.mark.parametrize("m,k,n", [(8, 32, 64), (1, 5, 7), (3, 1, 4), (17, 33, 1), (64, 48, 80)])
def test_mm_f32_matches_numpy(m, k, n):
    a, b = rand(m, k), rand(k, n)
    (out,) = call_kernel("aten::mm.out", a, b, Out(np.float32, (m, n)))
    np.testing.assert_allclose(out, ref_mm(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a_order,b_order,out_order", [
    ((1, 0), (0, 1), (0, 1)), ((0, 1), (1, 0), (0, 1)), ((1, 0), (1, 0), (0, 1)),
    ((0, 1), (0, 1), (1, 0)), ((1, 0), (1, 0), (1, 0)),
])
@pytest.mark.parametrize("size", SIZES)
def test_mm_reads_and_writes_any_2d_layout(a_order, b_order, out_order, size):
    m, k, n = SIZES[size]
    a, b = rand(m, k), rand(k, n)
    (out,) = call_kernel("aten::mm.out", T(a, dim_order=a_order), T(b, dim_order=b_order),
                         Out(np.float32, (m, n), dim_order=out_order))
    np.testing.assert_allclose(out, ref_mm(a, b), rtol=1e-4, atol=1e-4)


def test_mm_large_two_threads():
    a, b = rand(130, 257), rand(257, 96)
    (out,) = call_kernel("aten::mm.out", a, b, Out(np.float32, (130, 96)), num_threads=2)
    np.testing.assert_allclose(out, ref_mm(a, b), rtol=1e-4, atol=1e-4)


def test_mm_float64():
    a, b = rand(7, 11, dtype=np.float64), rand(11, 3, dtype=np.float64)
    (out,) = call_kernel("aten::mm.out", transposed_2d(a), b, Out(np.float64, (7, 3)))
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)


@pytest.mark.parametrize("size", SIZES)
def test_mm_float16_computes_in_float32(size):
    m, k, n = SIZES[size]
    a, b = rand(m, k, dtype=np.float16), rand(k, n, dtype=np.float16)
    (out,) = call_kernel("aten::mm.out", a, T(b, dim_order=(1, 0)), Out(np.float16, (m, n)))
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(out.astype(np.float32), expected.astype(np.float32),
                               rtol=2e-3, atol=1e-2)


@pytest.mark.parametrize("size", SIZES)
def test_mm_bfloat16_computes_in_float32(size):
    m, k, n = SIZES[size]
    a, b = bf16(rand(m, k)), bf16(rand(k, n))
    (out,) = call_kernel("aten::mm.out", T(a, bf16=True), T(b, bf16=True, dim_order=(1, 0)),
                         Out("bfloat16", (m, n), dim_order=(1, 0)))
    np.testing.assert_allclose(out, bf16(a @ b), rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_mm_integers_wrap_like_same_dtype_arithmetic(dtype):
    a, b = rand(4, 30, dtype=dtype), rand(30, 5, dtype=dtype)
    (out,) = call_kernel("aten::mm.out", a, b, Out(dtype, (4, 5)))
    # Exact product modulo 2^bits, then reinterpreted in the dtype.
    exact = a.astype(object) @ b.astype(object)
    bits = np.dtype(dtype).itemsize * 8
    wrapped = np.array([[int(v) % (1 << bits) for v in row] for row in exact], dtype=np.uint64)
    expected = wrapped.astype(np.dtype(f"u{bits // 8}")).view(dtype)
    np.testing.assert_array_equal(out, expected)


def test_mm_int64_large_values_wrap():
    a = np.array([[2**62, 3]], dtype=np.int64)
    b = np.array([[4], [5]], dtype=np.int64)
    (out,) = call_kernel("aten::mm.out", a, b, Out(np.int64, (1, 1)))
    assert out[0, 0] == 15  # 2^64 wraps to 0


@pytest.mark.parametrize("m,k,n", [(0, 4, 3), (3, 0, 5), (2, 3, 0)])
def test_mm_empty(m, k, n):
    a, b = rand(m, k), rand(k, n)
    (out,) = call_kernel("aten::mm.out", a, b, Out(np.float32, (m, n)))
    np.testing.assert_array_equal(out, np.zeros((m, n), np.float32))


def test_mm_resizes_dynamic_out():
    a, b = rand(3, 4), rand(4, 2)
    (out,) = call_kernel("aten::mm.out", a, b, Out(np.float32, (8, 8), dynamic=True))
    assert out.shape == (3, 2)
    np.testing.assert_allclose(out, ref_mm(a, b), rtol=1e-5, atol=1e-5)


def test_mm_errors():
    with pytest.raises(ValueError):
        call_kernel("aten::mm.out", rand(2, 3), rand(4, 2), Out(np.float32, (2, 2)))
    with pytest.raises(ValueError):
        call_kernel("aten::mm.out", rand(2, 3, 1), rand(3, 2), Out(np.float32, (2, 2)))
    with pytest.raises(ValueError):
        call_kernel("aten::mm.out", rand(2, 3), rand(3, 2, dtype=np.float64),
                    Out(np.float32, (2, 2)))
    with pytest.raises(ValueError):
        call_kernel("aten::mm.out", np.ones((2, 2), bool), np.ones((2, 2), bool),
                    Out(np.bool_, (2, 2)))
    with pytest.raises(NotImplementedError):  # static out of the wrong shape
        call_kernel("aten::mm.out", rand(2, 3), rand(3, 2), Out(np.float32, (3, 3)))


# --------------------------------------------------------------------- bmm


@pytest.mark.parametrize("a_order", [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 1, 0)])
@pytest.mark.parametrize("out_order", [(1, 0, 2), (0, 2, 1), (2, 0, 1)])
@pytest.mark.parametrize("size", SIZES)
def test_bmm_any_dim_order(a_order, out_order, size):
    m, k, n = SIZES[size]
    a, b = rand(3, m, k), rand(3, k, n)
    (out,) = call_kernel("aten::bmm.out", T(a, dim_order=a_order), T(b, dim_order=(2, 0, 1)),
                         Out(np.float32, (3, m, n), dim_order=out_order))
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float16])
def test_bmm_dtypes(dtype):
    a, b = rand(3, 4, 8, dtype=dtype), rand(3, 8, 2, dtype=dtype)
    (out,) = call_kernel("aten::bmm.out", a, b, Out(dtype, (3, 4, 2)))
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=2e-3, atol=2e-2)


def test_bmm_attention_shapes_two_threads():
    q, kt = rand(8, 16, 64), rand(8, 64, 16)
    (out,) = call_kernel("aten::bmm.out", q, kt, Out(np.float32, (8, 16, 16)), num_threads=2)
    np.testing.assert_allclose(out, np.matmul(q, kt), rtol=1e-4, atol=1e-4)


def test_bmm_errors():
    with pytest.raises(ValueError):  # batch sizes differ
        call_kernel("aten::bmm.out", rand(2, 3, 4), rand(3, 4, 5), Out(np.float32, (2, 3, 5)))
    with pytest.raises(ValueError):  # 2-D
        call_kernel("aten::bmm.out", rand(3, 4), rand(4, 5), Out(np.float32, (3, 5)))


def test_bmm_empty_batch():
    (out,) = call_kernel("aten::bmm.out", rand(0, 3, 4), rand(0, 4, 2), Out(np.float32, (0, 3, 2)))
    assert out.shape == (0, 3, 2)


# --------------------------------------------------------------------- addmm


@pytest.mark.parametrize("self_shape", ["n", "1n", "m1", "mn", "", "1", "11"])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (1, -1.5), (2, 1)])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("out_order", [(0, 1), (1, 0)])
def test_addmm_broadcasts_self(self_shape, beta, alpha, size, out_order):
    m, k, n = SIZES[size]
    shape = tuple({"m": m, "n": n, "1": 1}[c] for c in self_shape)
    s, a, b = rand(*shape), rand(m, k), rand(k, n)
    (out,) = call_kernel("aten::addmm.out", s, a, b, beta, alpha,
                         Out(np.float32, (m, n), dim_order=out_order))
    expected = beta * s.astype(np.float64) + alpha * ref_mm(a, b)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_addmm_beta_zero_ignores_nan_self():
    s = np.full((3,), np.nan, np.float32)
    a, b = rand(2, 4), rand(4, 3)
    (out,) = call_kernel("aten::addmm.out", s, a, b, 0, 1, Out(np.float32, (2, 3)))
    np.testing.assert_allclose(out, ref_mm(a, b), rtol=1e-5, atol=1e-5)


def test_addmm_transposed_weight_and_column_major_out():
    s, a, w = rand(6), rand(3, 10), rand(6, 10)  # linear: a @ w.T + s
    (out,) = call_kernel("aten::addmm.out", s, a, T(w.T.copy(), dim_order=(1, 0)), 1, 1,
                         Out(np.float32, (3, 6), dim_order=(1, 0)))
    np.testing.assert_allclose(out, ref_mm(a, w.T) + s, rtol=1e-5, atol=1e-5)


def test_addmm_mlp_shape_two_threads():
    s, a, b = rand(256), rand(64, 512), rand(512, 256)
    (out,) = call_kernel("aten::addmm.out", s, a, b, 1, 1, Out(np.float32, (64, 256)),
                         num_threads=2)
    np.testing.assert_allclose(out, ref_mm(a, b) + s, rtol=1e-4, atol=1e-4)


# Products of at most 16 columns (classifier heads) always take the own
# kernel: whole vectors of b in place, the last columns from a zero-padded
# panel; above 2^20 multiply-adds its row blocks are split over the threads.
@pytest.mark.parametrize("n", [1, 3, 8, 10, 15, 16])
@pytest.mark.parametrize("num_threads", [1, 2])
def test_addmm_narrow_products(n, num_threads):
    m, k = 601, 256
    s, a, b = rand(n), rand(m, k), rand(k, n)
    (out,) = call_kernel("aten::addmm.out", s, a, b, 1, 1, Out(np.float32, (m, n)),
                         num_threads=num_threads)
    np.testing.assert_allclose(out, ref_mm(a, b) + s, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("beta,alpha", [(0.5, 2.0), (0, 1)])
def test_addmm_narrow_product_scaled_into_column_major_out(beta, alpha):
    m, k, n = 37, 300, 10
    s, a, w = rand(m, n), rand(m, k), rand(n, k)
    (out,) = call_kernel("aten::addmm.out", s, a, T(w.T.copy(), dim_order=(1, 0)), beta, alpha,
                         Out(np.float32, (m, n), dim_order=(1, 0)))
    expected = beta * s.astype(np.float64) + alpha * ref_mm(a, w.T)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size", SIZES)
def test_addmm_bfloat16(size):
    m, k, n = SIZES[size]
    s, a, b = bf16(rand(n)), bf16(rand(m, k)), bf16(rand(k, n))
    (out,) = call_kernel("aten::addmm.out", T(s, bf16=True), T(a, bf16=True), T(b, bf16=True),
                         1, 1, Out("bfloat16", (m, n)))
    np.testing.assert_allclose(out, bf16(a @ b + s), rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("size", SIZES)
def test_addmm_float16_scaled(size):
    m, k, n = SIZES[size]
    s, a, b = rand(m, 1, dtype=np.float16), rand(m, k, dtype=np.float16), rand(k, n, dtype=np.float16)
    (out,) = call_kernel("aten::addmm.out", s, a, b, 0.5, 2.0, Out(np.float16, (m, n)))
    f = np.float32
    expected = 0.5 * s.astype(f) + 2.0 * (a.astype(f) @ b.astype(f))
    np.testing.assert_allclose(out.astype(f), expected, rtol=3e-3, atol=3e-2)


def test_addmm_int_scalars_wrap():
    s = np.array([100, -100], np.int8)
    a = np.array([[100, 100]], np.int8)
    b = np.array([[1, 2], [1, 2]], np.int8)
    (out,) = call_kernel("aten::addmm.out", s, a, b, 3, 2, Out(np.int8, (1, 2)))
    exact = 3 * s.astype(np.int64) + 2 * (a.astype(np.int64) @ b.astype(np.int64))
    np.testing.assert_array_equal(out, exact.astype(np.int8))


def test_addmm_k_zero_gives_scaled_self():
    s = rand(2, 3)
    (out,) = call_kernel("aten::addmm.out", s, rand(2, 0), rand(0, 3), 2, 1,
                         Out(np.float32, (2, 3)))
    np.testing.assert_allclose(out, 2 * s, rtol=1e-6)


def test_addmm_errors():
    with pytest.raises(ValueError):  # self does not broadcast
        call_kernel("aten::addmm.out", rand(3), rand(2, 4), rand(4, 5), 1, 1,
                    Out(np.float32, (2, 5)))
    with pytest.raises(ValueError):  # float alpha with integers
        i = np.ones((2, 2), np.int32)
        call_kernel("aten::addmm.out", i, i, i, 1, 0.5, Out(np.int32, (2, 2)))
    with pytest.raises(ValueError):  # mixed dtypes
        call_kernel("aten::addmm.out", rand(2, dtype=np.float64), rand(2, 2), rand(2, 2), 1, 1,
                    Out(np.float32, (2, 2)))


# --------------------------------------------------------------------- linear


@pytest.mark.parametrize("in_shape", [(7,), (3, 7), (2, 3, 7), (2, 2, 3, 7)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear(in_shape, with_bias):
    x, w = rand(*in_shape), rand(5, 7)
    bias = rand(5) if with_bias else None
    (out,) = call_kernel("aten::linear.out", x, w, bias, Out(np.float32, in_shape[:-1] + (5,)))
    expected = x.astype(np.float64) @ w.T.astype(np.float64) + (0 if bias is None else bias)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", SIZES)
def test_linear_unmergeable_leading_dims(size):
    m, k, n = SIZES[size]
    x, w, bias = rand(3, m, k), rand(n, k), rand(n)
    (out,) = call_kernel("aten::linear.out", T(x, dim_order=(1, 0, 2)), w, bias,
                         Out(np.float32, (3, m, n)))
    np.testing.assert_allclose(out, x @ w.T + bias, rtol=1e-4, atol=1e-4)


def test_linear_errors():
    with pytest.raises(ValueError):
        call_kernel("aten::linear.out", rand(3, 4), rand(5, 3), None, Out(np.float32, (3, 5)))
    with pytest.raises(ValueError):
        call_kernel("aten::linear.out", rand(3, 4), rand(5, 4), rand(4), Out(np.float32, (3, 5)))

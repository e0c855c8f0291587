"""mm, bmm, addmm and linear against NumPy: every dtype (f16 / bf16
accumulate in float32, integers wrap like same-dtype arithmetic), any
layout of each operand and of the out (transposed and strided), both
sides of the size where the CPU moves from its own small kernel to oneDNN,
narrow products, bias and alpha / beta broadcasting, empty and k = 0
products, threads, dynamic outs and argument errors."""

import numpy as np
import pytest

from harness import (BF16, Out, T, bf16, call_kernel, cast, check, check_error, cuda_only, dtype_of,
                     integers, is_float, normal, rand, reference, tensor, value)

DTYPES = [np.float32, np.float16, BF16, np.float64, np.int32, np.int64, np.int8, np.uint8]

# Shapes on both sides of the size where the CPU's gemm() moves from its
# own small kernel to oneDNN (2^18 multiply-adds).
SIZES = {"small": (6, 9, 5), "large": (64, 80, 72)}


def values(shape, dtype):
    if dtype in (BF16, np.float16, np.float32, np.float64):
        return rand(shape)
    return rand(shape, np.int64, -5, 5)


def tol(dtype, k):
    """Inputs in [-2, 2): float32 / double accumulation in another order
    than NumPy's float64, then the out's rounding."""
    root = max(1, k) ** 0.5
    if dtype == np.float32:
        return (1e-5, 1e-5 * root)
    if dtype == np.float16:
        return (2e-3, 2e-3 * root)
    if dtype == BF16:
        return (1.6e-2, 1.6e-2 * root)
    if dtype == np.float64:
        return (1e-12, 1e-12 * root)
    return None


def gpu_tol(dtype, k):
    t = tol(dtype, k)
    return None if dtype == np.float64 else t


def normals(*shape, dtype=np.float32):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return integers(max(info.min, -100), min(info.max, 100), shape, dtype)
    return normal(shape, dtype)


# ---- NumPy models ------------------------------------------------------------------------------


def _product(a, b, od):
    """a @ b in float64 for floating outs, in wrapping int64 for integers."""
    if is_float(od):
        return np.matmul(a.astype(np.float64), b.astype(np.float64))
    with np.errstate(over="ignore"):
        return np.matmul(a.astype(np.int64), b.astype(np.int64))


@reference("aten::mm.out", "aten::bmm.out")
def mm_model(a, b, out):
    od = dtype_of(out)
    return cast(_product(value(a), value(b), od), od)


@reference("aten::addmm.out")
def addmm_model(s, a, b, beta, alpha, out):
    od = dtype_of(out)
    p = _product(value(a), value(b), od)
    with np.errstate(over="ignore"):
        r = alpha * p if beta == 0 else beta * value(s).astype(p.dtype) + alpha * p
    return cast(np.broadcast_to(r, p.shape), od)


@reference("aten::linear.out")
def linear_model(x, w, bias, out):
    od = dtype_of(out)
    r = _product(value(x), value(w).T, od)
    if bias is not None:
        r = r + value(bias).astype(r.dtype)
    return cast(r, od)


def ref_mm(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


# ---- mm -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", [(3, 4, 5), (1, 7, 1), (64, 33, 17), (128, 256, 64),
                                   (5, 0, 3), (0, 4, 3)])
@pytest.mark.parametrize("orders", [(None, None), ((1, 0), None), (None, (1, 0)),
                                    ((1, 0), (1, 0))])
def test_mm(device, dtype, m, k, n, orders):
    a = tensor(values((m, k), dtype), dtype, orders[0])
    b = tensor(values((k, n), dtype), dtype, orders[1])
    check(device, "aten::mm.out", a, b, Out(dtype, [m, n]), tol=tol(dtype, k),
          gpu_tol=gpu_tol(dtype, k))


def test_mm_transposed_out(device):
    check(device, "aten::mm.out", rand((9, 6)), rand((6, 11)),
          Out(np.float32, [9, 11], dim_order=(1, 0)), tol=tol(np.float32, 6),
          gpu_tol=tol(np.float32, 6))


@pytest.mark.parametrize("m,k,n", [(8, 32, 64), (1, 5, 7), (3, 1, 4), (17, 33, 1), (64, 48, 80)])
def test_mm_f32_matches_numpy(device, m, k, n):
    a, b = normals(m, k), normals(k, n)
    check(device, "aten::mm.out", a, b, Out(np.float32, (m, n)), expect=ref_mm(a, b),
          tol=(1e-5, 1e-5))


@pytest.mark.parametrize("a_order,b_order,out_order", [
    ((1, 0), (0, 1), (0, 1)), ((0, 1), (1, 0), (0, 1)), ((1, 0), (1, 0), (0, 1)),
    ((0, 1), (0, 1), (1, 0)), ((1, 0), (1, 0), (1, 0)),
])
@pytest.mark.parametrize("size", SIZES)
def test_mm_reads_and_writes_any_2d_layout(device, a_order, b_order, out_order, size):
    m, k, n = SIZES[size]
    a, b = normals(m, k), normals(k, n)
    check(device, "aten::mm.out", T(a, dim_order=a_order), T(b, dim_order=b_order),
          Out(np.float32, (m, n), dim_order=out_order), expect=ref_mm(a, b), tol=(1e-4, 1e-4))


def test_mm_large_two_threads(device):
    a, b = normals(130, 257), normals(257, 96)
    check(device, "aten::mm.out", a, b, Out(np.float32, (130, 96)), expect=ref_mm(a, b),
          tol=(1e-4, 1e-4), num_threads=2)


def test_mm_float64(device):
    a, b = normals(7, 11, dtype=np.float64), normals(11, 3, dtype=np.float64)
    check(device, "aten::mm.out", T(a, dim_order=(1, 0)), b, Out(np.float64, (7, 3)),
          expect=a @ b, tol=(1e-12, 0))


@pytest.mark.parametrize("size", SIZES)
def test_mm_float16_computes_in_float32(device, size):
    m, k, n = SIZES[size]
    a, b = normals(m, k, dtype=np.float16), normals(k, n, dtype=np.float16)
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    check(device, "aten::mm.out", a, T(b, dim_order=(1, 0)), Out(np.float16, (m, n)),
          expect=expected.astype(np.float32), tol=(2e-3, 1e-2))


@pytest.mark.parametrize("size", SIZES)
def test_mm_bfloat16_computes_in_float32(device, size):
    m, k, n = SIZES[size]
    a, b = bf16(normals(m, k)), bf16(normals(k, n))
    check(device, "aten::mm.out", T(a, bf16=True), T(b, bf16=True, dim_order=(1, 0)),
          Out(BF16, (m, n), dim_order=(1, 0)), expect=bf16(a @ b), tol=(1e-2, 5e-2))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_mm_integers_wrap_like_same_dtype_arithmetic(device, dtype):
    a, b = normals(4, 30, dtype=dtype), normals(30, 5, dtype=dtype)
    # Exact product modulo 2^bits, then reinterpreted in the dtype.
    exact = a.astype(object) @ b.astype(object)
    bits = np.dtype(dtype).itemsize * 8
    wrapped = np.array([[int(v) % (1 << bits) for v in row] for row in exact], dtype=np.uint64)
    expected = wrapped.astype(np.dtype(f"u{bits // 8}")).view(dtype)
    check(device, "aten::mm.out", a, b, Out(dtype, (4, 5)), expect=expected)


def test_mm_int64_large_values_wrap(device):
    a = np.array([[2**62, 3]], dtype=np.int64)
    b = np.array([[4], [5]], dtype=np.int64)
    # 2^64 wraps to 0
    check(device, "aten::mm.out", a, b, Out(np.int64, (1, 1)), expect=np.array([[15]]))


@pytest.mark.parametrize("m,k,n", [(0, 4, 3), (3, 0, 5), (2, 3, 0)])
def test_mm_empty(device, m, k, n):
    a, b = normals(m, k), normals(k, n)
    check(device, "aten::mm.out", a, b, Out(np.float32, (m, n)), expect=np.zeros((m, n)))


def test_mm_resizes_dynamic_out(device):
    a, b = normals(3, 4), normals(4, 2)
    check(device, "aten::mm.out", a, b, Out(np.float32, (8, 8), dynamic=True),
          expect=ref_mm(a, b), tol=(1e-5, 1e-5))


def test_mm_errors(device):
    check_error(device, "aten::mm.out", normals(2, 3), normals(4, 2), Out(np.float32, (2, 2)),
                exc=ValueError)
    check_error(device, "aten::mm.out", normals(2, 3, 1), normals(3, 2), Out(np.float32, (2, 2)),
                exc=ValueError)
    check_error(device, "aten::mm.out", normals(2, 3), normals(3, 2, dtype=np.float64),
                Out(np.float32, (2, 2)), exc=ValueError)
    check_error(device, "aten::mm.out", np.ones((2, 2), bool), np.ones((2, 2), bool),
                Out(np.bool_, (2, 2)), exc=ValueError)
    # A static out of the wrong shape.
    check_error(device, "aten::mm.out", normals(2, 3), normals(3, 2), Out(np.float32, (3, 3)),
                exc=NotImplementedError)


# ---- bmm ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("orders", [(None, None), ((0, 2, 1), None), (None, (0, 2, 1)),
                                    ((1, 0, 2), (2, 0, 1))])
def test_bmm(device, dtype, orders):
    a = tensor(values((4, 5, 6), dtype), dtype, orders[0])
    b = tensor(values((4, 6, 7), dtype), dtype, orders[1])
    check(device, "aten::bmm.out", a, b, Out(dtype, [4, 5, 7]), tol=tol(dtype, 6),
          gpu_tol=gpu_tol(dtype, 6))


@pytest.mark.parametrize("a_order", [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 1, 0)])
@pytest.mark.parametrize("out_order", [(1, 0, 2), (0, 2, 1), (2, 0, 1)])
@pytest.mark.parametrize("size", SIZES)
def test_bmm_any_dim_order(device, a_order, out_order, size):
    m, k, n = SIZES[size]
    a, b = normals(3, m, k), normals(3, k, n)
    check(device, "aten::bmm.out", T(a, dim_order=a_order), T(b, dim_order=(2, 0, 1)),
          Out(np.float32, (3, m, n), dim_order=out_order), expect=np.matmul(a, b),
          tol=(1e-4, 1e-4))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float16])
def test_bmm_dtypes(device, dtype):
    a, b = normals(3, 4, 8, dtype=dtype), normals(3, 8, 2, dtype=dtype)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    check(device, "aten::bmm.out", a, b, Out(dtype, (3, 4, 2)), expect=expected,
          tol=(2e-3, 2e-2))


def test_bmm_attention_shapes_two_threads(device):
    q, kt = normals(8, 16, 64), normals(8, 64, 16)
    check(device, "aten::bmm.out", q, kt, Out(np.float32, (8, 16, 16)), expect=np.matmul(q, kt),
          tol=(1e-4, 1e-4), num_threads=2)


def test_bmm_errors(device):
    # batch sizes differ
    check_error(device, "aten::bmm.out", normals(2, 3, 4), normals(3, 4, 5),
                Out(np.float32, (2, 3, 5)), exc=ValueError)
    # 2-D
    check_error(device, "aten::bmm.out", normals(3, 4), normals(4, 5), Out(np.float32, (3, 5)),
                exc=ValueError)


def test_bmm_empty_batch(device):
    check(device, "aten::bmm.out", normals(0, 3, 4), normals(0, 4, 2), Out(np.float32, (0, 3, 2)),
          expect=np.zeros((0, 3, 2)))


# ---- addmm --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64, np.int32])
@pytest.mark.parametrize("self_shape", [[7], [1, 7], [5, 1], [5, 7], [], [1]])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0, 1), (0.5, 2.0), (2, 3), (1, 0.25)])
def test_addmm(device, dtype, self_shape, beta, alpha):
    s = tensor(values(self_shape, dtype), dtype)
    a = tensor(values((5, 6), dtype), dtype)
    b = tensor(values((6, 7), dtype), dtype)
    if dtype == np.int32 and (isinstance(beta, float) or isinstance(alpha, float)):
        # Floating alpha / beta need floating tensors.
        check_error(device, "aten::addmm.out", s, a, b, beta, alpha, Out(dtype, [5, 7]),
                    exc=ValueError, match="needs floating tensors")
        return
    check(device, "aten::addmm.out", s, a, b, beta, alpha, Out(dtype, [5, 7]),
          tol=tol(dtype, 12), gpu_tol=gpu_tol(dtype, 12))


def test_addmm_transposed_mat_and_k0(device):
    a = T(rand((6, 5)), dim_order=(1, 0))
    check(device, "aten::addmm.out", rand((7,)), a, rand((5, 7)), 1, 1, Out(np.float32, [6, 7]),
          tol=tol(np.float32, 5), gpu_tol=tol(np.float32, 5))
    check(device, "aten::addmm.out", rand((3, 4)), rand((3, 0)), rand((0, 4)), 0.5, 1.0,
          Out(np.float32, [3, 4]), tol=tol(np.float32, 0))


@pytest.mark.parametrize("self_shape", ["n", "1n", "m1", "mn", "", "1", "11"])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (1, -1.5), (2, 1)])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("out_order", [(0, 1), (1, 0)])
def test_addmm_broadcasts_self(device, self_shape, beta, alpha, size, out_order):
    m, k, n = SIZES[size]
    shape = tuple({"m": m, "n": n, "1": 1}[c] for c in self_shape)
    s, a, b = normals(*shape), normals(m, k), normals(k, n)
    expected = beta * s.astype(np.float64) + alpha * ref_mm(a, b)
    check(device, "aten::addmm.out", s, a, b, beta, alpha,
          Out(np.float32, (m, n), dim_order=out_order),
          expect=np.broadcast_to(expected, (m, n)), tol=(1e-4, 1e-4))


def test_addmm_beta_zero_ignores_nan_self(device):
    s = np.full((3,), np.nan, np.float32)
    a, b = normals(2, 4), normals(4, 3)
    check(device, "aten::addmm.out", s, a, b, 0, 1, Out(np.float32, (2, 3)), expect=ref_mm(a, b),
          tol=(1e-5, 1e-5))


def test_addmm_transposed_weight_and_column_major_out(device):
    s, a, w = normals(6), normals(3, 10), normals(6, 10)  # linear: a @ w.T + s
    check(device, "aten::addmm.out", s, a, T(w.T.copy(), dim_order=(1, 0)), 1, 1,
          Out(np.float32, (3, 6), dim_order=(1, 0)), expect=ref_mm(a, w.T) + s, tol=(1e-5, 1e-5))


def test_addmm_mlp_shape_two_threads(device):
    s, a, b = normals(256), normals(64, 512), normals(512, 256)
    check(device, "aten::addmm.out", s, a, b, 1, 1, Out(np.float32, (64, 256)),
          expect=ref_mm(a, b) + s, tol=(1e-4, 1e-4), num_threads=2)


# Products of at most 16 columns (classifier heads) always take the CPU's
# own kernel: whole vectors of b in place, the last columns from a
# zero-padded panel; above 2^20 multiply-adds its row blocks are split over
# the threads.
@pytest.mark.parametrize("n", [1, 3, 8, 10, 15, 16])
@pytest.mark.parametrize("num_threads", [1, 2])
def test_addmm_narrow_products(device, n, num_threads):
    m, k = 601, 256
    s, a, b = normals(n), normals(m, k), normals(k, n)
    check(device, "aten::addmm.out", s, a, b, 1, 1, Out(np.float32, (m, n)),
          expect=ref_mm(a, b) + s, tol=(1e-4, 1e-4), num_threads=num_threads)


@pytest.mark.parametrize("beta,alpha", [(0.5, 2.0), (0, 1)])
def test_addmm_narrow_product_scaled_into_column_major_out(device, beta, alpha):
    m, k, n = 37, 300, 10
    s, a, w = normals(m, n), normals(m, k), normals(n, k)
    expected = beta * s.astype(np.float64) + alpha * ref_mm(a, w.T)
    check(device, "aten::addmm.out", s, a, T(w.T.copy(), dim_order=(1, 0)), beta, alpha,
          Out(np.float32, (m, n), dim_order=(1, 0)), expect=expected, tol=(1e-4, 1e-4))


@pytest.mark.parametrize("size", SIZES)
def test_addmm_bfloat16(device, size):
    m, k, n = SIZES[size]
    s, a, b = bf16(normals(n)), bf16(normals(m, k)), bf16(normals(k, n))
    check(device, "aten::addmm.out", T(s, bf16=True), T(a, bf16=True), T(b, bf16=True), 1, 1,
          Out(BF16, (m, n)), expect=bf16(a @ b + s), tol=(1e-2, 5e-2))


@pytest.mark.parametrize("size", SIZES)
def test_addmm_float16_scaled(device, size):
    m, k, n = SIZES[size]
    s = normals(m, 1, dtype=np.float16)
    a, b = normals(m, k, dtype=np.float16), normals(k, n, dtype=np.float16)
    f = np.float32
    expected = 0.5 * s.astype(f) + 2.0 * (a.astype(f) @ b.astype(f))
    check(device, "aten::addmm.out", s, a, b, 0.5, 2.0, Out(np.float16, (m, n)), expect=expected,
          tol=(3e-3, 3e-2))


def test_addmm_int_scalars_wrap(device):
    s = np.array([100, -100], np.int8)
    a = np.array([[100, 100]], np.int8)
    b = np.array([[1, 2], [1, 2]], np.int8)
    exact = 3 * s.astype(np.int64) + 2 * (a.astype(np.int64) @ b.astype(np.int64))
    check(device, "aten::addmm.out", s, a, b, 3, 2, Out(np.int8, (1, 2)),
          expect=exact.astype(np.int8))


def test_addmm_k_zero_gives_scaled_self(device):
    s = normals(2, 3)
    check(device, "aten::addmm.out", s, normals(2, 0), normals(0, 3), 2, 1,
          Out(np.float32, (2, 3)), expect=2 * s, tol=(1e-6, 0))


def test_addmm_errors(device):
    # self does not broadcast
    check_error(device, "aten::addmm.out", normals(3), normals(2, 4), normals(4, 5), 1, 1,
                Out(np.float32, (2, 5)), exc=ValueError)
    # float alpha with integers
    i = np.ones((2, 2), np.int32)
    check_error(device, "aten::addmm.out", i, i, i, 1, 0.5, Out(np.int32, (2, 2)),
                exc=ValueError)
    # mixed dtypes
    check_error(device, "aten::addmm.out", normals(2, dtype=np.float64), normals(2, 2),
                normals(2, 2), 1, 1, Out(np.float32, (2, 2)), exc=ValueError)


# ---- linear -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64, np.int64])
@pytest.mark.parametrize("in_shape", [[6], [3, 6], [2, 3, 6], [2, 1, 4, 6]])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(device, dtype, in_shape, bias):
    x = tensor(values(in_shape, dtype), dtype)
    w = tensor(values((5, 6), dtype), dtype)
    bb = tensor(values((5,), dtype), dtype) if bias else None
    check(device, "aten::linear.out", x, w, bb, Out(dtype, in_shape[:-1] + [5]),
          tol=tol(dtype, 6), gpu_tol=gpu_tol(dtype, 6))


@pytest.mark.parametrize("in_shape", [(7,), (3, 7), (2, 3, 7), (2, 2, 3, 7)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_against_float64(device, in_shape, with_bias):
    x, w = normals(*in_shape), normals(5, 7)
    bias = normals(5) if with_bias else None
    expected = x.astype(np.float64) @ w.T.astype(np.float64) + (0 if bias is None else bias)
    check(device, "aten::linear.out", x, w, bias, Out(np.float32, in_shape[:-1] + (5,)),
          expect=expected, tol=(1e-5, 1e-5))


@pytest.mark.parametrize("size", SIZES)
def test_linear_unmergeable_leading_dims(device, size):
    m, k, n = SIZES[size]
    x, w, bias = normals(3, m, k), normals(n, k), normals(n)
    check(device, "aten::linear.out", T(x, dim_order=(1, 0, 2)), w, bias,
          Out(np.float32, (3, m, n)), expect=x @ w.T + bias, tol=(1e-4, 1e-4))


def test_linear_permuted_input(device):
    x = T(rand((2, 3, 4, 6)), dim_order=(2, 0, 1, 3))
    check(device, "aten::linear.out", x, rand((5, 6)), rand((5,)), Out(np.float32, [2, 3, 4, 5]),
          tol=tol(np.float32, 6), gpu_tol=tol(np.float32, 6))
    x = T(rand((2, 3, 6)), dim_order=(2, 0, 1))
    check(device, "aten::linear.out", x, rand((5, 6)), None, Out(np.float32, [2, 3, 5]),
          tol=tol(np.float32, 6), gpu_tol=tol(np.float32, 6))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
@pytest.mark.parametrize("rows,k,n", [(1, 1024, 515), (1, 1006, 33), (1, 37, 9), (3, 256, 130),
                                    (8, 64, 64)])
@pytest.mark.parametrize("num_threads", [1, 2])
def test_linear_decode_shapes(device, dtype, rows, k, n, num_threads):
    # A decode step's linear layers: a few rows against a weight read row by
    # row (the GEMV path), odd widths included, split over the threads.
    x = tensor(values((1, rows, k), dtype), dtype)
    w = tensor(values((n, k), dtype), dtype)
    b = tensor(values((n,), dtype), dtype)
    check(device, "aten::linear.out", x, w, b, Out(dtype, (1, rows, n)), tol=tol(dtype, k),
          gpu_tol=gpu_tol(dtype, k), num_threads=num_threads)


@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_wide_two_threads(device, with_bias):
    # A prefill's linear layer: more columns than rows, split by column blocks.
    x, w = normals(40, 300), normals(1000, 300)
    bias = normals(1000) if with_bias else None
    expected = x.astype(np.float64) @ w.T.astype(np.float64) + (0 if bias is None else bias)
    check(device, "aten::linear.out", x, w, bias, Out(np.float32, (40, 1000)), expect=expected,
          tol=(1e-4, 1e-4), num_threads=2)


def test_addmm_wide_two_threads(device):
    s, a, b = normals(40, 700), normals(40, 300), normals(300, 700)
    expected = 0.5 * s.astype(np.float64) + 2.0 * ref_mm(a, b)
    check(device, "aten::addmm.out", s, a, b, 0.5, 2.0, Out(np.float32, (40, 700)),
          expect=expected, tol=(1e-4, 1e-4), num_threads=2)
    check(device, "aten::mm.out", a, b, Out(np.float32, (40, 700), dim_order=(1, 0)),
          expect=ref_mm(a, b), tol=(1e-4, 1e-4), num_threads=2)


def test_linear_errors(device):
    check_error(device, "aten::linear.out", normals(3, 4), normals(5, 3), None,
                Out(np.float32, (3, 5)), exc=ValueError)
    check_error(device, "aten::linear.out", normals(3, 4), normals(5, 4), normals(4),
                Out(np.float32, (3, 5)), exc=ValueError)


# ---- gemm_add (the residual-add fusion's kernel) ------------------------------------------------


def _ulp(x, dtype):
    """The spacing of `dtype` at |x| (float64 array)."""
    bits = {np.float32: 23, np.float16: 10, BF16: 7}[dtype]
    tiny = {np.float32: 2.0**-126, np.float16: 2.0**-14, BF16: 2.0**-126}[dtype]
    return np.exp2(np.floor(np.log2(np.maximum(np.abs(x), tiny)))) * 2.0**-bits


@cuda_only("the product's epilogue adds the residual (cuBLASLt's C operand)")
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("m,k,n", [(16, 64, 64), (1, 32, 48), (300, 256, 64), (7, 5, 3),
                                   (2048, 64, 192)])
def test_gemm_add_rounds_the_sum_once(device, dtype, with_bias, m, k, n):
    a, b, other = normals(m, k), normals(k, n), normals(1, m, n)
    bias = normals(n)
    if dtype != np.float32:
        # Operands exact in the dtype, so that the one rounding is the out's.
        a, b, other, bias = (cast(x, dtype).astype(np.float32) for x in (a, b, other, bias))
    exact = ref_mm(a, b) + other.astype(np.float64)
    if with_bias:
        exact = exact + bias.astype(np.float64)
    got = call_kernel("pterun::gemm_add.out", tensor(a, dtype), tensor(b, dtype),
                      tensor(bias, dtype) if with_bias else None, tensor(other, dtype),
                      Out(dtype, (1, m, n)), device=device)[0].astype(np.float64)
    assert got.shape == (1, m, n)
    # float32 accumulation (at most k + 2 roundings of partial sums bounded
    # by the sum of magnitudes), then one rounding to the dtype: half a unit
    # in the last place of the sum, where the unfused addmm and add round
    # twice (up to a unit).
    magnitude = np.abs(a).astype(np.float64) @ np.abs(b) + np.abs(other)
    if with_bias:
        magnitude = magnitude + np.abs(bias)
    bound = 0.5 * _ulp(exact, dtype) * 1.001 + (k + 2) * 2.0**-24 * magnitude
    worst = np.max(np.abs(got - exact) - bound)
    assert worst <= 0, f"error beyond one rounding by {worst}"


@cuda_only("the product's epilogue adds the residual")
def test_gemm_add_errors(device):
    a, b, other = normals(4, 3), normals(3, 5), normals(4, 5)
    name = "pterun::gemm_add.out"
    with pytest.raises(ValueError, match="cannot multiply"):
        call_kernel(name, a, normals(4, 5), None, other, Out(np.float32, (4, 5)), device=device)
    with pytest.raises(ValueError, match="bias"):
        call_kernel(name, a, b, normals(4), other, Out(np.float32, (4, 5)), device=device)
    with pytest.raises(ValueError, match="other"):
        call_kernel(name, a, b, None, normals(4, 6), Out(np.float32, (4, 6)), device=device)
    with pytest.raises(ValueError, match="other"):
        call_kernel(name, a, b, None, T(normals(5, 4), dim_order=(1, 0)),
                    Out(np.float32, (5, 4)), device=device)
    with pytest.raises(ValueError, match="dtype"):
        call_kernel(name, a, b, None, other.astype(np.float64), Out(np.float32, (4, 5)),
                    device=device)


def test_gemm_add_is_cuda_only():
    with pytest.raises(NotImplementedError):
        call_kernel("pterun::gemm_add.out", normals(4, 3), normals(3, 5), None, normals(4, 5),
                    Out(np.float32, (4, 5)))

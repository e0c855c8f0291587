"""CUDA mm / bmm / addmm / linear against the CPU kernels: dtypes, transposed
and strided operands, bias and alpha / beta, empty and k = 0 products."""

import numpy as np
import pytest

import harness
from harness import Out, T, check, perf, rand

pytestmark = harness.needs_cuda

DTYPES = [np.float32, np.float16, "bfloat16", np.float64, np.int32, np.int64, np.int8, np.uint8]


def tensor(x, dtype, order=None):
    if dtype == "bfloat16":
        return T(x.astype(np.float32), dim_order=order, bf16=True)
    return T(x.astype(dtype), dim_order=order)


def values(shape, dtype):
    if dtype in ("bfloat16", np.float16, np.float32, np.float64):
        return rand(shape)
    return rand(shape, np.int64, -5, 5)


def tol(dtype, k):
    if dtype == np.float32:
        return {"rtol": 1e-5, "atol": 1e-5 * max(1, k) ** 0.5}
    if dtype == np.float16:
        return {"rtol": 2e-3, "atol": 2e-3 * max(1, k) ** 0.5}
    if dtype == "bfloat16":
        return {"rtol": 1.6e-2, "atol": 1.6e-2 * max(1, k) ** 0.5}
    return {}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", [(3, 4, 5), (1, 7, 1), (64, 33, 17), (128, 256, 64),
                                   (5, 0, 3), (0, 4, 3)])
@pytest.mark.parametrize("orders", [(None, None), ((1, 0), None), (None, (1, 0)),
                                    ((1, 0), (1, 0))])
def test_mm(dtype, m, k, n, orders):
    a = tensor(values((m, k), dtype), dtype, orders[0])
    b = tensor(values((k, n), dtype), dtype, orders[1])
    check("aten::mm.out", a, b, Out(dtype, [m, n]), **tol(dtype, k))


def test_mm_transposed_out():
    check("aten::mm.out", rand((9, 6)), rand((6, 11)), Out(np.float32, [9, 11], dim_order=(1, 0)),
          **tol(np.float32, 6))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("orders", [(None, None), ((0, 2, 1), None), (None, (0, 2, 1)),
                                    ((1, 0, 2), (2, 0, 1))])
def test_bmm(dtype, orders):
    a = tensor(values((4, 5, 6), dtype), dtype, orders[0])
    b = tensor(values((4, 6, 7), dtype), dtype, orders[1])
    check("aten::bmm.out", a, b, Out(dtype, [4, 5, 7]), **tol(dtype, 6))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bfloat16", np.float64, np.int32])
@pytest.mark.parametrize("self_shape", [[7], [1, 7], [5, 1], [5, 7], [], [1]])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0, 1), (0.5, 2.0), (2, 3), (1, 0.25)])
def test_addmm(dtype, self_shape, beta, alpha):
    if dtype == np.int32 and (isinstance(beta, float) or isinstance(alpha, float)):
        pytest.skip("floating alpha / beta need floating tensors")
    s = tensor(values(self_shape, dtype), dtype)
    a = tensor(values((5, 6), dtype), dtype)
    b = tensor(values((6, 7), dtype), dtype)
    check("aten::addmm.out", s, a, b, beta, alpha, Out(dtype, [5, 7]), **tol(dtype, 12))


def test_addmm_transposed_mat_and_k0():
    a = T(rand((6, 5)), dim_order=(1, 0))
    check("aten::addmm.out", rand((7,)), a, rand((5, 7)), 1, 1, Out(np.float32, [6, 7]),
          **tol(np.float32, 5))
    check("aten::addmm.out", rand((3, 4)), rand((3, 0)), rand((0, 4)), 0.5, 1.0,
          Out(np.float32, [3, 4]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bfloat16", np.float64, np.int64])
@pytest.mark.parametrize("in_shape", [[6], [3, 6], [2, 3, 6], [2, 1, 4, 6]])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(dtype, in_shape, bias):
    x = tensor(values(in_shape, dtype), dtype)
    w = tensor(values((5, 6), dtype), dtype)
    bb = tensor(values((5,), dtype), dtype) if bias else None
    check("aten::linear.out", x, w, bb, Out(dtype, in_shape[:-1] + [5]), **tol(dtype, 6))


def test_linear_permuted_input():
    x = T(rand((2, 3, 4, 6)), dim_order=(2, 0, 1, 3))
    check("aten::linear.out", x, rand((5, 6)), rand((5,)), Out(np.float32, [2, 3, 4, 5]),
          **tol(np.float32, 6))
    x = T(rand((2, 3, 6)), dim_order=(2, 0, 1))
    check("aten::linear.out", x, rand((5, 6)), None, Out(np.float32, [2, 3, 5]),
          **tol(np.float32, 6))


def mm_reference(torch, dtype_name, n):
    a = torch.rand(n, n, device="cuda", dtype=getattr(torch, dtype_name))
    b = torch.rand(n, n, device="cuda", dtype=getattr(torch, dtype_name))
    out = torch.empty_like(a)
    return lambda: torch.mm(a, b, out=out)


def test_perf_matmul_4096():
    n = 4096
    for dtype in (np.float16, "bfloat16"):
        a = tensor(rand((n, n)), dtype)
        b = tensor(rand((n, n)), dtype)
        name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
        harness.perf_torch_reference(f"mm {name}", f"torch.mm {name} 4096^3 (cuBLAS)",
                                     lambda torch: mm_reference(torch, name, n),
                                     flops=2 * n ** 3, iterations=20)
        perf(f"mm {name} 4096^3", "aten::mm.out", a, b, Out(dtype, [n, n]), flops=2 * n ** 3,
             iterations=20, ref=f"mm {name}")

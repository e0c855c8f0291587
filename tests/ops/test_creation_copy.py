"""CUDA creation ops (full, zeros, ones, fill, scalar_tensor, empty,
arange, linspace) and copy ops (copy_, copy.out, clone, the dim-order
copies, _to_copy, lift_fresh_copy) against the CPU kernels."""

import numpy as np
import pytest

import harness
from harness import Out, T, call_kernel, check, perf, rand

pytestmark = harness.needs_cuda

CL = (0, 2, 3, 1)
ALL = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64,
       np.bool_, "bfloat16"]


def cuda_raises(name, *args, match=None):
    with pytest.raises(Exception, match=match):
        call_kernel(name, *args, device="cuda:0")


def tensor(x, dtype, order=None):
    if dtype == "bfloat16":
        return T(np.asarray(x, dtype=np.float32), dim_order=order, bf16=True)
    return T(np.asarray(x).astype(dtype), dim_order=order)


# ---- creation --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("value", [7, -1, 1.9, -2.5, True, 0])
def test_full(dtype, value):
    check("aten::full.out", [2, 3], value, Out(dtype, (2, 3)))
    check("aten::full.out", [1, 2, 3, 4], value, Out(dtype, (1, 2, 3, 4), dim_order=CL))
    check("aten::full.out", [1001], value, Out(dtype, (1001,)))


def test_full_special_and_errors():
    check("aten::full.out", [2], float("-inf"), Out(np.float16, (2,)))
    check("aten::full.out", [3], float("nan"), Out(np.float32, (3,)))
    check("aten::full.out", [1], float("nan"), Out(np.bool_, (1,)))
    check("aten::full.out", [], 4, Out(np.int64, ()))
    check("aten::full.out", [0, 4], 1, Out(np.float32, (0, 4)))
    check("aten::full.out", [3, 5], 2.5, Out(np.float32, (1, 1), dynamic=True, capacity=(8, 8)))
    cuda_raises("aten::full.out", [2], 300, Out(np.int8, (2,)), match="overflow")
    cuda_raises("aten::full.out", [3, 3], 1, Out(np.float32, (2, 2)))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16, "bfloat16", np.bool_])
def test_like_and_fill(dtype):
    a = rand((2, 3, 4, 5))
    check("aten::full_like.out", a, 3, None, Out(dtype, a.shape))
    check("aten::full_like.out", T(a, dim_order=CL), 1, 2, Out(dtype, a.shape, dim_order=CL))
    check("aten::zeros.out", [2, 4], Out(dtype, (2, 4)))
    check("aten::ones.out", [2, 4], Out(dtype, (2, 4)))
    check("aten::zeros_like.out", a, None, Out(dtype, a.shape))
    check("aten::ones_like.out", a, 1, Out(dtype, a.shape))
    check("aten::scalar_tensor.out", 2, Out(dtype, ()))
    x = tensor(rand((3, 4)), dtype)
    check("aten::fill.Scalar_out", x, 1, Out(dtype, (3, 4)))
    for value in [np.array(2.5, np.float32), np.array(-3, np.int64), np.array(True)]:
        check("aten::fill.Tensor_out", x, value, Out(dtype, (3, 4)))
    cuda_raises("aten::fill.Tensor_out", x, rand((2,)), Out(dtype, (3, 4)), match="rank")
    cuda_raises("aten::full_like.out", a, 1, 2, Out(np.float32, a.shape), match="channels")


def test_empty():
    out = call_kernel("aten::empty.out", [3, 2], None, Out(np.float32, (1, 1), dynamic=True,
                                                            capacity=(4, 4)), device="cuda:0")
    assert out[0].shape == (3, 2)
    out = call_kernel("aten::empty_like.out", np.zeros((2, 5), np.int8), None,
                      Out(np.int8, (2, 5)), device="cuda:0")
    assert out[0].shape == (2, 5)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.int16, np.float32,
                                   np.float64, np.float16, "bfloat16"])
@pytest.mark.parametrize("args", [(0, 10, 1), (2, 20, 3), (10, -3, -2), (0.5, 7.25, 0.25),
                                  (-1.5, 1.5, 0.1)])
def test_arange(dtype, args):
    start, end, step = args
    integral = dtype != "bfloat16" and np.dtype(dtype).kind in "iu"
    if integral and (int(step) == 0 or (dtype == np.uint8 and min(start, end) < 0)):
        return  # a step truncated to 0 errors on both backends
    cpu = call_kernel("aten::arange.start_out", start, end, step,
                      Out(dtype, (1,), dynamic=True, capacity=(4096,)))
    shape = cpu[0].shape
    check("aten::arange.start_out", start, end, step,
          Out(dtype, shape, dynamic=True, capacity=(4096,)))
    if isinstance(end, int) and end > 0:
        check("aten::arange.out", end, Out(dtype, (end,)))


def test_arange_errors_and_large():
    cuda_raises("aten::arange.start_out", 0, 10, 0, Out(np.int64, (10,)), match="step")
    cuda_raises("aten::arange.start_out", 0, 10, -1, Out(np.int64, (10,)), match="bound")
    check("aten::arange.out", 100000, Out(np.float32, (100000,)))
    check("aten::arange.out", 100000, Out(np.int64, (100000,)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, "bfloat16", np.int64,
                                   np.int32, np.uint8])
@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-3.5, 7.25, 11), (10, 0, 4), (2, 9, 1),
                                             (0, 100, 1000), (1, 2, 0)])
def test_linspace(dtype, start, end, steps):
    if dtype == np.uint8 and start < 0:
        return
    check("aten::linspace.out", start, end, steps, Out(dtype, (steps,)))


# ---- copies ----------------------------------------------------------------------------------

CASTS = [(np.float32, np.float16), (np.float32, "bfloat16"), (np.float16, np.float32),
         ("bfloat16", np.float32), (np.float32, np.int32), (np.float64, np.uint8),
         (np.int64, np.float64), (np.int32, np.bool_), (np.bool_, np.float32),
         (np.float16, "bfloat16"), (np.float32, np.float32), (np.int8, np.int8),
         (np.int64, np.int16), (np.uint8, np.int64)]


@pytest.mark.parametrize("src_dtype,dst_dtype", CASTS)
@pytest.mark.parametrize("in_order,out_order", [(None, None), (CL, None), (None, CL), (CL, CL)])
def test_to_copy(src_dtype, dst_dtype, in_order, out_order):
    x = rand((2, 3, 4, 5), np.float32, -300, 300)
    x[0, 0, 0, :4] = [np.nan, np.inf, -np.inf, 1e30]
    src = tensor(x, src_dtype, in_order)
    if src_dtype != "bfloat16" and np.dtype(src_dtype).kind in "iub":
        src = tensor(np.nan_to_num(x, posinf=0, neginf=0).astype(np.int64) % 120, src_dtype,
                     in_order)
    out_fmt = 2 if out_order == CL else None
    check("aten::_to_copy.out", src, False, out_fmt, Out(dst_dtype, x.shape, dim_order=out_order))
    order_arg = list(out_order) if out_order else None
    check("dim_order_ops::_to_dim_order_copy.out", src, False, order_arg,
          Out(dst_dtype, x.shape, dim_order=out_order))


@pytest.mark.parametrize("dtype", ALL)
def test_copy_inplace_and_out(dtype):
    src = tensor(rand((3, 1, 5), np.float32, -9, 9), dtype)
    check("aten::copy_", Out(dtype, (3, 4, 5)), src, False)
    check("aten::copy_", Out(np.float32, (2, 3, 4, 5), dim_order=CL), tensor(rand((5,)), dtype),
          False)
    check("aten::copy.out", tensor(rand((3, 4, 5)), dtype), src, False, Out(dtype, (3, 4, 5)))
    check("aten::copy_", Out(np.float64, (2, 3)), tensor(rand((2, 3)), dtype), False)
    cuda_raises("aten::copy_", Out(np.float32, (2, 3)), rand((3, 2)), False)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("in_order,out_order", [(None, None), (CL, None), (None, CL), (CL, CL)])
def test_clones(dtype, in_order, out_order):
    a = tensor(rand((2, 3, 4, 5), np.float32, -9, 9), dtype, in_order)
    check("aten::clone.out", a, None, Out(dtype, (2, 3, 4, 5), dim_order=out_order))
    check("dim_order_ops::_clone_dim_order.out", a, False,
          list(out_order) if out_order else None, Out(dtype, (2, 3, 4, 5), dim_order=out_order))
    check("aten::lift_fresh_copy.out", a, Out(dtype, (2, 3, 4, 5), dim_order=out_order))


def test_copy_edge_cases():
    check("aten::clone.out", np.zeros((3, 0, 2), np.float32), None, Out(np.float32, (3, 0, 2)))
    check("aten::lift_fresh_copy.out", np.array(True), Out(np.bool_, ()))
    check("dim_order_ops::_to_dim_order_copy.out", np.array(2.75, np.float32), False, [],
          Out(np.float64, ()))
    cuda_raises("aten::clone.out", rand((2,)), None, Out(np.float64, (2,)), match="dtype")
    cuda_raises("dim_order_ops::_to_dim_order_copy.out", rand((3, 5)), False, [1, 0],
                Out(np.float32, (3, 5)), match="dim_order")
    out = call_kernel("dim_order_ops::_empty_dim_order.out", [2, 7], None,
                      Out(np.float32, (1, 1), dynamic=True, capacity=(4, 4)), device="cuda:0")
    assert out[0].shape == (2, 7)


# ---- performance ------------------------------------------------------------------------------


def copy_reference(torch, n):
    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def test_perf_copy():
    n = (64 << 20) // 4
    harness.perf_torch_reference("copy", "torch copy_ float32 64 MiB (device to device)",
                                 lambda torch: copy_reference(torch, n), nbytes=2 * n * 4)
    x = rand((n,))
    perf("_to_copy float32 -> float16 64 MiB", "aten::_to_copy.out", x, False, None,
         Out(np.float16, (n,)), nbytes=n * 4 + n * 2, ref="copy")
    perf("_to_copy float32 -> bfloat16 64 MiB", "aten::_to_copy.out", x, False, None,
         Out("bfloat16", (n,)), nbytes=n * 4 + n * 2, ref="copy")
    perf("clone float32 64 MiB", "aten::clone.out", x, None, Out(np.float32, (n,)),
         nbytes=2 * n * 4, ref="copy")
    y = rand((64, 256, 32, 32))
    perf("clone float32 64 MiB -> channels last", "aten::clone.out", y, None,
         Out(np.float32, y.shape, dim_order=CL), nbytes=2 * y.nbytes, ref="copy")
    perf("full float32 64 MiB", "aten::full.out", [n], 1.5, Out(np.float32, (n,)), nbytes=n * 4,
         ref="copy")

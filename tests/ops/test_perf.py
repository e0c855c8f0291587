"""With --perf on a GPU: times CUDA kernels on cuda:0 and prints achieved
bandwidth or TFLOP/s, with shares of torch's rates where torch has CUDA
(the rows conftest.py prints at the end). Without --perf these skip: the
kernels' correctness is the other files' job."""

import numpy as np
import pytest

import harness
from harness import BF16, CL, Out, perf, rand, tensor
from test_fused import ACTIVATION, BINARY, SCALAR, step

pytestmark = [harness.needs_cuda,
              pytest.mark.skipif("not harness.PERF", reason="--perf only")]

RNG = np.random.default_rng(7)
MIB64 = 64 << 20


def _torch_conv(torch, x_shape, w_shape, groups, dtype, channels_last):
    """torch's conv2d (cuDNN) on the same shapes, TF32 off as in pterun's
    default."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    dt = getattr(torch, dtype)
    x = torch.rand(x_shape, device="cuda", dtype=dt)
    w = torch.rand(w_shape, device="cuda", dtype=dt)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    pad = w_shape[-1] // 2
    return lambda: torch.nn.functional.conv2d(x, w, None, 1, pad, 1, groups)


CONV_CASES = [
    # label, input, weight, groups, dtype, channels-last
    ("conv2d f32 32x64x56x56 3x3", (32, 64, 56, 56), (64, 64, 3, 3), 1, "float32", False),
    ("conv2d bf16 32x64x56x56 3x3", (32, 64, 56, 56), (64, 64, 3, 3), 1, "bfloat16", False),
    ("conv2d f32 channels-last 32x64x56x56 3x3", (32, 64, 56, 56), (64, 64, 3, 3), 1, "float32",
     True),
    ("conv2d bf16 channels-last 32x64x56x56 3x3", (32, 64, 56, 56), (64, 64, 3, 3), 1,
     "bfloat16", True),
    ("conv2d f32 32x256x28x28 1x1 -> 64", (32, 256, 28, 28), (64, 256, 1, 1), 1, "float32",
     False),
    ("conv2d f32 depthwise 32x128x56x56 3x3", (32, 128, 56, 56), (128, 1, 3, 3), 128, "float32",
     False),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_perf_conv(case):
    label, xs, ws, groups, dtype, cl = case
    n, c, h, w_ = xs
    flops = 2 * n * ws[0] * h * w_ * ws[1] * ws[2] * ws[3]
    key = "torch " + label
    harness.perf_torch_reference(key, "torch " + label,
                                 lambda torch: _torch_conv(torch, xs, ws, groups, dtype, cl),
                                 flops=flops, iterations=10)
    dt = BF16 if dtype == "bfloat16" else np.float32
    order = CL if cl else None
    pad = ws[-1] // 2
    x = tensor(rand(xs), dt, order)
    wt = tensor(rand(ws), dt, order)
    out_dt = BF16 if dt == BF16 else np.float32
    perf(label, "aten::convolution.out", x, wt, None, [1, 1], [pad, pad], [1, 1], False, [0, 0],
         groups, Out(out_dt, xs[:1] + ws[:1] + xs[2:], dim_order=order), flops=flops,
         iterations=10, ref=key)


def test_perf_pool():
    x = rand((32, 64, 56, 56))
    perf("max_pool2d f32 32x64x56x56 2x2", "aten::max_pool2d_with_indices.out", x, [2, 2], [2, 2],
         [0, 0], [1, 1], False, Out(np.float32, [32, 64, 28, 28]), Out(np.int64, [32, 64, 28, 28]),
         nbytes=x.nbytes * 2)


def torch_ref(key, label, make, nbytes):
    """torch's figure for the same work, stored as PERF_REFS[key]."""
    harness.perf_torch_reference(key, label, make, nbytes=nbytes)


def copy_reference(torch, n):
    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def same_size_copy(nbytes):
    """The key of torch's device-to-device copy moving `nbytes` (read and
    written) in all: the floor for work of that size, where a 64 MiB
    copy's rate flatters nothing smaller (a launch's ramp and tail weigh
    more in a shorter kernel). Timed once per size."""
    key = f"copy of {nbytes / 2**21:g} MiB"
    if key not in harness.PERF_REFS:
        harness.perf_torch_reference(key, f"torch copy_ float32 {nbytes / 2**21:g} MiB",
                                     lambda torch: copy_reference(torch, nbytes // 8),
                                     nbytes=nbytes)
    return key


def test_perf_copy():
    n = (64 << 20) // 4
    harness.perf_torch_reference("copy", "torch copy_ float32 64 MiB (device to device)",
                                 lambda torch: copy_reference(torch, n), nbytes=2 * n * 4)
    x = rand((n,))
    perf("_to_copy float32 -> float16 64 MiB", "aten::_to_copy.out", x, False, None,
         Out(np.float16, (n,)), nbytes=n * 4 + n * 2, ref="copy")
    perf("_to_copy float32 -> bfloat16 64 MiB", "aten::_to_copy.out", x, False, None,
         Out(BF16, (n,)), nbytes=n * 4 + n * 2, ref="copy")
    perf("clone float32 64 MiB", "aten::clone.out", x, None, Out(np.float32, (n,)),
         nbytes=2 * n * 4, ref="copy")
    y = rand((64, 256, 32, 32))
    torch_ref("torch channels_last", "torch contiguous(channels_last) f32 64 MiB",
              lambda torch: _channels_last(torch, y.shape), nbytes=2 * y.nbytes)
    perf("clone float32 64 MiB -> channels last", "aten::clone.out", y, None,
         Out(np.float32, y.shape, dim_order=CL), nbytes=2 * y.nbytes,
         ref=("copy", "torch channels_last"))
    torch_ref("torch full", "torch full f32 64 MiB",
              lambda torch: (lambda out: lambda: out.fill_(1.5))(
                  torch.empty(n, device="cuda")), nbytes=n * 4)
    perf("full float32 64 MiB", "aten::full.out", [n], 1.5, Out(np.float32, (n,)), nbytes=n * 4,
         ref=("copy", "torch full"))


def _channels_last(torch, shape):
    x = torch.rand(*shape, device="cuda")
    out = torch.empty_like(x, memory_format=torch.channels_last)
    return lambda: out.copy_(x)


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_perf_elementwise(dtype):
    elem = 4 if dtype == np.float32 else 2
    n = MIB64 // elem
    name = dtype if isinstance(dtype, str) else "float32"
    a = tensor(rand((n,)), dtype)
    b = tensor(rand((n,)), dtype)
    perf(f"add {name} 64 MiB", "aten::add.out", a, b, 1, Out(dtype, (n,)), nbytes=3 * n * elem,
         ref="copy")
    perf(f"mul {name} 64 MiB", "aten::mul.out", a, b, Out(dtype, (n,)), nbytes=3 * n * elem,
         ref="copy")
    perf(f"relu {name} 64 MiB", "aten::relu.out", a, Out(dtype, (n,)), nbytes=2 * n * elem,
         ref="copy")
    tname = "float32" if dtype == np.float32 else "bfloat16"
    torch_ref(f"torch gelu {name}", f"torch gelu {name} 64 MiB",
              lambda torch: _unary(torch, torch.nn.functional.gelu, n, tname),
              nbytes=2 * n * elem)
    perf(f"gelu {name} 64 MiB", "aten::gelu.out", a, "none", Out(dtype, (n,)),
         nbytes=2 * n * elem, ref=("copy", f"torch gelu {name}"))
    perf(f"x * 2 + 1 {name} 64 MiB, fused", "pterun::fused_elementwise.out", [a],
         step("scalar", SCALAR["mul"], 0, round=dtype, s0=2)
         + step("scalar", SCALAR["add"], 1, round=dtype, s0=1, s1=1),
         Out(dtype, (n,)), nbytes=2 * n * elem, ref="copy")
    perf(f"silu(a) * b {name} 64 MiB, fused", "pterun::fused_elementwise.out", [a, b],
         step("activation", ACTIVATION["silu"], 0, round=dtype)
         + step("binary", BINARY["mul"], 2, 1, round=dtype),
         Out(dtype, (n,)), nbytes=3 * n * elem, ref="copy")
    perf(f"gelu(x + [4096] bias) {name} 64 MiB, fused", "pterun::fused_elementwise.out",
         [tensor(rand((n // 4096, 4096)), dtype), tensor(rand((4096,)), dtype)],
         step("binary", BINARY["add"], 0, 1, round=dtype)
         + step("activation", ACTIVATION["gelu"], 2, round=dtype),
         Out(dtype, (n // 4096, 4096)), nbytes=2 * n * elem, ref="copy")
    perf(f"add {name} 64 MiB + [4096] bias", "aten::add.out",
         tensor(rand((n // 4096, 4096)), dtype), tensor(rand((4096,)), dtype), 1,
         Out(dtype, (n // 4096, 4096)), nbytes=2 * n * elem, ref="copy")


def _unary(torch, fn, n, dtype_name):
    x = torch.rand(n, device="cuda", dtype=getattr(torch, dtype_name))
    return lambda: fn(x)


def test_perf_gathers():
    w = rand((32000, 4096), np.float16)  # 250 MiB table
    idx = RNG.integers(0, 32000, (8, 512))
    nbytes = 2 * 8 * 512 * 4096 * 2
    torch_ref("torch embedding", "torch embedding f16 [32000,4096] x 4096 rows",
              lambda torch: _embedding(torch, w.shape, idx), nbytes=nbytes)
    perf("embedding f16 [32000,4096] x 4096 rows", "aten::embedding.out", w, idx, -1, False,
         False, Out(np.float16, (8, 512, 4096)), nbytes=nbytes, ref=("copy", "torch embedding"))
    x = rand((4096, 4096), np.float32)
    sel = RNG.integers(0, 4096, 4096)
    torch_ref("torch index_select", "torch index_select f32 [4096,4096] dim 0",
              lambda torch: _index_select(torch, x.shape, sel), nbytes=2 * x.nbytes)
    perf("index_select f32 [4096,4096] dim 0, 4096 rows", "aten::index_select.out", x, 0, sel,
         Out(np.float32, (4096, 4096)), nbytes=2 * x.nbytes, ref=("copy", "torch index_select"))


def _embedding(torch, shape, idx):
    w = torch.rand(*shape, device="cuda", dtype=torch.float16)
    i = torch.as_tensor(idx, device="cuda")
    return lambda: torch.nn.functional.embedding(i, w)


def _index_select(torch, shape, sel):
    x = torch.rand(*shape, device="cuda")
    i = torch.as_tensor(sel, device="cuda")
    return lambda: torch.index_select(x, 0, i)


def mm_reference(torch, dtype_name, n):
    a = torch.rand(n, n, device="cuda", dtype=getattr(torch, dtype_name))
    b = torch.rand(n, n, device="cuda", dtype=getattr(torch, dtype_name))
    out = torch.empty_like(a)
    return lambda: torch.mm(a, b, out=out)


def test_perf_matmul_4096():
    n = 4096
    for dtype in (np.float16, BF16):
        a = tensor(rand((n, n)), dtype)
        b = tensor(rand((n, n)), dtype)
        name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
        harness.perf_torch_reference(f"mm {name}", f"torch.mm {name} 4096^3 (cuBLAS)",
                                     lambda torch: mm_reference(torch, name, n),
                                     flops=2 * n ** 3, iterations=20)
        perf(f"mm {name} 4096^3", "aten::mm.out", a, b, Out(dtype, [n, n]), flops=2 * n ** 3,
             iterations=20, ref=f"mm {name}")


def _dense(torch, shape, fn, dtype_name="float32"):
    x = torch.rand(*shape, device="cuda", dtype=getattr(torch, dtype_name))
    return lambda: fn(x)


# Rows of the normalisation (layer and RMS norm) and softmax figures: [rows, width] as in a
# transformer (4096 tokens of 4096, 1024 of 768) and attention scores.
NORM_SHAPES = [(4096, 4096), (8192, 768), (65536, 128)]


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_perf_softmax_and_layer_norm(dtype):
    name = "float32" if dtype == np.float32 else "bfloat16"
    elem = 4 if dtype == np.float32 else 2
    for rows, width in NORM_SHAPES:
        x = tensor(rand((rows, width)), dtype)
        nbytes = 2 * rows * width * elem
        shape = f"{name} [{rows}, {width}]"
        same = same_size_copy(nbytes)
        torch_ref(f"torch softmax {shape}", f"torch softmax {shape} dim=-1",
                  lambda torch: _dense(torch, (rows, width),
                                       lambda t: torch.softmax(t, -1), name), nbytes=nbytes)
        perf(f"softmax {shape} dim=-1", "aten::_softmax.out", x, -1, False,
             Out(dtype, (rows, width)), nbytes=nbytes, ref=("copy", same, f"torch softmax {shape}"))
        torch_ref(f"torch layer_norm {shape}", f"torch layer_norm {shape}",
                  lambda torch: _layer_norm(torch, rows, width, name), nbytes=nbytes)
        perf(f"layer_norm {shape}", "aten::native_layer_norm.out", x, [width],
             tensor(rand((width,)), dtype), tensor(rand((width,)), dtype), 1e-5,
             Out(dtype, (rows, width)), Out(dtype, [rows, 1]), Out(dtype, [rows, 1]),
             nbytes=nbytes, ref=("copy", same, f"torch layer_norm {shape}"))
        torch_ref(f"torch rms_norm {shape}", f"torch rms_norm {shape}",
                  lambda torch: _rms_norm(torch, rows, width, name), nbytes=nbytes)
        perf(f"rms_norm {shape}", "pterun::rms_norm.out", x, tensor(np.array(1e-5), dtype),
             tensor(rand((width,)), dtype), Out(dtype, (rows, width)), nbytes=nbytes,
             ref=("copy", same, f"torch rms_norm {shape}"))


def _layer_norm(torch, rows, width, dtype_name):
    dt = getattr(torch, dtype_name)
    x = torch.rand(rows, width, device="cuda", dtype=dt)
    w = torch.rand(width, device="cuda", dtype=dt)
    b = torch.rand(width, device="cuda", dtype=dt)
    return lambda: torch.nn.functional.layer_norm(x, (width,), w, b, 1e-5)


def _rms_norm(torch, rows, width, dtype_name):
    dt = getattr(torch, dtype_name)
    x = torch.rand(rows, width, device="cuda", dtype=dt)
    w = torch.rand(width, device="cuda", dtype=dt)
    return lambda: torch.nn.functional.rms_norm(x, (width,), w, 1e-5)


def test_perf_sum_64mib():
    x = rand((16 * 1024 * 1024,))
    cases = [("sum float32 64 MiB", None, lambda t: t.sum()),
             ("sum float32 [4096, 4096] dim=1", [1], lambda t: t.view(4096, 4096).sum(1)),
             ("sum float32 [4096, 4096] dim=0", [0], lambda t: t.view(4096, 4096).sum(0))]
    for label, dims, fn in cases:
        torch_ref(f"torch {label}", f"torch {label}",
                  lambda torch: _dense(torch, x.shape, fn), nbytes=x.nbytes)
        if dims is None:
            perf(label, "aten::sum.out", x, None, Out(np.float32, []), nbytes=x.nbytes,
                 ref=("copy", f"torch {label}"))
        else:
            perf(label, "aten::sum.IntList_out", x.reshape(4096, 4096), dims, False, None,
                 Out(np.float32, [4096]), nbytes=x.nbytes, ref=("copy", f"torch {label}"))


def test_perf_copies():
    a = rand((4096, 4096), np.float32)  # 64 MiB
    nbytes = 2 * a.nbytes
    torch_ref("torch transpose", "torch t().contiguous() f32 [4096,4096]",
              lambda torch: _dense(torch, a.shape, lambda t: t.t().contiguous()), nbytes=nbytes)
    perf("permute_copy f32 [4096,4096] (1,0)", "aten::permute_copy.out", a, [1, 0],
         Out(np.float32, (4096, 4096)), nbytes=nbytes, ref=("copy", "torch transpose"))
    perf("alias_copy f32 [4096,4096] contiguous", "aten::alias_copy.out", a,
         Out(np.float32, (4096, 4096)), nbytes=nbytes, ref="copy")
    b = rand((64, 256, 32, 32), np.float32)  # 64 MiB
    perf("alias_copy f32 [64,256,32,32] -> channels last", "aten::alias_copy.out", b,
         Out(np.float32, b.shape, dim_order=CL), nbytes=2 * b.nbytes,
         ref=("copy", "torch channels_last"))
    half = rand((4096, 2048), np.float32)
    torch_ref("torch cat", "torch cat f32 2x[4096,2048] dim 1",
              lambda torch: _dense(torch, half.shape, lambda t: torch.cat([t, t], 1)),
              nbytes=nbytes)
    perf("cat f32 2x[4096,2048] dim 1", "aten::cat.out", [half, half], 1,
         Out(np.float32, (4096, 4096)), nbytes=nbytes, ref=("copy", "torch cat"))
    torch_ref("torch slice", "torch [:, :2048].contiguous() f32 [4096,4096]",
              lambda torch: _dense(torch, a.shape, lambda t: t[:, :2048].contiguous()),
              nbytes=a.nbytes)
    perf("slice_copy f32 [4096,4096] -> [4096,2048]", "aten::slice_copy.Tensor_out", a, 1, 0,
         2048, 1, Out(np.float32, (4096, 2048)), nbytes=a.nbytes, ref=("copy", "torch slice"))


def mv_reference(torch, k, n):
    a = torch.rand(1, k, device="cuda", dtype=torch.bfloat16)
    b = torch.rand(n, k, device="cuda", dtype=torch.bfloat16)
    return lambda: torch.nn.functional.linear(a, b)


def test_perf_dynamically_quantized_linear():
    """XNNPACK's 8da4w linear (4-bit weights in blocks of 32, int8
    activations quantized per row) and its 8-bit form, beside the bfloat16
    matrix product of the same size: rows of 1 (decode), 8 and 128
    (prefill). GB/s counts the weights and scales read."""
    k = n = 4096
    harness.perf_torch_reference("linear bf16", f"torch linear bfloat16 1x{k}x{n}",
                                 lambda torch: mv_reference(torch, k, n), nbytes=n * k * 2)
    w4 = RNG.integers(0, 256, (n, k // 2), dtype=np.uint8)
    s4 = (RNG.random((n, k // 32), dtype=np.float32) * 0.01 + 1e-3).astype(np.float32)
    w8 = RNG.integers(-128, 128, (n, k), dtype=np.int8)
    s8 = (RNG.random((n, 1), dtype=np.float32) * 0.01 + 1e-3).astype(np.float32)
    for m in (1, 8, 128):
        x = rand((m, k))
        perf(f"fully_connected_dq 4-bit/32 {m}x{k}x{n}", "xnnpack::fully_connected_dq", x, w4, s4,
             np.zeros(n, np.float32), None, 4, 1, -np.inf, np.inf, Out(np.float32, (m, n)),
             nbytes=w4.nbytes + s4.nbytes, ref="linear bf16")
        perf(f"fully_connected_dq 8-bit {m}x{k}x{n}", "xnnpack::fully_connected_dq", x, w8, s8,
             np.zeros(n, np.int32), None, 8, 1, -np.inf, np.inf, Out(np.float32, (m, n)),
             nbytes=w8.nbytes, ref="linear bf16")
    b = tensor(rand((k, n)), BF16)
    perf(f"mm bfloat16 1x{k}x{n}", "aten::mm.out", tensor(rand((1, k)), BF16), b,
         Out(BF16, (1, n)), nbytes=n * k * 2, ref="linear bf16")
    # A small LLM's decode linears (dim 512, hidden 1536), where a launch's
    # latency, not its bytes, sets the time.
    for k, n in ((512, 1536), (1536, 512)):
        w4 = RNG.integers(0, 256, (n, k // 2), dtype=np.uint8)
        s4 = (RNG.random((n, k // 32), dtype=np.float32) * 0.01 + 1e-3).astype(np.float32)
        perf(f"fully_connected_dq 4-bit/32 1x{k}x{n}", "xnnpack::fully_connected_dq",
             rand((1, k)), w4, s4, np.zeros(n, np.float32), None, 4, 1, -np.inf, np.inf,
             Out(np.float32, (1, n)), nbytes=w4.nbytes + s4.nbytes)
        perf(f"mm bfloat16 1x{k}x{n}", "aten::mm.out", tensor(rand((1, k)), BF16),
             tensor(rand((k, n)), BF16), Out(BF16, (1, n)), nbytes=n * k * 2)

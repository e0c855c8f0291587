"""native_layer_norm, _native_batch_norm_legit_no_training and
native_group_norm against float64 NumPy: every floating dtype (f16 / bf16
computed in float), affine variants, dim orders, ranks, large offsets
(two-pass statistics), threads, empty inputs and argument errors."""

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, cast, check, check_error, dtype_of, normal, rand,
                     reference, tensor, uniform, value)

FLOATS = [np.float32, np.float16, BF16, np.float64]
# Against float64 statistics: outs, means and rstds alike.
TOL = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12), "float16": (5e-3, 5e-3),
       BF16: (3e-2, 3e-2)}


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


@reference("aten::native_layer_norm.out")
def layer_norm_model(a, shape, w, b, eps, out, mean_out, rstd_out):
    x = value(a)
    if x.size == 0:
        stat = [0 if s == 0 else s for s in mean_out.shape]
        return [np.zeros(x.shape), np.zeros(stat), np.zeros(stat)]
    y, mean, rstd = np_layer_norm(x, len(shape), value(w), value(b), eps)
    return [cast(y, dtype_of(out)), cast(mean, dtype_of(mean_out)),
            cast(rstd, dtype_of(rstd_out))]


def np_batch_norm(x, w, b, mean, var, eps):
    shape = [1, -1] + [1] * (x.ndim - 2)
    y = (x.astype(np.float64) - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


@reference("aten::_native_batch_norm_legit_no_training.out")
def batch_norm_model(a, w, b, mean, var, momentum, eps, out, out1, out2):
    y = np_batch_norm(value(a), value(w), value(b), value(mean).astype(np.float64),
                      value(var).astype(np.float64), eps)
    return [cast(y, dtype_of(out)), np.zeros(0), np.zeros(0)]


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


@reference("aten::native_group_norm.out")
def group_norm_model(a, w, b, n, c, hw, groups, eps, out, mean_out, rstd_out):
    y, mean, rstd = np_group_norm(value(a), value(w), value(b), groups, eps)
    return [cast(y, dtype_of(out)), cast(mean, dtype_of(mean_out)),
            cast(rstd, dtype_of(rstd_out))]


# ---- layer norm -------------------------------------------------------------------------------


def layer_norm(device, x, shape, w, b, eps, dtype=np.float32, order=None, as_bf16=False,
               **kw):
    k = len(shape)
    stat = list(x.shape[: x.ndim - k]) + [1] * k
    wrap = (lambda a: None if a is None else T(a, bf16=True)) if as_bf16 else (lambda a: a)
    odt = BF16 if as_bf16 else dtype
    return check(device, "aten::native_layer_norm.out", T(x, dim_order=order, bf16=as_bf16),
                 shape, wrap(w), wrap(b), eps, Out(odt, x.shape, dim_order=order),
                 Out(odt, stat), Out(odt, stat), **kw)


def layer_norm_error(device, x, shape, w, b, eps, **kw):
    k = len(shape)
    stat = list(x.shape[: max(0, x.ndim - k)]) + [1] * k
    check_error(device, "aten::native_layer_norm.out", x, shape, w, b, eps,
                Out(np.float32, x.shape), Out(np.float32, stat), Out(np.float32, stat), **kw)


@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("k", [1, 2])
def test_layer_norm_affine_variants(device, affine, k):
    x = normal((3, 5, 64), scale=2, loc=1)
    shape = list(x.shape[-k:])
    w = normal(shape) if affine[0] else None
    b = normal(shape) if affine[1] else None
    ry, rm, rr = np_layer_norm(x, k, w, b, 1e-5)
    layer_norm(device, x, shape, w, b, 1e-5, expect=[ry, rm, rr],
               tol=[(1e-4, 1e-5), (1e-5, 1e-6), (1e-4, 0)])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,k", [((4, 16), 1), ((2, 3, 8), 2), ((3, 768), 1), ((3, 4096), 1),
                                     ((2, 3, 4, 5), 1), ((5, 7), 2)])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm(device, dtype, shape, k, affine):
    x = rand(shape)
    norm = list(shape[len(shape) - k:])
    w = tensor(rand(norm), dtype) if affine[0] else None
    b = tensor(rand(norm), dtype) if affine[1] else None
    stat = [s if i < len(shape) - k else 1 for i, s in enumerate(shape)]
    check(device, "aten::native_layer_norm.out", tensor(x, dtype), norm, w, b, 1e-5,
          Out(dtype, shape), Out(dtype, stat), Out(dtype, stat), tol=TOL,
          gpu_tol=(1e-4, 1e-4) if dtype == np.float32 else None)


def test_layer_norm_gpt_shape_threads_and_offset_data(device):
    # Large offset: two-pass variance must not lose precision.
    x = normal((2, 64, 768), loc=1000)
    w, b = normal(768), normal(768)
    ry, rm, rr = np_layer_norm(x, 1, w, b, 1e-5)
    check(device, "aten::native_layer_norm.out", x, [768], w, b, 1e-5, Out(np.float32, x.shape),
          Out(np.float32, [2, 64, 1]), Out(np.float32, [2, 64, 1]), expect=[ry, rm, rr],
          tol=[(2e-3, 2e-3), (1e-6, 0), (2e-3, 0)], num_threads=4)


def test_layer_norm_half_double_and_channels_last(device):
    x = normal((2, 3, 4, 5))
    w, b = normal((3, 4, 5)), normal((3, 4, 5))
    ry, rm, rr = np_layer_norm(x, 3, w, b, 1e-5)
    layer_norm(device, x, [3, 4, 5], w, b, 1e-5, order=CL, expect=[ry, rm, rr], tol=(1e-4, 1e-5))
    layer_norm(device, x.astype(np.float64), [3, 4, 5], w.astype(np.float64),
               b.astype(np.float64), 1e-5, dtype=np.float64, expect=[ry, rm, rr],
               tol=(1e-10, 1e-12))
    x16, w16, b16 = (a.astype(np.float16) for a in (x, w, b))
    r16 = np_layer_norm(x16, 1, w16[0, 0].astype(np.float64), b16[0, 0], 1e-5)
    layer_norm(device, x16, [5], w16[0, 0], b16[0, 0], 1e-5, dtype=np.float16, expect=list(r16),
               tol=(5e-3, 5e-3))
    rb = np_layer_norm(bf16(x), 1, bf16(w[0, 0]), bf16(b[0, 0]), 1e-5)
    layer_norm(device, x, [5], w[0, 0], b[0, 0], 1e-5, as_bf16=True, expect=list(rb),
               tol=(3e-2, 3e-2))


def test_layer_norm_channels_last_and_empty(device):
    x = rand((2, 3, 4, 5))
    check(device, "aten::native_layer_norm.out", T(x, dim_order=CL), [4, 5], rand((4, 5)),
          rand((4, 5)), 1e-5, Out(np.float32, x.shape, dim_order=CL),
          Out(np.float32, [2, 3, 1, 1]), Out(np.float32, [2, 3, 1, 1]), tol=TOL,
          gpu_tol=(1e-4, 1e-4))
    check(device, "aten::native_layer_norm.out", rand((0, 8)), [8], None, None, 1e-5,
          Out(np.float32, [0, 8]), Out(np.float32, [0, 1]), Out(np.float32, [0, 1]))


def test_layer_norm_errors_and_empty(device):
    x = np.ones((2, 4), np.float32)
    layer_norm_error(device, x, [3], None, None, 1e-5, exc=ValueError)
    layer_norm_error(device, x, [], None, None, 1e-5, exc=ValueError)
    layer_norm_error(device, x, [4], np.ones(3, np.float32), None, 1e-5, exc=ValueError)
    layer_norm_error(device, x, [4], np.ones(4, np.float64), None, 1e-5, exc=ValueError)
    layer_norm(device, np.zeros((0, 4), np.float32), [4], None, None, 1e-5,
               expect=[np.zeros((0, 4)), np.zeros((0, 1)), np.zeros((0, 1))])


# ---- batch norm (inference) -------------------------------------------------------------------


def batch_norm(device, x, w, b, mean, var, eps, dtype=np.float32, order=None, as_bf16=False,
               **kw):
    wrap = (lambda a: None if a is None else T(a, bf16=True)) if as_bf16 else (lambda a: a)
    odt = BF16 if as_bf16 else dtype
    return check(device, "aten::_native_batch_norm_legit_no_training.out",
                 T(x, dim_order=order, bf16=as_bf16), wrap(w), wrap(b), wrap(mean), wrap(var),
                 0.1, eps, Out(odt, x.shape, dim_order=order),
                 Out(odt, [5], dynamic=True), Out(odt, [5], dynamic=True), **kw)


def batch_norm_error(device, x, w, b, mean, var, eps, **kw):
    check_error(device, "aten::_native_batch_norm_legit_no_training.out", x, w, b, mean, var,
                0.1, eps, Out(np.float32, x.shape), Out(np.float32, [5], dynamic=True),
                Out(np.float32, [5], dynamic=True), **kw)


@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_layouts(device, order, affine):
    x = normal((2, 6, 5, 7))
    mean = normal(6)
    var = uniform(0.5, 2, 6, np.float32)
    w = normal(6) if affine else None
    b = normal(6) if affine else None
    # The two stats outs are resized to (0,).
    batch_norm(device, x, w, b, mean, var, 1e-5, order=order,
               expect=[np_batch_norm(x, w, b, mean, var, 1e-5), np.zeros(0), np.zeros(0)],
               tol=(1e-5, 1e-5))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm(device, dtype, order, affine):
    c = 6
    x = rand((2, c, 5, 7))
    w = tensor(rand((c,)), dtype) if affine else None
    b = tensor(rand((c,)), dtype) if affine else None
    mean = tensor(rand((c,)), dtype)
    var = tensor(rand((c,), low=0.5, high=2.0), dtype)
    check(device, "aten::_native_batch_norm_legit_no_training.out", tensor(x, dtype, order), w, b,
          mean, var, 0.1, 1e-5, Out(dtype, x.shape, dim_order=order), Out(dtype, [0]),
          Out(dtype, [0]), tol=TOL)


def test_batch_norm_3d_input(device):
    x = rand((4, 3, 9))
    check(device, "aten::_native_batch_norm_legit_no_training.out", x, rand((3,)), rand((3,)),
          rand((3,)), rand((3,), low=0.5, high=2), 0.1, 1e-5, Out(np.float32, x.shape),
          Out(np.float32, [0]), Out(np.float32, [0]), tol=TOL)


def test_batch_norm_ranks_and_dtypes(device):
    for shape in [(4, 3), (2, 3, 9), (1, 3, 2, 2, 2)]:
        x = normal(shape)
        mean, var = normal(3), np.full(3, 0.7, np.float32)
        w, b = normal(3), normal(3)
        batch_norm(device, x, w, b, mean, var, 1e-3,
                   expect=[np_batch_norm(x, w, b, mean, var, 1e-3), np.zeros(0), np.zeros(0)],
                   tol=(1e-5, 1e-5))
    x = normal((2, 3, 4, 4))
    mean, var = normal(3), np.full(3, 0.7, np.float32)
    w, b = normal(3), normal(3)
    ref = np_batch_norm(*(a.astype(np.float16).astype(np.float64) for a in (x, w, b, mean, var)),
                        1e-3)
    batch_norm(device, *(a.astype(np.float16) for a in (x, w, b, mean, var)), 1e-3,
               dtype=np.float16, expect=[ref, np.zeros(0), np.zeros(0)], tol=(5e-3, 5e-3))
    ref = np_batch_norm(*(bf16(a) for a in (x, w, b, mean, var)), 1e-3)
    batch_norm(device, x, w, b, mean, var, 1e-3, as_bf16=True,
               expect=[ref, np.zeros(0), np.zeros(0)], tol=(2e-2, 2e-2))


def test_batch_norm_errors(device):
    x = np.ones((2, 3, 4), np.float32)
    batch_norm_error(device, x, None, None, np.zeros(4, np.float32), np.ones(3, np.float32), 1e-5,
                     exc=ValueError)
    batch_norm_error(device, x, None, None, np.zeros(3, np.float64), np.ones(3, np.float32), 1e-5,
                     exc=ValueError)
    batch_norm_error(device, np.ones(3, np.float32), None, None, np.zeros(3, np.float32),
                     np.ones(3, np.float32), 1e-5, exc=ValueError)


# ---- group norm -------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("groups", [1, 2, 8])
def test_group_norm_against_float64(device, order, groups):
    x = normal((2, 8, 5, 6), scale=3, loc=2)
    w, b = normal(8), normal(8)
    ry, rm, rr = np_group_norm(x, w, b, groups, 1e-5)
    check(device, "aten::native_group_norm.out", T(x, dim_order=order), w, b, 2, 8, 30, groups,
          1e-5, Out(np.float32, x.shape, dim_order=order), Out(np.float32, [2, groups]),
          Out(np.float32, [2, groups]), expect=[ry, rm, rr],
          tol=[(1e-4, 1e-4), (1e-5, 1e-5), (1e-4, 0)])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("order", [None, CL])
@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm(device, dtype, order, groups):
    n, c, h, w = 2, 6, 5, 4
    x = rand((n, c, h, w))
    gpu_tol = (1e-4, 1e-4) if dtype == np.float32 else None
    check(device, "aten::native_group_norm.out", tensor(x, dtype, order),
          tensor(rand((c,)), dtype), tensor(rand((c,)), dtype), n, c, h * w, groups, 1e-5,
          Out(dtype, x.shape, dim_order=order), Out(dtype, [n, groups]), Out(dtype, [n, groups]),
          tol=TOL, gpu_tol=gpu_tol)
    check(device, "aten::native_group_norm.out", tensor(x, dtype, order), None, None, n, c, h * w,
          groups, 1e-5, Out(dtype, x.shape), Out(dtype, [n, groups]), Out(dtype, [n, groups]),
          tol=TOL, gpu_tol=gpu_tol)


def test_group_norm_no_affine_3d_and_errors(device):
    x = normal((3, 6, 10), np.float64)
    ref = np_group_norm(x, None, None, 3, 1e-6)
    check(device, "aten::native_group_norm.out", x, None, None, 3, 6, 10, 3, 1e-6,
          Out(np.float64, x.shape), Out(np.float64, [3, 3]), Out(np.float64, [3, 3]),
          expect=list(ref), tol=(1e-10, 1e-12))
    check_error(device, "aten::native_group_norm.out", x, None, None, 3, 6, 10, 4, 1e-6,
                Out(np.float64, x.shape), Out(np.float64, [3, 4]), Out(np.float64, [3, 4]),
                exc=ValueError)
    check_error(device, "aten::native_group_norm.out", x, None, None, 3, 6, 11, 3, 1e-6,
                Out(np.float64, x.shape), Out(np.float64, [3, 3]), Out(np.float64, [3, 3]),
                exc=ValueError)


@pytest.mark.parametrize("width", [12, 13, 1024, 1028, 2049, 8192, 8196, 16384, 16392])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_layer_norm_row_widths(device, width, affine, dtype):
    # Each of the CUDA kernel's paths: rows held in registers by a warp or
    # by the block, in 16-byte packs or single elements, and rows too long
    # for registers; the same rows on the CPU.
    x = normal((3, width), scale=2, loc=3)
    w = normal(width) if affine else None
    b = normal(width) if affine else None
    if dtype == BF16:
        x, w, b = (None if a is None else bf16(a) for a in (x, w, b))
    ry, rm, rr = np_layer_norm(x, 1, w, b, 1e-5)
    tol = [(2e-2, 2e-2)] * 3 if dtype == BF16 else [(1e-4, 1e-5), (1e-5, 1e-6), (1e-4, 0)]
    check(device, "aten::native_layer_norm.out", tensor(x, dtype), [width],
          None if w is None else tensor(w, dtype), None if b is None else tensor(b, dtype), 1e-5,
          Out(dtype, x.shape), Out(dtype, [3, 1]), Out(dtype, [3, 1]), expect=[ry, rm, rr],
          tol=tol)


# ---- RMS norm (pterun::rms_norm.out, made at load from torch's decomposed RMSNorm) ------------

RMS = "pterun::rms_norm.out"
# Against the step-by-step NumPy model: a mean summed in another order may
# round to the neighbouring value of the steps' dtype, and carry it on.
RMS_TOL = {"float32": (1e-6, 1e-6), "float64": (1e-12, 1e-12), "float16": (2e-3, 2e-3),
           BF16: (1.6e-2, 1.6e-2)}


def np_rms_norm(x, eps, w, steps, out_dtype):
    """torch's decomposed RMSNorm as the unfused instructions compute it:
    each step's result rounded to `steps` (x * x, the mean, + eps, rsqrt,
    x * r), then to out's dtype, then times the weight, rounded again."""
    def r(v):
        return cast(v, steps).astype(np.float64)
    x = np.asarray(x, np.float64)
    n = x.shape[-1]
    sq = r(x * x)
    mean = r(sq.sum(-1, keepdims=True) / n)
    rstd = r(1 / np.sqrt(r(mean + float(cast(np.float64(eps), steps)))))
    y = cast(r(x * rstd), out_dtype).astype(np.float64)
    if w is not None:
        y = y * np.asarray(w, np.float64)
    return cast(y, out_dtype)


def rms_norm(device, x, eps, w, steps, x_dtype=None, out_dtype=None, order=None, **kw):
    """Runs pterun::rms_norm.out on x (values in float64, given to the kernel
    as x_dtype) with eps of dtype `steps` and the weight as out_dtype."""
    x_dtype = x_dtype or steps
    out_dtype = out_dtype or steps
    xv = cast(x, x_dtype).astype(np.float64)
    wv = None if w is None else cast(w, out_dtype).astype(np.float64)
    want = np_rms_norm(xv, eps, wv, steps, out_dtype)
    tol = RMS_TOL[out_dtype if out_dtype == BF16 else np.dtype(out_dtype).name]
    return check(device, RMS, tensor(xv, x_dtype, order), tensor(np.array(eps), steps),
                 None if w is None else tensor(wv, out_dtype),
                 Out(out_dtype, x.shape, dim_order=order), expect=[want], tol=tol,
                 gpu_tol=tol, **kw)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(4, 64), (2, 3, 16), (3, 768), (3, 4096), (5, 7), (1, 1000),
                                   (64,)])
@pytest.mark.parametrize("weighted", [True, False])
def test_rms_norm(device, dtype, shape, weighted):
    # Rows of whole 16-byte packs take the GPU's register kernel, the rest
    # (7 and 1000 wide, float64) the block kernel.
    x = normal(shape, scale=2)
    w = rand(shape[-1:]) if weighted else None
    rms_norm(device, x, 1e-5, w, dtype, num_threads=2)


@pytest.mark.parametrize("half", [np.float16, BF16])
@pytest.mark.parametrize("out_half", [True, False])
def test_rms_norm_half_precision_beside_float32_steps(device, half, out_half):
    # torch's x.float() before and .type_as(x) after (the LLM exports), or
    # a float32 result.
    x = normal((3, 5, 128), scale=3)
    out = half if out_half else np.float32
    rms_norm(device, x, 1e-6, rand((128,)), np.float32, x_dtype=half, out_dtype=out)
    rms_norm(device, x[0], 1e-6, None, np.float32, x_dtype=half, out_dtype=out)


def test_rms_norm_layouts_and_empty(device):
    # A last dim that is not the fastest (channels-last): the block kernel.
    x = normal((2, 3, 4, 6))
    rms_norm(device, x, 1e-5, rand((6,)), np.float32, order=CL)
    rms_norm(device, normal((0, 8)), 1e-5, None, np.float32)
    # Tiny and huge values: the squares underflow or overflow as torch's do.
    rms_norm(device, np.array([[1e-30, 2e-30, -1e-30], [1e30, 3e30, 2e30]]), 1e-5, None,
             np.float32)


def test_rms_norm_errors(device):
    x = np.ones((2, 4), np.float32)
    eps = np.array(1e-5, np.float32)
    out = Out(np.float32, (2, 4))
    check_error(device, RMS, x, np.array([1e-5, 1e-5], np.float32), None, out, exc=ValueError,
                match="one element")
    check_error(device, RMS, x, eps, np.ones(3, np.float32), out, exc=ValueError,
                match="last dim")
    check_error(device, RMS, x, eps, np.ones(4, np.float64), out, exc=ValueError)
    # float64 x beside float32 steps, float16 out beside float16... float32 out.
    check_error(device, RMS, x.astype(np.float64), eps, None, Out(np.float64, (2, 4)),
                exc=ValueError, match="eps's dtype")
    check_error(device, RMS, x.astype(np.float16), eps.astype(np.float16), None, out,
                exc=ValueError, match="eps's dtype")
    check_error(device, RMS, np.ones((2, 4), np.int32), np.array(1, np.int32), None,
                Out(np.int32, (2, 4)), exc=(ValueError, NotImplementedError))

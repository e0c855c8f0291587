"""The quantized_decomposed operators against NumPy models of ExecuTorch's
arithmetic (kernels/quantized/cpu: the float32 reciprocal, nearbyint and
the zero point added after rounding; dequantizing with a float32 product;
fbgemm's choose_qparams) and of torch's per-channel-group reference:
every input and quantized dtype, per-tensor / channel / token / group
layouts, dim orders, ties at .5, NaN and infinities, and every argument
error. On a GPU the CUDA kernels must match the CPU exactly."""

import numpy as np
import pytest

from harness import (BF16, CL, Out, T, bf16, check, check_error, dtype_of, normal, rand, reference,
                     tensor, value)

F32, F64, F16 = np.float32, np.float64, np.float16
QDTYPES = {np.uint8: 0, np.int8: 1, np.int16: 2, np.int32: 3, np.uint16: 27}
FLOAT_NUMBERS = {F16: 5, F32: 6, F64: 7, BF16: 15}

Q_T = "quantized_decomposed::quantize_per_tensor.out"
Q_TT = "quantized_decomposed::quantize_per_tensor.Tensor_out"
DQ_T = "quantized_decomposed::dequantize_per_tensor.out"
DQ_TT = "quantized_decomposed::dequantize_per_tensor.Tensor_out"
Q_C = "quantized_decomposed::quantize_per_channel.out"
DQ_C = "quantized_decomposed::dequantize_per_channel.out"
Q_TOK = "quantized_decomposed::quantize_per_token.out"
DQ_TOK = "quantized_decomposed::dequantize_per_token.out"
Q_G = "quantized_decomposed::quantize_per_channel_group.out"
DQ_G = "quantized_decomposed::dequantize_per_channel_group.out"
CHOOSE = "quantized_decomposed::choose_qparams.Tensor_out"
CHOOSE_TOK = "quantized_decomposed::choose_qparams_per_token_asymmetric.out"
ADD = "quantized_decomposed::add.out"


def qnum(dt):
    return QDTYPES[np.dtype(dt).type]


def qrange(dt):
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


# ---- NumPy models ---------------------------------------------------------------------------


def et_quantize(x, scale, zp, qmin, qmax, dt):
    """ExecuTorch's quantize_val, elementwise; scale and zp broadcast."""
    scale = np.asarray(scale, np.float64)
    inv = (np.float32(1.0) / scale.astype(np.float32)).astype(np.float32)
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if x.dtype == np.float64:
            p = (inv.astype(np.float64) * x).astype(np.float32)
        else:
            p = (inv * x.astype(np.float32)).astype(np.float32)
        s = (np.asarray(zp).astype(np.int32).astype(np.float32) + np.rint(p)).astype(np.float32)
        s = s.astype(np.float64)
        q = np.where(np.isnan(s), qmin, np.clip(s, qmin, qmax))
    return q.astype(np.int64).astype(dt)


def et_dequantize(q, scale, zp, out_dt):
    """(q - zp) * float32(scale) in float32, then out's dtype."""
    scale = np.asarray(scale, np.float64).astype(np.float32)
    d = (np.asarray(q).astype(np.int64) - np.asarray(zp).astype(np.int64)).astype(np.float32)
    v = (d * scale).astype(np.float32)
    return bf16(v) if out_dt == BF16 else v.astype(out_dt)


def channel_shape(x, axis):
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return shape


@reference(Q_T)
def q_t_model(x, scale, zp, qmin, qmax, dtype, out):
    return et_quantize(value(x), scale, zp, qmin, qmax, dtype_of(out))


@reference(Q_TT)
def q_tt_model(x, scale, zp, qmin, qmax, dtype, out):
    return et_quantize(value(x), value(scale)[0], value(zp)[0], qmin, qmax, dtype_of(out))


@reference(DQ_T)
def dq_t_model(q, scale, zp, qmin, qmax, dtype, out_dtype, out):
    return et_dequantize(value(q), scale, zp, dtype_of(out))


@reference(DQ_TT)
def dq_tt_model(q, scale, zp, qmin, qmax, dtype, out_dtype, out):
    return et_dequantize(value(q), value(scale)[0], value(zp)[0], dtype_of(out))


@reference(Q_C)
def q_c_model(x, scales, zps, axis, qmin, qmax, dtype, out):
    x = value(x)
    shape = channel_shape(x, axis)
    return et_quantize(x, value(scales).reshape(shape), value(zps).reshape(shape), qmin, qmax,
                       dtype_of(out))


@reference(DQ_C)
def dq_c_model(q, scales, zps, axis, qmin, qmax, dtype, out_dtype, out):
    q = value(q)
    shape = channel_shape(q, axis)
    zp = 0 if zps is None else value(zps).reshape(shape)
    return et_dequantize(q, value(scales).reshape(shape), zp, dtype_of(out))


@reference(Q_TOK)
def q_tok_model(x, scales, zps, qmin, qmax, dtype, out):
    x = value(x)
    shape = list(x.shape[:-1]) + [1]
    return et_quantize(x, value(scales).reshape(shape), value(zps).reshape(shape), qmin, qmax,
                       dtype_of(out))


@reference(DQ_TOK)
def dq_tok_model(q, scales, zps, qmin, qmax, dtype, output_dtype, out):
    q = value(q)
    shape = list(q.shape[:-1]) + [1]
    return et_dequantize(q, value(scales).reshape(shape), value(zps).reshape(shape), dtype_of(out))


def group_of(x, scales, group):
    if group > x.shape[-1] and value(scales).shape[-1] == 1:
        group = x.shape[-1]
    return group


def round_to(v, dt):
    if dt == BF16:
        return bf16(v)
    return v.astype(dt).astype(np.float32) if dt == F16 else v


@reference(Q_G)
def q_g_model(x, scales, zps, qmin, qmax, dtype, group, out):
    """torch's quantize_per_channel_group: x * (1 / scale) + zp, rounded."""
    x = value(x)
    g = group_of(x, scales, group)
    s = value(scales).reshape(-1, 1)
    z = value(zps).reshape(-1, 1)
    rows = x.reshape(-1, g)
    sdt = dtype_of(scales)
    with np.errstate(all="ignore"):
        if sdt == F64 or x.dtype == np.float64:
            v = rows.astype(np.float64) * (1.0 / s.astype(np.float64)) + z
        else:
            inv = round_to((np.float32(1) / s.astype(np.float32)).astype(np.float32), sdt)
            v = (rows.astype(np.float32) * inv).astype(np.float32) + z.astype(np.float32)
            v = v.astype(np.float32)
        r = np.rint(v).astype(np.float64)
        q = np.where(np.isnan(r), qmin, np.clip(r, qmin, qmax))
    return q.astype(np.int64).astype(dtype_of(out)).reshape(x.shape)


@reference(DQ_G)
def dq_g_model(q, scales, zps, qmin, qmax, dtype, group, output_dtype, out):
    q = value(q)
    g = group_of(q, scales, group)
    s = value(scales).reshape(-1, 1)
    z = 0 if zps is None else value(zps).reshape(-1, 1).astype(np.int64)
    d = q.reshape(-1, g).astype(np.int64) - z
    sdt = dtype_of(scales)
    if sdt == F64:
        v = d.astype(np.float64) * s
    else:
        v = round_to((d.astype(np.float32) * s.astype(np.float32)).astype(np.float32), sdt)
    out_dt = dtype_of(out)
    v = v.reshape(q.shape)
    return bf16(v) if out_dt == BF16 else v.astype(out_dt)


def choose_row(lo, hi, qmin, qmax):
    """ExecuTorch's calculate_scale_and_zero_point, operation for operation."""
    f32 = np.float32
    small = f32(6.1e-5)
    lo, hi = min(f32(lo), f32(0)), max(f32(hi), f32(0))
    scale = (float(hi) - float(lo)) / (qmax - qmin)
    if f32(scale) == 0 or np.isinf(f32(1) / f32(scale)):
        scale = 0.1
    if scale < float(small):
        org = f32(scale)
        scale = float(small)
        if lo == 0:
            hi = f32(small * f32(qmax - qmin))
        elif hi == 0:
            lo = f32(-small * f32(qmax - qmin))
        else:
            amp = f32(small / org)
            lo, hi = f32(lo * amp), f32(hi * amp)
    from_min = qmin - float(lo) / scale
    from_max = qmax - float(hi) / scale
    err_min = abs(qmin) - abs(float(lo) / scale)
    err_max = abs(qmax) - abs(float(hi) / scale)
    initial = from_min if err_min < err_max else from_max
    if initial < qmin:
        zp = qmin
    elif initial > qmax:
        zp = qmax
    else:
        zp = int(np.rint(f32(initial)))
    return scale, zp


@reference(CHOOSE)
def choose_model(x, qmin, qmax, eps, dtype, scale_out, zp_out):
    x = value(x).reshape(-1)
    lo, hi = (x.min(), x.max()) if x.size else (0.0, 0.0)
    s, z = choose_row(lo, hi, qmin, qmax)
    return [np.array([s]), np.array([z], np.int64)]


@reference(CHOOSE_TOK)
def choose_tok_model(x, dtype, scale_out, zp_out):
    x = value(x)
    rows = x.reshape(-1, x.shape[-1])
    shape = list(x.shape[:-1]) + [1]
    pairs = [choose_row(r.min(), r.max(), -128, 127) for r in rows]
    return [np.array([p[0] for p in pairs]).reshape(shape),
            np.array([p[1] for p in pairs], np.int64).reshape(shape)]


@reference(ADD)
def add_model(a, sa, za, amin, amax, b, sb, zb, bmin, bmax, so, zo, omin, omax, out):
    fa = et_dequantize(value(a), sa, za, F32)
    fb = et_dequantize(value(b), sb, zb, F32)
    return et_quantize((fa + fb).astype(F32), so, zo, omin, omax, dtype_of(out))


# ---- quantize / dequantize per tensor -------------------------------------------------------


@pytest.mark.parametrize("in_dt", [F32, F64, F16, BF16])
@pytest.mark.parametrize("q_dt", [np.int8, np.uint8, np.int16, np.uint16, np.int32])
def test_quantize_per_tensor(device, in_dt, q_dt):
    qmin, qmax = qrange(q_dt)
    zp = (qmin + qmax) // 3
    x = normal((5, 37), F32, scale=4.0)
    check(device, Q_T, tensor(x, in_dt), 0.037, zp, qmin, qmax, qnum(q_dt),
          Out(q_dt, x.shape))


def test_quantize_rounds_half_to_even_after_the_float32_reciprocal(device):
    # x * (1 / 0.5) is exactly k + 0.5: ties go to even, then the zero point.
    x = np.array([0.25, 0.75, 1.25, -0.25, -0.75, 2.25, 1e-8, -1e-8] * 5, F32)
    check(device, Q_T, x, 0.5, 3, -128, 127, 1, Out(np.int8, x.shape))
    # A scale whose float32 reciprocal differs from 1 / scale in double.
    x = (np.arange(-60, 60, dtype=F32) * F32(0.1)).astype(F32)
    check(device, Q_T, x, 0.1, -7, -128, 127, 1, Out(np.int8, x.shape))


def test_quantize_saturates_and_sends_nan_to_quant_min(device):
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9, 0.0] * 3, F32)
    check(device, Q_T, x, 0.01, 5, -100, 90, 1, Out(np.int8, x.shape))
    check(device, Q_T, x, 1e-3, 0, qrange(np.int32)[0], qrange(np.int32)[1], 3,
          Out(np.int32, x.shape))


@pytest.mark.parametrize("order", [None, CL])
def test_quantize_dequantize_layouts(device, order):
    x = normal((2, 3, 4, 5), F32)
    check(device, Q_T, T(x, dim_order=order), 0.02, -3, -128, 127, 1,
          Out(np.int8, x.shape, dim_order=order))
    q = rand((2, 3, 4, 5), np.int8, -128, 128)
    check(device, DQ_T, T(q, dim_order=order), 0.02, -3, -128, 127, 1, None,
          Out(F32, q.shape, dim_order=order))


def test_quantize_per_tensor_tensor_args(device):
    x = normal((7, 9), F32, scale=3.0)
    check(device, Q_TT, x, np.array([0.05]), np.array([-4], np.int64), -128, 127, 1,
          Out(np.int8, x.shape))
    check(device, Q_TT, x, np.array([0.05]), np.array([200], np.int64), 0, 255, 0,
          Out(np.uint8, x.shape))


@pytest.mark.parametrize("q_dt", [np.int8, np.uint8, np.int16, np.uint16, np.int32])
@pytest.mark.parametrize("out_dt", [F32, F64, F16, BF16])
def test_dequantize_per_tensor(device, q_dt, out_dt):
    qmin, qmax = qrange(q_dt)
    q = rand((4, 33), q_dt, max(qmin, -30000), min(qmax, 30000) + 1)
    zp = (qmin + qmax) // 2
    check(device, DQ_T, q, 0.0173, zp, qmin, qmax, qnum(q_dt), None, Out(out_dt, q.shape))
    check(device, DQ_T, q, 0.0173, zp, qmin, qmax, qnum(q_dt), FLOAT_NUMBERS[out_dt],
          Out(out_dt, q.shape))


def test_dequantize_per_tensor_tensor_args(device):
    q = rand((6, 10), np.int8, -128, 128)
    check(device, DQ_TT, q, np.array([0.031]), np.array([7], np.int64), -128, 127, 1, None,
          Out(F32, q.shape))


def test_empty(device):
    x = np.zeros((0, 3), F32)
    check(device, Q_T, x, 0.1, 0, -128, 127, 1, Out(np.int8, (0, 3)))
    check(device, DQ_T, x.astype(np.int8), 0.1, 0, -128, 127, 1, None, Out(F32, (0, 3)))


# ---- per channel, per token, per group ------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("order", [None, CL])
def test_quantize_per_channel(device, axis, order):
    x = normal((3, 4, 5, 6), F32, scale=2.0)
    n = x.shape[axis]
    scales = rand((n,), F64, 0.005, 0.05)
    zps = rand((n,), np.int64, -20, 20)
    check(device, Q_C, T(x, dim_order=order), scales, zps, axis, -128, 127, 1,
          Out(np.int8, x.shape, dim_order=order))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("scale_dt", [F32, F64])
@pytest.mark.parametrize("zp", ["none", "int64", "int32"])
def test_dequantize_per_channel(device, axis, scale_dt, zp):
    q = rand((6, 5, 7), np.int8, -127, 128)
    n = q.shape[axis]
    scales = rand((n,), scale_dt, 0.001, 0.1)
    zps = None if zp == "none" else rand((n,), np.dtype(zp), -10, 10)
    check(device, DQ_C, q, scales, zps, axis, -127, 127, 1, None, Out(F32, q.shape))


def test_dequantize_per_channel_weights_in_channels_last(device):
    q = rand((8, 3, 3, 3), np.int8, -127, 128)
    scales = rand((8,), F32, 0.001, 0.1)
    check(device, DQ_C, T(q, dim_order=CL), scales, None, 0, -127, 127, 1, 6,
          Out(F32, q.shape, dim_order=CL))


def test_quantize_dequantize_per_token(device):
    x = normal((2, 5, 16), F32, scale=3.0)
    scales = rand((2, 5, 1), F64, 0.01, 0.05)
    zps = rand((2, 5, 1), np.int64, -50, 50)
    check(device, Q_TOK, x, scales, zps, -128, 127, 1, Out(np.int8, x.shape))
    q = rand((2, 5, 16), np.int8, -128, 128)
    check(device, DQ_TOK, q, scales, zps, -128, 127, 1, 6, Out(F32, q.shape))
    check(device, DQ_TOK, q, scales.astype(F32), zps.astype(np.int32), -128, 127, 1, 5,
          Out(F16, q.shape))


@pytest.mark.parametrize("scale_dt", [F32, F16, BF16, F64])
def test_per_channel_group(device, scale_dt):
    x = normal((6, 64), F32, scale=2.0)
    scales = tensor(rand((6, 2), F32, 0.02, 0.2), scale_dt)
    zps = rand((6, 2), np.int64, -8, 8)
    check(device, Q_G, x, scales, zps, -8, 7, 1, 32, Out(np.int8, x.shape))
    q = rand((6, 64), np.int8, -8, 8)
    check(device, DQ_G, q, scales, zps, -8, 7, 1, 32, 6, Out(F32, q.shape))
    check(device, DQ_G, q, scales, None, -8, 7, 1, 32, 15, Out(BF16, q.shape))


def test_per_channel_group_wider_than_a_row(device):
    # torch takes a group wider than a row, with one scale per row, as the row.
    x = normal((4, 24), F32)
    scales = rand((4, 1), F32, 0.05, 0.1)
    zps = np.zeros((4, 1), np.int32)
    check(device, Q_G, x, scales, zps, -128, 127, 1, 128, Out(np.int8, x.shape))


# ---- choose_qparams -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["normal", "positive", "negative", "zeros", "tiny", "one",
                                  "wide"])
def test_choose_qparams(device, kind):
    x = {
        "normal": normal((8, 16), F32, scale=2.0),
        "positive": rand((8, 16), F32, 0.5, 3.0),
        "negative": rand((8, 16), F32, -3.0, -0.5),
        "zeros": np.zeros((8, 16), F32),
        "tiny": normal((8, 16), F32, scale=1e-6),
        "one": np.array([0.7], F32),
        "wide": normal((8, 16), F32, scale=1e6),
    }[kind]
    check(device, CHOOSE, x, -128, 127, 1e-5, 1, Out(F64, (1,)), Out(np.int64, (1,)))
    check(device, CHOOSE, x, 0, 255, 1e-5, 0, Out(F64, (1,)), Out(np.int64, (1,)))


def test_choose_qparams_per_token_asymmetric(device):
    x = normal((3, 4, 32), F32, scale=2.0)
    x[0, 0] = 0.0
    x[1, 2] = np.abs(x[1, 2]) + 1.0
    x[2, 3] *= 1e-7
    check(device, CHOOSE_TOK, x, 1, Out(F64, (3, 4, 1)), Out(np.int64, (3, 4, 1)))


# ---- quantized add --------------------------------------------------------------------------


@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_quantized_add(device, dt):
    lo, hi = qrange(dt)
    a = rand((4, 50), dt, lo, hi + 1)
    b = rand((4, 50), dt, lo, hi + 1)
    mid = (lo + hi) // 2
    check(device, ADD, a, 0.02, mid, lo, hi, b, 0.013, mid + 3, lo, hi, 0.03, mid - 2, lo, hi,
          Out(dt, a.shape))
    # A narrower out clamp (a fused relu).
    check(device, ADD, a, 0.02, mid, lo, hi, b, 0.013, mid, lo, hi, 0.03, mid, mid, hi,
          Out(dt, a.shape))


# ---- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.0, -0.5, float("nan"), float("inf"), 1e-50])
def test_bad_scales_raise(device, scale):
    x = normal((4,), F32)
    out = Out(np.int8, (4,))
    check_error(device, Q_T, x, scale, 0, -128, 127, 1, out, exc=ValueError,
                match="not a usable quantization scale")
    q = rand((4,), np.int8, -128, 128)
    check_error(device, DQ_T, q, scale, 0, -128, 127, 1, None, Out(F32, (4,)), exc=ValueError,
                match="quantize_per_tensor.out: scale .* not a usable")
    check_error(device, ADD, q, scale, 0, -128, 127, q, 0.1, 0, -128, 127, 0.1, 0, -128, 127,
                Out(np.int8, (4,)), exc=ValueError, match="a_scale .* not a usable")


def test_bad_zero_points_and_ranges_raise(device):
    x = normal((4,), F32)
    out = Out(np.int8, (4,))
    check_error(device, Q_T, x, 0.1, 128, -128, 127, 1, out, exc=ValueError,
                match="zero_point 128 lies outside the quant range")
    check_error(device, Q_T, x, 0.1, 0, -129, 127, 1, out, exc=ValueError,
                match=r"quant range \[-129, 127\] exceeds int8")
    check_error(device, Q_T, x, 0.1, 0, 10, -10, 1, out, exc=ValueError,
                match="quant_min 10 is greater than quant_max -10")
    q = rand((4,), np.uint8, 0, 256)
    check_error(device, DQ_T, q, 0.1, -1, 0, 255, 0, None, Out(F32, (4,)), exc=ValueError,
                match="zero_point -1 lies outside")


def test_dtype_mismatches_raise(device):
    x = normal((4,), F32)
    check_error(device, Q_T, x, 0.1, 0, -128, 127, 0, Out(np.int8, (4,)), exc=ValueError,
                match="out int8.* does not match dtype uint8")
    check_error(device, Q_T, x, 0.1, 0, -128, 127, 6, Out(np.int8, (4,)), exc=ValueError,
                match="dtype 6 is no quantized dtype")
    check_error(device, Q_T, x.astype(np.int32), 0.1, 0, -128, 127, 1, Out(np.int8, (4,)),
                exc=ValueError, match="input must be floating")
    q = rand((4,), np.int8, -128, 128)
    check_error(device, DQ_T, q, 0.1, 0, -128, 127, 1, 7, Out(F32, (4,)), exc=ValueError,
                match="does not match out_dtype float64")
    check_error(device, DQ_T, q, 0.1, 0, -128, 127, 1, None, Out(np.int32, (4,)), exc=ValueError,
                match="out must be floating")
    check_error(device, Q_TT, x, np.array([0.1], F32), np.array([0], np.int64), -128, 127, 1,
                Out(np.int8, (4,)), exc=ValueError, match="scale float32.* unsupported dtype")
    check_error(device, Q_TT, x, np.array([0.1, 0.2]), np.array([0], np.int64), -128, 127, 1,
                Out(np.int8, (4,)), exc=ValueError, match="should hold 1 values")
    check_error(device, Q_C, normal((3, 4), F32), np.array([0.1, 0.2]), np.zeros(2, np.int64),
                0, -128, 127, 1, Out(np.int8, (3, 4)), exc=ValueError, match="should hold 3")
    check_error(device, Q_C, normal((3, 4), F32), np.full(3, 0.1), np.zeros(3, np.int64), 2,
                -128, 127, 1, Out(np.int8, (3, 4)), exc=IndexError)
    check_error(device, CHOOSE, x.astype(F64), -128, 127, 1e-5, 1, Out(F64, (1,)),
                Out(np.int64, (1,)), exc=ValueError, match="input must be float32")
    check_error(device, ADD, q, 0.1, 0, -128, 127, q.astype(np.uint8), 0.1, 0, 0, 255, 0.1, 0,
                -128, 127, Out(np.int8, (4,)), exc=ValueError, match="b dtype uint8 differs")


def test_bad_parameter_tensors_raise_on_the_cpu(device):
    # Data on the device: CUDA computes with it (no host wait), the CPU raises.
    x = normal((3, 4), F32)
    cpu_only = "parameters held in device tensors are not read back to raise"
    check_error(device, Q_C, x, np.array([0.1, 0.0, 0.1]), np.zeros(3, np.int64), 0, -128, 127,
                1, Out(np.int8, (3, 4)), exc=ValueError, match=r"scales\[1\] 0 is not a usable",
                cpu_only=cpu_only)
    check_error(device, Q_C, x, np.full(3, 0.1), np.array([0, 300, 0]), 0, -128, 127, 1,
                Out(np.int8, (3, 4)), exc=ValueError,
                match=r"zero_points\[1\] 300 lies outside", cpu_only=cpu_only)
    check_error(device, CHOOSE, np.array([1.0, np.nan], F32), -128, 127, 1e-5, 1,
                Out(F64, (1,)), Out(np.int64, (1,)), exc=ValueError, match="NaN or an infinity",
                cpu_only=cpu_only)

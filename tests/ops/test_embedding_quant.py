"""quantized_decomposed::embedding_byte / embedding_4bit / embedding_2bit
(.out and .dtype_out) against NumPy: rows of a quantized table, dequantized
as (w - zero_point) * scale per group. The NumPy model starts from the
unpacked values and packs them the way ExecuTorch's llama exporter does
(4-bit: even element in the high nibble; 2-bit: element j at bits 2 (j % 4),
lowest first), so a kernel that reads the nibbles in XNNPACK's order fails.
Every bad index, scale shape, dtype or bound raises, on every device."""

import numpy as np
import pytest

from harness import BF16, Out, check, check_error, integers, rand, reference, tensor, value
from pterun._testing import T

OPS = {
    8: ("quantized_decomposed::embedding_byte.out", "quantized_decomposed::embedding_byte.dtype_out"),
    4: ("quantized_decomposed::embedding_4bit.out", "quantized_decomposed::embedding_4bit.dtype_out"),
    2: ("quantized_decomposed::embedding_2bit.out", "quantized_decomposed::embedding_2bit.dtype_out"),
}
SCALAR_TYPE = {np.dtype(np.float32): 6, np.dtype(np.float16): 5, BF16: 15}
TOL = {"float32": (1e-6, 1e-6), "float16": (1e-3, 1e-3), "bfloat16": (8e-3, 8e-3)}


def pack(q, bits):
    """Signed values q [V, D] packed into uint8 [V, D * bits / 8]."""
    if bits == 8:
        return q
    u = (q + (8 if bits == 4 else 2)).astype(np.uint8)
    if bits == 4:
        return (u[:, 0::2] << 4) | u[:, 1::2]
    return u[:, 0::4] | (u[:, 1::4] << 2) | (u[:, 2::4] << 4) | (u[:, 3::4] << 6)


def unpack(w, bits, signed8):
    """The inverse of pack, written from the format's description."""
    w = np.asarray(w)
    if bits == 8:
        return w.astype(np.int8 if signed8 else np.uint8).astype(np.float64)
    if bits == 4:
        hi, lo = (w >> 4) & 15, w & 15
        return np.stack([hi, lo], axis=-1).reshape(w.shape[0], -1).astype(np.float64) - 8
    fields = [(w >> (2 * i)) & 3 for i in range(4)]
    return np.stack(fields, axis=-1).reshape(w.shape[0], -1).astype(np.float64) - 2


def make_model(bits):
    def model(weight, scales, zeros, qmin, qmax, indices, *rest):
        out = rest[-1]
        w = unpack(value(weight), bits, value(weight).dtype == np.int8)
        s = np.asarray(value(scales), np.float64)
        s = s[:, None] if s.ndim == 1 else s
        z = np.zeros_like(s) if zeros is None else np.asarray(value(zeros), np.float64)
        z = z[:, None] if z.ndim == 1 else z
        group = w.shape[1] // s.shape[1]
        deq = (w - np.repeat(z, group, axis=1)) * np.repeat(s, group, axis=1)
        return deq[np.asarray(value(indices))].astype(np.float32)

    return model


for _bits, _names in OPS.items():
    reference(*_names)(make_model(_bits))


def table(bits, rows, dim, groups, scale_dtype, zeros=True, signed8=False):
    lo, hi = {8: (-128, 128) if signed8 else (0, 256), 4: (-8, 8), 2: (-2, 2)}[bits]
    q = integers(lo, hi, (rows, dim))
    if bits == 8:
        weight = q.astype(np.int8 if signed8 else np.uint8)
    else:
        weight = pack(q, bits).astype(np.uint8)
    shape = (rows,) if groups == 0 else (rows, groups)
    scales = tensor(rand(shape, np.float32, 0.01, 0.2), scale_dtype)
    zp = tensor(integers(-3, 4, shape).astype(np.float32), scale_dtype) if zeros else None
    return weight, scales, zp


@pytest.mark.parametrize("bits", [8, 4, 2])
@pytest.mark.parametrize("groups", [0, 1, 4])
@pytest.mark.parametrize("zeros", [True, False])
def test_embedding_quantized(device, bits, groups, zeros):
    w, s, z = table(bits, 32, 16, groups, np.float32, zeros)
    idx = integers(0, 32, (2, 5))
    check(device, OPS[bits][0], w, s, z, -8, 7, idx, Out(np.float32, (2, 5, 16)), tol=TOL)


@pytest.mark.parametrize("bits", [8, 4, 2])
@pytest.mark.parametrize("out_dtype", [np.float32, np.float16, BF16])
@pytest.mark.parametrize("scale_dtype", [np.float32, np.float16, BF16])
def test_embedding_quantized_dtype_out(device, bits, out_dtype, scale_dtype):
    w, s, z = table(bits, 20, 32, 2, scale_dtype)
    idx = integers(0, 20, (7,), np.int32)
    dt = np.dtype(out_dtype) if out_dtype != BF16 else BF16
    check(device, OPS[bits][1], w, s, z, 0, 15, idx, SCALAR_TYPE[dt], Out(out_dtype, (7, 32)),
          tol=TOL)
    check(device, OPS[bits][1], w, s, z, 0, 15, idx, None, Out(out_dtype, (7, 32)), tol=TOL)


def test_embedding_byte_signed(device):
    w, s, z = table(8, 10, 8, 2, np.float32, True, signed8=True)
    check(device, OPS[8][0], w, s, z, -128, 127, np.array([9, 0, 3]), Out(np.float32, (3, 8)),
          tol=TOL)


def test_embedding_4bit_nibble_order(device):
    # Row 0 holds 0x1F: element 0 is the high nibble (1 - 8 = -7), element 1 the low one (15 - 8).
    w = np.array([[0x1F]], np.uint8)
    s = np.array([1.0], np.float32)
    check(device, OPS[4][0], w, s, None, -8, 7, np.array([0]), Out(np.float32, (1, 2)),
          expect=np.array([[-7.0, 7.0]], np.float32))


def test_embedding_2bit_field_order(device):
    # 0b11_10_01_00: elements 0..3 are 0, 1, 2, 3 minus 2.
    w = np.array([[0b11100100]], np.uint8)
    s = np.array([1.0], np.float32)
    check(device, OPS[2][0], w, s, None, -2, 1, np.array([0]), Out(np.float32, (1, 4)),
          expect=np.array([[-2.0, -1.0, 0.0, 1.0]], np.float32))


def test_embedding_quantized_scalar_index(device):
    w, s, z = table(4, 8, 8, 0, np.float32)
    check(device, OPS[4][0], w, s, z, -8, 7, np.array(5), Out(np.float32, (8,)), tol=TOL)


def test_embedding_quantized_errors(device):
    w, s, z = table(4, 8, 16, 2, np.float32)
    out = Out(np.float32, (2, 16))
    name = OPS[4][0]
    check_error(device, name, w, s, z, -8, 7, np.array([1, 8]), out, exc=IndexError,
                match="index 8 is out of range for 8 rows")
    check_error(device, name, w, s, z, -8, 7, np.array([-1, 0]), out, exc=IndexError,
                match="index -1 is out of range for 8 rows")
    check_error(device, name, w, s, z, 7, -8, np.array([1, 2]), out, exc=ValueError,
                match="weight_quant_min 7 is greater than weight_quant_max -8")
    check_error(device, name, w, T(rand((8, 3))), None, -8, 7, np.array([1, 2]), out,
                exc=ValueError, match="3 groups do not divide the embedding width 16")
    check_error(device, name, w, T(rand((7, 2))), None, -8, 7, np.array([1, 2]), out,
                exc=ValueError, match="one row per weight row")
    check_error(device, name, w, s, T(rand((8, 4))), -8, 7, np.array([1, 2]), out,
                exc=ValueError, match="weight_zero_points .* differ from weight_scales")
    check_error(device, name, w.astype(np.int8), s, z, -8, 7, np.array([1, 2]), out,
                exc=ValueError, match="packed weight must be uint8")
    check_error(device, name, w, T(np.ones((8, 2), np.int32)), None, -8, 7, np.array([1, 2]),
                out, exc=ValueError, match="weight_scales dtype int32 is not supported")
    check_error(device, name, w, s, z, -8, 7, np.array([1.0, 2.0]), out, exc=TypeError,
                match="int64 or int32")
    check_error(device, OPS[4][1], w, s, z, -8, 7, np.array([1, 2]), 5, out, exc=ValueError,
                match="dtype float16 differs from out's float32")
    check_error(device, name, w, s, z, -8, 7, np.array([1, 2]), Out(np.int32, (2, 16)),
                exc=ValueError, match="out dtype int32 is not supported")

"""xnnpack::fully_connected_dq (an XNNPACK Convert to qdint8 and the
FullyConnected node reading it) against NumPy: XNNPACK's per-slice int8
parameters computed in float32, exact int64 block sums of (q - zp) * (w -
w_zp), then float32 scaling by block, row scale, bias and the output clamp.
8-bit weights, 4-bit weights per channel and in blocks (odd depths, the
vector path's 64-input chunks with blocks of 32 or of multiples of 64, and
the scalar path), slices of one row or several, threads, and the argument
errors. On CUDA the same cases against the CPU cover the one-launch path
(up to 4 rows of one slice, 16 KiB of activations), the two-kernel path
(quantize, then tiles of 4 or 8 rows) and the plain kernel (other depths
and block sizes)."""

import numpy as np
import pytest

from harness import BF16, Out, bf16, check, check_error, integers, normal, reference, tensor, value

FCDQ = "xnnpack::fully_connected_dq"
F32 = np.float32
# The kernel sums blocks and lanes in another order than NumPy.
TOL = (1e-5, 1e-4)


def qd8(x):
    """XNNPACK's dynamic int8 quantization of one slice: (q, zero point,
    scale), every operation in float32."""
    lo = min(F32(x.min()), F32(0))
    hi = max(F32(x.max()), F32(0))
    inv = F32(1) if lo == hi else F32(255) / F32(hi - lo)
    dmin, dmax = F32(lo * inv), F32(hi * inv)
    zp = F32(-128) - dmin if F32(F32(-128) + dmin) + F32(F32(127) + dmax) > 0 else F32(127) - dmax
    zp = int(np.rint(np.clip(zp, -128, 127)))
    q = np.clip(np.rint((x * inv).astype(F32)) + zp, -128, 127).astype(np.int64)
    return q, zp, F32(1) / inv


def unpack4(w, k):
    """Bytes of two 4-bit values (element 2i low) as int64 values - 8."""
    w = value(w).astype(np.int64)
    both = np.stack([w & 0x0F, w >> 4], axis=-1).reshape(w.shape[0], -1)
    return both[:, :k] - 8


@reference(FCDQ)
def fcdq_model(x, w, scales, sums, bias, bits, nnb, lo, hi, out):
    x = value(x).astype(F32)
    k = x.shape[-1]
    rows = x.reshape(-1, k)
    slice_rows = int(np.prod(x.shape[x.ndim - nnb:])) // k
    wv = value(w).astype(np.int64) if bits == 8 else unpack4(w, k)
    scales = value(scales).astype(F32)
    n, blocks = scales.shape
    bs = k // blocks
    y = np.zeros((rows.shape[0], n), F32)
    for s in range(rows.shape[0] // slice_rows):
        part = rows[s * slice_rows:(s + 1) * slice_rows]
        q, zp, scale = qd8(part)
        acc = np.zeros((slice_rows, n), F32)
        for b in range(blocks):
            exact = (q[:, b * bs:(b + 1) * bs] - zp) @ wv[:, b * bs:(b + 1) * bs].T
            acc = (acc + (exact.astype(F32) * scales[:, b]).astype(F32)).astype(F32)
        part_y = (acc * scale).astype(F32)
        if bias is not None:
            part_y = (part_y + value(bias).astype(F32)).astype(F32)
        y[s * slice_rows:(s + 1) * slice_rows] = part_y
    y = np.minimum(np.maximum(y, F32(lo)), F32(hi))
    return y.reshape(*x.shape[:-1], n)


def weights(n, k, bits, blocks=1, scales_dtype=F32):
    """Random quantized weights with their scales (float32, or bfloat16 as
    XNNPACK keeps blockwise ones) and block sums."""
    if bits == 8:
        w = integers(-128, 128, (n, k)).astype(np.int8)
        vals = w.astype(np.int64)
    else:
        vals = integers(-8, 8, (n, k))
        nib = np.zeros((n, (k + 1) // 2 * 2), np.int64)
        nib[:, :k] = vals + 8
        w = (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8)
    scales = np.abs(normal((n, blocks), scale=0.02)).astype(F32) + F32(1e-3)
    if scales_dtype == BF16:
        scales = bf16(scales)
    block_sums = vals.reshape(n, blocks, k // blocks).sum(axis=2)
    if bits == 8:
        return w, scales, block_sums.sum(axis=1).astype(np.int32)
    sums = (block_sums * scales.astype(np.float64)).sum(axis=1).astype(F32)
    return w, tensor(scales, BF16) if scales_dtype == BF16 else scales, sums


def case(device, shape, n, bits, blocks=1, bias=True, nnb=1, lo=-np.inf, hi=np.inf, threads=1,
         loc=0.0, scales_dtype=F32):
    k = shape[-1]
    x = normal(shape, loc=loc)
    w, scales, sums = weights(n, k, bits, blocks, scales_dtype)
    b = normal((n,)) if bias else None
    check(device, FCDQ, x, w, scales, sums, b, bits, nnb, lo, hi,
          Out("float32", (*shape[:-1], n)), tol=TOL, num_threads=threads)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (1, 32, 8), (3, 7, 5), (17, 100, 70), (40, 64, 64),
                                   (5, 256, 33), (1, 16400, 3),
                                   (1, 4096, 5), (4, 4096, 9),  # decode rows past 4 chunks a lane
                                   (20, 1040, 1024)])  # many rows, weights over 1 MiB
def test_8bit_weights(device, m, k, n):
    case(device, (m, k), n, 8)


@pytest.mark.parametrize("m,k,n", [(1, 32, 8), (4, 64, 3), (6, 96, 17), (1, 7, 5), (3, 33, 9),
                                   (9, 128, 64), (5, 192, 7), (2, 512, 13), (1, 1024, 9),
                                   (1, 8192, 9), (3, 5120, 6), (4, 4096, 11),
                                   (1, 16416, 3)])
def test_4bit_weights_per_channel(device, m, k, n):
    case(device, (m, k), n, 4)


@pytest.mark.parametrize("m,k,n,blocks", [(1, 64, 8, 2), (5, 128, 16, 4), (7, 256, 40, 2),
                                          (6, 256, 9, 4), (2, 96, 6, 2), (3, 64, 5, 4),
                                          (4, 192, 3, 6), (1, 256, 11, 8), (1, 512, 6, 4),
                                          (1, 128, 5, 16), (2, 256, 7, 16), (3, 8192, 4, 128)])
def test_4bit_weights_in_blocks(device, m, k, n, blocks):
    """Blocks of 32, 64 or 128 in rows of whole vector chunks (64 inputs
    with AVX2, 128 with AVX-512) take the vector path, one row or tiles of
    four, columns in pairs and one by one; blocks of 48 or 16, or rows of
    96, the scalar one. On CUDA blocks of 8, 16 and 48 start inside a
    lane's 32 weights, and 3 x 8192 is a decode step past the chunks a
    lane holds."""
    case(device, (m, k), n, 4, blocks=blocks)


@pytest.mark.parametrize("m,k,n,blocks,threads", [
    (20, 256, 40, 8, 1),    # blocks of 32: 32 + 8 columns, rows 4 + 4 + 4 + 4 + 4
    (33, 128, 17, 2, 2),    # blocks of 64, a last lone row, two threads
    (16, 96, 33, 24, 1),    # blocks of 4, 32 + 1 columns
    (18, 64, 5, 1, 2),      # per channel, 4 x 4 + 2 rows
    (17, 100, 9, 2, 1),     # blocks of 50: not whole groups of 4 (the other kernels)
    (24, 384, 20, 3, 1),    # blocks of 128, 16 + 4 columns, rows 4 x 6
])
def test_4bit_many_rows(device, m, k, n, blocks, threads):
    """Prefill-sized products (16 rows and more) expand each task's weights
    and run them on the packed int8 kernel, block sums scaled in float."""
    case(device, (m, k), n, 4, blocks=blocks, threads=threads)
    case(device, (2, m // 2, k), n, 4, blocks=blocks, bias=False, lo=-0.3, hi=0.4)


def test_4bit_one_row_clamp_threads(device):
    """A decode step (one row, each column's weights read start to end, the
    columns finished together): no bias, a clamp, the columns over two
    threads; and one row after a tile of four."""
    case(device, (1, 512), 600, 4, blocks=16, bias=False, lo=-0.2, hi=0.3, threads=2)
    case(device, (5, 256), 21, 4, blocks=8, lo=-0.5, hi=0.5)


@pytest.mark.parametrize("m,k,n,blocks,threads", [
    (1, 96, 5, 2, 1),       # blocks of 48: the scalar path
    (1, 256, 19, 8, 2),     # a decode row, blocks of 32, two threads
    (3, 512, 9, 4, 1),      # blocks of 128 (AVX-512: one a chunk; AVX2: one per two)
    (5, 256, 11, 4, 1),     # a tile of four rows and a last one, blocks of 64
    (2, 512, 7, 2, 1),      # blocks of 256: several chunks a scale step
    (1, 8192, 4, 256, 1),   # CUDA: a decode step past the chunks a lane holds
    (20, 256, 40, 8, 2),    # prefill: the packed kernel
    (40, 64, 24, 8, 1),     # CUDA: tiles of eight rows, blocks of 8
])
def test_4bit_bfloat16_scales(device, m, k, n, blocks, threads):
    """Block scales kept in bfloat16 (as the lowering keeps XNNPACK's) on
    every path: each kernel widens them exactly, so the results are those
    of the same scales in float32."""
    case(device, (m, k), n, 4, blocks=blocks, threads=threads, scales_dtype=BF16)
    case(device, (m, k), n, 4, blocks=blocks, bias=False, lo=-0.3, hi=0.4, scales_dtype=BF16)


@pytest.mark.parametrize("nibble", [0, 15])
@pytest.mark.parametrize("m", [1, 4])
def test_4bit_extremes(device, nibble, m):
    """Every weight at one end (stored 0 or 15) against activations at both
    ends of int8: the products are taken on the stored nibbles, the sums
    starting from -8 times the activations' (AVX2: 2 * 255 * 15 per int16
    pair)."""
    k, n, blocks = 256, 9, 8
    x = np.tile(np.where(np.arange(k) % 3 == 0, F32(50), F32(-20)), (m, 1)).astype(F32)
    w = np.full((n, k // 2), nibble * 17, np.uint8)
    scales = np.abs(normal((n, blocks), scale=0.02)).astype(F32) + F32(1e-3)
    sums = (scales.astype(np.float64) * (k // blocks) * (nibble - 8)).sum(axis=1).astype(F32)
    check(device, FCDQ, x, w, scales, sums, None, 4, 1, -np.inf, np.inf, Out("float32", (m, n)),
          tol=TOL)


@pytest.mark.parametrize("nnb", [1, 2, 3])
def test_slices_of_several_rows(device, nnb):
    """num_nonbatch_dims > 1: one set of parameters per slice of rows (3:
    the whole tensor, as a per-tensor dynamic quantization is exported)."""
    case(device, (2, 3, 64), 10, 8, nnb=nnb)
    case(device, (2, 3, 64), 10, 4, blocks=2, nnb=nnb)


def test_positive_inputs_clamp_and_no_bias(device):
    """All-positive rows (the range widened to 0), a fused clamp, no bias,
    a constant row (every value equal: scale 1)."""
    case(device, (4, 64), 12, 8, bias=False, lo=-0.5, hi=0.5, loc=3.0)
    case(device, (4, 64), 12, 4, bias=False, lo=0.0, hi=np.inf, loc=3.0)
    x = np.full((2, 32), 0.25, F32)
    w, scales, sums = weights(4, 32, 4)
    check(device, FCDQ, x, w, scales, sums, None, 4, 1, -np.inf, np.inf, Out("float32", (2, 4)),
          tol=TOL)


@pytest.mark.parametrize("bits", [8, 4])
def test_threads(device, bits):
    case(device, (33, 256), 96, bits, blocks=1 if bits == 8 else 4, threads=2)


def test_errors(device):
    x = normal((2, 64))
    w8, s8, z8 = weights(4, 64, 8)
    w4, s4, z4 = weights(4, 64, 4, blocks=2)
    out = Out("float32", (2, 4))
    inf = np.inf
    check_error(device, FCDQ, x, w8, s8, z8, None, 5, 1, -inf, inf, out, exc=ValueError,
                match="weight_bits must be 8 or 4")
    check_error(device, FCDQ, x, w8, s8, z8, None, 4, 1, -inf, inf, out, exc=ValueError,
                match="must be contiguous uint8")
    check_error(device, FCDQ, x, w4[:, :16].copy(), s4, z4, None, 4, 1, -inf, inf, out,
                exc=ValueError, match="does not hold 4-bit rows")
    check_error(device, FCDQ, x, w4, np.ones((4, 3), F32), z4, None, 4, 1, -inf, inf, out,
                exc=ValueError, match=r"must be \[4, B\] with B dividing 64")
    check_error(device, FCDQ, x, w4, s4, z4[:2].copy(), None, 4, 1, -inf, inf, out,
                exc=ValueError, match="weight_sums .* must have 4 elements")
    check_error(device, FCDQ, x, w4, s4, z4.astype(np.int32), None, 4, 1, -inf, inf, out,
                exc=ValueError, match="weight_sums must be contiguous float32")
    check_error(device, FCDQ, x, w8, np.repeat(s8, 2, axis=1), z8, None, 8, 1, -inf, inf, out,
                exc=ValueError, match="one scale per output channel")
    check_error(device, FCDQ, x, w8, tensor(s8, BF16), z8, None, 8, 1, -inf, inf, out,
                exc=ValueError, match="weight_scales must be contiguous float32")
    check_error(device, FCDQ, x, w4, s4.astype(np.float16), z4, None, 4, 1, -inf, inf, out,
                exc=ValueError, match="weight_scales of 4-bit weights must be contiguous float32 "
                "or bfloat16")
    check_error(device, FCDQ, x, w8, s8, z8, None, 8, 0, -inf, inf, out, exc=ValueError,
                match="num_nonbatch_dims 0")
    check_error(device, FCDQ, x, w8, s8, z8, np.zeros(3, F32), 8, 1, -inf, inf, out,
                exc=ValueError, match="bias")
    check_error(device, FCDQ, x.astype(np.float64), w8, s8, z8, None, 8, 1, -inf, inf, out,
                exc=ValueError, match="must be float32")


@pytest.mark.parametrize("rows", [3, 6])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("bits", [8, 4])
def test_nonfinite_input_raises(device, bad, rows, bits):
    """No int8 scale represents NaN or an infinity: ValueError naming the
    slice (the CPU checks before it writes; CUDA records it in the method's
    device-check word and raises at the wait). Three rows are a decode step
    on CUDA."""
    x = normal((rows, 32))
    x[1, 5] = bad
    w, s, z = weights(4, 32, bits)
    check_error(device, FCDQ, x, w, s, z, None, bits, 1, -np.inf, np.inf,
                Out("float32", (rows, 4)), exc=ValueError,
                match=f"input slice 1 of {rows} holds NaN or an infinity")

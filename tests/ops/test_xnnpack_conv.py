"""xnnpack::conv2d_add (a Conv2d whose output one Add node alone reads, fused
by the delegate's lowering: the convolution plus a residual, then the Add's
output clamp) against NumPy: NHWC activations, XNNPACK's [OC, KH, KW, IC/g]
filters, stride, padding, dilation and groups, bias or none, bounded and
unbounded clamps, threads; float32 takes the fused epilogue (the CPU's
stores, CUDA's pass after cuDNN), float16 and bfloat16 the passes after the
convolution. The argument errors: a residual of another shape or dtype (a
residual sharing the output's bytes is refused too, which no call from
Python can make)."""

import numpy as np
import pytest

from harness import BF16, Out, T, bf16, check, check_error, normal, reference, value
from test_conv import conv_out, ref_conv2d

OP = "xnnpack::conv2d_add"
TOL = {"float32": (1e-4, 1e-4), "float16": (1e-2, 2e-2), BF16: (2e-2, 6e-2)}


@reference(OP)
def conv2d_add_model(x, w, b, padding, stride, dilation, groups, residual, lo, hi, out):
    """NHWC in and out; the filter [OC, KH, KW, IC/g] as torch's OIHW."""
    xv = value(x).astype(np.float64).transpose(0, 3, 1, 2)
    wv = value(w).astype(np.float64).transpose(0, 3, 1, 2)
    bv = None if b is None else value(b)
    y = ref_conv2d(xv, wv, bv, stride, padding, dilation, groups).transpose(0, 2, 3, 1)
    dt = value(x).dtype
    y = y.astype(np.float32 if dt != np.float64 else dt)
    if dt == np.float16 or getattr(x, "bf16", False):
        # The passes: the convolution rounded to the dtype, then the add.
        y = y.astype(np.float16) if dt == np.float16 else bf16(y)
    s = (y.astype(np.float64) + value(residual).astype(np.float64)).astype(np.float32)
    return np.clip(s, lo, hi)


def operands(h, w, c, oc, k, stride, padding, dilation, groups, bias, dtype):
    """Whether the case is bfloat16, the NumPy dtype it is made in, the filter
    [OC, KH, KW, IC/g], the bias (or None) and the output's height and width."""
    as_bf16 = dtype == BF16
    npdt = np.float32 if as_bf16 else dtype
    f = normal((oc, k[0], k[1], c // groups), scale=0.3).astype(npdt)
    b = normal((oc,)).astype(npdt) if bias else None
    oh = conv_out(h, k[0], stride[0], padding[0], dilation[0])
    ow = conv_out(w, k[1], stride[1], padding[1], dilation[1])
    return as_bf16, npdt, f, b, oh, ow


def case(device, n, h, w, c, oc, k=(3, 3), stride=(1, 1), padding=(1, 1), dilation=(1, 1),
         groups=1, bias=True, lo=-np.inf, hi=np.inf, dtype=np.float32, threads=1):
    as_bf16, npdt, f, b, oh, ow = operands(h, w, c, oc, k, stride, padding, dilation, groups,
                                           bias, dtype)
    x = normal((n, h, w, c)).astype(npdt)
    r = normal((n, oh, ow, oc)).astype(npdt)
    out_dtype = BF16 if as_bf16 else dtype
    check(device, OP, T(x, bf16=as_bf16), T(f, bf16=as_bf16),
          None if b is None else T(b, bf16=as_bf16), list(padding), list(stride),
          list(dilation), groups, T(r, bf16=as_bf16), lo, hi,
          Out(out_dtype, (n, oh, ow, oc)), tol=TOL, num_threads=threads)


@pytest.mark.parametrize("shape", [(1, 8, 8, 16, 16), (2, 9, 7, 3, 24), (1, 5, 6, 32, 8)])
@pytest.mark.parametrize("clamp", [(-np.inf, np.inf), (0.0, np.inf), (-0.5, 0.75)])
def test_conv2d_add(device, shape, clamp):
    n, h, w, c, oc = shape
    case(device, n, h, w, c, oc, lo=clamp[0], hi=clamp[1])


@pytest.mark.parametrize("geom", [((1, 1), (2, 2), (0, 0), (1, 1)), ((3, 3), (2, 2), (1, 1), (1, 1)),
                                  ((3, 3), (1, 1), (2, 2), (2, 2)), ((1, 3), (1, 2), (0, 1), (1, 1))])
def test_geometry(device, geom):
    """A ResNet's strided 1x1 projection, strided and dilated 3x3, 1x3."""
    k, s, p, d = geom
    case(device, 2, 10, 9, 8, 16, k=k, stride=s, padding=p, dilation=d, lo=0.0)


def test_groups_no_bias_threads(device):
    case(device, 1, 6, 6, 8, 12, groups=2, bias=False, lo=0.0, hi=6.0)
    case(device, 2, 16, 16, 32, 64, lo=0.0, threads=2)


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_16bit(device, dtype):
    case(device, 1, 7, 7, 8, 16, dtype=dtype, lo=0.0)


def test_errors(device):
    x = normal((1, 6, 6, 4))
    f = normal((8, 3, 3, 4))
    args = (x, f, None, [1, 1], [1, 1], [1, 1], 1)
    out = Out("float32", (1, 6, 6, 8))
    inf = np.inf
    check_error(device, OP, *args, normal((1, 6, 6, 4)), -inf, inf, out, exc=ValueError,
                match="residual .* must have the output's shape and dtype")
    check_error(device, OP, *args, normal((1, 6, 6, 8)).astype(np.float16), -inf, inf, out,
                exc=ValueError, match="residual")


# xnnpack::conv2d_nchw: conv2d reading its input in NCHW memory order (a
# StaticTranspose (0, 2, 3, 1) before a delegate's stem, folded by the
# lowering); the output NHWC, the output clamp applied.
NCHW_OP = "xnnpack::conv2d_nchw"


@reference(NCHW_OP)
def conv2d_nchw_model(x, w, b, padding, stride, dilation, groups, lo, hi, out):
    xv = value(x).astype(np.float64)
    wv = value(w).astype(np.float64).transpose(0, 3, 1, 2)
    bv = None if b is None else value(b)
    y = ref_conv2d(xv, wv, bv, stride, padding, dilation, groups).transpose(0, 2, 3, 1)
    dt = value(x).dtype
    return np.clip(y, lo, hi).astype(np.float32 if dt != np.float64 else dt)


def nchw_case(device, n, c, h, w, oc, k=(3, 3), stride=(1, 1), padding=(1, 1),
              dilation=(1, 1), groups=1, bias=True, lo=-np.inf, hi=np.inf, dtype=np.float32,
              threads=1):
    as_bf16, npdt, f, b, oh, ow = operands(h, w, c, oc, k, stride, padding, dilation, groups,
                                           bias, dtype)
    x = normal((n, c, h, w)).astype(npdt)
    check(device, NCHW_OP, T(x, bf16=as_bf16), T(f, bf16=as_bf16),
          None if b is None else T(b, bf16=as_bf16), list(padding), list(stride),
          list(dilation), groups, lo, hi, Out(BF16 if as_bf16 else dtype, (n, oh, ow, oc)),
          tol=TOL, num_threads=threads)


@pytest.mark.parametrize("geom", [((3, 3), (2, 2), (1, 1), (1, 1)), ((3, 3), (1, 1), (1, 1), (1, 1)),
                                  ((1, 1), (1, 1), (0, 0), (1, 1)), ((5, 3), (2, 1), (2, 0), (1, 2))])
@pytest.mark.parametrize("clamp", [(-np.inf, np.inf), (0.0, 6.0)])
def test_conv2d_nchw(device, geom, clamp):
    """Stems of 3 channels: MobileNet's strided 3x3, ResNet's 3x3, 1x1, an
    uneven kernel with dilation."""
    k, s, p, d = geom
    nchw_case(device, 2, 3, 17, 15, 16, k=k, stride=s, padding=p, dilation=d, lo=clamp[0],
              hi=clamp[1])


def test_conv2d_nchw_groups_threads_16bit(device):
    nchw_case(device, 1, 8, 9, 9, 12, groups=2, bias=False, lo=0.0)
    nchw_case(device, 1, 3, 64, 64, 32, stride=(2, 2), threads=2)
    nchw_case(device, 1, 3, 12, 12, 16, dtype=np.float16)
    nchw_case(device, 1, 3, 12, 12, 16, dtype=BF16, lo=0.0)


def test_conv2d_nchw_errors(device):
    x = normal((1, 4, 6, 6))
    out = Out("float32", (1, 6, 6, 8))
    check_error(device, NCHW_OP, x, normal((8, 3, 3, 3)), None, [1, 1], [1, 1], [1, 1], 1,
                -np.inf, np.inf, out, exc=ValueError, match="groups do not match")

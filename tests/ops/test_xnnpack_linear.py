"""xnnpack::fully_connected (XNNPACK's FullyConnected node: the input's last
dim times a filter [N, K], or [K, N] with transpose_filter, plus a bias,
then the node's output clamp) against NumPy. On the CPU a float32 clamp
runs inside the product: over each block of rows of the small
register-blocked product as it is done, over the whole output after the
others (the matrix-vector kernel of a few rows, oneDNN's larger
products); float16 and bfloat16 clamp in an elementwise step. Cases: each of
those paths, both filter layouts, bounded, one-sided and no clamps, NaN
kept through the clamp, leading dims, two threads. On CUDA the same cases
against the CPU (there a clamp to [0, inf) with a bias is cuBLASLt's ReLU
epilogue, any other a clamp kernel after the product)."""

import numpy as np
import pytest

from harness import BF16, Out, T, bf16, check, normal, reference, value

OP = "xnnpack::fully_connected"
TOL = {"float32": (2e-5, 2e-5), "float16": (2e-2, 2e-2), BF16: (2e-2, 6e-2)}


@reference(OP)
def fully_connected_model(x, w, b, transpose_filter, lo, hi, out):
    xv = value(x).astype(np.float64)
    wv = value(w).astype(np.float64)
    y = xv @ (wv if transpose_filter else wv.T)
    if b is not None:
        y = y + value(b).astype(np.float64)
    dt = value(x).dtype
    y = y.astype(np.float32)
    if dt == np.float16:
        y = y.astype(np.float16).astype(np.float32)
    elif getattr(x, "bf16", False):
        y = bf16(y)
    return np.clip(y, lo, hi)


def case(device, shape, n, transpose=False, bias=True, lo=-np.inf, hi=np.inf, dtype=np.float32,
         threads=1, nan_at=None):
    as_bf16 = dtype == BF16
    npdt = np.float32 if as_bf16 else dtype
    k = shape[-1]
    x = normal(shape).astype(npdt)
    if nan_at is not None:
        x.reshape(-1, k)[nan_at, 0] = np.nan
    w = normal((k, n) if transpose else (n, k), scale=k ** -0.5).astype(npdt)
    b = normal((n,)).astype(npdt) if bias else None
    out = check(device, OP, T(x, bf16=as_bf16), T(w, bf16=as_bf16),
                None if b is None else T(b, bf16=as_bf16), transpose, lo, hi,
                Out(BF16 if as_bf16 else dtype, (*shape[:-1], n)), tol=TOL, num_threads=threads)
    return out


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("lo,hi", [(0.0, np.inf), (-0.5, 0.5), (-np.inf, 0.25), (-np.inf, np.inf)])
@pytest.mark.parametrize("m,k,n", [
    (4, 64, 64),     # small: the clamp over its rows as they are done
    (12, 40, 20),    # small, with 4 columns past the vectors (a panel or the scalar tail)
    (64, 512, 10),   # narrow: the small kernel whatever its size
    (2, 64, 48),     # a few rows: the matrix-vector kernel, the clamp after
    (64, 128, 96),   # large: oneDNN, the clamp after
])
def test_float32_paths_and_clamps(device, m, k, n, transpose, lo, hi):
    case(device, (m, k), n, transpose=transpose, lo=lo, hi=hi)


@pytest.mark.parametrize("lo,hi", [(0.0, 6.0), (0.0, np.inf)])
@pytest.mark.parametrize("m,k,n", [(4, 64, 64), (2, 64, 48), (64, 128, 96)])
def test_nan_stays_nan_through_the_clamp(device, m, k, n, lo, hi):
    """[0, inf) is cuBLASLt's ReLU epilogue on CUDA: NaN must stay NaN there too."""
    out = case(device, (m, k), n, lo=lo, hi=hi, nan_at=1)
    if out is not None:
        got = np.asarray(out[0])
        assert np.isnan(got[1]).all() and not np.isnan(np.delete(got, 1, axis=0)).any()


@pytest.mark.parametrize("lo,hi", [(np.nan, np.inf), (0.0, np.nan)])
def test_nan_bound_makes_every_output_nan(device, lo, hi):
    """As the elementwise clamp: not a bound that leaves values alone."""
    out = case(device, (4, 64), 32, lo=lo, hi=hi)
    if out is not None:
        assert np.isnan(np.asarray(out[0])).all()


def test_leading_dims_no_bias_two_threads(device):
    case(device, (2, 5, 32), 24, bias=False, lo=0.0, hi=6.0)
    case(device, (3, 64, 256), 128, transpose=True, lo=-1.0, hi=1.0, threads=2)


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_half_precision_clamps_in_a_step(device, dtype):
    case(device, (4, 64), 32, lo=0.0, hi=np.inf, dtype=dtype)
    case(device, (3, 48), 16, transpose=True, lo=-0.5, hi=0.5, dtype=dtype)

"""pterun::rotary_half.out (the rotary fusion's kernel, ops/elementwise.h)
against NumPy: x * cos + cat(-x[..., h:], x[..., :h]) * sin with each
product and the sum rounded to the dtype as the unfused steps round them,
for float32, float16, bfloat16 and float64, cos and sin broadcast from
fewer dims, x in any dim order, and argument errors."""

import numpy as np
import pytest

from harness import (BF16, Out, T, cast, check, check_error, dtype_of, normal, reference, tensor,
                     value)

NAME = "pterun::rotary_half.out"
FLOATS = [np.float32, np.float16, BF16, np.float64]


@reference(NAME)
def rotary_model(x, cos, sin, out):
    """The unfused steps: mul, slice, neg, slice, cat, mul, add, each
    rounded to the dtype (f16/bf16 computed in float32, f32 in float32)."""
    od = dtype_of(out)
    xv, cv, sv = (np.asarray(value(t), dtype=np.float64) for t in (x, cos, sin))
    half = xv.shape[-1] // 2
    turned = np.concatenate([-xv[..., half:], xv[..., :half]], axis=-1)
    compute = np.float64 if od == np.float64 else np.float32

    def rounded(v):
        return np.asarray(cast(np.asarray(v).astype(compute), od), dtype=np.float64)

    a = rounded(xv.astype(compute) * cv.astype(compute))
    b = rounded(turned.astype(compute) * sv.astype(compute))
    return cast((a.astype(compute) + b.astype(compute)), od)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,table", [((1, 4, 16, 16), (16, 16)), ((2, 3, 5, 8), (1, 1, 5, 8)),
                                         ((7, 64), (7, 64)), ((2, 2, 6), (6,))])
def test_rotary_half(device, dtype, shape, table):
    x = tensor(normal(shape, dtype), dtype)
    cos = tensor(np.cos(normal(table, np.float32)), dtype)
    sin = tensor(np.sin(normal(table, np.float32)), dtype)
    check(device, NAME, x, cos, sin, Out(dtype, shape), tol=(0, 0), gpu_tol=(0, 0))


@pytest.mark.parametrize("order", [(0, 2, 1, 3), (3, 2, 1, 0)])
def test_rotary_half_reads_x_in_any_dim_order(device, order):
    # The queries as [B, H, S, D] over [B, S, H, D] bytes, as a permute
    # before the rotary embedding leaves them.
    shape = (2, 3, 4, 8)
    x = normal(shape, np.float32)
    cos, sin = np.cos(normal((4, 8), np.float32)), np.sin(normal((4, 8), np.float32))
    check(device, NAME, T(x, dim_order=order), cos, sin, Out(np.float32, shape), tol=(0, 0),
          gpu_tol=(0, 0))


def test_rotary_half_errors(device):
    x, cs = normal((2, 4, 6), np.float32), normal((4, 6), np.float32)
    # An odd last dim has no halves.
    check_error(device, NAME, normal((2, 5), np.float32), normal((5,), np.float32),
                normal((5,), np.float32), Out(np.float32, (2, 5)), exc=ValueError)
    # cos that does not broadcast to x.
    check_error(device, NAME, x, normal((3, 6), np.float32), cs, Out(np.float32, (2, 4, 6)),
                exc=ValueError)
    # Mixed dtypes.
    check_error(device, NAME, x, cs.astype(np.float64), cs, Out(np.float32, (2, 4, 6)),
                exc=ValueError)
    # Integers.
    check_error(device, NAME, np.ones((2, 4), np.int32), np.ones((4,), np.int32),
                np.ones((4,), np.int32), Out(np.int32, (2, 4)), exc=ValueError)

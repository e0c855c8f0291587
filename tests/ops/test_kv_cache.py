"""llama::update_cache.out against NumPy: the new tokens' values written
into a [batch, seq, heads, head_dim] cache in place at start_pos; tokens
that would run past the cache's end are refused (as ExecuTorch's kernel
refuses them: it never wraps); every layout (the copy is strided on both
sides), bf16, prefill and decode shapes, and argument errors."""

import numpy as np
import pytest

from harness import BF16, AnyValues, Out, check, check_error, rand, reference, value
from pterun._testing import InOut, T

OP = "llama::update_cache.out"
# Dim orders of a rank-4 tensor: contiguous, and heads outside the sequence
# ([B, H, S, D] in memory, as a transposed cache would be).
ORDERS = [None, (0, 2, 1, 3)]


@reference(OP)
def update_cache_model(val, cache, start_pos, out):
    v, c = value(val), value(cache).copy()
    c[:, start_pos:start_pos + v.shape[1]] = v
    return [c, AnyValues(out.shape)]


def tensors(batch, tokens, capacity, heads, dim, dtype=np.float32, order=None, cache_order=None):
    bf16 = dtype == BF16
    dt = np.float32 if bf16 else dtype
    v = T(rand((batch, tokens, heads, dim), dt), dim_order=order, bf16=bf16)
    c = InOut(rand((batch, capacity, heads, dim), dt), dim_order=cache_order, bf16=bf16)
    return v, c


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int8])
@pytest.mark.parametrize("tokens,start", [(1, 0), (1, 7), (5, 0), (5, 3), (8, 0)])
def test_update_cache(device, dtype, tokens, start):
    v, c = tensors(2, tokens, 8, 3, 4, dtype)
    check(device, OP, v, c, start, Out(np.float32, (1,)))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("cache_order", ORDERS)
def test_update_cache_layouts(device, order, cache_order):
    v, c = tensors(2, 3, 16, 4, 8, order=order, cache_order=cache_order)
    check(device, OP, v, c, 5, Out(np.float32, (1,)))


@pytest.mark.parametrize("start", [5, 8, 13, 1000])
def test_update_cache_refuses_positions_past_the_end(device, start):
    v, c = tensors(1, 4, 8, 2, 4)
    check_error(device, OP, v, c, start, Out(np.float32, (1,)), exc=IndexError,
                match=f"start_pos {start} with 4 tokens runs past the cache of 8 positions")


def test_update_cache_fills_the_last_positions(device):
    v, c = tensors(1, 4, 8, 2, 4)
    check(device, OP, v, c, 4, Out(np.float32, (1,)))


def test_update_cache_empty(device):
    v, c = tensors(2, 0, 8, 3, 4)
    check(device, OP, v, c, 3, Out(np.float32, (1,)))
    v, c = tensors(0, 2, 8, 3, 4)
    check(device, OP, v, c, 3, Out(np.float32, (1,)))


def test_update_cache_errors(device):
    out = Out(np.float32, (1,))
    v, c = tensors(2, 3, 8, 4, 4)
    check_error(device, OP, v, c, -1, out, exc=IndexError, match="start_pos -1 is negative")
    v, c = tensors(2, 9, 8, 4, 4)
    check_error(device, OP, v, c, 0, out, exc=ValueError, match="9 tokens do not fit")
    v, _ = tensors(2, 3, 8, 4, 4)
    _, c = tensors(2, 3, 8, 5, 4)
    check_error(device, OP, v, c, 0, out, exc=ValueError, match="batch, heads or head_dim")
    v, _ = tensors(2, 3, 8, 4, 4, np.float16)
    _, c = tensors(2, 3, 8, 4, 4)
    check_error(device, OP, v, c, 0, out, exc=ValueError, match="value dtype float16 differs")
    check_error(device, OP, T(rand((2, 3, 4))), c, 0, out, exc=ValueError, match="rank 4")

"""The attention family against NumPy: llama::custom_sdpa.out (the whole
cache as keys and values, the causal mask offset by start_pos, grouped-query
heads, an optional scale or 2-D float mask), llama::sdpa_with_kv_cache.out
(both caches written, then attention), llama::update_cache_with_indices.out
(tokens to per-token positions, every index checked before anything is
written), and the internal kernels that read a position from a tensor
(executor/rewrite.h, "positions on the device"): update_cache_at,
custom_sdpa_at, slice_at and item_copy; and pterun::attention.out, torch's
decomposed attention as one kernel (every query over all keys, a mask, rows
masked entirely giving zeros or NaN). Layout [batch, seq, heads, head_dim].
Every error raises on every device with the same message."""

import numpy as np
import pytest

from harness import BF16, AnyValues, Out, check, check_error, rand, reference, tensor, value
from pterun._testing import InOut, T

SDPA = "llama::custom_sdpa.out"
SDPA_KV = "llama::sdpa_with_kv_cache.out"
WITH_INDICES = "llama::update_cache_with_indices.out"
UPDATE_AT = "pterun::update_cache_at.out"
SDPA_AT = "pterun::custom_sdpa_at.out"
SLICE_AT = "pterun::slice_at.out"
ITEM_COPY = "pterun::item_copy.out"
ATTENTION = "pterun::attention.out"

DTYPES = [np.float32, np.float64, np.float16, BF16]
# CUDA computes float64 attention in float (a float64 LLM is not a target).
def gpu_tol(dtype):
    return (5e-5, 5e-5) if dtype is np.float64 else None


TOL = {"float32": (3e-5, 3e-5), "float64": (1e-12, 1e-12), "float16": (3e-3, 3e-3),
       "bfloat16": (2e-2, 2e-2)}


def attention(q, k, v, start, causal, scale=None, mask=None):
    """softmax(scale * q k^T + mask) v over keys [0, start + S), in float64;
    query i (absolute start + i) sees keys <= start + i when causal."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    b, s, h, d = q.shape
    reps = h // k.shape[2]
    keys = start + s
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    out = np.zeros_like(q)
    for bi in range(b):
        for hi in range(h):
            kk = k[bi, :keys, hi // reps]
            vv = v[bi, :keys, hi // reps]
            scores = q[bi, :, hi] @ kk.T * scale
            if mask is not None:
                scores = scores + np.asarray(mask, np.float64)
            if causal:
                allowed = np.arange(keys)[None, :] <= (start + np.arange(s))[:, None]
                scores = np.where(allowed, scores, -np.inf)
            # A row of nothing but -inf comes out NaN, as softmax gives.
            with np.errstate(invalid="ignore"):
                scores = scores - scores.max(axis=1, keepdims=True)
                p = np.exp(scores)
                p /= p.sum(axis=1, keepdims=True)
                out[bi, :, hi] = p @ vv
    return out


@reference(SDPA)
def sdpa_model(q, k, v, start, mask, dropout, causal, scale, out):
    return attention(value(q), value(k), value(v), start, causal, scale, value(mask))


@reference(SDPA_KV)
def sdpa_kv_model(q, k, v, kc, vc, start, seq_len, mask, dropout, causal, scale, out):
    kc2, vc2 = value(kc).copy(), value(vc).copy()
    s = value(q).shape[1]
    kc2[:, start:start + s] = value(k)
    vc2[:, start:start + s] = value(v)
    return [kc2, vc2, attention(value(q), kc2, vc2, start, causal, scale, value(mask))]


@reference(SDPA_AT)
def sdpa_at_model(q, k, v, start, causal, scale, out):
    return attention(value(q), value(k), value(v), int(value(start).reshape(-1)[0]), causal, scale)


def qkv(batch, tokens, capacity, heads, kv_heads, dim, dtype=np.float32, cache_order=None):
    q = tensor(rand((batch, tokens, heads, dim)), dtype)
    k = tensor(rand((batch, capacity, kv_heads, dim)), dtype, cache_order)
    v = tensor(rand((batch, capacity, kv_heads, dim)), dtype, cache_order)
    return q, k, v


def out_like(q, dtype):
    return Out(dtype, value(q).shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tokens,start", [(1, 0), (1, 9), (1, 15), (5, 0), (5, 3), (16, 0),
                                          (3, 13)])
@pytest.mark.parametrize("causal", [True, False])
def test_custom_sdpa(device, dtype, tokens, start, causal):
    q, k, v = qkv(2, tokens, 16, 4, 2, 16, dtype)
    check(device, SDPA, q, k, v, start, None, 0.0, causal, None, out_like(q, dtype), tol=TOL,
          gpu_tol=gpu_tol(dtype))


@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (4, 1), (6, 3), (1, 1)])
def test_custom_sdpa_grouped_heads(device, heads, kv_heads):
    q, k, v = qkv(1, 3, 12, heads, kv_heads, 8)
    check(device, SDPA, q, k, v, 4, None, 0.0, True, None, out_like(q, np.float32), tol=TOL)


@pytest.mark.parametrize("tokens,start,capacity", [(1, 150, 200), (70, 0, 96), (40, 60, 128)])
def test_custom_sdpa_several_key_blocks(device, tokens, start, capacity):
    q, k, v = qkv(1, tokens, capacity, 4, 2, 32)
    check(device, SDPA, q, k, v, start, None, 0.0, True, None, out_like(q, np.float32), tol=TOL)


@pytest.mark.parametrize("dim", [1, 7, 64, 128])
def test_custom_sdpa_head_dims(device, dim):
    q, k, v = qkv(1, 2, 8, 2, 1, dim)
    check(device, SDPA, q, k, v, 1, None, 0.0, True, 0.3, out_like(q, np.float32), tol=TOL)


@pytest.mark.parametrize("mask_dtype", [np.float32, "same"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_custom_sdpa_float_mask(device, dtype, mask_dtype):
    q, k, v = qkv(2, 3, 10, 4, 2, 8, dtype)
    m = rand((3, 7), np.float32, -3, 1)
    m[1, 2] = -np.inf
    mask = tensor(m, dtype if mask_dtype == "same" else mask_dtype)
    check(device, SDPA, q, k, v, 4, mask, 0.0, False, 0.5, out_like(q, dtype), tol=TOL,
          gpu_tol=gpu_tol(dtype))


def leading_masked(tokens, keys):
    """A float32 [tokens, keys] mask whose row i has its first 70, 40, 64 or
    all keys at -inf (i % 4), random values after: a first key block (64 on
    the CPU) or tiles (32 on CUDA) of nothing but -inf, then keys that count;
    a row of every key masked."""
    m = rand((tokens, keys), np.float32, -3, 1)
    for i in range(tokens):
        m[i, :[70, 40, 64, keys][i % 4]] = -np.inf
    return m


@pytest.mark.parametrize("mask_dtype", [np.float32, "same"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tokens,start,capacity,dim", [(5, 95, 128, 16), (1, 129, 130, 64),
                                                       (20, 80, 100, 64)])
def test_custom_sdpa_leading_keys_masked(device, dtype, mask_dtype, tokens, start, capacity,
                                         dim):
    # Keys after a block of nothing but -inf still count (no NaN from
    # exp(-inf - -inf)); the row with every key masked is NaN.
    q, k, v = qkv(2, tokens, capacity, 4, 2, dim, dtype)
    mask = tensor(leading_masked(tokens, start + tokens),
                  dtype if mask_dtype == "same" else mask_dtype)
    check(device, SDPA, q, k, v, start, mask, 0.0, False, 0.5, out_like(q, dtype), tol=TOL,
          gpu_tol=gpu_tol(dtype))


def test_custom_sdpa_strided_layouts(device):
    # Caches with heads outside the sequence ([B, H, S, D] in memory) and a
    # query whose heads and tokens are swapped in memory.
    q = tensor(rand((2, 5, 4, 8)), np.float32, (0, 2, 1, 3))
    k = tensor(rand((2, 12, 2, 8)), np.float32, (0, 2, 1, 3))
    v = tensor(rand((2, 12, 2, 8)), np.float32, (2, 0, 1, 3))
    check(device, SDPA, q, k, v, 6, None, 0.0, True, None, Out(np.float32, (2, 5, 4, 8)), tol=TOL)


def test_custom_sdpa_empty(device):
    q, k, v = qkv(1, 0, 8, 4, 2, 8)
    check(device, SDPA, q, k, v, 3, None, 0.0, True, None, Out(np.float32, (1, 0, 4, 8)))


def test_custom_sdpa_errors(device):
    q, k, v = qkv(1, 3, 8, 4, 2, 8)
    out = Out(np.float32, (1, 3, 4, 8))
    check_error(device, SDPA, q, k, v, -1, None, 0.0, True, None, out, exc=IndexError,
                match="start_pos -1 is negative")
    check_error(device, SDPA, q, k, v, 6, None, 0.0, True, None, out, exc=IndexError,
                match="start_pos 6 with 3 tokens runs past the cache of 8 positions")
    mask = T(np.zeros((3, 3), np.float32))
    check_error(device, SDPA, q, k, v, 0, mask, 0.0, True, None, out, exc=ValueError,
                match="cannot be set at the same time")
    check_error(device, SDPA, q, k, v, 1, mask, 0.0, False, None, out, exc=ValueError,
                match=r"must be \[3, 4\]")
    q3, k3, v3 = qkv(1, 3, 8, 3, 2, 8)
    check_error(device, SDPA, q3, k3, v3, 0, None, 0.0, True, None, out, exc=ValueError,
                match="3 query heads are not a multiple of 2")
    qi = T(np.zeros((1, 3, 4, 8), np.int32))
    check_error(device, SDPA, qi, qi, qi, 0, None, 0.0, True, None, Out(np.int32, (1, 3, 4, 8)),
                exc=ValueError, match="dtype int32 is not supported")
    _, k16, _ = qkv(1, 3, 8, 4, 2, 8, np.float16)
    check_error(device, SDPA, q, k16, v, 0, None, 0.0, True, None, out, exc=ValueError,
                match="key dtype float16 differs")
    kd, vd = T(rand((1, 8, 2, 4))), T(rand((1, 8, 2, 4)))
    check_error(device, SDPA, q, kd, vd, 0, None, 0.0, True, None, out, exc=ValueError,
                match="differ in batch or head_dim")
    check_error(device, SDPA, T(rand((3, 4, 8))), k, v, 0, None, 0.0, True, None, out,
                exc=ValueError, match="rank 4")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
@pytest.mark.parametrize("tokens,start", [(1, 0), (1, 6), (4, 0), (3, 5)])
def test_sdpa_with_kv_cache(device, dtype, tokens, start):
    q = tensor(rand((1, tokens, 4, 8)), dtype)
    k = tensor(rand((1, tokens, 2, 8)), dtype)
    v = tensor(rand((1, tokens, 2, 8)), dtype)
    bf = dtype == BF16
    dt = np.float32 if bf else dtype
    kc = InOut(rand((1, 8, 2, 8), dt), bf16=bf)
    vc = InOut(rand((1, 8, 2, 8), dt), bf16=bf)
    t = TOL["bfloat16" if bf else np.dtype(dtype).name]
    check(device, SDPA_KV, q, k, v, kc, vc, start, tokens, None, 0.0, True, None,
          out_like(q, dtype), tol=[t, t, t])


def test_sdpa_with_kv_cache_errors(device):
    q = T(rand((1, 2, 4, 8)))
    k, v = T(rand((1, 2, 2, 8))), T(rand((1, 2, 2, 8)))
    kc, vc = InOut(rand((1, 8, 2, 8))), InOut(rand((1, 8, 2, 8)))
    out = Out(np.float32, (1, 2, 4, 8))
    check_error(device, SDPA_KV, q, k, v, kc, vc, 7, 2, None, 0.0, True, None, out,
                exc=IndexError, match="start_pos 7 with 2 tokens runs past the cache of 8")
    check_error(device, SDPA_KV, q, k, v, kc, vc, 0, 3, None, 0.0, True, None, out,
                exc=ValueError, match="seq_len 3 differs from the query's 2 tokens")


# ---- update_cache_with_indices -------------------------------------------------------------


@reference(WITH_INDICES)
def with_indices_model(val, cache, start, indices, out):
    v, c = value(val), value(cache).copy()
    idx = value(indices)
    for b in range(v.shape[0]):
        for s in range(v.shape[1]):
            c[b, idx[b, s]] = v[b, s]
    return [c, AnyValues(out.shape)]


def cache_args(batch, tokens, capacity, heads, dim, dtype=np.float32, order=None):
    bf = dtype == BF16
    dt = np.float32 if bf else dtype
    v = T(rand((batch, tokens, heads, dim), dt), bf16=bf)
    c = InOut(rand((batch, capacity, heads, dim), dt), dim_order=order, bf16=bf)
    return v, c


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int8])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_update_cache_with_indices(device, dtype, index_dtype):
    v, c = cache_args(2, 3, 8, 2, 4, dtype)
    idx = np.array([[5, 0, 7], [2, 3, 1]], index_dtype)
    check(device, WITH_INDICES, v, c, 0, idx, Out(np.float32, (1,)))


def test_update_cache_with_indices_layouts(device):
    # A cache with heads outside the sequence, indices stored column-major.
    v, c = cache_args(2, 4, 16, 3, 8, order=(0, 2, 1, 3))
    idx = T(np.array([[9, 1, 15, 4], [0, 2, 14, 8]]), dim_order=(1, 0))
    check(device, WITH_INDICES, v, c, 3, idx, Out(np.float32, (1,)))


def test_update_cache_with_indices_errors(device):
    out = Out(np.float32, (1,))
    v, c = cache_args(1, 2, 8, 2, 4)
    check_error(device, WITH_INDICES, v, c, 0, np.array([[1, 8]]), out, exc=IndexError,
                match=r"cache index 8 is out of range \[0, 8\)")
    check_error(device, WITH_INDICES, v, c, 0, np.array([[-1, 2]]), out, exc=IndexError,
                match=r"cache index -1 is out of range \[0, 8\)")
    check_error(device, WITH_INDICES, v, c, 0, np.array([[1, 2, 3]]), out, exc=ValueError,
                match=r"must be \[1, 2\]")
    check_error(device, WITH_INDICES, v, c, 0, np.array([[1.0, 2.0]]), out, exc=TypeError,
                match="int64 or int32")


def test_update_cache_with_indices_bad_index_leaves_cache(device):
    # Nothing is written when any index is out of range.
    from pterun._testing import call_kernel
    v, c = cache_args(1, 3, 8, 2, 4)
    with pytest.raises(IndexError):
        call_kernel(WITH_INDICES, v, c, 0, np.array([[0, 1, 99]]), Out(np.float32, (1,)),
                    device=device)


# ---- positions read from tensors ------------------------------------------------------------


@reference(UPDATE_AT)
def update_at_model(val, cache, start, out):
    v, c = value(val), value(cache).copy()
    s = int(value(start).reshape(-1)[0])
    c[:, s:s + v.shape[1]] = v
    return [c, AnyValues(out.shape)]


@pytest.mark.parametrize("start_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("tokens,start", [(1, 0), (1, 7), (4, 2), (8, 0)])
def test_update_cache_at(device, start_dtype, tokens, start):
    v, c = cache_args(2, tokens, 8, 3, 4, order=(0, 2, 1, 3))
    check(device, UPDATE_AT, v, c, np.array(start, start_dtype), Out(np.float32, (1,)))


def test_update_cache_at_errors(device):
    out = Out(np.float32, (1,))
    v, c = cache_args(1, 3, 8, 2, 4)
    check_error(device, UPDATE_AT, v, c, np.array([6]), out, exc=IndexError,
                match="llama::update_cache.out: start_pos 6 with 3 tokens runs past the cache of 8")
    check_error(device, UPDATE_AT, v, c, np.array(-2), out, exc=IndexError,
                match="start_pos -2 is negative")
    check_error(device, UPDATE_AT, v, c, np.array([1, 2]), out, exc=ValueError,
                match="one element")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tokens,start", [(1, 0), (1, 11), (4, 3)])
def test_custom_sdpa_at(device, dtype, tokens, start):
    q, k, v = qkv(1, tokens, 12, 4, 2, 16, dtype)
    check(device, SDPA_AT, q, k, v, np.array([start]), True, None, out_like(q, dtype), tol=TOL,
          gpu_tol=gpu_tol(dtype))


def test_custom_sdpa_at_errors(device):
    q, k, v = qkv(1, 2, 8, 4, 2, 8)
    check_error(device, SDPA_AT, q, k, v, np.array([7]), True, None,
                Out(np.float32, (1, 2, 4, 8)), exc=IndexError,
                match="llama::custom_sdpa.out: start_pos 7 with 2 tokens runs past the cache")


# ---- attention.out: torch's decomposed attention as one kernel ------------------------------


@reference(ATTENTION)
def attention_out_model(q, k, v, mask, scale, empty_rows_zero, out):
    qv, kv, m = value(q), value(k), value(mask)
    got = attention(qv, kv, value(v), kv.shape[1] - qv.shape[1], False, scale, m)
    if empty_rows_zero and m is not None:
        got[:, np.all(np.isneginf(np.asarray(m, np.float64)), axis=1)] = 0.0
    return got


def attention_args(batch, tokens, keys, heads, kv_heads, dim, dtype, order=None):
    q = tensor(rand((batch, tokens, heads, dim)), dtype, order)
    k = tensor(rand((batch, keys, kv_heads, dim)), dtype, order)
    v = tensor(rand((batch, keys, kv_heads, dim)), dtype, order)
    return q, k, v


@pytest.mark.parametrize("mask_dtype", [None, np.float32, "same"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tokens,keys", [(1, 1), (4, 4), (3, 11), (6, 100)])
def test_attention(device, dtype, mask_dtype, tokens, keys):
    q, k, v = attention_args(2, tokens, keys, 4, 2, 16, dtype)
    mask = None
    if mask_dtype is not None:
        m = rand((tokens, keys), np.float32, -3, 1)
        m[0, 0] = -np.inf
        mask = tensor(m, dtype if mask_dtype == "same" else mask_dtype)
    check(device, ATTENTION, q, k, v, mask, 0.375, False, out_like(q, dtype), tol=TOL,
          gpu_tol=gpu_tol(dtype))


@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (8, 2), (6, 3), (3, 1)])
@pytest.mark.parametrize("dim", [8, 64])
def test_attention_grouped_heads(device, heads, kv_heads, dim):
    q, k, v = attention_args(1, 5, 9, heads, kv_heads, dim, np.float32)
    check(device, ATTENTION, q, k, v, None, 0.125, True, out_like(q, np.float32), tol=TOL)


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_strided_views(device, dtype):
    # The views the loader makes of [B, H, S, D] arrays (heads outside the
    # sequence), value heads outermost, a column-major mask and an out
    # stored as [B, H, S, D].
    q = tensor(rand((2, 5, 4, 16)), dtype, (0, 2, 1, 3))
    k = tensor(rand((2, 12, 2, 16)), dtype, (0, 2, 1, 3))
    v = tensor(rand((2, 12, 2, 16)), dtype, (2, 0, 1, 3))
    mask = T(rand((5, 12), np.float32, -3, 1), dim_order=(1, 0))
    out = Out(dtype, (2, 5, 4, 16), dim_order=(0, 2, 1, 3))
    check(device, ATTENTION, q, k, v, mask, 0.25, False, out, tol=TOL, gpu_tol=gpu_tol(dtype))


@pytest.mark.parametrize("empty_rows_zero", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tokens,keys", [(4, 100), (9, 80)])
def test_attention_masked_rows(device, dtype, empty_rows_zero, tokens, keys):
    # Rows 3 and 7 have every key masked: zeros (safe softmax) or NaN; the
    # others have leading -inf blocks and still attend to what follows.
    q, k, v = attention_args(1, tokens, keys, 4, 2, 16, dtype)
    mask = tensor(leading_masked(tokens, keys), dtype)
    got = check(device, ATTENTION, q, k, v, mask, 0.25, empty_rows_zero, out_like(q, dtype),
                tol=TOL, gpu_tol=gpu_tol(dtype))
    empty = got[0][:, 3::4]
    assert np.all(empty == 0.0) if empty_rows_zero else np.all(np.isnan(empty))
    assert np.all(np.isfinite(np.delete(got[0], np.s_[3::4], axis=1)))


# ---- long attentions, head_dim 16, 32, 64 or 128: CUDA runs them in tiles of 64 queries and
# 64 keys (float16 and bfloat16 of 16 queries or more on the tensor cores, float32 of 64 or
# more on CUDA cores) -------------------------------------------------------------------------

LONG_DTYPES = [np.float32, np.float16, BF16]


@pytest.mark.parametrize("dtype", LONG_DTYPES)
@pytest.mark.parametrize("dim", [16, 32, 64, 128])
@pytest.mark.parametrize("tokens,keys", [(16, 16), (70, 70), (33, 150)])
def test_attention_long(device, dtype, dim, tokens, keys):
    q, k, v = attention_args(2, tokens, keys, 4, 2, dim, dtype)
    m = rand((tokens, keys), np.float32, -3, 1)
    m[5, :keys - 1] = -np.inf  # one key left
    check(device, ATTENTION, q, k, v, tensor(m, np.float32), 0.3, False, out_like(q, dtype),
          tol=TOL)


@pytest.mark.parametrize("empty_rows_zero", [True, False])
@pytest.mark.parametrize("dtype", LONG_DTYPES)
@pytest.mark.parametrize("tokens,keys", [(20, 100), (67, 130)])
def test_attention_long_masked_rows(device, dtype, empty_rows_zero, tokens, keys):
    # Whole tiles of -inf before the keys that count; rows 3, 7, ... masked entirely.
    q, k, v = attention_args(1, tokens, keys, 2, 1, 32, dtype)
    got = check(device, ATTENTION, q, k, v, tensor(leading_masked(tokens, keys), dtype), 0.25,
                empty_rows_zero, out_like(q, dtype), tol=TOL)
    empty = got[0][:, 3::4]
    assert np.all(empty == 0.0) if empty_rows_zero else np.all(np.isnan(empty))
    assert np.all(np.isfinite(np.delete(got[0], np.s_[3::4], axis=1)))


@pytest.mark.parametrize("dtype", LONG_DTYPES)
def test_attention_long_strided_views(device, dtype):
    # Heads outside the sequence, values heads-outermost, a column-major
    # mask, an out stored as [B, H, S, D].
    q = tensor(rand((2, 72, 4, 32)), dtype, (0, 2, 1, 3))
    k = tensor(rand((2, 90, 2, 32)), dtype, (0, 2, 1, 3))
    v = tensor(rand((2, 90, 2, 32)), dtype, (2, 0, 1, 3))
    mask = T(rand((72, 90), np.float32, -3, 1), dim_order=(1, 0))
    out = Out(dtype, (2, 72, 4, 32), dim_order=(0, 2, 1, 3))
    check(device, ATTENTION, q, k, v, mask, 0.25, False, out, tol=TOL)


@pytest.mark.parametrize("dtype", LONG_DTYPES)
@pytest.mark.parametrize("heads,kv_heads,dim", [(4, 2, 16), (8, 1, 64), (3, 3, 128)])
@pytest.mark.parametrize("tokens,start,capacity", [(70, 0, 96), (40, 60, 128), (129, 3, 140)])
@pytest.mark.parametrize("causal", [True, False])
def test_custom_sdpa_long(device, dtype, heads, kv_heads, dim, tokens, start, capacity, causal):
    q, k, v = qkv(2, tokens, capacity, heads, kv_heads, dim, dtype)
    check(device, SDPA, q, k, v, start, None, 0.0, causal, None, out_like(q, dtype), tol=TOL)


@pytest.mark.parametrize("dtype", LONG_DTYPES)
def test_custom_sdpa_at_long(device, dtype):
    q, k, v = qkv(1, 70, 160, 4, 2, 64, dtype)
    check(device, SDPA_AT, q, k, v, np.array([37]), True, None, out_like(q, dtype), tol=TOL)
    check_error(device, SDPA_AT, q, k, v, np.array([100]), True, None, out_like(q, dtype),
                exc=IndexError,
                match="llama::custom_sdpa.out: start_pos 100 with 70 tokens runs past the cache")


def test_attention_empty(device):
    q, k, v = attention_args(1, 0, 5, 4, 2, 8, np.float32)
    check(device, ATTENTION, q, k, v, None, 0.375, False, Out(np.float32, (1, 0, 4, 8)))


def test_attention_errors(device):
    q, k, v = attention_args(1, 3, 8, 4, 2, 8, np.float32)
    out = Out(np.float32, (1, 3, 4, 8))

    def error(q, k, v, mask, out, exc, match):
        check_error(device, ATTENTION, q, k, v, mask, 0.375, False, out, exc=exc,
                    match="pterun::attention.out: .*" + match)

    error(T(rand((3, 4, 8))), k, v, None, out, ValueError, "expected a query .* of rank 4")
    error(q, T(rand((8, 2, 8))), v, None, out, ValueError, "expected a key .* of rank 4")
    error(q, k, T(rand((1, 8, 16))), None, out, ValueError, "expected a value .* of rank 4")
    q3, k3, v3 = attention_args(1, 3, 8, 3, 2, 8, np.float32)
    error(q3, k3, v3, None, Out(np.float32, (1, 3, 3, 8)), ValueError,
          "3 query heads are not a multiple of 2 key/value heads")
    _, k2, v2 = attention_args(1, 3, 2, 4, 2, 8, np.float32)
    error(q, k2, v2, None, out, ValueError, "has 3 tokens, more than the 2 keys")
    qi = T(np.zeros((1, 3, 4, 8), np.int32))
    error(qi, qi, qi, None, Out(np.int32, (1, 3, 4, 8)), ValueError,
          "dtype int32 is not supported")
    _, k16, _ = attention_args(1, 3, 8, 4, 2, 8, np.float16)
    error(q, k16, v, None, out, ValueError, "key dtype float16 differs")
    # head_dim must be unit-stride in every tensor.
    swapped = (0, 1, 3, 2)
    error(T(value(q), dim_order=swapped), k, v, None, out, NotImplementedError,
          "query .* must have a unit-stride last dim")
    error(q, T(value(k), dim_order=swapped), v, None, out, NotImplementedError,
          "key .* must have a unit-stride last dim")
    error(q, k, T(value(v), dim_order=swapped), None, out, NotImplementedError,
          "value .* must have a unit-stride last dim")
    error(q, k, v, None, Out(np.float32, (1, 3, 4, 8), dim_order=swapped), NotImplementedError,
          "out .* must have a unit-stride last dim")
    # The mask: [S, Sk], the query's dtype or float32.
    error(q, k, v, T(np.zeros((3, 7), np.float32)), out, ValueError, r"must be \[3, 8\]")
    error(q, k, v, T(np.zeros((8, 3), np.float32)), out, ValueError, r"must be \[3, 8\]")
    error(q, k, v, T(np.zeros((1, 3, 8), np.float32)), out, ValueError, r"must be \[3, 8\]")
    error(q, k, v, T(np.zeros((3, 8), np.float16)), out, ValueError,
          r"mask dtype float16 must be the query's \(float32\) or float32")
    error(q, k, v, T(np.zeros((3, 8), np.int64)), out, ValueError, "mask dtype int64")


@reference(SLICE_AT)
def slice_at_model(x, dim, start, length, out):
    s = int(value(start).reshape(-1)[0])
    return np.take(value(x), np.arange(s, s + length), axis=dim)


@pytest.mark.parametrize("dim,start,length", [(0, 0, 3), (0, 61, 3), (1, 2, 5), (-1, 0, 8),
                                              (0, 5, 0)])
def test_slice_at(device, dim, start, length):
    x = rand((64, 8))
    shape = [64, 8]
    shape[dim] = length
    check(device, SLICE_AT, x, dim, np.array(start), length, Out(np.float32, shape))


def test_slice_at_errors(device):
    x = rand((16, 8))
    check_error(device, SLICE_AT, x, 0, np.array(14), 3, Out(np.float32, (3, 8)), exc=IndexError,
                match="start 14 with 3 elements runs past a dimension of 16")
    check_error(device, SLICE_AT, x, 0, np.array(0), 17, Out(np.float32, (17, 8)),
                exc=IndexError, match="17 elements does not fit")


@pytest.mark.parametrize("src_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("out_dtype", [np.int32, np.int64, np.float32])
def test_item_copy(device, src_dtype, out_dtype):
    check(device, ITEM_COPY, np.array([37], src_dtype), Out(out_dtype, ()),
          expect=np.asarray(37, out_dtype))

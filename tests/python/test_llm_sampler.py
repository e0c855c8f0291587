"""pterun.llm's Sampler against the distribution NumPy computes directly."""

import numpy as np
import pytest

from pterun.llm import Sampler

LOGITS = np.array([2.0, 1.0, 0.5, 3.0, -1.0, 0.0, 2.5, -3.0], np.float32)
DRAWS = 8000


def frequencies(sampler):
    counts = np.bincount([sampler(LOGITS) for _ in range(DRAWS)], minlength=LOGITS.size)
    return counts / DRAWS


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_temperature_zero_is_argmax():
    assert Sampler(0, 0.9, None)(LOGITS) == int(np.argmax(LOGITS))
    tie = np.array([1.0, 5.0, 5.0], np.float32)
    assert Sampler(0, 1.0, None)(tie) == 1  # the first of equal maxima, as np.argmax


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_full_sampling_follows_softmax(temperature):
    want = softmax(LOGITS.astype(np.float64) / temperature)
    got = frequencies(Sampler(temperature, 1.0, seed=1))
    np.testing.assert_allclose(got, want, atol=0.025)


@pytest.mark.parametrize("top_p", [0.3, 0.6, 0.9])
def test_top_p_samples_the_nucleus_renormalised(top_p):
    p = softmax(LOGITS.astype(np.float64))
    order = np.argsort(-p)
    keep = order[: int(np.searchsorted(np.cumsum(p[order]), top_p)) + 1]
    want = np.zeros_like(p)
    want[keep] = p[keep] / p[keep].sum()
    got = frequencies(Sampler(1.0, top_p, seed=2))
    assert set(np.flatnonzero(got)) == set(keep)
    np.testing.assert_allclose(got, want, atol=0.025)


def test_seed_gives_the_same_draws():
    a = [Sampler(0.8, 0.9, seed=5)(LOGITS) for _ in range(1)]
    s1, s2 = Sampler(0.8, 0.9, seed=5), Sampler(0.8, 0.9, seed=5)
    assert [s1(LOGITS) for _ in range(50)] == [s2(LOGITS) for _ in range(50)]
    assert a[0] == Sampler(0.8, 0.9, seed=5)(LOGITS)


def test_non_finite_logits_raise():
    with pytest.raises(RuntimeError, match="not finite"):
        Sampler(1.0, 0.9, 0)(np.full(4, np.nan, np.float32))
    with pytest.raises(RuntimeError, match="not finite"):
        Sampler(0, 0.9, 0)(np.full(4, np.inf, np.float32))

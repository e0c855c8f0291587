"""Choosing the next token from a row of logits."""

from __future__ import annotations

from typing import Optional

import numpy as np


class Sampler:
    """Greedy at temperature 0; otherwise softmax(logits / temperature)
    restricted to the top-p nucleus, drawn with a NumPy generator seeded by
    ``seed`` (the same seed and logits give the same tokens)."""

    def __init__(self, temperature: float, top_p: float, seed: Optional[int]) -> None:
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self._rng = np.random.default_rng(seed)

    def __call__(self, logits: np.ndarray) -> int:
        if self.temperature == 0:
            best = int(np.argmax(logits))
            if not np.isfinite(logits[best]):
                raise RuntimeError(f"pterun.llm: the model's logits are not finite ({logits[best]})")
            return best
        x = logits.astype(np.float64) / self.temperature
        top = x.max()
        if not np.isfinite(top):
            raise RuntimeError(f"pterun.llm: the model's logits are not finite ({top})")
        p = np.exp(x - top)
        p /= p.sum()
        if self.top_p < 1.0:
            # Only tokens with p >= (1 - top_p) / (n - 1) can be in the
            # nucleus (the rest together hold less than 1 - top_p), so sort
            # those alone instead of the whole vocabulary.
            floor = (1.0 - self.top_p) / max(p.size - 1, 1)
            candidates = np.flatnonzero(p >= floor)
            order = candidates[np.argsort(-p[candidates], kind="stable")]
            cumulative = np.cumsum(p[order])
            keep = min(int(np.searchsorted(cumulative, self.top_p)) + 1, order.size)
            order, weights = order[:keep], p[order[:keep]]
        else:
            order, weights = None, p
        cumulative = np.cumsum(weights)
        pick = int(np.searchsorted(cumulative, self._rng.random() * cumulative[-1], side="right"))
        pick = min(pick, cumulative.size - 1)
        return int(order[pick]) if order is not None else pick

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
            order, weights = self._nucleus(p)
        else:
            order, weights = None, p
        cumulative = np.cumsum(weights)
        pick = int(np.searchsorted(cumulative, self._rng.random() * cumulative[-1], side="right"))
        pick = min(pick, cumulative.size - 1)
        return int(order[pick]) if order is not None else pick

    def _nucleus(self, p: np.ndarray):
        """The smallest set of most likely tokens whose probabilities reach
        top_p (ties by lower id first), and their probabilities. Sorting a
        whole vocabulary costs milliseconds, so: only tokens with p >= (1 -
        top_p) / (n - 1) can belong to the set (the others together hold
        less than 1 - top_p); of those, it sorts the k most likely (found in
        linear time) and widens k until they reach top_p."""
        candidates = np.flatnonzero(p >= (1.0 - self.top_p) / max(p.size - 1, 1))
        q = p[candidates]
        k = min(q.size, 64)
        while True:
            top = np.argpartition(-q, k - 1)[:k] if k < q.size else np.arange(q.size)
            order = top[np.lexsort((top, -q[top]))]  # candidates are in id order
            cumulative = np.cumsum(q[order])
            if cumulative[-1] >= self.top_p or k == q.size:
                break
            k = min(q.size, k * 8)
        keep = min(int(np.searchsorted(cumulative, self.top_p)) + 1, order.size)
        chosen = candidates[order[:keep]]
        return chosen, p[chosen]

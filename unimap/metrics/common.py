"""Shared pieces of :mod:`unimap.metrics`: the block size, seeding and row preparation.

``BLOCK_BYTES`` bounds the distances every blocked computation holds at once. The metric
modules read it here at call time (``common.BLOCK_BYTES``, never a copy made at import),
so a test that patches it on this module changes the block size everywhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.runtime.random_streams import seed_from_random_state

# Distances held at once by the blocked computations (rows of distances, pair batches).
BLOCK_BYTES = 1 << 26  # 64 MiB


def make_rng(random_state: Any) -> np.random.Generator:
    """A numpy Generator seeded from ``random_state`` (int, Generator or None)."""
    return np.random.default_rng(seed_from_random_state(random_state))


def prepare_rows(A: np.ndarray, metric: str) -> np.ndarray:
    """float64 rows on which ``metric`` is a monotone function of the euclidean distance."""
    A = np.array(A, dtype=np.float64)
    if metric in ("cosine", "correlation"):
        if metric == "correlation":
            A -= A.mean(axis=1, keepdims=True)
        norms = np.linalg.norm(A, axis=1, keepdims=True)
        np.divide(A, norms, out=A, where=norms > 0)
    return A

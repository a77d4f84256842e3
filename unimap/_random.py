"""Randomness: every random choice of a fit derives from one integer seed.

``random_state`` (None, int, numpy Generator or RandomState) becomes a 63-bit seed once per
fit (:func:`seed_from_random_state`). Counter-based numba kernels hash that seed with their
loop counters (:mod:`unimap._kernels.rng`); numpy code builds ``np.random.default_rng`` from it.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

__all__ = ["check_random_state", "seed_from_random_state"]


def check_random_state(random_state: Any, name: str = "random_state") -> None:
    """Raise if ``random_state`` is not None, a non-negative int, a Generator or RandomState."""
    if random_state is None or isinstance(random_state,
                                          (np.random.Generator, np.random.RandomState)):
        return
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError(f"{name} must be None, an int or a numpy Generator, got a bool")
    if isinstance(random_state, numbers.Integral):
        if random_state < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {random_state}")
        return
    raise TypeError(f"{name} must be None, an int, a numpy Generator or RandomState, "
                    f"got {type(random_state).__name__}")


def seed_from_random_state(random_state: Any) -> int:
    """Turn ``random_state`` into a 63-bit integer seed (fresh entropy for None; one draw
    from a Generator or RandomState)."""
    check_random_state(random_state)
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> 1)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    return int(random_state) & ((1 << 63) - 1)

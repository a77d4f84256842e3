"""Randomness: every random choice of a fit derives from one integer seed.

``random_state`` (None, int, numpy Generator or RandomState) becomes a 63-bit seed once per
fit (:func:`seed_from_random_state`). That seed is split by ``numpy.random.SeedSequence.spawn``
into independent streams, one per phase, with a fixed mapping (:class:`FitStreams`): child 0
the neighbour index, 1 the initialization, 2 the optimizer, 3 the placement of new points by
``transform``. A phase that needs several streams spawns again from its own seed
(:func:`spawn_seeds`). Counter-based numba kernels hash their seed with their loop counters
(:mod:`unimap.runtime.rng_numba`); numpy code builds ``np.random.default_rng`` from it.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FitStreams", "check_random_state", "seed_from_random_state", "spawn_seeds"]


MAX_SEED = 2**63 - 1  # the largest integer random_state: seeds are 63-bit


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
        if random_state > MAX_SEED:
            # seeds are 63-bit: a larger one would be reduced silently (2**63 + 7 gave the
            # embedding of 7)
            raise ValueError(f"{name} must be at most 2**63 - 1, got {random_state}")
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
    return int(random_state)


def spawn_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent 63-bit seeds derived from ``seed`` (``SeedSequence(seed).spawn(n)``);
    the same ``seed`` always gives the same list, and child ``i`` does not depend on ``n``."""
    children = np.random.SeedSequence(int(seed)).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint64)[0] >> 1) for c in children]


def spawned_seeds_at(seed: int, indices) -> list[int]:
    """``[spawn_seeds(seed, n)[i] for i in indices]`` for any ``n`` above them, without
    making the other children (seconds for all of a large graph's components; measured:
    benchmarks/results/library_notes.md, "unimap/runtime/random_streams.py")."""
    return [int(np.random.SeedSequence(int(seed), spawn_key=(int(i),))
                .generate_state(1, dtype=np.uint64)[0] >> 1) for i in indices]


@dataclass(frozen=True)
class FitStreams:
    """The independent seeds of one fit's phases, children 0..3 of the fit's seed."""

    neighbors: int
    init: int
    optimize: int
    transform: int

    @classmethod
    def from_seed(cls, seed: int) -> FitStreams:
        return cls(*spawn_seeds(seed, 4))

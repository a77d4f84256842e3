"""Counter-based random numbers: a value is a pure function of (seed, counters).

Kernels that draw from these never share generator state between threads, so their output
does not depend on the number of threads or on the order rows are processed.
"""

from __future__ import annotations

import numba
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@numba.njit(inline="always", cache=True)
def mix64(x):
    """The splitmix64 finaliser: a bijective, well-avalanching 64-bit hash."""
    x = np.uint64(x)
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


@numba.njit(inline="always", cache=True)
def hash_combine(h, value):
    """Fold a counter into a running hash."""
    return mix64(np.uint64(h) + _GOLDEN + np.uint64(value))


@numba.njit(inline="always", cache=True)
def bounded(h, n):
    """Map a 64-bit hash to ``[0, n)`` by multiply-shift on its top 32 bits (n < 2**32)."""
    return np.int64(((np.uint64(h) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@numba.njit(inline="always", cache=True)
def fill_pool(Y, pool, key_hash, block):
    """``pool[p]`` ← row ``bounded(hash(block key, p), n)`` of ``Y``: uniform over all n rows,
    one draw per slot, keyed by a block of work (so by no thread). The block key
    ``hash(key_hash, −1 − block)`` takes a negative counter, where the callers' per-sample
    counters (repeats, edge positions) are not negative. The pooled negative samples of
    GDR's row blocks and of UMAP's edge blocks."""
    n = Y.shape[0]
    block_hash = hash_combine(key_hash, np.int64(-1) - block)
    for p in range(pool.shape[0]):
        k = bounded(hash_combine(block_hash, p), n)
        for c in range(Y.shape[1]):
            pool[p, c] = Y[k, c]

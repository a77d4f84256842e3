"""When the epochs draw their negative samples from per-block pools (UMAP's SGD and GDR's
unnormalized epochs, 2-D, on the CPU).

A negative sample is a random read of the embedding; once the embedding outgrows the cache
those reads dominate an epoch. From ``POOLED_NEGATIVES_MIN_ROWS`` rows on, each block of
edges (UMAP) or rows (GDR) draws its samples from a pool of ``NEGATIVE_POOL`` points of the
epoch's start (:func:`unimap.runtime.rng_numba.fill_pool`), which stays in cache. Below the
threshold every sample reads its own point, so results on small data are those of the
unpooled kernels (measured: ``benchmarks/results/scale_umap.md``, ``scale_gdr.md`` and
``docs/gdr.md``). The GPU's epochs keep per-sample draws: its memory serves random reads.
"""

from __future__ import annotations

__all__ = ["NEGATIVE_POOL", "POOLED_NEGATIVES_MIN_ROWS", "default_negative_pool"]

POOLED_NEGATIVES_MIN_ROWS = 50_000
NEGATIVE_POOL = 128  # points per pool: each is a cache line read once per block


def default_negative_pool(n_rows: int) -> int:
    """The pool size an epoch of ``n_rows`` points uses by default (0: no pool)."""
    return NEGATIVE_POOL if n_rows >= POOLED_NEGATIVES_MIN_ROWS else 0

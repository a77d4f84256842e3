"""The k nearest neighbours read from a sparse matrix of distances (``metric="precomputed"``
with a scipy sparse ``X``, as umap-learn takes): each row's stored entries are its only
candidates, an entry not stored is infinitely far, and a stored zero is a distance of 0.

Typical input is a kNN distance graph (scikit-learn's ``kneighbors_graph(mode="distance")``,
or a graph from another tool) with at least ``n_neighbors - 1`` entries besides the diagonal
in every row; a row with fewer is refused by name, since the graph would have holes.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["sparse_rows"]


def sparse_rows(D: sp.spmatrix, k: int, exclude_self: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(indices, distances)`` of shape (m, k'): each row's ``k'`` smallest stored entries,
    ties by column; ``exclude_self`` drops the diagonal and gives ``k - 1`` columns (the
    pipeline puts the point itself first)."""
    D = sp.csr_matrix(D, dtype=np.float32)
    D.sum_duplicates()
    rows = np.repeat(np.arange(D.shape[0]), np.diff(D.indptr))
    cols, vals = D.indices.astype(np.int64), D.data
    if exclude_self:
        keep = cols != rows
        rows, cols, vals = rows[keep], cols[keep], vals[keep]
        k -= 1
    m = D.shape[0]
    counts = np.bincount(rows, minlength=m)
    short = np.flatnonzero(counts < k)
    if short.size:
        row = int(short[0])
        raise ValueError(
            f"a sparse precomputed distance matrix needs at least {k} stored distances per "
            f"row{' besides the diagonal' if exclude_self else ''} (n_neighbors - 1 = {k}); "
            f"row {row} has {int(counts[row])} ({short.size} rows have too few): store more "
            "neighbours per row, or lower n_neighbors")
    order = np.lexsort((cols, vals, rows))  # by row, then distance, then column
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(order.size) - np.repeat(starts, counts)
    chosen = order[rank < k]
    return (cols[chosen].reshape(m, k), vals[chosen].reshape(m, k).astype(np.float32))

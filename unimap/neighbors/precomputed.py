"""The backend of ``metric="precomputed"`` (:mod:`unimap.neighbors.graph`): a square matrix
of distances between the training points, dense or sparse (stored distances only, never
densified: :func:`sparse_rows`); new points come as their distances to the training points,
so a restored index needs no data of its own.

A sparse matrix of distances (as umap-learn takes it with ``metric="precomputed"``) is read
row by row: each row's stored entries are its only candidates, an entry not stored is
infinitely far, and a stored zero is a distance of 0. Typical input is a kNN distance graph
(scikit-learn's ``kneighbors_graph(mode="distance")``, or a graph from another tool) with at
least ``n_neighbors - 1`` entries besides the diagonal in every row; a row with fewer is
refused by name, since the graph would have holes."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.neighbors.backend import Backend

__all__ = ["PrecomputedBackend", "precomputed_rows", "sparse_rows"]


class PrecomputedBackend(Backend):
    """The k smallest distances of each row of a square distance matrix."""

    name = "exact"
    own_metric = True
    self_in_rows = False

    def build(self, rows: Any) -> PrecomputedBackend:
        """Index the square distance matrix ``rows`` (a float32 copy; refused if it is not
        square or holds negative distances)."""
        if rows.ndim != 2 or rows.shape[0] != rows.shape[1]:
            raise ValueError(
                f"metric='precomputed' needs a square distance matrix, got shape {rows.shape}"
            )
        if sp.issparse(rows):  # stored distances only; never densified
            self.rows = sp.csr_matrix(rows, dtype=np.float32)
        else:
            self.rows = np.ascontiguousarray(rows, dtype=np.float32)
        if ((self.rows.data if sp.issparse(rows) else self.rows) < 0).any():
            raise ValueError("metric='precomputed' distances must be non-negative")
        return self

    @property
    def sparse(self) -> bool:
        return sp.issparse(self.rows)

    def knn_graph(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        return precomputed_rows(self.rows, k, exclude_self=True)

    def query(self, rows: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``rows``: an ``(m, n_train)`` matrix of distances to the training points."""
        return precomputed_rows(rows, k, exclude_self=False)

    def training_rows(self) -> Any:
        raise ValueError("a precomputed index holds distances, not data rows")

    @staticmethod
    def memory_bytes(n: int, d: int, k: int) -> tuple[int, int]:
        """Rows of the (validated, float32) n x n matrix: top k each."""
        graph = n * k * 8
        return graph * 3, graph

    def export(self, info: dict, encode: Any) -> None:
        """Nothing: transform takes distances to the training points."""

    def restore(self, rows: Any, info: dict, decode: Any) -> PrecomputedBackend:
        self.rows = None
        return self


def precomputed_rows(D: Any, k: int, exclude_self: bool) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest distances of each row of ``D`` (without the diagonal: each point
    itself, when ``exclude_self``), ascending, and their columns."""
    if sp.issparse(D):
        return sparse_rows(D, k, exclude_self)
    D = np.array(D, dtype=np.float32, copy=True)
    if exclude_self:
        np.fill_diagonal(D, np.inf)
        k -= 1
        if k == 0:
            return np.empty((D.shape[0], 0), np.int64), np.empty((D.shape[0], 0), np.float32)
    idx = np.argpartition(D, k - 1, axis=1)[:, :k] if k < D.shape[1] else np.argsort(D, 1)
    idx = idx[:, :k]
    d = np.take_along_axis(D, idx, axis=1)
    order = np.argsort(d, axis=1, kind="stable")
    return np.take_along_axis(idx, order, 1), np.take_along_axis(d, order, 1)


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

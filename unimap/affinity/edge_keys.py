"""Edges of sparse graphs as sorted integer keys ``row · n + col``, to read one graph's
weights at another graph's edges without densifying either (the supervised intersections
and densMAP's radii)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["edge_keys", "values_at", "knn_edge_lengths"]


def edge_keys(graph: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    """The stored edges' keys ``row · n_cols + col`` in increasing order and their weights
    (float64)."""
    coo = sp.coo_matrix(graph)
    keys = coo.row.astype(np.int64) * graph.shape[1] + coo.col
    order = np.argsort(keys, kind="stable")
    return keys[order], coo.data[order].astype(np.float64)


def values_at(keys: np.ndarray, own: np.ndarray, values: np.ndarray,
              missing: float) -> np.ndarray:
    """The weight of each of ``keys`` in a graph given by :func:`edge_keys` (``own``,
    ``values``), ``missing`` where it has no such edge."""
    out = np.full(keys.size, missing, dtype=np.float64)
    if own.size:
        at = np.minimum(np.searchsorted(own, keys), own.size - 1)
        hit = own[at] == keys
        out[hit] = values[at[hit]]
    return out


def knn_edge_lengths(graph: sp.spmatrix, knn_indices: np.ndarray,
                     knn_dists: np.ndarray) -> tuple[sp.coo_matrix, np.ndarray]:
    """``graph``'s entries (COO) and each one's length read from the kNN graph
    ``(knn_indices, knn_dists)``: the larger of the two kNN distances between its ends,
    float64, 0 where neither kNN list holds the edge (densMAP's radii, the disconnection
    cut)."""
    n = graph.shape[0]
    rows = np.repeat(np.arange(n), knn_indices.shape[1])
    dists = sp.csr_matrix((knn_dists.ravel().astype(np.float64),
                           (rows, knn_indices.ravel())), shape=(n, n))
    own, values = edge_keys(dists.maximum(dists.T))
    coo = graph.tocoo()
    return coo, values_at(coo.row.astype(np.int64) * n + coo.col, own, values, 0.0)

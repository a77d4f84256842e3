"""``unique=True`` of UMAP and GDR (umap-learn's parameter): fit on the distinct rows, give
every duplicate its row's position.

A dataset with many repeated rows (counts, binarised features, rounded measurements) makes
kNN graphs of identical points at distance 0, which the calibrations cannot spread. With
``unique=True`` the pipeline runs on the distinct rows only, in the order of their first
appearance, and ``embedding_`` repeats each one's position for its copies
(``unique_inverse_[i]`` is row ``i``'s distinct row).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["distinct_rows", "first_rows"]


def distinct_rows(X: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, inverse)``: the index of each distinct row's first appearance, in increasing
    order, and for each row the position of its distinct row in ``rows``
    (``X[rows][inverse]`` equals ``X``). Dense or CSR; ``-0.0`` equals ``0.0``."""
    if sp.issparse(X):
        return _distinct_sparse_rows(sp.csr_matrix(X))
    X = np.asarray(X)
    _, first, inverse = np.unique(X + 0.0, axis=0, return_index=True, return_inverse=True)
    return _by_first_appearance(first, inverse.reshape(-1))


def _by_first_appearance(first: np.ndarray, inverse: np.ndarray):
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse]


def _distinct_sparse_rows(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Rows compared by their stored (column, value) pairs once made canonical."""
    X = X.copy()
    X.sum_duplicates()
    X.data = X.data + 0.0  # -0.0 to 0.0
    X.eliminate_zeros()
    X.sort_indices()
    seen: dict[tuple[bytes, bytes], int] = {}
    rows, inverse = [], np.empty(X.shape[0], dtype=np.int64)
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        key = (X.indices[lo:hi].tobytes(), X.data[lo:hi].tobytes())
        code = seen.setdefault(key, len(seen))
        if code == len(rows):
            rows.append(i)
        inverse[i] = code
    return np.asarray(rows, dtype=np.int64), inverse


def first_rows(inverse: np.ndarray) -> np.ndarray:
    """Each distinct row's first appearance, from ``unique_inverse_``."""
    return np.unique(inverse, return_index=True)[1]

"""The exact k nearest neighbours of sparse rows, by blocks of queries: euclidean distances
from sparse products in float64 (``|q|² + |x|² − 2 q·x``), never densifying the rows. The
``"exact"`` backend of :mod:`unimap.neighbors.graph` for wide, sparse data (a bag of words),
where a dense copy would cost ``n x d`` and its exact re-ranking ``d`` per candidate.

SciPy's sparse product is sequential, so the distances do not depend on the threads; float64
keeps its cancellation error far below the float32 distances returned.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["sparse_exact_query", "SPARSE_EXACT_METRICS"]

# the metrics this search serves: euclidean, and cosine as euclidean on unit rows
SPARSE_EXACT_METRICS = ("euclidean", "cosine")
_CHUNK_BYTES = 1 << 27  # 128 MiB of float64 products per query block


def sparse_exact_query(data: sp.csr_matrix, queries: sp.csr_matrix, k: int,
                       self_offset: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest rows of ``data`` for each row of ``queries`` (euclidean; int64 ids,
    float32 distances, rows sorted). ``self_offset``: the row of ``data`` that query 0 is,
    to exclude each point itself; None for new points."""
    from unimap.neighbors.topk_numba import rows_k_smallest

    n, m = data.shape[0], queries.shape[0]
    exclude = self_offset is not None
    k_eff = min(k, n - exclude)
    idx = np.empty((m, k_eff), dtype=np.int64)
    dist = np.empty((m, k_eff), dtype=np.float32)
    if k_eff == 0:
        return idx, dist
    data64 = sp.csr_matrix(data, dtype=np.float64)
    transposed = data64.T.tocsc()
    data_sq = np.asarray(data64.multiply(data64).sum(axis=1)).ravel()
    block = max(1, min(m, _CHUNK_BYTES // (8 * n)))
    for start in range(0, m, block):
        q = sp.csr_matrix(queries[start:start + block], dtype=np.float64)
        q_sq = np.asarray(q.multiply(q).sum(axis=1)).ravel()
        squared = (q @ transposed).toarray()
        squared *= -2.0
        squared += data_sq[None, :]
        squared += q_sq[:, None]
        np.maximum(squared, 0.0, out=squared)
        d = np.sqrt(squared).astype(np.float32)
        rows = slice(start, start + q.shape[0])
        rows_k_smallest(d, k_eff, (self_offset or 0) + start, exclude, idx[rows], dist[rows])
    return idx, dist

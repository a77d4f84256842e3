"""The exact k nearest neighbours, by blocks of queries (chunked BLAS distances and a
parallel row-wise top-k): the ``"exact"`` backend of :mod:`unimap.neighbors.graph`, its ground
truth, and the fallback of the sharded index for points whose cell is too small."""

from __future__ import annotations

import numpy as np

__all__ = ["exact_query"]

_CHUNK_BYTES = 1 << 27  # 128 MiB of float32 distances per query block


def exact_query(data: np.ndarray, queries: np.ndarray, k: int, metric: str,
                 self_offset: int | None,
                 metric_kwds: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest rows of ``data`` for each query, by blocks of queries.

    ``self_offset`` is the row of ``data`` that query 0 is (when querying the data against
    itself), so that the point itself is excluded; None for new points. ``metric``: a native
    metric on prepared rows, or a general one (:func:`unimap.neighbors.metrics.pairwise`,
    with ``metric_kwds``).
    """
    from unimap.neighbors.metrics import GENERAL_METRICS, pairwise
    from unimap.neighbors.topk_numba import manhattan_block, rows_k_smallest

    n, m = data.shape[0], queries.shape[0]
    k_eff = min(k, n - (self_offset is not None))
    idx = np.empty((m, k_eff), dtype=np.int64)
    dist = np.empty((m, k_eff), dtype=np.float32)
    if k_eff == 0:
        return idx, dist
    general = metric in GENERAL_METRICS
    block = max(1, min(m, _CHUNK_BYTES // ((8 if general else 4) * n)))
    sq_norms = (np.einsum("ij,ij->i", data, data) if metric == "euclidean" or
                metric in ("cosine", "correlation") else None)
    for start in range(0, m, block):
        q = queries[start : start + block]
        if general:
            d = pairwise(q, data, metric, metric_kwds)
        elif metric == "manhattan":
            d = np.empty((q.shape[0], n), dtype=np.float32)
            manhattan_block(q, data, d)
        else:
            d = q @ data.T
            d *= np.float32(-2.0)
            d += sq_norms[None, :]
            d += np.einsum("ij,ij->i", q, q)[:, None]
        exclude = self_offset is not None
        offset = (self_offset or 0) + start
        rows_k_smallest(d, k_eff, offset, exclude, idx[start : start + q.shape[0]],
                        dist[start : start + q.shape[0]])
    if sq_norms is not None:
        np.maximum(dist, 0.0, out=dist)
        np.sqrt(dist, out=dist)
    return idx, dist

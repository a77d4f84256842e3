"""The exact k nearest neighbours, by blocks of queries (chunked BLAS distances and a
parallel row-wise top-k): the ``"exact"`` backend of :mod:`unimap.neighbors.graph`
(:class:`ExactBackend`), its ground truth, and the fallback of the sharded index for points
whose cell is too small."""

from __future__ import annotations

import numpy as np

from unimap.neighbors.backend import Backend
from unimap.runtime.threads import numba_threads

__all__ = ["ExactBackend", "exact_query"]

_CHUNK_BYTES = 1 << 27  # 128 MiB of float32 distances per query block


class ExactBackend(Backend):
    """Dense rows searched exactly (:func:`exact_query`), for every metric but precomputed
    distances: native ones on prepared rows, general and user-defined ones by their
    pairwise distances."""

    name = "exact"
    self_in_rows = False

    def knn_graph(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        with numba_threads(self.n_threads):
            return exact_query(self.rows, self.rows, k - 1, self.metric, 0, self.metric_kwds)

    def query(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        with numba_threads(self.n_threads):
            return exact_query(self.rows, rows, k, self.metric, None, self.metric_kwds)

    @staticmethod
    def memory_bytes(n: int, d: int, k: int) -> tuple[int, int]:
        """Two blocks of query distances live at once, and the top-k's graph."""
        graph = n * k * 8
        block = min(_CHUNK_BYTES, n * n * 4)
        return 2 * block + graph * 3, graph


def exact_query(data: np.ndarray, queries: np.ndarray, k: int, metric: str,
                 self_offset: int | None,
                 metric_kwds: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest rows of ``data`` for each query, by blocks of queries.

    ``self_offset`` is the row of ``data`` that query 0 is (when querying the data against
    itself), so that the point itself is excluded; None for new points. ``metric``: a native
    metric on prepared rows, or a general or user-defined one
    (:func:`unimap.neighbors.metrics.pairwise`, with ``metric_kwds``).
    """
    from unimap.neighbors.metrics import is_general, pairwise
    from unimap.neighbors.topk_numba import exact_rerank_rows, manhattan_block, rows_k_smallest

    n, m = data.shape[0], queries.shape[0]
    k_eff = min(k, n - (self_offset is not None))
    idx = np.empty((m, k_eff), dtype=np.int64)
    dist = np.empty((m, k_eff), dtype=np.float32)
    if k_eff == 0:
        return idx, dist
    general = is_general(metric)
    block = max(1, min(m, _CHUNK_BYTES // ((8 if general else 4) * n)))
    sq_norms = (np.einsum("ij,ij->i", data, data) if metric == "euclidean" or
                metric in ("cosine", "correlation") else None)
    max_sq_norm = float(sq_norms.max()) if sq_norms is not None else 0.0
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
        rows = slice(start, start + q.shape[0])
        if sq_norms is None:  # summed per pair in column order: no BLAS, no batch in the bits
            rows_k_smallest(d, k_eff, offset, exclude, idx[rows], dist[rows])
            continue
        # BLAS's product only proposes: its last bits depend on its threads and on the block
        # of queries, so the candidates are re-ranked by exact distances, with a bound on
        # the product's error that proves the exact k nearest are among them
        n_cand = min(n - exclude, k_eff + max(8, k_eff // 2))
        cand_idx = np.empty((q.shape[0], n_cand), dtype=np.int64)
        cand_d = np.empty((q.shape[0], n_cand), dtype=np.float32)
        rows_k_smallest(d, n_cand, offset, exclude, cand_idx, cand_d)
        bound = _product_error_bound(q, max_sq_norm, data.shape[1])
        exact_rerank_rows(data, np.ascontiguousarray(q), cand_idx, cand_d, bound, offset,
                          exclude, idx[rows], dist[rows])
    if sq_norms is not None:
        np.maximum(dist, 0.0, out=dist)
        np.sqrt(dist, out=dist)
    return idx, dist


def _product_error_bound(q: np.ndarray, max_sq_norm: float, n_features: int) -> np.ndarray:
    """A bound on the float32 error of ``|q|² + |x|² − 2 q·x`` against the exact squared
    distance, for every data row ``x`` (whose squared norm is at most ``max_sq_norm``).

    The dot product of ``d`` terms errs by at most ``γ_d |q||x| ≤ γ_d (|q|² + |x|²) / 2``
    (``γ_d ≈ d·u``, ``u = 2⁻²⁴``, Higham's bound, whatever the order of the sum), each norm by
    ``γ_d`` of itself, the two additions by ``2u`` of ``|q|² + |x|²`` each, and the exact
    sum the result is compared with by ``γ_d`` of the distance (at most ``2(|q|² + |x|²)``):
    ``(4d + 8)·u·(|q|² + |x|²)`` covers all, doubled for safety.
    """
    u = 2.0 ** -24
    q_sq = np.einsum("ij,ij->i", q, q, dtype=np.float64)
    return ((8.0 * n_features + 16.0) * u * (q_sq + max_sq_norm)).astype(np.float32)

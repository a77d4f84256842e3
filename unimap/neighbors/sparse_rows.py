"""Sparse rows searched as they are: when (:func:`sparse_search`: wide and sparse rows, a bag
of words, or rows too large to densify), and how: exactly, by sparse products
(:func:`sparse_exact_query`, the backend :class:`SparseExactBackend`), or by pynndescent's
sparse kernels (:class:`unimap.neighbors.nndescent.SparseNNDescentBackend`).

The exact search computes euclidean distances from sparse products in float64
(``|q|² + |x|² − 2 q·x``), never densifying the rows; cosine is euclidean on unit rows, as for
dense rows. SciPy's sparse product is sequential, so the distances do not depend on the
threads; float64 keeps its cancellation error far below the float32 distances returned.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.neighbors.backend import Backend
from unimap.neighbors.metrics import metric_name
from unimap.runtime.threads import numba_threads

__all__ = ["SPARSE_METRICS", "SPARSE_EXACT_METRICS", "SparseExactBackend", "sparse_search",
           "keeps_sparse", "exact_queries", "sparse_exact_query", "canonical_csr",
           "prepare_sparse"]

# the metrics pynndescent computes on sparse rows without densifying them
SPARSE_METRICS = ("euclidean", "cosine", "correlation", "manhattan", "chebyshev", "minkowski",
                  "canberra", "braycurtis", "hamming", "jaccard", "dice", "hellinger",
                  "sqeuclidean")
# the metrics the exact search serves: euclidean, and cosine as euclidean on unit rows
SPARSE_EXACT_METRICS = ("euclidean", "cosine")
# Up to this many points sparse rows are searched exactly: on a bag of words
# (benchmarks/sparse_text.py) the exact graph takes seconds where pynndescent's misses many
# neighbours, and the whole fit is several times faster
# (measured: benchmarks/results/library_notes.md, "unimap/neighbors/sparse_rows.py")
SPARSE_EXACT_MAX_SAMPLES = 20_000
# New sparse rows are placed by exact queries up to this many training rows, also where
# pynndescent built the graph: on the same bag of words the exact queries were faster than
# pynndescent's and found far more of the neighbours (a query costs O(n); measured: as above).
SPARSE_EXACT_QUERY_MAX_SAMPLES = 100_000
_CHUNK_BYTES = 1 << 27  # 128 MiB of float64 products per query block
# sparse rows at least this wide and at most this dense are searched as they are (a bag of
# words): densified, each exact distance would cost d, not the rows' few stored values
WIDE_SPARSE_FEATURES, WIDE_SPARSE_DENSITY = 4096, 0.05


def sparse_search(X: Any, metric: Any, method: str) -> str | None:
    """How sparse ``X`` is searched as it is: ``"exact"`` (sparse products,
    :func:`sparse_exact_query`: wide and sparse rows, or rows too large to densify, with
    euclidean or cosine up to ``SPARSE_EXACT_MAX_SAMPLES`` points), ``"nndescent"``
    (pynndescent's sparse kernels: rows too large to densify otherwise, or asked for by
    ``method="nndescent"``), or None where it is densified (its float32 copy fits
    ``MAX_DENSE_BYTES``). Raises where it must stay sparse and cannot."""
    from unimap.runtime.validation import MAX_DENSE_BYTES  # read here: tests lower it

    n, d = X.shape
    too_large = n * d * 4 > MAX_DENSE_BYTES
    wide = d >= WIDE_SPARSE_FEATURES and X.nnz <= WIDE_SPARSE_DENSITY * n * d
    served = isinstance(metric, str) and metric in SPARSE_METRICS
    has_nnd = importlib.util.find_spec("pynndescent") is not None
    if method == "nndescent":
        if served:
            return "nndescent"
    elif (too_large or wide) and method != "hnsw":
        if metric in SPARSE_EXACT_METRICS and (method == "exact" or n <= SPARSE_EXACT_MAX_SAMPLES):
            return "exact"
        # wide rows that fit are densified beyond that (the dense search, HNSW above 20,000
        # points, is measured; pynndescent's sparse one is not, on such data)
        if too_large and served and has_nnd and method == "auto":
            return "nndescent"
    if not too_large:
        return None  # densified, as dense rows are searched
    if method == "exact":
        raise ValueError(f"knn_method='exact' searches sparse X of shape {X.shape}, too large "
                         "to densify, for euclidean and cosine only: use knn_method='auto' or "
                         "'nndescent'")
    if not served:
        raise ValueError(f"sparse X of shape {X.shape} is too large to densify for the "
                         f"neighbour search, and metric={metric_name(metric)!r} has no sparse "
                         f"kernel (those with one: {', '.join(SPARSE_METRICS)}); reduce it "
                         "first (e.g. unimap.PCA or TruncatedSVD)")
    if method == "hnsw":
        raise ValueError(f"knn_method='hnsw' searches dense rows; sparse X of shape {X.shape} "
                         "is too large to densify: use knn_method='auto' or 'nndescent'")
    raise ImportError(f"sparse X of shape {X.shape} is too large to densify; its neighbour "
                      "search on the sparse rows needs pynndescent: pip install "
                      "'unimap[nndescent]'")


class SparseExactBackend(Backend):
    """Sparse rows searched exactly by sparse products (:func:`sparse_exact_query`),
    euclidean and cosine (:func:`prepare_sparse` rows)."""

    name = "exact"
    sparse = True
    self_in_rows = False

    def knn_graph(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        with numba_threads(self.n_threads):
            return sparse_exact_query(self.rows, self.rows, k - 1, 0)

    def query(self, rows: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
        with numba_threads(self.n_threads):
            return sparse_exact_query(self.rows, rows, k, None)


def exact_queries(metric: Any, n_train: int) -> bool:
    """Whether new sparse rows are searched exactly among ``n_train`` sparse training rows."""
    return metric in SPARSE_EXACT_METRICS and n_train <= SPARSE_EXACT_QUERY_MAX_SAMPLES


def keeps_sparse(X: Any, metric: Any, method: str) -> bool:
    """Whether sparse ``X`` is searched without being densified (:func:`sparse_search`)."""
    return sparse_search(X, metric, method) is not None


def canonical_csr(X: Any) -> sp.csr_matrix:
    """float32 CSR with sorted, summed indices (pynndescent's sparse kernels walk them in
    order)."""
    X = sp.csr_matrix(X, dtype=np.float32, copy=True)
    X.sum_duplicates()
    X.sort_indices()
    return X


def prepare_sparse(X: sp.csr_matrix, metric: str) -> sp.csr_matrix:
    """Sparse rows as the metric sees them
    (:func:`unimap.neighbors.geometry.prepare_rows` without densifying)."""
    if metric == "correlation":
        raise ValueError("the rows of a sparse index searched with metric='correlation' are "
                         "centred rows, which are dense: not available here (refit on dense "
                         "rows, or use metric='cosine')")
    if metric != "cosine":
        return X
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64)).ravel()
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.csr_matrix(sp.diags(scale.astype(np.float32)) @ X, dtype=np.float32)


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

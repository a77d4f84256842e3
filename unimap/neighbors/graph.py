"""The k-nearest-neighbour graph: exact and approximate backends behind one interface.

Convention: a kNN graph of ``n`` points with ``k`` neighbours is a pair of ``(n, k)`` arrays
``indices`` (int32) and ``distances`` (float32), rows sorted by distance, and, for the graph of
the training points, column 0 is the point itself at distance 0 (as in umap-learn, so
``n_neighbors=15`` means the point and its 14 nearest others).

Metrics: ``euclidean``, ``cosine``, ``correlation`` (reduced to euclidean on normalised rows,
so every backend serves them), ``manhattan`` (exact backend, or pynndescent when installed),
the general metrics of :mod:`unimap.neighbors.metrics` (exact up to 4,096 points, pynndescent
beyond), and ``precomputed`` (a square distance matrix).

Backends (``method``):

- ``"exact"``: chunked BLAS distances and a parallel row-wise top-k; ground truth, and the
  fastest choice for small data.
- ``"hnsw"``: faiss HNSW graphs (faiss-cpu is a core dependency) of two halves of the data,
  built side by side on a 50-dimensional PCA projection; 2 x 30 candidates re-ranked by exact
  full-space distances, and each pair found by one point's search offered to the other
  point's list; the default for large data, chosen by measurement (measured:
  benchmarks/results/knn_default_candidates.md and architecture_notes.md). From
  ``unimap.neighbors.sharded.SHARDED_MIN_ROWS`` (500,000) points of at most 50 columns on (see
  :func:`hnsw_index`), one such index per k-means
  cell of ~25,000 points, a point searched at home and in the one other cell that can hold
  a nearer point (:class:`unimap.neighbors.sharded.ShardedHNSWIndex`): its cost per point no
  longer grows with n.
- ``"nndescent"``: pynndescent (``pip install unimap[nndescent]``), for other metrics and
  sparse data.
- ``"auto"``: exact below ``EXACT_MAX_SAMPLES`` points, else hnsw if faiss is importable,
  else nndescent if installed, else exact (with a warning about the time it takes).

Sparse rows are densified for the search while their float32 copy fits
``unimap.runtime.validation.MAX_DENSE_BYTES``, but for wide and sparse rows (a bag of words:
4,096 columns or more, at most 5% stored) of up to 20,000 points with euclidean or cosine,
searched exactly by sparse products, and for ``method="nndescent"``. Larger ones are searched
as they are too: exactly by sparse products (euclidean and cosine, up to 20,000 points), else
by pynndescent's sparse kernels, as umap-learn does
(:func:`unimap.neighbors.sparse_rows.sparse_search`). New points are then queried as sparse
rows.
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.neighbors import sharded as _sharded_knn
from unimap.neighbors.candidates import HNSW_PCA_DIM
from unimap.neighbors.exact import exact_query
from unimap.neighbors.hnsw import _HNSWIndex
from unimap.neighbors.metrics import (
    GENERAL_EXACT_MAX_SAMPLES,
    GENERAL_METRICS,
    METRIC_ALIASES,
    NATIVE_METRICS,
    canonical_metric,
    check_metric_data,
    check_metric_kwds,
    compiled_metric,
    is_general,
    metric_name,
)
from unimap.neighbors.sparse_rows import (
    canonical_csr,
    exact_queries,
    prepare_sparse,
    sparse_exact_query,
    sparse_search,
)
from unimap.runtime.threads import numba_threads, resolve_n_jobs
from unimap.runtime.validation import check_choice, check_int

__all__ = ["KNNGraph", "NeighborIndex", "nearest_neighbors", "METRICS", "NATIVE_OR_PRECOMPUTED",
           "EXACT_MAX_SAMPLES"]

METRICS = (*NATIVE_METRICS, *GENERAL_METRICS, *METRIC_ALIASES, "precomputed")
# the metrics of the evaluation functions (unimap.metrics) and the dask kNN: the native ones
NATIVE_OR_PRECOMPUTED = (*NATIVE_METRICS, "precomputed")
METHODS = ("auto", "exact", "hnsw", "nndescent")
EXACT_MAX_SAMPLES = 20_000



@dataclass
class KNNGraph:
    """k nearest neighbours of every point, sorted by distance (see module docstring)."""

    indices: np.ndarray
    distances: np.ndarray
    metric: str
    method: str


def _normalize_rows(X: np.ndarray, center: bool) -> np.ndarray:
    """Rows scaled to unit norm (after centring for correlation); zero rows stay zero."""
    X = np.array(X, dtype=np.float32, copy=True)
    if center:
        X -= X.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    np.divide(X, norms, out=X, where=norms > 0)
    return X


def prepare_rows(X: np.ndarray, metric: str) -> np.ndarray:
    """Rows in the geometry the index keeps them in (:meth:`NeighborIndex.training_rows`)."""
    return _prepare(X, metric)


def _prepare(X: np.ndarray, metric: str) -> np.ndarray:
    """Map cosine/correlation to euclidean geometry on normalised rows."""
    if metric == "cosine":
        return _normalize_rows(X, center=False)
    if metric == "correlation":
        return _normalize_rows(X, center=True)
    return np.ascontiguousarray(X, dtype=np.float32)


def _finish_distances(dist: np.ndarray, metric: str) -> np.ndarray:
    """Convert backend distances (euclidean on prepared rows) into the metric's distances."""
    if metric in ("cosine", "correlation"):
        # |u - v|^2 = 2 - 2 cos(u, v) for unit vectors.
        return np.maximum(dist * dist * np.float32(0.5), np.float32(0.0))
    return dist


def _with_self_first(idx: np.ndarray, dist: np.ndarray, k: int,
                     self_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Put each point itself (distance 0) in column 0, followed by its nearest others:
    int32 ids and float32 distances. ``self_ids``: each row's own index (default: the row
    number). Rows hold k-1 "others" after dropping self; when self was missing (exact
    duplicates tie at distance 0) the backend's k-1 nearest are kept."""
    from unimap.neighbors.rows_numba import self_first_rows

    n = idx.shape[0]
    if idx.shape[1] < k - 1:
        raise ValueError(f"{idx.shape[1]} neighbours per row, {k - 1} needed besides self")
    if self_ids is None:
        self_ids = np.arange(n)
    return self_first_rows(idx, dist, k, self_ids)


class NeighborIndex:
    """A kNN index over training data that also answers queries for new points.

    Parameters
    ----------
    metric : str or callable, default="euclidean"
        One of ``METRICS``, or a user-defined metric (:mod:`unimap.neighbors.metrics`; kept
        here compiled by numba).
    method : {"auto", "exact", "hnsw", "nndescent"}, default="auto"
        Backend (see module docstring).
    n_jobs : int, default=-1
        Threads for the backend (-1: all cores).
    random_state : int, optional
        Seed for randomised backends.
    metric_kwds : dict, optional
        The metric's parameters (``{"p": 3}`` for minkowski).
    device : {"cpu", "cuda"}, default="cpu"
        ``"cuda"`` with ``method="auto"``: the kNN graph of the indexed points is computed on
        the GPU where :func:`unimap.neighbors.brute_force_cuda.usable` says it serves (``method_ =
        "cuda"``); queries for new points still run on the CPU, with the backend ``"auto"`` would
        pick, built on the first query.
    """

    def __init__(self, metric: str = "euclidean", method: str = "auto", n_jobs: int = -1,
                 random_state: int | None = None, device: str = "cpu",
                 metric_kwds: dict | None = None) -> None:
        self.metric = canonical_metric(metric)
        if callable(self.metric):  # compiled once: each call would compile its own kernel
            self.metric = compiled_metric(self.metric)
        self.metric_kwds = check_metric_kwds(self.metric, metric_kwds)
        self.method = method
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.device = device

    # -- building ---------------------------------------------------------------------------
    def build(self, X: Any) -> NeighborIndex:
        """Index the rows of ``X`` (dense array, or a square matrix when precomputed)."""
        if not callable(self.metric):
            check_choice(self.metric, "metric", METRICS)
        check_choice(self.method, "method", METHODS)
        check_choice(self.device, "device", ("cpu", "cuda"))
        self.n_threads_ = resolve_n_jobs(self.n_jobs)
        self.n_samples_ = X.shape[0]
        if self.metric == "precomputed":
            if X.ndim != 2 or X.shape[0] != X.shape[1]:
                raise ValueError(
                    f"metric='precomputed' needs a square distance matrix, got shape {X.shape}"
                )
            self.method_ = "exact"
            if sp.issparse(X):  # stored distances only; never densified
                self._data = sp.csr_matrix(X, dtype=np.float32)
            else:
                self._data = np.ascontiguousarray(X, dtype=np.float32)
            if ((self._data.data if sp.issparse(X) else self._data) < 0).any():
                raise ValueError("metric='precomputed' distances must be non-negative")
            return self
        check_metric_data(self.metric, X.shape[1])
        if self.serves_on_gpu(X.shape[0], 1) and not sp.issparse(X):
            self.method_, self._data, self._cpu = "cuda", _prepare(X, self.metric), None
            return self
        search = sparse_search(X, self.metric, self.method) if sp.issparse(X) else None
        if search == "nndescent":
            self.method_, self._data, self._nnd = "nndescent", None, None
            self._nnd_data = canonical_csr(X)
            return self
        if search == "exact":
            self.method_, self._data = "exact", prepare_sparse(canonical_csr(X), self.metric)
            return self
        self.method_ = self._choose_method(X)
        if sp.issparse(X):
            X = X.toarray()
        self._data = _prepare(X, self.metric)
        if self.method_ == "hnsw":
            self._hnsw = hnsw_index(self._data, self.n_threads_)
        elif self.method_ == "nndescent":
            self._nnd_data = np.ascontiguousarray(X, dtype=np.float32)
            self._nnd = None
        return self

    def serves_on_gpu(self, n: int, n_neighbors: int) -> bool:
        """Whether the kNN graph of ``n`` dense points runs on the GPU (see ``device``)."""
        if self.device != "cuda" or self.method != "auto":
            return False
        from unimap.neighbors.brute_force_cuda import (
            usable,  # imports numba.cuda: only for device="cuda"
        )

        return usable(n, n_neighbors, self.metric)

    def _cpu_index(self) -> NeighborIndex:
        """The CPU index that answers queries of a GPU-built one (built on first use)."""
        if self._cpu is None:
            self._cpu = NeighborIndex("euclidean", "auto", self.n_jobs,
                                      self.random_state).build(self._data)
        return self._cpu

    def _choose_method(self, X: Any) -> str:
        n = X.shape[0]
        method = self.planned_method(n)
        if method == "exact" and self.method == "auto" and n > EXACT_MAX_SAMPLES:
            warnings.warn(
                f"exact kNN on {n} points takes O(n^2) time; faiss-cpu (a dependency of "
                "unimap) is not installed here: pip install faiss-cpu",
                stacklevel=3,
            )
        return method

    def planned_method(self, n: int) -> str:
        """The backend :meth:`build` picks for ``n`` points (raises if it is not installed)."""
        if self.metric == "precomputed":
            return "exact"
        has_faiss = importlib.util.find_spec("faiss") is not None
        has_nnd = importlib.util.find_spec("pynndescent") is not None
        if is_general(self.metric):
            return self._planned_general(n, has_nnd)
        if self.method == "hnsw":
            if not has_faiss:
                raise ImportError("method='hnsw' needs faiss, a dependency of unimap that is not "
                                  "installed here: pip install faiss-cpu")
            if self.metric == "manhattan":
                raise ValueError("method='hnsw' supports euclidean, cosine and correlation")
            return "hnsw"
        if self.method == "nndescent":
            if not has_nnd:
                raise ImportError(
                    "method='nndescent' needs pynndescent: pip install 'unimap[nndescent]'"
                )
            return "nndescent"
        if self.method == "exact" or n <= EXACT_MAX_SAMPLES:
            return "exact"
        if self.metric != "manhattan" and has_faiss:
            return "hnsw"
        if has_nnd:
            return "nndescent"
        return "exact"

    def _planned_general(self, n: int, has_nnd: bool) -> str:
        """The backend of a general metric: exact up to ``GENERAL_EXACT_MAX_SAMPLES``
        points (or when asked), pynndescent beyond."""
        if self.method == "hnsw":
            raise ValueError(f"method='hnsw' supports euclidean, cosine and correlation, not "
                             f"{metric_name(self.metric)!r}")
        if self.method == "exact" or (self.method == "auto" and n <= GENERAL_EXACT_MAX_SAMPLES):
            return "exact"
        if not has_nnd:
            raise ImportError(
                f"metric={metric_name(self.metric)!r} on more than "
                f"{GENERAL_EXACT_MAX_SAMPLES} points needs pynndescent: pip install "
                "'unimap[nndescent]' (or knn_method='exact', O(n^2) time)")
        return "nndescent"

    # -- queries -----------------------------------------------------------------------------
    def knn_graph(self, n_neighbors: int) -> KNNGraph:
        """The kNN graph of the indexed points, the point itself in column 0."""
        n = self.n_samples_
        k = check_int(n_neighbors, "n_neighbors", 1, n)
        if self.metric == "precomputed":
            idx, dist = self._precomputed_rows(self._data, k, exclude_self=True)
        elif self.method_ == "exact" and sp.issparse(self._data):
            with numba_threads(self.n_threads_):
                idx, dist = sparse_exact_query(self._data, self._data, k - 1, 0)
        elif self.method_ == "exact":
            with numba_threads(self.n_threads_):
                idx, dist = exact_query(self._data, self._data, k - 1, self.metric, 0,
                                        self.metric_kwds)
        elif self.method_ == "hnsw":
            idx, dist = self._hnsw.search(self._data, k)
        elif self.method_ == "cuda":
            from unimap.neighbors.brute_force_cuda import MAX_CANDIDATES, knn_graph_cuda

            if k > MAX_CANDIDATES:
                graph = self._cpu_index().knn_graph(k)
                return KNNGraph(graph.indices, _finish_distances(graph.distances, self.metric),
                                self.metric, graph.method)
            idx, dist = knn_graph_cuda(self._data, k)
        else:
            idx, dist = self._nndescent_graph(k)
        # pynndescent's distances are the metric's own; the other backends' are euclidean
        # distances between prepared rows
        if self.metric != "precomputed" and self.method_ != "nndescent":
            dist = _finish_distances(dist, self.metric)
        if self.method_ == "exact":
            idx, dist = _pad_self(idx, dist)
        else:
            with numba_threads(self.n_threads_):
                idx, dist = _with_self_first(idx, dist, k)
        return KNNGraph(idx.astype(np.int32, copy=False), dist.astype(np.float32, copy=False),
                        self.metric, self.method_)

    def query(self, Y: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """k nearest indexed points of each row of ``Y`` (new points; no self to skip).

        For ``metric="precomputed"``, ``Y`` is an ``(m, n_train)`` distance matrix (the index
        then needs no data of its own, only ``n_samples_``).
        """
        k = min(n_neighbors, self.n_samples_)
        if self.metric == "precomputed":
            if Y.shape[1] != self.n_samples_:
                raise ValueError(
                    f"precomputed distances to the training points need {self.n_samples_} "
                    f"columns, got {Y.shape[1]}"
                )
            idx, dist = self._precomputed_rows(Y, k, exclude_self=False)
            return idx.astype(np.int32), dist
        if self.is_sparse:  # sparse training rows take sparse queries
            return self._sparse_query(canonical_csr(sp.csr_matrix(Y)), k)
        if sp.issparse(Y):  # the index holds dense rows (build densifies too)
            from unimap.runtime.validation import MAX_DENSE_BYTES

            if Y.shape[0] * Y.shape[1] * 4 > MAX_DENSE_BYTES:
                raise ValueError(f"sparse X of shape {Y.shape} is too large to densify for the "
                                 "query of dense training rows: pass it in batches")
            Y = Y.toarray()
        Yp = _prepare(Y, self.metric)
        if self.method_ == "cuda":  # new points: on the CPU, by the euclidean index
            idx, dist = self._cpu_index().query(Yp, k)
            return idx, _finish_distances(dist, self.metric)
        if self.method_ == "hnsw":
            idx, dist = self._hnsw.search(Yp, k)
        elif self.method_ == "nndescent":
            self._ensure_nndescent(k)
            idx, dist = self._nnd.query(np.ascontiguousarray(Y, dtype=np.float32), k=k)
            return idx.astype(np.int32), dist.astype(np.float32)
        else:
            with numba_threads(self.n_threads_):
                idx, dist = exact_query(self._data, Yp, k, self.metric, None,
                                        self.metric_kwds)
        return idx.astype(np.int32), _finish_distances(dist, self.metric)

    @staticmethod
    def _precomputed_rows(D: Any, k: int, exclude_self: bool):
        if sp.issparse(D):
            from unimap.neighbors.sparse_distances import sparse_rows

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

    def _sparse_query(self, Y: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
        """New sparse rows' neighbours: exact (sparse products) where the exact search serves
        the metric and the training rows number at most ``SPARSE_EXACT_QUERY_MAX_SAMPLES``,
        also when pynndescent built the graph; else pynndescent's query."""
        if self.method_ == "nndescent" and not exact_queries(self.metric, self.n_samples_):
            self._ensure_nndescent(k)
            idx, dist = self._nnd.query(Y, k=k)
            return idx.astype(np.int32), dist.astype(np.float32)
        with numba_threads(self.n_threads_):
            idx, dist = sparse_exact_query(self.training_rows(), prepare_sparse(Y, self.metric),
                                           k, None)
        return idx.astype(np.int32), _finish_distances(dist, self.metric)

    @property
    def is_sparse(self) -> bool:
        """Whether the index holds the sparse rows themselves (see module docstring)."""
        return self._sparse_nndescent or sp.issparse(getattr(self, "_data", None))

    @property
    def _sparse_nndescent(self) -> bool:
        """Whether pynndescent indexes sparse rows (kept as given in ``_nnd_data``)."""
        return sp.issparse(getattr(self, "_nnd_data", None))

    def indexed_rows(self) -> Any:
        """Rows a fit on the same metric gives this index again: :meth:`training_rows`, or
        pynndescent's sparse rows as given (centring them for correlation would densify
        them)."""
        return self._nnd_data if self._sparse_nndescent else self.training_rows()

    def training_rows(self) -> Any:
        """The indexed rows as the metric sees them: the data for euclidean and manhattan,
        rows of unit norm for cosine (centred first for correlation). A sparse index gives
        sparse rows (refused for correlation, whose centred rows are dense)."""
        if self.metric == "precomputed":
            raise ValueError("a precomputed index holds distances, not data rows")
        if self._sparse_nndescent:
            return prepare_sparse(self._nnd_data, self.metric)
        if self.method_ == "nndescent":
            return _prepare(self._nnd_data, self.metric)
        return self._data

    def _ensure_nndescent(self, k: int) -> None:
        if self._nnd is None:
            import numba
            from pynndescent import NNDescent

            # pynndescent takes seeds below 2**32 only; unimap's streams are 63-bit.
            seed = None if self.random_state is None else int(self.random_state) % 2**32
            # It sets numba's thread count to n_jobs, which numba refuses above the threads
            # it started with (NUMBA_NUM_THREADS, or a CPU affinity below os.cpu_count()).
            n_jobs = max(1, min(self.n_threads_, numba.config.NUMBA_NUM_THREADS))
            self._nnd = NNDescent(
                self._nnd_data, n_neighbors=max(k, 15), metric=self.metric,
                metric_kwds=self.metric_kwds or None, random_state=seed, n_jobs=n_jobs,
            )

    def _nndescent_graph(self, k: int):
        self._ensure_nndescent(k)
        idx, dist = self._nnd.neighbor_graph
        return idx[:, :k], dist[:, :k]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_nnd", None)  # rebuilt on demand
        return state

    def __setstate__(self, state: dict) -> None:
        if "_nnd_data" in state:
            state["_nnd"] = None
        state.setdefault("metric_kwds", {})  # pickled before metrics took parameters
        if "n_samples_" not in state and "_data" in state:  # pickled before n_samples_
            state["n_samples_"] = state["_data"].shape[0]
        self.__dict__.update(state)


def _pad_self(idx: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prepend each point itself at distance 0 to rows computed without it."""
    n = idx.shape[0]
    out_idx = np.concatenate([np.arange(n, dtype=idx.dtype)[:, None], idx], axis=1)
    out_dist = np.concatenate([np.zeros((n, 1), dtype=np.float32), dist], axis=1)
    return out_idx, out_dist


def hnsw_index(data: np.ndarray, n_threads: int, pca: Any = "fit",
               centroids: np.ndarray | None = None) -> Any:
    """The HNSW index of ``data``: one :class:`_HNSWIndex`, or from ``SHARDED_MIN_ROWS``
    points on the :class:`unimap.neighbors.sharded.ShardedHNSWIndex` of its k-means cells.

    Only data of at most ``HNSW_PCA_DIM`` columns are sharded: each cell keeps a copy of its
    rows for the exact re-ranking, which for narrow data costs no more than the projection one
    index keeps, but for wide data copies them all and multiplies the fit's peak memory
    (measured: benchmarks/results/scale_gdr.md)."""
    wide = data.shape[1] > HNSW_PCA_DIM
    if centroids is not None or (data.shape[0] >= _sharded_knn.SHARDED_MIN_ROWS and not wide):
        return _sharded_knn.ShardedHNSWIndex(data, n_threads, pca, centroids)
    return _HNSWIndex(data, n_threads, pca)


def nearest_neighbors(
    X: Any,
    n_neighbors: int = 15,
    metric: str = "euclidean",
    method: str = "auto",
    n_jobs: int = -1,
    random_state: int | None = None,
) -> tuple[KNNGraph, NeighborIndex]:
    """Build the kNN graph of ``X`` and the index that can query new points.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), or (n_samples, n_samples) if precomputed
    n_neighbors : int, default=15
        Neighbours per point, the point itself included.
    metric, method, n_jobs, random_state
        See :class:`NeighborIndex`.

    Returns
    -------
    graph : KNNGraph
        ``indices``/``distances`` of shape (n_samples, n_neighbors).
    index : NeighborIndex
    """
    index = NeighborIndex(metric, method, n_jobs, random_state).build(X)
    return index.knn_graph(n_neighbors), index


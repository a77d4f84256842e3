"""The k-nearest-neighbour graph: exact and approximate backends behind one interface,
:class:`NeighborIndex` (each backend a class of :mod:`unimap.neighbors.backend`'s interface).

Convention: a kNN graph of ``n`` points with ``k`` neighbours is a pair of ``(n, k)`` arrays
``indices`` (int32) and ``distances`` (float32), rows sorted by distance, and, for the graph of
the training points, column 0 is the point itself at distance 0 (as in umap-learn, so
``n_neighbors=15`` means the point and its 14 nearest others).

Metrics: ``euclidean``, ``cosine``, ``correlation`` (reduced to euclidean on normalised rows,
so every backend serves them), ``manhattan`` (exact backend, or pynndescent when installed),
the general metrics of :mod:`unimap.neighbors.metrics` (exact up to 4,096 points, pynndescent
beyond), and ``precomputed`` (a square distance matrix, :mod:`unimap.neighbors.precomputed`).

Backends (``method``):

- ``"exact"``: chunked BLAS distances and a parallel row-wise top-k; ground truth, and the
  fastest choice for small data (:class:`unimap.neighbors.exact.ExactBackend`).
- ``"hnsw"``: faiss HNSW graphs (faiss-cpu is a core dependency) of two halves of the data,
  built side by side on a 50-dimensional PCA projection; 2 x 30 candidates re-ranked by exact
  full-space distances, and each pair found by one point's search offered to the other
  point's list; the default for large data, chosen by measurement (measured:
  benchmarks/results/knn_default_candidates.md and architecture_notes.md). From
  ``unimap.neighbors.sharded.SHARDED_MIN_ROWS`` (500,000) points of at most 50 columns on (see
  :func:`unimap.neighbors.hnsw_backend.hnsw_index`), one such index per k-means
  cell of ~25,000 points, a point searched at home and in the one other cell that can hold
  a nearer point (:class:`unimap.neighbors.sharded.ShardedHNSWIndex`): its cost per point no
  longer grows with n.
- ``"nndescent"``: pynndescent (``pip install unimap[nndescent]``), for other metrics and
  sparse data (:mod:`unimap.neighbors.nndescent`).
- ``"cuda"`` (built with ``device="cuda"``): the GPU's brute force
  (:class:`CudaBruteForceBackend`).
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

import copy
import importlib.util
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.neighbors.backend import Backend
from unimap.neighbors.exact import ExactBackend
from unimap.neighbors.geometry import finish_distances, pad_self, prepare_rows, with_self_first
from unimap.neighbors.hnsw_backend import HNSWBackend
from unimap.neighbors.metrics import (
    GENERAL_EXACT_MAX_SAMPLES,
    GENERAL_METRICS,
    METRIC_ALIASES,
    NATIVE_METRICS,
    canonical_metric,
    check_metric_data,
    check_metric_kwds,
    check_user_distances,
    compiled_metric,
    distance_only,
    is_general,
    metric_name,
    pairwise_bytes,
    probe_user_metric,
    user_metric_failure,
)
from unimap.neighbors.nndescent import NNDescentBackend, SparseNNDescentBackend
from unimap.neighbors.precomputed import PrecomputedBackend
from unimap.neighbors.sparse_rows import (
    SparseExactBackend,
    canonical_csr,
    prepare_sparse,
    sparse_search,
)
from unimap.runtime.threads import numba_threads, resolve_n_jobs
from unimap.runtime.user_warnings import warn_user
from unimap.runtime.validation import check_choice, check_int

__all__ = ["KNNGraph", "NeighborIndex", "CudaBruteForceBackend", "nearest_neighbors", "METRICS",
           "NATIVE_OR_PRECOMPUTED", "EXACT_MAX_SAMPLES", "INDEX_METHODS", "backend_class",
           "memory_bytes", "prepare_rows"]

METRICS = (*NATIVE_METRICS, *GENERAL_METRICS, *METRIC_ALIASES, "precomputed")
# the metrics of the evaluation functions (unimap.metrics) and the dask kNN: the native ones
NATIVE_OR_PRECOMPUTED = (*NATIVE_METRICS, "precomputed")
METHODS = ("auto", "exact", "hnsw", "nndescent")
EXACT_MAX_SAMPLES = 20_000
# the backends of the methods a fit plans (NeighborIndex.planned_method)
BACKENDS: dict[str, type[Backend]] = {
    "exact": ExactBackend, "hnsw": HNSWBackend, "nndescent": NNDescentBackend}
INDEX_METHODS = ("exact", "hnsw", "nndescent", "cuda")
"""The values of a built index's ``method_``."""


@dataclass
class KNNGraph:
    """k nearest neighbours of every point, sorted by distance (see module docstring)."""

    indices: np.ndarray
    distances: np.ndarray
    metric: str
    method: str


class NeighborIndex:
    """A kNN index over training data that also answers queries for new points.

    It picks one backend (:mod:`unimap.neighbors.backend`) when built and delegates the
    searches to it, applying what every backend shares: the metric's geometry
    (:mod:`unimap.neighbors.geometry`), each point itself in column 0, the conversion of
    queries, the output dtypes. Unbuilt, it answers the questions a fit plans with
    (:meth:`planned_method`, :meth:`serves_on_gpu`).

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

    Attributes
    ----------
    backend_ : unimap.neighbors.backend.Backend
        The backend it built (``method_`` is its name).
    n_samples_ : int
        The number of indexed points.
    """

    has_training_data = True  # the rows transform, update and inverse_transform read

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
        if callable(self.metric):  # umap-learn's (distance, gradient) metrics: the distance
            self.metric = distance_only(self.metric, X, self.metric_kwds)
        backend = self._new_backend(self._backend_class(X))
        if callable(self.metric) and backend.own_metric:  # pynndescent runs it unchecked
            probe_user_metric(self.metric, X, self.metric_kwds)
        self.backend_ = backend.build(self._indexed(X, backend))
        return self

    @property
    def method_(self) -> str:
        """The backend built: ``"exact"``, ``"hnsw"``, ``"nndescent"`` or ``"cuda"``."""
        return self.backend_.name

    def _backend_class(self, X: Any) -> type[Backend]:
        """The backend that indexes ``X`` (warns where exact search will take long)."""
        if self.metric == "precomputed":
            return PrecomputedBackend
        check_metric_data(self.metric, X.shape[1])
        if self.serves_on_gpu(X.shape[0], 1) and not sp.issparse(X):
            return CudaBruteForceBackend
        search = sparse_search(X, self.metric, self.method) if sp.issparse(X) else None
        if search is not None:
            return SparseNNDescentBackend if search == "nndescent" else SparseExactBackend
        n = X.shape[0]
        method = self.planned_method(n)
        if method == "exact" and self.method == "auto" and n > EXACT_MAX_SAMPLES:
            warn_user(
                f"exact kNN on {n} points takes O(n^2) time; faiss-cpu (a dependency of "
                "unimap) is not installed here: pip install faiss-cpu")
        return BACKENDS[method]

    def _new_backend(self, cls: type[Backend]) -> Backend:
        return cls(self.metric, self.n_threads_, self.metric_kwds, self.random_state,
                   self.n_jobs)

    def _indexed(self, X: Any, backend: Backend) -> Any:
        """``X`` as ``backend`` indexes it: sparse or dense, prepared for the metric unless
        it searches in the metric's own distances."""
        if self.metric == "precomputed":
            return X
        if backend.sparse:
            X = canonical_csr(X)
            return X if backend.own_metric else prepare_sparse(X, self.metric)
        if sp.issparse(X):
            X = X.toarray()
        return X if backend.own_metric else prepare_rows(X, self.metric)

    def serves_on_gpu(self, n: int, n_neighbors: int, device: str | None = None) -> bool:
        """Whether the kNN graph of ``n`` dense points runs on the GPU where the index runs
        on ``device`` (default: its ``device``)."""
        if (self.device if device is None else device) != "cuda" or self.method != "auto":
            return False
        return CudaBruteForceBackend.usable(n, n_neighbors, self.metric)

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
        k = check_int(n_neighbors, "n_neighbors", 1, self.n_samples_)
        backend = self.backend_
        stand_in = backend.delegate(k)
        if stand_in is not None:  # its graph is in the euclidean geometry of prepared rows
            graph = stand_in.knn_graph(k)
            return KNNGraph(graph.indices, finish_distances(graph.distances, self.metric),
                            self.metric, graph.method)
        with self._user_metric_errors():
            idx, dist = backend.knn_graph(k)
        if callable(self.metric):
            check_user_distances(self.metric, dist, idx)
        if not backend.own_metric:
            dist = finish_distances(dist, self.metric)
        if backend.self_in_rows:
            with numba_threads(self.n_threads_):
                idx, dist = with_self_first(idx, dist, k)
        else:
            idx, dist = pad_self(idx, dist)
        return KNNGraph(idx.astype(np.int32, copy=False), dist.astype(np.float32, copy=False),
                        self.metric, self.method_)

    def query(self, Y: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """k nearest indexed points of each row of ``Y`` (new points; no self to skip).

        For ``metric="precomputed"``, ``Y`` is an ``(m, n_train)`` distance matrix (the index
        then needs no data of its own, only ``n_samples_``).
        """
        k = min(n_neighbors, self.n_samples_)
        backend = self.backend_
        if self.metric == "precomputed":
            if Y.shape[1] != self.n_samples_:
                raise ValueError(
                    f"precomputed distances to the training points need {self.n_samples_} "
                    f"columns, got {Y.shape[1]}"
                )
            idx, dist = backend.query(Y, k)
            return idx.astype(np.int32), dist
        if backend.sparse:  # sparse training rows take sparse queries
            Y = canonical_csr(sp.csr_matrix(Y))
        elif sp.issparse(Y):  # the index holds dense rows (build densifies too)
            from unimap.runtime.validation import MAX_DENSE_BYTES

            if Y.shape[0] * Y.shape[1] * 4 > MAX_DENSE_BYTES:
                raise ValueError(f"sparse X of shape {Y.shape} is too large to densify for the "
                                 "query of dense training rows: pass it in batches")
            Y = Y.toarray()
        if backend.own_metric:
            with self._user_metric_errors():
                idx, dist = backend.query(Y, k)
            if callable(self.metric):
                check_user_distances(self.metric, dist, idx)
            return idx.astype(np.int32), dist.astype(np.float32)
        rows = prepare_sparse(Y, self.metric) if backend.sparse else prepare_rows(Y, self.metric)
        idx, dist = backend.query(rows, k)
        return idx.astype(np.int32), finish_distances(dist, self.metric)

    @contextmanager
    def _user_metric_errors(self):
        """A user-defined metric's failures in a backend's search as the exact search
        reports them (:mod:`unimap.neighbors.metrics`): its exception named instead of numba's
        ``SystemError``, its negative or non-finite distances refused."""
        if not callable(self.metric):
            yield
            return
        try:
            yield
        except SystemError as exc:
            raise user_metric_failure(self.metric, exc) from exc.__cause__

    @property
    def is_sparse(self) -> bool:
        """Whether the index holds the sparse rows themselves (see module docstring)."""
        backend = self.__dict__.get("backend_")
        return backend is not None and backend.sparse

    def indexed_rows(self) -> Any:
        """Rows a fit on the same metric gives this index again: :meth:`training_rows`, or
        pynndescent's sparse rows as given (centring them for correlation would densify
        them)."""
        return self.backend_.indexed_rows()

    def training_rows(self) -> Any:
        """The indexed rows as the metric sees them: the data for euclidean and manhattan,
        rows of unit norm for cosine (centred first for correlation). A sparse index gives
        sparse rows (refused for correlation, whose centred rows are dense)."""
        return self.backend_.training_rows()

    def with_threads(self, n_threads: int) -> NeighborIndex:
        """A shallow copy (the indexed arrays shared) searching on ``n_threads`` threads:
        the results do not depend on them."""
        index = copy.copy(self)
        index.n_threads_ = n_threads
        index.backend_ = self.backend_.with_threads(n_threads)
        return index

    # -- model files (unimap.io.model_state) and pickles -------------------------------------
    def export(self, info: dict, encode: Callable[[Any, str], Any]) -> None:
        """Write the backend's state (its rows, and what else rebuilds it) into a model
        file's index ``info`` (see :meth:`unimap.neighbors.backend.Backend.export`)."""
        self.backend_.export(info, encode)

    def restore(self, method_: str, n_samples: int, rows: Any, info: dict,
                decode: Callable[[Any, str], Any]) -> NeighborIndex:
        """This index as a model file described it: the backend ``method_`` over ``n_samples``
        checked ``rows`` (None for precomputed distances), on this machine's cores (the
        results do not depend on them). Returns ``self``."""
        self.n_threads_ = resolve_n_jobs(self.n_jobs)
        self.n_samples_ = n_samples
        backend = self._new_backend(backend_class(method_, self.metric, sp.issparse(rows)))
        self.backend_ = backend.restore(rows, info, decode)
        return self

    def __setstate__(self, state: dict) -> None:
        state.setdefault("metric_kwds", {})  # pickled before metrics took parameters
        if "backend_" not in state and "method_" in state:  # pickled before the backends
            state = _with_backend(state)
        self.__dict__.update(state)


class CudaBruteForceBackend(Backend):
    """The ``"cuda"`` backend: prepared dense rows (euclidean geometry) whose kNN graph the
    GPU computes by brute force (:mod:`unimap.neighbors.brute_force_cuda`, imported only when
    it runs, so an index built on a GPU loads and answers queries anywhere), where its
    ``usable`` says it serves. New points, and graphs of more columns than the kernel keeps,
    go to the CPU :class:`NeighborIndex` that ``"auto"`` picks for the rows (here, beside the
    index it is one of), built on first use."""

    name = "cuda"
    on_gpu = True

    @staticmethod
    def usable(n: int, k: int, metric: Any) -> bool:
        """Whether the GPU computes the graph of ``n`` points with ``k`` columns."""
        from unimap.neighbors.brute_force_cuda import (
            usable,  # imports numba.cuda: only for device="cuda"
        )

        return usable(n, k, metric)

    def build(self, rows: np.ndarray) -> CudaBruteForceBackend:
        self.rows, self.cpu = rows, None
        return self

    def knn_graph(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        from unimap.neighbors.brute_force_cuda import knn_graph_cuda

        return knn_graph_cuda(self.rows, k)

    def delegate(self, k: int) -> NeighborIndex | None:
        from unimap.neighbors.brute_force_cuda import MAX_CANDIDATES

        return self.cpu_index() if k > MAX_CANDIDATES else None

    def query(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.cpu_index().query(rows, k)

    def cpu_index(self) -> NeighborIndex:
        """The CPU index (euclidean on the prepared rows) that answers this one's queries."""
        if self.cpu is None:
            self.cpu = NeighborIndex("euclidean", "auto", self.n_jobs,
                                     self.random_state).build(self.rows)
        return self.cpu


def backend_class(method_: str, metric: Any, sparse: bool) -> type[Backend]:
    """The backend of a built index's ``method_`` (a model file's, or an old pickle's) over
    sparse or dense rows."""
    if metric == "precomputed":
        return PrecomputedBackend
    if method_ == "exact":
        return SparseExactBackend if sparse else ExactBackend
    if method_ == "nndescent":
        return SparseNNDescentBackend if sparse else NNDescentBackend
    return HNSWBackend if method_ == "hnsw" else CudaBruteForceBackend


def _with_backend(state: dict) -> dict:
    """The state of an index pickled before the backends (``method_``, ``_data``, ``_hnsw``,
    ``_nnd_data``, ``_cpu``), in today's layout."""
    state = dict(state)
    method, data = state.pop("method_"), state.pop("_data", None)
    nnd_rows, hnsw, cpu = (state.pop(name, None) for name in ("_nnd_data", "_hnsw", "_cpu"))
    state.pop("_nnd", None)
    if "n_samples_" not in state and data is not None:  # pickled before n_samples_
        state["n_samples_"] = data.shape[0]
    rows = nnd_rows if method == "nndescent" else data
    metric = state["metric"]
    backend = backend_class(method, metric, sp.issparse(rows))(
        metric, state.get("n_threads_", 1), state["metric_kwds"], state.get("random_state"),
        state.get("n_jobs", -1))
    backend.rows = rows
    if method == "nndescent":
        backend.nnd = None
    elif method == "hnsw":
        backend.index = hnsw
    elif method == "cuda":
        backend.cpu = cpu
    state["backend_"] = backend
    return state


def memory_bytes(method: str, n: int, d: int, k: int, metric: str) -> tuple[int, int]:
    """(peak while the kNN graph is built, kept afterwards) for the backend of ``method``
    (:meth:`NeighborIndex.planned_method`) on n points of d features and k columns (the point
    itself included): the backend's own arrays (``memory_bytes`` of each) and the rows
    prepared for cosine and correlation."""
    if metric == "precomputed":
        return PrecomputedBackend.memory_bytes(n, d, k)
    prepared = n * d * 4 if metric in ("cosine", "correlation") else 0  # normalised rows
    peak, kept = BACKENDS[method].memory_bytes(n, d, k)
    if method == "exact" and is_general(metric):  # SciPy's float64 copies of row blocks
        peak += pairwise_bytes(n, d)
    return prepared + peak, prepared + kept


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

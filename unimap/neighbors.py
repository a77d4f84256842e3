"""The k-nearest-neighbour graph: exact and approximate backends behind one interface.

Convention: a kNN graph of ``n`` points with ``k`` neighbours is a pair of ``(n, k)`` arrays
``indices`` (int32) and ``distances`` (float32), rows sorted by distance, and, for the graph of
the training points, column 0 is the point itself at distance 0 (as in umap-learn, so
``n_neighbors=15`` means the point and its 14 nearest others).

Metrics: ``euclidean``, ``cosine``, ``correlation`` (reduced to euclidean on normalised rows,
so every backend serves them), ``manhattan`` (exact backend, or pynndescent when installed),
and ``precomputed`` (a square distance matrix).

Backends (``method``):

- ``"exact"``: chunked BLAS distances and a parallel row-wise top-k; ground truth, and the
  fastest choice for small data.
- ``"hnsw"``: faiss HNSW graphs (faiss-cpu is a core dependency) of two halves of the data,
  built side by side on a 50-dimensional PCA projection; 2 x 30 candidates re-ranked by exact
  full-space distances, and each pair found by one point's search offered to the other
  point's list: recall@15 ≈ 0.99 on MNIST-70k in ~2 s on 2 cores; the default for large
  data, chosen by measurement (``benchmarks/knn_candidates.py``). From
  ``unimap._sharded_knn.SHARDED_MIN_ROWS`` (500,000) points on, one such index per k-means
  cell of ~25,000 points, a point searched at home and in the one other cell that can hold
  a nearer point (:class:`unimap._sharded_knn.ShardedHNSWIndex`): its cost per point no
  longer grows with n.
- ``"nndescent"``: pynndescent (``pip install unimap[nndescent]``), for other metrics and
  sparse data.
- ``"auto"``: exact below ``EXACT_MAX_SAMPLES`` points, else hnsw if faiss is importable,
  else nndescent if installed, else exact (with a warning about the time it takes).
"""

from __future__ import annotations

import importlib.util
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from unimap._threads import numba_threads, pinned_pool, resolve_n_jobs, spread_threads
from unimap._validation import check_choice, check_int
from unimap.ordering import morton_order

__all__ = ["KNNGraph", "NeighborIndex", "nearest_neighbors", "METRICS", "EXACT_MAX_SAMPLES"]

METRICS = ("euclidean", "cosine", "correlation", "manhattan", "precomputed")
METHODS = ("auto", "exact", "hnsw", "nndescent")
EXACT_MAX_SAMPLES = 20_000
_CHUNK_BYTES = 1 << 27  # 128 MiB of float32 distances per query block


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


def _exact_query(data: np.ndarray, queries: np.ndarray, k: int, metric: str,
                 self_offset: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest rows of ``data`` for each query, by blocks of queries.

    ``self_offset`` is the row of ``data`` that query 0 is (when querying the data against
    itself), so that the point itself is excluded; None for new points.
    """
    from unimap._kernels.topk import manhattan_block, rows_k_smallest

    n, m = data.shape[0], queries.shape[0]
    k_eff = min(k, n - (self_offset is not None))
    idx = np.empty((m, k_eff), dtype=np.int64)
    dist = np.empty((m, k_eff), dtype=np.float32)
    if k_eff == 0:
        return idx, dist
    block = max(1, min(m, _CHUNK_BYTES // (4 * n)))
    sq_norms = np.einsum("ij,ij->i", data, data) if metric != "manhattan" else None
    for start in range(0, m, block):
        q = queries[start : start + block]
        if metric == "manhattan":
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
    if metric != "manhattan":
        np.maximum(dist, 0.0, out=dist)
        np.sqrt(dist, out=dist)
    return idx, dist


def _with_self_first(idx: np.ndarray, dist: np.ndarray, k: int,
                     self_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Put each point itself (distance 0) in column 0, followed by its nearest others.
    ``self_ids``: each row's own index (default: the row number)."""
    n = idx.shape[0]
    if self_ids is None:
        self_ids = np.arange(n)
    out_idx = np.empty((n, k), dtype=np.int32)
    out_dist = np.zeros((n, k), dtype=np.float32)
    out_idx[:, 0] = self_ids
    others = idx != self_ids[:, None]
    # Rows hold k-1 "others" after dropping self; when self was missing (exact duplicates
    # tie at distance 0) the backend's k-1 nearest are kept.
    order = np.argsort(~others, axis=1, kind="stable")[:, : k - 1]
    out_idx[:, 1:] = np.take_along_axis(idx, order, axis=1)
    out_dist[:, 1:] = np.take_along_axis(dist, order, axis=1)
    return out_idx, out_dist


class NeighborIndex:
    """A kNN index over training data that also answers queries for new points.

    Parameters
    ----------
    metric : str, default="euclidean"
        One of ``METRICS``.
    method : {"auto", "exact", "hnsw", "nndescent"}, default="auto"
        Backend (see module docstring).
    n_jobs : int, default=-1
        Threads for the backend (-1: all cores).
    random_state : int, optional
        Seed for randomised backends.
    device : {"cpu", "cuda"}, default="cpu"
        ``"cuda"`` with ``method="auto"``: the kNN graph of the indexed points is computed on
        the GPU where :func:`unimap._cuda.knn.usable` says it serves (``method_ = "cuda"``);
        queries for new points still run on the CPU, with the backend ``"auto"`` would pick,
        built on the first query.
    """

    def __init__(self, metric: str = "euclidean", method: str = "auto", n_jobs: int = -1,
                 random_state: int | None = None, device: str = "cpu") -> None:
        self.metric = metric
        self.method = method
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.device = device

    # -- building ---------------------------------------------------------------------------
    def build(self, X: Any) -> NeighborIndex:
        """Index the rows of ``X`` (dense array, or a square matrix when precomputed)."""
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
            if (X < 0).any():
                raise ValueError("metric='precomputed' distances must be non-negative")
            self.method_ = "exact"
            self._data = np.ascontiguousarray(X, dtype=np.float32)
            return self
        if self.serves_on_gpu(X.shape[0], 1) and not sp.issparse(X):
            self.method_, self._data, self._cpu = "cuda", _prepare(X, self.metric), None
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
        from unimap._cuda.knn import usable  # imports numba.cuda: only for device="cuda"

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

    # -- queries -----------------------------------------------------------------------------
    def knn_graph(self, n_neighbors: int) -> KNNGraph:
        """The kNN graph of the indexed points, the point itself in column 0."""
        n = self._data.shape[0]
        k = check_int(n_neighbors, "n_neighbors", 1, n)
        if self.metric == "precomputed":
            idx, dist = self._precomputed_rows(self._data, k, exclude_self=True)
        elif self.method_ == "exact":
            with numba_threads(self.n_threads_):
                idx, dist = _exact_query(self._data, self._data, k - 1, self.metric, 0)
        elif self.method_ == "hnsw":
            idx, dist = self._hnsw.search(self._data, k)
        elif self.method_ == "cuda":
            from unimap._cuda.knn import MAX_CANDIDATES, knn_graph_cuda

            if k > MAX_CANDIDATES:
                graph = self._cpu_index().knn_graph(k)
                return KNNGraph(graph.indices, _finish_distances(graph.distances, self.metric),
                                self.metric, graph.method)
            idx, dist = knn_graph_cuda(self._data, k)
        else:
            idx, dist = self._nndescent_graph(k)
        if self.metric != "precomputed":
            dist = _finish_distances(dist, self.metric)
        if self.method_ == "exact":
            idx, dist = _pad_self(idx, dist)
        else:
            idx, dist = _with_self_first(idx, dist, k)
        return KNNGraph(idx.astype(np.int32), dist.astype(np.float32), self.metric, self.method_)

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
                idx, dist = _exact_query(self._data, Yp, k, self.metric, None)
        return idx.astype(np.int32), _finish_distances(dist, self.metric)

    @staticmethod
    def _precomputed_rows(D: np.ndarray, k: int, exclude_self: bool):
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

    def _ensure_nndescent(self, k: int) -> None:
        if self._nnd is None:
            from pynndescent import NNDescent

            # pynndescent takes seeds below 2**32 only; unimap's streams are 63-bit.
            seed = None if self.random_state is None else int(self.random_state) % 2**32
            self._nnd = NNDescent(
                self._nnd_data, n_neighbors=max(k, 15), metric=self.metric,
                random_state=seed, n_jobs=self.n_threads_,
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
        if "n_samples_" not in state and "_data" in state:  # pickled before n_samples_
            state["n_samples_"] = state["_data"].shape[0]
        self.__dict__.update(state)


def _pad_self(idx: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prepend each point itself at distance 0 to rows computed without it."""
    n = idx.shape[0]
    out_idx = np.concatenate([np.arange(n, dtype=idx.dtype)[:, None], idx], axis=1)
    out_dist = np.concatenate([np.zeros((n, 1), dtype=np.float32), dist], axis=1)
    return out_idx, out_dist


@contextmanager
def _faiss_threads(n_threads: int):
    """Run faiss calls of the current thread on ``n_threads`` OpenMP threads, then restore the
    count (OpenMP keeps it per calling thread)."""
    import faiss

    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n_threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


class _HNSWIndex:
    """faiss HNSW graphs over a PCA reduction of the data, with exact re-ranking in the full
    space.

    High-dimensional HNSW builds are slow (MNIST-70k: 4-7 s for recall 0.96-0.99). Searching
    neighbour candidates in a ``HNSW_PCA_DIM``-dimensional PCA projection, then re-ranking
    them by their exact full-space distances, reaches recall@15 ≈ 0.99 in about half the time
    (``benchmarks/knn_candidates.py``). Low-dimensional data skips the PCA.

    The points are split into interleaved parts (:func:`hnsw_layout`: 2, or 4 from
    ``HNSW_MANY_PARTS_MIN_ROWS`` points on), one HNSW graph each, and a query takes its
    candidates from every part. faiss's threaded insertion orders its locks by
    timing, so a graph built on several threads (and the embedding) could depend on the
    thread count; one graph per part, each built on one thread, is the same for any thread
    count, and the parts are built side by side (MNIST-70k: one graph 1.15 s, two halves
    0.47 s on 2 cores; search + re-rank of 2 x 35 candidates 0.16 s more than of 60 from one
    graph, recall@15 0.9888 against 0.9885; the kNN graph now takes 2 x 30 and the reverse
    pairs, see ``HNSW_SELF_CANDIDATES_PER_PART``).

    ``pca="fit"`` fits the projection; a saved model (:mod:`unimap.persistence`) passes the
    stored one (a :class:`unimap._pca.PCAFit`, or None for data kept unreduced), and the
    graphs built from it are byte for byte those of the fit (insertion on one thread per
    part is deterministic).
    """

    def __init__(self, data: np.ndarray, n_threads: int, pca: Any = "fit",
                 layout: HNSWLayout | None = None) -> None:
        from unimap._pca import project

        self.n_threads = n_threads
        self.data = data
        if isinstance(pca, str):
            pca = fit_candidate_pca(data)
        self.pca = pca
        reduced = data if pca is None else project(data, pca)
        # Points are inserted (and queries run) in Morton order of their first three
        # coordinates, so that consecutive searches walk the same part of the graph and
        # re-rank overlapping candidates while they are in cache: MNIST-70k search 1.7 -> 1.1 s,
        # re-ranking 0.42 -> 0.28 s, recall unchanged. Part p holds Morton positions
        # p, p + n_parts, ...: each part covers the whole space, in Morton order itself.
        self.order = morton_order(reduced)
        self.layout = hnsw_layout(data.shape[0]) if layout is None else layout
        self.n_parts = self.layout.n_parts
        ordered = np.ascontiguousarray(reduced[self.order], dtype=np.float32)
        self._ordered = ordered  # the training points' projection, reused by their own search
        parts = [ordered[p::self.n_parts] for p in range(self.n_parts)]
        # Not pinned: a part is one thread's fixed work, and the thread of a part whose CPU
        # another program holds must be free to move to the CPU the other part leaves.
        with ThreadPoolExecutor(max_workers=max(1, min(n_threads, self.n_parts))) as pool:
            self.indexes = list(pool.map(_build_hnsw, parts))

    def search(self, queries: np.ndarray, k: int,
               per_part: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest indexed points of each query (see the class docstring);
        ``per_part``: candidates from each part, instead of the layout's count."""
        from unimap._kernels.topk import add_reverse_candidates, rerank_candidates

        # The reverse pairs let small k search fewer candidates (2 x 30 instead of 2 x 35 at
        # the same recall). From k > 30 on each part returns k candidates and the pairs only
        # add recall, for time (MNIST-70k, k = 31: recall@30 0.953 -> 0.964, ~0.1 s; k = 91:
        # recall@90 0.974 -> 0.980, 0.26-0.38 s; with fewer candidates, k = 31 from 2 x 28
        # or k = 91 from 2 x 80, the pairs give back the recall of 2 x k but not the time).
        self_join = queries is self.data
        layout = self.__dict__.get("layout") or hnsw_layout(self.data.shape[0])  # the build's
        reverse = self_join and k <= layout.self_candidates
        if self_join:  # the training points keep the build's Morton order (their slots)
            query_order, ordered = self.order, getattr(self, "_ordered", None)
        else:
            query_order, ordered = None, None
        if ordered is None:  # new points, or the training points of an unpickled index
            from unimap._pca import project

            reduced = queries if self.pca is None else project(queries, self.pca)
            if query_order is None:  # a query's result does not depend on the others
                query_order = morton_order(reduced)
            ordered = np.ascontiguousarray(reduced[query_order], dtype=np.float32)
        n_cand = min(layout.candidates_per_part(k, self_join) if per_part is None
                     else max(per_part, k),
                     max(ix.ntotal for ix in self.indexes))
        # faiss writes each part's local ids straight into its slice: local id l of part p is
        # Morton position p + l * n_parts (the re-ranking maps it; -1 is a missing candidate)
        candidates = np.empty((len(self.indexes), ordered.shape[0], n_cand), dtype=np.int64)
        _search_in_chunks(self.indexes, ordered, n_cand, candidates, self.n_threads)
        idx = np.empty((queries.shape[0], k), dtype=np.int64)
        sq_dist = np.empty((queries.shape[0], k), dtype=np.float32)
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        with numba_threads(self.n_threads) as workers, spread_threads():
            if reverse:
                # results by slot (Morton position), where the reverse pairs are local,
                # then by point
                by_slot = np.arange(queries.shape[0])
                slot_idx, slot_dist = np.empty_like(idx), np.empty_like(sq_dist)
                cand_dist = np.empty((queries.shape[0], len(self.indexes) * n_cand),
                                     dtype=np.float32)
                rerank_candidates(self.data, queries, query_order, candidates, self.order, k,
                                  slot_idx, slot_dist, by_slot, cand_dist, workers)
                add_reverse_candidates(candidates, self.order, cand_dist, slot_idx, slot_dist)
                idx[query_order], sq_dist[query_order] = slot_idx, slot_dist
            else:
                rerank_candidates(self.data, queries, query_order, candidates, self.order, k,
                                  idx, sq_dist, query_order, np.empty((0, 0), np.float32),
                                  workers)
        return idx, np.sqrt(np.maximum(sq_dist, 0.0))

    # faiss indexes are not picklable: serialise to bytes.
    def __getstate__(self) -> dict:
        import faiss

        state = self.__dict__.copy()
        state["indexes"] = [faiss.serialize_index(index) for index in self.indexes]
        state.pop("_ordered", None)  # recomputed on demand
        return state

    def __setstate__(self, state: dict) -> None:
        import faiss

        state["indexes"] = [faiss.deserialize_index(index) for index in state["indexes"]]
        self.__dict__.update(state)


def fit_candidate_pca(data: np.ndarray) -> Any:
    """The projection HNSW candidates are searched in: ``HNSW_PCA_DIM`` principal axes of
    data wider than that (a :class:`unimap._pca.PCAFit`), else None (the data as they are).

    The projection only proposes candidates (re-ranked exactly), so its axes can come from a
    strided sample: MNIST-70k, 0.8 s -> 0.2 s at the same recall (20,000 rows), 0.1 s at
    10,000 rows (recall@15 0.9891 -> 0.9887; kNN build 2.12-2.22 -> 1.97 s; GDR()'s 10-NN
    accuracy, mean of seeds 0-3, 0.9683 -> 0.9670: a measured trade, see the issue-4 notes).
    """
    from unimap._pca import fit_pca

    if data.shape[1] <= HNSW_PCA_DIM:
        return None
    step = max(1, data.shape[0] // HNSW_PCA_SAMPLES)
    return fit_pca(np.ascontiguousarray(data[::step]), HNSW_PCA_DIM, solver="covariance")


def hnsw_index(data: np.ndarray, n_threads: int, pca: Any = "fit",
               centroids: np.ndarray | None = None) -> Any:
    """The HNSW index of ``data``: one :class:`_HNSWIndex`, or from ``SHARDED_MIN_ROWS``
    points on the :class:`unimap._sharded_knn.ShardedHNSWIndex` of its k-means cells."""
    from unimap._sharded_knn import SHARDED_MIN_ROWS, ShardedHNSWIndex

    if data.shape[0] >= SHARDED_MIN_ROWS or centroids is not None:
        return ShardedHNSWIndex(data, n_threads, pca, centroids)
    return _HNSWIndex(data, n_threads, pca)


def _search_in_chunks(indexes: list, queries: np.ndarray, n_cand: int, out: np.ndarray,
                      n_threads: int) -> None:
    """``out[p]`` ← the ``n_cand`` candidates of every query in ``indexes[p]``.

    Chunks of ``HNSW_QUERY_CHUNK`` queries are searched on single-threaded faiss calls, taken
    by ``n_threads`` Python threads as each finishes (faiss releases the GIL): a thread that
    another program keeps off its core delays one chunk, not a fixed half of the queries as
    in faiss's own OpenMP loop (MNIST-70k with a CPU-bound program on one of 2 cores: faiss
    search 2.10 s in one call, quiet 1.23 s). A query's candidates do not depend on its
    chunk, so the result is the same for any ``n_threads``.
    """
    for index in indexes:
        index.hnsw.efSearch = n_cand
    n = queries.shape[0]
    tasks = [(p, start) for p in range(len(indexes)) for start in range(0, n, HNSW_QUERY_CHUNK)]

    def search(task):
        p, start = task
        stop = min(n, start + HNSW_QUERY_CHUNK)
        distances = np.empty((stop - start, n_cand), dtype=np.float32)  # not needed: scratch
        with _faiss_threads(1):
            indexes[p].search(queries[start:stop], n_cand, D=distances, I=out[p, start:stop])

    if n_threads <= 1 or len(tasks) == 1:
        for task in tasks:
            search(task)
        return
    with pinned_pool(n_threads) as pool:
        list(pool.map(search, tasks))  # list(): re-raises a worker's exception


def _build_hnsw(points: np.ndarray):
    """One faiss HNSW graph of ``points``, inserted in row order on one thread."""
    import faiss

    index = faiss.IndexHNSWFlat(points.shape[1], HNSW_M)
    index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    with _faiss_threads(1):
        index.add(points)
    return index


# HNSW settings chosen on MNIST-70k (benchmarks/knn_candidates.py).
HNSW_PCA_DIM = 50
HNSW_QUERY_CHUNK = 2048  # queries per single-threaded faiss search call (_search_in_chunks)
HNSW_PCA_SAMPLES = 10_000  # rows the projection is fitted on (at least; strided)
HNSW_PARTS = 2  # fixed: the graphs, hence the neighbours, must not depend on n_jobs
HNSW_CANDIDATES_PER_PART = 35  # new points: 2 x 35, recall@15 0.9887 on MNIST-70k
# The kNN graph of the indexed points also takes each pair found by one point's search into
# the other point's list (add_reverse_candidates): 2 x 30 then reach recall@15 0.9895 on
# MNIST-70k (0.9849 without the reverse pairs, 0.9889 with 2 x 35 before), and the kNN graph
# takes ~0.12 s less (search and re-rank ~0.16 s less, the pairs 0.04 s more).
HNSW_SELF_CANDIDATES_PER_PART = 30
HNSW_M = 16
# From this many points on, 4 parts of 18 candidates each (22 for new points) instead of 2 of
# 30 (35): smaller graphs, built faster, whose errors differ. The 50-D mixture of issue 23 at
# 1M, consecutive fresh processes: kNN graph recall@15 0.759 against 0.736 in the same time
# (kNN 93.8/93.8 s against 96.9/94.2 s); new points 0.680 against 0.624. MNIST-70k (not
# switched: below the threshold results stay those of earlier versions): 0.9918 against
# 0.9906 for the graph, new points 0.9905 against 0.9898.
HNSW_MANY_PARTS = 4
HNSW_MANY_PARTS_MIN_ROWS = 200_000
HNSW_MANY_PARTS_SELF_CANDIDATES = 18
HNSW_MANY_PARTS_CANDIDATES = 22


class HNSWLayout(NamedTuple):
    """How the HNSW index of n points is split and searched."""

    n_parts: int
    self_candidates: int  # per part, for the kNN graph of the indexed points (with reverse pairs)
    new_candidates: int  # per part, for new points

    def candidates_per_part(self, k: int, self_join: bool) -> int:
        """Candidates each part returns for ``k`` neighbours: above the per-part count, k
        from each of 2 parts (k/2 from each of 4), twice the share of the true neighbours a
        part holds."""
        per_part = self.self_candidates if self_join else self.new_candidates
        return max(per_part, -(-2 * k // self.n_parts))


def hnsw_layout(n: int) -> HNSWLayout:
    """The parts and candidates of an index of ``n`` points (fixed by n alone, so the
    neighbours do not depend on the thread count)."""
    if n >= HNSW_MANY_PARTS_MIN_ROWS:
        return HNSWLayout(HNSW_MANY_PARTS, HNSW_MANY_PARTS_SELF_CANDIDATES,
                          HNSW_MANY_PARTS_CANDIDATES)
    return HNSWLayout(min(HNSW_PARTS, n), HNSW_SELF_CANDIDATES_PER_PART,
                      HNSW_CANDIDATES_PER_PART)


# efConstruction 20 instead of 40: build 1.58 -> 1.14 s, recall@15 after re-ranking unchanged
# (0.9885 both; measured with the former single graph and its 60 candidates).
HNSW_EF_CONSTRUCTION = 20


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


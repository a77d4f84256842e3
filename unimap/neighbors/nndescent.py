"""The ``"nndescent"`` backend of :mod:`unimap.neighbors.graph`: pynndescent
(``pip install unimap[nndescent]``), for metrics the other backends do not serve at scale and
for sparse rows (its sparse kernels, :class:`SparseNNDescentBackend`).

pynndescent searches in the metric's own distances on the rows as given; its index is built
on the first search and not pickled or saved (the rows are, and it is rebuilt on demand)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.neighbors.backend import Backend

__all__ = ["NNDescentBackend", "SparseNNDescentBackend"]

NNDESCENT_MIN_NEIGHBORS = 15  # pynndescent's graph has at least this many columns


class NNDescentBackend(Backend):
    """Dense rows (float32, as given) searched by pynndescent."""

    name = "nndescent"
    own_metric = True

    def build(self, rows: Any) -> NNDescentBackend:
        self.rows = np.ascontiguousarray(rows, dtype=np.float32)
        self.nnd = None
        return self

    def knn_graph(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        idx, dist = self._index(k).neighbor_graph
        return idx[:, :k], dist[:, :k]

    def query(self, rows: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self._index(k).query(np.ascontiguousarray(rows, dtype=np.float32), k=k)

    def training_rows(self) -> Any:
        from unimap.neighbors.geometry import prepare_rows

        return prepare_rows(self.rows, self.metric)

    @staticmethod
    def memory_bytes(n: int, d: int, k: int) -> tuple[int, int]:
        """pynndescent's float32 copy, its forest and heaps (~3 arrays of n x k, 8 B)."""
        kept = n * d * 4 + n * k * 8
        return kept + n * k * 24 * 3, kept

    def _index(self, k: int) -> Any:
        """pynndescent's index of the rows, built on the first search (of ``k`` neighbours)."""
        if self.nnd is None:
            import numba
            from pynndescent import NNDescent

            # pynndescent takes seeds below 2**32 only; unimap's streams are 63-bit.
            seed = None if self.random_state is None else int(self.random_state) % 2**32
            # It sets numba's thread count to n_jobs, which numba refuses above the threads
            # it started with (NUMBA_NUM_THREADS, or a CPU affinity below os.cpu_count()).
            n_jobs = max(1, min(self.n_threads, numba.config.NUMBA_NUM_THREADS))
            self.nnd = NNDescent(
                self.rows, n_neighbors=max(k, NNDESCENT_MIN_NEIGHBORS), metric=self.metric,
                metric_kwds=self.metric_kwds or None, random_state=seed, n_jobs=n_jobs,
            )
        return self.nnd

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["nnd"] = None  # rebuilt on demand
        return state


class SparseNNDescentBackend(NNDescentBackend):
    """Sparse rows (canonical float32 CSR, as given) searched by pynndescent's sparse
    kernels; new rows are searched exactly among up to ``SPARSE_EXACT_QUERY_MAX_SAMPLES``
    training rows where the exact search serves the metric
    (:func:`unimap.neighbors.sparse_rows.exact_queries`)."""

    sparse = True

    def build(self, rows: sp.csr_matrix) -> SparseNNDescentBackend:
        self.rows, self.nnd = rows, None
        return self

    def query(self, rows: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
        from unimap.neighbors.geometry import finish_distances
        from unimap.neighbors.sparse_rows import exact_queries, prepare_sparse, sparse_exact_query
        from unimap.runtime.threads import numba_threads

        if not exact_queries(self.metric, self.rows.shape[0]):
            return self._index(k).query(rows, k=k)
        # exactly, in the prepared rows' euclidean geometry
        with numba_threads(self.n_threads):
            idx, dist = sparse_exact_query(self.training_rows(),
                                           prepare_sparse(rows, self.metric), k, None)
        return idx, finish_distances(dist, self.metric)

    def training_rows(self) -> sp.csr_matrix:
        from unimap.neighbors.sparse_rows import prepare_sparse

        return prepare_sparse(self.rows, self.metric)

    def indexed_rows(self) -> sp.csr_matrix:
        """The sparse rows as given (centring them for correlation would densify them)."""
        return self.rows

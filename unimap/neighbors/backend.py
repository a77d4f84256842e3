"""The interface of a kNN backend, the one way of finding neighbours that a
:class:`unimap.neighbors.graph.NeighborIndex` picks for its data and delegates to.

A backend indexes rows and answers the raw rows of two searches: the kNN graph of its own
rows and the neighbours of new rows. What all backends share stays with the index: the
metric's geometry (cosine and correlation searched as euclidean distances between
normalised rows, :mod:`unimap.neighbors.geometry`), each point itself in column 0, the
conversion of queries (sparse or dense) and the output dtypes. The backends:

- :class:`unimap.neighbors.exact.ExactBackend`: chunked BLAS distances and a top-k;
- :class:`unimap.neighbors.sparse_rows.SparseExactBackend`: the same on sparse rows;
- :class:`unimap.neighbors.hnsw_backend.HNSWBackend`: faiss HNSW graphs (or k-means cells of
  them);
- :class:`unimap.neighbors.nndescent.NNDescentBackend` and its sparse rows'
  :class:`unimap.neighbors.nndescent.SparseNNDescentBackend`: pynndescent;
- :class:`unimap.neighbors.graph.CudaBruteForceBackend`: the GPU's brute force;
- :class:`unimap.neighbors.precomputed.PrecomputedBackend`: a square distance matrix.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Backend"]


class Backend:
    """One kNN backend (see the module docstring); subclasses set the class attributes and
    implement :meth:`knn_graph`, :meth:`query` and :meth:`memory_bytes`.

    Parameters
    ----------
    metric : the index's metric (a name, or a compiled user-defined metric).
    n_threads : threads of its searches.
    metric_kwds, random_state, n_jobs : the index's settings, for the backends that use them.
    """

    name = ""
    """The index's ``method_`` while it uses this backend."""
    sparse = False
    """Whether it indexes sparse rows (and takes sparse queries)."""
    own_metric = False
    """Whether it takes the rows as given and answers the metric's own distances; otherwise
    it takes prepared rows (:func:`unimap.neighbors.geometry.prepare_rows`) and answers
    euclidean distances between them, which the index converts."""
    self_in_rows = True
    """Whether the rows of its graph hold each point itself (anywhere among its k); otherwise
    they hold the k - 1 others, and the index prepends the point."""
    on_gpu = False
    """Whether it computes the kNN graph on the GPU."""

    def __init__(self, metric: Any, n_threads: int, metric_kwds: dict | None = None,
                 random_state: int | None = None, n_jobs: int = -1) -> None:
        self.metric = metric
        self.n_threads = n_threads
        self.metric_kwds = metric_kwds
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.rows: Any = None

    def build(self, rows: Any) -> Backend:
        """Index ``rows`` (prepared unless :attr:`own_metric`); returns ``self``."""
        self.rows = rows
        return self

    def knn_graph(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, distances)`` of the indexed rows' k nearest (see :attr:`self_in_rows`
        and :attr:`own_metric`), each row ascending."""
        raise NotImplementedError

    def query(self, rows: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, distances)`` of the k nearest indexed rows of each of ``rows`` (new
        points, prepared unless :attr:`own_metric`)."""
        raise NotImplementedError

    def delegate(self, k: int) -> Any:
        """Another index that computes the graph of ``k`` columns in this backend's stead
        (the GPU's CPU index, beyond the kernel's k), or None."""
        return None

    def training_rows(self) -> Any:
        """The indexed rows as the metric sees them (:meth:`NeighborIndex.training_rows`)."""
        return self.rows

    def indexed_rows(self) -> Any:
        """Rows a fit on the same metric gives this backend again
        (:meth:`NeighborIndex.indexed_rows`)."""
        return self.training_rows()

    @staticmethod
    def memory_bytes(n: int, d: int, k: int) -> tuple[int, int]:
        """(peak while the graph of n points of d features and k columns is built, kept
        afterwards), besides the prepared copy of the rows (counted by
        :func:`unimap.neighbors.graph.memory_bytes`)."""
        raise NotImplementedError

    def with_threads(self, n_threads: int) -> Backend:
        """A shallow copy searching on ``n_threads`` threads (the indexed arrays shared)."""
        backend = copy.copy(self)
        backend.n_threads = n_threads
        return backend

    # -- model files (unimap.io.model_state) -----------------------------------------------
    def export(self, info: dict, encode: Callable[[Any, str], Any]) -> None:
        """Write what rebuilds this backend into the model file's index ``info``: its rows
        as ``data``. ``encode(value, name)`` stores a value (its arrays under ``name``)."""
        info["data"] = encode(self.rows, "index.data")

    def restore(self, rows: Any, info: dict, decode: Callable[[Any, str], Any]) -> Backend:
        """This backend as :meth:`export` wrote it, its ``rows`` checked by the reader;
        ``decode(value, where)`` reads a stored value."""
        return self.build(rows)

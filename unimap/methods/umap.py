"""UMAP (McInnes, Healy & Melville 2018) as a configuration of unimap's shared parts.

neighbours (:mod:`unimap.neighbors`) → fuzzy simplicial set (:mod:`unimap.affinity`) →
initialization (:mod:`unimap.initialization`) → kernel ``1/(1 + a d^(2b))``
(:mod:`unimap.kernel`) → edge-sampled SGD (:mod:`unimap.optimize`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap._validation import (
    check_array,
    check_bool,
    check_choice,
    check_embedding_finite,
    check_float,
    check_int,
    numba_threads,
    resolve_n_jobs,
    seed_from_random_state,
)
from unimap.methods._base import PhaseTimer, check_transform_width
from unimap.neighbors import METHODS, METRICS, NeighborIndex

__all__ = ["UMAP"]

_INITS = ("spectral", "pca", "random")
_MAX_DENSE_BYTES = 4 << 30


class UMAP:
    """Uniform Manifold Approximation and Projection.

    The optimizer is unimap's edge-coloured threaded SGD (see :mod:`unimap._kernels.umap_sgd`):
    it uses all cores and the same ``random_state`` gives bitwise the same embedding for any
    ``n_jobs``; there is no separate "reproducible mode" to remember.

    Parameters
    ----------
    n_neighbors : int, default=15
        Size of the local neighbourhood (the point itself included), in ``[2, n_samples]``.
    n_components : int, default=2
        Dimension of the embedding.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, default="euclidean"
        Input-space metric. ``"precomputed"``: ``X`` is a square distance matrix.
    n_epochs : int, optional
        SGD epochs. Default: 500 for up to 10,000 points, else 200.
    learning_rate : float, default=1.0
        Initial SGD step, decayed linearly to 0.
    init : {"spectral", "pca", "random"} or ndarray of shape (n_samples, n_components), \
default="spectral"
        Initial embedding. Spectral falls back to random (with a warning) when the eigensolver
        fails, and lays out disconnected components separately.
    min_dist : float, default=0.1
        Minimum distance between embedded points (shapes the kernel through ``a``, ``b``).
    spread : float, default=1.0
        Scale of the embedded points.
    set_op_mix_ratio : float in [0, 1], default=1.0
        1: fuzzy union, 0: fuzzy intersection when symmetrising the graph.
    local_connectivity : float, default=1.0
        Number of nearest neighbours assumed connected at full strength.
    repulsion_strength : float, default=1.0
        Weight γ of negative samples.
    negative_sample_rate : int, default=5
        Negative samples per positive sample.
    a, b : float, optional
        Kernel parameters; default: fitted from ``min_dist`` and ``spread``.
    random_state : int, numpy Generator or None, default=None
        Seed of every random choice (kNN backend, initialization, negative sampling).
    n_jobs : int, default=-1
        Threads (-1: all cores). Does not change the result.
    knn_method : {"auto", "exact", "hnsw", "nndescent"}, default="auto"
        Nearest-neighbour backend (see :mod:`unimap.neighbors`).
    precomputed_knn : tuple (indices, distances), optional
        A kNN graph of ``X`` with shape (n_samples, >= n_neighbors) each, column 0 the point
        itself; skips the neighbour search (``transform`` is then unavailable).
    verbose : bool, default=False
        Print the phases and their times.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components), float32
    graph_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric fuzzy graph (before pruning for the epoch count).
    knn_indices_, knn_dists_ : ndarrays of shape (n_samples, n_neighbors_)
    sigmas_, rhos_ : ndarrays of shape (n_samples,)
    a_, b_ : float
        Kernel parameters used.
    n_neighbors_ : int
        Neighbours used (``n_neighbors`` capped at ``n_samples``, with a warning).
    n_epochs_ : int
        Epochs run.
    init_info_ : dict
        What initialization was used and whether a fallback happened.
    knn_method_ : str
        Neighbour backend used.
    n_features_in_ : int
    timings_ : dict
        Seconds spent in each phase: ``neighbors``, ``graph``, ``init``, ``optimize``, ``total``.
    """

    def __init__(
        self,
        n_neighbors: int = 15,
        n_components: int = 2,
        metric: str = "euclidean",
        n_epochs: int | None = None,
        learning_rate: float = 1.0,
        init: Any = "spectral",
        min_dist: float = 0.1,
        spread: float = 1.0,
        set_op_mix_ratio: float = 1.0,
        local_connectivity: float = 1.0,
        repulsion_strength: float = 1.0,
        negative_sample_rate: int = 5,
        a: float | None = None,
        b: float | None = None,
        random_state: Any = None,
        n_jobs: int = -1,
        knn_method: str = "auto",
        precomputed_knn: tuple | None = None,
        verbose: bool = False,
    ) -> None:
        self.n_neighbors = n_neighbors
        self.n_components = n_components
        self.metric = metric
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.init = init
        self.min_dist = min_dist
        self.spread = spread
        self.set_op_mix_ratio = set_op_mix_ratio
        self.local_connectivity = local_connectivity
        self.repulsion_strength = repulsion_strength
        self.negative_sample_rate = negative_sample_rate
        self.a = a
        self.b = b
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.knn_method = knn_method
        self.precomputed_knn = precomputed_knn
        self.verbose = verbose

    # -- public API ------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> UMAP:
        """Embed ``X`` of shape (n_samples, n_features). Returns ``self``."""
        from unimap.kernel import find_ab_params

        clock = PhaseTimer(self._log)
        self._check_params()
        X = self._check_X(X)
        n = X.shape[0]
        seed = seed_from_random_state(self.random_state)
        self._seed = seed
        n_threads = resolve_n_jobs(self.n_jobs)
        self.n_features_in_ = X.shape[1]
        self.n_neighbors_ = self._effective_n_neighbors(n)
        if self.a is None or self.b is None:
            self.a_, self.b_ = find_ab_params(self.spread, self.min_dist)
        else:
            self.a_, self.b_ = float(self.a), float(self.b)
        self.n_epochs_ = self.n_epochs if self.n_epochs is not None else (
            500 if n <= 10_000 else 200)

        with numba_threads(n_threads):
            with clock.phase("neighbors", lambda: self.knn_method_):
                knn_idx, knn_dist = self._neighbors(X, seed)
            with clock.phase("graph", lambda: f"{self.graph_.nnz} edges"):
                self.graph_, self.sigmas_, self.rhos_ = self._graph(knn_idx, knn_dist)
                self.knn_indices_, self.knn_dists_ = knn_idx, knn_dist
            with clock.phase("init", lambda: self.init_info_["method"]):
                graph = self._prune(self.graph_, self.n_epochs_)
                init = self._initialize(X, graph, seed)
            with clock.phase("optimize", lambda: f"{self.n_epochs_} epochs"):
                embedding = self._optimize(init, graph, seed)

        self.embedding_ = check_embedding_finite(embedding, "UMAP")
        self.timings_ = clock.finish()
        return self

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray:
        """Fit and return ``embedding_``, shape (n_samples, n_components)."""
        return self.fit(X, y).embedding_

    def transform(self, X: Any) -> np.ndarray:
        """Embed new points into the fitted embedding (training points stay fixed).

        Each new point starts at the membership-weighted mean of its neighbours' embedding and
        is optimized against the fixed training embedding. The result of a point does not
        depend on the other points in the batch.

        Parameters
        ----------
        X : array of shape (m, n_features), or (m, n_train) distances if precomputed

        Returns
        -------
        embedding : ndarray of shape (m, n_components), float32
        """
        from unimap.placement import fuzzy_placement, transform_epochs

        self._check_fitted()
        if self._index is None:
            raise ValueError("transform is unavailable when fitted with precomputed_knn")
        X = self._check_X(X)
        check_transform_width(X, "UMAP", self.metric, self.embedding_.shape[0],
                              self.n_features_in_)
        n_epochs = transform_epochs(self.embedding_.shape[0], self.n_epochs)
        with numba_threads(resolve_n_jobs(self.n_jobs)):
            embedding = fuzzy_placement(
                self._index, X, self.embedding_, self.n_neighbors_, self.local_connectivity,
                self.a_, self.b_, self._seed, n_epochs, self.learning_rate / 4.0,
                self.repulsion_strength, self.negative_sample_rate)
        return check_embedding_finite(embedding, "UMAP.transform")

    # -- phases ------------------------------------------------------------------------------
    def _neighbors(self, X, seed):
        if self.precomputed_knn is not None:
            self._index = None
            self.knn_method_ = "precomputed"
            return self._check_precomputed_knn(X.shape[0])
        if sp.issparse(X):
            if X.shape[0] * X.shape[1] * 4 > _MAX_DENSE_BYTES:
                raise ValueError(
                    f"sparse X of shape {X.shape} is too large to densify for the neighbour "
                    "search; reduce it first (e.g. unimap.PCA or TruncatedSVD)"
                )
            X = X.toarray()
        index = NeighborIndex(self.metric, self.knn_method, self.n_jobs, seed).build(X)
        graph = index.knn_graph(self.n_neighbors_)
        self._index = index
        self.knn_method_ = index.method_
        return graph.indices, graph.distances

    def _graph(self, knn_idx, knn_dist):
        from unimap.affinity import fuzzy_simplicial_set

        return fuzzy_simplicial_set(knn_idx, knn_dist, knn_idx.shape[0],
                                    self.local_connectivity, self.set_op_mix_ratio)

    @staticmethod
    def _prune(graph, n_epochs):
        from unimap.optimize import prune_graph

        return prune_graph(graph, n_epochs)

    def _initialize(self, X, graph, seed) -> np.ndarray:
        from unimap import initialization as ini

        n, dim = graph.shape[0], self.n_components
        if isinstance(self.init, str) and self.init == "random":
            self.init_info_ = {"method": "random", "fallback": None}
            return ini.random_init(n, dim, seed)
        if not isinstance(self.init, str):
            self.init_info_ = {"method": "array", "fallback": None}
            return ini.array_init(self.init, n, dim)
        if self.init == "pca":
            if self.metric == "precomputed" or sp.issparse(X):
                raise ValueError("init='pca' needs dense feature vectors, not distances "
                                 "or a sparse matrix; use 'spectral' or 'random'")
            self.init_info_ = {"method": "pca", "fallback": None}
            Y = ini.pca_init(X, dim, seed)
        else:
            data = None if (self.metric == "precomputed" or sp.issparse(X)) else X
            Y, self.init_info_ = ini.spectral_init(graph, dim, seed, data)
            if self.init_info_["fallback"] is not None:
                return Y  # random fallback keeps its own scale
        return ini.rescale_to_box(Y, 10.0)

    def _optimize(self, init, graph, seed):
        from unimap.optimize import umap_sgd

        return umap_sgd(init, None, graph, self.n_epochs_, self.a_, self.b_, seed,
                        learning_rate=self.learning_rate,
                        repulsion_strength=self.repulsion_strength,
                        negative_sample_rate=self.negative_sample_rate)

    # -- checks ------------------------------------------------------------------------------
    def _check_params(self) -> None:
        check_int(self.n_neighbors, "n_neighbors", 2)
        check_int(self.n_components, "n_components", 1)
        check_choice(self.metric, "metric", METRICS)
        if self.n_epochs is not None:
            check_int(self.n_epochs, "n_epochs", 1)
        check_float(self.learning_rate, "learning_rate", 0.0, low_inclusive=False)
        if isinstance(self.init, str):
            check_choice(self.init, "init", _INITS)
        check_float(self.spread, "spread", 0.0, low_inclusive=False)
        check_float(self.min_dist, "min_dist", 0.0, self.spread)
        check_float(self.set_op_mix_ratio, "set_op_mix_ratio", 0.0, 1.0)
        check_float(self.local_connectivity, "local_connectivity", 0.0)
        check_float(self.repulsion_strength, "repulsion_strength", 0.0)
        check_float(self.negative_sample_rate, "negative_sample_rate", 0.0,
                    low_inclusive=False)
        for name in ("a", "b"):
            if getattr(self, name) is not None:
                check_float(getattr(self, name), name, 0.0, low_inclusive=False)
        if (self.a is None) != (self.b is None):
            raise ValueError("a and b must be given together (or both left as None)")
        check_choice(self.knn_method, "knn_method", METHODS)
        check_bool(self.verbose, "verbose")
        resolve_n_jobs(self.n_jobs)

    def _check_X(self, X):
        X = check_array(X, accept_sparse=self.metric != "precomputed", min_samples=1)
        if self.metric == "precomputed" and not hasattr(self, "embedding_"):
            if X.shape[0] != X.shape[1]:
                raise ValueError(
                    f"metric='precomputed' needs a square distance matrix, got shape {X.shape}"
                )
            if (X < 0).any():
                raise ValueError("metric='precomputed' distances must be non-negative")
        return X

    def _effective_n_neighbors(self, n: int) -> int:
        if n < 2:
            raise ValueError(f"UMAP needs at least 2 samples, got {n}")
        if self.n_neighbors > n:
            warnings.warn(
                f"n_neighbors={self.n_neighbors} is larger than the number of samples ({n}); "
                f"using n_neighbors={n} (recorded in n_neighbors_)", stacklevel=3,
            )
            return n
        return self.n_neighbors

    def _check_precomputed_knn(self, n: int):
        try:
            idx, dist = self.precomputed_knn
        except (TypeError, ValueError):
            raise TypeError("precomputed_knn must be a tuple (indices, distances)") from None
        idx, dist = np.asarray(idx), np.asarray(dist)
        k = self.n_neighbors_
        if idx.shape != dist.shape or idx.ndim != 2 or idx.shape[0] != n or idx.shape[1] < k:
            raise ValueError(
                f"precomputed_knn arrays must both have shape ({n}, >= {k}); got "
                f"{idx.shape} and {dist.shape}"
            )
        if idx.min() < 0 or idx.max() >= n:
            raise ValueError(f"precomputed_knn indices must lie in [0, {n - 1}]")
        if not np.isfinite(dist).all() or (dist < 0).any():
            raise ValueError("precomputed_knn distances must be finite and non-negative")
        return (np.ascontiguousarray(idx[:, :k], dtype=np.int32),
                np.ascontiguousarray(dist[:, :k], dtype=np.float32))

    def _check_fitted(self) -> None:
        if not hasattr(self, "embedding_"):
            raise RuntimeError("this UMAP instance is not fitted yet; call fit first")

    def _log(self, message: str) -> None:
        if self.verbose:
            print(f"[unimap.UMAP] {message}", flush=True)

"""The one pipeline of UMAP, TSNE and GDR (on the estimator base of
:mod:`unimap.methods._estimator`).

:class:`NeighborEmbedding` owns ``fit`` and ``transform`` of the neighbour-embedding methods:

    validate → resolve a plan → neighbours → affinities P → initialization → optimize
    → finite check → fitted attributes set all at once

A method is a subclass that declares its parameters and fills in the method-specific steps
(``_resolve``, ``_affinities``, ``_optimize``, ``_place``); everything else is written here once.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.affinity.stage import Affinity
from unimap.methods._estimator import PhaseTimer, UnimapEstimator
from unimap.methods.memory_plan import MemoryProfile, pipeline_estimate
from unimap.methods.plan import FitPlan
from unimap.runtime.memory import MemoryEstimate, check_memory, input_copy_estimate
from unimap.runtime.random_streams import FitStreams, seed_from_random_state
from unimap.runtime.threads import numba_threads, resolve_n_jobs
from unimap.runtime.user_warnings import warn_user
from unimap.runtime.validation import (
    check_embedding_finite,
    check_method_input,
    is_dask_collection,
    refuse_dask_fit,
)

__all__ = ["NeighborEmbedding"]



class NeighborEmbedding(UnimapEstimator):
    """The pipeline of a neighbour embedding (see the module docstring).

    Subclasses set ``_scale`` (``"box"``: UMAP's [0, 10] box; ``"std"``: t-SNE's standard
    deviation 1e-4) and implement:

    - ``_resolve(n) -> FitPlan``: the data-dependent plan (:mod:`unimap.methods.plan`), including
      ``n_neighbors_`` (kNN columns, the point itself included) and ``init_``;
    - ``_affinity(fit) -> Affinity``: the affinity stage of the fit, unfitted
      (:mod:`unimap.affinity.stage`), which the memory estimate and the phase plan ask;
    - ``_affinities(fit, knn_indices, knn_dists) -> P``: the matrix the optimizer follows (the
      stage's ``P_``, then what the method does to it);
    - ``_optimize(fit, init, seed) -> embedding``;
    - ``_place(X) -> embedding`` for ``transform``;

    and may override ``_optimizer_on_gpu(fit, n_samples)``: whether its optimizer's CUDA module
    supports the fit (that module's ``supports``; :mod:`unimap.runtime.device`).
    """

    _scale = "box"
    PHASES = ("neighbors", "affinities", "init", "optimize")
    _STEP_UNIT = "epoch"  # what the optimizer's progress bar counts (TSNE: iterations)
    _METRIC_KWDS = "metric_kwds"  # the parameter holding the metric's options (TSNE: sklearn's)
    # whether fit of a dask array runs on its cluster (unimap.dask.fit), else it is refused
    _FITS_ON_CLUSTER = False

    @property
    def _metric_kwds(self) -> dict | None:
        return getattr(self, self._METRIC_KWDS)

    def _validate_params(self) -> None:
        super()._validate_params()
        from unimap.neighbors.metrics import check_metric_kwds
        from unimap.runtime.params import invalid_parameter

        with invalid_parameter():
            check_metric_kwds(self.metric, self._metric_kwds, self._METRIC_KWDS)

    # -- public API ------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> NeighborEmbedding:
        """Embed ``X`` of shape (n_samples, n_features), or (n, n) distances if
        ``metric="precomputed"``; an AnnData gives its ``obsm["X_pca"]``, else its ``X``.
        Returns ``self``.

        ``y`` (UMAP and GDR): labels or targets for a supervised embedding, read as
        ``target_metric`` says; ``-1``, NaN or None mark unlabelled points (semi-supervised).
        TSNE ignores ``y``, as scikit-learn's does.

        The fitted attributes are set together at the end: a fit that fails (or is
        interrupted) leaves the estimator as it was.
        """
        return self._fit(X, y)

    def _fit(self, X: Any, y: Any = None, start: np.ndarray | None = None,
             epoch_share: float = 1.0, cluster: Any = None) -> NeighborEmbedding:
        """``fit``; ``start`` (one row per row of ``X``) replaces ``init`` for this fit only,
        and the optimizer runs ``epoch_share`` of the planned epochs (``update``), the
        hyperparameters unchanged. ``cluster`` (:class:`unimap.dask.fit.ClusterFit`): the
        dask array ``X`` is fitted on that cluster (the default one for a method that fits on
        a cluster, ``_FITS_ON_CLUSTER``; the others refuse a dask collection)."""
        clock = PhaseTimer(self._log, show_bars=self._shows_bars())
        self._validate_params()
        names = SimpleNamespace()
        X = self._fit_input(X, names)
        if cluster is None and is_dask_collection(X) and self._FITS_ON_CLUSTER:
            from unimap.dask.fit import ClusterFit

            cluster = ClusterFit()
        if cluster is not None:
            X = cluster.checked_input(self, X, y)
        else:
            X = self._checked_memory_input(X, y)
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 samples, got {n} sample")
        target = self._check_target(y, n)
        rows, inverse = (None, None) if cluster is not None else self._distinct_rows(X)
        if rows is not None:
            X, target, n = X[rows], None if target is None else target[rows], rows.size
        fit = self._resolve(n)
        fit.target = target
        fit.supervised_ = target is not None
        if start is not None:
            fit.init_ = start
        if epoch_share < 1.0:  # a refinement of a converged layout
            fit.n_epochs_ = max(1, int(fit.n_epochs_ * epoch_share))
        if rows is not None:
            fit.unique_inverse_ = inverse
            if not isinstance(fit.init_, str):  # an init array: the distinct rows' starts
                fit.init_ = np.asarray(fit.init_)[rows]
        fit.feature_names_in_ = getattr(names, "feature_names_in_", None)
        fit.use_rep_ = getattr(names, "use_rep_", None)
        fit.n_features_in_ = X.shape[1]
        fit._seed = seed_from_random_state(self.random_state)
        fit._streams = streams = FitStreams.from_seed(fit._seed)
        fit._cluster = cluster
        fit._index = None if cluster is not None else self._neighbor_index(streams.neighbors)
        fit.memory_estimate_ = self._check_memory(fit, X)
        if cluster is not None:
            fit.worker_memory_estimate_ = cluster.checked_worker_memory(
                self, n, fit.n_neighbors_, self.n_components)
        self._place_phases(fit, X)
        name = type(self).__name__
        unit = self._STEP_UNIT
        with numba_threads(resolve_n_jobs(self.n_jobs)):
            with clock.phase("neighbors", lambda: fit.knn_method_):
                fit.knn_indices_, fit.knn_dists_ = self._neighbors(fit, X)
            with clock.phase("affinities", lambda: f"{fit.graph_.nnz} edges"):
                fit.graph_ = self._affinities(fit, fit.knn_indices_, fit.knn_dists_)
            with clock.phase("init", lambda: fit.init_info_["method"]):
                init = self._initialize(fit, X, streams.init)
            with clock.phase("optimize", lambda: f"{fit.n_epochs_} {unit}s", fit.n_epochs_,
                             unit) as fit.epoch_bar:
                embedding = self._optimize(fit, init, streams.optimize)
        fit.epoch_bar = None
        fit.embedding_ = check_embedding_finite(embedding, name)
        self._finish(fit, fit.embedding_)
        if fit.unique_inverse_ is not None:  # each copy at its distinct row's place
            fit.embedding_ = fit.embedding_[fit.unique_inverse_]
        fit.timings_ = clock.finish()
        for stale in fit.optional_names():  # a refit without them drops them
            self.__dict__.pop(stale, None)
        self.__dict__.update(fit.fitted_attributes())
        return self

    def _checked_memory_input(self, X: Any, y: Any) -> Any:
        """``X`` of an in-memory fit checked (a dask collection refused, naming the
        recipes), within ``max_memory`` for its copy."""
        refuse_dask_fit(type(self).__name__, X, y)
        copy = input_copy_estimate(X)
        if copy is not None:
            check_memory(copy, self.max_memory, type(self).__name__)
        X = check_method_input(X, self.metric, square=True)
        if sp.issparse(X) and self.metric != "precomputed":
            from unimap.neighbors.sparse_rows import keeps_sparse

            # refuses what no search serves
            keeps_sparse(X, self.metric, self._search_method())
        return X

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray:
        """Fit and return ``embedding_``, shape (n_samples, n_components)."""
        return self.fit(X, y).embedding_

    def transform(self, X: Any) -> np.ndarray:
        """Place new points into the fitted embedding, which stays fixed.

        Each new point is optimized on its own against the training embedding, so it lands
        in the same place whether it comes alone or in a batch (see the method's ``_place``).

        Parameters
        ----------
        X : array of shape (m, n_features), or (m, n_train) distances if precomputed
            A ``dask.array.Array`` is placed block by block on the workers
            (:mod:`unimap.dask.transform`, ``docs/dask.md``).

        Returns
        -------
        embedding : ndarray of shape (m, n_components), float32
            A lazy ``dask.array.Array`` chunked by rows like ``X`` when ``X`` is one.
        """
        return self._transform(X)

    def _transform(self, X: Any, **options: Any) -> np.ndarray:
        """The steps of every ``transform``: check the new points, ``_place(X, **options)``
        on the estimator's threads, check the result is finite (a dask array: the same,
        block by block on its workers)."""
        if is_dask_collection(X):
            return self._dask_transform(X, options)
        X = self._check_new_points(X)
        with numba_threads(resolve_n_jobs(self.n_jobs)):
            embedding = self._place(X, **options)
        return check_embedding_finite(embedding, f"{type(self).__name__}.transform")

    def _placement_device(self) -> str:
        """Where ``transform``'s optimizer runs: the GPU when ``device`` allows it and one is
        usable in this process, whatever the fit ran on (a model fitted on a GPU machine is
        used on others). ``device="cuda"`` without a usable GPU places on the CPU rather than
        refuse: the embedding is only an array. Not chosen by batch size, so that a point lands
        in the same place alone or in a batch."""
        from unimap.runtime.device import DeviceUnavailableError, resolve_device

        try:
            return resolve_device(self.device)
        except DeviceUnavailableError:
            return "cpu"

    @property
    def _n_features_out(self) -> int:
        return self.embedding_.shape[1]

    # -- shared steps ------------------------------------------------------------------------
    def _place_phases(self, fit: FitPlan, X: Any) -> None:
        """``fit.devices_`` (phase -> ``"cpu"`` or ``"cuda"``) and ``fit.device_`` (``"cuda"``
        if any phase runs on the GPU) from the ``device`` parameter."""

        from unimap.runtime.device import resolve_device

        # a cluster fit runs on the workers' CPUs (ClusterFit refuses device="cuda")
        device = "cpu" if fit._cluster is not None else resolve_device(self.device)
        on_gpu = self._cuda_phases(fit, X) if device == "cuda" else ()
        fit.devices_ = {phase: "cuda" if phase in on_gpu else "cpu" for phase in self.PHASES}
        fit.device_ = "cuda" if on_gpu else "cpu"
        if fit._index is not None:  # the kNN graph is built where the plan placed it
            fit._index.device = fit.devices_["neighbors"]
        if device == "cuda" and "optimize" not in on_gpu and self.device == "cuda":
            # the optimizer is most of a fit: a GPU fit whose optimizer falls back says so
            warn_user(f"{type(self).__name__}{self._variant()}'s optimizer has no CUDA "
                      "kernels yet; it runs on the CPU (devices_ records where each phase "
                      "ran)", UserWarning)
        if on_gpu:
            self._log("devices: " + ", ".join(f"{k} {v}" for k, v in fit.devices_.items()))

    def _cuda_phases(self, fit: FitPlan, X: Any) -> tuple[str, ...]:
        """The phases of this fit that have CUDA kernels, as each stage's CUDA module declares
        them: the neighbours where the GPU kNN serves them
        (:mod:`unimap.neighbors.brute_force_cuda`), the affinities always (every calibration
        and symmetrisation has its kernels: :mod:`unimap.affinity.calibration_cuda`,
        :mod:`unimap.affinity.symmetrize_cuda`), a PCA start by the covariance solver, the
        optimizer where its CUDA module supports the configuration (``_optimizer_on_gpu``).
        The affinities where the fit's affinity stage supports the GPU (its ``supports``).

        A spectral start stays on the CPU: LOBPCG on the GPU
        (:mod:`unimap.initialization.spectral_cuda`) was many times slower than ARPACK on the
        CPU (measured: ``benchmarks/results/gpu.md``; ``benchmarks/device/lobpcg_profile.py``
        measures where its time goes)."""
        from unimap.initialization.layouts import pca_init_on_gpu

        phases = ("affinities",) if self._affinity(fit).supports("cuda") else ()
        init = fit.init_ if isinstance(fit.init_, str) else "array"
        dense_features = self.metric != "precomputed" and not sp.issparse(X)
        if init == "pca" and dense_features and pca_init_on_gpu(*X.shape, self.n_components):
            phases += ("init",)  # decomposition.pca_cuda
        if self._optimizer_on_gpu(fit, X.shape[0]):
            phases += ("optimize",)
        if fit._index is None or sp.issparse(X):  # precomputed_knn, or sparse rows
            return phases
        if fit._index.serves_on_gpu(X.shape[0], fit.n_neighbors_, device="cuda"):
            phases = ("neighbors", *phases)
        return phases

    @property
    def _reference_embedding(self) -> np.ndarray:
        """The embedding of the indexed training points (the distinct rows when fitted with
        ``unique=True``), which ``transform`` and ``inverse_transform`` work against."""
        inverse = self.__dict__.get("unique_inverse_")
        if inverse is None:
            return self.embedding_
        from unimap.methods.unique_rows import first_rows

        return self.embedding_[first_rows(inverse)]

    def _finish(self, fit: FitPlan, embedding: np.ndarray) -> None:
        """Outputs computed from the optimized embedding (of the distinct rows with
        ``unique=True``), before the fitted attributes are set (override)."""

    def _check_target(self, y: Any, n: int) -> Any:
        """``y`` of ``fit`` checked for the method (override): ignored by default, as
        scikit-learn's TSNE ignores it."""
        return None

    def _distinct_rows(self, X: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``(rows, inverse)`` of the distinct rows to fit on (override, ``unique=True``);
        ``(None, None)``: every row."""
        return None, None

    def _supervised(self, fit: FitPlan, graph: sp.csr_matrix) -> sp.csr_matrix:
        """``graph`` intersected with the labels of ``fit(X, y)`` when there are some
        (:mod:`unimap.methods.supervision`); called by the methods' ``_affinities``."""
        if fit.target is None:
            return graph
        from unimap.methods.supervision import supervised_graph

        return supervised_graph(self, graph, fit.target, self.n_jobs, fit._streams.neighbors)

    def _optimizer_on_gpu(self, fit: FitPlan, n_samples: int) -> bool:
        """Whether the method's optimizer has CUDA kernels for this fit of ``n_samples``
        points (asked of the optimizer's ``*_cuda`` module; only called for
        ``device="cuda"``)."""
        return False

    def _variant(self) -> str:
        """How the CPU-fallback warning names the configuration (e.g. GDR's mode)."""
        return ""

    def _check_new_points(self, X: Any, what: str = "transform") -> Any:
        self._check_can_transform(what)
        X = check_method_input(self._new_input(X), self.metric, square=False)
        self._check_n_features(X, self._n_features_expected)
        return X

    def _check_can_transform(self, what: str = "transform") -> None:
        """Raise before any work if ``what`` (``transform``, ``update``,
        ``inverse_transform``) cannot run: not fitted, fitted with ``precomputed_knn``, or
        loaded from a file saved without the training data."""
        self._check_fitted()
        if self._index is None:
            raise ValueError(f"{what} is unavailable when fitted with precomputed_knn or on "
                             "a dask array (no index of the training rows in this process)")
        if not self._index.has_training_data:
            raise self._index.missing(what)

    @property
    def _n_features_expected(self) -> int:
        return self.embedding_.shape[0] if self.metric == "precomputed" else self.n_features_in_

    def _check_memory(self, fit: FitPlan, X: Any) -> int:
        """Estimate the fit's peak memory; refuse it above ``max_memory``. Returns bytes."""
        estimate = self._memory_estimate(fit, X)
        self._log(f"memory: {estimate.describe()}")
        check_memory(estimate, self.max_memory, type(self).__name__)
        return estimate.peak

    def _memory_estimate(self, fit: FitPlan, X: Any) -> MemoryEstimate:
        """The phases' peaks (:func:`unimap.methods.memory_plan.pipeline_estimate`) from the shapes,
        the plan (the kNN backend the fit's index plans), the method's affinity stage and its
        :class:`MemoryProfile`."""
        from unimap.neighbors.sparse_rows import keeps_sparse

        n, d = X.shape
        sparse = sp.issparse(X) and self.metric != "precomputed"
        knn = ("precomputed" if fit._index is None
               else "sparse" if sparse and keeps_sparse(X, self.metric, self._search_method())
               else fit._index.planned_method(n))
        spectral = isinstance(fit.init_, str) and fit.init_ == "spectral"
        return pipeline_estimate(n, d, fit.n_neighbors_, self.n_components, knn, self.metric,
                                 sp.issparse(X), spectral, self._affinity(fit),
                                 self._memory_profile(fit, n),
                                 sparse_nnz=X.nnz if sparse else 0)

    def _memory_profile(self, fit: FitPlan, n: int) -> MemoryProfile:
        raise NotImplementedError

    def _epoch_guard(self, fit: FitPlan, causes: str, name: str | None = None):
        """The optimizer's per-epoch hook: the finiteness guard, advancing the epoch bar."""
        from unimap.runtime.guards import FiniteGuard

        return FiniteGuard(name or type(self).__name__, causes,
                           fit.epoch_bar)

    def _neighbor_index(self, seed: int) -> Any:
        """The fit's :class:`unimap.neighbors.graph.NeighborIndex`, unbuilt (None with
        ``precomputed_knn``): planned once (the memory estimate asks for its backend, the
        phase plan whether the GPU serves it), then built by :meth:`_neighbors`."""
        if self.precomputed_knn is not None:
            return None
        from unimap.neighbors.graph import NeighborIndex

        return NeighborIndex(self.metric, self._search_method(), self.n_jobs, seed,
                             metric_kwds=self._metric_kwds)

    def _search_method(self) -> str:
        """The neighbour search the fit asks for (``knn_method``; UMAP's
        ``force_approximation_algorithm`` may choose the approximate one)."""
        return self.knn_method

    def _shows_bars(self) -> bool:
        """Whether the phases draw progress bars (``verbose``)."""
        return bool(self.verbose)

    def _neighbors(self, fit: FitPlan, X: Any):
        """The kNN graph (column 0 the point itself) with ``fit.n_neighbors_`` columns, of
        the planned ``fit._index``."""
        from unimap.runtime.validation import check_knn_graph

        k = fit.n_neighbors_
        if self.precomputed_knn is not None:
            fit.knn_method_ = "precomputed"
            return check_knn_graph(self.precomputed_knn, X.shape[0], k)
        if fit._cluster is not None:
            fit.knn_method_ = "dask_shards"
            return fit._cluster.neighbors(X, k, self.metric, fit._streams.neighbors)
        graph = fit._index.build(X).knn_graph(k)
        fit.knn_method_ = fit._index.method_
        return graph.indices, graph.distances

    def _initialize(self, fit: FitPlan, X: Any, seed: int) -> np.ndarray:
        from unimap.initialization.layouts import initialize

        if fit._cluster is not None:
            Y, fit.init_info_ = fit._cluster.initialize(
                fit.init_, X, self._init_graph(fit), self.n_components, seed, self._scale)
            return Y
        features = None if self.metric == "precomputed" else X
        Y, fit.init_info_ = initialize(fit.init_, features, self._init_graph(fit),
                                       self.n_components, seed, self._scale,
                                       device=fit.devices_["init"])
        return Y

    def _init_graph(self, fit: FitPlan) -> sp.csr_matrix:
        """The graph a spectral initialization lays out (override to prune it first)."""
        return fit.graph_

    def _resolve(self, n: int) -> FitPlan:
        raise NotImplementedError

    def _affinity(self, fit: FitPlan) -> Affinity:
        raise NotImplementedError

    def _affinities(self, fit, knn_indices, knn_dists):
        raise NotImplementedError

    def _optimize(self, fit, init, seed):
        raise NotImplementedError

    def _place(self, X):
        raise NotImplementedError

    def _expected_failed_checks(self) -> dict[str, str]:
        return {
            "check_transformer_general": (
                "fit_transform returns the optimized training embedding; transform places "
                "points into it anew (as new points), which lands near but not on it"),
            "check_transformer_data_not_an_array": (
                "same reason as check_transformer_general: fit_transform(X) is not "
                "fit(X).transform(X) for a neighbour embedding"),
        }

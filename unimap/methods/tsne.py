"""t-SNE (van der Maaten & Hinton 2008) as a configuration of unimap's shared parts.

neighbours (:mod:`unimap.neighbors`, K = ⌊3·perplexity⌋) → perplexity-calibrated, symmetrised
P (:mod:`unimap.affinity`) → initialization (:mod:`unimap.initialization`, scaled to std 1e-4)
→ Student-t kernel with ``dof`` degrees of freedom → full-batch gradient descent with
exaggeration, momentum and gains (:mod:`unimap.gradient_descent`), repulsion exact, Barnes-Hut
or FFT-interpolated.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap import placement
from unimap._validation import (
    check_bool,
    check_choice,
    check_embedding_finite,
    check_float,
    check_int,
    check_method_input,
    effective_perplexity,
    numba_threads,
    resolve_n_jobs,
    seed_from_random_state,
)
from unimap.methods._base import PhaseTimer, check_transform_width
from unimap.neighbors import METHODS, METRICS, NeighborIndex

__all__ = ["TSNE"]

_METHODS = ("auto", "exact", "barnes_hut", "fft")
_INITS = ("pca", "random", "spectral")
_INIT_STD = 1e-4
# method="auto" switches from Barnes-Hut to FFT interpolation in 2-D at this many points.
# Measured on MNIST subsets (750 iterations, optimize time, BH / FFT): 5k 15.3 / 22.3 s,
# 10k 30.7 / 33.5 s, 20k 50.3 / 46.0 s; the FFT grid costs the same whatever n, Barnes-Hut
# grows as n log n. On digits (1.8k) BH also reached a lower KL (0.746 against 0.764).
FFT_MIN_SAMPLES = 10_000


class TSNE:
    """t-distributed Stochastic Neighbor Embedding.

    Parameters
    ----------
    n_components : int, default=2
        Dimension of the embedding: 1 or 2 with ``"fft"``, 2 or 3 with ``"barnes_hut"``, any
        with ``"exact"``.
    perplexity : float, default=30.0
        Effective number of neighbours; P uses the ``⌊3·perplexity⌋`` nearest neighbours.
        Lowered (with a warning, recorded in ``perplexity_``) when the data has too few points.
    early_exaggeration : float, default=12.0
        Factor on P during the first ``early_exaggeration_iter`` iterations.
    early_exaggeration_iter : int, default=250
    exaggeration : float, default=1.0
        Factor on P after early exaggeration (> 1: late exaggeration, more UMAP-like clusters).
    learning_rate : float or "auto", default="auto"
        ``"auto"``: ``max(n / early_exaggeration / 4, 50)`` during early exaggeration
        (Belkina et al. 2019, in the units of the gradient with its factor 4, as
        scikit-learn) and ``max(n / exaggeration / 4, 50)`` after it, as openTSNE does: on
        MNIST-20k this reached KL 2.120 in 750 iterations against 2.193 with the
        early-exaggeration rate kept throughout, at the same 10-NN accuracy.
    n_iter : int, default=750
        Total iterations, early exaggeration included.
    initial_momentum, final_momentum : float, default=0.5, 0.8
        Momentum during and after early exaggeration.
    min_gain : float, default=0.01
        Floor of the per-coordinate gains.
    max_grad_norm : float, optional
        Clip each point's gradient to this length (default: no clipping).
    max_step_norm : float, default=5.0
        Clip each point's step to this length (FIt-SNE, openTSNE): a point cannot be thrown
        far away, which would also inflate the FFT grid.
    method : {"auto", "exact", "barnes_hut", "fft"}, default="auto"
        How the all-pairs repulsion is computed. ``"auto"``: FFT interpolation for 1
        component and for 2 from 10,000 points on, Barnes-Hut below that and for 3
        components, exact beyond 3 (the crossover is measured: see ``FFT_MIN_SAMPLES``).
    theta : float, default=0.5
        Barnes-Hut opening angle (0: exact sums through the tree).
    n_interpolation_points, min_num_intervals, ints_in_interval : int, int, float
        FFT grid: nodes per interval (3), minimum intervals per dimension (50), embedding
        units per interval (1.0); as in FIt-SNE / openTSNE.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, default="euclidean"
    init : {"pca", "random", "spectral"} or ndarray of shape (n_samples, n_components), \
default="pca"
        Start; ``"pca"``, ``"spectral"`` (of P) and ``"random"`` are scaled to standard
        deviation 1e-4; an array is used as given.
    dof : float, default=1.0
        Degrees of freedom α of the kernel ``(1 + d²/α)^-α``; 1 is t-SNE's Cauchy kernel,
        smaller values give heavier tails and finer clusters (Kobak et al. 2019).
    random_state : int, numpy Generator or None, default=None
    n_jobs : int, default=-1
        Threads (-1: all cores). Does not change the result.
    knn_method : {"auto", "exact", "hnsw", "nndescent"}, default="auto"
    callback : callable ``(iteration, kl_divergence, embedding) -> bool``, optional
        Called every ``callback_every`` iterations; returning True stops the optimization.
    callback_every : int, default=50
    verbose : bool, default=False

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components), float32
    kl_divergence_ : float
        KL(P‖Q) of the final embedding (Z as estimated by ``method_``).
    n_iter_ : int
        Iterations run (fewer than ``n_iter`` when the callback stopped them).
    P_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric joint probabilities, summing to 1.
    sigmas_ : ndarray of shape (n_samples,)
        Gaussian bandwidths of the conditional probabilities.
    perplexity_ : float
    learning_rate_ : tuple of float
        Learning rates used during and after early exaggeration.
    method_ : str
    knn_method_ : str
    init_info_ : dict
    n_features_in_ : int
    timings_ : dict
        Seconds in ``neighbors``, ``affinities``, ``init``, ``optimize``, ``total``.
    """

    def __init__(
        self,
        n_components: int = 2,
        perplexity: float = 30.0,
        early_exaggeration: float = 12.0,
        early_exaggeration_iter: int = 250,
        exaggeration: float = 1.0,
        learning_rate: Any = "auto",
        n_iter: int = 750,
        initial_momentum: float = 0.5,
        final_momentum: float = 0.8,
        min_gain: float = 0.01,
        max_grad_norm: float | None = None,
        max_step_norm: float | None = 5.0,
        method: str = "auto",
        theta: float = 0.5,
        n_interpolation_points: int = 3,
        min_num_intervals: int = 50,
        ints_in_interval: float = 1.0,
        metric: str = "euclidean",
        init: Any = "pca",
        dof: float = 1.0,
        random_state: Any = None,
        n_jobs: int = -1,
        knn_method: str = "auto",
        callback: Any = None,
        callback_every: int = 50,
        verbose: bool = False,
    ) -> None:
        self.n_components = n_components
        self.perplexity = perplexity
        self.early_exaggeration = early_exaggeration
        self.early_exaggeration_iter = early_exaggeration_iter
        self.exaggeration = exaggeration
        self.learning_rate = learning_rate
        self.n_iter = n_iter
        self.initial_momentum = initial_momentum
        self.final_momentum = final_momentum
        self.min_gain = min_gain
        self.max_grad_norm = max_grad_norm
        self.max_step_norm = max_step_norm
        self.method = method
        self.theta = theta
        self.n_interpolation_points = n_interpolation_points
        self.min_num_intervals = min_num_intervals
        self.ints_in_interval = ints_in_interval
        self.metric = metric
        self.init = init
        self.dof = dof
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.knn_method = knn_method
        self.callback = callback
        self.callback_every = callback_every
        self.verbose = verbose

    # -- public API ------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> TSNE:
        """Embed ``X`` of shape (n_samples, n_features). Returns ``self``."""
        from unimap.gradient_descent import Phase, gradient_descent

        clock = PhaseTimer(self._log)
        self._check_params()
        X = check_method_input(X, self.metric, square=True)
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"TSNE needs at least 2 samples, got {n}")
        seed = seed_from_random_state(self.random_state)
        self.n_features_in_ = X.shape[1]
        self.method_ = self._resolve_method(n)
        self.perplexity_ = effective_perplexity(self.perplexity, n)
        self.learning_rate_ = self._learning_rates(n)
        with numba_threads(resolve_n_jobs(self.n_jobs)):
            with clock.phase("neighbors", lambda: self.knn_method_):
                knn_idx, knn_dist = self._neighbors(X, n, seed)
            with clock.phase("affinities", lambda: f"{self.P_.nnz} non-zeros"):
                self.P_, self.sigmas_ = self._affinities(knn_idx, knn_dist, n)
            with clock.phase("init", lambda: str(self.init) if isinstance(self.init, str)
                             else "array"):
                init = self._initialize(X, seed)
            with clock.phase("optimize", lambda: f"{n_done} iterations, {self.method_}"):
                n_early = min(self.early_exaggeration_iter, self.n_iter)
                phases = [
                    Phase(n_early, self.early_exaggeration, self.initial_momentum,
                          self.learning_rate_[0]),
                    Phase(self.n_iter - n_early, self.exaggeration, self.final_momentum,
                          self.learning_rate_[1]),
                ]
                embedding, kl, n_done = gradient_descent(
                    init, self.P_, phases, self._repulsion_params(), self.min_gain,
                    self.max_grad_norm, self.max_step_norm, self.callback, self.callback_every,
                    self._log if self.verbose else None,
                )

        self.embedding_ = check_embedding_finite(embedding.astype(np.float32), "TSNE")
        self.kl_divergence_ = kl
        self.n_iter_ = n_done
        self._seed = seed
        self.timings_ = clock.finish()
        return self

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray:
        """Fit and return ``embedding_``, shape (n_samples, n_components)."""
        return self.fit(X, y).embedding_

    def transform(
        self,
        X: Any,
        perplexity: float = placement.PLACEMENT_PERPLEXITY,
        n_iter: int = placement.PLACEMENT_N_ITER,
        learning_rate: float = placement.PLACEMENT_LEARNING_RATE,
        exaggeration: float = placement.PLACEMENT_EXAGGERATION,
        momentum: float = placement.PLACEMENT_MOMENTUM,
        max_grad_norm: float | None = placement.PLACEMENT_MAX_GRAD_NORM,
    ) -> np.ndarray:
        """Embed new points into the fitted embedding, which stays fixed (as openTSNE does).

        Each new point gets conditional probabilities over its ``⌊3·perplexity⌋`` nearest
        training points, starts at the median of its 10 nearest neighbours' positions (at most
        the ⌊3·perplexity⌋ found) and is optimized against the fixed embedding alone (its own
        Z), so a point lands in the same place whether it comes alone or in a batch.

        Parameters
        ----------
        X : array of shape (m, n_features), or (m, n_train) distances if precomputed
        perplexity : float, default=5.0
            Smaller than in fit: a new point should sit with its closest neighbours.
        n_iter : int, default=250
        learning_rate : float, default=0.1
        exaggeration : float, default=1.5
        momentum : float, default=0.8
        max_grad_norm : float or None, default=1.0
            Keeps points that start on top of training points from being thrown out.

        Returns
        -------
        embedding : ndarray of shape (m, n_components), float32
        """
        self._check_fitted()
        check_float(perplexity, "perplexity", 0.0, low_inclusive=False)
        check_int(n_iter, "n_iter", 0)
        check_float(learning_rate, "learning_rate", 0.0, low_inclusive=False)
        check_float(exaggeration, "exaggeration", 0.0, low_inclusive=False)
        check_float(momentum, "momentum", 0.0, 1.0, high_inclusive=False)
        if max_grad_norm is not None:
            check_float(max_grad_norm, "max_grad_norm", 0.0, low_inclusive=False)
        X = check_method_input(X, self.metric, square=False)
        check_transform_width(X, "TSNE", self.metric, self.embedding_.shape[0],
                              self.n_features_in_)
        with numba_threads(resolve_n_jobs(self.n_jobs)):
            Y = placement.perplexity_placement(
                self._index, X, self.embedding_, self._repulsion_params(), perplexity, n_iter,
                learning_rate, exaggeration, momentum, max_grad_norm)
        return check_embedding_finite(Y, "TSNE.transform")

    # -- phases ------------------------------------------------------------------------------
    def _neighbors(self, X, n, seed):
        k = min(int(3 * self.perplexity_), n - 1)
        k = max(k, 1)
        if sp.issparse(X):
            X = X.toarray()
        index = NeighborIndex(self.metric, self.knn_method, self.n_jobs, seed).build(X)
        graph = index.knn_graph(k + 1)
        self._index = index
        self.knn_method_ = index.method_
        return graph.indices, graph.distances

    def _affinities(self, knn_idx, knn_dist, n):
        from unimap.affinity import perplexity_affinities

        return perplexity_affinities(knn_idx, knn_dist, self.perplexity_, n)

    def _initialize(self, X, seed) -> np.ndarray:
        from unimap import initialization as ini

        n, dim = X.shape[0], self.n_components
        if not isinstance(self.init, str):
            self.init_info_ = {"method": "array", "fallback": None}
            return ini.array_init(self.init, n, dim)
        if self.init == "random":
            self.init_info_ = {"method": "random", "fallback": None}
            rng = np.random.default_rng(seed)
            return rng.normal(scale=_INIT_STD, size=(n, dim))
        if self.init == "pca":
            if self.metric == "precomputed":
                raise ValueError("init='pca' needs feature vectors, not distances; use "
                                 "'spectral' or 'random'")
            self.init_info_ = {"method": "pca", "fallback": None}
            dense = X.toarray() if sp.issparse(X) else X
            Y = ini.pca_init(dense, dim, seed)
        else:
            data = None if (self.metric == "precomputed" or sp.issparse(X)) else X
            Y, self.init_info_ = ini.spectral_init(self.P_, dim, seed, data)
        return ini.rescale_to_std(Y, _INIT_STD)

    def _repulsion_params(self):
        from unimap.gradient_descent import RepulsionParams

        return RepulsionParams(self.method_, float(self.theta), float(self.dof),
                               int(self.n_interpolation_points), int(self.min_num_intervals),
                               float(self.ints_in_interval))

    # -- checks ------------------------------------------------------------------------------
    def _learning_rates(self, n: int) -> tuple[float, float]:
        if self.learning_rate != "auto":
            return float(self.learning_rate), float(self.learning_rate)
        return (max(n / self.early_exaggeration / 4.0, 50.0),
                max(n / self.exaggeration / 4.0, 50.0))

    def _resolve_method(self, n: int) -> str:
        dim = self.n_components
        method = self.method
        if method == "auto":
            if dim == 1 or (dim == 2 and n >= FFT_MIN_SAMPLES):
                return "fft"
            return "barnes_hut" if dim <= 3 else "exact"
        if method == "barnes_hut" and dim not in (2, 3):
            raise ValueError(f"method='barnes_hut' supports n_components 2 or 3, got {dim}; "
                             "use method='exact' (or 'fft' for 1 component)")
        if method == "fft" and dim > 2:
            raise ValueError(f"method='fft' supports n_components 1 or 2, got {dim}; "
                             "use 'barnes_hut' for 3 or 'exact' beyond")
        return method

    def _check_params(self) -> None:
        check_int(self.n_components, "n_components", 1)
        check_float(self.perplexity, "perplexity", 0.0, low_inclusive=False)
        check_float(self.early_exaggeration, "early_exaggeration", 0.0, low_inclusive=False)
        check_int(self.early_exaggeration_iter, "early_exaggeration_iter", 0)
        check_float(self.exaggeration, "exaggeration", 0.0, low_inclusive=False)
        if not (isinstance(self.learning_rate, str) and self.learning_rate == "auto"):
            if isinstance(self.learning_rate, str):
                raise ValueError(f"learning_rate must be 'auto' or a positive number, got "
                                 f"{self.learning_rate!r}")
            check_float(self.learning_rate, "learning_rate", 0.0, low_inclusive=False)
        check_int(self.n_iter, "n_iter", 1)
        check_float(self.initial_momentum, "initial_momentum", 0.0, 1.0, high_inclusive=False)
        check_float(self.final_momentum, "final_momentum", 0.0, 1.0, high_inclusive=False)
        check_float(self.min_gain, "min_gain", 0.0)
        for name in ("max_grad_norm", "max_step_norm"):
            if getattr(self, name) is not None:
                check_float(getattr(self, name), name, 0.0, low_inclusive=False)
        check_choice(self.method, "method", _METHODS)
        check_float(self.theta, "theta", 0.0)
        check_int(self.n_interpolation_points, "n_interpolation_points", 1)
        check_int(self.min_num_intervals, "min_num_intervals", 1)
        check_float(self.ints_in_interval, "ints_in_interval", 0.0, low_inclusive=False)
        check_choice(self.metric, "metric", METRICS)
        if isinstance(self.init, str):
            check_choice(self.init, "init", _INITS)
        check_float(self.dof, "dof", 0.0, low_inclusive=False)
        check_choice(self.knn_method, "knn_method", METHODS)
        if self.callback is not None and not callable(self.callback):
            raise TypeError("callback must be callable (iteration, kl_divergence, embedding)")
        check_int(self.callback_every, "callback_every", 1)
        check_bool(self.verbose, "verbose")
        resolve_n_jobs(self.n_jobs)

    def _check_fitted(self) -> None:
        if not hasattr(self, "embedding_"):
            raise RuntimeError("this TSNE instance is not fitted yet; call fit first")

    def _log(self, message: str) -> None:
        if self.verbose:
            print(f"[unimap.TSNE] {message}", flush=True)

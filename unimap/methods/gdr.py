"""GDR, the unified gradient method ("Uniform UMAP", reference 002; Draganov et al.).

A declaration of unimap's shared parts: neighbours (:mod:`unimap.neighbors.graph`) → P
(:func:`unimap.affinity.joint.joint_affinities`: UMAP's fuzzy graph, or t-SNE's
perplexity-calibrated P normalised to sum 1) → initialization
(:mod:`unimap.initialization`) → full-batch epochs over the CSR edge list, per edge one
attraction and ``n_negatives`` uniform negative samples:

- ``normalized=False`` (UMAP-like): fuzzy cross-entropy with the ``1 − p_ik`` of the repulsion
  replaced by the mean edge weight p̄, linearly decaying step, clipping
  (:func:`unimap.optimizers.gdr.unnormalized.unnormalized_full_batch`);
- ``normalized=True`` (t-SNE-like): KL(P‖Q) with Z estimated from the same negative samples
  (:class:`unimap.optimizers.gdr.forces.SampledForces`), early exaggeration, momentum and gains
  (:func:`unimap.optimizers.gradient_descent.descent.gradient_descent`).

The losses and their gradients, exactly as implemented, are written out in
:mod:`unimap.optimizers.gdr`. Unlike the public GDR implementation, the t-SNE mode calibrates
P to a perplexity, keeps the chain-rule factor of ``d^(2b)`` for b ≠ 1, accumulates forces per
destination (no racing scatters) and draws negatives from a counter-based hash, so that the
same ``random_state`` gives bitwise the same embedding for any ``n_jobs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from unimap.methods import gdr_modes
from unimap.methods._base import NeighborEmbedding
from unimap.methods._umap_family import UMAPFamily
from unimap.methods.memory_plan import MemoryProfile
from unimap.methods.parameters import (
    PIPELINE,
    SUPERVISION,
    document_shared,
    shared_constraints,
)
from unimap.methods.plan import GDRPlan
from unimap.methods.registry import built_in
from unimap.methods.umap_defaults import check_kernel_params
from unimap.runtime.params import (
    MAX_ITERATIONS,
    AnyOf,
    ArrayLike,
    Boolean,
    Dict,
    Integer,
    Optional,
    Options,
    Real,
)

if TYPE_CHECKING:
    from unimap.affinity.joint import JointAffinity

__all__ = ["GDR"]



@document_shared
class GDR(UMAPFamily, NeighborEmbedding):
    """GDR: UMAP-like or t-SNE-like embeddings from one full-batch optimizer linear in the edges.

    Parameters
    ----------
    n_neighbors : int, default=15
        Neighbours (the point itself included) of the fuzzy graph, ``normalized=False``.
    {shared: n_components, metric}
    metric_kwds : dict, optional
        The metric's parameters: ``{"p": 3}`` for minkowski.
    normalized : bool, default=False
        False: UMAP-like (unnormalized P and Q). True: t-SNE-like (P and Q normalised).
    symmetric_attraction : bool, optional
        Pull each point also along the edges where it is the tail (UMAP moves both ends of an
        edge; t-SNE only the head). Default: True when not normalized, False when normalized.
    symmetrization : {"umap", "tsne", "none"}, optional
        How directed affinities become P: fuzzy union ``A + Aᵀ − A∘Aᵀ``, ``(A + Aᵀ)/2``, or
        kept directed. Default: "umap" when not normalized, "tsne" when normalized.
    perplexity : float, default=10.0
        ``normalized=True``: P over the ``⌊3·perplexity⌋`` nearest neighbours, calibrated to
        this perplexity. Lowered (with a warning, in ``perplexity_``) for small data. The
        default is lower than t-SNE's 30 because this mode's sampled repulsion does better
        with a tighter P (measured: docs/gdr.md).
    min_dist, spread : float, default=0.1, 1.0
        Shape of ``q = 1/(1 + a d^(2b))`` through the fitted ``a, b`` (not normalized).
    a, b : float, optional
        Kernel parameters, given together. Default: fitted from ``min_dist``/``spread`` when not
        normalized, ``a = b = 1`` (t-SNE's Cauchy kernel) when normalized.
    n_negatives : float, optional
        Uniform negative samples drawn per edge (fractions allowed). Per-row samples: a row of
        ``deg`` edges draws ``max(1, round(n_negatives·deg))`` of its own. Shared samples: an
        epoch draws ``M = max(1, round(n_negatives·nnz/n))``, as many as a row on average, and
        every row uses them, ``M/early_exaggeration`` during early exaggeration. Default: 1;
        with shared samples ``1000·n/nnz``, i.e. M = 1000 at any perplexity (25 per edge at
        perplexity 10 on MNIST; recorded in ``n_negatives_``). More samples lower the noise of
        the repulsion, not its expected strength (see :mod:`unimap.optimizers.gdr`).
    shared_negatives : bool, optional
        Normalized mode: draw one set of negative samples per epoch for all rows instead of
        per row. Its noise is common to neighbouring points, so it does not shuffle them
        against each other: higher 15-NN recall in less time (docs/gdr.md). Default: True
        when normalized; True with ``normalized=False`` is an error (that mode samples per
        edge, as UMAP).
    n_epochs : int, optional
        Default: not normalized, 500 for up to 10,000 points, else 200 (as UMAP);
        normalized, 600: 100 of early exaggeration and 500 after it (t-SNE: 250 and 500;
        see Notes).
    learning_rate : float, optional
        Not normalized: initial step, decayed linearly to 0; default 0.1. Normalized, a given
        value is used in both phases; the default depends on the samples:

        - shared samples: t-SNE's "auto" rule (openTSNE's, in the units of the gradient with
          its factor 4) ``max(n / (4E), 50)``, E = ``early_exaggeration`` during early
          exaggeration and 1 after, times ``min(1, M/500)``;
        - per-row samples: ``max(2n / early_exaggeration · min(1, S/120), 50)`` in both
          phases, S the mean samples per row (about 130 at perplexity 30).

        Fewer samples (smaller perplexity or ``n_negatives``) give a proportionally smaller
        step, as each sample's weight grows (see Notes). In the normalized mode the step
        decays linearly to 0 over the last third of the epochs (after early exaggeration),
        which lets the noise of the samples settle.
    early_exaggeration : float, default=12.0
        Factor on P during the first ``early_exaggeration_iter`` epochs (normalized).
    early_exaggeration_iter : int, optional
        Default: 100 (normalized; at most ``n_epochs``). Ignored when not normalized.
    momentum : float, optional
        Not normalized: heavy-ball momentum of the step, default 0.5. Normalized: momentum
        after early exaggeration, default 0.8 (0.5 during it, or ``momentum`` if smaller),
        with t-SNE's per-coordinate gains.
    repulsion_strength : float, default=1.0
        Weight γ of the repulsion (both modes). Not normalized, an edge repels like UMAP's 5
        negative samples of weight ``γ·p̄`` (p̄ the mean edge weight, in place of ``1 − p``).
    init : {"spectral", "pca", "random"} or ndarray of shape (n_samples, n_components), optional
        Default: "spectral" when not normalized (scaled into a [0, 10] box), "pca" when
        normalized (scaled to standard deviation 1e-4; "spectral" for precomputed distances).
        An array is used as given.
    {shared: target_metric, target_weight, target_n_neighbors, disconnection_distance, unique}
    {shared: random_state, n_jobs, knn_method, precomputed_knn, max_memory, verbose, device}

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components), float32
    graph_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float32
        The P that was optimized (normalized mode: sums to 1).
    a_, b_ : float
    n_epochs_ : int
    learning_rate_ : float
        The step (normalized: after early exaggeration, before its decay).
    early_learning_rate_ : float
        The step during early exaggeration (equal to ``learning_rate_`` when not normalized).
    shared_negatives_ : bool
    n_negatives_ : float
    symmetric_attraction_, symmetrization_, init_ : resolved defaults
    mean_weight_ : float
        p̄, the mean edge weight of ``graph_`` (weight of one negative sample, not normalized).
    z_ : float or None
        Normalized mode: the last estimate of Z.
    n_neighbors_ : int
        Columns of the kNN graph used, the point itself included.
    perplexity_ : float or None
    knn_indices_, knn_dists_ : ndarrays of shape (n_samples, ``n_neighbors_``)
    knn_method_ : str
    init_info_ : dict
    n_features_in_ : int
    timings_ : dict
        Seconds in ``neighbors``, ``affinities``, ``init``, ``optimize``, ``total``.
    device_ : str
        ``"cuda"`` if a phase ran on the GPU, else ``"cpu"``.
    devices_ : dict
        Where each phase ran: ``{"neighbors": ..., "affinities": ..., "init": ...,
        "optimize": ...}``, each ``"cpu"`` or ``"cuda"``.
    memory_estimate_ : int
        The estimated peak memory of the fit in bytes, over what the process held before
        (see :mod:`unimap.methods.memory_plan`).
    worker_memory_estimate_ : int
        Only after a fit of a dask array on its cluster: the estimated peak that the epochs
        add to the most loaded worker, in bytes
        (:meth:`unimap.dask.fit.ClusterFit.checked_worker_memory`).

    Notes
    -----
    The defaults were chosen by measurement on digits and MNIST (10-NN accuracy,
    trustworthiness and 15-NN recall against ``unimap.UMAP`` and ``unimap.TSNE``); the
    measurements are in ``docs/gdr.md``. In short: the normalized mode draws one set of
    negative samples per epoch for all rows (``shared_negatives``), whose noise is common to
    neighbouring points and so does not shuffle them; perplexity 10 and M = 1000 samples per
    epoch gave the best recall per second on MNIST-70k; 100 epochs of early exaggeration do
    as well as t-SNE's 250; and the step shrinks with the samples, since a sample that lands
    near a point repels it with weight ``n/S``.

    Examples
    --------
    >>> import unimap
    >>> from unimap import metrics
    >>> from unimap.datasets import load_digits
    >>> X, y = load_digits()
    >>> umap_like = unimap.GDR(random_state=0).fit(X[:1000])
    >>> tsne_like = unimap.GDR(normalized=True, random_state=0).fit(X[:1000])
    >>> umap_like.embedding_.shape, tsne_like.embedding_.shape
    ((1000, 2), (1000, 2))
    >>> umap_like.transform(X[1000:1010]).shape
    (10, 2)
    >>> [bool(metrics.knn_accuracy(m.embedding_, y[:1000]) > 0.9) for m in (umap_like, tsne_like)]
    [True, True]
    """

    declaration = built_in("GDR")
    _parameter_constraints = {
        **shared_constraints(*PIPELINE),
        "metric_kwds": Optional(Dict()),
        "n_neighbors": Integer(2),
        "normalized": Boolean(),
        "symmetric_attraction": Optional(Boolean()),
        "symmetrization": Optional(Options("umap", "tsne", "none")),
        "perplexity": Real(0.0, low_inclusive=False),
        "min_dist": Real(0.0),
        "spread": Real(0.0, low_inclusive=False),
        "a": Optional(Real(0.0, low_inclusive=False)),
        "b": Optional(Real(0.0, low_inclusive=False)),
        "n_negatives": Optional(Real(0.0, low_inclusive=False)),
        "shared_negatives": Optional(Boolean()),
        "n_epochs": Optional(Integer(1, MAX_ITERATIONS)),
        "learning_rate": Optional(Real(0.0, low_inclusive=False)),
        "early_exaggeration": Real(0.0, low_inclusive=False),
        "early_exaggeration_iter": Optional(Integer(0, MAX_ITERATIONS)),
        "momentum": Optional(Real(0.0, 1.0, high_inclusive=False)),
        "repulsion_strength": Real(0.0),
        "init": Optional(AnyOf(Options("spectral", "pca", "random"), ArrayLike())),
        **shared_constraints(*SUPERVISION, "disconnection_distance", "unique"),
    }

    def __init__(
        self,
        n_neighbors: int = 15,
        *,
        n_components: int = 2,
        metric: str = "euclidean",
        normalized: bool = False,
        symmetric_attraction: bool | None = None,
        symmetrization: str | None = None,
        perplexity: float = 10.0,
        min_dist: float = 0.1,
        spread: float = 1.0,
        a: float | None = None,
        b: float | None = None,
        n_negatives: float | None = None,
        shared_negatives: bool | None = None,
        n_epochs: int | None = None,
        learning_rate: float | None = None,
        early_exaggeration: float = 12.0,
        early_exaggeration_iter: int | None = None,
        momentum: float | None = None,
        repulsion_strength: float = 1.0,
        init: Any = None,
        random_state: Any = None,
        n_jobs: int = -1,
        knn_method: str = "auto",
        precomputed_knn: tuple | None = None,
        max_memory: Any = "available",
        verbose: bool = False,
        device: str = "auto",
        metric_kwds: dict | None = None,
        target_metric: str = "categorical",
        target_weight: float = 0.5,
        target_n_neighbors: int = -1,
        disconnection_distance: float | None = None,
        unique: bool = False,
    ) -> None:
        self.n_neighbors = n_neighbors
        self.n_components = n_components
        self.metric = metric
        self.normalized = normalized
        self.symmetric_attraction = symmetric_attraction
        self.symmetrization = symmetrization
        self.perplexity = perplexity
        self.min_dist = min_dist
        self.spread = spread
        self.a = a
        self.b = b
        self.n_negatives = n_negatives
        self.shared_negatives = shared_negatives
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.early_exaggeration = early_exaggeration
        self.early_exaggeration_iter = early_exaggeration_iter
        self.momentum = momentum
        self.repulsion_strength = repulsion_strength
        self.init = init
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.knn_method = knn_method
        self.precomputed_knn = precomputed_knn
        self.max_memory = max_memory
        self.verbose = verbose
        self.device = device
        self.metric_kwds = metric_kwds
        self.target_metric = target_metric
        self.target_weight = target_weight
        self.target_n_neighbors = target_n_neighbors
        self.disconnection_distance = disconnection_distance
        self.unique = unique

    @property
    def _mode(self) -> gdr_modes.GDRMode:
        """The mode this estimator runs (:mod:`unimap.methods.gdr_modes`): the one place GDR
        reads ``normalized``."""
        return gdr_modes.TSNE_LIKE if self.normalized else gdr_modes.UMAP_LIKE

    @property
    def _FITS_ON_CLUSTER(self) -> bool:  # noqa: N802 (the base class's declaration)
        return self._mode.fits_on_cluster

    @property
    def _scale(self) -> str:
        return self._mode.scale

    def _check_param_relations(self) -> None:
        check_kernel_params(self)
        if self.shared_negatives and not self._mode.normalized:
            raise ValueError("shared_negatives=True needs normalized=True: the unnormalized "
                             "mode draws its negative samples per edge")

    def _check_target(self, y: Any, n: int) -> Any:
        target = super()._check_target(y, n)
        if target is not None and self.symmetrization == "none":
            raise ValueError("fit(X, y) needs a symmetric graph: symmetrization='none' keeps "
                             "P directed, which the intersection with the labels' graph "
                             "would symmetrise")
        return target

    def _resolve(self, n: int) -> GDRPlan:
        return self._mode.resolve(self, n)

    def _memory_profile(self, fit, n: int) -> MemoryProfile:
        return self._mode.memory_profile(self, fit, n)

    def _affinity(self, fit) -> JointAffinity:
        from unimap.affinity.joint import JointAffinity

        mode = self._mode
        return JointAffinity(mode.affinity, fit.symmetrization_, mode.normalized,
                             fit.perplexity_)

    def _affinities(self, fit, knn_indices, knn_dists):
        n = knn_indices.shape[0]
        mode = self._mode
        P = self._affinity(fit).fit(knn_indices, knn_dists,
                                    device=fit.devices_["affinities"]).P_
        cut = self._disconnect(P, knn_indices, knn_dists)
        if fit.target is not None:
            cut = self._supervised(fit, cut)
        P = mode.finish_affinities(self, fit, P, cut)
        fit.mean_weight_ = float(P.data.mean()) if P.nnz else 0.0
        if fit.n_negatives_ is None:  # M = 1000 shared samples per epoch: n_negatives·nnz/n
            fit.n_negatives_ = gdr_modes.TSNE_SHARED_SAMPLES * n / max(P.nnz, 1)
        if fit.learning_rate_ is None:
            fit.early_learning_rate_, fit.learning_rate_ = gdr_modes.normalized_steps(
                n, fit.n_negatives_ * P.nnz / n, fit.shared_negatives_, self.early_exaggeration)
        return P

    def _optimizer_on_gpu(self, fit, n_samples) -> bool:
        return self._mode.optimizer_on_gpu(self, fit)

    def _variant(self) -> str:
        return self._mode.label

    def _optimize(self, fit, init, seed):
        common = {"symmetric_attraction": fit.symmetric_attraction_,
                  "directed": fit.symmetrization_ == "none", "n_epochs": fit.n_epochs_,
                  "a": fit.a_, "b": fit.b_, "seed": seed, "learning_rate": fit.learning_rate_,
                  "momentum": fit.momentum_, "n_negatives": fit.n_negatives_,
                  "device": fit.devices_["optimize"]}
        return self._mode.optimize(self, fit, init, common)

    def transform(self, X: Any) -> np.ndarray:
        """Embed new points into the fitted embedding (training points stay fixed).

        Each new point is optimized on its own against the fixed embedding, so it lands in the
        same place whether it comes alone or in a batch; the loss is that of the fit's mode.

        - ``normalized=False``: UMAP's placement (:func:`unimap.placement.fuzzy_placement`):
          fuzzy membership to the ``n_neighbors_`` nearest training points, start at their
          membership-weighted mean, UMAP's SGD with kernel ``a_, b_`` for 100 epochs (30 above
          10,000 training points; ``n_epochs // 3`` when ``n_epochs`` is set).
        - ``normalized=True``: openTSNE's placement
          (:func:`unimap.placement.perplexity_placement`): perplexity 5 over the 15 nearest
          training points, start at the median of the 10 nearest, 250 steps of each point's
          KL(P_i‖Q_i) with Barnes-Hut repulsion from the embedding (exact beyond 3-D). Needs
          the t-SNE kernel ``a = b = 1`` (the default of this mode).

        Parameters
        ----------
        X : array of shape (m, n_features), or (m, n_train) distances if precomputed

        Returns
        -------
        embedding : ndarray of shape (m, n_components), float32
        """
        self._check_placement_kernel("transform")
        return super().transform(X)

    def _update_epoch_share(self) -> float:
        # the normalized mode needs all of its iterations (benchmarks/results/dropin.md)
        return 1.0 if self._mode.normalized else super()._update_epoch_share()

    def _check_placement_kernel(self, what: str) -> None:
        self._mode.check_placement_kernel(self, what)

    def _place(self, X):
        return self._mode.place(self, X)

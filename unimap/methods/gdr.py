"""GDR, the unified gradient method ("Uniform UMAP", reference 002; Draganov et al.).

neighbours (:mod:`unimap.neighbors`) → P (:mod:`unimap.affinity`: UMAP's fuzzy graph, or
t-SNE's perplexity-calibrated P normalised to sum 1) → initialization
(:mod:`unimap.initialization`) → full-batch epochs over the CSR edge list
(:mod:`unimap._kernels.gdr`): per edge one attraction and ``n_negatives`` uniform negative
samples (in the normalized mode one set per epoch, shared by all rows); every force of an epoch
is computed from the same positions and applied at once.

``normalized=False`` gives UMAP-like embeddings (fuzzy cross-entropy with the ``1 − p_ik`` of
the repulsion replaced by the mean edge weight p̄, linearly decaying step, clipping).
``normalized=True`` gives t-SNE-like embeddings (KL(P‖Q) with Z estimated from the same negative
samples, early exaggeration, momentum and gains). The losses and their gradients, exactly as
implemented, are written out in :mod:`unimap._kernels.gdr`.

Unlike the public GDR implementation, the t-SNE mode calibrates P to a perplexity, keeps the
chain-rule factor of ``d^(2b)`` for b ≠ 1, accumulates forces per destination (no racing
scatters) and draws negatives from a counter-based hash, so that the same ``random_state``
gives bitwise the same embedding for any ``n_jobs``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

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
from unimap.ordering import morton_order

__all__ = ["GDR"]

_INITS = ("spectral", "pca", "random")
_SYMMETRIZATIONS = ("umap", "tsne", "none")
_TSNE_INIT_STD = 1e-4
_EPS = 1e-3  # ε of UMAP's repulsion 2b / ((ε + d²)(1 + a d^(2b)))
_CLIP = 4.0  # per-coordinate clip of the summed force (unnormalized mode)
_REPULSION_RATE = 5.0  # ν: an edge repels like UMAP's 5 negatives of weight γ·p̄
_MAX_STEP_NORM = 5.0  # per-point step clip (normalized mode), as unimap.TSNE / openTSNE
_MIN_GAIN = 0.01
_INITIAL_MOMENTUM = 0.5
_MARKS_BYTES = 64 << 20
_CENTER_EVERY = 50  # recentre the normalized embedding (translation does not change the loss)
_PARALLEL_MIN_ROWS = 512  # below this, one thread beats waking the pool every epoch

# Defaults chosen by measurement (see the class docstring and tests/test_gdr.py).
_SMALL = 10_000
_UMAP_EPOCHS = 200
_UMAP_EPOCHS_SMALL = 500
_UMAP_LR = 0.1
_UMAP_MOMENTUM = 0.5
_UMAP_NEGATIVES = 1.0
_TSNE_EPOCHS = 600  # 100 of early exaggeration, then 500 (see Notes)
_TSNE_EE_ITER = 100
_TSNE_NEGATIVES = 1.0  # per-row samples
_TSNE_SHARED_SAMPLES = 1000  # shared samples per epoch, whatever the perplexity (see Notes)
_TSNE_MOMENTUM = 0.8
# Default steps (see _normalized_steps). Per-row samples: max(2n/E · min(1, S/120), 50) in
# both phases. Shared samples: t-SNE's "auto" rule max(n/(4E), 50), E = 12 and then 1, times
# min(1, M/500).
_TSNE_LR_PER_POINT = 2.0
_TSNE_MIN_LR = 50.0  # t-SNE's floor, both sampling schemes
_TSNE_REF_SAMPLES = 120.0
_TSNE_SHARED_REF_SAMPLES = 500.0
_TSNE_DECAY_FRACTION = 1.0 / 3.0  # the step decays linearly to 0 over the last third
_TRANSFORM_LR = 0.25  # UMAP.transform's step (its fit step 1, divided by 4)


class GDR:
    """GDR: UMAP-like or t-SNE-like embeddings from one full-batch O(|E|) optimizer.

    Parameters
    ----------
    n_neighbors : int, default=15
        Neighbours (the point itself included) of the fuzzy graph, ``normalized=False``.
    n_components : int, default=2
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, default="euclidean"
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
        with a tighter P: on MNIST-70k perplexity 10 gave 15-NN recall 0.319 against 0.278
        at 30, in half the time (openTSNE: 0.346 at 10, 0.348 at 30; see Notes).
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
        the repulsion, not its expected strength (see :mod:`unimap._kernels.gdr`).
    shared_negatives : bool, optional
        Normalized mode: draw one set of negative samples per epoch for all rows instead of
        per row. Its noise is common to neighbouring points, so it does not shuffle them
        against each other: 15-NN recall on MNIST-70k at perplexity 30 0.28 against 0.225
        (openTSNE: 0.348), in less time (see Notes). Default: True when normalized; True
        with ``normalized=False`` is an error (that mode samples per edge, as UMAP).
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
    random_state : int, numpy Generator or None, default=None
    n_jobs : int, default=-1
        Threads (-1: all cores). Does not change the result.
    knn_method : {"auto", "exact", "hnsw", "nndescent"}, default="auto"
    verbose : bool, default=False

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
    knn_indices_, knn_dists_ : ndarrays of shape (n_samples, n_neighbors_)
    knn_method_ : str
    init_info_ : dict
    n_features_in_ : int
    timings_ : dict
        Seconds in ``neighbors``, ``affinities``, ``init``, ``optimize``, ``total``.

    Notes
    -----
    The defaults were chosen by measurement on digits and MNIST-5k/20k (10-NN accuracy,
    trustworthiness and 15-NN recall against ``unimap.UMAP`` / ``unimap.TSNE``). On MNIST-20k
    (2 cores) the unnormalized mode matches UMAP's trustworthiness and 15-NN recall and comes
    within 0.2-0.3 points of its 10-NN accuracy in a quarter of UMAP's optimization time
    (0.5 s against 1.9 s). The normalized mode with per-row samples and its former step
    (5.9 s against t-SNE's 15 s) came within 0.3-0.5 points of t-SNE's 10-NN accuracy and
    one point of its trustworthiness, but its 15-NN recall was lower (0.30 against 0.39): the
    uniform samples estimate the within-cluster repulsion with noise that an exact repulsion
    (tested: recall 0.45 = t-SNE's on MNIST-5k) does not have; ``n_negatives=3`` recovered
    part of it (0.33) at 1.5 times the time.

    The normalized mode draws shared samples (``shared_negatives``): one set of M per
    epoch for all rows. Each row's estimate is as noisy as with its own samples, but the
    noise is common to neighbouring points, so the far field pushes a neighbourhood as a
    whole instead of shuffling it. MNIST-70k, optimization alone on one 91-NN graph, seed 0:

    - ~130 samples per row (the former default), step ``2n/12`` decaying over the last third:
      15-NN recall 0.225, 10-NN accuracy 0.9708, 20 s;
    - M = 130 shared, same step: 0.245; M = 520: 0.260; M = 520 stratified along a Z-order
      curve: 0.261 (no gain from covering the embedding evenly);
    - with t-SNE's steps (``n/48``, then ``n/4``, decaying): M = 130 0.243 (accuracy 0.966),
      M = 520 0.278/0.282 (seeds 0/1, accuracy 0.972, 20.5 s), M = 780 0.283, M = 1040
      0.285 (29 s); openTSNE 0.348; 600 instead of 750 epochs: 0.270;
    - per-row samples with the same steps: 0.231 (130 per row), 0.271 (780 per row, 62 s).

    Full pipeline, fresh process (perplexity 30, M = 520): 22.4 s, recall 0.279, accuracy
    0.972 (per-row: 27 s, 0.225, 0.971); the shared samples' far field runs 16 rows at a time
    in vector lanes (``unimap._kernels.gdr``), 56 → 23 ms per epoch. During early exaggeration E
    times fewer shared samples do as well (M = 32 or 130 instead of 520: recall
    0.281/0.279) in 15% less time.

    The step shrinks with the samples (see ``learning_rate``): a sample that lands near a
    point repels it with weight ``n/S``, and these rare, large kicks grow as S falls. At the
    full step perplexity 5 scattered MNIST-70k's clusters (10-NN accuracy 0.66 per row with
    S ≈ 22, 0.64 shared with M ≈ 88; 0.89 at ``M/120``); shrunk, it reaches 0.969 per row
    and 0.971 shared (recall 0.249, 4 s of optimization). With M = 520 shared samples and the
    full steps perplexity 5 reaches recall 0.305 in 11.7 s.

    Why perplexity 10 and M = 1000 by default. MNIST-70k, full pipeline, fresh processes,
    seed 0 (openTSNE, perplexity 30: recall 0.348, 97.5 s; perplexity 10: 0.346, 65 s):

    =====================  ======  =========  ======  =========  =======
    perplexity, M          time s  recall@15  10-NN   recall@50  triplet
    =====================  ======  =========  ======  =========  =======
    30, 520 (former)       20.3    0.278      0.9715  0.307      0.619
    30, 1040               22.4    0.282      0.9709
    15, 1040               12.8    0.311      0.9721
    10, 670                 9.7    0.315      0.9722  0.302      0.620
    10, 1000 (default)     10.0    0.319      0.9725  0.306      0.621
    10, 1340               10.9    0.320      0.9722
    7, 1000                 8.7    0.318      0.9717
    =====================  ======  =========  ======  =========  =======

    Recall at 50 neighbours and the triplet accuracy (global structure) stay as they were at
    perplexity 30, and trustworthiness@15 (sampled, 3,000 points) rises from 0.988 to 0.990
    (openTSNE 0.993). On smaller data the tighter P costs some mid-scale structure: at
    10,000 points recall 0.409 against 0.418 and trustworthiness on a 2,000-point sample
    0.943 against 0.952 (``docs/gdr.md``; the clusters' gaps are narrower); at 20,000 recall
    0.385 against 0.379 with equal sampled trustworthiness (0.9867 against 0.9872). Fewer
    neighbours make the kNN search (31 instead of 91) and the exact near field three times
    cheaper; the freed time buys a less noisy far field.
    openTSNE's recall does not move with the perplexity; GDR's sampled repulsion, whose
    step is the same at both, gains from the tighter P.

    Why 100 epochs of early exaggeration (t-SNE's 250). With t-SNE's step ``n/48`` the
    clusters have formed by then, and what sets the fine structure is the 500 epochs after
    it: 500 epochs after 250 of exaggeration give recall 0.319, after 100 0.320 and after 50
    0.321, while 350 after 250 give 0.306 and 250 after 250 0.289 (MNIST-70k, seed 0).
    The other measures hold or improve (100 against 250: 10-NN accuracy 0.9724 / 0.9723,
    recall@50 0.306 / 0.305, triplet accuracy 0.623 / 0.622; seeds 0 and 1 on digits and
    MNIST-10k/20k: accuracy within ±0.003, recall within ±0.002, triplet accuracy
    +0.005-0.010). The exception is MNIST-5k, 10-NN accuracy 0.935 against 0.939 (both
    seeds); 50 epochs were not taken for their lower accuracy on MNIST-70k (0.9715). The
    150 epochs cost 8 ms each (the exact near field does not shrink with the samples): the
    full pipeline on MNIST-70k takes 9.1-9.3 s instead of 10.3-10.8 s. Per-row samples
    lose a little (accuracy 0.9697 against 0.9702, recall 0.208 against 0.209).

    Measured and not taken (per-row samples, MNIST-70k): an exact repulsion from all points
    within 0.3-0.5 of each one (a uniform grid rebuilt every epoch, 1.7-2 times the time)
    left recall at 0.219-0.228; an exact repulsion from the 64 points around each one on a
    Z-order curve 0.229 (1.9 times the time); momentum 0.9 0.170. The noise that limits recall
    is in the mid-field, which is why sharing the samples, not refining the near field, helps.
    """

    def __init__(
        self,
        n_neighbors: int = 15,
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
        verbose: bool = False,
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
        self.verbose = verbose

    # -- public API ------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> GDR:
        """Embed ``X`` of shape (n_samples, n_features). Returns ``self``."""
        clock = PhaseTimer(self._log)
        self._check_params()
        X = check_method_input(X, self.metric, square=True)
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"GDR needs at least 2 samples, got {n}")
        seed = seed_from_random_state(self.random_state)
        self._seed = seed  # transform draws from the fit's stream
        self.n_features_in_ = X.shape[1]
        self._resolve(n)
        with numba_threads(resolve_n_jobs(self.n_jobs)) as n_threads:
            with clock.phase("neighbors", lambda: self.knn_method_):
                knn_idx, knn_dist = self._neighbors(X, seed)
                self.knn_indices_, self.knn_dists_ = knn_idx, knn_dist
            with clock.phase("affinities", lambda: f"{self.graph_.nnz} edges"):
                self.graph_ = self._affinities(knn_idx, knn_dist, n)
                self.mean_weight_ = float(self.graph_.data.mean()) if self.graph_.nnz else 0.0
                if self.n_negatives_ is None:
                    self.n_negatives_ = self._default_shared_negatives(n)
                if self.learning_rate_ is None:
                    self.early_learning_rate_, self.learning_rate_ = self._normalized_steps(n)
            with clock.phase("init", lambda: self.init_info_["method"]):
                init = self._initialize(X, seed)
            with clock.phase("optimize", lambda: f"{self.n_epochs_} epochs"):
                threads = n_threads if n >= _PARALLEL_MIN_ROWS else 1
                with numba_threads(threads):
                    if self.normalized:
                        embedding = self._optimize_normalized(init, seed)
                    else:
                        embedding = self._optimize_unnormalized(init, seed)

        self.embedding_ = check_embedding_finite(embedding, "GDR")
        self.timings_ = clock.finish()
        return self

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray:
        """Fit and return ``embedding_``, shape (n_samples, n_components)."""
        return self.fit(X, y).embedding_

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
        from unimap.gradient_descent import RepulsionParams
        from unimap.placement import fuzzy_placement, perplexity_placement, transform_epochs

        if not hasattr(self, "embedding_"):
            raise RuntimeError("this GDR instance is not fitted yet; call fit first")
        if self.normalized and (self.a_ != 1.0 or self.b_ != 1.0):
            raise ValueError(
                f"transform with normalized=True needs the t-SNE kernel a = b = 1; this model "
                f"was fitted with a={self.a_:g}, b={self.b_:g}"
            )
        X = check_method_input(X, self.metric, square=False)
        n_train = self.embedding_.shape[0]
        check_transform_width(X, "GDR", self.metric, n_train, self.n_features_in_)
        with numba_threads(resolve_n_jobs(self.n_jobs)):
            if self.normalized:
                method = "barnes_hut" if self.n_components <= 3 else "exact"
                Y = perplexity_placement(self._index, X, self.embedding_,
                                         RepulsionParams(method, 0.5, 1.0))
            else:
                Y = fuzzy_placement(
                    self._index, X, self.embedding_, self.n_neighbors_,
                    local_connectivity=1.0, a=self.a_, b=self.b_, seed=self._seed,
                    n_epochs=transform_epochs(n_train, self.n_epochs),
                    learning_rate=_TRANSFORM_LR,
                    repulsion_strength=self.repulsion_strength, negative_sample_rate=5.0)
        return check_embedding_finite(Y, "GDR.transform")

    # -- resolved defaults -------------------------------------------------------------------
    def _resolve(self, n: int) -> None:
        from unimap.kernel import find_ab_params

        normalized = self.normalized
        self.symmetric_attraction_ = (not normalized if self.symmetric_attraction is None
                                      else bool(self.symmetric_attraction))
        self.symmetrization_ = self.symmetrization or ("tsne" if normalized else "umap")
        if self.a is not None:
            self.a_, self.b_ = float(self.a), float(self.b)
        elif normalized:
            self.a_, self.b_ = 1.0, 1.0
        else:
            self.a_, self.b_ = find_ab_params(self.spread, self.min_dist)
        if self.n_epochs is not None:
            self.n_epochs_ = self.n_epochs
        elif normalized:
            self.n_epochs_ = _TSNE_EPOCHS
        else:
            self.n_epochs_ = _UMAP_EPOCHS_SMALL if n <= _SMALL else _UMAP_EPOCHS
        self.shared_negatives_ = (normalized if self.shared_negatives is None
                                  else bool(self.shared_negatives))
        if self.n_negatives is not None:
            self.n_negatives_ = float(self.n_negatives)
        elif normalized and self.shared_negatives_:
            self.n_negatives_ = None  # per edge, from the graph: set by _default_shared_negatives
        else:
            self.n_negatives_ = _TSNE_NEGATIVES if normalized else _UMAP_NEGATIVES
        self.momentum_ = float(self.momentum if self.momentum is not None else (
            _TSNE_MOMENTUM if normalized else _UMAP_MOMENTUM))
        if self.learning_rate is not None:
            self.learning_rate_ = float(self.learning_rate)
        elif normalized:
            self.learning_rate_ = None  # depends on the graph: set by _normalized_steps
        else:
            self.learning_rate_ = _UMAP_LR
        self.early_learning_rate_ = self.learning_rate_
        if normalized:
            ee = _TSNE_EE_ITER if self.early_exaggeration_iter is None else (
                self.early_exaggeration_iter)
            self.early_exaggeration_iter_ = min(ee, self.n_epochs_)
            self.perplexity_ = effective_perplexity(self.perplexity, n, stacklevel=4)
            self.n_neighbors_ = max(min(int(3 * self.perplexity_), n - 1), 1) + 1
        else:
            self.early_exaggeration_iter_ = 0
            self.perplexity_ = None
            self.n_neighbors_ = self._effective_n_neighbors(n)
        if self.init is not None:
            self.init_ = self.init
        else:  # PCA needs feature vectors: spectral for precomputed distances
            self.init_ = "pca" if normalized and self.metric != "precomputed" else "spectral"
        self.z_ = None

    def _normalized_steps(self, n: int) -> tuple[float, float]:
        """Default steps of the normalized mode, during and after early exaggeration.

        A uniform sample that lands close to a point repels it with the weight ``n/S`` (S
        samples per row), so the rare kick it gives grows as S shrinks; the step shrinks in
        proportion below the S it was tuned at, which keeps that kick's size.

        - Shared samples (S = M per epoch): t-SNE's "auto" rule ``max(n/(4E), 50)`` with E the
          exaggeration of the phase (openTSNE's, in the units of the gradient with its factor
          4), times ``min(1, M/500)`` (the default M = 1000 takes the full step). With 4 samples
          per edge perplexity 30 on MNIST-70k has M ≈ 520 and perplexity 5
          (M ≈ 88) at the full step scattered the clusters (10-NN accuracy 0.64; 0.89 at
          ``M/120``), at ``M/500`` it reaches 0.971.
        - Per-row samples: ``max(2n/E · min(1, S/120), 50)`` in both phases (S ≈ 130 at
          perplexity 30 on MNIST); without the factor perplexity 5 (S ≈ 22) broke MNIST-70k's
          clusters apart (10-NN accuracy 0.66-0.89 instead of 0.969). The floor was 200 until
          the per-row variant on 300 blobs (step 200 at n = 300) split a cluster (10-NN
          accuracy 0.867) after a change of rounding; 50 is t-SNE's floor.
        """
        samples = self.n_negatives_ * self.graph_.nnz / n
        if self.shared_negatives_:
            shrink = min(1.0, samples / _TSNE_SHARED_REF_SAMPLES)
            late = max(n / 4.0 * shrink, _TSNE_MIN_LR)
            early = max(n / (4.0 * self.early_exaggeration) * shrink, _TSNE_MIN_LR)
            return early, late
        shrink = min(1.0, samples / _TSNE_REF_SAMPLES)
        step = max(_TSNE_LR_PER_POINT * n / self.early_exaggeration * shrink, _TSNE_MIN_LR)
        return step, step

    def _default_shared_negatives(self, n: int) -> float:
        """Default samples per edge with shared samples: ``M = 1000`` per epoch, so that the
        far field's cost and noise do not depend on the perplexity (``M = n_negatives·nnz/n``).
        """
        return _TSNE_SHARED_SAMPLES * n / max(self.graph_.nnz, 1)

    def _early_negatives(self) -> float:
        """Samples per edge during early exaggeration: shared samples draw E times fewer.

        The attraction is E times stronger there, so the repulsion's noise matters less; and
        with ``M/E`` samples of weight ``E·n/M`` at the step ``n/(4E)`` a sample's kick is the
        size it has after early exaggeration. MNIST-70k (optimization alone, t-SNE's steps):
        M/E = 43 during early exaggeration left recall and accuracy as they were with 520
        (0.281/0.9719 with 32, 0.279/0.9721 with 130, 0.278/0.9725 with 520) and saved 15%.
        """
        if self.shared_negatives_ and self.early_exaggeration > 1.0:
            return self.n_negatives_ / self.early_exaggeration
        return self.n_negatives_

    def _effective_n_neighbors(self, n: int) -> int:
        if self.n_neighbors > n:
            warnings.warn(
                f"n_neighbors={self.n_neighbors} is larger than the number of samples ({n}); "
                f"using n_neighbors={n} (recorded in n_neighbors_)", stacklevel=4,
            )
            return n
        return self.n_neighbors

    def _neighbors(self, X, seed):
        if sp.issparse(X):
            X = X.toarray()
        index = NeighborIndex(self.metric, self.knn_method, self.n_jobs, seed).build(X)
        graph = index.knn_graph(self.n_neighbors_)
        self._index = index
        self.knn_method_ = index.method_
        return graph.indices, graph.distances

    def _affinities(self, knn_idx, knn_dist, n) -> sp.csr_matrix:
        from unimap import affinity

        if self.normalized:
            probabilities, _ = affinity.conditional_probabilities(knn_dist[:, 1:],
                                                                   self.perplexity_)
            directed = _csr_from_knn(knn_idx[:, 1:], probabilities, n)
        else:
            sigmas, rhos = affinity.smooth_knn_dist(knn_dist, knn_dist.shape[1])
            weights = affinity.membership_weights(knn_idx, knn_dist, sigmas, rhos)
            directed = _csr_from_knn(knn_idx, weights, n)
        if self.symmetrization_ == "umap":
            P = affinity.fuzzy_union(directed)
        elif self.symmetrization_ == "tsne":
            P = (directed + directed.T.tocsr()) * 0.5
        else:
            P = directed
        P = sp.coo_matrix(P, dtype=np.float32)
        keep = (P.row != P.col) & (P.data > 0)  # duplicates can put a point among its own
        P = sp.csr_matrix((P.data[keep], (P.row[keep], P.col[keep])), shape=(n, n))
        P.sum_duplicates()
        P.sort_indices()
        if self.normalized and P.nnz:
            P.data /= np.float32(P.data.sum(dtype=np.float64))
        return P

    def _initialize(self, X, seed) -> np.ndarray:
        from unimap import initialization as ini

        n, dim = X.shape[0], self.n_components
        init = self.init_
        if not isinstance(init, str):
            self.init_info_ = {"method": "array", "fallback": None}
            return ini.array_init(init, n, dim)
        if init == "random":
            self.init_info_ = {"method": "random", "fallback": None}
            if self.normalized:
                return ini.random_init(n, dim, seed, _TSNE_INIT_STD, "normal")
            return ini.random_init(n, dim, seed)
        if init == "pca":
            if self.metric == "precomputed":
                raise ValueError("init='pca' needs feature vectors, not distances; use "
                                 "'spectral' or 'random'")
            self.init_info_ = {"method": "pca", "fallback": None}
            Y = ini.pca_init(X.toarray() if sp.issparse(X) else X, dim, seed)
        else:
            data = None if (self.metric == "precomputed" or sp.issparse(X)) else X
            Y, self.init_info_ = ini.spectral_init(self.graph_, dim, seed, data)
            if self.init_info_["fallback"] is not None and not self.normalized:
                return Y  # random fallback keeps its own scale
        if self.normalized:
            return ini.rescale_to_std(Y, _TSNE_INIT_STD)
        return ini.rescale_to_box(Y, 10.0)

    def _edge_arrays(self, order: np.ndarray | None = None):
        """CSR arrays of P (and of Pᵀ when symmetric attraction needs it) and the factor on
        the row attraction; with ``order``, of ``P[order][:, order]`` (points relabelled)."""
        P = self.graph_
        if order is not None:
            P = P[order][:, order]
            P.sort_indices()
        indptr = P.indptr.astype(np.int64)
        indices = P.indices.astype(np.int32)
        data = P.data.astype(np.float32)
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
        if not self.symmetric_attraction_:
            return (indptr, indices, data), empty, 1.0
        if self.symmetrization_ != "none":
            return (indptr, indices, data), empty, 2.0  # Pᵀ = P: one pass, twice the pull
        T = P.T.tocsr()
        T.sort_indices()
        transposed = (T.indptr.astype(np.int64), T.indices.astype(np.int32),
                      T.data.astype(np.float32))
        return (indptr, indices, data), transposed, 1.0

    def _optimize_unnormalized(self, init, seed) -> np.ndarray:
        from unimap._kernels.gdr import umap_epoch

        (indptr, indices, data), (t_indptr, t_indices, t_data), scale = self._edge_arrays()
        f32 = np.float32
        Y = np.array(init, dtype=np.float32, order="C")
        Y_next = np.empty_like(Y)
        F = np.empty_like(Y)
        V = np.zeros_like(Y)
        rep_weight = f32(self.repulsion_strength * self.mean_weight_ * _REPULSION_RATE
                         / self.n_negatives_)
        a, b = f32(self.a_), f32(self.b_)
        n_epochs = self.n_epochs_
        threads = _adaptive_threads()
        for epoch in range(n_epochs):
            threads.start_epoch(epoch)
            lr = f32(self.learning_rate_ * (1.0 - epoch / n_epochs))
            umap_epoch(Y, Y_next, F, V, indptr, indices, data, t_indptr, t_indices, t_data,
                       f32(scale), self.n_negatives_, rep_weight, a, b, f32(_EPS), f32(_CLIP),
                       lr, f32(self.momentum_), np.uint64(seed), np.int64(epoch), False)
            threads.end_epoch()
            Y, Y_next = Y_next, Y
        return Y

    def _optimize_normalized(self, init, seed) -> np.ndarray:
        from unimap._kernels.gdr import tsne_forces
        from unimap._kernels.tsne_gd import gradient_step

        # Relabel the points along a Z-order curve of their initial positions: a row's
        # neighbours then lie close in memory, and the near field, whose cost is the random
        # reads of the neighbours' positions, reads them from cache. MNIST-70k (perplexity 30,
        # 9.1M edges): optimization 18.9 -> 14.6 s. The order depends on the initialization
        # only, so the result still does not depend on the thread count.
        order = morton_order(init, n_dims=min(3, init.shape[1]), bits=16)
        (indptr, indices, data), (t_indptr, t_indices, t_data), scale = self._edge_arrays(order)
        f32 = np.float32
        Y = np.array(init[order], dtype=np.float32, order="C")
        A = np.empty_like(Y)
        R = np.empty_like(Y)
        update = np.zeros_like(Y)
        gains = np.ones_like(Y)
        z_rows = np.empty(Y.shape[0], dtype=np.float64)
        marks = _neighbour_marks(Y.shape[0])
        inv_z = np.empty(1, dtype=np.float64)
        a, b = f32(self.a_), f32(self.b_)
        gamma = float(self.repulsion_strength)
        n_early = self.early_exaggeration_iter_
        early_momentum = min(_INITIAL_MOMENTUM, self.momentum_)
        threads = _adaptive_threads()
        z = None
        n_epochs = self.n_epochs_
        # Sampled forces are noisy: a constant step keeps the points jittering at the scale
        # of the fine structure; decaying it (Robbins-Monro) lets them settle (see Notes).
        decay_start = max(n_early, n_epochs - int(round(n_epochs * _TSNE_DECAY_FRACTION)))
        negatives = self.n_negatives_
        early_negatives = self._early_negatives()
        for epoch in range(n_epochs):
            threads.start_epoch(epoch)
            early = epoch < n_early
            rate = self.early_learning_rate_ if early else self.learning_rate_
            if epoch >= decay_start:
                rate *= 1.0 - (epoch - decay_start) / (n_epochs - decay_start)
            tsne_forces(Y, A, R, z_rows, marks, indptr, indices, data, t_indptr, t_indices,
                        t_data, f32(scale), early_negatives if early else negatives, a, b,
                        np.uint64(seed), np.int64(epoch), False, self.shared_negatives_)
            z = float(z_rows.sum())
            inv_z[0] = gamma / z
            gradient_step(Y, A, R, inv_z, self.early_exaggeration if early else 1.0, update,
                          gains, early_momentum if early else self.momentum_,
                          rate, _MIN_GAIN, -1.0, _MAX_STEP_NORM)
            threads.end_epoch()
            if epoch % _CENTER_EVERY == 0:
                Y -= Y.mean(axis=0)
        self.z_ = z
        embedding = np.empty_like(Y)
        embedding[order] = Y - Y.mean(axis=0)
        return embedding

    # -- checks ------------------------------------------------------------------------------
    def _check_params(self) -> None:
        check_int(self.n_neighbors, "n_neighbors", 2)
        check_int(self.n_components, "n_components", 1)
        check_choice(self.metric, "metric", METRICS)
        check_bool(self.normalized, "normalized")
        if self.symmetric_attraction is not None:
            check_bool(self.symmetric_attraction, "symmetric_attraction")
        if self.symmetrization is not None:
            check_choice(self.symmetrization, "symmetrization", _SYMMETRIZATIONS)
        check_float(self.perplexity, "perplexity", 0.0, low_inclusive=False)
        check_float(self.spread, "spread", 0.0, low_inclusive=False)
        check_float(self.min_dist, "min_dist", 0.0, self.spread)
        for name in ("a", "b"):
            if getattr(self, name) is not None:
                check_float(getattr(self, name), name, 0.0, low_inclusive=False)
        if (self.a is None) != (self.b is None):
            raise ValueError("a and b must be given together (or both left as None)")
        if self.n_negatives is not None:
            check_float(self.n_negatives, "n_negatives", 0.0, low_inclusive=False)
        if self.shared_negatives is not None:
            check_bool(self.shared_negatives, "shared_negatives")
            if self.shared_negatives and not self.normalized:
                raise ValueError(
                    "shared_negatives=True needs normalized=True: the unnormalized mode draws "
                    "its negative samples per edge"
                )
        if self.n_epochs is not None:
            check_int(self.n_epochs, "n_epochs", 1)
        if self.learning_rate is not None:
            check_float(self.learning_rate, "learning_rate", 0.0, low_inclusive=False)
        check_float(self.early_exaggeration, "early_exaggeration", 0.0, low_inclusive=False)
        if self.early_exaggeration_iter is not None:
            check_int(self.early_exaggeration_iter, "early_exaggeration_iter", 0)
        if self.momentum is not None:
            check_float(self.momentum, "momentum", 0.0, 1.0, high_inclusive=False)
        check_float(self.repulsion_strength, "repulsion_strength", 0.0)
        if self.init is not None and isinstance(self.init, str):
            check_choice(self.init, "init", _INITS)
        check_choice(self.knn_method, "knn_method", METHODS)
        check_bool(self.verbose, "verbose")
        resolve_n_jobs(self.n_jobs)

    def _log(self, message: str) -> None:
        if self.verbose:
            print(f"[unimap.GDR] {message}", flush=True)


def _adaptive_threads():
    """Epochs on all threads of the current setting, or on one while that is faster (a busy
    machine stalls the per-epoch barrier; the result does not depend on the thread count)."""
    import numba

    from unimap.optimize import AdaptiveThreads

    return AdaptiveThreads(numba.get_num_threads())


def _neighbour_marks(n: int) -> np.ndarray:
    """Zeroed neighbour marks for :func:`unimap._kernels.gdr.tsne_forces`, one row of n bytes
    per block of rows: 4 blocks per thread balance the load, at most 64 MiB unless that leaves
    fewer blocks than threads. The result does not depend on the number of blocks."""
    import numba

    threads = numba.get_num_threads()
    n_blocks = max(1, min(n, 4 * threads, max(threads, _MARKS_BYTES // n)))
    return np.zeros((n_blocks, n), dtype=np.uint8)


def _csr_from_knn(indices: np.ndarray, values: np.ndarray, n: int) -> sp.csr_matrix:
    """Directed affinities ``values[i, c]`` on the edges ``(i, indices[i, c])``."""
    m, k = indices.shape
    rows = np.repeat(np.arange(m, dtype=np.int64), k)
    directed = sp.csr_matrix(
        (np.asarray(values, dtype=np.float64).ravel(), (rows, np.asarray(indices).ravel())),
        shape=(m, n),
    )
    directed.sum_duplicates()
    return directed

"""t-SNE (van der Maaten & Hinton 2008) as a declaration of unimap's shared parts.

neighbours (:mod:`unimap.neighbors.graph`, ⌊3·perplexity⌋) → perplexity-calibrated, symmetrised P
(:mod:`unimap.affinity.perplexity`) → initialization (:mod:`unimap.initialization`, std 1e-4) →
Student-t kernel with ``dof`` degrees of freedom, repulsion exact, Barnes-Hut or FFT
(:mod:`unimap.optimizers.gradient_descent.forces`) → full-batch gradient descent with exaggeration
phases, momentum and gains (:mod:`unimap.optimizers.gradient_descent.descent`); new points by
:func:`unimap.placement.perplexity_placement`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from unimap import placement
from unimap.methods._base import NeighborEmbedding
from unimap.methods.memory_plan import MemoryProfile
from unimap.methods.parameters import (
    PIPELINE,
    document_shared,
    shared_constraints,
)
from unimap.methods.plan import TSNEPlan
from unimap.methods.registry import built_in
from unimap.runtime.guards import TSNE_CAUSES
from unimap.runtime.params import (
    MAX_ITERATIONS,
    AnyOf,
    ArrayLike,
    Dict,
    Integer,
    IsCallable,
    Optional,
    Options,
    Real,
)
from unimap.runtime.threads import adaptive_threads
from unimap.runtime.user_warnings import warn_user
from unimap.runtime.validation import check_float, check_int

if TYPE_CHECKING:
    from unimap.affinity.perplexity import PerplexityAffinity

__all__ = ["TSNE"]

# method="auto" switches from Barnes-Hut to FFT interpolation in 2-D at this many points: the
# FFT grid costs the same whatever n, Barnes-Hut grows as n log n (the crossover measured on
# MNIST subsets: benchmarks/results/architecture_notes.md, "t-SNE: Barnes-Hut or FFT").
FFT_MIN_SAMPLES = 10_000


@document_shared
class TSNE(NeighborEmbedding):
    """t-distributed Stochastic Neighbor Embedding.

    Parameters
    ----------
    {shared: n_components}
        With ``method="fft"`` 1 or 2, with ``"barnes_hut"`` 2 or 3, with ``"exact"`` any.
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
        scikit-learn) and ``max(n / exaggeration / 4, 50)`` after it, openTSNE's rate with
        scikit-learn's floor: a lower KL than the early-exaggeration rate kept throughout,
        at the same 10-NN accuracy (measured: benchmarks/results/library_notes.md,
        "unimap/methods/tsne.py"). The momentum and the gains start afresh after early
        exaggeration, as in scikit-learn (benchmarks/results/tsne_small.md).
    max_iter : int, default=750
        Total iterations, early exaggeration included (scikit-learn's meaning; its default
        is 1000). openTSNE's ``n_iter=N`` counts only the iterations after early
        exaggeration: it is ``max_iter=early_exaggeration_iter + N`` here.
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
    angle : float, default=0.5
        Barnes-Hut opening angle θ (0: exact sums through the tree); scikit-learn's name,
        openTSNE's ``theta``.
    n_iter_without_progress : int, optional
        Stop after this many iterations past early exaggeration without a lower KL
        divergence, checked every 50 iterations (scikit-learn's rule; its default is 300).
        Default None: off, so that a fit runs ``max_iter`` iterations and costs no KL
        evaluations it does not report.
    min_grad_norm : float, optional
        Stop when the norm of the whole gradient falls below this, checked every 50
        iterations (scikit-learn's rule; its default is 1e-7). Default None: off.
    n_iter, theta : deprecated
        unimap's earlier names of ``max_iter`` and ``angle``: still taken, with a
        ``FutureWarning``, and removed in a later release. ``n_iter`` counted every
        iteration, as ``max_iter`` does.
    n_interpolation_points, min_num_intervals, ints_in_interval : int, int, float
        FFT grid: nodes per interval (3), minimum intervals per dimension (50), embedding
        units per interval (1.0); as in FIt-SNE / openTSNE.
    {shared: metric}
    metric_params : dict, optional
        The metric's parameters (scikit-learn's name): ``{"p": 3}`` for minkowski.
    init : {"pca", "random", "spectral"} or ndarray of shape (n_samples, n_components), \
default="pca"
        Start; ``"pca"``, ``"spectral"`` (of P) and ``"random"`` are scaled to standard
        deviation 1e-4; an array is used as given. With ``metric="precomputed"``, ``"pca"``
        becomes ``"spectral"`` with a warning (``init_``), as in openTSNE.
    dof : float, default=1.0
        Degrees of freedom α of the kernel ``(1 + d²/α)^-α``; 1 is t-SNE's Cauchy kernel,
        smaller values give heavier tails and finer clusters (Kobak et al. 2019).
    {shared: random_state, n_jobs, knn_method, precomputed_knn}
        Here ``n_neighbors_`` is ⌊3·perplexity⌋ + 1.
    callback : callable ``(iteration, kl_divergence, embedding) -> bool``, optional
        Called every ``callback_every`` iterations; returning True stops the optimization.
    callback_every : int, default=50
    {shared: max_memory, verbose}
        With it, KL(P‖Q) every 50 iterations. During early exaggeration the KL is marked
        ``(early exaggeration x12)``: it is the KL of the plain P, which stays high while
        the gradient pulls with the exaggerated one and drops when that ends.
    {shared: device}
        On the GPU the optimizer sums the repulsion exactly over all pairs (2-D, ``dof=1``,
        up to 200,000 points, ``method`` "auto" or "exact"; ``method_`` is then ``"exact"``);
        otherwise it runs on the CPU, with a warning.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components), float32
    kl_divergence_ : float
        KL(P‖Q) of the final embedding (Z as estimated by ``method_``).
    n_iter_ : int
        Iterations run (fewer than ``max_iter`` when the callback or a stopping rule
        stopped them).
    graph_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        P, the symmetric joint probabilities, summing to 1 (also as ``P_``).
    sigmas_ : ndarray of shape (n_samples,)
        Gaussian bandwidths of the conditional probabilities.
    perplexity_ : float
    learning_rate_ : float
        The learning rate after early exaggeration (``"auto"`` resolved, as scikit-learn's).
    early_learning_rate_ : float
        The learning rate during early exaggeration.
    method_ : str
    n_neighbors_ : int
        Columns of the kNN graph, the point itself included (⌊3·perplexity_⌋ + 1).
    knn_indices_, knn_dists_ : ndarrays of shape (n_samples, ``n_neighbors_``)
    knn_method_ : str
    init_, init_info_ : the initialization used, and how
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

    Examples
    --------
    >>> import unimap
    >>> from unimap import metrics
    >>> from unimap.datasets import load_digits
    >>> X, y = load_digits()
    >>> tsne = unimap.TSNE(random_state=0).fit(X[:1000])
    >>> tsne.embedding_.shape, tsne.method_, tsne.n_iter_
    ((1000, 2), 'barnes_hut', 750)
    >>> bool(tsne.kl_divergence_ > 0)
    True
    >>> tsne.transform(X[1000:1010]).shape
    (10, 2)
    >>> bool(metrics.knn_accuracy(tsne.embedding_, y[:1000]) > 0.9)
    True
    """

    _scale = "std"
    _METRIC_KWDS = "metric_params"  # scikit-learn's name
    _STEP_UNIT = "iteration"
    declaration = built_in("TSNE")
    _parameter_constraints = {
        **shared_constraints(*PIPELINE),
        "metric_params": Optional(Dict()),
        "perplexity": Real(0.0, low_inclusive=False),
        "early_exaggeration": Real(0.0, low_inclusive=False),
        "early_exaggeration_iter": Integer(0, MAX_ITERATIONS),
        "exaggeration": Real(0.0, low_inclusive=False),
        "learning_rate": AnyOf(Options("auto"), Real(0.0, low_inclusive=False)),
        "max_iter": Integer(1, MAX_ITERATIONS),
        "n_iter": Optional(Integer(1, MAX_ITERATIONS)),
        "n_iter_without_progress": Optional(Integer(1, MAX_ITERATIONS)),
        "min_grad_norm": Optional(Real(0.0)),
        "initial_momentum": Real(0.0, 1.0, high_inclusive=False),
        "final_momentum": Real(0.0, 1.0, high_inclusive=False),
        "min_gain": Real(0.0),
        "max_grad_norm": Optional(Real(0.0, low_inclusive=False)),
        "max_step_norm": Optional(Real(0.0, low_inclusive=False)),
        "method": Options("auto", "exact", "barnes_hut", "fft"),
        "angle": Real(0.0),
        "theta": Optional(Real(0.0)),
        "n_interpolation_points": Integer(1, 64),  # p² per box
        "min_num_intervals": Integer(1, 100_000),
        "ints_in_interval": Real(0.0, low_inclusive=False),
        "init": AnyOf(Options("pca", "random", "spectral"), ArrayLike()),
        "dof": Real(0.0, low_inclusive=False),
        "callback": Optional(IsCallable()),
        "callback_every": Integer(1),
    }


    def __init__(
        self,
        n_components: int = 2,
        *,
        perplexity: float = 30.0,
        early_exaggeration: float = 12.0,
        early_exaggeration_iter: int = 250,
        exaggeration: float = 1.0,
        learning_rate: Any = "auto",
        max_iter: int = 750,
        initial_momentum: float = 0.5,
        final_momentum: float = 0.8,
        min_gain: float = 0.01,
        max_grad_norm: float | None = None,
        max_step_norm: float | None = 5.0,
        method: str = "auto",
        angle: float = 0.5,
        n_interpolation_points: int = 3,
        min_num_intervals: int = 50,
        ints_in_interval: float = 1.0,
        metric: str = "euclidean",
        init: Any = "pca",
        dof: float = 1.0,
        random_state: Any = None,
        n_jobs: int = -1,
        knn_method: str = "auto",
        precomputed_knn: tuple | None = None,
        max_memory: Any = "available",
        callback: Any = None,
        callback_every: int = 50,
        verbose: bool | int = False,
        device: str = "auto",
        metric_params: dict | None = None,
        n_iter_without_progress: int | None = None,
        min_grad_norm: float | None = None,
        n_iter: int | None = None,
        theta: float | None = None,
    ) -> None:
        self.n_components = n_components
        self.perplexity = perplexity
        self.early_exaggeration = early_exaggeration
        self.early_exaggeration_iter = early_exaggeration_iter
        self.exaggeration = exaggeration
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.initial_momentum = initial_momentum
        self.final_momentum = final_momentum
        self.min_gain = min_gain
        self.max_grad_norm = max_grad_norm
        self.max_step_norm = max_step_norm
        self.method = method
        self.angle = angle
        self.n_interpolation_points = n_interpolation_points
        self.min_num_intervals = min_num_intervals
        self.ints_in_interval = ints_in_interval
        self.metric = metric
        self.init = init
        self.dof = dof
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.knn_method = knn_method
        self.precomputed_knn = precomputed_knn
        self.max_memory = max_memory
        self.callback = callback
        self.callback_every = callback_every
        self.verbose = verbose
        self.device = device
        self.metric_params = metric_params
        self.n_iter_without_progress = n_iter_without_progress
        self.min_grad_norm = min_grad_norm
        self.n_iter = n_iter
        self.theta = theta

    @property
    def P_(self):
        """P, the symmetric joint probabilities (``graph_``)."""
        return self.graph_

    def _resolve(self, n: int) -> TSNEPlan:
        from unimap.affinity.perplexity import effective_perplexity, perplexity_neighbors

        perplexity = effective_perplexity(self.perplexity, n)
        init = self.init
        if isinstance(init, str) and init == "pca" and self.metric == "precomputed":
            # the default start needs feature vectors; openTSNE makes the same switch
            warn_user("init='pca' needs feature vectors, not distances; using "
                      "init='spectral' (recorded in init_)")
            init = "spectral"
        return TSNEPlan(method_=self._resolve_method(n), perplexity_=perplexity,
                        **self._learning_rates(n),
                        n_neighbors_=perplexity_neighbors(perplexity, n - 1) + 1,
                        n_epochs_=self._max_iter, init_=init)

    def _check_param_relations(self) -> None:
        for old, new in (("n_iter", "max_iter"), ("theta", "angle")):
            if getattr(self, old) is not None:
                _warn_renamed(old, new)
        self._resolve_method(FFT_MIN_SAMPLES)  # method against n_components, before the fit

    @property
    def _max_iter(self) -> int:
        return self.max_iter if self.n_iter is None else self.n_iter

    @property
    def _angle(self) -> float:
        return self.angle if self.theta is None else self.theta

    def _memory_profile(self, fit, n: int) -> MemoryProfile:
        from unimap.optimizers.gradient_descent.forces import tsne_forces_memory

        grid = fit.method_ == "fft" and self.n_components == 2
        return MemoryProfile(
            tsne_forces_memory(n, n * fit.n_neighbors_, self.n_components, fit.method_),
            "perplexity", "method='barnes_hut' (no FFT grid)" if grid else "")

    def _affinity(self, fit) -> PerplexityAffinity:
        from unimap.affinity.perplexity import PerplexityAffinity

        return PerplexityAffinity(fit.perplexity_)

    def _affinities(self, fit, knn_indices, knn_dists):
        affinity = self._affinity(fit).fit(knn_indices, knn_dists,
                                           device=fit.devices_["affinities"])
        fit.sigmas_ = affinity.sigmas_
        return affinity.P_

    def _optimize(self, fit, init, seed):
        from unimap.optimizers.gradient_descent.descent import Phase, gradient_descent
        from unimap.optimizers.gradient_descent.forces import TSNEForces
        from unimap.optimizers.gradient_descent.stopping import StoppingRule

        n_iter = self._max_iter
        n_early = min(self.early_exaggeration_iter, n_iter)
        phases = [
            Phase(n_early, self.early_exaggeration, self.initial_momentum,
                  fit.early_learning_rate_),
            Phase(n_iter - n_early, self.exaggeration, self.final_momentum,
                  fit.learning_rate_),
        ]
        stopping = StoppingRule.of(self.n_iter_without_progress, self.min_grad_norm, n_early)
        if fit.devices_["optimize"] == "cuda":
            return self._optimize_on_gpu(fit, init, phases, stopping)
        forces = TSNEForces(fit.graph_, self._repulsion_params(fit.method_), init.shape[0],
                            init.shape[1])
        Y, fit.n_iter_ = gradient_descent(
            init.astype(np.float64), forces, phases, self.min_gain, self.max_grad_norm,
            self.max_step_norm, callback=self.callback, callback_every=self.callback_every,
            threads=adaptive_threads(init.shape[0]), log=self._log if self.verbose else None,
            guard=self._epoch_guard(fit, TSNE_CAUSES), stopping=stopping)
        fit.kl_divergence_ = forces.loss(Y)
        return Y.astype(np.float32)

    def _optimize_on_gpu(self, fit, init, phases, stopping):
        """The exact gradient on the GPU (:mod:`unimap.optimizers.gradient_descent.tsne_cuda`):
        ``method_`` becomes ``"exact"``, and ``kl_divergence_`` has the exact Z."""
        from unimap.optimizers.gradient_descent.tsne_cuda import gradient_descent_cuda

        fit.method_ = "exact"
        Y, fit.n_iter_, fit.kl_divergence_ = gradient_descent_cuda(
            init, fit.graph_, phases, self.min_gain, self.max_grad_norm, self.max_step_norm,
            guard=self._epoch_guard(fit, TSNE_CAUSES), stopping=stopping,
            callback=self.callback, callback_every=self.callback_every,
            log=self._log if self.verbose else None)
        return Y.astype(np.float32)

    def _optimizer_on_gpu(self, fit, n_samples) -> bool:
        from unimap.optimizers.gradient_descent.tsne_cuda import supports

        # an approximation asked for by name stays the CPU's; "auto" becomes exact sums
        return self.method in ("auto", "exact") and supports(n_samples, self.n_components,
                                                             float(self.dof))

    def _variant(self) -> str:
        return "" if self.method in ("auto", "exact") else f"(method={self.method!r})"

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
        self._check_fitted()  # before the option checks: an unfitted model says so first
        check_float(perplexity, "perplexity", 0.0, low_inclusive=False)
        check_int(n_iter, "n_iter", 0)
        check_float(learning_rate, "learning_rate", 0.0, low_inclusive=False)
        check_float(exaggeration, "exaggeration", 0.0, low_inclusive=False)
        check_float(momentum, "momentum", 0.0, 1.0, high_inclusive=False)
        if max_grad_norm is not None:
            check_float(max_grad_norm, "max_grad_norm", 0.0, low_inclusive=False)
        return self._transform(X, perplexity=perplexity, n_iter=n_iter,
                               learning_rate=learning_rate, exaggeration=exaggeration,
                               momentum=momentum, max_grad_norm=max_grad_norm)

    def _place(self, X, **options):
        return placement.perplexity_placement(
            self._index, X, self.embedding_, self._repulsion_params(self._placement_method),
            options["perplexity"], options["n_iter"], options["learning_rate"],
            options["exaggeration"], options["momentum"], options["max_grad_norm"])

    @property
    def _placement_method(self) -> str:
        """How ``transform`` sums the repulsion: ``method_``, except that a GPU fit's exact
        sums (``method="auto"``) give way to what ``"auto"`` picks on the CPU, a tree."""
        if self.method == "auto" and self.method_ == "exact":
            return self._resolve_method(self.embedding_.shape[0])
        return self.method_

    def _repulsion_params(self, method: str):
        from unimap.optimizers.gradient_descent.forces import RepulsionParams

        return RepulsionParams(method, float(self._angle), float(self.dof),
                               int(self.n_interpolation_points), int(self.min_num_intervals),
                               float(self.ints_in_interval))

    def _learning_rates(self, n: int) -> dict[str, float]:
        """``early_learning_rate_`` and ``learning_rate_`` (see ``learning_rate``)."""
        if self.learning_rate != "auto":
            rate = float(self.learning_rate)
            return {"early_learning_rate_": rate, "learning_rate_": rate}
        return {"early_learning_rate_": max(n / self.early_exaggeration / 4.0, 50.0),
                "learning_rate_": max(n / self.exaggeration / 4.0, 50.0)}

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


def _warn_renamed(old: str, new: str) -> None:
    warn_user(f"TSNE's {old} is deprecated and will be removed: use {new}, which means the "
              f"same (openTSNE's n_iter=N, which counts only the iterations after early "
              f"exaggeration, is max_iter=early_exaggeration_iter + N)" if old == "n_iter"
              else f"TSNE's {old} is deprecated and will be removed: use {new} "
              "(scikit-learn's name; the same opening angle)", FutureWarning)

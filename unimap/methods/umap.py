"""UMAP (McInnes, Healy & Melville 2018) as a declaration of unimap's shared parts.

neighbours (:mod:`unimap.neighbors`) → fuzzy simplicial set (:mod:`unimap.affinity.fuzzy`) →
initialization (:mod:`unimap.initialization`, [0, 10] box) → kernel ``1/(1 + a d^(2b))``
(:mod:`unimap.lowdim.ab_fit`) → edge-sampled SGD (:mod:`unimap.optimizers.umap_sgd`); new points by
:func:`unimap.placement.fuzzy_placement`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from unimap.methods._base import NeighborEmbedding
from unimap.methods._umap_family import UMAPFamily
from unimap.methods.memory_plan import MemoryProfile
from unimap.methods.parameters import (
    PIPELINE,
    SUPERVISION,
    document_shared,
    shared_constraints,
)
from unimap.methods.plan import UMAPPlan
from unimap.methods.registry import built_in
from unimap.methods.umap_defaults import (
    DENSMAP_EXTRA_EPOCHS,
    capped_n_neighbors,
    check_kernel_params,
    check_output_metric,
    umap_epochs,
)
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
    from unimap.affinity.fuzzy import FuzzyAffinity

__all__ = ["UMAP"]

@document_shared
class UMAP(UMAPFamily, NeighborEmbedding):
    """Uniform Manifold Approximation and Projection.

    The optimizer is unimap's edge-coloured threaded SGD (see
    :mod:`unimap.optimizers.umap_sgd.epochs_numba`): it uses all cores and the same ``random_state``
    gives bitwise the same embedding for any ``n_jobs``; there is no separate "reproducible mode" to
    remember. From 50,000 points on (2-D, on the CPU;
    :data:`unimap.optimizers.sampling.POOLED_NEGATIVES_MIN_ROWS`), each block of 512 edges draws
    its negative samples from a pool of 128 points drawn afresh every epoch, instead of each sample
    from all points as umap-learn does: the SGD runs faster at the same 10-NN accuracy and
    trustworthiness, and more so on larger data (measured: ``benchmarks/results/scale_umap.md``).

    Parameters
    ----------
    n_neighbors : int, default=15
        Size of the local neighbourhood (the point itself included), in ``[2, n_samples]``.
    {shared: n_components, metric}
        The general and user-defined metrics are searched exactly up to 4,096 points and by
        pynndescent beyond (``pip install 'unimap[nndescent]'``). A model with a
        user-defined metric pickles but cannot be ``save``-d.
    metric_kwds : dict, optional
        The metric's parameters: ``{"p": 3}`` for minkowski; a user-defined metric's extra
        arguments (numbers or arrays), passed after the two rows in the dict's order.
    n_epochs : int, optional
        SGD epochs. Default: 500 for up to 10,000 points, else 200; 200 more with
        ``densmap=True`` (umap-learn's defaults).
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
    {shared: target_metric, target_weight, target_n_neighbors, disconnection_distance, unique}
    densmap : bool, default=False
        densMAP (Narayan, Berger & Cho 2021; umap-learn's ``densmap``): the last
        ``dens_frac`` of the epochs also pull each point's local radius in the embedding
        towards its radius in the data, so that dense and sparse regions keep their relative
        spread (:mod:`unimap.optimizers.umap_sgd.densmap_numba`). CPU only.
    dens_lambda : float, default=2.0
        Weight of the density term.
    dens_frac : float in [0, 1], default=0.3
        Share of the epochs, at the end, that carry the density term.
    dens_var_shift : float, default=0.1
        Added to the variance of the embedding's log radii (keeps the term finite).
    output_metric : {"euclidean", "haversine", "hyperboloid"}, default="euclidean"
        The space of the embedding (umap-learn's parameter;
        :mod:`unimap.optimizers.umap_sgd.output_metric_numba`): ``"haversine"`` lays it out on the
        sphere, each row ``(θ, φ)`` in radians (``x = sin θ cos φ``, ``y = sin θ sin φ``,
        ``z = cos θ``; ``n_components=2``); ``"hyperboloid"`` in hyperbolic space, each row
        the spatial coordinates of a point of the hyperboloid model (its first coordinate
        ``sqrt(1 + |x|²)``). CPU only; without densMAP, ``output_dens`` and
        ``inverse_transform``, which assume a euclidean embedding.
    output_metric_kwds : dict, optional
        umap-learn's parameters of the output metric; these two take none.
    output_dens : bool, default=False
        Also compute the log local radii of the data and of the embedding (``rad_orig_``,
        ``rad_emb_``); ``fit_transform`` then returns ``(embedding, rad_orig, rad_emb)`` as
        umap-learn's does.
    {shared: random_state, n_jobs, knn_method, precomputed_knn, max_memory, verbose, device}
    transform_mode : {"embedding", "graph"}, default="embedding"
        What ``transform`` returns (umap-learn's parameter): the new points placed in the
        embedding, or their fuzzy membership graph to the training points, a
        ``scipy.sparse.csr_matrix`` of shape (n_new, n_train) (their memberships to their
        ``n_neighbors_`` nearest training points, calibrated as ``transform`` calibrates them
        before placing; with ``unique=True`` the columns are the distinct training rows, as
        in ``graph_``), to place points by hand or to propagate labels.
    force_approximation_algorithm : bool, default=False
        umap-learn's: with ``knn_method="auto"``, search approximately even below the size
        where the exact search is used (the approximate search ``"auto"`` takes on large
        data); ``knn_method_`` records it. With another ``knn_method``, no effect.
    transform_seed : int or None, default=None
        umap-learn's: seeds the placement of new points (``transform``) instead of the stream
        that ``random_state`` gives it. umap-learn's default is 42; None keeps the fit's.
    tqdm_kwds : dict, optional
        umap-learn's options of its progress bars: ``{"disable": True}`` hides unimap's bars
        under ``verbose=True`` (the log lines stay); other keys have no effect.
    low_memory, angular_rp_forest : bool, default=True, False
        umap-learn's options of pynndescent's index, accepted for its code without effect:
        unimap's searches keep no such index (``knn_method`` chooses the search, ``max_memory``
        bounds the memory).
    transform_queue_size : float, default=4.0
        umap-learn's breadth of pynndescent's search of new points, accepted without effect:
        ``transform`` searches the training points as the fit's search did.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components), float32
    graph_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric fuzzy graph (before pruning for the epoch count).
    knn_indices_, knn_dists_ : ndarrays of shape (n_samples, ``n_neighbors_``)
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
    init_ : str or ndarray
        The initialization used (``init``).
    timings_ : dict
        Seconds spent in each phase: ``neighbors``, ``affinities``, ``init``, ``optimize``,
        ``total``.
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
    >>> model = unimap.UMAP(random_state=0).fit(X[:1000])
    >>> model.embedding_.shape, model.embedding_.dtype
    ((1000, 2), dtype('float32'))
    >>> sorted(model.timings_)
    ['affinities', 'init', 'neighbors', 'optimize', 'total']
    >>> model.transform(X[1000:1010]).shape  # new points, the map stays fixed
    (10, 2)
    >>> bool(metrics.knn_accuracy(model.embedding_, y[:1000]) > 0.9)
    True

    The same seed gives the same embedding, for any number of threads:

    >>> import numpy as np
    >>> again = unimap.UMAP(random_state=0, n_jobs=1).fit_transform(X[:1000])
    >>> bool(np.array_equal(again, model.embedding_))
    True
    """

    declaration = built_in("UMAP")
    _parameter_constraints = {
        **shared_constraints(*PIPELINE),
        "metric_kwds": Optional(Dict()),
        "n_neighbors": Integer(2),
        "n_epochs": Optional(Integer(1, MAX_ITERATIONS)),
        "learning_rate": Real(0.0, low_inclusive=False),
        "init": AnyOf(Options("spectral", "pca", "random"), ArrayLike()),
        "min_dist": Real(0.0),
        "spread": Real(0.0, low_inclusive=False),
        "set_op_mix_ratio": Real(0.0, 1.0),
        "local_connectivity": Real(0.0),
        "repulsion_strength": Real(0.0),
        "negative_sample_rate": Real(0.0, low_inclusive=False),
        "a": Optional(Real(0.0, low_inclusive=False)),
        "b": Optional(Real(0.0, low_inclusive=False)),
        **shared_constraints(*SUPERVISION, "disconnection_distance", "unique"),
        "densmap": Boolean(),
        "dens_lambda": Real(0.0),
        "dens_frac": Real(0.0, 1.0),
        "dens_var_shift": Real(0.0),
        "output_dens": Boolean(),
        "output_metric": Options("euclidean", "l2", "haversine", "hyperboloid"),
        "output_metric_kwds": Optional(Dict()),
        "transform_mode": Options("embedding", "graph"),
        "force_approximation_algorithm": Boolean(),
        "transform_seed": Optional(Integer(0)),
        "tqdm_kwds": Optional(Dict()),
        "low_memory": Boolean(),
        "angular_rp_forest": Boolean(),
        "transform_queue_size": Real(0.0, low_inclusive=False),
    }

    def __init__(
        self,
        n_neighbors: int = 15,
        *,
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
        max_memory: Any = "available",
        verbose: bool = False,
        device: str = "auto",
        metric_kwds: dict | None = None,
        target_metric: str = "categorical",
        target_weight: float = 0.5,
        target_n_neighbors: int = -1,
        disconnection_distance: float | None = None,
        unique: bool = False,
        densmap: bool = False,
        dens_lambda: float = 2.0,
        dens_frac: float = 0.3,
        dens_var_shift: float = 0.1,
        output_dens: bool = False,
        output_metric: str = "euclidean",
        output_metric_kwds: dict | None = None,
        transform_mode: str = "embedding",
        force_approximation_algorithm: bool = False,
        transform_seed: int | None = None,
        tqdm_kwds: dict | None = None,
        low_memory: bool = True,
        angular_rp_forest: bool = False,
        transform_queue_size: float = 4.0,
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
        self.max_memory = max_memory
        self.verbose = verbose
        self.device = device
        self.metric_kwds = metric_kwds
        self.target_metric = target_metric
        self.target_weight = target_weight
        self.target_n_neighbors = target_n_neighbors
        self.disconnection_distance = disconnection_distance
        self.unique = unique
        self.densmap = densmap
        self.dens_lambda = dens_lambda
        self.dens_frac = dens_frac
        self.dens_var_shift = dens_var_shift
        self.output_dens = output_dens
        self.output_metric = output_metric
        self.output_metric_kwds = output_metric_kwds
        self.transform_mode = transform_mode
        self.force_approximation_algorithm = force_approximation_algorithm
        self.transform_seed = transform_seed
        self.tqdm_kwds = tqdm_kwds
        self.low_memory = low_memory
        self.angular_rp_forest = angular_rp_forest
        self.transform_queue_size = transform_queue_size

    def _check_param_relations(self) -> None:
        check_kernel_params(self)
        check_output_metric(self)

    def _search_method(self) -> str:
        """``knn_method``, or with ``force_approximation_algorithm`` and ``"auto"`` the
        approximate search that ``"auto"`` takes on data too large for the exact one."""
        if not (self.force_approximation_algorithm and self.knn_method == "auto"):
            return self.knn_method
        from unimap.neighbors.graph import EXACT_MAX_SAMPLES, NeighborIndex

        planned = NeighborIndex(self.metric, "auto", self.n_jobs, 0,
                                metric_kwds=self._metric_kwds).planned_method(
                                    EXACT_MAX_SAMPLES + 1)
        return self.knn_method if planned == "exact" else planned

    def _shows_bars(self) -> bool:
        return bool(self.verbose) and not (self.tqdm_kwds or {}).get("disable", False)

    def _resolve(self, n: int) -> UMAPPlan:
        from unimap.lowdim.ab_fit import find_ab_params

        if self.a is None:
            a, b = find_ab_params(self.spread, self.min_dist)
        else:
            a, b = float(self.a), float(self.b)
        return UMAPPlan(
            n_neighbors_=capped_n_neighbors(self.n_neighbors, n), a_=a, b_=b,
            n_epochs_=self.n_epochs if self.n_epochs is not None else (
                umap_epochs(n) + (DENSMAP_EXTRA_EPOCHS if self.densmap else 0)),
            init_=self.init)

    def _memory_profile(self, fit, n: int) -> MemoryProfile:
        from unimap.optimizers.umap_sgd.fit import umap_sgd_fit_memory

        return MemoryProfile(umap_sgd_fit_memory(n, n * fit.n_neighbors_, self.n_components),
                             "n_neighbors")

    def _affinity(self, fit) -> FuzzyAffinity:
        from unimap.affinity.fuzzy import FuzzyAffinity

        return FuzzyAffinity(self.local_connectivity, self.set_op_mix_ratio)

    def _affinities(self, fit, knn_indices, knn_dists):
        from unimap.optimizers.umap_sgd.common import prune_graph

        affinity = self._affinity(fit).fit(knn_indices, knn_dists,
                                           device=fit.devices_["affinities"])
        graph, fit.sigmas_, fit.rhos_ = affinity.P_, affinity.sigmas_, affinity.rhos_
        graph = self._disconnect(graph, knn_indices, knn_dists)
        graph = self._supervised(fit, graph)
        fit.pruned_graph = prune_graph(graph, fit.n_epochs_)
        return graph

    def _init_graph(self, fit):
        return fit.pruned_graph

    def _optimize(self, fit, init, seed):
        from unimap.optimizers.umap_sgd.fit import umap_sgd_fit

        graph, fit.pruned_graph = fit.pruned_graph, None  # freed: graph_ holds the full graph
        from unimap.runtime.guards import UMAP_CAUSES

        density = self._density(fit, graph)
        return umap_sgd_fit(init, graph, n_epochs=fit.n_epochs_, a=fit.a_, b=fit.b_, seed=seed,
                            learning_rate=self.learning_rate,
                            repulsion_strength=self.repulsion_strength,
                            negative_sample_rate=self.negative_sample_rate,
                            guard=self._epoch_guard(fit, UMAP_CAUSES),
                            device=fit.devices_["optimize"], density=density,
                            output_metric=self.output_metric)

    def _density(self, fit, graph):
        """densMAP's plan (None without ``densmap``) and, with ``output_dens``, the data's
        log radii ``rad_orig_`` (:mod:`unimap.affinity.density`), on the pruned graph."""
        if not (self.densmap or self.output_dens):
            return None
        from unimap.affinity.density import log_radii, standardized
        from unimap.optimizers.umap_sgd.fit import DensityPlan

        radii = log_radii(graph, fit.knn_indices_, fit.knn_dists_)
        if self.output_dens:
            fit.rad_orig_ = radii
        if not self.densmap:
            return None
        return DensityPlan(standardized(radii), float(self.dens_lambda),
                           float(self.dens_frac), float(self.dens_var_shift))

    def fit_transform(self, X: Any, y: Any = None) -> Any:
        """Fit and return ``embedding_``; with ``output_dens=True`` the tuple
        ``(embedding_, rad_orig_, rad_emb_)``, as umap-learn returns it."""
        self.fit(X, y)
        if self.output_dens:
            return self.embedding_, self.rad_orig_, self.rad_emb_
        return self.embedding_

    def _finish(self, fit, embedding: np.ndarray) -> None:
        """With ``output_dens``: the embedding's log local radii ``rad_emb_``, as
        ``rad_orig_`` is computed for the data, over the fuzzy graph of the embedding's own
        ``n_neighbors_`` nearest neighbours; both per input row with ``unique=True``."""
        if not self.output_dens:
            return
        from unimap.affinity.density import log_radii
        from unimap.affinity.fuzzy import fuzzy_simplicial_set
        from unimap.neighbors.graph import NeighborIndex

        index = NeighborIndex("euclidean", "auto", self.n_jobs, fit._streams.neighbors)
        knn = index.build(embedding).knn_graph(fit.n_neighbors_)
        graph, _, _ = fuzzy_simplicial_set(knn.indices, knn.distances)
        fit.rad_emb_ = log_radii(graph, knn.indices, knn.distances)
        if fit.unique_inverse_ is not None:
            fit.rad_orig_ = fit.rad_orig_[fit.unique_inverse_]
            fit.rad_emb_ = fit.rad_emb_[fit.unique_inverse_]

    def _optimizer_on_gpu(self, fit, n_samples) -> bool:
        from unimap.optimizers.umap_sgd.epochs_cuda import supports

        return (supports(self.n_components) and not self.densmap
                and self.output_metric in ("euclidean", "l2"))

    def transform(self, X: Any) -> Any:
        """Place new points into the fitted embedding, which stays fixed, or, with
        ``transform_mode="graph"``, return their membership graph to the training points.

        Each new point is optimized on its own against the training embedding, so it lands
        in the same place whether it comes alone or in a batch.

        Parameters
        ----------
        X : array of shape (m, n_features), or (m, n_train) distances if precomputed
            A ``dask.array.Array`` is placed block by block on the workers
            (:mod:`unimap.dask.transform`, ``docs/dask.md``; embedding mode only).

        Returns
        -------
        embedding : ndarray of shape (m, n_components), float32
            A lazy ``dask.array.Array`` chunked by rows like ``X`` when ``X`` is one.
        graph : scipy.sparse.csr_matrix of shape (m, n_train), float32
            With ``transform_mode="graph"``: row i holds new point i's memberships to its
            nearest training points (column j: training row j).
        """
        if self.transform_mode != "graph":
            return self._transform(X)
        from unimap.runtime.validation import is_dask_collection

        if is_dask_collection(X):
            raise ValueError("transform_mode='graph' returns a sparse matrix in memory; "
                             "place a dask array with transform_mode='embedding'")
        return self._membership_graph(self._check_new_points(X))

    def _membership_graph(self, X: Any) -> Any:
        """New points' fuzzy memberships to the training points, (m, n_train) CSR: the
        weights :func:`unimap.placement.fuzzy_placement` starts them from."""
        import scipy.sparse as sp

        from unimap.placement import fuzzy_memberships
        from unimap.runtime.threads import numba_threads, resolve_n_jobs

        with numba_threads(resolve_n_jobs(self.n_jobs)):
            idx, weights = fuzzy_memberships(self._index, X, self.n_neighbors_,
                                             self.local_connectivity, self._cut_distance())
        m, k = idx.shape
        graph = sp.csr_matrix(
            (np.asarray(weights, np.float32).ravel(), idx.ravel(), np.arange(0, m * k + 1, k)),
            shape=(m, self._reference_embedding.shape[0]))
        graph.sum_duplicates()
        graph.eliminate_zeros()
        return graph

    def _transform_seed(self) -> int:
        if self.transform_seed is None:
            return self._streams.transform
        from unimap.runtime.random_streams import seed_from_random_state

        return seed_from_random_state(self.transform_seed)

    def _place(self, X):
        """UMAP's placement (:func:`unimap.placement.fuzzy_placement`): fuzzy membership to
        the ``n_neighbors_`` nearest training points, start at their membership-weighted
        mean, then UMAP's SGD against the fixed embedding at a quarter of the fit's step."""
        from unimap.placement import fuzzy_placement, transform_epochs

        reference = self._reference_embedding
        n_epochs = transform_epochs(reference.shape[0], self.n_epochs)
        return fuzzy_placement(
            self._index, X, reference, self.n_neighbors_, self.local_connectivity,
            self.a_, self.b_, self._transform_seed(), n_epochs, self.learning_rate / 4.0,
            self.repulsion_strength, self.negative_sample_rate, self._cut_distance(),
            output_metric=self.output_metric, device=self._placement_device())

"""GDR's two modes, each one object: what differs between ``normalized=False`` and ``True``.

The modes share GDR's pipeline and parameters but differ in nearly every step: the affinity
(UMAP's fuzzy graph or t-SNE's perplexity P), the defaults of the plan, the layout's scale,
the optimizer (:func:`unimap.optimizers.gdr.unnormalized.gdr_unnormalized` or
:func:`unimap.optimizers.gdr.normalized.gdr_normalized`), its memory, its GPU support, the
placement of new points and ``update``. :class:`unimap.methods.gdr.GDR` chooses its mode in
one place (``GDR._mode``) and asks it; nothing else branches on ``normalized``.

The default constants were chosen by measurement on MNIST and digits (``docs/gdr.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.methods.memory_plan import MemoryProfile
from unimap.methods.plan import GDRPlan
from unimap.methods.umap_defaults import capped_n_neighbors, umap_epochs

__all__ = ["GDRMode", "UMAP_LIKE", "TSNE_LIKE", "normalized_steps", "REPULSION_RATE",
           "TSNE_SHARED_SAMPLES", "TRANSFORM_LR"]

# Defaults chosen by measurement (docs/gdr.md).
UMAP_LR = 0.1
UMAP_MOMENTUM = 0.5
UMAP_NEGATIVES = 1.0
REPULSION_RATE = 5.0  # ν: an edge repels like UMAP's 5 negatives of weight γ·p̄
TSNE_EPOCHS = 600  # 100 of early exaggeration, then 500
TSNE_EE_ITER = 100
TSNE_NEGATIVES = 1.0  # per-row samples
TSNE_SHARED_SAMPLES = 1000  # shared samples per epoch, whatever the perplexity
TSNE_MOMENTUM = 0.8
TSNE_LR_PER_POINT = 2.0  # per-row samples: max(2n/E · min(1, S/120), 50)
TSNE_MIN_LR = 50.0  # t-SNE's floor, both sampling schemes
TSNE_REF_SAMPLES = 120.0
TSNE_SHARED_REF_SAMPLES = 500.0  # shared samples: max(n/(4E), 50) · min(1, M/500)
TRANSFORM_LR = 0.25  # UMAP.transform's step (its fit step 1, divided by 4)


class GDRMode:
    """What one of GDR's modes does at each step (see the module docstring). Stateless: the
    estimator and the fit's plan are passed in."""

    normalized: bool
    label: str  # how messages name the mode: GDR(normalized=True)
    scale: str  # the start's scale: "box" (UMAP's [0, 10]) or "std" (t-SNE's 1e-4)
    affinity: str  # the kind of P: "fuzzy" or "perplexity"
    fits_on_cluster: bool  # fit of a dask array runs on its cluster (unimap.dask.fit)

    def resolve(self, est: Any, n: int) -> GDRPlan:
        """GDR's data-dependent defaults for ``n`` points (fitted ``_`` attributes), from
        ``est``'s parameters."""
        from unimap.lowdim.ab_fit import find_ab_params

        normalized = self.normalized
        fit: dict[str, Any] = {
            "symmetric_attraction_": (not normalized if est.symmetric_attraction is None
                                      else bool(est.symmetric_attraction)),
            "symmetrization_": est.symmetrization or ("tsne" if normalized else "umap"),
            "shared_negatives_": (normalized if est.shared_negatives is None
                                  else bool(est.shared_negatives)),
            "momentum_": float(est.momentum if est.momentum is not None else (
                TSNE_MOMENTUM if normalized else UMAP_MOMENTUM)),
            "z_": None,
        }
        if est.a is not None:
            fit["a_"], fit["b_"] = float(est.a), float(est.b)
        elif normalized:
            fit["a_"], fit["b_"] = 1.0, 1.0
        else:
            fit["a_"], fit["b_"] = find_ab_params(est.spread, est.min_dist)
        fit.update(self._plan(est, n, fit))
        fit["learning_rate_"] = (float(est.learning_rate) if est.learning_rate is not None
                                 else None if normalized else UMAP_LR)
        fit["early_learning_rate_"] = fit["learning_rate_"]
        # PCA needs feature vectors: spectral for precomputed distances.
        fit["init_"] = est.init if est.init is not None else (
            "pca" if normalized and est.metric != "precomputed" else "spectral")
        return GDRPlan(**fit)

    def _plan(self, est: Any, n: int, fit: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def memory_profile(self, est: Any, fit: Any, n: int) -> MemoryProfile:
        raise NotImplementedError

    def finish_affinities(self, est: Any, fit: Any, P: Any, cut: Any) -> Any:
        """P after the edges were cut and the labels applied (``cut``), and the defaults
        that depend on it."""
        return cut

    def optimizer_on_gpu(self, est: Any, fit: Any) -> bool:
        raise NotImplementedError

    def optimize(self, est: Any, fit: Any, init: np.ndarray, common: dict[str, Any]
                 ) -> np.ndarray:
        raise NotImplementedError

    def place(self, est: Any, X: Any) -> np.ndarray:
        raise NotImplementedError

    def check_placement_kernel(self, est: Any, what: str) -> None:
        """Refuse placing points where the mode's placement cannot (override)."""


class UMAPLikeMode(GDRMode):
    """``normalized=False``: unnormalized P and Q, UMAP's fuzzy graph, full-batch epochs with a
    decaying step, UMAP's placement."""

    normalized, label, scale, affinity = False, "", "box", "fuzzy"
    fits_on_cluster = True  # its epochs have a distributed form (unimap.dask.epochs)

    def _plan(self, est, n, fit):
        return {"n_epochs_": est.n_epochs if est.n_epochs is not None else umap_epochs(n),
                "n_negatives_": (float(est.n_negatives) if est.n_negatives is not None
                                 else UMAP_NEGATIVES),
                "early_exaggeration_iter_": 0, "perplexity_": None,
                "n_neighbors_": capped_n_neighbors(est.n_neighbors, n)}

    def memory_profile(self, est, fit, n):
        from unimap.optimizers.gdr.unnormalized import gdr_unnormalized_memory

        return MemoryProfile(
            gdr_unnormalized_memory(n, n * fit.n_neighbors_, est.n_components), "n_neighbors")

    def optimizer_on_gpu(self, est, fit):
        from unimap.optimizers.gdr.unnormalized_cuda import supports

        return supports(est.n_components)

    def optimize(self, est, fit, init, common):
        from unimap.optimizers.gdr.unnormalized import gdr_unnormalized
        from unimap.runtime.guards import UMAP_CAUSES

        weight = (est.repulsion_strength * fit.mean_weight_ * REPULSION_RATE
                  / fit.n_negatives_)
        optimizer = gdr_unnormalized if fit._cluster is None else fit._cluster.gdr_unnormalized
        return optimizer(init, fit.graph_, repulsion_weight=weight,
                         guard=est._epoch_guard(fit, UMAP_CAUSES), **common)

    def place(self, est, X):
        from unimap.placement import fuzzy_placement, transform_epochs

        return fuzzy_placement(
            est._index, X, est._reference_embedding, est.n_neighbors_, local_connectivity=1.0,
            a=est.a_, b=est.b_, seed=est._streams.transform,
            n_epochs=transform_epochs(est._index.n_samples_, est.n_epochs),
            learning_rate=TRANSFORM_LR, repulsion_strength=est.repulsion_strength,
            negative_sample_rate=5.0, disconnection_distance=est._cut_distance(),
            device=est._placement_device())


class TSNELikeMode(GDRMode):
    """``normalized=True``: P and Q normalised, t-SNE's perplexity P, early exaggeration,
    momentum and gains, openTSNE's placement."""

    normalized, label, scale, affinity = True, "(normalized=True)", "std", "perplexity"
    fits_on_cluster = False  # each epoch's normalisation sums over every pair: not built

    def _plan(self, est, n, fit):
        from unimap.affinity.perplexity import effective_perplexity, perplexity_neighbors

        n_epochs = est.n_epochs if est.n_epochs is not None else TSNE_EPOCHS
        ee = TSNE_EE_ITER if est.early_exaggeration_iter is None else (
            est.early_exaggeration_iter)
        perplexity = effective_perplexity(est.perplexity, n)
        # None: depends on the graph, set by finish_affinities
        negatives = (float(est.n_negatives) if est.n_negatives is not None
                     else None if fit["shared_negatives_"] else TSNE_NEGATIVES)
        return {"n_epochs_": n_epochs, "n_negatives_": negatives,
                "early_exaggeration_iter_": min(ee, n_epochs), "perplexity_": perplexity,
                "n_neighbors_": perplexity_neighbors(perplexity, n - 1) + 1}

    def memory_profile(self, est, fit, n):
        from unimap.optimizers.gdr.normalized import gdr_normalized_memory

        return MemoryProfile(
            gdr_normalized_memory(n, n * fit.n_neighbors_, est.n_components), "perplexity")

    def finish_affinities(self, est, fit, P, cut):
        if cut is not P:  # back to a joint probability
            cut.data /= cut.data.sum(dtype=np.float64)
        return cut

    def optimizer_on_gpu(self, est, fit):
        from unimap.optimizers.gdr.normalized_cuda import supports

        return supports(est.n_components, fit.shared_negatives_)

    def optimize(self, est, fit, init, common):
        from unimap.optimizers.gdr.normalized import gdr_normalized
        from unimap.runtime.guards import TSNE_CAUSES

        Y, fit.z_ = gdr_normalized(
            init, fit.graph_, n_early=fit.early_exaggeration_iter_,
            exaggeration=est.early_exaggeration, early_learning_rate=fit.early_learning_rate_,
            shared_negatives=fit.shared_negatives_, repulsion_strength=est.repulsion_strength,
            guard=est._epoch_guard(fit, TSNE_CAUSES, "GDR(normalized=True)"), **common)
        return Y

    def place(self, est, X):
        from unimap.optimizers.gradient_descent.forces import RepulsionParams
        from unimap.placement import perplexity_placement

        method = "barnes_hut" if est.n_components <= 3 else "exact"
        return perplexity_placement(est._index, X, est._reference_embedding,
                                    RepulsionParams(method, 0.5, 1.0),
                                    disconnection_distance=est._cut_distance())

    def check_placement_kernel(self, est, what):
        if hasattr(est, "embedding_") and (est.a_ != 1.0 or est.b_ != 1.0):
            raise ValueError(
                f"{what} with normalized=True needs the t-SNE kernel a = b = 1; this model "
                f"was fitted with a={est.a_:g}, b={est.b_:g}")


UMAP_LIKE = UMAPLikeMode()
TSNE_LIKE = TSNELikeMode()


def normalized_steps(n: int, samples: float, shared: bool,
                     early_exaggeration: float) -> tuple[float, float]:
    """Default steps of the normalized mode, during and after early exaggeration,
    shrunk in proportion below the samples per row they were tuned at (``samples``):
    a sample landing near a point repels it with weight ``n/S`` (docs/gdr.md)."""
    if shared:
        shrink = min(1.0, samples / TSNE_SHARED_REF_SAMPLES)
        late = max(n / 4.0 * shrink, TSNE_MIN_LR)
        early = max(n / (4.0 * early_exaggeration) * shrink, TSNE_MIN_LR)
        return early, late
    shrink = min(1.0, samples / TSNE_REF_SAMPLES)
    step = max(TSNE_LR_PER_POINT * n / early_exaggeration * shrink, TSNE_MIN_LR)
    return step, step

"""GDR's defaults: the values and rules that resolve its plan from the data's size.

The constants were chosen by measurement on MNIST and digits (``docs/gdr.md``). They live here
so that :mod:`unimap.methods.gdr` reads as the declaration of the method.
"""

from __future__ import annotations

from typing import Any

from unimap.methods.plan import GDRPlan
from unimap.methods.umap_defaults import capped_n_neighbors, umap_epochs

__all__ = ["resolve_gdr_plan", "normalized_steps", "REPULSION_RATE", "TSNE_SHARED_SAMPLES",
           "TRANSFORM_LR"]

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


def resolve_gdr_plan(est: Any, n: int) -> GDRPlan:
    """GDR's data-dependent defaults for ``n`` points (fitted ``_`` attributes), from the
    estimator ``est``'s parameters."""
    from unimap.affinity.perplexity import effective_perplexity, perplexity_neighbors
    from unimap.lowdim.ab_fit import find_ab_params

    normalized = est.normalized
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
    if est.n_epochs is not None:
        fit["n_epochs_"] = est.n_epochs
    else:
        fit["n_epochs_"] = TSNE_EPOCHS if normalized else umap_epochs(n)
    # None: depends on the graph, set in _affinities.
    fit["n_negatives_"] = (float(est.n_negatives) if est.n_negatives is not None
                           else None if normalized and fit["shared_negatives_"]
                           else TSNE_NEGATIVES if normalized else UMAP_NEGATIVES)
    fit["learning_rate_"] = (float(est.learning_rate) if est.learning_rate is not None
                             else None if normalized else UMAP_LR)
    fit["early_learning_rate_"] = fit["learning_rate_"]
    if normalized:
        ee = TSNE_EE_ITER if est.early_exaggeration_iter is None else (
            est.early_exaggeration_iter)
        fit["early_exaggeration_iter_"] = min(ee, fit["n_epochs_"])
        fit["perplexity_"] = effective_perplexity(est.perplexity, n, stacklevel=5)
        fit["n_neighbors_"] = perplexity_neighbors(fit["perplexity_"], n - 1) + 1
    else:
        fit["early_exaggeration_iter_"] = 0
        fit["perplexity_"] = None
        fit["n_neighbors_"] = capped_n_neighbors(est.n_neighbors, n, stacklevel=5)
    # PCA needs feature vectors: spectral for precomputed distances.
    fit["init_"] = est.init if est.init is not None else (
        "pca" if normalized and est.metric != "precomputed" else "spectral")
    return GDRPlan(**fit)


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

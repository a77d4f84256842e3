"""Stability under sub-sampling (reference 004, section 5.6): embed random sub-samples of the
data again and measure how far each point lands from its place in the embedding of all the
data, after the best similarity transform (Procrustes: shift, rotation or reflection, uniform
scale) has removed what an embedding leaves arbitrary."""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from unimap.analysis._common import ShortRepr, pyplot
from unimap.metrics.common import make_rng
from unimap.runtime.validation import check_array, check_float, check_int

__all__ = ["SubsampleStability", "subsample_stability", "plot_subsample_stability",
           "clone_estimator", "procrustes_align"]


@dataclass(frozen=True, eq=False, repr=False)
class SubsampleStability(ShortRepr):
    """Displacements of sub-sample embeddings from the embedding of all points.

    Displacements are euclidean distances in the reference embedding, divided by ``scale``
    (its root-mean-square distance from its centroid): 0.1 means a tenth of the typical
    radius of the embedding.

    Attributes
    ----------
    embedding : ndarray of shape (n_points, n_components)
        Reference: the embedding of all points.
    indices : ndarray of shape (n_repeats, n_sub)
        Points of each sub-sample (sorted).
    aligned : ndarray of shape (n_repeats, n_sub, n_components)
        Each sub-sample's embedding mapped onto the reference by Procrustes.
    displacement : ndarray of shape (n_repeats, n_sub)
        Relative distance of each aligned point from its reference position.
    disparity : ndarray of shape (n_repeats,)
        Procrustes disparity of each sub-sample (as :func:`scipy.spatial.procrustes`: sum of
        squared differences after both are centred and scaled to unit norm, in [0, 1]).
    per_point : ndarray of shape (n_points,)
        Mean displacement of each point over the sub-samples that contain it; NaN for points
        in none.
    counts : ndarray of shape (n_points,)
        Number of sub-samples that contain each point.
    scale : float
        Root-mean-square distance of the reference points from their centroid.
    mean_displacement, median_displacement : float
        Over all (sub-sample, point) pairs.
    """

    embedding: np.ndarray
    indices: np.ndarray
    aligned: np.ndarray
    displacement: np.ndarray
    disparity: np.ndarray
    per_point: np.ndarray
    counts: np.ndarray
    scale: float
    mean_displacement: float
    median_displacement: float

    def plot(self, axes: Any = None):
        """See :func:`plot_subsample_stability`."""
        return plot_subsample_stability(self, axes)


def clone_estimator(estimator: Any) -> Any:
    """A new, unfitted estimator with the same parameters.

    ``estimator`` may be an instance (scikit-learn's ``clone`` when it has ``get_params``,
    else a new instance of its class built from the attributes named like the parameters of
    its ``__init__``, deep-copied, as unimap's estimators store them), a class (instantiated
    with its defaults) or a function of no arguments that returns a new estimator.

    Examples
    --------
    >>> import unimap
    >>> from unimap.analysis import clone_estimator
    >>> copy = clone_estimator(unimap.UMAP(n_neighbors=30, random_state=0))
    >>> copy.n_neighbors, copy.random_state, hasattr(copy, "embedding_")
    (30, 0, False)
    >>> type(clone_estimator(unimap.GDR)).__name__  # a class: a new instance with its defaults
    'GDR'
    """
    if isinstance(estimator, type) or (callable(estimator) and not hasattr(estimator, "fit")):
        new = estimator()
    elif hasattr(estimator, "get_params"):
        from sklearn.base import clone

        new = clone(estimator)
    else:
        params = inspect.signature(type(estimator).__init__).parameters
        names = [p.name for p in list(params.values())[1:]
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        missing = [name for name in names if not hasattr(estimator, name)]
        if missing:
            raise TypeError(
                f"cannot clone {type(estimator).__name__}: its __init__ parameters {missing} "
                "are not stored as attributes of the same name; pass a function that builds "
                "a new estimator instead"
            )
        new = type(estimator)(**{name: copy.deepcopy(getattr(estimator, name))
                                 for name in names})
    if not (hasattr(new, "fit_transform") or hasattr(new, "fit")):
        raise TypeError(
            f"estimator must build an object with fit_transform (or fit and embedding_), "
            f"got {type(new).__name__}"
        )
    return new


def _embed(estimator: Any, X: np.ndarray) -> np.ndarray:
    if hasattr(estimator, "fit_transform"):
        Y = estimator.fit_transform(X)
    else:
        Y = estimator.fit(X).embedding_
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
        raise ValueError(
            f"the estimator returned an embedding of shape {Y.shape} for {X.shape[0]} points; "
            "expected (n_points, n_components)"
        )
    return Y


def procrustes_align(source: Any, target: Any) -> tuple[np.ndarray, float]:
    """Map ``source`` onto ``target`` by the similarity transform that minimises the sum of
    squared distances: ``s · (source - mean) · R + target mean``, ``R`` orthogonal.

    Parameters
    ----------
    source, target : array-like of shape (n_points, n_components)

    Returns
    -------
    aligned : ndarray of shape (n_points, n_components)
    disparity : float
        Residual sum of squares relative to that of the centred target, in [0, 1] (0: equal
        up to a similarity transform), as :func:`scipy.spatial.procrustes` reports it.

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.analysis import procrustes_align
    >>> target = np.random.default_rng(0).normal(size=(50, 2))
    >>> turned = 2 * target @ np.array([[0.0, -1.0], [1.0, 0.0]]) + 5  # rotated, scaled, moved
    >>> aligned, disparity = procrustes_align(turned, target)
    >>> bool(np.allclose(aligned, target)), round(disparity, 6)
    (True, 0.0)
    """
    from scipy.linalg import orthogonal_procrustes

    A = np.asarray(source, dtype=np.float64)
    B = np.asarray(target, dtype=np.float64)
    if A.shape != B.shape or A.ndim != 2:
        raise ValueError(f"source and target must have the same 2-D shape, got {A.shape} "
                         f"and {B.shape}")
    A = A - A.mean(axis=0)
    mean_b = B.mean(axis=0)
    B = B - mean_b
    norm_a, norm_b = float((A * A).sum()), float((B * B).sum())
    if norm_a == 0.0 or norm_b == 0.0:  # a single point, or all points in one place
        return np.broadcast_to(mean_b, A.shape).copy(), 0.0 if norm_b == 0.0 else 1.0
    R, singular_sum = orthogonal_procrustes(A, B)
    aligned = (singular_sum / norm_a) * (A @ R) + mean_b
    disparity = max(0.0, 1.0 - singular_sum**2 / (norm_a * norm_b))
    return aligned, disparity


def subsample_stability(
    X: Any,
    estimator: Any = None,
    fraction: float = 0.5,
    n_repeats: int = 5,
    random_state: Any = None,
    *,
    embedding: Any = None,
) -> SubsampleStability:
    """Stability under sub-sampling: embed ``n_repeats`` random sub-samples and measure how
    far each point moves from its place in the embedding of all points.

    Each sub-sample's embedding is aligned to the reference positions of its points by
    :func:`procrustes_align` (a shift, rotation or reflection and uniform scale are not
    changes of the embedding), then each point's distance to its reference position is
    divided by the reference's radius (see :class:`SubsampleStability`). A deterministic
    method that recovers the data's geometry (PCA of data in a linear subspace) scores 0.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features)
    estimator : estimator, estimator class or function of no arguments, optional
        What embeds; copied for every fit by :func:`clone_estimator` (its parameters,
        ``random_state`` included, are kept: a fixed seed measures the effect of the data
        alone). Default: ``unimap.UMAP()``. Parameters tied to the data's rows (an ``init``
        array, ``precomputed_knn``) do not fit the sub-samples.
    fraction : float in (0, 1], default=0.5
        Share of the points in each sub-sample.
    n_repeats : int, default=5
        Number of sub-samples.
    random_state : int, numpy Generator or None, default=None
        Seed of the sub-samples.
    embedding : array-like of shape (n_points, n_components), optional
        Reference embedding of all points (for instance ``estimator.embedding_`` of a fit
        already made); default: fitted here.

    Returns
    -------
    SubsampleStability

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> result = analysis.subsample_stability(X[:500], unimap.PCA(), n_repeats=3, random_state=0)
    >>> result.displacement.shape  # 3 sub-samples of half the points
    (3, 250)
    >>> bool(result.median_displacement < 1)
    True
    """
    X = check_array(X, "X", accept_sparse=True, min_samples=3, dtype=None)
    n = X.shape[0]
    fraction = check_float(fraction, "fraction", 0.0, 1.0, low_inclusive=False)
    n_repeats = check_int(n_repeats, "n_repeats", 1)
    n_sub = int(round(fraction * n))
    if n_sub < 3:
        raise ValueError(
            f"fraction={fraction} of {n} points leaves {n_sub} per sub-sample; at least 3 "
            "are needed"
        )
    if estimator is None:
        from unimap.methods.umap import UMAP

        estimator = UMAP
    reference = _reference_embedding(X, estimator, embedding)
    rng = make_rng(random_state)
    indices = np.stack([np.sort(rng.choice(n, size=n_sub, replace=False))
                        for _ in range(n_repeats)])
    aligned = np.empty((n_repeats, n_sub, reference.shape[1]))
    disparity = np.empty(n_repeats)
    for r, ids in enumerate(indices):
        sub = _embed(clone_estimator(estimator), X[ids])
        if sub.shape[1] != reference.shape[1]:
            raise ValueError(
                f"the sub-sample embedding has {sub.shape[1]} components but the reference "
                f"has {reference.shape[1]}"
            )
        aligned[r], disparity[r] = procrustes_align(sub, reference[ids])
    return _displacements(reference, indices, aligned, disparity)


def _reference_embedding(X: Any, estimator: Any, embedding: Any) -> np.ndarray:
    """The embedding of all points: ``embedding`` checked against ``X``, or fitted here."""
    if embedding is None:
        return _embed(clone_estimator(estimator), X)
    reference = check_array(embedding, "embedding", dtype=np.float64)
    if reference.shape[0] != X.shape[0]:
        raise ValueError(
            f"X has {X.shape[0]} samples but embedding has {reference.shape[0]}; they must "
            "correspond row for row"
        )
    return reference


def _displacements(reference, indices, aligned, disparity) -> SubsampleStability:
    """Each aligned point's distance from its reference position, relative to the
    reference's RMS radius, and its mean per point."""
    n = reference.shape[0]
    centred = reference - reference.mean(axis=0)
    scale = float(np.sqrt((centred * centred).sum(axis=1).mean()))
    scale = scale if scale > 0 else 1.0
    displacement = np.linalg.norm(aligned - reference[indices], axis=2) / scale
    counts = np.bincount(indices.ravel(), minlength=n)
    totals = np.bincount(indices.ravel(), weights=displacement.ravel(), minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_point = np.where(counts > 0, totals / counts, np.nan)
    return SubsampleStability(reference, indices, aligned, displacement, disparity, per_point,
                              counts, scale, float(displacement.mean()),
                              float(np.median(displacement)))


def plot_subsample_stability(result: SubsampleStability, axes: Any = None):
    """Two panels: the reference embedding coloured by each point's mean displacement (grey:
    never sub-sampled), and the histogram of all displacements.

    Parameters
    ----------
    result : SubsampleStability
    axes : sequence of two matplotlib Axes, optional
        Where to draw; default: a new figure.

    Returns
    -------
    matplotlib Figure

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> result = analysis.subsample_stability(X[:500], unimap.PCA(), n_repeats=3, random_state=0)
    >>> fig = analysis.plot_subsample_stability(result)  # or result.plot()
    >>> len(fig.axes) >= 2
    True
    """
    if axes is None:
        fig, axes = pyplot().subplots(1, 2, figsize=(11.0, 4.5))
    else:
        fig = axes[0].figure
    ax_map, ax_hist = axes
    Y = result.embedding
    x = Y[:, 0]
    y = Y[:, 1] if Y.shape[1] > 1 else np.zeros_like(x)
    seen = result.counts > 0
    size = float(np.clip(100.0 / np.sqrt(max(Y.shape[0], 1)), 0.05, 20.0))
    ax_map.scatter(x[~seen], y[~seen], s=size, c="#bbbbbb", linewidths=0, rasterized=True)
    points = ax_map.scatter(x[seen], y[seen], s=size, c=result.per_point[seen], cmap="viridis",
                            linewidths=0, rasterized=True)
    fig.colorbar(points, ax=ax_map, shrink=0.8, label="mean displacement")
    ax_map.set_aspect("equal", adjustable="datalim")
    ax_map.set_xticks([])
    ax_map.set_yticks([])
    ax_map.set_title("Displacement under sub-sampling")
    ax_hist.hist(result.displacement.ravel(), bins=50, color="#3465a4")
    ax_hist.axvline(result.mean_displacement, c="#cc0000", lw=1.5,
                    label=f"mean {result.mean_displacement:.3g}")
    ax_hist.set_xlabel("displacement / embedding radius")
    ax_hist.set_ylabel("points × sub-samples")
    ax_hist.legend(loc="best", fontsize=8, frameon=False)
    ax_hist.set_title(f"{result.indices.shape[0]} sub-samples of {result.indices.shape[1]}")
    return fig

"""All five analyses of reference 002 in one call, and their figure: one row of five panels per
embedding, so that methods can be compared side by side as in the reference."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from unimap.analysis._common import ShortRepr, pyplot
from unimap.analysis._distance_results import (
    DistanceComparison,
    RelativeError,
    SortedDistances,
    SortIndexChange,
    plot_distance_comparison,
    plot_relative_error,
    plot_sort_index_change,
    plot_sorted_distances,
)
from unimap.analysis._distances import (
    distance_comparison_from_pairs,
    relative_error_from_pairs,
    sample_pairs,
    sort_index_change_from_pairs,
    sorted_distances_from_pairs,
)
from unimap.analysis._overlap import NeighborOverlap, neighbor_overlap, plot_neighbor_overlap
from unimap.metrics.common import make_rng

__all__ = ["EmbeddingAnalysis", "embedding_analysis", "plot_embedding_analysis"]


@dataclass(frozen=True, eq=False, repr=False)
class EmbeddingAnalysis(ShortRepr):
    """The five analyses of one embedding (the four pairwise ones share one sample of pairs).

    Attributes
    ----------
    sort_index_change : SortIndexChange
    distance_comparison : DistanceComparison
    sorted_distances : SortedDistances
    neighbor_overlap : NeighborOverlap
    relative_error : RelativeError
    """

    sort_index_change: SortIndexChange
    distance_comparison: DistanceComparison
    sorted_distances: SortedDistances
    neighbor_overlap: NeighborOverlap
    relative_error: RelativeError

    def plot(self, axes: Any = None):
        """See :func:`plot_embedding_analysis`."""
        return plot_embedding_analysis(self, axes)


def embedding_analysis(
    X: Any,
    embedding: Any,
    n_samples: int = 1000,
    random_state: Any = None,
    *,
    metric: str = "euclidean",
    ks: Any = None,
    width: int = 10,
    n_bins: int = 100,
) -> EmbeddingAnalysis:
    """Run the five embedding analyses of reference 002 on one embedding.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features), or (n_points, n_points)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_points, n_components)
    n_samples : int, default=1000
        Points sampled for the pairwise analyses (all their pairs) and anchors of the
        neighbour overlap. At least 3.
    random_state : int, numpy Generator or None, default=None
        Seed of both samples.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, \
default="euclidean"
        Distance in the input space; the embedding is euclidean.
    ks, width
        Bands of the neighbour overlap, see :func:`neighbor_overlap`.
    n_bins : int, default=100
        Bins of the running averages of the pairwise analyses.

    Returns
    -------
    EmbeddingAnalysis

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> embedding = unimap.PCA().fit_transform(X[:500])
    >>> report = analysis.embedding_analysis(X[:500], embedding, n_samples=200, random_state=0)
    >>> report.sort_index_change.change.shape, report.neighbor_overlap.per_anchor.shape[0]
    ((19900,), 200)
    """
    rng = make_rng(random_state)
    sample = sample_pairs(X, embedding, n_samples, rng, metric)
    return EmbeddingAnalysis(
        sort_index_change=sort_index_change_from_pairs(*sample, n_bins),
        distance_comparison=distance_comparison_from_pairs(*sample, n_bins),
        sorted_distances=sorted_distances_from_pairs(*sample, n_bins),
        neighbor_overlap=neighbor_overlap(X, embedding, ks, width, n_samples, rng,
                                          metric=metric),
        relative_error=relative_error_from_pairs(*sample, n_bins),
    )


_PANELS = (
    ("sort_index_change", plot_sort_index_change),
    ("distance_comparison", plot_distance_comparison),
    ("sorted_distances", plot_sorted_distances),
    ("neighbor_overlap", plot_neighbor_overlap),
    ("relative_error", plot_relative_error),
)


def plot_embedding_analysis(results: EmbeddingAnalysis | Mapping[str, EmbeddingAnalysis],
                            axes: Any = None):
    """Draw the five analyses in a row, one row per embedding.

    Parameters
    ----------
    results : EmbeddingAnalysis, or mapping of name -> EmbeddingAnalysis
        One embedding, or several (for instance ``{"PCA": ..., "UMAP": ...}``): each name
        labels its row.
    axes : array of matplotlib Axes of shape (n_rows, 5) or (5,), optional
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
    >>> methods = {"PCA": unimap.PCA(), "GDR": unimap.GDR(random_state=0)}
    >>> reports = {name: analysis.embedding_analysis(X[:500], method.fit_transform(X[:500]),
    ...                                              n_samples=200, random_state=0)
    ...            for name, method in methods.items()}
    >>> fig = analysis.plot_embedding_analysis(reports)  # one row per embedding
    >>> len(fig.axes)
    10
    """
    named = dict(results) if isinstance(results, Mapping) else {"": results}
    if not named:
        raise ValueError("results is empty: give at least one EmbeddingAnalysis")
    for name, result in named.items():
        if not isinstance(result, EmbeddingAnalysis):
            raise TypeError(
                f"results[{name!r}] must be an EmbeddingAnalysis, got {type(result).__name__}"
            )
    if axes is None:
        fig, axes = pyplot().subplots(len(named), len(_PANELS), squeeze=False,
                                      figsize=(4.2 * len(_PANELS), 3.6 * len(named)))
    else:
        axes = np.asarray(axes, dtype=object).reshape(len(named), len(_PANELS))
        fig = axes[0, 0].figure
    for row, (name, result) in enumerate(named.items()):
        for col, (field, draw) in enumerate(_PANELS):
            ax = axes[row, col]
            draw(getattr(result, field), ax)
            if name:
                ax.set_title(f"{name}: {ax.get_title()}", fontsize=9)
    fig.tight_layout()
    return fig

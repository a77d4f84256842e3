"""The pairwise-distance analyses of reference 002 ("Embedding analysis"): change in sort index,
high- vs low-dimensional distance, sorted distances and relative error.

All four look at every pair of a random sample of ``n_samples`` points, ordered by increasing
input-space ("high-dimensional") distance, as the reference's plots do; ``P = m (m - 1) / 2``
pairs for ``m`` sampled points, so the cost depends on ``n_samples``, not on the data size.
The results they return, and their plots, are in :mod:`unimap.analysis._distance_results`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.analysis._common import (
    binned_mean,
    check_pair,
    sample_pair_distances,
    sample_points,
)
from unimap.analysis._distance_results import (
    DistanceComparison,
    RelativeError,
    SortedDistances,
    SortIndexChange,
)
from unimap.metrics.common import make_rng

__all__ = ["sort_index_change", "distance_comparison", "sorted_distances", "relative_error",
           "sample_pairs", "sort_index_change_from_pairs", "distance_comparison_from_pairs",
           "sorted_distances_from_pairs", "relative_error_from_pairs"]


# -- computations on sorted pairs (shared with embedding_analysis) -----------------------------
def sample_pairs(X, embedding, n_samples, random_state, metric):
    X, embedding = check_pair(X, embedding, metric, min_samples=3)
    ids = sample_points(X.shape[0], n_samples, make_rng(random_state), low=3)
    return sample_pair_distances(X, embedding, ids, metric)


def sort_index_change_from_pairs(pairs, high, low, n_bins) -> SortIndexChange:
    from scipy.stats import rankdata

    rank_high = rankdata(high) - 1.0
    rank_low = rankdata(low) - 1.0
    change = (rank_low - rank_high) / (high.shape[0] - 1)
    position, mean_abs = binned_mean(np.abs(change), n_bins)
    return SortIndexChange(pairs, high, rank_high, rank_low, change, position, mean_abs,
                           float(np.abs(change).mean()))


def distance_comparison_from_pairs(pairs, high, low, n_bins) -> DistanceComparison:
    _, bin_high = binned_mean(high, n_bins)
    _, bin_low = binned_mean(low, n_bins)
    if np.ptp(high) > 0 and np.ptp(low) > 0:
        pearson = float(np.corrcoef(high, low)[0, 1])
    else:
        pearson = float("nan")
    norm = float(high @ high)
    slope = float(high @ low) / norm if norm > 0 else float("nan")
    return DistanceComparison(pairs, high, low, bin_high, bin_low, pearson, slope)


def sorted_distances_from_pairs(pairs, high, low, n_bins) -> SortedDistances:
    position, bin_low = binned_mean(low, n_bins)
    return SortedDistances(pairs, low, position, bin_low)


def relative_error_from_pairs(pairs, high, low, n_bins) -> RelativeError:
    high = high / high.max() if high.max() > 0 else high.copy()
    low = low / low.max() if low.max() > 0 else low.copy()
    signed = (high - low) / np.where(high == 0, 1.0, high)
    error = np.abs(signed)
    position, bin_error = binned_mean(error, n_bins)
    return RelativeError(pairs, high, low, signed, error, position, bin_error,
                         float(error.mean()), float(np.median(error)))


# -- public functions ----------------------------------------------------------------------------
def sort_index_change(X: Any, embedding: Any, n_samples: int = 1000, random_state: Any = None,
                      *, metric: str = "euclidean", n_bins: int = 100) -> SortIndexChange:
    """Change in sort index (reference 002): sort all pairwise distances in the input space
    and in the embedding; how far does each pair move in that order?

    Parameters
    ----------
    X : array-like of shape (n_points, n_features), or (n_points, n_points)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_points, n_components)
    n_samples : int, default=1000
        Points drawn at random (all points when there are fewer); every pair of them is
        compared, ``n_samples (n_samples - 1) / 2`` pairs. At least 3.
    random_state : int, numpy Generator or None, default=None
        Seed of the sample.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, \
default="euclidean"
        Distance in the input space; the embedding is euclidean.
    n_bins : int, default=100
        Equal-count bins of consecutive pairs for the running average.

    Returns
    -------
    SortIndexChange

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> embedding = unimap.PCA().fit_transform(X[:500])
    >>> result = analysis.sort_index_change(X[:500], embedding, n_samples=200, random_state=0)
    >>> result.change.shape  # every pair of the 200 sampled points
    (19900,)
    >>> bool(0 < result.mean_abs_change < 0.5)
    True
    """
    pairs = sample_pairs(X, embedding, n_samples, random_state, metric)
    return sort_index_change_from_pairs(*pairs, n_bins)


def distance_comparison(X: Any, embedding: Any, n_samples: int = 1000, random_state: Any = None,
                        *, metric: str = "euclidean", n_bins: int = 100) -> DistanceComparison:
    """High- vs low-dimensional distance (reference 002): the embedding distance of every
    sampled pair against its input-space distance. PCA of data in a linear subspace gives
    the diagonal; t-SNE and UMAP bend it.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features), or (n_points, n_points)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_points, n_components)
    n_samples : int, default=1000
        Points drawn at random (all points when there are fewer); every pair of them is
        compared, ``n_samples (n_samples - 1) / 2`` pairs. At least 3.
    random_state : int, numpy Generator or None, default=None
        Seed of the sample.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, \
default="euclidean"
        Distance in the input space; the embedding is euclidean.
    n_bins : int, default=100
        Equal-count bins of consecutive pairs for the running average.

    Returns
    -------
    DistanceComparison

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> embedding = unimap.PCA().fit_transform(X[:500])
    >>> result = analysis.distance_comparison(X[:500], embedding, n_samples=200, random_state=0)
    >>> result.high.shape, result.low.shape, result.bin_low.shape
    ((19900,), (19900,), (100,))
    >>> bool(result.pearson > 0.5)  # PCA keeps distances roughly in proportion
    True
    """
    pairs = sample_pairs(X, embedding, n_samples, random_state, metric)
    return distance_comparison_from_pairs(*pairs, n_bins)


def sorted_distances(X: Any, embedding: Any, n_samples: int = 1000, random_state: Any = None,
                     *, metric: str = "euclidean", n_bins: int = 100) -> SortedDistances:
    """Sorted distances (reference 002): the embedding distances of the sampled pairs, in
    order of increasing input-space distance.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features), or (n_points, n_points)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_points, n_components)
    n_samples : int, default=1000
        Points drawn at random (all points when there are fewer); every pair of them is
        compared, ``n_samples (n_samples - 1) / 2`` pairs. At least 3.
    random_state : int, numpy Generator or None, default=None
        Seed of the sample.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, \
default="euclidean"
        Distance in the input space; the embedding is euclidean.
    n_bins : int, default=100
        Equal-count bins of consecutive pairs for the running average.

    Returns
    -------
    SortedDistances

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> embedding = unimap.PCA().fit_transform(X[:500])
    >>> result = analysis.sorted_distances(X[:500], embedding, n_samples=200, random_state=0)
    >>> result.low.shape, result.bin_low.shape
    ((19900,), (100,))
    """
    pairs = sample_pairs(X, embedding, n_samples, random_state, metric)
    return sorted_distances_from_pairs(*pairs, n_bins)


def relative_error(X: Any, embedding: Any, n_samples: int = 1000, random_state: Any = None,
                   *, metric: str = "euclidean", n_bins: int = 100) -> RelativeError:
    """Relative error of the normalised distances (reference 002): ``|d_h - d_l| / d_h`` for
    every sampled pair, both sets of distances scaled to [0, 1] by their maximum.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features), or (n_points, n_points)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_points, n_components)
    n_samples : int, default=1000
        Points drawn at random (all points when there are fewer); every pair of them is
        compared, ``n_samples (n_samples - 1) / 2`` pairs. At least 3.
    random_state : int, numpy Generator or None, default=None
        Seed of the sample.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, \
default="euclidean"
        Distance in the input space; the embedding is euclidean.
    n_bins : int, default=100
        Equal-count bins of consecutive pairs for the running average.

    Returns
    -------
    RelativeError

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> embedding = unimap.PCA().fit_transform(X[:500])
    >>> result = analysis.relative_error(X[:500], embedding, n_samples=200, random_state=0)
    >>> result.error.shape
    (19900,)
    >>> bool(0 <= result.median_error <= 1)
    True
    """
    pairs = sample_pairs(X, embedding, n_samples, random_state, metric)
    return relative_error_from_pairs(*pairs, n_bins)

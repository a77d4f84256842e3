"""The pairwise-distance analyses of reference 002 ("Embedding analysis"): change in sort index,
high- vs low-dimensional distance, sorted distances and relative error.

All four look at every pair of a random sample of ``n_samples`` points, ordered by increasing
input-space ("high-dimensional") distance, as the reference's plots do; ``P = m (m - 1) / 2``
pairs for ``m`` sampled points, so the cost depends on ``n_samples``, not on the data size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from unimap.analysis._common import (
    binned_mean,
    check_pair,
    new_axes,
    point_size,
    sample_pair_distances,
    sample_points,
)
from unimap.metrics._common import _rng

__all__ = [
    "SortIndexChange", "DistanceComparison", "SortedDistances", "RelativeError",
    "sort_index_change", "distance_comparison", "sorted_distances", "relative_error",
    "plot_sort_index_change", "plot_distance_comparison", "plot_sorted_distances",
    "plot_relative_error",
]

@dataclass(frozen=True, eq=False)
class SortIndexChange:
    """Change in sort index: how far each pair moves in the distance order.

    Attributes
    ----------
    pairs : ndarray of shape (P, 2)
        Point ids of each pair, in order of increasing input-space distance.
    high : ndarray of shape (P,)
        Input-space distances, increasing.
    rank_high, rank_low : ndarray of shape (P,)
        Position of each pair (0 to P - 1, ties averaged) when all pairs are sorted by their
        input-space and by their embedding distance.
    change : ndarray of shape (P,)
        Relative change of sort index ``(rank_low - rank_high) / (P - 1)``, in [-1, 1]:
        positive when the pair is relatively farther apart in the embedding.
    bin_position, bin_mean_abs_change : ndarray of shape (n_bins,)
        Running average of ``|change|`` over equal-count bins of consecutive pairs, and the
        mean input-space sort index of each bin.
    mean_abs_change : float
        Mean of ``|change|``: 0 when the embedding keeps the order of all distances, about
        1/3 for an embedding unrelated to the data.
    """

    pairs: np.ndarray
    high: np.ndarray
    rank_high: np.ndarray
    rank_low: np.ndarray
    change: np.ndarray
    bin_position: np.ndarray
    bin_mean_abs_change: np.ndarray
    mean_abs_change: float

    def plot(self, ax: Any = None):
        """See :func:`plot_sort_index_change`."""
        return plot_sort_index_change(self, ax)


@dataclass(frozen=True, eq=False)
class DistanceComparison:
    """High-dimensional distance vs low-dimensional distance of every sampled pair.

    Attributes
    ----------
    pairs : ndarray of shape (P, 2)
        Point ids, in order of increasing input-space distance.
    high, low : ndarray of shape (P,)
        Input-space distances (increasing) and embedding distances of the same pairs.
    bin_high, bin_low : ndarray of shape (n_bins,)
        Mean ``high`` and mean ``low`` over equal-count bins of consecutive pairs.
    pearson : float
        Linear correlation of ``high`` and ``low``: 1 for an embedding whose distances are a
        multiple of the input distances (PCA of data in a linear subspace); NaN when either
        set of distances is constant.
    slope : float
        Least-squares slope through the origin of ``low`` against ``high``.
    """

    pairs: np.ndarray
    high: np.ndarray
    low: np.ndarray
    bin_high: np.ndarray
    bin_low: np.ndarray
    pearson: float
    slope: float

    def plot(self, ax: Any = None):
        """See :func:`plot_distance_comparison`."""
        return plot_distance_comparison(self, ax)


@dataclass(frozen=True, eq=False)
class SortedDistances:
    """Embedding distances of the sampled pairs, in order of increasing input-space distance
    (the y-values of :class:`DistanceComparison` against their sort index).

    Attributes
    ----------
    pairs : ndarray of shape (P, 2)
    low : ndarray of shape (P,)
        Embedding distance of the pair with the ``p``-th smallest input-space distance.
    bin_position, bin_low : ndarray of shape (n_bins,)
        Mean sort index and mean ``low`` of equal-count bins of consecutive pairs.
    """

    pairs: np.ndarray
    low: np.ndarray
    bin_position: np.ndarray
    bin_low: np.ndarray

    def plot(self, ax: Any = None):
        """See :func:`plot_sorted_distances`."""
        return plot_sorted_distances(self, ax)


@dataclass(frozen=True, eq=False)
class RelativeError:
    """Relative error of the normalised distances, ``|d_h - d_l| / d_h``.

    Both sets of distances are divided by their largest value (so they lie in [0, 1]: their
    magnitudes are arbitrary); a zero input-space distance is replaced by 1 in the
    denominator, as in reference 002.

    Attributes
    ----------
    pairs : ndarray of shape (P, 2)
        Point ids, in order of increasing input-space distance.
    high, low : ndarray of shape (P,)
        Normalised input-space (increasing) and embedding distances.
    signed_error : ndarray of shape (P,)
        ``(high - low) / high``: positive where the embedding shrinks the distance.
    error : ndarray of shape (P,)
        ``|signed_error|``.
    bin_position, bin_mean_error : ndarray of shape (n_bins,)
        Running average of ``error`` over equal-count bins, with each bin's mean sort index.
    mean_error, median_error : float
    """

    pairs: np.ndarray
    high: np.ndarray
    low: np.ndarray
    signed_error: np.ndarray
    error: np.ndarray
    bin_position: np.ndarray
    bin_mean_error: np.ndarray
    mean_error: float
    median_error: float

    def plot(self, ax: Any = None):
        """See :func:`plot_relative_error`."""
        return plot_relative_error(self, ax)


# -- computations on sorted pairs (shared with embedding_analysis) -----------------------------
def _sample(X, embedding, n_samples, random_state, metric):
    X, embedding = check_pair(X, embedding, metric, min_samples=3)
    ids = sample_points(X.shape[0], n_samples, _rng(random_state), low=3)
    return sample_pair_distances(X, embedding, ids, metric)


def _sort_index_change(pairs, high, low, n_bins) -> SortIndexChange:
    from scipy.stats import rankdata

    rank_high = rankdata(high) - 1.0
    rank_low = rankdata(low) - 1.0
    change = (rank_low - rank_high) / (high.shape[0] - 1)
    position, mean_abs = binned_mean(np.abs(change), n_bins)
    return SortIndexChange(pairs, high, rank_high, rank_low, change, position, mean_abs,
                           float(np.abs(change).mean()))


def _distance_comparison(pairs, high, low, n_bins) -> DistanceComparison:
    _, bin_high = binned_mean(high, n_bins)
    _, bin_low = binned_mean(low, n_bins)
    if np.ptp(high) > 0 and np.ptp(low) > 0:
        pearson = float(np.corrcoef(high, low)[0, 1])
    else:
        pearson = float("nan")
    norm = float(high @ high)
    slope = float(high @ low) / norm if norm > 0 else float("nan")
    return DistanceComparison(pairs, high, low, bin_high, bin_low, pearson, slope)


def _sorted_distances(pairs, high, low, n_bins) -> SortedDistances:
    position, bin_low = binned_mean(low, n_bins)
    return SortedDistances(pairs, low, position, bin_low)


def _relative_error(pairs, high, low, n_bins) -> RelativeError:
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
    """
    return _sort_index_change(*_sample(X, embedding, n_samples, random_state, metric), n_bins)


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
    """
    return _distance_comparison(*_sample(X, embedding, n_samples, random_state, metric),
                                n_bins)


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
    """
    return _sorted_distances(*_sample(X, embedding, n_samples, random_state, metric), n_bins)


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
    """
    return _relative_error(*_sample(X, embedding, n_samples, random_state, metric), n_bins)


# -- plots ---------------------------------------------------------------------------------------
# Pairs drawn in a scatter; the running average always uses all of them.
_MAX_SCATTER = 20_000


def _scatter_with_mean(ax, x, y, bin_x, bin_y, n_pairs):
    """Scatter of (at most ``_MAX_SCATTER`` evenly spaced) pairs and the running average."""
    if n_pairs > _MAX_SCATTER:
        keep = np.linspace(0, n_pairs - 1, _MAX_SCATTER).astype(np.int64)
        x, y = np.asarray(x)[keep], np.asarray(y)[keep]
    ax.scatter(x, y, s=point_size(x.shape[0]), c="#3465a4", alpha=0.5, linewidths=0,
               rasterized=True, label="pairs")
    ax.plot(bin_x, bin_y, c="#cc0000", lw=1.5, label="running average")
    ax.legend(loc="best", fontsize=8, frameon=False)


def plot_sort_index_change(result: SortIndexChange, ax: Any = None):
    """Absolute relative change in sort index against the input-space sort index.

    Parameters
    ----------
    result : SortIndexChange
    ax : matplotlib Axes, optional
        Where to draw; default: a new figure.

    Returns
    -------
    matplotlib Figure
    """
    fig, ax = new_axes(ax)
    n = result.change.shape[0]
    _scatter_with_mean(ax, np.arange(n), np.abs(result.change), result.bin_position,
                       result.bin_mean_abs_change, n)
    ax.set_xlabel("pair index, sorted by input-space distance")
    ax.set_ylabel("|relative change in sort index|")
    ax.set_ylim(0.0, 1.0)
    ax.set_title(f"Change in sort index (mean {result.mean_abs_change:.3f})")
    return fig


def plot_distance_comparison(result: DistanceComparison, ax: Any = None):
    """Embedding distance against input-space distance of every sampled pair.

    Parameters
    ----------
    result : DistanceComparison
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Figure
    """
    fig, ax = new_axes(ax)
    _scatter_with_mean(ax, result.high, result.low, result.bin_high, result.bin_low,
                       result.high.shape[0])
    ax.set_xlabel("input-space distance")
    ax.set_ylabel("embedding distance")
    ax.set_title(f"High- vs low-dimensional distance (r = {result.pearson:.3f})")
    return fig


def plot_sorted_distances(result: SortedDistances, ax: Any = None):
    """Embedding distances against the input-space sort index of their pair.

    Parameters
    ----------
    result : SortedDistances
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Figure
    """
    fig, ax = new_axes(ax)
    n = result.low.shape[0]
    _scatter_with_mean(ax, np.arange(n), result.low, result.bin_position, result.bin_low, n)
    ax.set_xlabel("pair index, sorted by input-space distance")
    ax.set_ylabel("embedding distance")
    ax.set_title("Sorted distances")
    return fig


def plot_relative_error(result: RelativeError, ax: Any = None):
    """Relative error of the normalised distances against the input-space sort index; the
    y-axis is cut at the 99th percentile so that the few near-zero distances do not hide the
    rest.

    Parameters
    ----------
    result : RelativeError
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Figure
    """
    fig, ax = new_axes(ax)
    n = result.error.shape[0]
    _scatter_with_mean(ax, np.arange(n), result.error, result.bin_position,
                       result.bin_mean_error, n)
    top = float(np.percentile(result.error, 99)) if n else 1.0
    ax.set_ylim(0.0, max(top, float(result.bin_mean_error.max(initial=0.0)), 1e-3) * 1.05)
    ax.set_xlabel("pair index, sorted by input-space distance")
    ax.set_ylabel("|d_h - d_l| / d_h (normalised)")
    ax.set_title(f"Relative error (median {result.median_error:.3f})")
    return fig

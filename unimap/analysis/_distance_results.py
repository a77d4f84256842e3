"""What the pairwise-distance analyses of :mod:`unimap.analysis._distances` return, and how it
is drawn: the frozen dataclasses :class:`SortIndexChange`, :class:`DistanceComparison`,
:class:`SortedDistances` and :class:`RelativeError` (numpy arrays over the sampled pairs and
their running averages) with their ``plot_*`` functions, which the dataclasses' ``.plot()``
call and :mod:`unimap.analysis._report` arranges into one figure. They live apart from the
computations to keep each module a readable size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from unimap.analysis._common import ShortRepr, new_axes, point_size

__all__ = [
    "SortIndexChange", "DistanceComparison", "SortedDistances", "RelativeError",
    "plot_sort_index_change", "plot_distance_comparison", "plot_sorted_distances",
    "plot_relative_error",
]


@dataclass(frozen=True, eq=False, repr=False)
class SortIndexChange(ShortRepr):
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


@dataclass(frozen=True, eq=False, repr=False)
class DistanceComparison(ShortRepr):
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


@dataclass(frozen=True, eq=False, repr=False)
class SortedDistances(ShortRepr):
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


@dataclass(frozen=True, eq=False, repr=False)
class RelativeError(ShortRepr):
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

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> embedding = unimap.PCA().fit_transform(X[:500])
    >>> result = analysis.sort_index_change(X[:500], embedding, n_samples=200, random_state=0)
    >>> fig = analysis.plot_sort_index_change(result)  # or result.plot()
    >>> type(fig).__name__
    'Figure'
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

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> embedding = unimap.PCA().fit_transform(X[:500])
    >>> result = analysis.distance_comparison(X[:500], embedding, n_samples=200, random_state=0)
    >>> fig = analysis.plot_distance_comparison(result)  # or result.plot()
    >>> type(fig).__name__
    'Figure'
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

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> embedding = unimap.PCA().fit_transform(X[:500])
    >>> result = analysis.sorted_distances(X[:500], embedding, n_samples=200, random_state=0)
    >>> fig = analysis.plot_sorted_distances(result)  # or result.plot()
    >>> type(fig).__name__
    'Figure'
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

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> embedding = unimap.PCA().fit_transform(X[:500])
    >>> result = analysis.relative_error(X[:500], embedding, n_samples=200, random_state=0)
    >>> fig = analysis.plot_relative_error(result)  # or result.plot()
    >>> type(fig).__name__
    'Figure'
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

"""Nearest-neighbour overlap of reference 002: for every point, which share of its
``[k, k + width)`` nearest neighbours in the input space are also its ``[k, k + width)``
nearest neighbours in the embedding, for a range of ``k``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from unimap.analysis._common import (
    RowOrder,
    ShortRepr,
    check_pair,
    new_axes,
    rows_per_block,
    sample_points,
)
from unimap.metrics.common import make_rng
from unimap.runtime.validation import check_int

__all__ = ["NeighborOverlap", "neighbor_overlap", "plot_neighbor_overlap"]


@dataclass(frozen=True, eq=False, repr=False)
class NeighborOverlap(ShortRepr):
    """Overlap of the ``[k, k + width)`` neighbourhoods in the input space and the embedding.

    Attributes
    ----------
    ks : ndarray of shape (n_ks,)
        Rank of the first neighbour of each band (1: the nearest other point).
    width : int
        Neighbours per band.
    anchors : ndarray of shape (n_anchors,)
        Ids of the points whose neighbourhoods were compared.
    per_anchor : ndarray of shape (n_anchors, n_ks)
        Share of the band of each anchor found in its embedding band, in [0, 1].
    overlap : ndarray of shape (n_ks,)
        Mean of ``per_anchor`` over the anchors.
    chance : float
        Expected overlap of an embedding unrelated to the data, ``width / (n_points - 1)``.
    """

    ks: np.ndarray
    width: int
    anchors: np.ndarray
    per_anchor: np.ndarray
    overlap: np.ndarray
    chance: float

    def plot(self, ax: Any = None):
        """See :func:`plot_neighbor_overlap`."""
        return plot_neighbor_overlap(self, ax)


def _check_ks(ks: Any, n: int, width: int) -> np.ndarray:
    last = n - width  # the band [k, k + width) must fit in the n - 1 other points
    if last < 1:
        raise ValueError(
            f"width={width} needs more than {width} points (n_points - 1 other points hold "
            f"the bands), got {n} points"
        )
    if ks is None:
        return np.unique(np.round(np.geomspace(1, last, num=min(50, last))).astype(np.int64))
    arr = np.asarray(ks)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise ValueError(f"ks must be a non-empty 1-D sequence of integers, got {ks!r}")
    if arr.min() < 1 or arr.max() > last:
        raise ValueError(
            f"ks must lie in [1, n_points - width] = [1, {last}] (the band [k, k + {width}) "
            f"of the {n - 1} other points), got values from {arr.min()} to {arr.max()}"
        )
    return np.unique(arr.astype(np.int64))


def _ordered_neighbors(dist: np.ndarray, local: np.ndarray, anchors: np.ndarray,
                       depth: int) -> np.ndarray:
    """The ``depth`` nearest other points of each row, nearest first (the anchor itself,
    wherever duplicates put it, excluded; exact ties in any order)."""
    dist[local, anchors] = -np.inf  # the point itself sorts first, ahead of its duplicates
    n = dist.shape[1]
    if depth + 1 < n:
        part = np.argpartition(dist, depth, axis=1)[:, : depth + 1]
        order = np.argsort(np.take_along_axis(dist, part, axis=1), axis=1)
        order = np.take_along_axis(part, order, axis=1)
    else:
        order = np.argsort(dist, axis=1)
    return order[:, 1 : depth + 1]


def _band_overlap(high: np.ndarray, low: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Shared members of the bands ``high[:, columns[j]]`` and ``low[:, columns[j]]`` per row
    and band: the members of one band are distinct, so every repeat in the sorted union of two
    bands is one shared point."""
    both = np.concatenate([high[:, columns], low[:, columns]], axis=2)
    both.sort(axis=2)
    return (both[:, :, 1:] == both[:, :, :-1]).sum(axis=2)


def neighbor_overlap(
    X: Any,
    embedding: Any,
    ks: Any = None,
    width: int = 10,
    n_samples: int = 1000,
    random_state: Any = None,
    *,
    metric: str = "euclidean",
) -> NeighborOverlap:
    """Nearest-neighbour overlap (reference 002): for every sampled point, the share of its
    ``k``-th to ``(k + width - 1)``-th nearest neighbours in the input space that are also its
    ``k``-th to ``(k + width - 1)``-th nearest neighbours in the embedding.

    Neighbours are ranked among all points (exactly, by blocks of sampled points, never an
    ``n × n`` matrix), so ``k`` is a true neighbour rank of the data. t-SNE and UMAP keep the
    smallest bands and lose the middle ranks; an isometry keeps every band (overlap 1); an
    embedding unrelated to the data scores about ``width / (n_points - 1)``.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features), or (n_points, n_points)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_points, n_components)
    ks : sequence of int, optional
        First rank of each band, in ``[1, n_points - width]`` (1: the nearest other point);
        sorted, duplicates dropped. Default: up to 50 values spaced geometrically over that
        whole range.
    width : int, default=10
        Neighbours per band.
    n_samples : int, default=1000
        Points whose neighbourhoods are compared (all points when there are fewer). The cost
        is ``O(n_samples · n_points · (n_features + log n_points))`` time and one prepared
        (centred or normalised) copy of ``X``.
    random_state : int, numpy Generator or None, default=None
        Seed of the sample.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, \
default="euclidean"
        Distance in the input space; the embedding is euclidean.

    Returns
    -------
    NeighborOverlap

    Examples
    --------
    >>> import unimap
    >>> from unimap import analysis
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> embedding = unimap.PCA().fit_transform(X[:500])
    >>> result = analysis.neighbor_overlap(X[:500], embedding, n_samples=200, random_state=0)
    >>> result.per_anchor.shape == (200, result.ks.size)
    True
    >>> bool(result.overlap[0] > result.chance)  # nearest neighbours: better than chance
    True
    """
    X, embedding = check_pair(X, embedding, metric, min_samples=2)
    n = X.shape[0]
    width = check_int(width, "width", 1)
    ks = _check_ks(ks, n, width)
    anchors = sample_points(n, n_samples, make_rng(random_state))
    depth = int(ks.max()) + width - 1
    columns = (ks - 1)[:, None] + np.arange(width)[None, :]
    high_order, low_order = RowOrder(X, metric), RowOrder(embedding, "euclidean")
    shared = np.empty((anchors.shape[0], ks.shape[0]), dtype=np.int64)
    block = rows_per_block(n)
    for start in range(0, anchors.shape[0], block):
        rows = anchors[start : start + block]
        local = np.arange(rows.shape[0])
        high = _ordered_neighbors(high_order(rows), local, rows, depth)
        low = _ordered_neighbors(low_order(rows), local, rows, depth)
        shared[start : start + rows.shape[0]] = _band_overlap(high, low, columns)
    per_anchor = shared / width
    return NeighborOverlap(ks, width, anchors, per_anchor, per_anchor.mean(axis=0),
                           width / (n - 1))


def plot_neighbor_overlap(result: NeighborOverlap, ax: Any = None):
    """Mean overlap of each band against its first rank ``k`` (log scale for a wide range),
    with the interquartile range over the anchors and the chance level.

    Parameters
    ----------
    result : NeighborOverlap
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
    >>> result = analysis.neighbor_overlap(X[:500], embedding, n_samples=200, random_state=0)
    >>> fig = analysis.plot_neighbor_overlap(result)  # or result.plot()
    >>> type(fig).__name__
    'Figure'
    """
    fig, ax = new_axes(ax)
    ks = result.ks
    low, high = np.percentile(result.per_anchor, [25, 75], axis=0)
    ax.fill_between(ks, low, high, color="#3465a4", alpha=0.2, lw=0, label="interquartile")
    ax.plot(ks, result.overlap, c="#3465a4", marker="o", ms=3, label="mean")
    ax.axhline(result.chance, c="#888888", ls="--", lw=1, label="chance")
    if ks.max() >= 100 * ks.min():
        ax.set_xscale("log")
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel(f"k (band of neighbours k to k + {result.width - 1})")
    ax.set_ylabel("neighbour overlap")
    ax.set_title("Nearest-neighbour overlap")
    ax.legend(loc="best", fontsize=8, frameon=False)
    return fig

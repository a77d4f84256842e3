"""Global structure: how well an embedding keeps the distance order of random triplets and the
distance ranks of random pairs."""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.metrics import common
from unimap.metrics.checks import check_pair
from unimap.metrics.common import make_rng, prepare_rows
from unimap.runtime.validation import check_int


def _paired_distances(X: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray,
                      metric: str) -> np.ndarray:
    """``metric`` distances between ``X[rows_a[p]]`` and ``X[rows_b[p]]`` (float64), by batches."""
    if metric == "precomputed":
        return X[rows_a, rows_b].astype(np.float64)
    out = np.empty(rows_a.shape[0], dtype=np.float64)
    batch = max(1, common.BLOCK_BYTES // (16 * X.shape[1]))
    for start in range(0, rows_a.shape[0], batch):
        a = np.asarray(X[rows_a[start : start + batch]], dtype=np.float64)
        b = np.asarray(X[rows_b[start : start + batch]], dtype=np.float64)
        if metric == "manhattan":
            d = np.abs(a - b).sum(axis=1)
        elif metric == "euclidean":
            d = np.sqrt(np.einsum("ij,ij->i", a - b, a - b))
        else:  # cosine and correlation: 1 - cosine similarity of (centred) rows
            a, b = prepare_rows(a, metric), prepare_rows(b, metric)
            d = 1.0 - np.einsum("ij,ij->i", a, b)
        out[start : start + batch] = d
    return out


def _both_distances(X: np.ndarray, embedding: np.ndarray, rows_a: np.ndarray,
                    rows_b: np.ndarray, metric: str):
    """Distances between the points ``rows_a[p]`` and ``rows_b[p]`` in both spaces: by
    ``metric`` in the input space ``X``, euclidean in the embedding."""
    return (_paired_distances(X, rows_a, rows_b, metric),
            _paired_distances(embedding, rows_a, rows_b, "euclidean"))


def _distinct_pairs(rng: np.random.Generator, n: int, size: int):
    """``size`` random pairs of distinct ids in ``[0, n)``, uniform over ordered pairs."""
    first = rng.integers(0, n, size=size)
    second = (first + 1 + rng.integers(0, n - 1, size=size)) % n
    return first, second


def triplet_accuracy(
    X: Any,
    embedding: Any,
    n_triplets: int = 10000,
    random_state: Any = None,
    *,
    metric: str = "euclidean",
) -> float:
    """Fraction of random triplets whose distance order the embedding keeps.

    For triplets ``(i, j, l)`` of distinct points drawn uniformly (with replacement between
    triplets), counts how often ``d(i, j) < d(i, l)`` is true in the input space exactly when
    it is true in the embedding. A measure of global structure: random guessing scores 0.5.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_samples, n_components)
    n_triplets : int, default=10000
    random_state : int, numpy Generator or None, default=None
        Seed of the triplets.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, \
default="euclidean"
        Distance in the input space; the embedding is euclidean.

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.metrics import triplet_accuracy
    >>> X = np.random.default_rng(0).normal(size=(500, 10))
    >>> triplet_accuracy(X, 3 * X + 1, random_state=0)  # same order of all distances
    1.0
    >>> bool(0.4 < triplet_accuracy(X, X[::-1], random_state=0) < 0.6)  # shuffled: chance
    True
    """
    X, embedding = check_pair(X, embedding, metric, min_samples=3)
    n = X.shape[0]
    size = check_int(n_triplets, "n_triplets", 1)
    rng = make_rng(random_state)
    anchor, near = _distinct_pairs(rng, n, size)
    # Third point uniform over the n - 2 others: skip the two taken ids in increasing order.
    low, high = np.minimum(anchor, near), np.maximum(anchor, near)
    far = rng.integers(0, n - 2, size=size)
    far += far >= low
    far += far >= high
    input_near, embedding_near = _both_distances(X, embedding, anchor, near, metric)
    input_far, embedding_far = _both_distances(X, embedding, anchor, far, metric)
    return float(((input_near < input_far) == (embedding_near < embedding_far)).mean())


def distance_correlation(
    X: Any,
    embedding: Any,
    n_pairs: int = 100000,
    random_state: Any = None,
    *,
    metric: str = "euclidean",
) -> float:
    """Spearman rank correlation between input and embedding distances of random pairs.

    Pairs of distinct points are drawn uniformly (with replacement between pairs); their
    ``metric`` distances in the input space and euclidean distances in the embedding are
    compared with :func:`scipy.stats.spearmanr`. A measure of global structure.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_samples, n_components)
    n_pairs : int, default=100000
        At least 2.
    random_state : int, numpy Generator or None, default=None
        Seed of the pairs.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, \
default="euclidean"
        Distance in the input space; the embedding is euclidean.

    Returns
    -------
    float
        In [-1, 1]; NaN (with scipy's warning) when either set of distances is constant.

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.metrics import distance_correlation
    >>> X = np.random.default_rng(0).normal(size=(500, 10))
    >>> round(distance_correlation(X, 2 * X, random_state=0), 6)  # distances in the same order
    1.0
    >>> bool(distance_correlation(X, X[:, :2], random_state=0) > 0.3)  # two of ten columns
    True
    """
    from scipy.stats import spearmanr

    X, embedding = check_pair(X, embedding, metric, min_samples=2)
    size = check_int(n_pairs, "n_pairs", 2)
    first, second = _distinct_pairs(make_rng(random_state), X.shape[0], size)
    input_dist, embedding_dist = _both_distances(X, embedding, first, second, metric)
    return float(spearmanr(input_dist, embedding_dist).statistic)

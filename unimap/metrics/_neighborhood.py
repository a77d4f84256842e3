"""Neighbourhood and class preservation: kNN recall and kNN classification accuracy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from unimap.metrics import common
from unimap.metrics.checks import check_labels, check_pair
from unimap.metrics.common import make_rng
from unimap.neighbors.graph import NeighborIndex, nearest_neighbors
from unimap.runtime.validation import check_array, check_int


def drop_self(indices: np.ndarray, query_ids: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` entries of each row other than the query itself.

    Rows that do not contain the query (exact duplicates tie with it at distance 0) keep their
    first ``k`` entries.
    """
    others = indices != query_ids[:, None]
    order = np.argsort(~others, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(indices, order, axis=1).astype(np.int64)


def exact_neighbors(data: np.ndarray, query_ids: np.ndarray | None, k: int, metric: str,
                     n_jobs: Any) -> np.ndarray:
    """Exact ``k`` nearest other points of each query (all points when ``query_ids`` is None)."""
    if query_ids is None:
        graph, _ = nearest_neighbors(data, k + 1, metric=metric, method="exact", n_jobs=n_jobs)
        return graph.indices[:, 1:].astype(np.int64)
    index = NeighborIndex(metric=metric, method="exact", n_jobs=n_jobs).build(data)
    indices, _ = index.query(data[query_ids], k + 1)
    return drop_self(indices, query_ids, k)


def sample_queries(n_samples: int, sample_size: Any, random_state: Any) -> np.ndarray | None:
    """Sorted random query points without replacement, or None for all of them."""
    if sample_size is None:
        return None
    size = check_int(sample_size, "sample_size", 1)
    if size >= n_samples:
        return None
    return np.sort(make_rng(random_state).choice(n_samples, size=size, replace=False))


def _shared_count(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row, how many ids ``a`` and ``b`` have in common (ids within a row are distinct)."""
    both = np.sort(np.concatenate([a, b], axis=1), axis=1)
    return (both[:, 1:] == both[:, :-1]).sum(axis=1)


def _majority_vote(neighbor_labels: np.ndarray) -> np.ndarray:
    """Most frequent label of each row; ties go to the label of the nearest tied neighbour.

    Each position is scored by how often its own label occurs in the row; ``argmax`` returns
    the first (nearest) position with the top score.
    """
    m, k = neighbor_labels.shape
    out = np.empty(m, dtype=neighbor_labels.dtype)
    batch = max(1, common.BLOCK_BYTES // (k * k))
    for start in range(0, m, batch):
        labels = neighbor_labels[start : start + batch]
        counts = (labels[:, :, None] == labels[:, None, :]).sum(axis=2)
        out[start : start + batch] = labels[np.arange(labels.shape[0]), counts.argmax(axis=1)]
    return out


def knn_recall(
    X: Any,
    embedding: Any,
    n_neighbors: int = 15,
    *,
    metric: str = "euclidean",
    sample_size: int | None = None,
    random_state: Any = None,
    n_jobs: int = -1,
) -> float:
    """Neighbourhood preservation: the mean fraction of each point's ``k`` nearest input
    neighbours that are also among its ``k`` nearest embedding neighbours.

    Both neighbour sets are exact (:mod:`unimap.neighbors.graph`, ``method="exact"``) and exclude
    the point itself.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_samples, n_components)
    n_neighbors : int, default=15
        ``k``, at most ``n_samples - 1``.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, \
default="euclidean"
        Distance in the input space; the embedding is euclidean.
    sample_size : int, optional
        Evaluate on this many random query points (neighbours are still searched among all
        points): an unbiased estimate in ``O(sample_size · n)`` time. Default (or a size of
        at least ``n_samples``): all points.
    random_state : int, numpy Generator or None, default=None
        Seed of the sample (unused without ``sample_size``).
    n_jobs : int, default=-1
        Threads (-1: all cores).

    Returns
    -------
    float
        In [0, 1]; 1 when every neighbourhood is kept.

    Examples
    --------
    >>> import unimap
    >>> from unimap.datasets import load_digits
    >>> from unimap.metrics import knn_recall
    >>> X, _ = load_digits()
    >>> umap = unimap.UMAP(random_state=0).fit_transform(X)
    >>> pca = unimap.PCA().fit_transform(X)
    >>> bool(knn_recall(X, umap) > knn_recall(X, pca))
    True
    >>> knn_recall(X, X)
    1.0
    """
    X, embedding = check_pair(X, embedding, metric, min_samples=2)
    n = X.shape[0]
    k = check_int(n_neighbors, "n_neighbors", 1, n - 1)
    query_ids = sample_queries(n, sample_size, random_state)
    input_neighbors = exact_neighbors(X, query_ids, k, metric, n_jobs)
    embedding_neighbors = exact_neighbors(embedding, query_ids, k, "euclidean", n_jobs)
    return float(_shared_count(input_neighbors, embedding_neighbors).mean() / k)


def knn_accuracy(
    embedding: Any,
    labels: Any,
    n_neighbors: int = 10,
    n_folds: int = 5,
    random_state: Any = 0,
    *,
    n_jobs: int = -1,
) -> float:
    """Accuracy of a k-nearest-neighbour classifier in the embedding, by k-fold cross-validation.

    The points are shuffled and split into ``n_folds`` folds of near-equal size (for an
    integer seed, ``np.array_split(np.random.default_rng(random_state).permutation(n),
    n_folds)``); each fold is classified by majority vote of its ``k`` nearest (euclidean,
    exact) points among the other folds, ties going to the label of the nearest tied
    neighbour.

    Parameters
    ----------
    embedding : array-like of shape (n_samples, n_components)
    labels : array-like of shape (n_samples,)
        Class of each point (any sortable values).
    n_neighbors : int, default=10
        ``k``, at most the size of the smallest training set, ``n - ceil(n / n_folds)``.
    n_folds : int, default=5
        Between 2 and ``n_samples``.
    random_state : int, numpy Generator or None, default=0
        Seed of the shuffle.
    n_jobs : int, default=-1
        Threads (-1: all cores).

    Returns
    -------
    float
        Fraction of all points classified correctly (every point is tested once).

    Examples
    --------
    >>> import unimap
    >>> from unimap.datasets import load_digits
    >>> from unimap.metrics import knn_accuracy
    >>> X, y = load_digits()
    >>> umap = unimap.UMAP(random_state=0).fit_transform(X)
    >>> accuracy = knn_accuracy(umap, y)  # 5 seeded folds: the same value every run
    >>> bool(accuracy > 0.95), accuracy == knn_accuracy(umap, y)
    (True, True)
    """
    embedding = check_array(embedding, "embedding", min_samples=2)
    n = embedding.shape[0]
    codes = check_labels(labels, n)
    n_folds = check_int(n_folds, "n_folds", 2, n)
    k = check_int(n_neighbors, "n_neighbors", 1, n - math.ceil(n / n_folds))
    folds = np.array_split(make_rng(random_state).permutation(n), n_folds)
    correct = 0
    for test in folds:
        is_train = np.ones(n, dtype=bool)
        is_train[test] = False
        train = np.flatnonzero(is_train)
        index = NeighborIndex(method="exact", n_jobs=n_jobs).build(embedding[train])
        neighbors, _ = index.query(embedding[test], k)
        predicted = _majority_vote(codes[train][neighbors])
        correct += int((predicted == codes[test]).sum())
    return correct / n


def knn_accuracy_loo(
    embedding: Any,
    labels: Any,
    n_neighbors: int = 10,
    *,
    n_jobs: int = -1,
) -> float:
    """Leave-one-out accuracy of a k-nearest-neighbour classifier in the embedding.

    Each point is classified by majority vote of its ``k`` nearest other points (euclidean,
    exact), ties going to the label of the nearest tied neighbour.

    Parameters
    ----------
    embedding : array-like of shape (n_samples, n_components)
    labels : array-like of shape (n_samples,)
        Class of each point (any sortable values).
    n_neighbors : int, default=10
        ``k``, at most ``n_samples - 1``.
    n_jobs : int, default=-1
        Threads (-1: all cores).

    Returns
    -------
    float
        Fraction of points classified correctly.

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.metrics import knn_accuracy_loo
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat([0, 1], 50)
    >>> apart = rng.normal(size=(100, 2)) + 10 * labels[:, None]  # two far clusters
    >>> knn_accuracy_loo(apart, labels)
    1.0
    >>> bool(knn_accuracy_loo(rng.normal(size=(100, 2)), labels) < 0.8)  # no structure
    True
    """
    embedding = check_array(embedding, "embedding", min_samples=2)
    n = embedding.shape[0]
    codes = check_labels(labels, n)
    k = check_int(n_neighbors, "n_neighbors", 1, n - 1)
    neighbors = exact_neighbors(embedding, None, k, "euclidean", n_jobs)
    return float((_majority_vote(codes[neighbors]) == codes).mean())

"""Per-point neighbourhood preservation ("trust"): how much of each point's neighbourhood in the
data its place in the embedding keeps. The mean over all points is
:func:`unimap.metrics.knn_recall`; drawn per point it shows *where* a map can be trusted
(:func:`unimap.plotting.plot_trust`, the ``trust`` layer of :func:`unimap.plotting.save_html`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.neighbors.graph import nearest_neighbors
from unimap.runtime.validation import check_array, check_int

__all__ = ["neighborhood_preservation", "TRUST_COLUMN"]

TRUST_COLUMN = "trust"


def _neighbors(A: Any, k: int, metric: str, method: str, n_jobs: int,
               random_state: int | None) -> np.ndarray:
    graph, _ = nearest_neighbors(A, k + 1, metric=metric, method=method, n_jobs=n_jobs,
                                 random_state=random_state)
    return np.asarray(graph.indices[:, 1:], dtype=np.int64)  # column 0 is the point itself


def neighborhood_preservation(
    X: Any,
    embedding: Any,
    n_neighbors: int = 15,
    *,
    metric: str = "euclidean",
    method: str = "auto",
    n_jobs: int = -1,
    random_state: int | None = 0,
) -> np.ndarray:
    """The fraction of each point's ``k`` nearest neighbours in the data that are also among its
    ``k`` nearest neighbours in the embedding.

    Both neighbour sets come from :func:`unimap.neighbors.graph.nearest_neighbors` and leave
    the point itself out; their mean over all points is :func:`unimap.metrics.knn_recall`
    (exactly, with ``method="exact"``).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The data the embedding was made from (a square distance matrix when
        ``metric="precomputed"``).
    embedding : array-like of shape (n_samples, n_components)
        Usually the two columns that are drawn; neighbours there are euclidean.
    n_neighbors : int, default=15
        ``k``, at most ``n_samples - 1``.
    metric : str, default="euclidean"
        The data's distance (any metric of :class:`unimap.neighbors.graph.NeighborIndex`).
    method : {"auto", "exact", "hnsw", "nndescent"}, default="auto"
        The kNN backend: exact up to 20,000 points with "auto", approximate beyond.
    n_jobs : int, default=-1
        Threads (-1: all cores).
    random_state : int or None, default=0
        Seed of the approximate backends.

    Returns
    -------
    ndarray of float64, shape (n_samples,)
        Each in [0, 1], in steps of ``1 / k``; 1 where the whole neighbourhood is kept.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 10))
    >>> scores = neighborhood_preservation(X, X[:, :2], n_neighbors=10)
    >>> scores.shape, bool(0.0 <= scores.min() <= scores.max() <= 1.0)
    ((200,), True)
    >>> float(neighborhood_preservation(X, X, n_neighbors=10).mean())
    1.0
    """
    X = check_array(X, "X", accept_sparse=metric != "precomputed", min_samples=2,
                    dtype=None if getattr(X, "dtype", None) in (np.float32, np.float64)
                    else np.float64)
    embedding = check_array(embedding, "embedding", min_samples=2, dtype=np.float64)
    n = X.shape[0]
    if embedding.shape[0] != n:
        raise ValueError(f"X has {n} samples but embedding has {embedding.shape[0]}; they "
                         "must correspond row for row")
    k = check_int(n_neighbors, "n_neighbors", 1, n - 1)
    in_data = _neighbors(X, k, metric, method, n_jobs, random_state)
    in_embedding = _neighbors(embedding, k, "euclidean", method, n_jobs, random_state)
    # ids within a row are distinct: a shared id shows up as two equal neighbours when sorted
    both = np.sort(np.concatenate([in_data, in_embedding], axis=1), axis=1)
    return (both[:, 1:] == both[:, :-1]).sum(axis=1) / k

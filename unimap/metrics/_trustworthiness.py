"""Trustworthiness and continuity: exact (identical to scikit-learn's ``trustworthiness``)
and sampled (an unbiased estimate with a standard error, linear in the number of points)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from unimap.metrics import common
from unimap.metrics.checks import check_pair, check_trustworthiness_neighbors
from unimap.metrics.common import make_rng, prepare_rows
from unimap.runtime.threads import numba_threads, resolve_n_jobs
from unimap.runtime.validation import check_int

# Metrics the sampled trustworthiness ranks by: all three are euclidean on prepared rows.
_SAMPLED_METRICS = ("euclidean", "cosine", "correlation")


class SampledScore(NamedTuple):
    """An estimate computed on a random sample of points, with its standard error.

    A named tuple, so it unpacks as ``value, stderr = trustworthiness_sampled(...)`` and also
    reads as ``score.value`` / ``score.stderr``.

    Examples
    --------
    >>> from unimap.metrics import SampledScore
    >>> value, stderr = SampledScore(value=0.95, stderr=0.01)
    >>> value, stderr
    (0.95, 0.01)
    """

    value: float
    stderr: float


def _sorted_thresholds(thresholds: np.ndarray, neighbors: np.ndarray):
    order = np.argsort(thresholds, axis=1, kind="stable")
    return (np.ascontiguousarray(np.take_along_axis(thresholds, order, axis=1)),
            np.ascontiguousarray(np.take_along_axis(neighbors, order, axis=1)))


def _exact_rank_penalty(rank_data, rank_metric: str, neighbors: np.ndarray) -> float:
    """``Σ_i Σ_{j ∈ neighbors[i]} max(0, r(i, j) - k)``, ``r`` the rank of ``j`` among the
    ``rank_metric`` distances from ``i`` to all other points, exactly as scikit-learn ranks.

    scikit-learn sorts each full distance row (diagonal set to inf) with numpy's default,
    unstable sort. Here the distances come from the same ``pairwise_distances`` call (for
    more than ~2,900 points, in blocks of rows: the BLAS could then round a distance
    differently in the last bit, which matters only for near-exact ties) and each
    neighbour's rank is counted (number of smaller distances + 1); only the rows where a
    neighbour ties with another point and the tie can change the penalty are sorted as
    scikit-learn sorts them, so that the tie order, hence the result, is the same.
    """
    from sklearn.metrics import pairwise_distances

    from unimap.metrics.ranks_numba import rank_counts

    n, k = neighbors.shape
    rows_per_block = max(1, min(n, common.BLOCK_BYTES // (8 * n)))
    total = 0
    for start in range(0, n, rows_per_block):
        stop = min(n, start + rows_per_block)
        if rank_metric == "precomputed":
            dist = np.array(rank_data[start:stop], copy=True)
        elif rows_per_block == n:  # the very call scikit-learn makes (it may use syrk for X·Xᵀ)
            dist = pairwise_distances(rank_data, metric=rank_metric)
        else:
            dist = pairwise_distances(rank_data[start:stop], rank_data, metric=rank_metric)
        dist = np.ascontiguousarray(dist)
        local = np.arange(stop - start)
        dist[local, start + local] = np.inf
        block_neighbors = neighbors[start:stop]
        thresholds, sorted_ids = _sorted_thresholds(
            np.take_along_axis(dist, block_neighbors, axis=1), block_neighbors
        )
        less, equal, ties_before = (np.zeros((stop - start, k), np.int64) for _ in range(3))
        own = np.empty((stop - start, k), dtype=dist.dtype)
        rank_counts(dist, 1.0, np.zeros(stop - start), np.zeros(n), 0, start + local,
                    thresholds, sorted_ids, less, equal, ties_before, own)
        ranks = less + 1
        ambiguous = ((equal > 1) & (less + equal > k)).any(axis=1)
        if ambiguous.any():
            rows = np.flatnonzero(ambiguous)
            order = np.argsort(dist[rows], axis=1)  # numpy's default kind, as scikit-learn
            positions = np.empty_like(order)
            np.put_along_axis(positions, order, np.arange(1, n + 1)[None, :], axis=1)
            ranks[rows] = np.take_along_axis(positions, sorted_ids[rows], axis=1)
        total += int(np.maximum(ranks - k, 0).sum())
    return float(total)


def _trustworthiness_from_penalty(penalty: float, n: int, k: int) -> float:
    return 1.0 - penalty * (2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0)))


def _sklearn_neighbors(data, k: int, metric: str, n_jobs: Any) -> np.ndarray:
    """The ``k`` nearest other points of each point, found as scikit-learn's
    ``trustworthiness`` finds them (``NearestNeighbors.kneighbors()``, self excluded)."""
    from sklearn.neighbors import NearestNeighbors

    if metric == "euclidean":  # scikit-learn's default (minkowski, p=2), picked identically
        model = NearestNeighbors(n_neighbors=k, n_jobs=n_jobs)
    else:
        model = NearestNeighbors(n_neighbors=k, metric=metric, n_jobs=n_jobs)
    return model.fit(data).kneighbors(return_distance=False).astype(np.int64)


def trustworthiness(
    X: Any,
    embedding: Any,
    n_neighbors: int = 5,
    metric: str = "euclidean",
    *,
    n_jobs: int = -1,
) -> float:
    r"""How far the embedding's neighbourhoods can be trusted to be neighbourhoods of the data.

    .. math::

        T(k) = 1 - \frac{2}{nk(2n - 3k - 1)} \sum_{i=1}^{n}
            \sum_{j \in \mathcal{N}^{E}_k(i)} \max(0, r_X(i, j) - k)

    where :math:`\mathcal{N}^{E}_k(i)` are the ``k`` nearest other points of ``i`` in the
    embedding and :math:`r_X(i, j)` is the rank of ``j`` among the distances from ``i`` in the
    input space (1 for the nearest). Points that are embedding neighbours without being input
    neighbours are penalised by how far away they really are (Venna & Kaski, 2001).

    The result is identical to :func:`sklearn.manifold.trustworthiness`: the same
    ``pairwise_distances`` values, the same embedding neighbours (``NearestNeighbors``) and,
    for input distances that tie, the same rank order (numpy's default sort, which is not
    stable). Unlike scikit-learn it never holds an ``n × n`` integer rank matrix, and beyond
    ~2,900 points the distances come in blocks of rows (64 MiB), so memory stays bounded;
    each neighbour's rank is counted rather than sorted. Time is still ``O(n²·d)``: for large
    data use :func:`trustworthiness_sampled`.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features), or (n_samples, n_samples)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_samples, n_components)
    n_neighbors : int, default=5
        ``k``; must be less than ``n_samples / 2`` (as scikit-learn requires) for the value to
        lie in [0, 1].
    metric : str, default="euclidean"
        Distance in the input space: "euclidean", "cosine", "correlation", "manhattan" or
        "precomputed"; the embedding is always euclidean.
    n_jobs : int, default=-1
        Threads for the neighbour search and the rank counting (-1: all cores).

    Returns
    -------
    float
        In [0, 1]; 1 when every embedding neighbour is among the ``k`` nearest input points.

    See Also
    --------
    continuity : the converse (input neighbours kept in the embedding).
    trustworthiness_sampled : unbiased estimate in ``O(n)`` time per sampled point.

    Examples
    --------
    >>> import unimap
    >>> from unimap.datasets import load_digits
    >>> from unimap.metrics import trustworthiness
    >>> X, _ = load_digits()
    >>> umap = unimap.UMAP(random_state=0).fit_transform(X)
    >>> pca = unimap.PCA().fit_transform(X)
    >>> bool(trustworthiness(X, umap, n_neighbors=15) > trustworthiness(X, pca, n_neighbors=15))
    True
    >>> round(trustworthiness(X, X[:, ::-1]), 4)  # the same distances (up to ties)
    1.0
    """
    X, embedding = check_pair(X, embedding, metric, accept_sparse=True)
    n = X.shape[0]
    k = check_trustworthiness_neighbors(n_neighbors, n)
    n_threads = resolve_n_jobs(n_jobs)
    neighbors = _sklearn_neighbors(embedding, k, "euclidean", n_threads)
    with numba_threads(n_threads):
        penalty = _exact_rank_penalty(X, metric, neighbors)
    return _trustworthiness_from_penalty(penalty, n, k)


def continuity(
    X: Any,
    embedding: Any,
    n_neighbors: int = 5,
    metric: str = "euclidean",
    *,
    n_jobs: int = -1,
) -> float:
    r"""How well the data's neighbourhoods stay together in the embedding.

    :func:`trustworthiness` with the two spaces swapped: the ``k`` nearest other points of
    ``i`` are found in the input space (with ``metric``) and ranked by their euclidean
    distance from ``i`` in the embedding,

    .. math::

        C(k) = 1 - \frac{2}{nk(2n - 3k - 1)} \sum_{i=1}^{n}
            \sum_{j \in \mathcal{N}^{X}_k(i)} \max(0, r_E(i, j) - k).

    For ``metric="euclidean"`` this equals ``sklearn.manifold.trustworthiness(embedding, X)``
    exactly (same neighbours, same tie order).

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features), or (n_samples, n_samples)
        The data; a square distance matrix when ``metric="precomputed"``.
    embedding : array-like of shape (n_samples, n_components)
    n_neighbors : int, default=5
        ``k``; must be less than ``n_samples / 2``.
    metric : str, default="euclidean"
        Distance in the input space: "euclidean", "cosine", "correlation", "manhattan" or
        "precomputed".
    n_jobs : int, default=-1
        Threads (-1: all cores).

    Returns
    -------
    float
        In [0, 1]; 1 when every input neighbour is among the ``k`` nearest embedding points.

    Examples
    --------
    >>> import unimap
    >>> from unimap.datasets import load_digits
    >>> from unimap.metrics import continuity
    >>> X, _ = load_digits()
    >>> umap = unimap.UMAP(random_state=0).fit_transform(X)
    >>> bool(0.9 < continuity(X, umap, n_neighbors=15) <= 1.0)
    True
    """
    X, embedding = check_pair(X, embedding, metric, accept_sparse=True)
    n = X.shape[0]
    k = check_trustworthiness_neighbors(n_neighbors, n)
    n_threads = resolve_n_jobs(n_jobs)
    neighbors = _sklearn_neighbors(X, k, metric, n_threads)
    with numba_threads(n_threads):
        penalty = _exact_rank_penalty(embedding, "euclidean", neighbors)
    return _trustworthiness_from_penalty(penalty, n, k)


def _embedding_neighbors(embedding: np.ndarray, query_ids: np.ndarray, k: int) -> np.ndarray:
    """Exact ``k`` nearest other embedding points of each query (float64, ties by index)."""
    from unimap.metrics.ranks_numba import knn_brute_force

    data = np.ascontiguousarray(embedding, dtype=np.float64)
    indices = np.empty((query_ids.shape[0], k), dtype=np.int64)
    sq_dist = np.empty((query_ids.shape[0], k), dtype=np.float64)
    knn_brute_force(data, query_ids, k, indices, sq_dist)
    return indices


def _sampled_rank_penalties(X: np.ndarray, metric: str, query_ids: np.ndarray,
                            neighbors: np.ndarray) -> np.ndarray:
    """Per query ``Σ_{j ∈ neighbors} max(0, r(i, j) - k)``, the rank ``r`` of ``j`` among the
    input distances from the query to all other points (ties: smaller index first).

    Squared distances ``|q|² + |x|² - 2 q·x`` come in float64 blocks of data rows (one BLAS
    product per block, memory ``O(n_queries × block)``, the kernel adding the norms) and the
    kernel counts, per query and neighbour, the points closer than the neighbour. The
    neighbours' own distances (the thresholds) are summed coordinate by coordinate; the value
    a block holds for the neighbour itself may differ from that in the last bit, so the
    neighbour's own column is taken back out of its count.
    """
    from unimap.metrics.ranks_numba import rank_counts

    n = X.shape[0]
    m, k = neighbors.shape
    queries = prepare_rows(X[query_ids], metric)
    query_sq_norms = np.einsum("ij,ij->i", queries, queries)
    thresholds = np.empty((m, k), dtype=np.float64)
    for col in range(k):
        diff = prepare_rows(X[neighbors[:, col]], metric) - queries
        thresholds[:, col] = np.einsum("ij,ij->i", diff, diff)
    thresholds, sorted_ids = _sorted_thresholds(thresholds, neighbors)

    less, equal, ties_before = (np.zeros((m, k), np.int64) for _ in range(3))
    own = np.full((m, k), np.nan)
    block = max(1, min(n, common.BLOCK_BYTES // (8 * max(m, X.shape[1]))))
    for start in range(0, n, block):
        rows = prepare_rows(X[start : start + block], metric)
        rank_counts(queries @ rows.T, -2.0, query_sq_norms, np.einsum("ij,ij->i", rows, rows),
                    start, query_ids, thresholds, sorted_ids, less, equal, ties_before, own)
    less -= own < thresholds  # the neighbour itself is not closer than itself
    ranks = less + ties_before + 1
    return np.maximum(ranks - k, 0).sum(axis=1).astype(np.float64)


def trustworthiness_sampled(
    X: Any,
    embedding: Any,
    n_neighbors: int = 15,
    n_samples: int = 1000,
    random_state: Any = None,
    *,
    metric: str = "euclidean",
    n_jobs: int = -1,
) -> SampledScore:
    r"""Trustworthiness estimated from a random sample of points, for data of any size.

    The trustworthiness (see :func:`trustworthiness`) is the mean over points of

    .. math::

        t_i = 1 - \frac{2}{k(2n - 3k - 1)} \sum_{j \in \mathcal{N}^{E}_k(i)}
            \max(0, r_X(i, j) - k),

    so the mean of :math:`t_i` over ``n_samples`` points drawn uniformly without replacement
    is an **unbiased** estimate of it. Each sampled term is exact: the ``k`` embedding
    neighbours are found among all points (exact float64 brute force), and each one's rank
    is counted among the query's distances to *all* ``n`` input points, which are computed
    block by block (memory ``O(n_samples × block)``, time ``O(n_samples · n · d)``: about
    ``n_samples / n`` of the exact computation).

    Ties between input distances are ranked by point index (a stable sort); scikit-learn's
    unstable sort may order them differently, so on data with exactly tied distances (integer
    pixels, duplicates) the terms can differ from the exact function's in the last digits.
    Embedding neighbours that tie are likewise taken by index.

    Parameters
    ----------
    X : array-like of shape (n_samples_total, n_features)
        The data.
    embedding : array-like of shape (n_samples_total, n_components)
    n_neighbors : int, default=15
        ``k``; must be less than half the number of points.
    n_samples : int, default=1000
        Number of query points; all points (the exact value, stderr 0) when it is at least
        the number of points.
    random_state : int, numpy Generator or None, default=None
        Seed of the sample.
    metric : {"euclidean", "cosine", "correlation"}, default="euclidean"
        Distance in the input space.
    n_jobs : int, default=-1
        Threads (-1: all cores).

    Returns
    -------
    SampledScore
        A named tuple ``(value, stderr)``: the estimate and its standard error, the sample
        standard deviation of the :math:`t_i` over ``sqrt(n_samples)`` times the finite
        population correction ``sqrt(1 - n_samples / n)`` (NaN for a single query). A tuple
        rather than a bare float so that the uncertainty is never lost; it unpacks as
        ``value, stderr = ...``.

    Examples
    --------
    >>> import unimap
    >>> from unimap.datasets import load_digits
    >>> from unimap.metrics import trustworthiness, trustworthiness_sampled
    >>> X, _ = load_digits()
    >>> umap = unimap.UMAP(random_state=0).fit_transform(X)
    >>> value, stderr = trustworthiness_sampled(X, umap, n_neighbors=15, random_state=0)
    >>> exact = trustworthiness(X, umap, n_neighbors=15)
    >>> bool(abs(value - exact) < 4 * stderr), bool(stderr < 0.01)
    (True, True)
    """
    X, embedding = check_pair(X, embedding, metric, metrics=_SAMPLED_METRICS)
    n = X.shape[0]
    k = check_trustworthiness_neighbors(n_neighbors, n)
    size = min(check_int(n_samples, "n_samples", 1), n)
    if size < n:
        query_ids = np.sort(make_rng(random_state).choice(n, size=size, replace=False))
    else:
        query_ids = np.arange(n)
    query_ids = query_ids.astype(np.int64)
    with numba_threads(resolve_n_jobs(n_jobs)):
        neighbors = _embedding_neighbors(embedding, query_ids, k)
        penalties = _sampled_rank_penalties(X, metric, query_ids, neighbors)
    terms = 1.0 - penalties * (2.0 / (k * (2.0 * n - 3.0 * k - 1.0)))
    if size == 1:
        return SampledScore(float(terms[0]), math.nan)
    stderr = terms.std(ddof=1) / math.sqrt(size) * math.sqrt(1.0 - size / n)
    return SampledScore(float(terms.mean()), float(stderr))

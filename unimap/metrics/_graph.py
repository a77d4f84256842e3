"""The quality of an approximate kNN graph itself: its recall against the exact neighbours."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from unimap.metrics import common
from unimap.metrics._neighborhood import drop_self, exact_neighbors, sample_queries
from unimap.metrics._trustworthiness import SampledScore
from unimap.metrics.checks import check_precomputed, float_dtype
from unimap.metrics.common import prepare_rows
from unimap.neighbors.graph import NATIVE_OR_PRECOMPUTED as METRICS
from unimap.runtime.threads import numba_threads, resolve_n_jobs
from unimap.runtime.validation import check_array, check_choice, check_int

# A found neighbour at most this much (relatively) farther than the exact k-th one still
# counts: the exact search ranks in float32, and ties at the k-th distance (duplicates) may
# be broken either way.
_TIE_TOLERANCE = 1e-5


def knn_graph_recall(
    X: Any,
    knn_indices: Any,
    *,
    metric: str = "euclidean",
    sample_size: int | None = 1000,
    random_state: Any = None,
    n_jobs: int = -1,
) -> SampledScore:
    """How many of the true nearest neighbours an approximate kNN graph holds, estimated on
    sampled rows.

    For each sampled row, the fraction of its ``k`` listed neighbours (other than itself) that
    are among its ``k`` exact nearest others: a listed neighbour counts if it is no farther
    than the exact ``k``-th (ties at that distance count either way). Use it on the graph a
    fit used (``est.knn_indices_``), on ``nearest_neighbors(X)[0].indices`` or on
    ``unimap.dask.knn_graph(...).compute()[0]`` (computed from ``X`` in memory, or from a
    sample of its rows with those rows' lists). Approximate searches lose recall on data of
    high intrinsic dimension (such as a 50-D Gaussian mixture of 1M points; measured:
    benchmarks/results/knn_density.md); there, ``knn_method="nndescent"`` may do better.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
        The data the graph was built on; a square distance matrix when
        ``metric="precomputed"``.
    knn_indices : array-like of int, shape (n_samples, n_neighbors)
        Row ``i`` lists the neighbours of point ``i``, the point itself in column 0 as in
        unimap's graphs (a row without itself has its first ``n_neighbors - 1`` entries
        scored). ``k = n_neighbors - 1``.
    metric : {"euclidean", "cosine", "correlation", "manhattan", "precomputed"}, \
default="euclidean"
        The distance the graph was built for.
    sample_size : int or None, default=1000
        Rows evaluated (sampled without replacement); None or at least ``n_samples``: all.
        The exact neighbours cost ``O(sample_size · n_samples · n_features)``.
    random_state : int, numpy Generator or None, default=None
        Seed of the sample.
    n_jobs : int, default=-1
        Threads (-1: all cores).

    Returns
    -------
    SampledScore
        ``value`` in [0, 1] (1: every listed neighbour is a true one) and its standard error
        (0 when every row was evaluated; NaN from a single row).

    Examples
    --------
    >>> import unimap
    >>> from unimap.datasets import load_digits
    >>> from unimap.metrics import knn_graph_recall
    >>> X, _ = load_digits()
    >>> model = unimap.UMAP(random_state=0).fit(X)
    >>> recall, stderr = knn_graph_recall(X, model.knn_indices_, random_state=0)
    >>> model.knn_method_, recall  # small data: the exact graph
    ('exact', 1.0)
    """
    check_choice(metric, "metric", METRICS)
    X = check_array(X, "X", min_samples=2, dtype=float_dtype(X))
    if metric == "precomputed":
        check_precomputed(X)
    n = X.shape[0]
    indices = check_indices(knn_indices, n)
    k = indices.shape[1] - 1
    check_int(k + 1, "the number of columns of knn_indices", 2, n)
    query_ids = sample_queries(n, sample_size, random_state)
    rows = np.arange(n) if query_ids is None else query_ids

    def exact_and_listed(listed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with numba_threads(resolve_n_jobs(n_jobs)):
            exact = exact_neighbors(X, query_ids, k, metric, n_jobs)
        return (_distances(X, rows, exact[:, -1:], metric)[:, 0],
                _distances(X, rows, np.maximum(listed, 0), metric))

    return score_listed(indices, rows, n, exact_and_listed)


def score_listed(indices: np.ndarray, rows: np.ndarray, n: int,
                 exact_and_listed: Any) -> SampledScore:
    """The recall of ``indices`` on ``rows``: ``exact_and_listed(listed)`` returns each row's
    exact ``k``-th distance and its distances to the ``listed`` rows (``-1``: a miss), both
    in one geometry (shared with :func:`unimap.dask.knn_graph_recall`)."""
    k = indices.shape[1] - 1
    listed = drop_self(indices[rows], rows, k)
    listed[listed == rows[:, None]] = -1  # a row listing itself more than once: a miss
    listed = _distinct(listed)
    bound, found = exact_and_listed(listed)
    hits = ((listed >= 0) & (found <= bound[:, None] * (1.0 + _TIE_TOLERANCE))).sum(axis=1)
    terms = hits / k
    if terms.size == 1:
        return SampledScore(float(terms[0]), math.nan)
    stderr = terms.std(ddof=1) / math.sqrt(terms.size) * math.sqrt(1.0 - terms.size / n)
    return SampledScore(float(terms.mean()), float(stderr))


def check_indices(knn_indices: Any, n: int) -> np.ndarray:
    indices = np.asarray(knn_indices)
    if indices.ndim != 2 or indices.shape[0] != n:
        raise ValueError(f"knn_indices must have shape ({n}, n_neighbors), one row per row of "
                         f"X; got {indices.shape}")
    if not np.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"knn_indices must hold integer row numbers, got dtype {indices.dtype}")
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        raise ValueError(f"knn_indices must lie in [0, {n - 1}] (rows of X)")
    return indices


def _distinct(listed: np.ndarray) -> np.ndarray:
    """``listed`` with each repeat of an id within a row replaced by -1 (a miss)."""
    order = np.argsort(listed, axis=1, kind="stable")
    ranked = np.take_along_axis(listed, order, axis=1)
    repeat = np.zeros_like(ranked, dtype=bool)
    repeat[:, 1:] = ranked[:, 1:] == ranked[:, :-1]
    out = listed.copy()
    np.put_along_axis(out, order, np.where(repeat, -1, ranked), axis=1)
    return out


def _distances(X: np.ndarray, rows: np.ndarray, columns: np.ndarray, metric: str) -> np.ndarray:
    """float64 distance (or a monotone function of it) from ``X[rows[i]]`` to ``X[columns[i,
    j]]``, in blocks of rows."""
    if metric == "precomputed":
        return np.asarray(X[rows[:, None], columns], dtype=np.float64)
    out = np.empty(columns.shape, dtype=np.float64)
    block = max(1, common.BLOCK_BYTES // (8 * X.shape[1] * columns.shape[1]))
    for start in range(0, rows.size, block):
        stop = min(rows.size, start + block)
        cols = columns[start:stop]
        if metric == "manhattan":
            a = np.asarray(X[rows[start:stop]], dtype=np.float64)
            b = np.asarray(X[cols.ravel()], dtype=np.float64).reshape(*cols.shape, -1)
            out[start:stop] = np.abs(a[:, None, :] - b).sum(axis=2)
        else:  # euclidean on rows prepared so that the metric is monotone in it
            a = prepare_rows(X[rows[start:stop]], metric)
            b = prepare_rows(X[cols.ravel()], metric).reshape(*cols.shape, -1)
            out[start:stop] = np.sqrt(((a[:, None, :] - b) ** 2).sum(axis=2))
    return out

"""The kNN graph of every row of a dask array, built on the cluster, and its check:
:func:`knn_graph` samples the rows for k-means shards and searches one HNSW index per shard,
other shards only where they can hold a neighbour (the task graph is
:mod:`unimap.dask.knn_cells`), for a fit of every row in memory on it
(``GDR(precomputed_knn=graph.compute())``: the optimizer itself stays on one machine);
:func:`knn_graph_recall` scores such a graph against the exact neighbours of sampled rows,
found block by block on the cluster.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.dask.knn_cells import (
    KMEANS_MIN_SAMPLE,
    KMEANS_SAMPLE_PER_SHARD,
    METRICS,
    SHARD_ROWS,
    DaskKNNGraph,
    graph_arrays,
    kmeans,
)
from unimap.dask.sample import checked_rows, sample_rows

__all__ = ["knn_graph", "knn_graph_recall"]


def knn_graph(X: Any, n_neighbors: int = 15, *, metric: str = "euclidean",
              n_shards: int | None = None, n_probe: int | None = None,
              random_state: Any = None) -> DaskKNNGraph:
    """The approximate kNN graph of every row of a dask array, built on the cluster.

    k-means shards searched by HNSW (:mod:`unimap.dask.knn_cells`). The result is lazy; compute it
    once
    with :meth:`DaskKNNGraph.compute`, then fit in memory on it, e.g.
    ``GDR(precomputed_knn=graph.compute()).fit(X.compute())`` (``docs/dask.md``).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features), numeric, row counts known
        Reduce wide data first (``unimap.PCA(n_components=50).fit(X).transform(X)``): the
        HNSW graphs are built and searched in the given space.
    n_neighbors : int, default=15
        Neighbours per row, the row itself included (column 0), as in the in-memory graph.
    metric : {"euclidean", "cosine", "correlation"}, default="euclidean"
    n_shards : int, optional
        k-means cells, one HNSW graph each. Default ``ceil(n_samples / 250,000)``. More
        shards: smaller graphs, more tasks to spread over a cluster.
    n_probe : int, optional
        At most this many shards are searched for a row: its home, then the other shards
        that can hold a row nearer than its k-th candidate from home (the hyperplane halfway
        between the two centroids is nearer than that), nearest first. Default
        ``min(2, n_shards)``: on MNIST's principal components a second probe recovers most of
        the recall a row's home shard alone misses; on the clustered mixture of
        ``benchmarks/dask_knn.py`` it adds nothing (measured: ``docs/dask.md``;
        benchmarks/results/library_notes.md, "unimap/dask/knn.py").
    random_state : int, numpy Generator or None, default=None
        Seeds the k-means sample and its initial centroids.

    Returns
    -------
    DaskKNNGraph

    Raises
    ------
    ValueError
        Bad parameters, unknown row counts, non-finite values (named by row, at compute
        time), or a row whose probed shards hold fewer than ``n_neighbors`` rows (at compute
        time; use fewer shards or more probes).

    Examples
    --------
    >>> import dask.array as da, unimap
    >>> X = da.random.default_rng(0).standard_normal((4_000, 10), chunks=1_000)
    >>> graph = unimap.dask.knn_graph(X, n_neighbors=15, n_shards=2, random_state=0)  # lazy
    >>> indices, distances = graph.compute()
    >>> indices.shape, bool((indices[:, 0] == range(4_000)).all())  # column 0: the row itself
    ((4000, 15), True)
    >>> model = unimap.GDR(precomputed_knn=(indices, distances), random_state=0)
    >>> model.fit(X.compute()).embedding_.shape
    (4000, 2)
    """
    from unimap.neighbors.geometry import prepare_rows
    from unimap.runtime.random_streams import seed_from_random_state
    from unimap.runtime.validation import check_choice, check_int

    X = checked_rows(X, "knn_graph")
    n = int(X.shape[0])
    k = check_int(n_neighbors, "n_neighbors", 2, n)
    metric = check_choice(metric, "metric", METRICS)
    n_shards = (-(-n // SHARD_ROWS) if n_shards is None
                else check_int(n_shards, "n_shards", 1, n))
    n_probe = (min(2, n_shards) if n_probe is None
               else check_int(n_probe, "n_probe", 1, n_shards))
    seed = seed_from_random_state(random_state)

    n_sample = min(n, max(KMEANS_MIN_SAMPLE, KMEANS_SAMPLE_PER_SHARD * n_shards))
    _, sample = sample_rows(X, n_sample, seed)
    if sample.dtype.kind == "f" and not np.isfinite(sample).all():
        raise ValueError("X contains NaN or infinity (found in the k-means sample)")
    centroids = kmeans(prepare_rows(sample, metric), n_shards, seed)
    indices, distances = graph_arrays(X, centroids, k, n_probe, metric)
    return DaskKNNGraph(indices, distances, centroids)


def knn_graph_recall(X: Any, knn_indices: Any, *, metric: str = "euclidean",
                     sample_size: int = 1000, random_state: Any = None) -> Any:
    """:func:`unimap.metrics.knn_graph_recall` for data in a dask array: the recall of a kNN
    graph of its rows (``knn_graph(X).compute()[0]``, or any (n_samples, n_neighbors) lists
    in unimap's layout) against the exact neighbours of ``sample_size`` sampled rows, which
    every block of ``X`` is searched for on the cluster (``O(sample_size · n_samples ·
    n_features)`` work, the sampled rows and one block per task in memory).

    The same rows (for the same ``random_state``) and the same scoring as the in-memory
    function: a listed neighbour counts if it is no farther than the exact ``k``-th other
    row, the row itself and repeats do not.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features), numeric, row counts known
    knn_indices : array-like of int, shape (n_samples, n_neighbors)
        Row ``i`` lists the neighbours of row ``i``, itself in column 0; ``k = n_neighbors -
        1``. Only the sampled rows are read.
    metric : {"euclidean", "cosine", "correlation"}, default="euclidean"
    sample_size : int, default=1000
    random_state : int, numpy Generator or None, default=None

    Returns
    -------
    unimap.metrics.SampledScore
        ``value`` in [0, 1] and its standard error.

    Examples
    --------
    >>> import dask.array as da, unimap
    >>> X = da.random.default_rng(0).standard_normal((4_000, 10), chunks=1_000)
    >>> indices, _ = unimap.dask.knn_graph(X, n_shards=2, random_state=0).compute()
    >>> recall, stderr = unimap.dask.knn_graph_recall(X, indices, sample_size=200, random_state=0)
    >>> bool(recall > 0.9)
    True
    """
    from unimap.metrics._graph import check_indices, score_listed
    from unimap.metrics._neighborhood import sample_queries
    from unimap.runtime.validation import check_choice, check_int

    X = checked_rows(X, "knn_graph_recall")
    n = int(X.shape[0])
    metric = check_choice(metric, "metric", METRICS)
    indices = check_indices(knn_indices, n)
    k = check_int(indices.shape[1], "the number of columns of knn_indices", 2, n) - 1
    query_ids = sample_queries(n, check_int(sample_size, "sample_size", 1), random_state)
    rows = np.arange(n) if query_ids is None else query_ids
    return score_listed(indices, rows, n,
                        lambda listed: _exact_and_listed(X, rows, listed, k, metric))


def _exact_and_listed(X: Any, rows: np.ndarray, listed: np.ndarray, k: int,
                      metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The exact ``k``-th distance of each sampled row (over all blocks, on the cluster) and
    its distances to the listed rows (``-1``: none), in the metric's prepared geometry."""
    import dask

    from unimap.metrics.common import prepare_rows

    queries = prepare_rows(X[rows].compute(), metric)
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    tops = dask.compute(*[dask.delayed(_block_nearest)(block, int(starts[b]), queries, rows,
                                                       k, metric)
                          for b, block in enumerate(X.to_delayed().ravel())])
    d2 = np.sort(np.concatenate(tops, axis=1), axis=1)
    bound = np.sqrt(d2[:, k - 1])
    wanted = np.unique(listed[listed >= 0])
    others = prepare_rows(X[wanted].compute(), metric) if wanted.size else queries[:0]
    position = np.searchsorted(wanted, np.maximum(listed, 0))
    found = np.sqrt(((queries[:, None, :] - others[position]) ** 2).sum(axis=2))
    return bound, found


def _block_nearest(block: Any, first_row: int, queries: np.ndarray, rows: np.ndarray, k: int,
                   metric: str) -> np.ndarray:
    """Squared distances from each query to its ``k`` nearest rows of one block other than
    itself (``inf`` where the block has fewer)."""
    from unimap.metrics.common import prepare_rows
    from unimap.runtime.validation import check_finite_block

    block = np.asarray(block)
    check_finite_block(block, first_row)  # the sampled and listed rows lie in some block
    points = prepare_rows(block, metric)
    d2 = ((queries ** 2).sum(1)[:, None] - 2.0 * queries @ points.T
          + (points ** 2).sum(1)[None, :])
    own = rows - first_row
    inside = (own >= 0) & (own < points.shape[0])
    d2[np.flatnonzero(inside), own[inside]] = np.inf  # the row itself
    out = np.full((queries.shape[0], k), np.inf)
    take = min(k, points.shape[0])
    out[:, :take] = np.sort(np.partition(d2, take - 1, axis=1)[:, :take], axis=1)
    return np.maximum(out, 0.0)

"""Past one machine: ``transform`` of a ``dask.array``, and fit-a-sample-then-place-everything.

Dask is an optional extra (``pip install 'unimap[dask]'``); it is imported only when a dask
object reaches unimap, never by ``import unimap`` (a dask array is recognised by the module of
its type).

- ``est.transform(X)`` of a fitted ``PCA``, ``UMAP``, ``TSNE`` or ``GDR`` takes a
  ``dask.array.Array`` of shape (m, n_features) and returns a lazy ``dask.array.Array`` of
  shape (m, n_components), float32, chunked by rows like ``X``. Each block is placed on a
  worker by the estimator's own ``transform`` (:meth:`_transform`), and a new point is placed
  on its own against the fixed embedding, so a block's rows land where the NumPy
  ``transform`` of that block puts them, bitwise (``tests/test_dask.py``).
- The model goes to the cluster once: a light copy (without ``graph_``, ``knn_indices_`` and
  ``knn_dists_``, which ``transform`` does not read) is one node of the graph
  (``dask.delayed``), or, when a ``distributed.Client`` is current, scattered to the cluster;
  every block's task depends on that one key, so a worker deserialises the model once, not
  once per block.
- :func:`fit_sample_transform` is the recipe for data that does not fit one machine: draw a
  uniform sample of the rows (seeded), fit on it, place every row with the distributed
  ``transform``.
- ``PCA().fit`` of a dask array streams its blocks (:func:`scatter_moments`): data too wide
  for one machine is reduced on the cluster, and its principal components (n × 50) fitted in
  memory with their own kNN graph.

- :func:`knn_graph` builds the kNN graph of every row on the cluster (k-means shards, one
  HNSW index each, other shards searched only where they can hold a neighbour;
  :mod:`unimap.dask.knn_cells`), for a fit of every row in memory on it
  (``GDR(precomputed_knn=graph.compute())``). The optimizer itself stays on one machine;
  :func:`knn_graph_recall` checks such a graph against the exact neighbours of sampled rows,
  found on the cluster.
"""

from __future__ import annotations

import copy
import sys
import uuid
import warnings
from typing import Any, NamedTuple

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

__all__ = ["DaskKNNGraph", "Moments", "SamplePlacement", "fit_sample_transform",
           "is_dask_collection", "knn_graph", "knn_graph_recall", "sample_rows",
           "scatter_moments"]

_NOT_SHIPPED = ("graph_", "knn_indices_", "knn_dists_")  # fitted, but transform never reads them


def is_dask_collection(X: Any) -> bool:
    """Whether ``X`` is a dask object (array, DataFrame, ...), judged by the module of its
    type, so that dask is not imported to ask."""
    return type(X).__module__.split(".")[0] == "dask"


def transform_blocks(estimator: Any, X: Any, options: dict, n_features: int,
                     n_jobs: int | None = None) -> Any:
    """The lazy ``transform`` of a dask array (see the module docstring).

    Parameters
    ----------
    estimator : fitted PCA, UMAP, TSNE or GDR
    X : dask.array.Array of shape (m, n_features)
    options : dict
        Keyword arguments of the estimator's ``_transform`` (TSNE's placement options).
    n_features : int
        The number of columns ``X`` must have.
    n_jobs : int or None, default=None
        Threads of each block's placement on its worker; None: the worker's thread count
        (``os.cpu_count()`` outside a ``distributed`` worker). The placement's numba
        kernels hold the GIL, so the blocks a worker runs side by side on its threads take
        turns in them, and each turn should use all the worker's threads.

    Returns
    -------
    embedding : dask.array.Array of shape (m, n_components)
        float32 (PCA: float64 for float64 input, as its NumPy ``transform``).
    """
    name = type(estimator).__name__
    _check_numeric_matrix(X, f"{name}.transform")
    estimator._check_n_features(X, n_features)
    estimator._check_feature_names(None)  # a dask array has no column names
    if X.numblocks[1] > 1:
        warnings.warn(f"{name}.transform places whole rows: the dask array's {X.numblocks[1]} "
                      "column chunks are joined into one (X.rechunk({1: -1})); chunk by rows "
                      "only to avoid the extra step", UserWarning, stacklevel=4)
        X = X.rechunk({1: -1})
    width = estimator._n_features_out
    dtype = estimator._transform_dtype(X.dtype)
    model = _ship(_without_graph(estimator), name)
    return X.map_blocks(_place_block, model, options, n_jobs, dtype=dtype,
                        chunks=(X.chunks[0], (width,)), meta=np.empty((0, width), dtype=dtype),
                        name=f"unimap-{name.lower()}-transform-{uuid.uuid4().hex}")


def _check_numeric_matrix(X: Any, what: str) -> None:
    """A 2-D ``dask.array.Array`` of numbers, or an error naming ``what`` needs it."""
    import dask.array as da

    if not isinstance(X, da.Array):
        raise TypeError(f"{what} takes a dask.array.Array, got {type(X).__module__}."
                        f"{type(X).__qualname__}; a dask DataFrame becomes one with "
                        "df.to_dask_array(lengths=True)")
    if X.ndim != 2:
        raise ValueError(f"{what} needs a 2-D dask array, got shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{what} needs numeric data, got dtype {X.dtype}")


def _place_block(block: Any, model: Any, options: dict, n_jobs: int | None) -> np.ndarray:
    """One block's placement, on a worker."""
    if block.shape[0] == 0:
        return np.empty((0, model._n_features_out), model._transform_dtype(block.dtype))
    threads = _worker_threads() if n_jobs is None else n_jobs
    return _with_threads(model, threads)._transform(block, **options)


def _worker_threads() -> int:
    """The thread count of the ``distributed`` worker running this task, else the cores."""
    import os

    if "distributed" in sys.modules:
        from distributed import get_worker

        try:
            return get_worker().state.nthreads
        except ValueError:  # not in a worker
            pass
    return os.cpu_count() or 1


def _without_graph(estimator: Any) -> Any:
    """A shallow copy of the fitted estimator without the attributes ``transform`` never
    reads (the kNN graph and ``graph_``: most of a model's bytes besides the index)."""
    model = copy.copy(estimator)
    for attr in _NOT_SHIPPED:
        model.__dict__.pop(attr, None)
    return model


def _with_threads(estimator: Any, n_jobs: int) -> Any:
    """A shallow copy (cheap: the arrays are shared) placing on ``n_jobs`` threads: the
    fit's thread count belongs to the client's machine, and the model on a worker is shared
    by the blocks, so it is not changed in place."""
    from unimap.runtime.threads import resolve_n_jobs

    threads = resolve_n_jobs(n_jobs)
    model = copy.copy(estimator)
    if "n_jobs" in model.__dict__:
        model.n_jobs = threads
    index = model.__dict__.get("_index")
    if index is not None:
        index = model._index = copy.copy(index)
        index.n_threads_ = threads
        hnsw = index.__dict__.get("_hnsw")
        if hnsw is not None:
            hnsw = index._hnsw = copy.copy(hnsw)
            hnsw.n_threads = threads
            hnsw.__dict__.pop("_ordered", None)  # the training points' own search only
    return model


def _ship(model: Any, name: str) -> Any:
    """The model as one piece of the graph: scattered when a distributed client is current
    (it then travels outside the graph, which stays small), else a ``dask.delayed`` node."""
    client = _current_client()
    if client is not None:
        return client.scatter(model, hash=False)
    import dask

    return dask.delayed(model, name=f"unimap-{name.lower()}-model-{uuid.uuid4().hex}",
                        traverse=False)


def _current_client() -> Any:
    if "distributed" not in sys.modules:  # no client without distributed imported
        return None
    from distributed import get_client

    try:
        return get_client()
    except ValueError:
        return None


class Moments(NamedTuple):
    """What :func:`scatter_moments` returns."""

    n: int
    """Rows."""
    mean: np.ndarray
    """(d,) float64."""
    scatter: np.ndarray
    """(d, d) float64: ``Σ (x − mean)(x − mean)ᵀ`` over the rows."""


def scatter_moments(X: Any) -> Moments:
    """Row count, mean and centred scatter matrix of a dask array's rows, in one pass.

    Each block's own moments are computed on its worker (centred on the block's mean, in the
    data's precision, summed in float64: :func:`unimap.decomposition.pca.centred_scatter`); pairs of
    blocks are merged on the workers in a fixed binary tree (Chan, Golub and LeVeque's
    update, exact for any offset of the data: no ``Σ x xᵀ − n μ μᵀ`` cancellation), so only
    one d × d matrix reaches the client and the result depends on the chunking, not on the
    cluster. This is what ``unimap.PCA().fit`` of a dask array runs.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features), numeric, row counts known
        Integer and boolean blocks are read as float32, as ``check_array`` does.

    Returns
    -------
    Moments

    Raises
    ------
    ValueError
        Unknown row counts, no rows, or a NaN or infinity in some block (named by its row
        range).
    """
    import dask

    X = checked_rows(X, "scatter_moments")
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    parts = [dask.delayed(_block_moments)(block, int(starts[b]))
             for b, block in enumerate(X.to_delayed().ravel())]
    while len(parts) > 1:  # a fixed tree: the merge order, hence the rounding, is the chunking's
        parts = [dask.delayed(_merge_moments)(*parts[i:i + 2]) if i + 1 < len(parts)
                 else parts[i] for i in range(0, len(parts), 2)]
    return parts[0].compute()


def checked_rows(X: Any, what: str) -> Any:
    """``X`` as a 2-D numeric dask array with known, non-zero row count, one column chunk."""
    _check_numeric_matrix(X, what)
    _check_known_rows(X)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{what} needs at least one row and one column, got shape {X.shape}")
    return X.rechunk({1: -1}) if X.numblocks[1] > 1 else X  # moments need whole rows


def _check_known_rows(X: Any) -> None:
    if not np.isfinite(X.shape[0]):
        raise ValueError("X has unknown row counts (chunks of nan rows); call "
                         "X.compute_chunk_sizes() first, or build it with known lengths")


def _block_moments(block: Any, first_row: int) -> Moments:
    from unimap.decomposition.pca import centred_scatter
    from unimap.runtime.validation import check_finite_block

    block = np.asarray(block)
    if block.dtype not in (np.float32, np.float64):
        block = block.astype(np.float32)
    check_finite_block(block, first_row)
    d = block.shape[1]
    if block.shape[0] == 0:
        return Moments(0, np.zeros(d), np.zeros((d, d)))
    mean = block.mean(axis=0, dtype=np.float64)
    return Moments(block.shape[0], mean, centred_scatter(block, mean))


def _merge_moments(a: Moments, b: Moments) -> Moments:
    n = a.n + b.n
    if a.n == 0 or b.n == 0:
        return a if b.n == 0 else b
    delta = b.mean - a.mean
    mean = a.mean + delta * (b.n / n)
    scatter = a.scatter + b.scatter + np.outer(delta, delta) * (a.n * b.n / n)
    return Moments(n, mean, scatter)


class SamplePlacement(NamedTuple):
    """What :func:`fit_sample_transform` returns."""

    embedding: Any
    """dask.array.Array of shape (n_samples, n_components), float32: every row placed."""
    sample_indices: np.ndarray
    """The rows the estimator was fitted on, sorted (int64)."""


def sample_rows(X: Any, n_sample: int, random_state: Any = None) -> tuple[np.ndarray, Any]:
    """A uniform sample of ``n_sample`` distinct rows of a dask array, computed.

    Only the sampled rows come to the client (each block gives its own); the indices are
    drawn on the client from ``random_state``, so the sample depends on the seed and the row
    count only, not on the chunking.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features), row counts known
    n_sample : int
        At most ``n_samples``.
    random_state : int, numpy Generator or None

    Returns
    -------
    indices : ndarray of shape (n_sample,), int64, sorted
    rows : ndarray of shape (n_sample, n_features)
    """
    from unimap.runtime.random_streams import seed_from_random_state
    from unimap.runtime.validation import check_int

    _check_known_rows(X)
    n = X.shape[0]
    n_sample = check_int(n_sample, "n_sample", 2, int(n))
    rng = np.random.default_rng(seed_from_random_state(random_state))
    indices = np.sort(rng.choice(int(n), size=n_sample, replace=False)).astype(np.int64)
    return indices, np.asarray(X[indices].compute())


def fit_sample_transform(estimator: Any, X: Any, n_sample: int,
                         random_state: Any = None) -> SamplePlacement:
    """Fit ``estimator`` on a uniform sample of the rows of ``X``, then place every row.

    The recipe for data that does not fit one machine (``docs/dask.md``): the sample is
    fitted in this process, and every row of ``X`` (the sample's too) is placed block by
    block by the distributed ``transform``, which is lazy. ``X``'s blocks are read twice, to
    draw the sample and to place them, unless ``X`` is persisted.

    Parameters
    ----------
    estimator : PCA, UMAP, TSNE or GDR
        Fitted in place on the sample (``estimator.embedding_`` then holds the sample's
        fitted layout; its rows in ``embedding`` are their ``transform`` placement, near it).
    X : dask.array.Array of shape (n_samples, n_features), row counts known
    n_sample : int
        Rows to fit on (at most ``n_samples``).
    random_state : int, numpy Generator or None, default=None
        Seed of the sample (the estimator's own ``random_state`` seeds the fit).

    Returns
    -------
    SamplePlacement
        ``embedding`` (lazy dask array of every row) and ``sample_indices``.

    Examples
    --------
    >>> import dask.array as da, unimap
    >>> X = da.random.default_rng(0).standard_normal((20_000, 10), chunks=5_000)
    >>> est = unimap.PCA(n_components=2)
    >>> placed = unimap.dask.transform.fit_sample_transform(est, X, n_sample=2_000, random_state=0)
    >>> placed.embedding.chunks
    ((5000, 5000, 5000, 5000), (2,))
    """
    if not is_dask_collection(X):
        raise TypeError("fit_sample_transform takes a dask.array.Array; for a NumPy array "
                        "fit and transform directly")
    indices, rows = sample_rows(X, n_sample, random_state)
    estimator.fit(rows)
    return SamplePlacement(estimator.transform(X), indices)


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
        ``min(2, n_shards)``. On MNIST's 50 principal components in 4 shards, recall@15 is
        0.884 / 0.976 / 0.993 / 0.997 for 1 / 2 / 3 / 4 (one shard, the in-memory graph:
        0.996); on the clustered mixture of ``benchmarks/dask_knn.py`` a second probe adds
        nothing.
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
    """
    from unimap.neighbors.graph import _prepare
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
    centroids = kmeans(_prepare(sample, metric), n_shards, seed)
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
    """
    from unimap.metrics._graph import _check_indices, score_listed
    from unimap.metrics._neighborhood import _sample_queries
    from unimap.runtime.validation import check_choice, check_int

    X = checked_rows(X, "knn_graph_recall")
    n = int(X.shape[0])
    metric = check_choice(metric, "metric", METRICS)
    indices = _check_indices(knn_indices, n)
    k = check_int(indices.shape[1], "the number of columns of knn_indices", 2, n) - 1
    query_ids = _sample_queries(n, check_int(sample_size, "sample_size", 1), random_state)
    rows = np.arange(n) if query_ids is None else query_ids
    return score_listed(indices, rows, n,
                        lambda listed: _exact_and_listed(X, rows, listed, k, metric))


def _exact_and_listed(X: Any, rows: np.ndarray, listed: np.ndarray, k: int,
                      metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The exact ``k``-th distance of each sampled row (over all blocks, on the cluster) and
    its distances to the listed rows (``-1``: none), in the metric's prepared geometry."""
    import dask

    from unimap.metrics._common import _prepare_rows

    queries = _prepare_rows(X[rows].compute(), metric)
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    tops = dask.compute(*[dask.delayed(_block_nearest)(block, int(starts[b]), queries, rows,
                                                       k, metric)
                          for b, block in enumerate(X.to_delayed().ravel())])
    d2 = np.sort(np.concatenate(tops, axis=1), axis=1)
    bound = np.sqrt(d2[:, k - 1])
    wanted = np.unique(listed[listed >= 0])
    others = _prepare_rows(X[wanted].compute(), metric) if wanted.size else queries[:0]
    position = np.searchsorted(wanted, np.maximum(listed, 0))
    found = np.sqrt(((queries[:, None, :] - others[position]) ** 2).sum(axis=2))
    return bound, found


def _block_nearest(block: Any, first_row: int, queries: np.ndarray, rows: np.ndarray, k: int,
                   metric: str) -> np.ndarray:
    """Squared distances from each query to its ``k`` nearest rows of one block other than
    itself (``inf`` where the block has fewer)."""
    from unimap.metrics._common import _prepare_rows
    from unimap.runtime.validation import check_finite_block

    block = np.asarray(block)
    check_finite_block(block, first_row)  # the sampled and listed rows lie in some block
    points = _prepare_rows(block, metric)
    d2 = ((queries ** 2).sum(1)[:, None] - 2.0 * queries @ points.T
          + (points ** 2).sum(1)[None, :])
    own = rows - first_row
    inside = (own >= 0) & (own < points.shape[0])
    d2[np.flatnonzero(inside), own[inside]] = np.inf  # the row itself
    out = np.full((queries.shape[0], k), np.inf)
    take = min(k, points.shape[0])
    out[:, :take] = np.sort(np.partition(d2, take - 1, axis=1)[:, :take], axis=1)
    return np.maximum(out, 0.0)

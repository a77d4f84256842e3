"""The kNN graph of a dask array's rows, built on the cluster (``unimap.dask.knn_graph``
validates, draws the k-means sample and calls :func:`graph_arrays`).

The rows are split into ``n_shards`` shards by k-means (Lloyd's iterations on a uniform sample,
in the client): each row's home shard is its nearest centroid. Every shard is what the
in-memory graph of its rows would be (``unimap.neighbors.hnsw.HNSWIndex``: HNSW graphs of
interleaved parts, PCA candidates above 50 features re-ranked exactly, reverse pairs), built on
one worker thread, with its rows' kNN graph among themselves. A row is then also searched in
the other shards that can hold a row nearer than its k-th candidate from home (at most
``n_probe`` shards in all, :func:`_plan_block`), and its candidates are merged into its
``n_neighbors`` nearest. No block meets every other block: the work is one in-memory graph
per shard plus a query per row and extra shard.

Data moved between workers: each row once to its home shard's builder, and once more per other
shard it is searched in; the shards' graphs stay where they were built (a search task runs on
the worker holding its shard, and the few queries come to it).

Deterministic and independent of the chunking and of the cluster: a row's centroid distances
are computed row by row (no BLAS blocking), a shard holds its rows in global row order and is
built on one thread (faiss's insertion is then a function of its rows), a query's HNSW search
does not depend on the other queries, and the merge keeps ties in the order the row's own
probes found them.
"""

from __future__ import annotations

import uuid
from operator import getitem
from typing import Any, NamedTuple

import numpy as np

from unimap.neighbors.cells_numba import wall_distances
from unimap.neighbors.geometry import finish_distances, prepare_rows, with_self_first
from unimap.neighbors.kmeans import centroid_sq_distances, kmeans, nearest_centroids
from unimap.neighbors.sharded import within_reach
from unimap.runtime.validation import check_finite_block

__all__ = ["DaskKNNGraph", "graph_arrays", "kmeans"]

METRICS = ("euclidean", "cosine", "correlation")
SHARD_ROWS = 250_000  # default rows per shard: n_shards = ceil(n / SHARD_ROWS)
KMEANS_SAMPLE_PER_SHARD = 1_000  # sample rows per centroid (at least KMEANS_MIN_SAMPLE)
KMEANS_MIN_SAMPLE = 20_000


class DaskKNNGraph(NamedTuple):
    """What ``unimap.dask.knn_graph`` returns: lazy arrays, chunked by rows like ``X``."""

    indices: Any
    """dask.array.Array of shape (n_samples, n_neighbors), int32: column 0 is the row itself."""
    distances: Any
    """dask.array.Array of shape (n_samples, n_neighbors), float32, each row ascending."""
    centroids: np.ndarray
    """(n_shards, n_features) float32: the shards' k-means centroids (in the metric's
    prepared space: rows normalised for cosine and correlation)."""

    def compute(self, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, distances)`` in memory, computed in one pass (computing the two arrays
        separately would build and search every shard twice); the ``precomputed_knn`` of
        ``GDR``, ``UMAP`` and ``TSNE``. ``kwargs`` go to ``dask.compute`` (``scheduler``)."""
        import dask

        return dask.compute(self.indices, self.distances, **kwargs)


def graph_arrays(X: Any, centroids: np.ndarray, k: int, n_probe: int,
                  metric: str) -> tuple[Any, Any]:
    """The lazy (indices, distances) of every block: one task graph written out, since
    composing ``dask.delayed`` calls re-merges the graphs of their inputs at every step, which
    kept a large graph in the client for minutes before anything ran (measured:
    benchmarks/results/library_notes.md, "unimap/dask/knn_cells.py")."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph

    token = uuid.uuid4().hex
    names = {step: f"unimap-knn-{step}-{token}" for step in
             ("centroids", "split", "piece", "shard", "own", "plan", "queries", "found",
              "merged", "indices", "distances")}
    n_shards = centroids.shape[0]
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    sizes = [int(m) for m in X.chunks[0]]
    blocks, shards = range(len(sizes)), range(n_shards)
    tasks: dict = {names["centroids"]: centroids}
    for b in blocks:
        tasks[(names["split"], b)] = (_split_block, (X.name, b, 0), int(starts[b]),
                                      names["centroids"], metric)
        for s in shards:
            tasks[(names["piece"], b, s)] = (_piece, (names["split"], b), s)
    for s in shards:
        tasks[(names["shard"], s)] = (_build_shard, [(names["piece"], b, s) for b in blocks], k)
    for b in blocks:
        first, m = int(starts[b]), sizes[b]
        for s in shards:
            tasks[(names["own"], b, s)] = (_own_rows, (names["shard"], s), first, m)
        tasks[(names["plan"], b)] = (_plan_block, (names["split"], b),
                                     [(names["own"], b, s) for s in shards],
                                     names["centroids"], k, n_probe)
        for s in shards:
            tasks[(names["queries"], b, s)] = (_planned_queries, (names["plan"], b), s)
            tasks[(names["found"], b, s)] = (_search_shard, (names["shard"], s),
                                             (names["queries"], b, s), k)
        tasks[(names["merged"], b)] = (_merge, (names["plan"], b),
                                       [(names["found"], b, s) for s in shards], first, k,
                                       n_probe, metric)
        tasks[(names["indices"], b, 0)] = (getitem, (names["merged"], b), 0)
        tasks[(names["distances"], b, 0)] = (getitem, (names["merged"], b), 1)
    chunks = (X.chunks[0], (k,))
    arrays = []
    for name, dtype in (("indices", np.int32), ("distances", np.float32)):
        graph = HighLevelGraph.from_collections(names[name], tasks, dependencies=[X])
        arrays.append(da.Array(graph, names[name], chunks, dtype=dtype,
                               meta=np.empty((0, k), dtype)))
    return arrays[0], arrays[1]


def _piece(split: _Split, s: int) -> tuple[np.ndarray, np.ndarray]:
    return split.home_rows[s], split.home_ids[s]


def _planned_queries(plan: tuple, s: int) -> _Queries:
    return plan[1][s]


class _Split(NamedTuple):
    """A block's rows, prepared, and their home shards."""

    home_rows: list  # per shard: (h, d) float32 rows of the block whose home it is
    home_ids: list  # per shard: (h,) int64 their global rows, ascending
    rows: np.ndarray  # (m, d) float32
    home: np.ndarray  # (m,) int32


class _Shard(NamedTuple):
    """One shard, on the worker that built it."""

    index: Any  # unimap.neighbors.hnsw.HNSWIndex of its rows, or None for an empty shard
    ids: np.ndarray  # (size,) int64: the global row of each shard row, ascending
    own_ids: np.ndarray  # (size, k) int32 or int64: each shard row's k nearest in the shard
    own_dist: np.ndarray  # (size, k) float32, inf where none


class _Found(NamedTuple):
    """Candidates of some rows of a block: ``ids``/``dist`` (q, k), -1/inf where missing."""

    pos: np.ndarray  # (q,) int64 positions in the block
    slot: np.ndarray  # (q,) int32 which of the row's probes found them (0: its home)
    ids: np.ndarray
    dist: np.ndarray


class _Queries(NamedTuple):
    """The rows of a block that one shard other than their home is searched for."""

    rows: np.ndarray  # (q, d) float32
    pos: np.ndarray  # (q,) int64 positions in the block
    slot: np.ndarray  # (q,) int32 which of the row's probes (1 .. n_probe - 1) this is


def _split_block(block: Any, first_row: int, centroids: np.ndarray, metric: str) -> _Split:
    """A block's rows, prepared and split by home shard (on a worker)."""
    block = np.asarray(block)
    check_finite_block(block, first_row)
    rows = prepare_rows(block, metric)
    home = nearest_centroids(rows, centroids)
    ids = first_row + np.arange(rows.shape[0], dtype=np.int64)
    homes = [home == s for s in range(centroids.shape[0])]
    return _Split([rows[h] for h in homes], [ids[h] for h in homes], rows, home)


def _build_shard(pieces: list[tuple[np.ndarray, np.ndarray]], k: int) -> _Shard:
    """One shard from its rows' pieces in block order: the in-memory HNSW index of its rows
    (global order, one thread), and their own kNN graph in it (the in-memory graph's search,
    reverse pairs included)."""
    from unimap.neighbors.hnsw import HNSWIndex

    ids = np.concatenate([piece[1] for piece in pieces])
    if ids.size == 0:
        return _Shard(None, ids, np.empty((0, k), np.int64), np.empty((0, k), np.float32))
    rows = np.ascontiguousarray(np.concatenate([piece[0] for piece in pieces]))
    index = HNSWIndex(rows, n_threads=1)
    local, dist = index.search(index.data, min(k, rows.shape[0]))
    # The projection kept for the rows' own search is not needed again: the shard's other
    # queries are projected on their own (10M 50-D rows: 2 GB less across the workers).
    index._ordered = None
    own_ids, own_dist = _as_global(ids, local, dist, k)
    if ids[-1] < np.iinfo(np.int32).max:  # kept until every block took its rows': halve it
        own_ids = own_ids.astype(np.int32)
    return _Shard(index, ids, own_ids, own_dist)


def _own_rows(shard: _Shard, first_row: int, m: int) -> _Found:
    """The shard's own graph for the rows of one block that live in it."""
    lo, hi = np.searchsorted(shard.ids, [first_row, first_row + m])
    pos = shard.ids[lo:hi] - first_row
    return _Found(pos, np.zeros(pos.shape[0], np.int32), shard.own_ids[lo:hi],
                  shard.own_dist[lo:hi])


def _plan_block(split: _Split, own: list[_Found], centroids: np.ndarray, k: int,
                n_probe: int) -> tuple[_Found, list[_Queries]]:
    """Each row's candidates from its home shard, and the other shards it must be searched in.

    A row's k-th candidate at distance r says which other shards can hold a nearer row: every
    row of shard s lies on s's side of the hyperplane halfway between s's centroid and the
    home centroid, so at least that hyperplane's distance away. The shards nearer than r, at
    most ``n_probe - 1``, nearest first, are searched.
    """
    m, n_shards = split.rows.shape[0], centroids.shape[0]
    home = _Found(np.arange(m), np.zeros(m, np.int32), np.full((m, k), -1, np.int64),
                  np.full((m, k), np.inf, np.float32))
    for f in own:
        home.ids[f.pos], home.dist[f.pos] = f.ids, f.dist
    queries = [_Queries(split.rows[:0], np.empty(0, np.int64), np.empty(0, np.int32))
               for _ in range(n_shards)]
    if n_probe == 1 or n_shards == 1:
        return home, queries
    cents = centroids.astype(np.float64)
    sq = centroid_sq_distances(split.rows.astype(np.float64), cents)
    gaps = np.sqrt(centroid_sq_distances(cents, cents))  # centroid to centroid
    to_plane = np.empty_like(sq)  # inf for the home itself, or a duplicate centroid
    wall_distances(sq, split.home, gaps, to_plane)
    # The bound in float64 (the in-memory index's is float32): each as it always was, since
    # a wall between the two roundings of the bound would be searched by one and not the other
    kth = home.dist[:, k - 1:k].astype(np.float64)
    to_plane[~within_reach(to_plane, kth)] = np.inf
    order = np.argsort(to_plane, axis=1, kind="stable")[:, :n_probe - 1]
    for slot in range(order.shape[1]):
        shard = order[:, slot]
        needed = np.isfinite(np.take_along_axis(to_plane, order[:, slot:slot + 1], axis=1))[:, 0]
        for s in np.unique(shard[needed]):
            pos = np.flatnonzero(needed & (shard == s))
            q = queries[s]
            queries[s] = _Queries(np.concatenate([q.rows, split.rows[pos]]),
                                  np.concatenate([q.pos, pos]),
                                  np.concatenate([q.slot, np.full(pos.size, slot + 1, np.int32)]))
    return home, queries


def _search_shard(shard: _Shard, queries: _Queries, k: int) -> _Found:
    """The k nearest rows of the shard for rows of another home."""
    q = queries.rows.shape[0]
    if q == 0 or shard.index is None:
        return _Found(queries.pos, queries.slot, np.full((q, k), -1, np.int64),
                      np.full((q, k), np.inf, np.float32))
    local, dist = shard.index.search(np.ascontiguousarray(queries.rows), min(k, shard.ids.size))
    return _Found(queries.pos, queries.slot, *_as_global(shard.ids, local, dist, k))


def _as_global(ids: np.ndarray, local: np.ndarray, dist: np.ndarray,
               k: int) -> tuple[np.ndarray, np.ndarray]:
    """Shard-local candidates as global rows, padded to k columns with -1 / inf."""
    out_i = np.full((local.shape[0], k), -1, dtype=np.int64)
    out_d = np.full((local.shape[0], k), np.inf, dtype=np.float32)
    found = local >= 0
    out_i[:, :local.shape[1]][found] = ids[local[found]]
    out_d[:, :local.shape[1]][found] = dist[found]
    return out_i, out_d


def _merge(plan: tuple[_Found, list[_Queries]], found: list[_Found], first_row: int, k: int,
           n_probe: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Each row's k nearest among its home candidates (the plan's) and the other probes',
    itself first (on a worker)."""
    home = plan[0]
    m = home.ids.shape[0]
    ids = np.full((m, n_probe * k), -1, dtype=np.int64)
    dist = np.full((m, n_probe * k), np.inf, dtype=np.float32)
    for f in [home, *found]:  # what the row's probe j found fills columns j*k .. j*k+k-1
        cols = f.slot[:, None] * k + np.arange(k)
        ids[f.pos[:, None], cols] = f.ids
        dist[f.pos[:, None], cols] = f.dist
    # A row sits in one shard only: no candidate twice. By distance, ties in the order found
    # (home first, as the in-memory graph orders them: one shard gives that graph bitwise).
    order = np.argsort(dist, axis=1, kind="stable")
    ids = np.take_along_axis(ids, order, axis=1)[:, :k]
    dist = np.take_along_axis(dist, order, axis=1)[:, :k]
    short = ids[:, k - 1] < 0
    if short.any():
        row = first_row + int(np.flatnonzero(short)[0])
        raise ValueError(f"row {row} has fewer than n_neighbors={k} candidates in its "
                         f"probed shard(s); use fewer shards or a larger n_probe")
    # Itself in column 0 (a row is in its home shard, found at distance 0), as the in-memory
    # graph puts it
    return with_self_first(ids, finish_distances(dist, metric), k,
                            first_row + np.arange(m, dtype=np.int64))

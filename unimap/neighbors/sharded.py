"""The kNN graph of large inputs in memory: k-means cells, one small HNSW index each.

One HNSW index over many points grows more costly per point as n grows: its graph outgrows
the caches and its searches take more hops. From ``SHARDED_MIN_ROWS`` points on, the points
are split into cells of about ``SHARD_ROWS`` by k-means (on a strided sample, in the space
where candidates are searched: the PCA projection of wide data), each cell gets the
in-memory index of its rows (:class:`unimap.neighbors.hnsw.HNSWIndex`, built and searched on one
thread, the cells side by side), and a point's candidates come from its home cell. A point
is also searched in the one other cell whose bisecting hyperplane with its home cell is
nearest, when that hyperplane is nearer than its k-th candidate from home: every point of
another cell lies beyond such a hyperplane, and a projection only shortens distances, so a
cell whose hyperplane is farther cannot hold a nearer point. For the indexed points, each
pair a probe finds is offered to the point found as well: its own search, in its own cell,
could not reach the probing point. The cost per point no longer grows with n (measured:
benchmarks/results/scale_gdr.md).

The Dask graph (:mod:`unimap.dask.knn_cells`) shards the same way, with its own task graph and
``n_probe`` other shards; the two share the k-means (:mod:`unimap.neighbors.kmeans`). Deterministic
for any thread count: k-means runs on one thread, a cell is a function of its rows, and a point's
results do not depend on the others'.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.neighbors.candidates import fit_candidate_pca
from unimap.neighbors.exact import exact_query
from unimap.neighbors.hnsw import HNSWIndex, HNSWLayout
from unimap.neighbors.kmeans import kmeans
from unimap.runtime.threads import numba_threads

SHARDED_MIN_ROWS = 500_000  # from here on the kNN graph is searched in k-means cells
SHARD_ROWS = 25_000  # points per cell, on average
KMEANS_SAMPLE_PER_SHARD = 500  # sample rows per centroid (at least KMEANS_MIN_SAMPLE)
KMEANS_MIN_SAMPLE = 20_000
KMEANS_SEED = 0  # fixed: the neighbours depend on the data alone, as the unsharded index's
_SLACK = 1.0 + 1e-6  # the candidates' distances are float32

# A cell's index: 3 interleaved graphs of 20 candidates each (24 for new points); several
# graphs per cell because their different errors add recall (measured:
# benchmarks/results/scale_gdr.md).
CELL_PARTS = 3
CELL_SELF_CANDIDATES = 20
CELL_NEW_CANDIDATES = 24
# Per graph, for a point searched in a cell other than its home. The probes' pairs are also
# offered to the points they found (``search``), so fewer candidates reach the same recall
# (measured: benchmarks/results/scale_gdr.md).
CELL_PROBE_CANDIDATES = 16
CELL_NEW_PROBE_CANDIDATES = 24  # new points: no reverse pairs to make up for fewer


def within_reach(wall_dist: np.ndarray, kth_dist: np.ndarray) -> np.ndarray:
    """Whether another cell is worth a search: its wall
    (:func:`unimap.neighbors.cells_numba.wall_distance`) is not beyond the k-th candidate found
    at home, with ``_SLACK`` for the rounding of the candidates' float32 distances. The bound
    is computed in ``kth_dist``'s dtype (this index passes float32 distances, the Dask graph
    float64)."""
    return wall_dist <= kth_dist * _SLACK


def centroid_gaps(cents: np.ndarray) -> np.ndarray:
    """The distances between the float64 centroids ``cents`` (c, d), the walls' ``gaps``.
    numpy's sum, not the row-by-row sums of the Dask graph's gaps (kmeans.centroid_sq_distances): it
    adds 8 or more features in another order, so the walls would move by an ulp."""
    return np.sqrt(((cents[:, None, :] - cents[None, :, :]) ** 2).sum(axis=2))


def cell_layout() -> HNSWLayout:
    """The :class:`unimap.neighbors.hnsw.HNSWLayout` of a cell's index (built on one thread)."""
    return HNSWLayout(CELL_PARTS, CELL_SELF_CANDIDATES, CELL_NEW_CANDIDATES)


def n_shards_for(n: int) -> int:
    """The number of k-means cells of an index of ``n`` points."""
    return max(1, -(-n // SHARD_ROWS))


class ShardedHNSWIndex:
    """HNSW indexes of the k-means cells of ``data`` (see the module docstring); the
    interface of :class:`unimap.neighbors.hnsw.HNSWIndex`.

    Parameters
    ----------
    data : float32 array of shape (n, d), prepared for the metric (euclidean geometry).
    n_threads : int, threads that build and search the cells.
    pca : ``"fit"``, a :class:`unimap.decomposition.pca.PCAFit` or None: the projection candidates
    are
        searched in (None: the data as they are); a saved model passes its stored one.
    centroids : float32 array of shape (n_cells, p), optional; a saved model passes its
        stored ones, else they are fitted.
    """

    def __init__(self, data: np.ndarray, n_threads: int, pca: Any = "fit",
                 centroids: np.ndarray | None = None) -> None:
        from unimap.decomposition.pca import project

        self.n_threads = n_threads
        self.data = data
        self.pca = fit_candidate_pca(data) if isinstance(pca, str) else pca
        reduced = data if self.pca is None else project(data, self.pca)
        if centroids is None:
            n_cells = n_shards_for(data.shape[0])
            n_sample = max(KMEANS_MIN_SAMPLE, KMEANS_SAMPLE_PER_SHARD * n_cells)
            step = max(1, data.shape[0] // n_sample)
            centroids = kmeans(np.ascontiguousarray(reduced[::step], dtype=np.float32),
                               n_cells, KMEANS_SEED)
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self.home, self._walls = self._cells(reduced)
        self.members = self._group(self.home)
        self.indexes = self._map(self._build_cell, range(len(self.members)),
                                 [ids.size for ids in self.members])

    @property
    def n_parts(self) -> int:
        """HNSW graphs per cell (each cell is an :class:`HNSWIndex` of its rows)."""
        return cell_layout().n_parts

    def _cells(self, reduced: np.ndarray) -> tuple[np.ndarray, tuple]:
        from unimap.neighbors.cells_numba import nearest_walls

        cents = self.centroids.astype(np.float64)
        n = reduced.shape[0]
        home, wall_cell = np.empty(n, np.int32), np.empty((n, 1), np.int32)
        wall_dist = np.empty((n, 1), np.float64)
        with numba_threads(self.n_threads):
            nearest_walls(np.ascontiguousarray(reduced, dtype=np.float32),
                          np.ascontiguousarray(cents.T), centroid_gaps(cents), home,
                          wall_cell, wall_dist)
        return home, (wall_cell[:, 0], wall_dist[:, 0])

    def _build_cell(self, c: int):
        ids = self.members[c]
        if ids.size == 0:
            return None
        return HNSWIndex(np.ascontiguousarray(self.data[ids]), 1, pca=self.pca,
                          layout=cell_layout())

    def _map(self, task, cells, sizes) -> list:
        """``task(c)`` for every cell, the largest first, on ``n_threads`` threads taking
        cells as they finish (a descheduled thread holds up one cell, not a fixed half)."""
        from unimap.runtime.threads import pinned_pool

        cells = list(cells)
        out: list = [None] * len(cells)
        order = sorted(range(len(cells)), key=lambda j: -sizes[j])
        if self.n_threads <= 1:
            for j in order:
                out[j] = task(cells[j])
            return out
        with pinned_pool(self.n_threads) as pool:
            for j, result in zip(order, pool.map(lambda j: task(cells[j]), order), strict=True):
                out[j] = result
        return out

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest indexed points of each query: ids (int64) and euclidean
        distances (float32), ascending; for the indexed points themselves (``queries is
        self.data``), each point is among its own results."""
        from unimap.decomposition.pca import project
        from unimap.neighbors.rows_numba import merge_into_rows, offer_reverse_pairs

        self_join = queries is self.data
        if self_join:
            home, (wall_cell, wall_dist) = self.home, self._walls
        else:
            queries = np.ascontiguousarray(queries, dtype=np.float32)
            # row by row, so that a point's cell does not depend on its batch
            reduced = (queries if self.pca is None
                       else project(queries, self.pca, row_exact=True))
            home, (wall_cell, wall_dist) = self._cells(reduced)
        m = queries.shape[0]
        idx = np.full((m, k), -1, np.int64)
        dist = np.full((m, k), np.inf, np.float32)
        asked = self._group(home)

        def at_home(c):
            rows = asked[c]
            if rows.size:
                q = self.indexes[c].data if self_join else queries[rows]
                idx[rows], dist[rows] = self._in_cell(c, q, k)

        self._map(at_home, range(len(asked)), [r.size for r in asked])
        # A home cell of fewer than k points (an outlier's): the exact search below, since
        # its other neighbours may lie in any cell. Otherwise the other cell whose wall is
        # nearer than the k-th candidate, if any.
        full = np.isfinite(dist[:, k - 1])
        probe = np.flatnonzero(full & (wall_cell >= 0) & within_reach(wall_dist, dist[:, k - 1]))
        asked = self._group(wall_cell[probe], probe)
        found: list = [None] * len(asked)

        per_part = CELL_PROBE_CANDIDATES if self_join else CELL_NEW_PROBE_CANDIDATES

        def in_other(c):
            if asked[c].size:
                found[c] = self._in_cell(c, queries[asked[c]], k, per_part)

        self._map(in_other, range(len(asked)), [r.size for r in asked])
        with numba_threads(self.n_threads):
            for rows, result in zip(asked, found, strict=True):
                if result is not None:  # the two cells' candidates (disjoint), home first
                    merge_into_rows(idx, dist, rows, *result)
        # What a probe found across a wall, the point found is told too; only after every
        # merge, since a point offered to a row before that row's own merge could come
        # back in its probe's results and be listed twice.
        if self_join:
            for rows, result in zip(asked, found, strict=True):
                if result is not None:
                    offer_reverse_pairs(idx, dist, rows, *result)
        short = np.flatnonzero(~full)
        if short.size:
            idx[short], dist[short] = self._exact(queries[short], k)
        return idx, dist

    def _group(self, cells: np.ndarray, rows: np.ndarray | None = None) -> list[np.ndarray]:
        """Per cell, the rows (ascending) whose cell in ``cells`` it is (``rows``: the ids of
        the entries of ``cells``, default their positions)."""
        rows = np.arange(cells.size) if rows is None else rows
        order = np.argsort(cells, kind="stable")
        bounds = np.searchsorted(cells[order], np.arange(self.centroids.shape[0] + 1))
        return [rows[order[bounds[c]:bounds[c + 1]]] for c in range(len(bounds) - 1)]

    def _in_cell(self, c: int, queries: np.ndarray, k: int,
                 per_part: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest points of cell ``c`` (global ids; -1 / inf past its size);
        ``per_part``: candidates from each of the cell's graphs (default: its layout's)."""
        index = self.indexes[c]
        m = queries.shape[0]
        idx = np.full((m, k), -1, np.int64)
        dist = np.full((m, k), np.inf, np.float32)
        if index is None:
            return idx, dist
        kk = min(k, self.members[c].size)
        local, d = index.search(queries, kk, per_part)
        found = local >= 0
        idx[:, :kk][found] = self.members[c][local[found]]
        dist[:, :kk][found] = d[found]
        return idx, dist

    def _exact(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return exact_query(self.data, queries, k, "euclidean", None)


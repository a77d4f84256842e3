"""Which k-means cell a point lives in, and the walls of the other cells (numba).

Used by the sharded kNN index (:mod:`unimap.neighbors.sharded`): a point is searched in its home
cell, and in one other cell only if that cell's bisecting hyperplane with the home cell is
nearer than the point's k-th neighbour found at home; the Dask graph
(:mod:`unimap.dask.knn_cells`) searches up to ``n_probe - 1`` such cells. The wall's distance
is :func:`wall_distance` for both (the rule that compares it with the k-th neighbour:
:func:`unimap.neighbors.sharded.within_reach`).
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.neighbors.topk_numba import insert_sorted

_BLOCK = 1024  # rows per parallel iteration, which share one scratch row


@numba.njit(inline="always", cache=True)
def _row_sq_distances(points, i, centroids_t, out):
    """``out[c]`` ← the squared distance from row i of ``points`` to column c of
    ``centroids_t`` (float64 (d, c)), summed in float64 over the features in order.

    Written out rather than :func:`unimap.runtime.distance_numba.sq_dist` per centroid: the
    loops are swapped so that the inner one runs over the centroids, which vectorises without
    reordering any sum (each sum adds its features in sq_dist's order)."""
    out[:] = 0.0
    for j in range(points.shape[1]):
        x = np.float64(points[i, j])
        for c in range(centroids_t.shape[1]):
            diff = x - centroids_t[j, c]
            out[c] += diff * diff


@numba.njit(inline="always", cache=True)
def wall_distance(d2_other, d2_home, gap):
    """The distance from a point to the bisecting hyperplane of its home cell and another,
    ``(|x − c_s|² − |x − c_h|²) / (2 |c_s − c_h|)`` from its squared distances to the two
    centroids and theirs (``gap``); every point of the other cell lies beyond it. Infinite
    where ``gap`` is 0: the home cell itself, or a duplicate of its centroid."""
    if gap > 0.0:
        return (d2_other - d2_home) / (2.0 * gap)
    return np.inf


@numba.njit(cache=True, nogil=True)
def wall_distances(sq, home, gaps, out):
    """``out[i, c]`` ← :func:`wall_distance` of row i to cell c's wall with its home cell
    ``home[i]``, from ``sq`` (n, c): its squared distances to the centroids (as
    :func:`sq_distances` gives them); ``gaps`` (c, c): the centroids' distances. Serial
    (one call per Dask block)."""
    for i in range(sq.shape[0]):
        h = home[i]
        for c in range(sq.shape[1]):
            out[i, c] = wall_distance(sq[i, c], sq[i, h], gaps[h, c])


@numba.njit(cache=True, nogil=True)
def sq_distances(points, centroids_t, out):
    """``out[i]`` ← :func:`_row_sq_distances` of row i: each row on its own, so the same bits
    in any block. Serial (k-means runs on one thread); without the (n, d) temporary per
    centroid that numpy's broadcast made, most of k-means' time (measured:
    benchmarks/results/library_notes.md, "unimap/neighbors/cells_numba.py")."""
    row = np.empty(centroids_t.shape[1])
    for i in range(points.shape[0]):
        _row_sq_distances(points, i, centroids_t, row)
        out[i] = row


@numba.njit(parallel=True, cache=True)
def scan_cells(S, queries, targets, cell_ptr, merge, out_idx, out_dist):
    """The CPU's run of :mod:`unimap.neighbors.cells_cuda`'s cell search, with its results:
    query row ``queries[t]`` of ``S`` (points sorted by cell) against every row of cell
    ``targets[t]`` (``cell_ptr[c]:cell_ptr[c + 1]``), its nearest (as many as ``out_*`` has
    columns) into row ``queries[t]`` of ``out_*``, merged with what is there when ``merge``.
    Squared distances summed in float32 over the features in order and a bounded insertion
    that keeps the earlier row on ties, as the kernel's."""
    n_cand = out_idx.shape[1]
    for t in numba.prange(queries.shape[0]):
        q = queries[t]
        best_d = out_dist[q]
        best_i = out_idx[q]
        if not merge:
            best_d[:] = np.inf
            best_i[:] = -1
        worst = best_d[n_cand - 1]
        for r in range(cell_ptr[targets[t]], cell_ptr[targets[t] + 1]):
            d = np.float32(0.0)
            for c in range(S.shape[1]):
                diff = S[q, c] - S[r, c]
                d += diff * diff
            if d < worst:
                worst = insert_sorted(best_d, best_i, d, r)


@numba.njit(parallel=True, cache=True)
def nearest_walls(points, centroids_t, gaps, home, wall_cell, wall_dist):
    """Per row of ``points`` (float32, (n, d)): ``home`` ← the nearest centroid (ties: the
    lower index); ``wall_cell``/``wall_dist`` (n, P) ← the P other cells whose bisecting
    hyperplanes with the home cell are nearest, ascending, and those hyperplanes' distances
    (ties: the lower cell; -1 / inf past the other cells). The CPU's sharded index takes
    P = 1, the GPU's cells search (:mod:`unimap.neighbors.cells_cuda`) up to ``N_PROBE``.

    ``centroids_t`` float64 (d, c), the centroids as columns; ``gaps`` float64 (c, c), their
    distances. Each row is computed on its own, in a fixed order: the same bits for any
    thread count or block. The walls' distances: :func:`wall_distance`.
    """
    n_cells = centroids_t.shape[1]
    n = points.shape[0]
    n_blocks = (n + _BLOCK - 1) // _BLOCK
    for block in numba.prange(n_blocks):
        d2 = np.empty(n_cells)  # a row's squared distances, computed once for both loops
        for i in range(block * _BLOCK, min(n, (block + 1) * _BLOCK)):
            _row_sq_distances(points, i, centroids_t, d2)
            best, best_d2 = 0, np.inf
            for c in range(n_cells):
                if d2[c] < best_d2:
                    best, best_d2 = c, d2[c]
            home[i] = best
            wall_dist[i] = np.inf
            wall_cell[i] = -1
            for c in range(n_cells):
                d = wall_distance(d2[c], best_d2, gaps[best, c])
                if d < wall_dist[i, wall_dist.shape[1] - 1]:
                    insert_sorted(wall_dist[i], wall_cell[i], d, c)
